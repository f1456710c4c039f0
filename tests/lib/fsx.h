// File: tests/lib/fsx.h
//
// Fsx is a randomized data-integrity exerciser in the spirit of xfstests'
// fsx: it applies a seeded random sequence of operations (pwrite anywhere,
// including past EOF, extending writes, ftruncate up and down, pread, mmap
// reads and writes, fsync/fdatasync, close+reopen, fallocate punch-hole,
// zero-range and allocate, copy_file_range between files, full-file checks)
// to a few files in a directory and checks every byte read back against an
// in-memory model (tests/lib/fsx_model.h). Every byte written comes from
// (seed, op number, offset), so a bad byte can be traced to the op that
// produced it.
//
// Every `reader_phase_interval` ops the writer pauses and `num_readers`
// threads, each with its own file descriptors opened through `dir`, verify
// random ranges in parallel against the (then frozen) model.
//
// The op sequence and the final contents of the files depend only on the
// options (not on the filesystem): an operation the filesystem does not
// support (EOPNOTSUPP from fallocate, ENODEV from mmap of a direct-I/O file,
// EXDEV or EOPNOTSUPP from copy_file_range) is switched off for the rest of
// the run and emulated with pread/pwrite/ftruncate giving the same bytes;
// FsxStats::fallbacks lists those. So the same seed run in two directories
// must leave identical files.
//
// Example:
//   FsxOptions options;
//   options.dir = mountpoint;
//   options.seed = 42;
//   Fsx fsx(options);
//   absl::Status s = fsx.Run();  // DataLoss with a report on a mismatch
//   std::cout << fsx.stats().Summary() << "\n";
//
// Thread safety: an Fsx is used from one thread (it starts and joins its
// reader threads itself).
#ifndef FGDS_TESTS_LIB_FSX_H_
#define FGDS_TESTS_LIB_FSX_H_

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace fgds::testing {

enum class FsxOp : uint8_t {
  kRead,
  kWrite,
  kAppend,  // write starting at EOF
  kTruncate,
  kMapRead,
  kMapWrite,
  kFsync,
  kFdatasync,
  kReopen,
  kPunchHole,
  kZeroRange,
  kFallocate,  // mode 0 or FALLOC_FL_KEEP_SIZE
  kCopyRange,
  kVerify,  // whole-file read and compare
};
inline constexpr int kNumFsxOps = static_cast<int>(FsxOp::kVerify) + 1;
const char* FsxOpName(FsxOp op);

struct FsxOptions {
  // Existing directory the files are created in, named "<file_prefix>.<i>".
  // Existing files of those names are truncated; the files are left in
  // place afterwards (for comparisons and post-mortems).
  std::string dir;
  std::string file_prefix = "fsx";
  uint64_t seed = 1;
  // Writer operations to run (reader-thread reads are not counted).
  // At most 2^32 - 1.
  uint64_t num_ops = 10000;
  // No operation makes a file larger than this.
  uint64_t max_file_size = 1 << 20;
  // Upper bound of one read, write, copy, punch or zero range.
  uint64_t max_op_size = 128 << 10;
  // Files the ops spread over; copy_file_range needs at least 2. At most 16.
  int num_files = 2;
  // Reader threads per reader phase; 0 disables reader phases.
  int num_readers = 0;
  // Writer ops between reader phases, and reads each reader does per phase.
  uint64_t reader_phase_interval = 1000;
  int reads_per_reader = 32;
  // Ops shown at the end of a mismatch report.
  int log_size = 20;
  // If nonzero, a progress line goes to stderr every this many ops.
  uint64_t progress_interval = 0;
  // Test hook, called on the writer thread after each op with its number:
  // lets a test damage a file behind the engine's back and check that the
  // damage is reported.
  std::function<void(uint64_t op)> after_op;
};

struct FsxStats {
  uint64_t ops = 0;           // writer ops done
  uint64_t reader_reads = 0;  // reads verified by reader threads
  uint64_t mismatches = 0;    // 0, or 1: Run stops at the first
  uint64_t bytes_written = 0;
  uint64_t bytes_read = 0;  // verified bytes, writer and readers
  std::array<uint64_t, kNumFsxOps> op_counts{};
  // Operations switched to emulation, with the errno that caused it.
  std::vector<std::string> fallbacks;

  // One line, e.g. "fsx: 100000 ops, 6400 reader reads, 0 mismatches".
  std::string Summary() const;
  // Per-op counts and fallbacks, one line each.
  std::string Details() const;
};

class Fsx {
 public:
  explicit Fsx(FsxOptions options);
  Fsx(const Fsx&) = delete;
  Fsx& operator=(const Fsx&) = delete;

  // Runs the whole sequence, then closes the files and verifies each once
  // more through a fresh descriptor. Returns OK if every check passed;
  // DataLoss with a report (first bad offset, expected and actual bytes,
  // the op that last wrote that offset, the last `log_size` ops) on the
  // first mismatch; another error, with the same op log, when a syscall
  // fails unexpectedly; InvalidArgument for bad options. Call once.
  absl::Status Run();

  const FsxStats& stats() const { return stats_; }
  // Path of file `i` (0 <= i < num_files).
  std::string FilePath(int i) const;

 private:
  FsxOptions options_;
  FsxStats stats_;
};

}  // namespace fgds::testing

#endif  // FGDS_TESTS_LIB_FSX_H_
