// The cuFile stream calls. FGDS runs a stream I/O when it is issued, after
// synchronizing the stream: the I/O then follows every operation queued on
// the stream before it, and everything queued after the call returns sees
// its bytes (reads) or may overwrite the buffer (writes), which is the
// ordering cuFile's stream API promises. The parameters are read at the
// call, not when the stream reaches the operation (docs/dropin.md).
#include <map>
#include <mutex>

#include "dropin/cufile/error_map.h"
#include "dropin/cufile/gpu_backend.h"
#include "dropin/cufile/guard.h"
#include "dropin/cufile/include/cufile.h"
#include "dropin/cufile/library.h"
#include "dropin/cufile/transfer.h"

namespace {

using fgds::cufile::Direction;
using fgds::cufile::Status;

// cuFileStreamRegister's flags, per stream: recorded so that deregistering
// an unknown stream is an error, as in cuFile. They are hints about
// alignment that change nothing here.
struct StreamTable {
  std::mutex mu;
  std::map<CUstream, unsigned> flags;
};

StreamTable& Streams() {
  static StreamTable* table = new StreamTable();  // never destroyed
  return *table;
}

CUfileError_t RunOnStream(Direction direction, CUfileHandle_t fh, void* base,
                          const size_t* size_p, const off_t* file_offset_p,
                          const off_t* buf_offset_p, ssize_t* done_p,
                          CUstream stream) {
  if (size_p == nullptr || file_offset_p == nullptr ||
      buf_offset_p == nullptr || done_p == nullptr) {
    return Status(CU_FILE_INVALID_VALUE);
  }
  int cu_result = 0;
  if (int error = fgds::cufile::Backend().SynchronizeStream(stream, &cu_result);
      error != 0) {
    return Status(CU_FILE_CUDA_DRIVER_ERROR, cu_result);
  }
  *done_p = fgds::cufile::CheckedTransfer(direction, fh, base, *size_p,
                                          *file_offset_p, *buf_offset_p);
  return fgds::cufile::Ok();
}

}  // namespace

using fgds::cufile::Guard;

extern "C" {

CUfileError_t cuFileReadAsync(CUfileHandle_t fh, void* bufPtr_base,
                              size_t* size_p, off_t* file_offset_p,
                              off_t* bufPtr_offset_p, ssize_t* bytes_read_p,
                              CUstream stream) {
  return Guard([&] {
    return RunOnStream(Direction::kRead, fh, bufPtr_base, size_p, file_offset_p,
                       bufPtr_offset_p, bytes_read_p, stream);
  });
}

CUfileError_t cuFileWriteAsync(CUfileHandle_t fh, void* bufPtr_base,
                               size_t* size_p, off_t* file_offset_p,
                               off_t* bufPtr_offset_p, ssize_t* bytes_written_p,
                               CUstream stream) {
  return Guard([&] {
    return RunOnStream(Direction::kWrite, fh, bufPtr_base, size_p,
                       file_offset_p, bufPtr_offset_p, bytes_written_p, stream);
  });
}

CUfileError_t cuFileStreamRegister(CUstream stream, unsigned flags) {
  return Guard([&] {
    // Bits 0-3 are cuFile's defined hints (fixed buffer offset, file
    // offset, size; page aligned).
    if ((flags & ~0xFu) != 0) return Status(CU_FILE_INVALID_VALUE);
    if (CUfileError_t status = fgds::cufile::Library::Get().OpenImplicitly();
        status.err != CU_FILE_SUCCESS) {
      return status;
    }
    StreamTable& table = Streams();
    std::lock_guard<std::mutex> lock(table.mu);
    table.flags[stream] = flags;
    return fgds::cufile::Ok();
  });
}

CUfileError_t cuFileStreamDeregister(CUstream stream) {
  return Guard([&] {
    StreamTable& table = Streams();
    std::lock_guard<std::mutex> lock(table.mu);
    if (table.flags.erase(stream) == 0) return Status(CU_FILE_INVALID_VALUE);
    return fgds::cufile::Ok();
  });
}

}  // extern "C"
