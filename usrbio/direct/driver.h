// File: usrbio/direct/driver.h
//
// Driver: the C++ object behind fgds_driver (include/fgds/fgds.h). It owns
// the device operations, the workers, the dispatcher between callers and
// workers, the I/O engine the workers' file transfers go through (the
// daemon's implementation, common/io; this process's own instance), and the
// buffer and file registrations.
//
// Thread safety: every method may be called from many threads at once,
// except Close, which REQUIRES that no other call is in progress.
#ifndef FGDS_USRBIO_DIRECT_DRIVER_H_
#define FGDS_USRBIO_DIRECT_DRIVER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/io/io_engine.h"
#include "common/kmod/kmod_buffer.h"
#include "fgds/fgds.h"
#include "usrbio/direct/buffer_registry.h"
#include "usrbio/direct/device_ops.h"
#include "usrbio/direct/dispatcher.h"
#include "usrbio/direct/file_handles.h"
#include "usrbio/direct/options.h"
#include "usrbio/direct/path.h"
#include "usrbio/direct/request.h"
#include "usrbio/direct/worker.h"

namespace fgds::direct {

class Driver {
 public:
  // Open starts a driver on `ops` with `config` (ResolveDriverParams).
  // Returns 0, or -errno with `message` (staging memory, streams).
  // `uring_os`: the engine's system calls (io::IoEngineOptions::uring_os;
  // tests inject faults), null for the real ones; must outlive the driver.
  static int Open(const DriverConfig& config, std::unique_ptr<DeviceOps> ops,
                  std::unique_ptr<Driver>* out, std::string* message,
                  io::UringOs* uring_os = nullptr);
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  // Close stops the workers. -EBUSY, and nothing changes, while submitted
  // asynchronous I/O has not been waited for.
  int Close();

  int RegisterBuffer(uint64_t address, uint64_t size, uint32_t flags,
                     std::string* message);
  int DeregisterBuffer(uint64_t address);
  int RegisterFile(int fd, std::string* message);
  int DeregisterFile(int fd);

  // Submit checks one I/O and queues it. On 0, *request completes by
  // itself; a check that fails returns -errno (nothing was queued).
  // `devptr + buf_offset` is the device address of the first byte.
  int Submit(Op op, int fd, uint64_t devptr, uint64_t size, int64_t file_offset,
             int64_t buf_offset, std::shared_ptr<Request>* request,
             std::string* message);

  // Transfer is Submit and wait: returns bytes or -errno and fills
  // `outcome` (may be null).
  int64_t Transfer(Op op, int fd, uint64_t devptr, uint64_t size,
                   int64_t file_offset, int64_t buf_offset,
                   RequestOutcome* outcome, std::string* message);

  void Query(fgds_driver_info* info) const;
  void Stats(fgds_driver_stats* stats) const;

  // Asynchronous I/O submitted through the C API and not yet waited for.
  std::atomic<int64_t>& async_outstanding() { return async_outstanding_; }

 private:
  Driver(const DriverConfig& config, std::unique_ptr<DeviceOps> ops);
  void Stop();
  void Account(const RequestOutcome& outcome, Op op);
  // DirectFor fills spec->direct when the I/O can move without staging:
  // direct path, a registered buffer, an O_DIRECT file whose device the
  // module accepts, and a 4 KiB-aligned place in the mapping.
  void DirectFor(RequestSpec* spec);

  const DriverConfig config_;
  const std::unique_ptr<DeviceOps> ops_;
  DeviceDescription device_;
  PathChoice path_;
  // The GPU's fgds node when path_ is DIRECT: registered buffers are
  // mapped through it, per storage device, on their first direct I/O.
  std::shared_ptr<kmod::KmodNode> node_;
  Dispatcher dispatcher_;
  // The workers' file transfers. Destroyed after the workers stopped and
  // before they are freed: its threads call back into them.
  std::unique_ptr<io::IoEngine> engine_;
  BufferRegistry registry_;
  FileTable files_;
  std::vector<std::unique_ptr<Worker>> workers_;
  bool stopped_ = false;

  std::atomic<int64_t> async_outstanding_{0};
  struct Counters {
    std::atomic<uint64_t> ios{0};
    std::atomic<uint64_t> errors{0};
    std::atomic<uint64_t> bytes_read{0};
    std::atomic<uint64_t> bytes_written{0};
    std::atomic<uint64_t> bytes_bounce{0};
    std::atomic<uint64_t> bytes_direct{0};
    std::atomic<uint64_t> by_source[3] = {};
  } counters_;
};

}  // namespace fgds::direct

#endif  // FGDS_USRBIO_DIRECT_DRIVER_H_
