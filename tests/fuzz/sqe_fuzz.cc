// Fuzzes CheckSqe, the validation of every ring entry a client writes.
// Input: any number of 48-byte fgds_sqe images (a ring's worth of garbage).
// An entry that passes must name memory inside one of this session's iovs,
// a file opened with the needed mode, an offset range off_t can hold, and
// the direct path only when everything is aligned, and only the direct path
// on a direct_only (GPU) iov; otherwise abort().
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "fgds/usrbio.h"
#include "fusefs/session/sqe_check.h"

namespace {

using fgds::session::CheckedIo;
using fgds::session::RegisteredFile;
using fgds::session::Registry;
using fgds::session::SharedMemory;

struct Fixture {
  Fixture() {
    // Two iovs (ids 0 and 1, one of them unaligned), three files (0 read-only,
    // 1 write-only, 2 read-write with an O_DIRECT descriptor); id 3 of each
    // was registered and dropped again.
    for (int i = 0; i < 4; ++i) {
      registry.AddIov(SharedMemory::Borrow(i == 1 ? memory + 1 : memory,
                                           i == 1 ? 8191 : sizeof(memory)));
    }
    registry.AddFile(std::make_shared<RegisteredFile>(-1, -1, true, false));
    registry.AddFile(std::make_shared<RegisteredFile>(-1, -1, false, true));
    // Never a real descriptor: the fixture is never destroyed, so nothing
    // closes it, and CheckSqe only picks it.
    registry.AddFile(std::make_shared<RegisteredFile>(-1, 1 << 24, true, true));
    registry.AddFile(std::make_shared<RegisteredFile>(-1, -1, true, true));
    registry.RemoveIov(3);
    registry.RemoveIov(2);
    registry.RemoveFile(3);
    // Id 4: GPU memory mapped through the module (direct_only), stood in
    // for by the same host memory.
    registry.AddIov(
        SharedMemory::Adopt(memory, sizeof(memory), std::make_shared<int>(0)));
  }
  alignas(4096) char memory[65536];
  Registry registry;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture* fixture = new Fixture();
  const uint32_t ring_flags = size % 2 ? FGDS_IOR_BUFFERED : 0;
  fgds::ReaderMutexLock lock(&fixture->registry.mu());
  for (size_t off = 0; off + sizeof(fgds_sqe) <= size;
       off += sizeof(fgds_sqe)) {
    fgds_sqe sqe;
    memcpy(&sqe, data + off, sizeof(sqe));
    CheckedIo io;
    int ret = fgds::session::CheckSqe(sqe, fixture->registry, ring_flags, &io);
    if (ret != 0) {
      if (ret != -EINVAL && ret != -EBADF && ret != -EACCES &&
          ret != -EOPNOTSUPP) {
        abort();
      }
      continue;
    }
    if (io.sync) {
      // An fsync names a registered file and nothing else.
      if (io.file == nullptr || io.iov != nullptr || io.fd != (*io.file)->fd ||
          sqe.len != 0 || sqe.iov_offset != 0 || sqe.file_offset != 0) {
        abort();
      }
      continue;
    }
    const char* base = (*io.iov)->base();
    if (io.buf < base || io.len == 0 || io.len > (*io.iov)->size() ||
        static_cast<uint64_t>(io.buf - base) > (*io.iov)->size() - io.len) {
      abort();  // outside the iov
    }
    if (io.offset > static_cast<uint64_t>(INT64_MAX) - io.len) abort();
    if (io.write ? !(*io.file)->writable : !(*io.file)->readable) abort();
    if (io.path == FGDS_PATH_DIRECT &&
        (reinterpret_cast<uintptr_t>(io.buf) % 4096 || io.offset % 4096 ||
         io.len % 4096 || ring_flags != 0 || io.fd != (*io.file)->direct_fd)) {
      abort();  // direct I/O that the kernel would refuse
    }
    // The CPU never copies into or out of GPU memory (the page cache).
    if ((*io.iov)->direct_only() && io.path != FGDS_PATH_DIRECT) abort();
  }
  return 0;
}
