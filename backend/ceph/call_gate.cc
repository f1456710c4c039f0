#include "backend/ceph/call_gate.h"

#include <cerrno>
#include <cstdio>
#include <list>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "common/mutex.h"

namespace fgds::backend {

using Clock = std::chrono::steady_clock;

namespace {

uint64_t Nanos(Clock::duration d) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

struct Job {
  std::function<void()> prologue;  // may be empty
  std::function<void(CallGate::Finish)> start;
  CallGate::Done done;
  Clock::time_point since;
  bool answered = false;  // guarded by State::mu
  // Guarded by State::mu: the prologue runs, so the watchdog, giving up,
  // leaves the answer to the thread running it (answer_after_prologue).
  bool in_prologue = false;
  bool answer_after_prologue = false;
  std::list<std::shared_ptr<Job>>::iterator at;  // in State::in_flight
};

}  // namespace

// Shared with every thread of the gate and every Finish it hands out, so
// that a thread parked in a call, and a call finishing after the gate is
// gone, still find it.
struct CallGate::State {
  State(std::chrono::milliseconds t, std::string w)
      : timeout(t), what(std::move(w)) {}

  const std::chrono::milliseconds timeout;
  const std::string what;

  // fgds::Mutex, not absl::Mutex: TSan (common/mutex.h).
  mutable fgds::Mutex mu;
  fgds::CondVar work;     // a job queued, or stopping
  fgds::CondVar changed;  // workers exited, stopping, or the gate died
  // A list, not a deque: a batch's jobs are spliced in, all or none.
  std::list<std::shared_ptr<Job>> queue ABSL_GUARDED_BY(mu);
  // Queued and running jobs, oldest first (they are added in time order).
  std::list<std::shared_ptr<Job>> in_flight ABSL_GUARDED_BY(mu);
  bool dead ABSL_GUARDED_BY(mu) = false;
  bool stopping ABSL_GUARDED_BY(mu) = false;
  bool watchdog_stop ABSL_GUARDED_BY(mu) = false;
  unsigned workers_running ABSL_GUARDED_BY(mu) = 0;
  // Workers waiting for a job, and how many of them were signalled and
  // have not woken yet: a call submitted alone signals a waiter not yet
  // signalled (one thread per call, as before batches); a worker leaving
  // calls queued wakes one only while none is on its way (that one takes
  // them, and wakes the next if they last).
  unsigned idle ABSL_GUARDED_BY(mu) = 0;
  unsigned wakes_pending ABSL_GUARDED_BY(mu) = 0;
  CallGate::Counters counters ABSL_GUARDED_BY(mu);

  std::vector<std::thread> workers;
  std::thread watchdog;

  // Signals a waiting worker not signalled yet, if there is one.
  static void Wake(State& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
    if (s.idle <= s.wakes_pending) return;
    ++s.wakes_pending;
    ++s.counters.wakes;
    s.work.Signal();
  }
  // Wakes a worker for the queue, unless one is on its way already.
  static void WakeOne(State& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
    if (s.wakes_pending == 0) Wake(s);
  }

  // Enters `job` among the calls in flight, queued (REQUIRES: not dead).
  static void Enter(State& s, const std::shared_ptr<Job>& job,
                    Clock::time_point now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
    job->since = now;
    s.in_flight.push_back(job);
    job->at = std::prev(s.in_flight.end());
  }

  // Answers job with `result` unless it was answered already.
  static void Finish(const std::shared_ptr<State>& state,
                     const std::shared_ptr<Job>& job, int64_t result) {
    {
      fgds::MutexLock lock(&state->mu);
      if (job->answered) return;
      job->answered = true;
      state->in_flight.erase(job->at);
    }
    job->done(result, false);
  }

  static void Worker(const std::shared_ptr<State>& state) {
    uint64_t ran_ns = 0;  // the last call's, counted at the next take
    for (;;) {
      std::shared_ptr<Job> job;
      Clock::time_point taken;
      {
        fgds::MutexLock lock(&state->mu);
        state->counters.run_ns += ran_ns;
        ran_ns = 0;
        while (!state->stopping && state->queue.empty()) {
          ++state->idle;
          state->work.Wait(&state->mu);
          --state->idle;
          // (Counted down by whoever wakes, signalled or not: at worst a
          // spurious wakeup lets one more signal through.)
          if (state->wakes_pending > 0) --state->wakes_pending;
        }
        if (state->queue.empty()) {
          --state->workers_running;
          state->changed.SignalAll();
          return;
        }
        job = std::move(state->queue.front());
        state->queue.pop_front();
        job->in_prologue = job->prologue != nullptr;
        taken = Clock::now();
        ++state->counters.calls;
        state->counters.wait_ns += Nanos(taken - job->since);
        // Jobs still wait (a batch's): one more thread, in case this job
        // blocks; if it does not, this thread takes them itself meanwhile,
        // and the woken one finds fewer, or none (SubmitBatch).
        if (!state->queue.empty()) WakeOne(*state);
      }
      if (job->prologue) {
        job->prologue();
        bool given_up;
        {
          fgds::MutexLock lock(&state->mu);
          job->in_prologue = false;
          given_up = job->answer_after_prologue;
        }
        if (given_up) {  // the watchdog left this answer to us
          job->done(-ENOTCONN, true);
          continue;
        }
      }
      job->start([state, job](int64_t result) { Finish(state, job, result); });
      ran_ns = Nanos(Clock::now() - taken);
    }
  }

  // Declares the gate dead once the oldest call in flight is older than
  // the timeout; runs until told to stop.
  static void Watchdog(const std::shared_ptr<State>& state) {
    const auto period = std::max<std::chrono::milliseconds>(
        std::chrono::milliseconds(10),
        std::min<std::chrono::milliseconds>(state->timeout / 4,
                                            std::chrono::seconds(1)));
    for (;;) {
      std::vector<std::shared_ptr<Job>> abandoned;
      {
        fgds::MutexLock lock(&state->mu);
        if (state->watchdog_stop) return;
        state->changed.WaitWithTimeout(&state->mu, absl::FromChrono(period));
        if (state->watchdog_stop) return;
        if (state->dead || state->in_flight.empty() ||
            Clock::now() - state->in_flight.front()->since <= state->timeout) {
          continue;
        }
        state->dead = true;
        state->queue.clear();
        for (auto& job : state->in_flight) {
          job->answered = true;
          if (job->in_prologue) {
            job->answer_after_prologue = true;  // at its end, by its thread
          } else {
            abandoned.push_back(job);
          }
        }
        state->in_flight.clear();
        state->changed.SignalAll();
      }
      fprintf(stderr,
              "fgds: %s: a call waited more than %lld ms; giving up on it: "
              "%zu call(s) in flight and every later one fail with "
              "ENOTCONN (remount once it is back)\n",
              state->what.c_str(),
              static_cast<long long>(state->timeout.count()), abandoned.size());
      for (auto& job : abandoned) job->done(-ENOTCONN, true);
    }
  }
};

CallGate::CallGate(unsigned threads, std::chrono::milliseconds timeout,
                   std::string what)
    : state_(std::make_shared<State>(timeout, std::move(what))) {
  if (threads == 0) threads = 1;
  {
    fgds::MutexLock lock(&state_->mu);
    state_->workers_running = threads;
  }
  for (unsigned i = 0; i < threads; ++i) {
    state_->workers.emplace_back([s = state_] { State::Worker(s); });
  }
  state_->watchdog = std::thread([s = state_] { State::Watchdog(s); });
}

CallGate::~CallGate() {
  State& s = *state_;
  bool dead;
  {
    fgds::MutexLock lock(&s.mu);
    s.stopping = true;
    s.work.SignalAll();
    // The watchdog keeps watching while the queue drains: a call that
    // hangs now kills the gate instead of this destructor.
    while (!s.dead && s.workers_running != 0) s.changed.Wait(&s.mu);
    dead = s.dead;
    s.watchdog_stop = true;
    s.changed.SignalAll();
  }
  s.watchdog.join();
  for (std::thread& t : s.workers) {
    // A dead gate's threads may never come back; each holds the state.
    if (dead) {
      t.detach();
    } else {
      t.join();
    }
  }
}

void CallGate::Submit(std::function<void(Finish)> start, Done done) {
  Submit(nullptr, std::move(start), std::move(done));
}

void CallGate::Submit(std::function<void()> prologue,
                      std::function<void(Finish)> start, Done done) {
  auto job = std::make_shared<Job>();
  job->prologue = std::move(prologue);
  job->start = std::move(start);
  job->done = std::move(done);
  {
    fgds::MutexLock lock(&state_->mu);
    if (!state_->dead) {
      State::Enter(*state_, job, Clock::now());
      state_->queue.push_back(job);
      // One thread per call submitted alone, as callers that each wait
      // for their own call expect (the namespace calls, large requests):
      // not just one on its way.
      State::Wake(*state_);
      return;
    }
  }
  job->done(-ENOTCONN, true);
}

void CallGate::SubmitBatch(std::vector<Call> calls) {
  if (calls.empty()) return;
  // Every allocation first (jobs and list nodes), so that either all are
  // entered or, thrown, none.
  std::list<std::shared_ptr<Job>> jobs, queued;
  for (Call& call : calls) {
    auto job = std::make_shared<Job>();
    job->prologue = std::move(call.prologue);
    job->start = std::move(call.start);
    job->done = std::move(call.done);
    jobs.push_back(job);
    queued.push_back(std::move(job));
  }
  {
    fgds::MutexLock lock(&state_->mu);
    if (!state_->dead) {
      const Clock::time_point now = Clock::now();
      for (auto it = jobs.begin(); it != jobs.end(); ++it) {
        (*it)->since = now;
        (*it)->at = it;
      }
      // Splicing keeps the iterators (`at`) valid, now into in_flight.
      state_->in_flight.splice(state_->in_flight.end(), jobs);
      state_->queue.splice(state_->queue.end(), queued);
      // A batch of one is a call submitted alone: a thread of its own.
      if (calls.size() == 1) {
        State::Wake(*state_);
      } else {
        State::WakeOne(*state_);
      }
      return;
    }
  }
  for (auto& job : queued) job->done(-ENOTCONN, true);
}

void CallGate::SubmitHere(std::function<void(Finish)> start, Done done) {
  auto job = std::make_shared<Job>();
  job->done = std::move(done);
  bool entered = false;
  {
    fgds::MutexLock lock(&state_->mu);
    if (!state_->dead) {
      State::Enter(*state_, job, Clock::now());
      entered = true;
    }
  }
  if (!entered) {
    job->done(-ENOTCONN, true);
    return;
  }
  // Answered by Finish, unless the watchdog took the job meanwhile.
  start([state = state_, job](int64_t result) {
    State::Finish(state, job, result);
  });
}

int64_t CallGate::Run(std::function<int64_t()> call) {
  struct Wait {
    fgds::Mutex mu;
    fgds::CondVar cv;
    bool done ABSL_GUARDED_BY(mu) = false;
    int64_t result ABSL_GUARDED_BY(mu) = 0;
  };
  auto wait = std::make_shared<Wait>();
  Submit([call = std::move(call)](Finish finish) { finish(call()); },
         [wait](int64_t result, bool) {
           fgds::MutexLock lock(&wait->mu);
           wait->result = result;
           wait->done = true;
           wait->cv.Signal();
         });
  fgds::MutexLock lock(&wait->mu);
  while (!wait->done) wait->cv.Wait(&wait->mu);
  return wait->result;
}

bool CallGate::dead() const {
  fgds::MutexLock lock(&state_->mu);
  return state_->dead;
}

CallGate::Counters CallGate::counters() const {
  fgds::MutexLock lock(&state_->mu);
  return state_->counters;
}

}  // namespace fgds::backend
