#include "common/page_cache.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <memory>

namespace fgds {
namespace {

constexpr uint64_t kPage = 4096;

#ifndef __NR_cachestat
#define __NR_cachestat 451  // the same number on every architecture
#endif

// The cachestat(2) ABI (include/uapi/linux/mman.h), declared here because
// Debian 12's headers predate it.
struct CachestatRange {
  uint64_t off;
  uint64_t len;
};
struct Cachestat {
  uint64_t nr_cache;
  uint64_t nr_dirty;
  uint64_t nr_writeback;
  uint64_t nr_evicted;
  uint64_t nr_recently_evicted;
};

std::atomic<bool> have_cachestat{true};

// Pages of [offset, offset + length) that exist, i.e. before end of file.
uint64_t PagesBeforeEof(int fd, uint64_t offset, uint64_t length) {
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) <= offset) {
    return 0;
  }
  const uint64_t end =
      std::min(offset + length, static_cast<uint64_t>(st.st_size));
  return (end - offset + kPage - 1) / kPage;
}

bool MincoreCached(int fd, uint64_t offset, uint64_t length) {
  const uint64_t pages = PagesBeforeEof(fd, offset, length);
  if (pages == 0) return false;
  void* map = mmap(nullptr, pages * kPage, PROT_READ, MAP_SHARED, fd,
                   static_cast<off_t>(offset));
  if (map == MAP_FAILED) return false;
  std::unique_ptr<unsigned char[]> vec(new unsigned char[pages]);
  bool all = mincore(map, pages * kPage, vec.get()) == 0;
  for (uint64_t i = 0; all && i < pages; ++i) all = (vec[i] & 1) != 0;
  munmap(map, pages * kPage);
  return all;
}

}  // namespace

bool FullyCached(int fd, uint64_t offset, uint64_t length) {
  if (length == 0) return false;
  if (have_cachestat.load(std::memory_order_relaxed)) {
    CachestatRange range{offset, length};
    Cachestat stat{};
    if (syscall(__NR_cachestat, fd, &range, &stat, 0) == 0) {
      if (stat.nr_cache == 0) return false;  // the common cold case
      if (stat.nr_cache >= (length + kPage - 1) / kPage) return true;
      // Fewer cached pages than the range holds: full only if the rest
      // lies past the end of the file.
      return stat.nr_cache >= PagesBeforeEof(fd, offset, length) &&
             PagesBeforeEof(fd, offset, length) > 0;
    }
    if (errno != ENOSYS) return false;
    have_cachestat.store(false, std::memory_order_relaxed);
  }
  return MincoreCached(fd, offset, length);
}

}  // namespace fgds
