// File: dropin/hf3fs/handles.h
//
// What the opaque handles of 3FS's structs point at in the drop-in
// (hf3fs_iov.iovh, hf3fs_ior.iorh), and the process-wide table of
// registered file descriptors (3FS's hf3fs_reg_fd is global: prep_io names
// files by their fd, FGDS's rings by a per-session id).
#ifndef FGDS_DROPIN_HF3FS_HANDLES_H_
#define FGDS_DROPIN_HF3FS_HANDLES_H_

#include <cstdint>
#include <mutex>
#include <vector>

#include "fgds/usrbio.h"

namespace fgds::hf3fs {

struct IovHandle {
  fgds_iov own = {};  // the usrbio iov, when this handle created it
  // The usrbio iov entries are prepared against: &own, or for an
  // hf3fs_iovwrap the iov that created the memory (which must outlive it).
  fgds_iov* target = nullptr;
  fgds_session* session = nullptr;  // acquired by this handle
  bool owner = false;               // destroy `own` with the handle
  int device = -1;                  // CUDA ordinal of a GPU iov, else -1
  uint64_t device_alloc = 0;        // memory hf3fs_iovcreate_device made
};

struct IorHandle {
  fgds_ior ior = {};
  fgds_session* session = nullptr;
  // Each prepared entry takes a slot until its completion is reaped: the
  // slot number is the index hf3fs_prep_io returns and hf3fs_cqe.index
  // echoes; the slot keeps the caller's userdata (the ring carries only
  // the slot number).
  std::mutex mu;
  std::vector<const void*> userdata;
  std::vector<uint32_t> free_slots;
};

// A registered fd: its mount's session and the session's id for it.
struct RegisteredFile {
  fgds_session* session = nullptr;
  int id = -1;
};

// FindFile fills `file` for a registered fd; false if it is not one.
bool FindFile(int fd, RegisteredFile* file);

}  // namespace fgds::hf3fs

#endif  // FGDS_DROPIN_HF3FS_HANDLES_H_
