// File: common/kmod/storage_device.h
//
// Which block device a file's I/O reaches: the device whose peer-to-peer
// route to a GPU decides whether the fgds module can serve that file
// (KmodNode::Route, FGDS_IOCTL_REG_BUFFER's storage_fd). libfgds records it
// per registered file and the daemon per registered file and GPU iov, so
// that a GPU mapping made for one device is never used for another.
//
// Example:
//   const dev_t device = kmod::StorageDevice(fd);
//   if (device == 0) return -errno;
#ifndef FGDS_COMMON_KMOD_STORAGE_DEVICE_H_
#define FGDS_COMMON_KMOD_STORAGE_DEVICE_H_

#include <sys/stat.h>
#include <sys/types.h>

namespace fgds::kmod {

// StorageDevice: the block device whose route to the GPU matters for I/O
// on `fd`: st_rdev of a block device node, else the st_dev its data lives
// on. 0 when fstat fails (errno says why). StorageDeviceOf answers from a
// stat the caller already has.
dev_t StorageDevice(int fd);
dev_t StorageDeviceOf(const struct stat& st);

}  // namespace fgds::kmod

#endif  // FGDS_COMMON_KMOD_STORAGE_DEVICE_H_
