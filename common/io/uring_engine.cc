#include "common/io/uring_engine.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <new>
#include <thread>
#include <utility>

namespace fgds::io {
namespace {

// A unit of several requests or pieces: collects the pieces' results and,
// when the last one arrives, completes each request with its share.
class UnitTracker {
 public:
  UnitTracker(std::span<const IoRequest> requests,
              std::span<const PlannedPiece> pieces)
      : pieces_(pieces.begin(), pieces.end()),
        results_(pieces.size()),
        pending_(static_cast<uint32_t>(pieces.size())) {
    requests_.reserve(requests.size());
    for (const IoRequest& r : requests) {
      requests_.push_back({r.completion, r.len});
    }
  }

  void PieceDone(uint32_t index, int64_t result) {
    results_[index] = result;
    // acq_rel: every piece's result is visible to whoever finishes last.
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    const UnitOutcome outcome = CombinePieces(pieces_, results_);
    uint64_t start = 0;
    for (const Member& m : requests_) {
      m.completion->Complete(RequestResult(outcome, start, m.len));
      start += m.len;
    }
    delete this;
  }

 private:
  struct Member {
    IoCompletion* completion;
    uint64_t len;
  };
  std::vector<Member> requests_;
  std::vector<PlannedPiece> pieces_;
  std::vector<int64_t> results_;
  std::atomic<uint32_t> pending_;
};

// One piece of a unit: an IoCompletion of its own, carrying the piece's
// transfer.
class PieceItem : public IoCompletion {
 public:
  PieceItem(UnitTracker* unit, uint32_t index) : unit_(unit), index_(index) {}
  void Complete(int64_t result) override {
    unit_->PieceDone(index_, result);
    delete this;
  }

 private:
  UnitTracker* const unit_;
  const uint32_t index_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<UringEngine>> UringEngine::Create(
    const IoEngineOptions& options) {
  std::unique_ptr<UringEngine> engine(new UringEngine());
  engine->os_ =
      options.uring_os != nullptr ? options.uring_os : UringOs::Default();
  int workers = options.workers;
  if (workers <= 0) {
    workers = static_cast<int>(std::clamp(std::thread::hardware_concurrency(),
                                          1u, kMaxDefaultWorkers));
  }
  for (int i = 0; i < workers; ++i) {
    auto worker =
        UringWorker::Create(options.queue_depth,
                            uint64_t{options.spin_us} * 1000, options.uring_os);
    if (!worker.ok()) return worker.status();
    engine->workers_.push_back(*std::move(worker));
  }
  engine->limits_.merge_bytes = options.merge_bytes;
  engine->limits_.split_bytes = options.split_bytes;
  engine->limits_.spread_bytes = options.spread_bytes;
  engine->limits_.workers = workers;
  return engine;
}

UringEngine::~UringEngine() {
  // Each worker finishes its queue and its I/O before its thread ends.
  workers_.clear();
}

void UringEngine::Carry(IoCompletion* item, const PlannedPiece& piece) {
  item->transfer_ = {piece.op, piece.fd, piece.buf, piece.len, piece.offset, 0};
}

void UringEngine::Prepare(std::span<const IoRequest> batch, IoPlan* plan,
                          std::vector<IoCompletion*>* items) {
  // What this call allocated, freed if a later allocation fails: nothing
  // was handed over, so nothing else refers to it. Reserved before the
  // first `new`, so that recording one never fails.
  thread_local std::vector<UnitTracker*> units;
  thread_local std::vector<PieceItem*> pieces;
  units.clear();
  pieces.clear();
  try {
    os_->BeforeAllocation();
    PlanBatch(batch, limits_, plan);
    items->assign(plan->pieces.size(), nullptr);
    for (const PlannedUnit& u : plan->units) {
      if (u.requests == 1 && u.pieces == 1) {
        // The common case: the request's own completion carries the
        // transfer, nothing is allocated.
        IoCompletion* completion = batch[u.first_request].completion;
        Carry(completion, plan->pieces[u.first_piece]);
        (*items)[u.first_piece] = completion;
        continue;
      }
      if (units.capacity() < plan->units.size() ||
          pieces.capacity() < plan->pieces.size()) {
        os_->BeforeAllocation();
        units.reserve(plan->units.size());
        pieces.reserve(plan->pieces.size());
      }
      os_->BeforeAllocation();
      auto* unit = new UnitTracker(
          batch.subspan(u.first_request, u.requests),
          std::span(plan->pieces).subspan(u.first_piece, u.pieces));
      units.push_back(unit);
      for (uint32_t k = 0; k < u.pieces; ++k) {
        os_->BeforeAllocation();
        auto* piece = new PieceItem(unit, k);
        pieces.push_back(piece);
        Carry(piece, plan->pieces[u.first_piece + k]);
        (*items)[u.first_piece + k] = piece;
      }
    }
  } catch (const std::bad_alloc&) {
    for (PieceItem* piece : pieces) delete piece;
    for (UnitTracker* unit : units) delete unit;
    units.clear();
    pieces.clear();
    throw;
  }
}

void UringEngine::Submit(std::span<const IoRequest> batch) {
  if (batch.empty()) return;
  // Per-thread scratch: a submitting thread reuses its capacity.
  thread_local IoPlan plan;
  thread_local std::vector<IoCompletion*> items;
  try {
    Prepare(batch, &plan, &items);
  } catch (const std::bad_alloc&) {
    // Nothing was handed over: every request fails alone, here. The
    // completions may submit again (reusing plan and items), so nothing
    // of this call's scratch is read after the first one.
    for (const IoRequest& r : batch) r.completion->Complete(-ENOMEM);
    return;
  }
  const size_t groups = plan.group_starts.size() - 1;
  // Rotate the first worker, so that small batches from many callers do
  // not all land on worker 0.
  const unsigned first = next_worker_.fetch_add(static_cast<unsigned>(groups),
                                                std::memory_order_relaxed);
  for (size_t g = 0; g < groups; ++g) {
    const uint32_t begin = plan.group_starts[g];
    const uint32_t end = plan.group_starts[g + 1];
    workers_[(first + g) % workers_.size()]->Enqueue(
        std::span(items).subspan(begin, end - begin));
  }
}

}  // namespace fgds::io
