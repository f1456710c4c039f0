#include "backend/local/io_policy.h"

#include <cerrno>
#include <cstdint>

namespace fgds::backend {

IoChoice ChooseIo(const FileIoRequest& request, const FileDescriptors& file,
                  bool (*fully_cached)(int fd, uint64_t offset, uint64_t len)) {
  if (request.op == FileOp::kFsync || request.op == FileOp::kFdatasync) {
    return {file.fd, IoPath::kNone, 0};
  }
  const bool aligned =
      reinterpret_cast<uintptr_t>(request.buf) % kDirectAlign == 0 &&
      request.offset % kDirectAlign == 0 && request.len % kDirectAlign == 0;
  const bool prefer_direct = (request.flags & kIoPreferDirect) != 0;
  bool direct = aligned && prefer_direct && file.direct_fd >= 0;
  const MemoryRegion* region = request.region;
  if (region != nullptr && region->kind() == MemoryRegion::Kind::kDevice) {
    if (!direct) {
      return {-1, IoPath::kNone,
              aligned && prefer_direct ? -EOPNOTSUPP : -EINVAL};
    }
    // The module checked the P2P route to one device only; a file on
    // another one (a mount inside the backing directory) must not DMA into
    // this memory.
    if (region->route_device() != 0 &&
        file.storage_device != region->route_device()) {
      return {-1, IoPath::kNone, -EXDEV};
    }
  } else if (direct && request.op == FileOp::kRead &&
             request.len >= kCachedReadCheckMin &&
             fully_cached(file.fd, request.offset, request.len)) {
    direct = false;
  }
  if (direct) return {file.direct_fd, IoPath::kDirect, 0};
  return {file.fd, IoPath::kPageCache, 0};
}

}  // namespace fgds::backend
