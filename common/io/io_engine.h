// File: common/io/io_engine.h
//
// IoEngine: the asynchronous, batched data path every file transfer of
// FGDS goes through: the daemon's (FUSE reads and writes, usrbio rings, the
// remote backend later) and libfgds's (staging slots of the direct API).
// Each process instantiates its own engines; there is one implementation,
// here, in a library both sides link (fgds_io: the client library must not
// link backend/). A request names an fd, a buffer, a length and an
// offset; the engine transfers the whole length (retrying short transfers)
// and calls the request's completion exactly once, on an engine thread, with
// the bytes transferred (fewer than asked only at end of file for reads) or
// -errno. Submit never throws: a batch the engine cannot allocate for
// completes inside Submit, each request with -ENOMEM.
//
// Thread safety: Submit may be called from any number of threads at once.
#ifndef FGDS_COMMON_IO_IO_ENGINE_H_
#define FGDS_COMMON_IO_IO_ENGINE_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/statusor.h"

namespace fgds::io {

class UringOs;  // uring_os.h

// kFsync/kFdatasync: fsync(2)/fdatasync(2) of fd (buf, len and offset
// unused, len 0); the result is 0 or -errno.
enum class IoOp : uint8_t { kRead, kWrite, kFsync, kFdatasync };

inline bool IsSync(IoOp op) {
  return op == IoOp::kFsync || op == IoOp::kFdatasync;
}

// IoCompletion receives a request's result. The object must stay alive until
// Complete is called; Complete may delete it. It serves one request at a
// time: the engine keeps that request's state in it until Complete.
class IoCompletion {
 public:
  virtual ~IoCompletion() = default;
  virtual void Complete(int64_t result) = 0;

 private:
  friend class UringEngine;
  friend class UringWorker;
  friend class UringItemList;
  // The io_uring engine's record of the transfer in flight (uring_worker.h),
  // kept here so that a request in one piece costs the engine no
  // allocation. Meaningless outside the engine.
  struct Transfer {
    IoOp op = IoOp::kRead;
    int fd = -1;
    char* buf = nullptr;
    size_t len = 0;
    uint64_t offset = 0;
    size_t done = 0;  // bytes moved so far (short transfers continue)
  };
  Transfer transfer_;
  // The io_uring engine's links (UringItemList, uring_worker.h): a worker's
  // queues thread items through them, so queuing never allocates, and the
  // result an item finishes with waits here until Complete.
  IoCompletion* next_ = nullptr;
  int64_t result_ = 0;
};

struct IoRequest {
  IoOp op = IoOp::kRead;
  int fd = -1;
  void* buf = nullptr;
  size_t len = 0;
  uint64_t offset = 0;
  IoCompletion* completion = nullptr;  // not owned; see IoCompletion
};

// The default worker count: one per CPU, at most this many.
inline constexpr unsigned kMaxDefaultWorkers = 8;

struct IoEngineOptions {
  // io_uring worker threads, each with its own ring; 0 = one per CPU, at
  // most kMaxDefaultWorkers.
  int workers = 0;
  // Submission queue depth of each worker's ring.
  unsigned queue_depth = 256;
  // Microseconds an idle worker polls for work before it sleeps.
  unsigned spin_us = 0;
  // Batch planning (io_plan.h): continuing requests merge up to
  // merge_bytes, longer ones split into split_bytes pieces (a multiple of
  // 4096), spread over workers at spread_bytes or more each.
  size_t merge_bytes = size_t{1} << 20;
  size_t split_bytes = size_t{1} << 20;
  size_t spread_bytes = size_t{32} << 10;
  // Use io_uring; when false, or when io_uring is unavailable (disabled by
  // sysctl, seccomp, old kernel), requests run inline in Submit.
  bool use_io_uring = true;
  // The system calls of the io_uring workers (uring_os.h); null: the real
  // ones. Not owned; must outlive the engine. Tests inject faults here.
  UringOs* uring_os = nullptr;
};

class IoEngine {
 public:
  virtual ~IoEngine() = default;
  // Starts every request of `batch`. Never blocks on I/O itself.
  virtual void Submit(std::span<const IoRequest> batch) = 0;
  // "io_uring" or "inline": reported in stats so users know the path.
  virtual const char* name() const = 0;
};

// Creates the best engine available. Never fails: falls back to the inline
// engine and says why in *fallback_reason (if given).
std::unique_ptr<IoEngine> CreateIoEngine(
    const IoEngineOptions& options, std::string* fallback_reason = nullptr);

// Submits one request and waits for its result: bytes or -errno. For callers
// whose buffer lives only as long as their own stack frame.
int64_t SubmitAndWait(IoEngine& engine, IoOp op, int fd, void* buf, size_t len,
                      uint64_t offset);

}  // namespace fgds::io

#endif  // FGDS_COMMON_IO_IO_ENGINE_H_
