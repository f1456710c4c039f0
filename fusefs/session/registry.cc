#include "fusefs/session/registry.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace fgds::session {
namespace {

constexpr long kTmpfsMagic = 0x01021994;  // memfds live on an internal tmpfs

}  // namespace

int SharedMemory::Map(int fd, uint64_t size,
                      std::shared_ptr<SharedMemory>* out) {
  if (size == 0 || size > static_cast<uint64_t>(INT64_MAX)) return -EINVAL;
  struct statfs sfs;
  if (fstatfs(fd, &sfs) != 0 || sfs.f_type != kTmpfsMagic) return -EINVAL;
  int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) return -EINVAL;
  // Checked after the seal: from here on the size can only grow.
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<uint64_t>(st.st_size) < size) {
    return -EINVAL;
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return -errno;
  out->reset(new SharedMemory(static_cast<char*>(base), size, true));
  return 0;
}

std::shared_ptr<SharedMemory> SharedMemory::Borrow(void* base, uint64_t size) {
  return std::shared_ptr<SharedMemory>(
      new SharedMemory(static_cast<char*>(base), size, false));
}

std::shared_ptr<SharedMemory> SharedMemory::Adopt(char* base, uint64_t size,
                                                  std::shared_ptr<void> keeper,
                                                  dev_t storage_dev) {
  return std::shared_ptr<SharedMemory>(
      new SharedMemory(base, size, false, std::move(keeper), storage_dev));
}

int SharedMemory::NicOnly(uint64_t size, std::shared_ptr<SharedMemory>* out) {
  if (size == 0 || size > static_cast<uint64_t>(INT64_MAX)) return -EINVAL;
  // Address space only: PROT_NONE and MAP_NORESERVE commit no memory.
  void* base = mmap(nullptr, size, PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return -errno;
  std::shared_ptr<void> reservation(
      base, [size](void* p) { munmap(p, static_cast<size_t>(size)); });
  out->reset(new SharedMemory(static_cast<char*>(base), size, false,
                              std::move(reservation)));
  return 0;
}

SharedMemory::~SharedMemory() {
  // A backend's registration of the pages (an RDMA memory region) goes
  // before the mapping does.
  DropAttachment();
  // The NIC's registration took its own reference to the dma-buf; ours
  // goes with the region (the module's mapping holds one more until
  // keeper_ goes).
  if (dmabuf_fd_ >= 0) close(dmabuf_fd_);
  if (owned_) munmap(base(), size());
}

RegisteredFile::~RegisteredFile() {
  if (backend != nullptr && file != nullptr) backend->Release(file);
}

int64_t Registry::AddIov(std::shared_ptr<SharedMemory> iov) {
  fgds::MutexLock lock(&mu_);
  if (iovs_.size() >= limits_.max_iovs || next_iov_ == UINT32_MAX) {
    return -ENOSPC;
  }
  uint32_t id = next_iov_++;
  iovs_.emplace(id, std::move(iov));
  return id;
}

int64_t Registry::AddFile(std::shared_ptr<RegisteredFile> file) {
  fgds::MutexLock lock(&mu_);
  if (files_.size() >= limits_.max_files || next_file_ == UINT32_MAX) {
    return -ENOSPC;
  }
  uint32_t id = next_file_++;
  files_.emplace(id, std::move(file));
  return id;
}

int Registry::RemoveIov(uint32_t id) {
  std::shared_ptr<SharedMemory> dropped;  // released outside the lock
  fgds::MutexLock lock(&mu_);
  auto it = iovs_.find(id);
  if (it == iovs_.end()) return -ENOENT;
  dropped = std::move(it->second);
  iovs_.erase(it);
  return 0;
}

int Registry::RemoveFile(uint32_t id) {
  std::shared_ptr<RegisteredFile> dropped;
  fgds::MutexLock lock(&mu_);
  auto it = files_.find(id);
  if (it == files_.end()) return -ENOENT;
  dropped = std::move(it->second);
  files_.erase(it);
  return 0;
}

void Registry::Clear() {
  absl::flat_hash_map<uint32_t, std::shared_ptr<SharedMemory>> iovs;
  absl::flat_hash_map<uint32_t, std::shared_ptr<RegisteredFile>> files;
  {
    fgds::MutexLock lock(&mu_);
    iovs.swap(iovs_);
    files.swap(files_);
  }
}

const std::shared_ptr<SharedMemory>* Registry::FindIov(uint32_t id) const {
  auto it = iovs_.find(id);
  return it == iovs_.end() ? nullptr : &it->second;
}

const std::shared_ptr<RegisteredFile>* Registry::FindFile(uint32_t id) const {
  auto it = files_.find(id);
  return it == files_.end() ? nullptr : &it->second;
}

}  // namespace fgds::session
