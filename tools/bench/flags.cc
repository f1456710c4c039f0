#include "tools/bench/flags.h"

#include <cctype>
#include <limits>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tools/bench/mode.h"

namespace fgds::bench {
namespace {

// Upper limits that catch typos ("--bs 1T") before they allocate or spawn
// absurd amounts; they are far above anything useful.
constexpr uint64_t kMinBlockSize = 512;
constexpr uint64_t kMaxBlockSize = uint64_t{1} << 30;
constexpr int kMaxQueueDepth = 4096;
constexpr int kMaxThreads = 1024;

absl::Status FlagError(absl::string_view flag, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(flag, ": ", message));
}

absl::StatusOr<int> ParseCount(absl::string_view flag, absl::string_view text,
                               int max) {
  int value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < 1 || value > max) {
    return FlagError(
        flag,
        absl::StrFormat("'%s' is not a whole number from 1 to %d", text, max));
  }
  return value;
}

absl::Status ValidateModes(const BenchOptions& options) {
  if (options.modes.empty()) return FlagError("--modes", "names no mode");
  std::set<absl::string_view> seen;
  for (const std::string& name : options.modes) {
    const ModeSpec* mode = FindMode(name);
    if (mode == nullptr) {
      std::vector<absl::string_view> known;
      for (const ModeSpec& m : AllModes()) known.push_back(m.name);
      return FlagError("--modes",
                       absl::StrFormat("unknown mode '%s' (known: %s)", name,
                                       absl::StrJoin(known, ", ")));
    }
    if (!seen.insert(mode->name).second) {
      return FlagError("--modes", absl::StrCat("mode '", name, "' repeated"));
    }
    if (options.block_size % mode->block_alignment != 0) {
      return FlagError(
          "--bs", absl::StrFormat("%d is not a multiple of %d, which mode "
                                  "'%s' needs",
                                  options.block_size, mode->block_alignment,
                                  mode->name));
    }
  }
  return absl::OkStatus();
}

absl::Status Validate(const BenchOptions& options) {
  if (options.mount.empty())
    return FlagError("--mount", "missing (a path on the fgds mount)");
  if (options.backing.empty())
    return FlagError("--backing", "missing (the directory --mount serves)");
  if (options.block_size < kMinBlockSize ||
      options.block_size > kMaxBlockSize) {
    return FlagError("--bs", absl::StrFormat("must be from %s to %s",
                                             FormatSize(kMinBlockSize),
                                             FormatSize(kMaxBlockSize)));
  }
  // Every thread needs at least one block of its own.
  const uint64_t per_thread = options.size / options.threads;
  if (per_thread < options.block_size) {
    return FlagError(
        "--size",
        absl::StrFormat("%s is less than --bs %s times --threads %d",
                        FormatSize(options.size),
                        FormatSize(options.block_size), options.threads));
  }
  return ValidateModes(options);
}

}  // namespace

absl::string_view PatternName(Pattern pattern) {
  return pattern == Pattern::kSeq ? "seq" : "rand";
}

absl::string_view CacheModeName(CacheMode cache) {
  switch (cache) {
    case CacheMode::kCold:
      return "cold";
    case CacheMode::kWarm:
      return "warm";
    case CacheMode::kBoth:
      return "both";
  }
  return "?";
}

absl::StatusOr<uint64_t> ParseSize(absl::string_view text) {
  const std::string lower = absl::AsciiStrToLower(text);
  absl::string_view rest = lower;
  size_t digits = 0;
  while (digits < rest.size() && absl::ascii_isdigit(rest[digits])) ++digits;
  if (digits == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text,
                     "' is not a size (a whole number with an optional K, M, G "
                     "or T suffix)"));
  }
  uint64_t number = 0;
  if (!absl::SimpleAtoi(rest.substr(0, digits), &number)) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is too big"));
  }
  absl::string_view suffix = rest.substr(digits);
  int shift = 0;
  if (!suffix.empty()) {
    switch (suffix[0]) {
      case 'k':
        shift = 10;
        break;
      case 'm':
        shift = 20;
        break;
      case 'g':
        shift = 30;
        break;
      case 't':
        shift = 40;
        break;
      default:
        shift = -1;
        break;
    }
    if (shift > 0) suffix.remove_prefix(1);
    // "K", "KB" and "KiB" all mean 1024: nobody asks for 1000-byte blocks.
    if (shift < 0 || !(suffix.empty() || suffix == "b" || suffix == "ib")) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", text,
                       "' is not a size (a whole number with an optional K, M, "
                       "G or T suffix)"));
    }
  }
  if (number == 0) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is zero"));
  }
  if (number > (std::numeric_limits<uint64_t>::max() >> shift)) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is too big"));
  }
  return number << shift;
}

std::string FormatSize(uint64_t bytes) {
  static constexpr struct {
    int shift;
    char suffix;
  } kUnits[] = {{40, 'T'}, {30, 'G'}, {20, 'M'}, {10, 'K'}};
  for (const auto& unit : kUnits) {
    const uint64_t scale = uint64_t{1} << unit.shift;
    if (bytes >= scale && bytes % scale == 0) {
      return absl::StrCat(bytes / scale, std::string(1, unit.suffix));
    }
  }
  return absl::StrCat(bytes);
}

absl::StatusOr<BenchOptions> ParseBenchFlags(
    const std::vector<std::string>& args) {
  BenchOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view arg = args[i];
    if (arg == "-h" || arg == "--help") {
      options.help = true;
      return options;
    }
    if (arg == "--no-mount-check") {
      options.mount_check = false;
      continue;
    }
    if (arg.substr(0, 2) != "--") {
      return absl::InvalidArgumentError(absl::StrCat(
          "unexpected argument '", arg, "' (flags start with --)"));
    }
    // "--flag=value" or "--flag value".
    absl::string_view flag = arg;
    absl::string_view value;
    bool has_value = false;
    if (size_t eq = arg.find('='); eq != absl::string_view::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    static constexpr absl::string_view kValued[] = {
        "--mount",   "--backing", "--size",  "--bs",    "--qd",
        "--threads", "--pattern", "--cache", "--modes", "--json"};
    bool known = false;
    for (absl::string_view k : kValued) known |= (k == flag);
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '", flag, "'"));
    }
    if (!has_value) {
      if (i + 1 >= args.size()) return FlagError(flag, "needs a value");
      value = args[++i];
    }
    if (value.empty()) return FlagError(flag, "needs a non-empty value");

    if (flag == "--mount") {
      options.mount = std::string(value);
    } else if (flag == "--backing") {
      options.backing = std::string(value);
    } else if (flag == "--json") {
      options.json_path = std::string(value);
    } else if (flag == "--size" || flag == "--bs") {
      absl::StatusOr<uint64_t> size = ParseSize(value);
      if (!size.ok()) return FlagError(flag, size.status().message());
      (flag == "--size" ? options.size : options.block_size) = *size;
    } else if (flag == "--qd") {
      absl::StatusOr<int> qd = ParseCount(flag, value, kMaxQueueDepth);
      if (!qd.ok()) return qd.status();
      options.queue_depth = *qd;
    } else if (flag == "--threads") {
      absl::StatusOr<int> threads = ParseCount(flag, value, kMaxThreads);
      if (!threads.ok()) return threads.status();
      options.threads = *threads;
    } else if (flag == "--pattern") {
      if (value == "seq") {
        options.pattern = Pattern::kSeq;
      } else if (value == "rand") {
        options.pattern = Pattern::kRand;
      } else {
        return FlagError(flag,
                         absl::StrCat("'", value, "' is not seq or rand"));
      }
    } else if (flag == "--cache") {
      if (value == "cold") {
        options.cache = CacheMode::kCold;
      } else if (value == "warm") {
        options.cache = CacheMode::kWarm;
      } else if (value == "both") {
        options.cache = CacheMode::kBoth;
      } else {
        return FlagError(
            flag, absl::StrCat("'", value, "' is not cold, warm or both"));
      }
    } else if (flag == "--modes") {
      options.modes.clear();
      for (absl::string_view name : absl::StrSplit(value, ',')) {
        if (name.empty()) return FlagError(flag, "has an empty mode name");
        options.modes.emplace_back(name);
      }
    }
  }
  if (absl::Status status = Validate(options); !status.ok()) return status;
  return options;
}

uint64_t RegionBytes(const BenchOptions& options) {
  return options.size / options.threads / options.block_size *
         options.block_size;
}

std::string BenchUsage() {
  std::string usage =
      "usage: fgds bench --mount MNT --backing DIR [flags]\n"
      "\n"
      "Measures sequential or random reads and writes through the fgds mount\n"
      "MNT and, in the same run, on the directory DIR that MNT serves, and\n"
      "prints each result with its ratio to its baseline.\n"
      "\n"
      "  --mount MNT     a path on the fgds mount (required)\n"
      "  --backing DIR   the backing directory that MNT serves (required)\n"
      "  --size N        bytes per mode, split across threads (default 4G)\n"
      "  --bs N          bytes per I/O call (default 1M)\n"
      "  --qd N          in-flight I/Os per thread, queued modes (default 32)\n"
      "  --threads N     threads, each on its own region of the file "
      "(default 1)\n"
      "  --pattern P     seq or rand (default seq); rand visits every block\n"
      "                  once in random order\n"
      "  --cache C       cold (drop the page cache before each read), warm\n"
      "                  (read from the page cache) or both (default cold)\n"
      "  --modes LIST    comma-separated, run in this order "
      "(default all):\n";
  for (const ModeSpec& mode : AllModes()) {
    absl::StrAppendFormat(&usage, "                    %-14s %s\n", mode.name,
                          mode.help);
  }
  usage +=
      "  --json FILE     also write the rows to FILE as JSON\n"
      "\n"
      "Sizes take K, M, G or T suffixes (powers of 1024). Writes are timed\n"
      "including the final fsync; a second row shows them without it.\n"
      "With several threads, every thread's writes end before any fsync.\n"
      "The bench writes MNT/fgds-bench.<pid> and DIR/fgds-bench-native.<pid>\n"
      "and removes both when done or interrupted.\n";
  return usage;
}

}  // namespace fgds::bench
