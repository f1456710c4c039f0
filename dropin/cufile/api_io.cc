// The cuFile registration and synchronous I/O calls.
#include "dropin/cufile/guard.h"
#include "dropin/cufile/include/cufile.h"
#include "dropin/cufile/library.h"
#include "dropin/cufile/transfer.h"

using fgds::cufile::CheckedTransfer;
using fgds::cufile::Direction;
using fgds::cufile::Guard;
using fgds::cufile::GuardIo;
using fgds::cufile::Library;

extern "C" {

CUfileError_t cuFileHandleRegister(CUfileHandle_t* fh, CUfileDescr_t* descr) {
  return Guard([&] { return Library::Get().RegisterHandle(fh, descr); });
}

void cuFileHandleDeregister(CUfileHandle_t fh) {
  Guard([&] {
    Library::Get().DeregisterHandle(fh);
    return fgds::cufile::Ok();
  });
}

CUfileError_t cuFileBufRegister(const void* bufPtr_base, size_t length,
                                int flags) {
  return Guard([&] {
    return Library::Get().RegisterBuffer(bufPtr_base, length, flags);
  });
}

CUfileError_t cuFileBufDeregister(const void* bufPtr_base) {
  return Guard([&] { return Library::Get().DeregisterBuffer(bufPtr_base); });
}

ssize_t cuFileRead(CUfileHandle_t fh, void* bufPtr_base, size_t size,
                   off_t file_offset, off_t bufPtr_offset) {
  return GuardIo([&] {
    return CheckedTransfer(Direction::kRead, fh, bufPtr_base, size, file_offset,
                           bufPtr_offset);
  });
}

ssize_t cuFileWrite(CUfileHandle_t fh, const void* bufPtr_base, size_t size,
                    off_t file_offset, off_t bufPtr_offset) {
  return GuardIo([&] {
    return CheckedTransfer(Direction::kWrite, fh, bufPtr_base, size,
                           file_offset, bufPtr_offset);
  });
}

}  // extern "C"
