// File: tools/bench/system.h
//
// The bench's contact with the machine outside its own files: checking the
// two directories it is pointed at, experiment knobs from the environment,
// dropping the page cache, and catching SIGINT so that the bench's files
// are removed on ^C.
#ifndef FGDS_TOOLS_BENCH_SYSTEM_H_
#define FGDS_TOOLS_BENCH_SYSTEM_H_

#include <signal.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace fgds::bench {

// CheckMountDir fails unless `path` is a directory on a FUSE file system
// (statfs f_type 0x65735546), naming --mount in the message. With
// `require_fuse` false (--no-mount-check) only the directory is checked.
absl::Status CheckMountDir(const std::string& path, bool require_fuse);

// CheckBackingDir fails unless `path` is a writable directory that is not
// itself on a FUSE mount (that would measure the mount against itself) and
// has at least `bytes_needed` free.
absl::Status CheckBackingDir(const std::string& path, uint64_t bytes_needed);

// EnvNumber reads a hidden engine knob for experiments from the environment
// variable `name` (decimal, 0x hex or 0 octal, as strtoull base 0); 0 when
// it is not set. The defaults, not these knobs, are what users get.
uint64_t EnvNumber(const char* name);

// DropPageCache runs sync(2) and writes 3 to /proc/sys/vm/drop_caches, so
// the next read must come from the device (or, through FUSE, from the
// daemon). Needs root; the error says why it failed.
absl::Status DropPageCache();

// While alive, the first SIGINT or SIGTERM sets interrupted() instead of
// killing the process, so that the phases stop and the bench's files are
// removed. The handler is one-shot (SA_RESETHAND): a second ^C kills a
// bench stuck on a hung mount. The destructor restores the old handlers.
//
// Thread safety: at most one instance at a time (signal dispositions are
// process-wide).
class ScopedInterruptHandler {
 public:
  ScopedInterruptHandler();
  ~ScopedInterruptHandler();
  ScopedInterruptHandler(const ScopedInterruptHandler&) = delete;
  ScopedInterruptHandler& operator=(const ScopedInterruptHandler&) = delete;

  const std::atomic<bool>& flag() const;
  bool interrupted() const { return flag().load(); }
  // The signal that arrived, 0 if none.
  int signal_number() const;

 private:
  struct sigaction old_int_;
  struct sigaction old_term_;
};

}  // namespace fgds::bench

#endif  // FGDS_TOOLS_BENCH_SYSTEM_H_
