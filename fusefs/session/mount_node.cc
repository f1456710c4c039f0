#include "fusefs/session/mount_node.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace fgds::session {
namespace {

// Linux 6.5: ask for a handle that identifies the inode without promising
// that it can be opened again. FUSE mounts without export support (ours:
// the daemon does not set FUSE_EXPORT_SUPPORT) encode only such handles
// since Linux 6.6; older kernels encode them without the flag and reject
// it as unknown (EINVAL).
#ifndef AT_HANDLE_FID
#define AT_HANDLE_FID 0x200
#endif

// fs/fuse/inode.c: FILEID_INO64_GEN, three 32-bit words: node id high,
// node id low, generation.
constexpr int kFuseHandleType = 0x81;
constexpr unsigned kFuseHandleBytes = 3 * sizeof(uint32_t);

}  // namespace

int MountNodeOf(int fd, dev_t mount_dev, uint64_t* node) {
  struct stat st;
  // Answered by our own FUSE threads or the kernel's attribute cache; it
  // moves no data through the mount.
  if (fstat(fd, &st) != 0 || st.st_dev != mount_dev) return -EBADF;
  struct {
    file_handle header;
    unsigned char bytes[MAX_HANDLE_SZ];
  } handle;
  int mount_id;
  handle.header.handle_bytes = sizeof(handle.bytes);
  int ret = name_to_handle_at(fd, "", &handle.header, &mount_id,
                              AT_EMPTY_PATH | AT_HANDLE_FID);
  if (ret != 0 && errno == EINVAL) {
    handle.header.handle_bytes = sizeof(handle.bytes);
    ret = name_to_handle_at(fd, "", &handle.header, &mount_id, AT_EMPTY_PATH);
  }
  if (ret != 0) return -errno;
  // On our mount only a FUSE handle can come back; anything else is
  // refused rather than guessed at.
  if (handle.header.handle_type != kFuseHandleType ||
      handle.header.handle_bytes < kFuseHandleBytes) {
    return -EBADF;
  }
  uint32_t words[3];
  memcpy(words, handle.header.f_handle, sizeof(words));
  *node = (static_cast<uint64_t>(words[0]) << 32) | words[1];
  return 0;
}

}  // namespace fgds::session
