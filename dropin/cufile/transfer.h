// File: dropin/cufile/transfer.h
//
// One synchronous transfer between a registered file and a buffer, the
// body of cuFileRead/cuFileWrite, of the stream calls and of batch
// entries: device memory goes through the device's libfgds driver
// (fgds_pread/fgds_pwrite: bounce or direct path, page cache when the
// bytes are cached), host memory through pread/pwrite (cuFile 1.7+ takes
// host buffers too).
#ifndef FGDS_DROPIN_CUFILE_TRANSFER_H_
#define FGDS_DROPIN_CUFILE_TRANSFER_H_

#include <sys/types.h>

#include <cstddef>

#include "dropin/cufile/library.h"

namespace fgds::cufile {

enum class Direction { kRead, kWrite };

// Transfer moves `size` bytes between file offset `file_offset` of
// `handle`'s file and `base + buf_offset`. `base` is a registered buffer's
// start or any address (cuFile's bufPtr_base). Returns the bytes moved
// (short only at end of file) or -errno.
ssize_t Transfer(Direction direction, FileHandle& handle, const void* base,
                 size_t size, off_t file_offset, off_t buf_offset);

// CheckedTransfer is Transfer behind cuFile's argument and handle checks,
// returning cuFileRead's convention (bytes, -1 with errno, or
// -CUfileOpError).
ssize_t CheckedTransfer(Direction direction, CUfileHandle_t fh,
                        const void* base, size_t size, off_t file_offset,
                        off_t buf_offset);

}  // namespace fgds::cufile

#endif  // FGDS_DROPIN_CUFILE_TRANSFER_H_
