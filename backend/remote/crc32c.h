// File: backend/remote/crc32c.h
//
// Crc32c: the CRC-32C (Castagnoli) of a byte range, as iSCSI, ext4 and 3FS
// use it for end-to-end checks of payloads. The agent protocol carries it
// in a frame's header when both sides asked for checked payloads.
//
// Example:
//   uint32_t crc = Crc32c(0, data, size);
//   crc = Crc32c(crc, more, more_size);  // continues the same sum
//
// Uses the SSE4.2 crc32 instruction where the CPU has it (about 20 GB/s
// per core), a table otherwise. Thread safety: a pure function.
#ifndef FGDS_BACKEND_REMOTE_CRC32C_H_
#define FGDS_BACKEND_REMOTE_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace fgds::remote {

// Extends `crc` (0 to start) over `size` bytes at `data`.
uint32_t Crc32c(uint32_t crc, const void* data, size_t size);

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_CRC32C_H_
