// File: usrbio/direct/worker.h
//
// A worker thread of the bounce engine. It owns a few staging slots of
// pinned host memory (one chunk each), a device stream and an event per
// slot, and moves chunks through them:
//
//   read:  file -> slot (a buffered read when every page is cached, else
//          O_DIRECT; buffered for unaligned chunks)
//          -> cuMemcpyHtoDAsync on the worker's stream -> event -> done
//   write: cuMemcpyDtoHAsync into the slot -> event -> O_DIRECT write
//          (buffered for unaligned chunks) -> done
//
// Every file transfer is a request to the driver's fgds::io engine
// (common/io/io_engine.h, the daemon's engine too), whose completion is the
// slot itself: the engine thread only hands the slot back (a lock-free
// push, and a wakeup if this worker sleeps), and this thread runs the
// slot's next stage. With several slots per worker and several workers,
// disk I/O of some chunks overlaps the device copies of others. Staging is
// allocated once at start and never grows, whatever the callers submit.
#ifndef FGDS_USRBIO_DIRECT_WORKER_H_
#define FGDS_USRBIO_DIRECT_WORKER_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/io/io_engine.h"
#include "common/mutex.h"
#include "usrbio/direct/device_ops.h"
#include "usrbio/direct/dispatcher.h"
#include "usrbio/direct/options.h"
#include "usrbio/direct/request.h"

namespace fgds::direct {

class Worker {
 public:
  // `engine` runs the file transfers; it must outlive the worker's thread
  // and be destroyed before the worker (its threads call back into it).
  Worker(const DriverConfig& config, DeviceOps& ops, Dispatcher& dispatcher,
         io::IoEngine& engine);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Start allocates the worker's resources on its own thread (CUDA streams
  // and events belong to the context bound there) and starts serving the
  // dispatcher. Returns 0 or -errno with `message`.
  int Start(std::string* message);

  // Join waits for the thread to leave (after Dispatcher::Shutdown) and
  // frees the resources. Safe to call when Start failed.
  void Join();

 private:
  enum class State { kFree, kReading, kCopying, kWriting };

  // A slot is the completion of its file transfer: Complete runs on an
  // engine thread and hands the slot back to the worker (Completed).
  struct Slot : io::IoCompletion {
    void Complete(int64_t result) override;

    Worker* worker = nullptr;
    State state = State::kFree;
    ChunkTask task;
    Chunk chunk;
    uint8_t* staging = nullptr;
    uintptr_t event = 0;
    uint64_t got = 0;  // bytes in staging (read) or written (write)
    uint32_t source = 0;
    uint64_t by_source[3] = {};
    // The chunk's bytes in an fgds mapping of device memory when it moves
    // directly (no staging, no device copy), else null.
    uint8_t* direct = nullptr;
    // Order in which copies were queued on the stream (they finish in it).
    uint64_t copy_seq = 0;
    // The file transfer in flight: where its bytes count (kSrc*), and its
    // result once the engine completed it.
    int io_source = 0;
    int64_t io_result = 0;
    Slot* next_done = nullptr;  // in done_
  };

  int Setup(std::string* message);
  void Teardown();
  void Run();

  // StartOne starts a chunk in the lowest free slot: 1 started, 0 no free
  // slot or no work, -1 exit (blocks in Dispatcher::Take when nothing is in
  // flight).
  int StartOne();
  Slot* OldestCopying();
  // Poll makes every step that is ready without blocking; returns how many.
  int Poll();
  // Block waits for the oldest device copy, else for a file transfer to
  // complete. REQUIRES: a slot is busy (so one of them will).
  void Block();
  // Completed hands a slot whose transfer finished back to this worker
  // (engine threads).
  void Completed(Slot* slot);
  // TakeCompleted runs the next stage of every slot handed back; how many.
  int TakeCompleted();

  void Start(Slot& slot, ChunkTask task);
  void StartRead(Slot& slot);
  void StartWrite(Slot& slot);
  void CopyToDevice(Slot& slot);
  void CopyDone(Slot& slot);
  // CopyError: the errno for a refused copy at `address`.
  int CopyError(uint64_t address, uint64_t buffer_id, int error);
  void OnCompletion(Slot& slot, int result);
  // DirectTarget: where an aligned chunk moves without staging (the
  // request's fgds mapping), or null to bounce it.
  uint8_t* DirectTarget(const Slot& slot) const;
  // CheckBuffer: -EFAULT when the slot's chunk of device memory no longer
  // belongs to the allocation its request was submitted on (freed under
  // I/O); called before every device copy and direct transfer.
  int CheckBuffer(const Slot& slot);
  // SubmitIo hands a read or write of the slot's chunk to the engine, into
  // or out of slot.direct when set, else the slot's staging; its bytes
  // count as `source` (kSrc*).
  void SubmitIo(Slot& slot, bool write, int fd, int source, uint64_t length,
                uint64_t file_offset);
  // ReadInline reads the slot's chunk into its staging in this thread, with
  // the engine's blocking transfer (io::RunBlocking), for reads that are
  // memory copies out of the page cache: an engine thread doing the copy
  // and handing the slot back cost a third of page-cached throughput
  // (tests/device/ab_bench.sh on the H200: 47 -> 24-36 GB/s), and the
  // staging stays in this thread's CPU cache for the device copy.
  void ReadInline(Slot& slot, int fd, int source, uint64_t length,
                  uint64_t file_offset);
  void Finish(Slot& slot, int64_t result);
  void Fail(Slot& slot, int error) { Finish(slot, error); }

  const DriverConfig& config_;
  DeviceOps& ops_;
  Dispatcher& dispatcher_;
  io::IoEngine& engine_;
  std::thread thread_;

  // Slots whose transfer completed, pushed by engine threads (a lock-free
  // stack, newest first), taken by this thread.
  std::atomic<Slot*> done_{nullptr};
  // This thread waits on wake_ for done_ to fill. The lock is taken only
  // around that sleep: a completion takes it only when sleeping_ is set.
  std::atomic<bool> sleeping_{false};
  fgds::Mutex mu_;
  fgds::CondVar wake_;

  // Owned by the worker thread once started.
  std::vector<Slot> slots_;
  uint8_t* staging_ = nullptr;
  size_t staging_bytes_ = 0;
  uintptr_t stream_ = 0;
  int busy_ = 0;
  uint64_t next_copy_seq_ = 0;
};

}  // namespace fgds::direct

#endif  // FGDS_USRBIO_DIRECT_WORKER_H_
