// File: tools/bench/daemon_cpu.h
//
// The CPU time the fgds daemon serving --mount spends, by kind of thread,
// so that the bench reports daemon CPU per operation beside each row (the
// daemon's cost of a usrbio entry is what issue 17 halves).
//
// The total is the whole process's CPU clock (clock_getcpuclockid): it
// keeps the time of threads that ended, such as libfuse's idle workers,
// which end while a POSIX row runs. The split by kind comes from the live
// threads, told apart by name (/proc/<pid>/task/<tid>/comm): "fgds-ring*"
// (ring workers and their watchdog) and "fgds-io" (io_uring engine
// workers), which live as long as the daemon; everything else (FUSE and
// session threads, the invalidator, and any thread that ended) is "other".
//
// Example:
//   int pid = DaemonPidOfMount("/mnt/fgds/dir");   // -1: not found
//   DaemonCpu before = SampleDaemonCpu(pid);
//   ... run ...
//   DaemonCpu used = SampleDaemonCpu(pid) - before;
#ifndef FGDS_TOOLS_BENCH_DAEMON_CPU_H_
#define FGDS_TOOLS_BENCH_DAEMON_CPU_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fgds::bench {

struct DaemonCpu {
  // ring_ns + io_ns + other_ns is the process's CPU time; other_ns is
  // what the ring and io threads (live ones, as sampled) did not use.
  uint64_t ring_ns = 0;
  uint64_t io_ns = 0;
  uint64_t other_ns = 0;
  bool valid = false;  // the process was readable
  // The daemon's "ring.<name> <value>" counters from /.fgds/stats (where
  // a usrbio entry's time goes: fusefs/session/ring_stage_stats.h), in
  // file order; empty for daemons without them.
  std::vector<std::pair<std::string, uint64_t>> ring_stages;

  uint64_t total_ns() const { return ring_ns + io_ns + other_ns; }
  // The time used between `earlier` and this sample. The total is exact;
  // the split is while the ring and io threads live through both samples
  // (they live as long as the daemon): one that ended in between moves
  // time into other_ns.
  DaemonCpu operator-(const DaemonCpu& earlier) const;
};

// The pid of the daemon serving the fgds mount that `path` is on, from
// the mount root's /.fgds/session ("pid=", or the socket's name); -1 when
// `path` is not on an fgds mount with sessions.
int DaemonPidOfMount(const std::string& path);

// The CPU time process `pid` has used so far, every thread it ever had
// included, by kind; valid false when it cannot be read (pid -1, a pid
// that is gone, /proc/<pid>/task unreadable). With `mount_path`, also the
// ring stage counters of that mount.
DaemonCpu SampleDaemonCpu(int pid, const std::string& mount_path = "");

// Which kind a thread named `comm` counts as: 0 ring, 1 io, 2 other.
int ThreadKind(const std::string& comm);

}  // namespace fgds::bench

#endif  // FGDS_TOOLS_BENCH_DAEMON_CPU_H_
