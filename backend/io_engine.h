// File: backend/io_engine.h
//
// IoEngine: the asynchronous, batched data-path interface every backend's
// file I/O goes through (FUSE reads/writes today; usrbio rings and the
// remote backend later). A request names an fd, a buffer, a length and an
// offset; the engine transfers the whole length (retrying short transfers)
// and calls the request's completion exactly once, on an engine thread, with
// the bytes transferred (fewer than asked only at end of file for reads) or
// -errno.
//
// Thread safety: Submit may be called from any number of threads at once.
#ifndef FGDS_BACKEND_IO_ENGINE_H_
#define FGDS_BACKEND_IO_ENGINE_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/statusor.h"

namespace fgds::backend {

// IoCompletion receives a request's result. The object must stay alive until
// Complete is called; Complete may delete it.
class IoCompletion {
 public:
  virtual ~IoCompletion() = default;
  virtual void Complete(int64_t result) = 0;
};

enum class IoOp : uint8_t { kRead, kWrite };

struct IoRequest {
  IoOp op = IoOp::kRead;
  int fd = -1;
  void* buf = nullptr;
  size_t len = 0;
  uint64_t offset = 0;
  IoCompletion* completion = nullptr;  // not owned; see IoCompletion
};

struct IoEngineOptions {
  // Number of io_uring instances, each with its own completion thread.
  int rings = 2;
  // Submission queue depth of each ring.
  unsigned queue_depth = 256;
  // Use io_uring; when false, or when io_uring is unavailable (disabled by
  // sysctl, seccomp, old kernel), requests run inline in Submit.
  bool use_io_uring = true;
};

class IoEngine {
 public:
  virtual ~IoEngine() = default;
  // Starts every request of `batch`. Never blocks on I/O itself; it may wait
  // for room when the engine already holds its maximum of requests in flight.
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

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_IO_ENGINE_H_
