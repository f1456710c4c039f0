#include "usrbio/direct/worker.h"

#include <cerrno>
#include <future>

#include "common/io/inline_engine.h"
#include "common/page_cache.h"
#include "fgds/fgds.h"

namespace fgds::direct {
namespace {

constexpr int kSrcPageCache = 0;  // indexes of Slot::by_source
constexpr int kSrcODirect = 1;
constexpr int kSrcBuffered = 2;

// The FGDS_SRC_* bit of each kSrc* index.
constexpr uint32_t kSourceBits[3] = {FGDS_SRC_PAGE_CACHE, FGDS_SRC_O_DIRECT,
                                     FGDS_SRC_BUFFERED};

}  // namespace

Worker::Worker(const DriverConfig& config, DeviceOps& ops,
               Dispatcher& dispatcher, io::IoEngine& engine)
    : config_(config), ops_(ops), dispatcher_(dispatcher), engine_(engine) {}

Worker::~Worker() { Join(); }

int Worker::Start(std::string* message) {
  std::promise<int> started;
  std::future<int> result = started.get_future();
  thread_ = std::thread([this, &started, message] {
    const int error = Setup(message);
    started.set_value(error);  // `started` and `message` die after this
    if (error == 0) Run();
    Teardown();
  });
  return result.get();
}

void Worker::Join() {
  if (thread_.joinable()) thread_.join();
}

int Worker::Setup(std::string* message) {
  if (int error = ops_.BindThread(); error != 0) {
    *message = "worker: cannot make the CUDA context current";
    return error;
  }
  const size_t slots = static_cast<size_t>(config_.slots_per_worker);
  const uint64_t chunk = config_.chunk_bytes;
  void* staging = nullptr;
  if (int error = ops_.AllocPinned(slots * chunk, &staging); error != 0) {
    *message = "cannot allocate " + std::to_string(slots * chunk) +
               " bytes of pinned staging memory";
    return error;
  }
  staging_ = static_cast<uint8_t*>(staging);
  staging_bytes_ = slots * chunk;
  if (int error = ops_.CreateStream(&stream_); error != 0) {
    *message = "cannot create a CUDA stream";
    return error;
  }
  slots_.resize(slots);
  for (size_t i = 0; i < slots; ++i) {
    slots_[i].staging = staging_ + i * chunk;
    if (int error = ops_.CreateEvent(&slots_[i].event); error != 0) {
      *message = "cannot create a CUDA event";
      return error;
    }
  }
  for (Slot& slot : slots_) slot.worker = this;
  return 0;
}

void Worker::Teardown() {
  for (Slot& slot : slots_) {
    if (slot.event != 0) ops_.DestroyEvent(slot.event);
  }
  if (stream_ != 0) ops_.DestroyStream(stream_);
  if (staging_ != nullptr) {
    ops_.FreePinned(staging_, staging_bytes_);
  }
  slots_.clear();
  staging_ = nullptr;
  stream_ = 0;
}

void Worker::Run() {
  for (;;) {
    // At most one new chunk per turn, then a look at what finished: a slot
    // whose device copy is done is reused before an idle one (FreeSlot
    // takes the lowest free index), so page-cache copies keep landing in
    // the same few staging buffers, which then stay in the CPU cache for
    // the device's DMA read instead of going through DRAM.
    const int started = StartOne();
    if (started < 0) return;
    if (busy_ == 0) continue;
    if (Poll() > 0 || started > 0) continue;
    Block();
  }
}

int Worker::StartOne() {
  Slot* free = nullptr;
  for (Slot& slot : slots_) {
    if (slot.state == State::kFree) {
      free = &slot;
      break;
    }
  }
  if (free == nullptr) return 0;
  ChunkTask task;
  if (busy_ == 0) {
    if (!dispatcher_.Take(&task)) return -1;
  } else if (!dispatcher_.TryTake(&task)) {
    return 0;
  }
  Start(*free, std::move(task));
  return 1;
}

void Worker::Slot::Complete(int64_t result) {
  io_result = result;
  worker->Completed(this);
}

void Worker::Completed(Slot* slot) {
  // seq_cst, here and in Block: either this push is seen by the worker's
  // check after it set sleeping_, or this load sees sleeping_ set; so a
  // sleeping worker is always woken. The slot is not touched after the
  // push (the worker may reuse it at once).
  Slot* head = done_.load(std::memory_order_relaxed);
  do {
    slot->next_done = head;
  } while (!done_.compare_exchange_weak(head, slot, std::memory_order_seq_cst,
                                        std::memory_order_relaxed));
  if (sleeping_.load(std::memory_order_seq_cst)) {
    fgds::MutexLock lock(&mu_);
    wake_.Signal();
  }
}

int Worker::TakeCompleted() {
  // Acquire: each slot's io_result and the bytes the engine moved.
  Slot* list = done_.exchange(nullptr, std::memory_order_acquire);
  if (list == nullptr) return 0;
  // Newest first: reverse, so that slots move on in completion order.
  Slot* fifo = nullptr;
  while (list != nullptr) {
    Slot* next = list->next_done;
    list->next_done = fifo;
    fifo = list;
    list = next;
  }
  int taken = 0;
  while (fifo != nullptr) {
    Slot* slot = fifo;
    fifo = slot->next_done;
    OnCompletion(*slot, static_cast<int>(slot->io_result));
    ++taken;
  }
  return taken;
}

int Worker::Poll() {
  int progressed = TakeCompleted();
  // Copies on the worker's one stream finish in the order they were
  // queued: check oldest first and stop at the first one still running.
  for (;;) {
    Slot* oldest = OldestCopying();
    if (oldest == nullptr) break;
    const int status = ops_.QueryEvent(oldest->event);
    if (status == -EAGAIN) break;
    ++progressed;
    if (status == 0) {
      CopyDone(*oldest);
    } else {
      Fail(*oldest, status);
    }
  }
  return progressed;
}

Worker::Slot* Worker::OldestCopying() {
  Slot* oldest = nullptr;
  for (Slot& slot : slots_) {
    if (slot.state == State::kCopying &&
        (oldest == nullptr || slot.copy_seq < oldest->copy_seq)) {
      oldest = &slot;
    }
  }
  return oldest;
}

void Worker::Block() {
  // A device copy takes tens of microseconds, a disk read milliseconds:
  // wait for the copy first, its slot is the next one to free up.
  if (Slot* oldest = OldestCopying(); oldest != nullptr) {
    const int status = ops_.WaitEvent(oldest->event);
    if (status == 0) {
      CopyDone(*oldest);
    } else {
      Fail(*oldest, status);
    }
    return;
  }
  // Every busy slot is in a file transfer, and the engine completes each
  // exactly once (with an error if it fails): one will come.
  {
    fgds::MutexLock lock(&mu_);
    sleeping_.store(true, std::memory_order_seq_cst);
    while (done_.load(std::memory_order_seq_cst) == nullptr) wake_.Wait(&mu_);
    sleeping_.store(false, std::memory_order_relaxed);
  }
  TakeCompleted();
}

void Worker::Start(Slot& slot, ChunkTask task) {
  slot.task = std::move(task);
  slot.chunk = slot.task.request->plan().chunk(slot.task.index);
  slot.got = 0;
  slot.source = 0;
  slot.by_source[0] = slot.by_source[1] = slot.by_source[2] = 0;
  slot.direct = nullptr;
  ++busy_;
  // After a failure the request's result is decided; the rest of its
  // chunks only need counting.
  if (slot.task.request->failed()) return Finish(slot, 0);
  if (slot.task.request->op() == Op::kRead) {
    StartRead(slot);
  } else {
    StartWrite(slot);
  }
}

void Worker::StartRead(Slot& slot) {
  Request& request = *slot.task.request;
  const Chunk& chunk = slot.chunk;
  const FileHandles& file = request.file();
  if (chunk.kind == ChunkKind::kUnaligned || file.direct_fd() < 0) {
    if (file.buffered_fd() < 0) return Fail(slot, -EINVAL);
    return ReadInline(slot, file.buffered_fd(), kSrcBuffered, chunk.length,
                      chunk.file_offset);
  }
  if (config_.use_page_cache && file.buffered_fd() >= 0 &&
      fgds::FullyCached(file.buffered_fd(), chunk.file_offset, chunk.length)) {
    // Every page is cached: a buffered read is a memory copy. A chunk only
    // partly cached goes O_DIRECT whole (coherent: the kernel writes back
    // dirty pages of the range first); reading its cached part buffered
    // and the rest O_DIRECT would split requests for little gain.
    return ReadInline(slot, file.buffered_fd(), kSrcPageCache, chunk.length,
                      chunk.file_offset);
  }
  // Cached pages bounce (above: a CPU copy into staging and a DMA to the
  // device beat CPU stores into GPU memory); the rest goes direct when the
  // buffer has a mapping for this file's device.
  if (uint8_t* target = DirectTarget(slot); target != nullptr) {
    if (int error = CheckBuffer(slot); error != 0) return Fail(slot, error);
    slot.direct = target;
  }
  SubmitIo(slot, /*write=*/false, file.direct_fd(), kSrcODirect, chunk.length,
           chunk.file_offset);
}

uint8_t* Worker::DirectTarget(const Slot& slot) const {
  const Request& request = *slot.task.request;
  if (request.direct_base() == nullptr ||
      slot.chunk.kind != ChunkKind::kAligned ||
      request.file().direct_fd() < 0) {
    return nullptr;
  }
  return request.direct_base() + slot.chunk.io_offset;
}

int Worker::CheckBuffer(const Slot& slot) {
  // The caller may have freed the buffer since submission. A device copy
  // into an address that now belongs to another allocation would corrupt
  // it (cuMemFree waits for copies already queued, so checking just before
  // queueing is what keeps a freed buffer from being written). A direct
  // chunk's mapping keeps the memory itself alive (the module holds the
  // dma-buf), but the caller no longer owns it: fail the I/O either way.
  const Request& request = *slot.task.request;
  uint64_t buffer_id = 0;
  if (ops_.BufferId(request.device_address() + slot.chunk.io_offset,
                    &buffer_id) != 0 ||
      buffer_id != request.buffer_id()) {
    return -EFAULT;
  }
  return 0;
}

void Worker::StartWrite(Slot& slot) {
  Request& request = *slot.task.request;
  if (int error = CheckBuffer(slot); error != 0) return Fail(slot, error);
  if (uint8_t* target = DirectTarget(slot); target != nullptr) {
    slot.direct = target;
    return SubmitIo(slot, /*write=*/true, request.file().direct_fd(),
                    kSrcODirect, slot.chunk.length, slot.chunk.file_offset);
  }
  const uint64_t src = request.device_address() + slot.chunk.io_offset;
  if (int error =
          ops_.CopyToHost(slot.staging, src, slot.chunk.length, stream_);
      error != 0) {
    return Fail(slot, CopyError(src, request.buffer_id(), error));
  }
  if (int error = ops_.RecordEvent(slot.event, stream_); error != 0) {
    ops_.SyncStream(stream_);  // the staging must be quiet before reuse
    return Fail(slot, error);
  }
  slot.state = State::kCopying;
  slot.copy_seq = next_copy_seq_++;
}

void Worker::CopyToDevice(Slot& slot) {
  if (slot.got == 0) return Finish(slot, 0);
  Request& request = *slot.task.request;
  const uint64_t dst = request.device_address() + slot.chunk.io_offset;
  if (int error = CheckBuffer(slot); error != 0) return Fail(slot, error);
  if (int error = ops_.CopyToDevice(dst, slot.staging, slot.got, stream_);
      error != 0) {
    return Fail(slot, CopyError(dst, request.buffer_id(), error));
  }
  if (int error = ops_.RecordEvent(slot.event, stream_); error != 0) {
    ops_.SyncStream(stream_);
    return Fail(slot, error);
  }
  slot.state = State::kCopying;
  slot.copy_seq = next_copy_seq_++;
}

int Worker::CopyError(uint64_t address, uint64_t buffer_id, int error) {
  // A buffer freed between the check and the copy makes the driver refuse
  // the address (-EINVAL); report it as what it is.
  uint64_t now = 0;
  if (ops_.BufferId(address, &now) != 0 || now != buffer_id) return -EFAULT;
  return error;
}

void Worker::CopyDone(Slot& slot) {
  Request& request = *slot.task.request;
  if (request.op() == Op::kRead)
    return Finish(slot, static_cast<int64_t>(slot.got));
  const Chunk& chunk = slot.chunk;
  const FileHandles& file = request.file();
  if (chunk.kind == ChunkKind::kAligned && file.direct_fd() >= 0) {
    return SubmitIo(slot, /*write=*/true, file.direct_fd(), kSrcODirect,
                    chunk.length, chunk.file_offset);
  }
  if (file.buffered_fd() < 0) return Fail(slot, -EINVAL);
  SubmitIo(slot, /*write=*/true, file.buffered_fd(), kSrcBuffered, chunk.length,
           chunk.file_offset);
}

void Worker::SubmitIo(Slot& slot, bool write, int fd, int source,
                      uint64_t length, uint64_t file_offset) {
  slot.state = write ? State::kWriting : State::kReading;
  slot.io_source = source;
  // The engine moves the whole length (continuing short transfers) and
  // completes the slot once, on one of its threads, or inline here where
  // io_uring is unavailable (then Complete pushes onto done_ from this
  // thread, which Poll takes next).
  io::IoRequest request{write ? io::IoOp::kWrite : io::IoOp::kRead,
                        fd,
                        slot.direct != nullptr ? slot.direct : slot.staging,
                        length,
                        file_offset,
                        &slot};
  engine_.Submit({&request, 1});
}

void Worker::ReadInline(Slot& slot, int fd, int source, uint64_t length,
                        uint64_t file_offset) {
  slot.state = State::kReading;
  slot.io_source = source;
  const io::IoRequest request{io::IoOp::kRead, fd,          slot.staging,
                              length,          file_offset, nullptr};
  OnCompletion(slot, static_cast<int>(io::RunBlocking(request)));
}

void Worker::OnCompletion(Slot& slot, int result) {
  if (result < 0) return Fail(slot, result);
  const uint64_t n = static_cast<uint64_t>(result);
  slot.source |= kSourceBits[slot.io_source];
  slot.by_source[slot.io_source] += n;
  if (slot.state == State::kReading) {
    slot.got = n;
    // A direct read landed in device memory already.
    if (slot.direct != nullptr) return Finish(slot, result);
    return CopyToDevice(slot);
  }
  Finish(slot, result);
}

void Worker::Finish(Slot& slot, int64_t result) {
  slot.task.request->ChunkDone(slot.chunk, result, slot.source, slot.by_source,
                               slot.direct != nullptr);
  slot.task.request.reset();
  slot.state = State::kFree;
  --busy_;
}

}  // namespace fgds::direct
