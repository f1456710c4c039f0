// File: tests/lib/fsx_io.h
//
// Syscall helpers for the fsx exerciser (tests/lib/fsx.h): pread/pwrite
// loops that still let a short count at EOF show, and owners for a file
// descriptor and a shared mapping. Results are bytes or -errno, as on the
// data paths elsewhere in FGDS.
//
// Thread safety: none needed; each object belongs to one thread.
#ifndef FGDS_TESTS_LIB_FSX_IO_H_
#define FGDS_TESTS_LIB_FSX_IO_H_

#include <cstdint>

namespace fgds::testing::fsx {

// PreadFull reads until `len` bytes or EOF; returns the count (short only
// at EOF, which is what the caller checks) or -errno.
int64_t PreadFull(int fd, uint8_t* buf, uint64_t len, uint64_t offset);
// PwriteFull writes all `len` bytes; returns 0 or -errno (-EIO if a write
// makes no progress).
int PwriteFull(int fd, const uint8_t* buf, uint64_t len, uint64_t offset);

// ScopedFd closes its descriptor (if >= 0) at scope exit.
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd();
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// ScopedMap maps [offset, offset + len) of `fd` MAP_SHARED with `prot`,
// from the page holding `offset` (mmap offsets must be page aligned), and
// unmaps at scope exit.
class ScopedMap {
 public:
  ScopedMap(int fd, uint64_t offset, uint64_t len, int prot, uint64_t page);
  ~ScopedMap();
  ScopedMap(const ScopedMap&) = delete;
  ScopedMap& operator=(const ScopedMap&) = delete;

  // 0 if mapped, else mmap's errno.
  int error() const { return errno_; }
  // The byte at `offset`. REQUIRES: error() == 0.
  uint8_t* data() const { return static_cast<uint8_t*>(base_) + delta_; }
  // msync(MS_SYNC) of the whole mapping; 0 or errno.
  int Sync() const;

 private:
  uint64_t delta_;  // offset % page
  uint64_t len_;    // of the mapping, from its page-aligned start
  void* base_;
  int errno_ = 0;
};

}  // namespace fgds::testing::fsx

#endif  // FGDS_TESTS_LIB_FSX_IO_H_
