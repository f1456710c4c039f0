#include "common/io/io_engine.h"

#include <semaphore>
#include <string>

#include "common/io/inline_engine.h"
#include "common/io/uring_engine.h"

namespace fgds::io {

std::unique_ptr<IoEngine> CreateIoEngine(const IoEngineOptions& options,
                                         std::string* fallback_reason) {
  if (options.use_io_uring) {
    auto uring = UringEngine::Create(options);
    if (uring.ok()) return *std::move(uring);
    if (fallback_reason) *fallback_reason = uring.status().ToString();
  } else if (fallback_reason) {
    *fallback_reason = "io_uring disabled by option";
  }
  return std::make_unique<InlineEngine>();
}

namespace {
class WaitingCompletion : public IoCompletion {
 public:
  void Complete(int64_t result) override {
    result_ = result;
    done_.release();
  }
  int64_t Wait() {
    done_.acquire();
    return result_;
  }

 private:
  int64_t result_ = 0;
  std::binary_semaphore done_{0};
};
}  // namespace

int64_t SubmitAndWait(IoEngine& engine, IoOp op, int fd, void* buf, size_t len,
                      uint64_t offset) {
  WaitingCompletion completion;
  IoRequest request{op, fd, buf, len, offset, &completion};
  engine.Submit({&request, 1});
  return completion.Wait();
}

}  // namespace fgds::io
