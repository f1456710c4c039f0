#include "tests/lib/fsx_io.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

namespace fgds::testing::fsx {

int64_t PreadFull(int fd, uint8_t* buf, uint64_t len, uint64_t offset) {
  uint64_t done = 0;
  while (done < len) {
    ssize_t n = pread(fd, buf + done, len - done, offset + done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -errno;
    if (n == 0) break;
    done += n;
  }
  return static_cast<int64_t>(done);
}

int PwriteFull(int fd, const uint8_t* buf, uint64_t len, uint64_t offset) {
  uint64_t done = 0;
  while (done < len) {
    ssize_t n = pwrite(fd, buf + done, len - done, offset + done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -errno;
    if (n == 0) return -EIO;
    done += n;
  }
  return 0;
}

ScopedFd::~ScopedFd() {
  if (fd_ >= 0) close(fd_);
}

ScopedMap::ScopedMap(int fd, uint64_t offset, uint64_t len, int prot,
                     uint64_t page)
    : delta_(offset % page), len_(delta_ + len) {
  base_ = mmap(nullptr, len_, prot, MAP_SHARED, fd, offset - delta_);
  if (base_ == MAP_FAILED) errno_ = errno;
}

ScopedMap::~ScopedMap() {
  if (base_ != MAP_FAILED) munmap(base_, len_);
}

int ScopedMap::Sync() const {
  return msync(base_, len_, MS_SYNC) == 0 ? 0 : errno;
}

}  // namespace fgds::testing::fsx
