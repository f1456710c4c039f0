// File: fusefs/stuck_threads_exit.h
//
// StuckThreadsExit: ends the daemon when its FUSE loop cannot. Once the
// session ends (unmount, signal), libfuse's multithreaded loop waits for
// every worker thread to come back; a worker lent to a backend call that
// never returns never does (the ceph gate gave up on such a call and
// answered its request: Backend::LeftThreadsBehind), and the teardown
// after the loop may wait for such threads too. From before the loop until
// the teardown is through, a thread of this class watches; when the
// session has ended, the backend says it left threads behind, and the
// teardown has not finished within `grace`, it logs so, detaches the mount
// (if still ours: after an unmount, another daemon may already have
// mounted at the same place) and exits the process with status 0. What it skips
// has nothing left to do: the backend behind the stuck calls is never torn down
// anyway.
//
// Thread safety: construct and destroy on the loop's thread.
#ifndef FGDS_FUSEFS_STUCK_THREADS_EXIT_H_
#define FGDS_FUSEFS_STUCK_THREADS_EXIT_H_

#include <fuse_lowlevel.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "backend/backend.h"
#include "common/mutex.h"
#include "fusefs/mount_table.h"

namespace fgds::fusefs {

class StuckThreadsExit {
 public:
  // `own_mount`: our mount as mountinfo showed it once mounted (nullopt:
  // never detach).
  StuckThreadsExit(fuse_session* se, const backend::Backend* backend,
                   std::string mountpoint, std::optional<MountInfo> own_mount,
                   std::chrono::milliseconds grace);
  // The loop returned: from now on the backend may go (the teardown), so
  // its answer is taken here, once, on the loop's thread.
  void LoopReturned();
  // The teardown got through: stops watching.
  ~StuckThreadsExit();
  StuckThreadsExit(const StuckThreadsExit&) = delete;
  StuckThreadsExit& operator=(const StuckThreadsExit&) = delete;

 private:
  void Watch();

  fuse_session* const se_;
  const backend::Backend* const backend_;
  const std::string mountpoint_;
  const std::optional<MountInfo> own_mount_;
  const std::chrono::milliseconds grace_;
  fgds::Mutex mu_;
  fgds::CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool loop_returned_ ABSL_GUARDED_BY(mu_) = false;
  bool left_behind_ ABSL_GUARDED_BY(mu_) = false;  // at LoopReturned
  std::thread watcher_;
};

}  // namespace fgds::fusefs

#endif  // FGDS_FUSEFS_STUCK_THREADS_EXIT_H_
