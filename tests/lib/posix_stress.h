// File: tests/lib/posix_stress.h
//
// RunPosixStress: several processes hammer files of a mount with the I/O
// that once hung a FUSE write (4 KiB random writes, reads, fsync), and a
// watchdog in the calling process checks that every single operation
// completes within a limit. A request the daemon never answers leaves its
// caller asleep in the kernel forever; here it becomes a report: which
// operation, for how long, what the stuck process and every daemon thread
// are waiting in (/proc/<pid>/task/*/stack and wchan, gdb's backtraces when
// gdb is installed), and the FUSE connection's count of requests waiting.
//
// Example:
//   PosixStressOptions options;
//   options.dir = mount + "/stress";
//   options.daemon_pid = fs->daemon_pid();
//   PosixStressResult r = RunPosixStress(options);
//   EXPECT_EQ(r.stuck, "");
//
// Thread safety: one call at a time per process (it forks and reaps).
#ifndef FGDS_TESTS_LIB_POSIX_STRESS_H_
#define FGDS_TESTS_LIB_POSIX_STRESS_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace fgds::testing {

struct PosixStressOptions {
  // Directory the files live in (created if missing); on the mount.
  std::string dir;
  // The mount's daemon, for the diagnostics of a stuck operation.
  pid_t daemon_pid = -1;
  // Mountpoint (for its FUSE connection's counters); may be empty.
  std::string mountpoint;
  // Worker processes. Half share one file, the others have one each.
  int processes = 4;
  // Size of each file; offsets are random 4 KiB blocks inside it.
  uint64_t file_bytes = uint64_t{64} << 20;
  // How long the workers run.
  int seconds = 20;
  // An operation still running after this long counts as stuck.
  int op_limit_seconds = 30;
  // Per 1000 operations: unaligned writes (partial pages, which a writeback
  // cache must read first), reads, fsync/fdatasync; the rest are aligned
  // 4 KiB writes.
  int unaligned_per_mille = 100;
  int read_per_mille = 250;
  int sync_per_mille = 20;
  uint64_t seed = 1;
  // Attach gdb to the daemon for its threads' backtraces (when installed);
  // off where the daemon is stopped on purpose (gdb would wait for it).
  bool gdb = true;
};

struct PosixStressResult {
  uint64_t ops = 0;     // operations completed, all workers
  uint64_t errors = 0;  // operations that failed (with an errno)
  std::string first_error;
  // Empty when every operation completed within the limit; else a report
  // of the stuck operation(s) and the diagnostics above.
  std::string stuck;
  // The longest any completed operation took, in milliseconds.
  uint64_t max_op_ms = 0;
};

// Runs the workers to the end (or kills them once one is stuck, and then
// aborts the mount's FUSE connection so that they can be reaped) and
// returns what happened. Never hangs on a stuck operation: a stuck worker
// is reported after op_limit_seconds.
PosixStressResult RunPosixStress(const PosixStressOptions& options);

// Diagnostics of the mount's daemon and of process `stuck_pid` (may be
// -1): thread states, kernel stacks, wait channels, FUSE counters, and with
// `gdb` the daemon's user-space backtraces.
std::string DescribeHang(pid_t daemon_pid, pid_t stuck_pid,
                         const std::string& mountpoint, bool gdb);

// Aborts the FUSE connection of the mount at `mountpoint` (its
// /sys/fs/fuse/connections/N/abort): every request in flight or to come
// ends with an error, so that processes asleep on a request the daemon
// will never answer wake up. Returns false where that cannot be done.
bool AbortFuseConnection(const std::string& mountpoint);

// The same by the connection's directory, "/sys/fs/fuse/connections/N"
// (FuseConnectionDir, read while the mount was still there: a daemon that
// stops detaches its mount first).
std::string FuseConnectionDir(const std::string& mountpoint);
bool AbortFuseConnectionDir(const std::string& conn);

}  // namespace fgds::testing

#endif  // FGDS_TESTS_LIB_POSIX_STRESS_H_
