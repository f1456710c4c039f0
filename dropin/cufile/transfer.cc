#include "dropin/cufile/transfer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>

#include "dropin/cufile/error_map.h"

namespace fgds::cufile {
namespace {

// HostTransfer loops pread/pwrite until `size` bytes moved or end of file.
ssize_t HostTransfer(Direction direction, int fd, char* buffer, size_t size,
                     off_t file_offset) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = direction == Direction::kRead
                          ? pread(fd, buffer + done, size - done,
                                  file_offset + static_cast<off_t>(done))
                          : pwrite(fd, buffer + done, size - done,
                                   file_offset + static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return done > 0 ? static_cast<ssize_t>(done) : -errno;
    }
    if (n == 0) break;  // end of file
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

// HostTransferAnyShape is HostTransfer for any alignment: an fd opened
// O_DIRECT (torch.cuda.gds opens every file so) refuses unaligned pieces,
// so those go through a buffered twin opened beside it.
ssize_t HostTransferAnyShape(Direction direction, int fd, char* buffer,
                             size_t size, off_t file_offset) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0) return -errno;
  const uint64_t shape = reinterpret_cast<uint64_t>(buffer) | size |
                         static_cast<uint64_t>(file_offset);
  if ((flags & O_DIRECT) == 0 || shape % 4096 == 0) {
    return HostTransfer(direction, fd, buffer, size, file_offset);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  const int twin = open(path.c_str(), (flags & O_ACCMODE) | O_CLOEXEC);
  if (twin < 0) return -errno;
  const ssize_t result =
      HostTransfer(direction, twin, buffer, size, file_offset);
  close(twin);
  return result;
}

}  // namespace

ssize_t Transfer(Direction direction, FileHandle& handle, const void* base,
                 size_t size, off_t file_offset, off_t buf_offset) {
  if (file_offset < 0 || buf_offset < 0) return -EINVAL;
  if (size == 0) return 0;
  Target target;
  int cu_result = 0;
  if (int error =
          Library::Get().Resolve(base, static_cast<uint64_t>(buf_offset), size,
                                 handle, &target, &cu_result);
      error != 0) {
    return error;
  }
  if (target.driver == nullptr) {
    char* buffer = static_cast<char*>(const_cast<void*>(base)) + buf_offset;
    return HostTransferAnyShape(direction, handle.fd, buffer, size,
                                file_offset);
  }
  return direction == Direction::kRead
             ? fgds_pread(target.driver, handle.fd, const_cast<void*>(base),
                          size, file_offset, buf_offset)
             : fgds_pwrite(target.driver, handle.fd, base, size, file_offset,
                           buf_offset);
}

ssize_t CheckedTransfer(Direction direction, CUfileHandle_t fh,
                        const void* base, size_t size, off_t file_offset,
                        off_t buf_offset) {
  if (fh == nullptr || base == nullptr) {
    return -static_cast<ssize_t>(CU_FILE_INVALID_VALUE);
  }
  std::shared_ptr<FileHandle> handle = Library::Get().FindHandle(fh);
  if (handle == nullptr) {
    return -static_cast<ssize_t>(CU_FILE_HANDLE_NOT_REGISTERED);
  }
  return IoReturn(
      Transfer(direction, *handle, base, size, file_offset, buf_offset));
}

}  // namespace fgds::cufile
