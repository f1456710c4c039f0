// File: common/io/inline_engine.h
//
// InlineEngine runs each request with pread/pwrite in the submitting thread.
// It is the fallback where io_uring is unavailable, and the reference the
// io_uring engine is tested against.
#ifndef FGDS_COMMON_IO_INLINE_ENGINE_H_
#define FGDS_COMMON_IO_INLINE_ENGINE_H_

#include "common/io/io_engine.h"

namespace fgds::io {

class InlineEngine : public IoEngine {
 public:
  void Submit(std::span<const IoRequest> batch) override;
  const char* name() const override { return "inline"; }
};

// Runs one request to completion with pread/pwrite, retrying short transfers
// and EINTR: bytes or -errno. Shared by both engines' slow paths.
int64_t RunBlocking(const IoRequest& request);

}  // namespace fgds::io

#endif  // FGDS_COMMON_IO_INLINE_ENGINE_H_
