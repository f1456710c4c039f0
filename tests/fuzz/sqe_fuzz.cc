// Fuzzes CheckSqe, the validation of every ring entry a client writes, and
// the local backend's choice of path for what passes (ChooseIo).
// Input: any number of 48-byte fgds_sqe images (a ring's worth of garbage).
// An entry that passes must name memory inside one of this session's iovs,
// a file opened with the needed mode, an offset range off_t can hold; the
// backend must then take the direct path only when everything is aligned,
// and only the direct path on a direct_only (GPU) iov; otherwise abort().
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "backend/local/io_policy.h"
#include "fgds/usrbio.h"
#include "fusefs/session/sqe_check.h"

namespace {

using fgds::session::CheckedIo;
using fgds::session::RegisteredFile;
using fgds::session::Registry;
using fgds::session::SharedMemory;

// Stand-ins for backend handles, never null: CheckSqe never dereferences
// them.
fgds::backend::File* FakeFile(uintptr_t n) {
  return reinterpret_cast<fgds::backend::File*>((n + 1) * 64);
}

// The descriptors ChooseIo sees for a fake file: file 2 has an O_DIRECT
// twin. Never real descriptors: ChooseIo only picks one.
fgds::backend::FileDescriptors DescriptorsOf(fgds::backend::File* file) {
  const bool twin = file == FakeFile(2);
  return {1 << 24, twin ? (1 << 24) + 1 : -1, 0};
}

bool Cached(int, uint64_t offset, uint64_t) { return offset % 8192 == 0; }

struct Fixture {
  Fixture() {
    // Two iovs (ids 0 and 1, one of them unaligned), three files (0 read-only,
    // 1 write-only, 2 read-write with an O_DIRECT descriptor); id 3 of each
    // was registered and dropped again.
    for (int i = 0; i < 4; ++i) {
      registry.AddIov(SharedMemory::Borrow(i == 1 ? memory + 1 : memory,
                                           i == 1 ? 8191 : sizeof(memory)));
    }
    registry.AddFile(
        std::make_shared<RegisteredFile>(nullptr, FakeFile(0), true, false));
    registry.AddFile(
        std::make_shared<RegisteredFile>(nullptr, FakeFile(1), false, true));
    registry.AddFile(
        std::make_shared<RegisteredFile>(nullptr, FakeFile(2), true, true));
    registry.AddFile(
        std::make_shared<RegisteredFile>(nullptr, FakeFile(3), true, true));
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
      if (ret != -EINVAL && ret != -EBADF && ret != -EACCES) {
        abort();
      }
      continue;
    }
    if (io.sync) {
      // An fsync names a registered file and nothing else.
      if (io.file == nullptr || io.iov != nullptr || io.region != nullptr ||
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
    if (io.region != io.iov->get() || io.file != (*io.registered)->file) {
      abort();
    }
    if (io.offset > static_cast<uint64_t>(INT64_MAX) - io.len) abort();
    if (io.write ? !(*io.registered)->writable : !(*io.registered)->readable) {
      abort();
    }
    const fgds::backend::FileIoRequest request{
        io.write ? fgds::backend::FileOp::kWrite : fgds::backend::FileOp::kRead,
        io.file,
        io.region,
        io.buf,
        io.len,
        io.offset,
        io.flags,
        nullptr};
    const fgds::backend::FileDescriptors fds = DescriptorsOf(io.file);
    const fgds::backend::IoChoice choice =
        fgds::backend::ChooseIo(request, fds, &Cached);
    if (choice.error != 0) {
      if (choice.error != -EINVAL && choice.error != -EOPNOTSUPP &&
          choice.error != -EXDEV) {
        abort();
      }
      if (!(*io.iov)->direct_only()) abort();  // host memory always has a way
      continue;
    }
    if (choice.path == fgds::backend::IoPath::kDirect &&
        (reinterpret_cast<uintptr_t>(io.buf) % 4096 || io.offset % 4096 ||
         io.len % 4096 || ring_flags != 0 || choice.fd != fds.direct_fd)) {
      abort();  // direct I/O that the kernel would refuse
    }
    if (choice.path == fgds::backend::IoPath::kPageCache &&
        choice.fd != fds.fd) {
      abort();
    }
    // The CPU never copies into or out of GPU memory (the page cache).
    if ((*io.iov)->direct_only() &&
        choice.path != fgds::backend::IoPath::kDirect) {
      abort();
    }
  }
  return 0;
}
