// File: backend/ceph/call_gate.h
//
// CallGate: runs calls that may block forever (libcephfs 16 has no per-call
// timeout: with the cluster gone, a create, read or fsync waits without
// end) on a fixed set of threads, and bounds how long anyone waits for
// them. A watchdog thread looks at the oldest call in flight (queued or
// running); once one has waited longer than the timeout, the gate is dead
// for good: every call in flight is answered -ENOTCONN at once, and every
// later call at its start, without being run. The threads stuck in a call
// stay parked there (there is no way to cancel a libcephfs call, and
// ceph_abort_conn itself waits for them: docs/ceph.md); the gate never
// starts another, so they stay bounded by the thread count.
//
// An abandoned call may still finish later (the cluster came back): what
// it touches must be its own (captured by value or shared), never the
// waiter's memory, which is gone by then.
//
// Thread safety: Run and Submit from any thread.
#ifndef FGDS_BACKEND_CEPH_CALL_GATE_H_
#define FGDS_BACKEND_CEPH_CALL_GATE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fgds::backend {

class CallGate {
 public:
  // Calls the job's start receives; call it exactly once, from any thread.
  using Finish = std::function<void(int64_t result)>;

  // `what` names the gated thing in the message printed when it dies.
  CallGate(unsigned threads, std::chrono::milliseconds timeout,
           std::string what);
  // Waits for the calls in flight (or for the gate to die meanwhile: then
  // their threads are left parked, and keep what they need alive).
  ~CallGate();
  CallGate(const CallGate&) = delete;
  CallGate& operator=(const CallGate&) = delete;

  // Runs `call` on a gate thread and returns its result, or -ENOTCONN
  // once the gate is dead (at once if it already is).
  int64_t Run(std::function<int64_t()> call);

  // How a submitted call ends: with the result its Finish reported
  // (gave_up false; on the thread that called Finish, inside that call), or
  // -ENOTCONN with gave_up true when the gate died first (on the
  // watchdog's thread, or in Submit if it was dead already): then the call
  // may still be running, and nothing of its may be read.
  using Done = std::function<void(int64_t result, bool gave_up)>;

  // Starts `start` on a gate thread; exactly one call of `done`.
  void Submit(std::function<void(Finish)> start, Done done);
  // The same, with `prologue` run first on that thread: while it runs the
  // gate does not give up on the call (should it die meanwhile, the call
  // is answered -ENOTCONN, gave_up true, once the prologue returns, and
  // `start` never runs), so the prologue may still read the caller's
  // memory. It must be short and never wait on the gated thing.
  void Submit(std::function<void()> prologue, std::function<void(Finish)> start,
              Done done);

  // One call of SubmitBatch: Submit's arguments (prologue may be empty).
  struct Call {
    std::function<void()> prologue;
    std::function<void(Finish)> start;
    Done done;
  };
  // Submits every call of `calls` as Submit does (each answered on its
  // own, as soon as it ends; each one's wait counted from now), but wakes
  // one gate thread for the lot instead of one per call. A gate thread
  // that takes a call while more wait in the queue wakes one more (unless
  // a thread woken earlier is not awake yet): fast calls are served one
  // after another by the threads already awake, while one that blocks
  // leaves the rest to the threads it woke, which spread further as long
  // as calls still wait. A batch of one wakes a thread as Submit does.
  // Either all calls are submitted or, should it throw std::bad_alloc,
  // none.
  void SubmitBatch(std::vector<Call> calls);

  // The same as Submit, but `start` runs here, on the calling thread (a
  // caller that lends its thread: one hand-off less), after the call was
  // entered among those the watchdog watches. Should the gate give up on
  // it, `done` is called (gave_up true) on the watchdog's thread while
  // this thread is still inside `start`, and the caller must not touch what
  // `done` answers for: this thread may come back any time later, or never.
  // At once -ENOTCONN (gave_up true, start not run) when already dead.
  void SubmitHere(std::function<void(Finish)> start, Done done);

  bool dead() const;
  // Since the start, for the stats and tests: calls run on gate threads;
  // times a gate thread was woken for one (a hand-off); the time they
  // waited in the queue, and ran (prologue and call, until it returned).
  struct Counters {
    uint64_t calls = 0;
    uint64_t wakes = 0;
    uint64_t wait_ns = 0;
    uint64_t run_ns = 0;
  };
  Counters counters() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_CEPH_CALL_GATE_H_
