// The extern "C" edge of the direct API (include/fgds/fgds.h): argument
// checks, errno preservation, the thread's last error message, and no
// exception ever crossing into C (STYLE.md 8).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <utility>

#include "fgds/fgds.h"
#include "usrbio/direct/c_api_internal.h"
#include "usrbio/direct/cuda_device_ops.h"
#include "usrbio/direct/driver.h"
#include "usrbio/direct/options.h"

struct fgds_driver {
  std::unique_ptr<fgds::direct::Driver> impl;
};

namespace fgds::direct {
namespace {

thread_local std::string last_error;

// Every entry point runs its body through Guard: errno is restored (the
// C API never changes it), exceptions become -ENOMEM/-EIO, and a failure
// leaves its message for fgds_last_error.
template <typename Body>
auto Guard(Body body) noexcept -> decltype(body(std::declval<std::string*>())) {
  const int saved_errno = errno;
  std::string message;
  decltype(body(&message)) result;
  try {
    result = body(&message);
  } catch (const std::bad_alloc&) {
    message = "out of memory";
    result = -ENOMEM;
  } catch (...) {
    message = "internal error";
    result = -EIO;
  }
  if (result < 0) {
    last_error = message.empty() ? std::strerror(static_cast<int>(-result))
                                 : std::move(message);
  }
  errno = saved_errno;
  return result;
}

// What an fgds_io points at while it is the library's.
struct InFlight {
  std::shared_ptr<Request> request;  // null when it failed at submission
  RequestOutcome failed;
};

void Fill(fgds_io* io, const RequestOutcome& outcome) {
  io->result = outcome.result;
  io->path = outcome.path;
  io->source = outcome.source;
}

// StartIo submits one validated fgds_io; a per-I/O failure (bad fd,
// address) becomes its result rather than failing the call, as a CQE.
void StartIo(Driver& driver, fgds_io* io) {
  auto* flight = new InFlight();
  std::string message;
  const int error = driver.Submit(
      io->opcode == FGDS_OP_READ ? Op::kRead : Op::kWrite, io->fd,
      reinterpret_cast<uint64_t>(io->devptr), io->size, io->file_offset,
      io->buf_offset, &flight->request, &message);
  if (error != 0) {
    flight->request.reset();
    flight->failed.result = error;
    flight->failed.path = FGDS_GPU_PATH_NONE;
  }
  io->internal = flight;
}

// FinishIo waits for `io`; returns 0 when complete (and hands it back).
int FinishIo(fgds_io* io, int64_t timeout_us) {
  auto* flight = static_cast<InFlight*>(io->internal);
  if (flight->request != nullptr) {
    if (!flight->request->Wait(timeout_us)) return -ETIME;
    Fill(io, flight->request->outcome());
  } else {
    Fill(io, flight->failed);
  }
  delete flight;
  io->internal = nullptr;
  return 0;
}

int CheckIos(const fgds_driver* driver, const fgds_io* ios, unsigned nr,
             std::string* message) {
  if (driver == nullptr || (ios == nullptr && nr != 0) ||
      nr > static_cast<unsigned>(std::numeric_limits<int>::max())) {
    *message = "null driver or ios, or too many ios";
    return -EINVAL;
  }
  for (unsigned i = 0; i < nr; ++i) {
    if (int error = ValidateIoShape(ios[i], message); error != 0) {
      *message = "ios[" + std::to_string(i) + "]: " + *message;
      return error;
    }
  }
  return 0;
}

}  // namespace

fgds_driver* WrapDriverForTesting(std::unique_ptr<Driver> driver) {
  auto* handle = new fgds_driver();
  handle->impl = std::move(driver);
  return handle;
}

}  // namespace fgds::direct

using fgds::direct::Guard;

extern "C" {

const char* fgds_last_error(void) noexcept {
  return fgds::direct::last_error.c_str();
}

int fgds_driver_open(fgds_driver** driver,
                     const struct fgds_driver_params* params) noexcept {
  return Guard([&](std::string* message) -> int {
    if (driver == nullptr) {
      *message = "driver is null";
      return -EINVAL;
    }
    *driver = nullptr;
    fgds::direct::DriverConfig config;
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (int error = fgds::direct::ResolveDriverParams(
            params, cpus > 0 ? static_cast<int>(cpus) : 1, &config, message);
        error != 0) {
      return error;
    }
    std::unique_ptr<fgds::direct::DeviceOps> ops;
    if (int error = fgds::direct::MakeCudaDeviceOps(
            config.primary_context, config.device, &ops, message);
        error != 0) {
      return error;
    }
    auto handle = std::make_unique<fgds_driver>();
    if (int error = fgds::direct::Driver::Open(config, std::move(ops),
                                               &handle->impl, message);
        error != 0) {
      return error;
    }
    *driver = handle.release();
    return 0;
  });
}

int fgds_driver_close(fgds_driver* driver) noexcept {
  return Guard([&](std::string* message) -> int {
    if (driver == nullptr) {
      *message = "driver is null";
      return -EINVAL;
    }
    if (int error = driver->impl->Close(); error != 0) {
      *message = "asynchronous I/O is still in flight (fgds_io_wait it)";
      return error;
    }
    delete driver;
    return 0;
  });
}

int fgds_driver_query(fgds_driver* driver,
                      struct fgds_driver_info* info) noexcept {
  return Guard([&](std::string* message) -> int {
    if (driver == nullptr || info == nullptr) {
      *message = "null driver or info";
      return -EINVAL;
    }
    driver->impl->Query(info);
    return 0;
  });
}

int fgds_driver_get_stats(fgds_driver* driver,
                          struct fgds_driver_stats* stats) noexcept {
  return Guard([&](std::string* message) -> int {
    if (driver == nullptr || stats == nullptr) {
      *message = "null driver or stats";
      return -EINVAL;
    }
    driver->impl->Stats(stats);
    return 0;
  });
}

int fgds_buf_register(fgds_driver* driver, void* devptr, size_t size,
                      uint32_t flags) noexcept {
  return Guard([&](std::string* message) -> int {
    if (driver == nullptr) {
      *message = "driver is null";
      return -EINVAL;
    }
    return driver->impl->RegisterBuffer(reinterpret_cast<uint64_t>(devptr),
                                        size, flags, message);
  });
}

int fgds_buf_deregister(fgds_driver* driver, void* devptr) noexcept {
  return Guard([&](std::string* message) -> int {
    if (driver == nullptr) {
      *message = "driver is null";
      return -EINVAL;
    }
    const int error =
        driver->impl->DeregisterBuffer(reinterpret_cast<uint64_t>(devptr));
    if (error == -ENOENT) *message = "no buffer is registered at that address";
    return error;
  });
}

int fgds_file_register(fgds_driver* driver, int fd) noexcept {
  return Guard([&](std::string* message) -> int {
    if (driver == nullptr) {
      *message = "driver is null";
      return -EINVAL;
    }
    return driver->impl->RegisterFile(fd, message);
  });
}

int fgds_file_deregister(fgds_driver* driver, int fd) noexcept {
  return Guard([&](std::string* message) -> int {
    if (driver == nullptr) {
      *message = "driver is null";
      return -EINVAL;
    }
    const int error = driver->impl->DeregisterFile(fd);
    if (error == -ENOENT) *message = "fd is not registered";
    return error;
  });
}

ssize_t fgds_pread(fgds_driver* driver, int fd, void* devptr, size_t size,
                   off_t file_offset, off_t buf_offset) noexcept {
  return Guard([&](std::string* message) -> ssize_t {
    if (driver == nullptr) {
      *message = "driver is null";
      return -EINVAL;
    }
    return driver->impl->Transfer(fgds::direct::Op::kRead, fd,
                                  reinterpret_cast<uint64_t>(devptr), size,
                                  file_offset, buf_offset, nullptr, message);
  });
}

ssize_t fgds_pwrite(fgds_driver* driver, int fd, const void* devptr,
                    size_t size, off_t file_offset, off_t buf_offset) noexcept {
  return Guard([&](std::string* message) -> ssize_t {
    if (driver == nullptr) {
      *message = "driver is null";
      return -EINVAL;
    }
    return driver->impl->Transfer(fgds::direct::Op::kWrite, fd,
                                  reinterpret_cast<uint64_t>(devptr), size,
                                  file_offset, buf_offset, nullptr, message);
  });
}

int fgds_io_batch(fgds_driver* driver, struct fgds_io* ios,
                  unsigned nr) noexcept {
  return Guard([&](std::string* message) -> int {
    if (int error = fgds::direct::CheckIos(driver, ios, nr, message);
        error != 0) {
      return error;
    }
    for (unsigned i = 0; i < nr; ++i) {
      fgds::direct::StartIo(*driver->impl, &ios[i]);
    }
    for (unsigned i = 0; i < nr; ++i) fgds::direct::FinishIo(&ios[i], -1);
    return 0;
  });
}

int fgds_io_submit(fgds_driver* driver, struct fgds_io* ios,
                   unsigned nr) noexcept {
  return Guard([&](std::string* message) -> int {
    if (int error = fgds::direct::CheckIos(driver, ios, nr, message);
        error != 0) {
      return error;
    }
    driver->impl->async_outstanding().fetch_add(nr);
    for (unsigned i = 0; i < nr; ++i) {
      fgds::direct::StartIo(*driver->impl, &ios[i]);
    }
    return static_cast<int>(nr);
  });
}

int fgds_io_wait(fgds_driver* driver, struct fgds_io* io,
                 int64_t timeout_us) noexcept {
  return Guard([&](std::string* message) -> int {
    if (driver == nullptr || io == nullptr || io->internal == nullptr) {
      *message = "the io is not in flight";
      return -EINVAL;
    }
    const int error = fgds::direct::FinishIo(io, timeout_us);
    if (error == 0) {
      driver->impl->async_outstanding().fetch_sub(1);
    } else {
      *message = "not complete yet";
    }
    return error;
  });
}

}  // extern "C"
