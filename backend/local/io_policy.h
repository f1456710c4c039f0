// File: backend/local/io_policy.h
//
// ChooseIo: how the local backend moves one request, O_DIRECT or through
// the page cache. Pure apart from a page-cache query, so every rule is
// unit-tested (io_policy_test.cc):
//   - O_DIRECT needs memory, file offset and length aligned to 4096 (every
//     common device's logical block) and a twin descriptor;
//   - it is taken when the caller prefers it (kIoPreferDirect), except for
//     large reads whose pages are all cached already: those are a memory
//     copy through the page cache, where O_DIRECT would read the disk again;
//   - device memory (GPU mappings) takes O_DIRECT or nothing: the CPU
//     copying through the page cache would touch the GPU's BAR one PCIe
//     transaction at a time, if the platform allows it at all; and only with
//     files on the device whose route to the GPU was checked.
#ifndef FGDS_BACKEND_LOCAL_IO_POLICY_H_
#define FGDS_BACKEND_LOCAL_IO_POLICY_H_

#include <sys/types.h>

#include <cstdint>

#include "backend/file_io.h"

namespace fgds::backend {

inline constexpr uint64_t kDirectAlign = 4096;
// Aligned reads of at least this many bytes ask whether their pages are all
// cached; smaller ones skip the question (the syscall costs more than it
// could save).
inline constexpr uint64_t kCachedReadCheckMin = uint64_t{64} << 10;

// The descriptors of a file, as ChooseIo sees them.
struct FileDescriptors {
  int fd = -1;         // buffered
  int direct_fd = -1;  // O_DIRECT twin, or -1
  dev_t storage_device = 0;
};

struct IoChoice {
  int fd = -1;
  IoPath path = IoPath::kNone;
  int error = 0;  // nonzero (-errno): refuse the request
};

// `fully_cached(fd, offset, len)` answers the page-cache question
// (common/page_cache.h in the daemon; a stand-in in tests). Errors:
//   -EINVAL      device memory with an unaligned request or without
//                kIoPreferDirect;
//   -EOPNOTSUPP  device memory, aligned, but the file has no O_DIRECT twin
//                (a filesystem without O_DIRECT, such as tmpfs);
//   -EXDEV       device memory whose route was checked for another device.
IoChoice ChooseIo(const FileIoRequest& request, const FileDescriptors& file,
                  bool (*fully_cached)(int fd, uint64_t offset, uint64_t len));

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_LOCAL_IO_POLICY_H_
