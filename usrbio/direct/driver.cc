#include "usrbio/direct/driver.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

namespace fgds::direct {
namespace {

constexpr uint64_t kMaxIoBytes =
    static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

// The engine for a driver's workers: as many io_uring workers as driver
// workers, so that page-cache copies (done inside io_uring_enter) spread
// over as many cores as before; room for every staging slot in flight; no
// split (a chunk is one request, one piece: nothing allocated per chunk,
// and the slots already spread chunks over the engine's workers).
io::IoEngineOptions EngineOptions(const DriverConfig& config,
                                  io::UringOs* uring_os) {
  io::IoEngineOptions options;
  options.workers = std::max(config.workers, 1);
  options.queue_depth = static_cast<unsigned>(
      std::min(config.workers * config.slots_per_worker + 1, 4096));
  options.merge_bytes = config.chunk_bytes;
  options.split_bytes = config.chunk_bytes;
  options.uring_os = uring_os;
  return options;
}

// OnDevice: 0 when the allocation lives on the driver's device, else
// -EXDEV. A driver's streams, staging and direct-path node are its
// device's: a buffer on another GPU would be copied through this GPU's
// stream across the interconnect, with staging on the wrong NUMA node and
// its bytes counted here. One driver per GPU serves a process that drives
// several (docs/gpu.md, "Several GPUs").
int OnDevice(const AllocationInfo& info, const DeviceDescription& device,
             std::string* message) {
  if (info.device_ordinal < 0 || device.ordinal < 0 ||
      info.device_ordinal == device.ordinal) {
    return 0;
  }
  *message = "the buffer lives on GPU " + std::to_string(info.device_ordinal) +
             ", this driver serves GPU " + std::to_string(device.ordinal) +
             " (" + device.pci_bus_id +
             "): open a driver for the buffer's GPU (fgds_driver_params: "
             "FGDS_DRIVER_PRIMARY_CTX, device " +
             std::to_string(info.device_ordinal) + ")";
  return -EXDEV;
}

void CopyString(const std::string& from, char* to, size_t size) {
  const size_t n = std::min(from.size(), size - 1);
  std::memcpy(to, from.data(), n);
  to[n] = '\0';
}

}  // namespace

Driver::Driver(const DriverConfig& config, std::unique_ptr<DeviceOps> ops)
    : config_(config), ops_(std::move(ops)) {}

int Driver::Open(const DriverConfig& config, std::unique_ptr<DeviceOps> ops,
                 std::unique_ptr<Driver>* out, std::string* message,
                 io::UringOs* uring_os) {
  std::unique_ptr<Driver> driver(new Driver(config, std::move(ops)));
  driver->device_ = driver->ops_->Describe();
  const DirectProbe probe =
      ProbeDirect(driver->device_.dmabuf_supported, driver->device_.pci_bus_id);
  driver->path_ = ChoosePath(probe);
  if (driver->path_.path == FGDS_GPU_PATH_DIRECT) {
    std::string why;
    if (kmod::KmodNode::Open(probe.device_node, &driver->node_, &why) != 0) {
      driver->path_.path = FGDS_GPU_PATH_BOUNCE;
      driver->path_.why_not_direct = why;
    }
  }
  driver->engine_ = io::CreateIoEngine(EngineOptions(config, uring_os));
  for (int i = 0; i < config.workers; ++i) {
    driver->workers_.push_back(std::make_unique<Worker>(
        driver->config_, *driver->ops_, driver->dispatcher_, *driver->engine_));
    if (int error = driver->workers_.back()->Start(message); error != 0) {
      return error;  // ~Driver stops the workers started so far
    }
  }
  *out = std::move(driver);
  return 0;
}

Driver::~Driver() { Stop(); }

void Driver::Stop() {
  if (stopped_) return;
  stopped_ = true;
  dispatcher_.Shutdown();
  for (auto& worker : workers_) worker->Join();
  // Every transfer completed before its worker left (a busy slot keeps it),
  // but an engine thread may still be returning from a completion into a
  // worker: stop the engine first.
  engine_.reset();
  workers_.clear();
  files_.Clear();
}

int Driver::Close() {
  if (async_outstanding_.load() > 0) return -EBUSY;
  Stop();
  return 0;
}

int Driver::RegisterBuffer(uint64_t address, uint64_t size, uint32_t flags,
                           std::string* message) {
  if (flags != 0) {
    *message = "fgds_buf_register: flags must be 0";
    return -EINVAL;
  }
  if (size == 0 || address + size < address) {
    *message =
        "fgds_buf_register: size must be nonzero and the range must "
        "not wrap";
    return -EINVAL;
  }
  AllocationInfo info;
  if (int error = ops_->Resolve(address, &info, message); error != 0) {
    if (error == -EXDEV) OnDevice(info, device_, message);
    return error;
  }
  if (int error = OnDevice(info, device_, message); error != 0) return error;
  if (size > info.base + info.size - address) {
    *message = "fgds_buf_register: the range runs " +
               std::to_string(size - (info.base + info.size - address)) +
               " bytes past the end of its device allocation";
    return -EFAULT;
  }
  const int error = registry_.Add(address, size, info.buffer_id);
  if (error == -EEXIST) {
    *message = "fgds_buf_register: the range overlaps a registered buffer";
  }
  return error;
}

int Driver::DeregisterBuffer(uint64_t address) {
  return registry_.Remove(address);
}

int Driver::RegisterFile(int fd, std::string* message) {
  return files_.Register(fd, message);
}

int Driver::DeregisterFile(int fd) { return files_.Deregister(fd); }

int Driver::Submit(Op op, int fd, uint64_t devptr, uint64_t size,
                   int64_t file_offset, int64_t buf_offset,
                   std::shared_ptr<Request>* request, std::string* message) {
  const bool write = op == Op::kWrite;
  if (file_offset < 0 || buf_offset < 0 || size > kMaxIoBytes ||
      size > kMaxIoBytes - static_cast<uint64_t>(file_offset)) {
    *message =
        "negative offset, or offset + size past the largest file "
        "offset";
    return -EINVAL;
  }
  if (devptr == 0) {
    *message = "device pointer is null";
    return -EFAULT;
  }
  const uint64_t address = devptr + static_cast<uint64_t>(buf_offset);
  if (address < devptr || address + size < address) {
    *message = "device pointer + buf_offset + size wraps around";
    return -EINVAL;
  }
  RequestSpec spec;
  spec.op = op;
  spec.device_address = address;
  spec.file_offset = static_cast<uint64_t>(file_offset);
  spec.size = size;
  if (int error = files_.Get(fd, write, &spec.file, message); error != 0) {
    return error;
  }
  if (size != 0) {
    if (registry_.Acquire(address, size, &spec.pin) != 0) {
      *message =
          "the I/O runs past the end of the registered buffer it "
          "starts in";
      return -EINVAL;
    }
    if (spec.pin.get() != nullptr) {
      spec.buffer_id = spec.pin.get()->buffer_id();
    } else {
      AllocationInfo info;
      if (int error = ops_->Resolve(address, &info, message); error != 0) {
        if (error == -EXDEV) OnDevice(info, device_, message);
        return error;
      }
      if (int error = OnDevice(info, device_, message); error != 0) {
        return error;
      }
      if (size > info.base + info.size - address) {
        *message = "the I/O runs past the end of its device allocation";
        return -EFAULT;
      }
      spec.buffer_id = info.buffer_id;
    }
  }
  if (node_ != nullptr && size != 0) DirectFor(&spec);
  const bool direct = spec.file->direct_fd() >= 0;
  // O_DIRECT needs its own chunks, aligned, between a buffered head and
  // tail; without it the edges ride in their neighbours (fewer chunks).
  const ChunkPlan plan(
      spec.file_offset, size, kFileAlignment, config_.chunk_bytes,
      direct ? ChunkPlan::Edges::kSeparate : ChunkPlan::Edges::kMerged);
  auto made = std::make_shared<Request>(
      std::move(spec), plan, [this](const RequestOutcome& outcome, Op done_op) {
        Account(outcome, done_op);
      });
  if (plan.chunk_count() == 0) {
    made->CompleteEmpty();
  } else {
    dispatcher_.Push(made);
  }
  *request = std::move(made);
  return 0;
}

int64_t Driver::Transfer(Op op, int fd, uint64_t devptr, uint64_t size,
                         int64_t file_offset, int64_t buf_offset,
                         RequestOutcome* outcome, std::string* message) {
  std::shared_ptr<Request> request;
  if (int error = Submit(op, fd, devptr, size, file_offset, buf_offset,
                         &request, message);
      error != 0) {
    return error;
  }
  request->Wait(-1);
  if (outcome != nullptr) *outcome = request->outcome();
  if (request->outcome().result < 0) {
    *message = std::string(op == Op::kRead ? "read" : "write") + " failed: " +
               std::strerror(static_cast<int>(-request->outcome().result));
  }
  return request->outcome().result;
}

void Driver::DirectFor(RequestSpec* spec) {
  const Registration* registration = spec->pin.get();
  if (registration == nullptr || spec->file->direct_fd() < 0) return;
  DirectTarget target;
  std::string why;  // the device's refusal is remembered by the buffer
  if (registration->direct().For(*ops_, node_, spec->file->storage_device(),
                                 spec->file->direct_fd(), &target, &why) != 0) {
    return;
  }
  const uint64_t into = spec->device_address - registration->base();
  if (into > target.size || spec->size > target.size - into) return;
  target.base += into;
  // O_DIRECT needs memory aligned like the file offsets. Aligned chunks
  // start on aligned file offsets, so their memory is aligned exactly when
  // memory and file agree modulo the alignment.
  if ((reinterpret_cast<uintptr_t>(target.base) - spec->file_offset) %
          kFileAlignment !=
      0) {
    return;
  }
  spec->direct = std::move(target);
}

void Driver::Account(const RequestOutcome& outcome, Op op) {
  counters_.ios.fetch_add(1, std::memory_order_relaxed);
  if (outcome.result < 0) {
    counters_.errors.fetch_add(1, std::memory_order_relaxed);
  } else {
    (op == Op::kRead ? counters_.bytes_read : counters_.bytes_written)
        .fetch_add(static_cast<uint64_t>(outcome.result),
                   std::memory_order_relaxed);
  }
  uint64_t moved = 0;
  for (int i = 0; i < 3; ++i) {
    counters_.by_source[i].fetch_add(outcome.bytes_by_source[i],
                                     std::memory_order_relaxed);
    moved += outcome.bytes_by_source[i];
  }
  counters_.bytes_direct.fetch_add(outcome.bytes_direct,
                                   std::memory_order_relaxed);
  counters_.bytes_bounce.fetch_add(moved - outcome.bytes_direct,
                                   std::memory_order_relaxed);
}

void Driver::Query(fgds_driver_info* info) const {
  std::memset(info, 0, sizeof(*info));
  info->device = device_.ordinal;
  info->dmabuf_supported = device_.dmabuf_supported ? 1 : 0;
  CopyString(device_.pci_bus_id, info->pci_bus_id, sizeof(info->pci_bus_id));
  info->path = path_.path;
  info->workers = static_cast<uint32_t>(config_.workers);
  info->chunk_bytes = config_.chunk_bytes;
  info->staging_bytes = config_.staging_bytes;
  CopyString(path_.why_not_direct, info->direct_unavailable,
             sizeof(info->direct_unavailable));
}

void Driver::Stats(fgds_driver_stats* stats) const {
  std::memset(stats, 0, sizeof(*stats));
  stats->ios = counters_.ios.load();
  stats->errors = counters_.errors.load();
  stats->bytes_read = counters_.bytes_read.load();
  stats->bytes_written = counters_.bytes_written.load();
  stats->bytes_bounce = counters_.bytes_bounce.load();
  stats->bytes_direct = counters_.bytes_direct.load();
  stats->bytes_page_cache = counters_.by_source[0].load();
  stats->bytes_o_direct = counters_.by_source[1].load();
  stats->bytes_buffered = counters_.by_source[2].load();
}

}  // namespace fgds::direct
