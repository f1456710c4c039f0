#include "common/kmod/storage_device.h"

#include <sys/stat.h>

namespace fgds::kmod {

dev_t StorageDevice(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return 0;
  return StorageDeviceOf(st);
}

dev_t StorageDeviceOf(const struct stat& st) {
  return S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
}

}  // namespace fgds::kmod
