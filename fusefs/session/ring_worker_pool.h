// File: fusefs/session/ring_worker_pool.h
//
// RingWorkerPool: a fixed set of threads that serve every usrbio ring of
// the daemon, so the thread count does not grow with clients (a tasks
// limit such as systemd's TasksMax must never be reached through rings,
// and a thread that cannot be created must not end the daemon: the pool's
// threads are all created at start).
//
// Each worker owns an epoll set holding, per ring, the client's submit
// eventfd (edge-triggered, never read: client_eventfd.h) and the ring's own
// wake eventfd (engine threads post completions, Retire makes CQ room). A
// ring is attached to one worker for its life (the one serving the fewest
// rings), and only that worker touches its submission side, so each entry
// is read, checked and submitted on the CPU that polled the ring. A worker
// serves its ready rings round robin, one batch per ring per round
// (Ring::Serve), and sleeps in epoll_pwait2 until a kick, a wake or the
// nearest batching deadline.
//
// Helping: a ring with more waiting than one turn takes asks for help
// (WantHelp); a worker that has nothing to serve (asleep in its wait) is
// claimed, woken through its control eventfd, and takes batches from that
// ring (Ring::Help) on each of its rounds until the ring has no batch
// waiting. So one client's queue is copied on several CPUs, with the thread
// count still fixed; nothing is asked of a worker that is busy, and a ring
// whose client sleeps asks nothing.
//
// Spinning is the daemon's: after serving entries, a ring whose client
// asked for spin_us is polled for at most min(spin_us, max_spin_us), and a
// wakeup that brings no entry starts no spin, so a client that sleeps (or
// only kicks) costs its worker nothing.
//
// A watchdog thread rescues a worker blocked writing a client's completion
// eventfd (client_eventfd.h); it ticks only while rings are attached.
//
// Thread safety: Attach and Detach from any thread but a worker's own.
#ifndef FGDS_FUSEFS_SESSION_RING_WORKER_POOL_H_
#define FGDS_FUSEFS_SESSION_RING_WORKER_POOL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "common/mutex.h"

namespace fgds::session {

class Ring;

// Default worker count: one per CPU, at most this many.
inline constexpr unsigned kMaxDefaultRingWorkers = 64;

struct RingWorkerPoolOptions {
  // Worker threads; 0: one per CPU the daemon may run on (at most
  // kMaxDefaultRingWorkers). A worker copies its rings' cached reads itself, so
  // clients on many cores need as many workers; an idle one sleeps.
  unsigned workers = 0;
  // The most entries a worker takes from one ring per turn (1 or more):
  // smaller turns let a client reap and refill while the worker copies the
  // rest of its queue; larger ones cost fewer notifications.
  uint32_t max_batch = 16;
  // Workers copy their rings' cached reads themselves (ring.h); false
  // hands every entry to the backend's engine, as before issue 17 (kept to
  // measure the two side by side: docs/usrbio.md, "Where the time goes").
  bool inline_reads = true;
  // The most idle workers helping one busy ring at once (Ring::Help); 0:
  // each ring is served by its own worker alone.
  uint32_t max_helpers = 3;
  // The most microseconds a worker polls a ring after serving its entries
  // before it sleeps; a client's spin_us asks for up to this.
  uint32_t max_spin_us = 50;
  // A write of a client's completion eventfd blocked this long is undone
  // (client_eventfd.h).
  uint32_t stall_ms = 100;
};

class RingWorkerPool {
 public:
  // Starts the workers and the watchdog; an error if a thread or an epoll
  // set cannot be created (the daemon then serves no rings).
  static absl::StatusOr<std::unique_ptr<RingWorkerPool>> Start(
      const RingWorkerPoolOptions& options);
  // Stops and joins every thread. REQUIRES: no ring attached.
  ~RingWorkerPool();
  RingWorkerPool(const RingWorkerPool&) = delete;
  RingWorkerPool& operator=(const RingWorkerPool&) = delete;

  // Has a worker serve `ring` from now on. Returns 0, or -errno when the
  // ring's eventfds cannot be watched (ENOMEM, ENOSPC: max_user_watches).
  int Attach(std::shared_ptr<Ring> ring);
  // Returns once no worker touches `ring` any more (its I/O in flight may
  // still post completions). No-op for a ring not attached. (Helpers are
  // waited for by Ring::Stop.)
  void Detach(Ring* ring);
  // Has an idle worker help `ring` (Ring::Help), if one is idle now.
  // Returns whether one was found; called by the ring's own worker.
  bool WantHelp(std::weak_ptr<Ring> ring);
  // Workers asleep with nothing to serve now: those WantHelp may claim.
  size_t IdleWorkers() const;

  uint64_t max_spin_ns() const { return uint64_t{options_.max_spin_us} * 1000; }
  uint32_t max_batch() const { return options_.max_batch; }
  bool inline_reads() const { return options_.inline_reads; }
  uint32_t max_helpers() const { return options_.max_helpers; }
  size_t workers() const { return workers_.size(); }

 private:
  class Worker;

  explicit RingWorkerPool(const RingWorkerPoolOptions& options);
  void WatchdogLoop();

  const RingWorkerPoolOptions options_;
  std::vector<std::unique_ptr<Worker>> workers_;
  // Where WantHelp starts looking: spreads helpers over the workers.
  std::atomic<size_t> next_helper_{0};
  fgds::Mutex mu_;
  fgds::CondVar cv_;
  // Which worker serves each attached ring.
  absl::flat_hash_map<Ring*, Worker*> attached_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread watchdog_;
};

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_RING_WORKER_POOL_H_
