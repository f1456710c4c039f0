#include "fusefs/stuck_threads_exit.h"

#include <sys/mount.h>
#include <unistd.h>

#include <utility>

#include "absl/time/time.h"
#include "common/log.h"

namespace fgds::fusefs {

StuckThreadsExit::StuckThreadsExit(fuse_session* se,
                                   const backend::Backend* backend,
                                   std::string mountpoint,
                                   std::optional<MountInfo> own_mount,
                                   std::chrono::milliseconds grace)
    : se_(se),
      backend_(backend),
      mountpoint_(std::move(mountpoint)),
      own_mount_(std::move(own_mount)),
      grace_(grace),
      watcher_([this] { Watch(); }) {}

StuckThreadsExit::~StuckThreadsExit() {
  {
    fgds::MutexLock lock(&mu_);
    stop_ = true;
    cv_.SignalAll();
  }
  watcher_.join();
}

void StuckThreadsExit::LoopReturned() {
  const bool left = backend_->LeftThreadsBehind();
  fgds::MutexLock lock(&mu_);
  loop_returned_ = true;
  left_behind_ = left;
}

void StuckThreadsExit::Watch() {
  fgds::MutexLock lock(&mu_);
  // Polled: libfuse tells nobody when its session ends.
  for (;;) {
    if (stop_) return;
    if (loop_returned_) {
      if (left_behind_) break;
    } else if (fuse_session_exited(se_) && backend_->LeftThreadsBehind()) {
      break;
    }
    cv_.WaitWithTimeout(&mu_, absl::Milliseconds(100));
  }
  // The loop may still come back by itself (no thread of it was held).
  const auto deadline = std::chrono::steady_clock::now() + grace_;
  while (!stop_ && std::chrono::steady_clock::now() < deadline) {
    cv_.WaitWithTimeout(&mu_, absl::FromChrono(grace_));
  }
  if (stop_) return;
  LogWarning(
      "the FUSE loop waits for threads the backend keeps in calls it gave up "
      "on; exiting without them");
  // Already gone after an unmount (and the place perhaps another daemon's
  // by now: only our own device is detached); still there after a signal.
  if (StillOurMount(mountpoint_, own_mount_)) {
    umount2(mountpoint_.c_str(), MNT_DETACH);
  }
  _exit(0);
}

}  // namespace fgds::fusefs
