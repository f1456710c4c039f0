// fgds-fsx: the fsx data-integrity exerciser (tests/lib/fsx.h) as a
// standalone binary, for soak runs and benchmarks on any directory.
//
//   fgds-fsx DIR [--ops N] [--seed S] [--max-size BYTES] [--readers N]
//                [--max-op-size BYTES] [--files N] [--reader-interval N]
//                [--progress N]
//
// Exit status: 0 if every check passed, 1 on a data mismatch (the report
// goes to stderr), 2 on a usage or unexpected I/O error.
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>

#include "absl/strings/numbers.h"
#include "tests/lib/fsx.h"

namespace {

constexpr char kUsage[] =
    "usage: fgds-fsx DIR [--ops N] [--seed S] [--max-size BYTES] "
    "[--readers N]\n"
    "                [--max-op-size BYTES] [--files N] [--reader-interval N]"
    " [--progress N]\n";

// Parses "--flag VALUE" pairs into `options`; false on anything unknown.
bool ParseArgs(int argc, char** argv, fgds::testing::FsxOptions* options) {
  bool have_dir = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) {
      if (have_dir) return false;
      options->dir = arg;
      have_dir = true;
      continue;
    }
    if (i + 1 >= argc) return false;
    const char* value = argv[++i];
    uint64_t v = 0;
    if (!absl::SimpleAtoi(value, &v)) return false;
    if (arg == "--ops") {
      options->num_ops = v;
    } else if (arg == "--seed") {
      options->seed = v;
    } else if (arg == "--max-size") {
      options->max_file_size = v;
    } else if (arg == "--max-op-size") {
      options->max_op_size = v;
    } else if (arg == "--readers") {
      options->num_readers = static_cast<int>(v);
    } else if (arg == "--files") {
      options->num_files = static_cast<int>(v);
    } else if (arg == "--reader-interval") {
      options->reader_phase_interval = v;
    } else if (arg == "--progress") {
      options->progress_interval = v;
    } else {
      return false;
    }
  }
  return have_dir;
}

}  // namespace

int main(int argc, char** argv) {
  fgds::testing::FsxOptions options;
  // Without --seed every run explores a new sequence; the seed is printed
  // so that a failing run can be replayed.
  options.seed = static_cast<uint64_t>(time(nullptr));
  options.num_ops = 100000;
  if (!ParseArgs(argc, argv, &options)) {
    fputs(kUsage, stderr);
    return 2;
  }
  printf("fgds-fsx: dir %s seed %llu ops %llu max-size %llu readers %d\n",
         options.dir.c_str(), static_cast<unsigned long long>(options.seed),
         static_cast<unsigned long long>(options.num_ops),
         static_cast<unsigned long long>(options.max_file_size),
         options.num_readers);
  fflush(stdout);
  fgds::testing::Fsx fsx(options);
  const absl::Status status = fsx.Run();
  printf("%s\n%s", fsx.stats().Summary().c_str(),
         fsx.stats().Details().c_str());
  if (status.ok()) return 0;
  fprintf(stderr, "%s\n", std::string(status.message()).c_str());
  return absl::IsDataLoss(status) ? 1 : 2;
}
