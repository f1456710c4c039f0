// LocalBackend: the data path. Each request's descriptor and path come from
// ChooseIo (io_policy.h); the bytes move through the io_uring engine, or in
// the calling thread for RunIo.
#include <cerrno>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "backend/local/io_policy.h"
#include "backend/local/kill_privileges.h"
#include "backend/local/local_backend.h"
#include "backend/local/local_file.h"
#include "common/io/inline_engine.h"
#include "common/io/io_engine.h"
#include "common/page_cache.h"

namespace fgds::backend {
namespace {

io::IoOp EngineOp(FileOp op) {
  switch (op) {
    case FileOp::kRead:
      return io::IoOp::kRead;
    case FileOp::kWrite:
      return io::IoOp::kWrite;
    case FileOp::kFsync:
      return io::IoOp::kFsync;
    case FileOp::kFdatasync:
      return io::IoOp::kFdatasync;
  }
  return io::IoOp::kRead;
}

IoChoice Choose(const FileIoRequest& request) {
  const File& file = *request.file;
  return ChooseIo(request, {file.fd, file.direct_fd, file.storage_device},
                  &FullyCached);
}

io::IoRequest ToEngine(const FileIoRequest& request, const IoChoice& choice) {
  return io::IoRequest{EngineOp(request.op), choice.fd,
                       request.buf,          static_cast<size_t>(request.len),
                       request.offset,       request.completion};
}

}  // namespace

void LocalBackend::SubmitIo(std::span<const FileIoRequest> batch) {
  // Per call, not per thread: with the inline engine a completion runs
  // inside Submit and may submit again.
  absl::InlinedVector<io::IoRequest, 8> requests;
  absl::InlinedVector<std::pair<FileIoCompletion*, int>, 4> refused;
  PrivilegeKiller killer;
  for (const FileIoRequest& request : batch) {
    IoChoice choice = Choose(request);
    request.completion->set_path(choice.path);
    if (choice.error == 0) {
      if (int err = killer.Before(request); err != 0) {
        request.completion->set_path(IoPath::kNone);
        choice.error = err;
      }
    }
    if (choice.error != 0) {
      refused.emplace_back(request.completion, choice.error);
      continue;
    }
    requests.push_back(ToEngine(request, choice));
  }
  if (!requests.empty()) engine_->Submit(requests);
  for (auto& [completion, error] : refused) completion->Complete(error);
}

int64_t LocalBackend::RunIo(const FileIoRequest& request, IoPath* path) {
  IoChoice choice = Choose(request);
  *path = choice.path;
  if (choice.error != 0) return choice.error;
  if (int err = PrivilegeKiller().Before(request); err != 0) {
    *path = IoPath::kNone;
    return err;
  }
  int64_t res = io::RunBlocking(ToEngine(request, choice));
  const bool device = request.region != nullptr &&
                      request.region->kind() == MemoryRegion::Kind::kDevice;
  if (res == -EINVAL && choice.path == IoPath::kDirect && !device) {
    // A filesystem may refuse this alignment (a larger logical block):
    // host memory can always take the page cache instead.
    choice.fd = request.file->fd;
    *path = IoPath::kPageCache;
    res = io::RunBlocking(ToEngine(request, choice));
  }
  return res;
}

}  // namespace fgds::backend
