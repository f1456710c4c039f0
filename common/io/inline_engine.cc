#include "common/io/inline_engine.h"

#include <unistd.h>

#include <cerrno>

namespace fgds::io {

int64_t RunBlocking(const IoRequest& request) {
  if (IsSync(request.op)) {
    int ret =
        request.op == IoOp::kFsync ? fsync(request.fd) : fdatasync(request.fd);
    return ret == 0 ? 0 : -errno;
  }
  auto* buf = static_cast<char*>(request.buf);
  size_t done = 0;
  while (done < request.len) {
    ssize_t n = request.op == IoOp::kRead
                    ? pread(request.fd, buf + done, request.len - done,
                            request.offset + done)
                    : pwrite(request.fd, buf + done, request.len - done,
                             request.offset + done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return done > 0 ? static_cast<int64_t>(done) : -errno;
    }
    if (n == 0) break;  // end of file (reads); a zero write cannot progress
    done += static_cast<size_t>(n);
  }
  return static_cast<int64_t>(done);
}

void InlineEngine::Submit(std::span<const IoRequest> batch) {
  for (const IoRequest& request : batch) {
    request.completion->Complete(RunBlocking(request));
  }
}

}  // namespace fgds::io
