#include "common/io/uring_os.h"

#include <sys/eventfd.h>

#include <cerrno>

namespace fgds::io {
namespace {

class RealUringOs : public UringOs {
 public:
  int QueueInit(unsigned entries, io_uring* ring,
                io_uring_params* params) override {
    return io_uring_queue_init_params(entries, ring, params);
  }
  void QueueExit(io_uring* ring) override { io_uring_queue_exit(ring); }
  int Submit(io_uring* ring) override { return io_uring_submit(ring); }
  int WaitCqe(io_uring* ring, io_uring_cqe** cqe) override {
    return io_uring_wait_cqe(ring, cqe);
  }
  int EventFd(unsigned initval, int flags) override {
    const int fd = eventfd(initval, flags);
    return fd >= 0 ? fd : -errno;
  }
};

}  // namespace

UringOs* UringOs::Default() {
  // Never destroyed: workers of engines in static objects may still use it
  // while the process exits.
  static UringOs* const os = new RealUringOs();
  return os;
}

}  // namespace fgds::io
