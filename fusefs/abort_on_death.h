// File: fusefs/abort_on_death.h
//
// AbortOnDeath: a small guard process that aborts the daemon's FUSE
// connection when the daemon dies, so that a daemon holding a descriptor of
// a file on its own mount can finish exiting.
//
// Why it is needed. usrbio registration receives the client's descriptor of
// a file under this very mount (SCM_RIGHTS) and holds it for a moment
// (fusefs/session/session.cc). When the process dies (SIGKILL, abort, a
// sanitizer halting it), the kernel closes its descriptors in do_exit ->
// exit_files -> close_files, in number order, calling ->flush of each at
// once: fuse_flush sends FLUSH to the daemon and waits for the answer
// uninterruptibly (a forced request). The daemon's FUSE threads are gone,
// so nobody answers; the connection would be aborted when its last
// /dev/fuse descriptor is released, but an exiting task's final fput is
// deferred to task work (fput -> task_work_add), which runs only in
// exit_task_work, after exit_files returns. So the exit waits on itself
// forever, and every process touching the mount waits with it, until
// someone writes to /sys/fs/fuse/connections/N/abort. (Moving the received
// descriptors above /dev/fuse with F_DUPFD does not help for that reason:
// the /dev/fuse file is closed first but released last.)
//
// How. Before the first session can start, the serving thread locks a
// robust, process-shared mutex in a shared page and forks the guard, which
// waits on that mutex. A dying thread's robust futexes are released in
// exit_mm (futex_exit_release), which do_exit runs before exit_files: the
// guard wakes with the owner dead while the daemon is still exiting, checks
// that the mount is still there (the same device at the same mountpoint in
// its mountinfo, so a reused connection number is never aborted), and
// writes "1" to the connection's abort file (mounting fusectl if it is
// not). The stuck flush then fails, and the exit completes. The guard holds
// no descriptor (not /dev/fuse: that would keep the connection alive; its
// stdio is /dev/null) and lives in "/" (not keeping anything busy). It
// writes one line to the kernel's log (/dev/kmsg) when it aborts.
//
// A clean stop disarms it: Disarm (or the destructor) marks it disarmed,
// unlocks, and reaps the guard, which exits without touching the mount.
//
// Example (fusefs/daemon.cc):
//   auto guard = AbortOnDeath::Start(mountpoint, mount_dev);  // after mount
//   ... serve ...
//   guard.reset();  // after the sessions ended
//
// Thread safety: Start and Disarm (the destructor) on the same thread, and
// that thread must live as long as the process serves (the mount's serving
// thread): its death is what the guard watches.
#ifndef FGDS_FUSEFS_ABORT_ON_DEATH_H_
#define FGDS_FUSEFS_ABORT_ON_DEATH_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace fgds::fusefs {

class AbortOnDeath {
 public:
  // Forks the guard for the FUSE mount at `mountpoint` (an absolute path as
  // the mount table shows it) whose device is `mount_dev`.
  static absl::StatusOr<std::unique_ptr<AbortOnDeath>> Start(
      const std::string& mountpoint, dev_t mount_dev);
  ~AbortOnDeath() { Disarm(); }
  AbortOnDeath(const AbortOnDeath&) = delete;
  AbortOnDeath& operator=(const AbortOnDeath&) = delete;

  // Tells the guard to exit without aborting, and reaps it. Idempotent.
  void Disarm();

  pid_t guard_pid() const { return pid_; }

  // What the guard reads (abort_on_death.cc).
  struct Shared;

 private:
  AbortOnDeath(Shared* shared, pid_t pid) : shared_(shared), pid_(pid) {}

  Shared* shared_;  // a MAP_SHARED page, also mapped in the guard
  pid_t pid_;
};

}  // namespace fgds::fusefs

#endif  // FGDS_FUSEFS_ABORT_ON_DEATH_H_
