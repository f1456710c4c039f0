// LocalBackend: the data path. Each request's descriptor and path come from
// ChooseIo (io_policy.h); the bytes move through the io_uring engine, or in
// the calling thread for RunIo and for cached reads that ask for it
// (kIoInlineIfCached: a batch's such reads in one io_uring_enter on the
// thread's own ring, nowait_reader.h).
#include <sys/uio.h>

#include <atomic>
#include <cerrno>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "backend/local/io_policy.h"
#include "backend/local/kill_privileges.h"
#include "backend/local/local_backend.h"
#include "backend/local/local_file.h"
#include "backend/local/nowait_reader.h"
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
  return ChooseIo(request, {file.fd, file.direct_fd(), file.storage_device},
                  &FullyCached);
}

io::IoRequest ToEngine(const FileIoRequest& request, const IoChoice& choice) {
  return io::IoRequest{EngineOp(request.op), choice.fd,
                       request.buf,          static_cast<size_t>(request.len),
                       request.offset,       request.completion};
}

// The largest read served inline. Beyond it the engine's split and spread
// (io_plan.h) copy one request on several workers at once, which wins over
// one thread's copy: a 1 MiB read is some 100 us of copying, against a few
// of hand-off; a GPU iov's 4 MiB staging chunks rely on it. Below it the
// hand-off and its wakeups cost more than the copy.
constexpr uint64_t kInlineReadMax = uint64_t{64} << 10;

// Whether `request` may be served by ReadCachedInline: a read of at most
// kInlineReadMax into host memory through the page cache, from a caller
// that allows it.
bool InlineCandidate(const FileIoRequest& request, const IoChoice& choice) {
  return (request.flags & kIoInlineIfCached) != 0 &&
         request.op == FileOp::kRead && choice.path == IoPath::kPageCache &&
         request.len > 0 && request.len <= kInlineReadMax &&
         (request.region == nullptr ||
          request.region->kind() == MemoryRegion::Kind::kHost) &&
         !request.file->nowait_refused.load(std::memory_order_relaxed);
}

// Whether a read ReadNowait (nowait_reader.h) answered with `result` is
// done: every byte came. Anything else (pages missing or locked for I/O:
// EAGAIN; a short read, which may be end of file; an error) leaves the
// request to the engine, which reads it again from its start and reports
// what pread would. A file system that refuses RWF_NOWAIT (EOPNOTSUPP) is
// not asked again for this file.
bool ReadWhole(const FileIoRequest& request, int64_t result) {
  if (result == -EOPNOTSUPP || result == -EINVAL) {
    request.file->nowait_refused.store(true, std::memory_order_relaxed);
  }
  return result >= 0 && static_cast<uint64_t>(result) == request.len;
}

}  // namespace

void LocalBackend::SubmitIo(std::span<const FileIoRequest> batch) {
  // Per call, not per thread: with the inline engine a completion runs
  // inside Submit and may submit again.
  // Inline room for a usrbio ring worker's whole turn (16 entries by
  // default): the reserves below then allocate nothing per batch.
  absl::InlinedVector<io::IoRequest, 16> requests;
  absl::InlinedVector<std::pair<FileIoCompletion*, int>, 16> refused;
  absl::InlinedVector<IoChoice, 16> choices;
  // The batch's cached-read candidates, read together (one io_uring_enter
  // for all of them: nowait_reader.h), and for each the index of its
  // request.
  absl::InlinedVector<NowaitRead, 16> reads;
  absl::InlinedVector<uint32_t, 16> read_of;
  // Reserved before any request starts: an allocation failure after an
  // inline completion would break SubmitIo's contract (backend.h).
  requests.reserve(batch.size());
  refused.reserve(batch.size());
  choices.reserve(batch.size());
  reads.reserve(batch.size());
  read_of.reserve(batch.size());
  for (const FileIoRequest& request : batch) {
    IoChoice choice = Choose(request);
    request.completion->set_path(choice.path);
    if (choice.error == 0 && InlineCandidate(request, choice)) {
      read_of.push_back(static_cast<uint32_t>(choices.size()));
      NowaitRead read{choice.fd, request.buf,
                      static_cast<uint32_t>(request.len), request.offset, 0};
      // Keys for the thread ring's fixed files and buffers: the key names
      // the File's own descriptor (kPageCache reads use it), and
      // the region, when there is one, holds the buffer (the ring checked
      // the range).
      if (choice.fd == request.file->fd) {
        read.file_key = &request.file->registration_key;
      }
      if (request.region != nullptr) {
        read.region_key = &request.region->registration_key();
        read.region_base = request.region->base();
        read.region_size = request.region->size();
      }
      reads.push_back(read);
    }
    choices.push_back(choice);
  }
  if (!reads.empty()) ReadNowait(std::span<NowaitRead>(reads));
  PrivilegeKiller killer;
  size_t next_read = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const FileIoRequest& request = batch[i];
    IoChoice& choice = choices[i];
    if (next_read < read_of.size() && read_of[next_read] == i) {
      const bool whole = ReadWhole(request, reads[next_read].result);
      ++next_read;
      if (whole) {
        // Done on this thread: no hand-off, no engine wakeup. May delete
        // the completion (the caller's batch), never `batch` itself.
        request.completion->Complete(static_cast<int64_t>(request.len));
        continue;
      }
    }
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
