// File: usrbio/direct/request.h
//
// One I/O in flight: what to move, its chunk plan, and the completion that
// gathers the chunks' results. Workers complete chunks in any order; the
// last one completes the request.
#ifndef FGDS_USRBIO_DIRECT_REQUEST_H_
#define FGDS_USRBIO_DIRECT_REQUEST_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "common/io/chunking.h"
#include "common/mutex.h"
#include "usrbio/direct/buffer_registry.h"
#include "usrbio/direct/file_handles.h"

namespace fgds::direct {

// A request's chunks: the shared rule (common/io/chunking.h), with separate
// edges (a buffered head and tail around an O_DIRECT body).
using io::Chunk;
using io::ChunkKind;
using io::ChunkPlan;

enum class Op { kRead, kWrite };

struct RequestSpec {
  Op op = Op::kRead;
  std::shared_ptr<FileHandles> file;
  uint64_t device_address = 0;  // of the I/O's first byte
  uint64_t file_offset = 0;
  uint64_t size = 0;
  Pin pin;                 // the registration, when the buffer has one
  uint64_t buffer_id = 0;  // the allocation the range must still belong to
  // The direct path: where the I/O's first byte is in an fgds mapping of
  // the buffer, for this file's device (empty: every chunk bounces).
  DirectTarget direct;
};

// What a completed request reports.
struct RequestOutcome {
  int64_t result = 0;                // bytes or -errno
  uint32_t path = 0;                 // FGDS_GPU_PATH_*
  uint32_t source = 0;               // FGDS_SRC_* bits
  uint64_t bytes_by_source[3] = {};  // page cache, O_DIRECT, buffered
  uint64_t bytes_direct = 0;         // of those, moved without staging
};

class Request {
 public:
  // `on_done` runs once, on the thread that completes the last chunk,
  // before waiters are woken (the driver's statistics).
  Request(RequestSpec spec, ChunkPlan plan,
          std::function<void(const RequestOutcome&, Op)> on_done);
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  Op op() const { return spec_.op; }
  const FileHandles& file() const { return *spec_.file; }
  uint64_t device_address() const { return spec_.device_address; }
  uint64_t buffer_id() const { return spec_.buffer_id; }
  // The I/O's first byte in an fgds mapping, or null (bounce only).
  uint8_t* direct_base() const { return spec_.direct.base; }
  const ChunkPlan& plan() const { return plan_; }

  // Once a chunk failed, the remaining ones are skipped.
  bool failed() const { return failed_.load(std::memory_order_acquire); }

  // ChunkDone records chunk `chunk`'s outcome: bytes moved (fewer than its
  // length only at end of file) or -errno, which FGDS_SRC_* bits its bytes
  // took, with the bytes per source, and whether they moved directly
  // between storage and device memory (else through staging).
  void ChunkDone(const Chunk& chunk, int64_t result, uint32_t source,
                 const uint64_t bytes_by_source[3], bool direct);

  // Complete an empty request (no chunks) at once.
  void CompleteEmpty();

  // Wait blocks until the request completes or `timeout_us` passes (-1:
  // forever). Returns whether it completed.
  bool Wait(int64_t timeout_us);
  // REQUIRES: Wait returned true.
  const RequestOutcome& outcome() const { return outcome_; }

  // The next chunk to hand out; owned by the Dispatcher, under its lock.
  uint64_t next_chunk = 0;

 private:
  void Complete();

  RequestSpec spec_;
  const ChunkPlan plan_;
  std::function<void(const RequestOutcome&, Op)> on_done_;

  std::atomic<bool> failed_{false};
  std::atomic<uint64_t> chunks_done_{0};
  std::atomic<uint32_t> source_{0};
  std::atomic<uint64_t> by_source_[3] = {};
  std::atomic<uint64_t> direct_bytes_{0};

  fgds::Mutex mu_;
  fgds::CondVar finished_;              // done_ became true
  int error_ ABSL_GUARDED_BY(mu_) = 0;  // first failure, -errno
  // Smallest file offset where a chunk came up short (end of file).
  uint64_t short_at_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  RequestOutcome outcome_;  // written before done_ is set
};

}  // namespace fgds::direct

#endif  // FGDS_USRBIO_DIRECT_REQUEST_H_
