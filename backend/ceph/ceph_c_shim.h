// File: backend/ceph/ceph_c_shim.h
//
// The parts of libcephfs.h that only C sees: the header declares
// struct ceph_file_layout and vinodeno_t's fields for C alone (C++ gets
// Ceph's internal classes, which the -dev package does not ship), so
// these calls are made from C (ceph_c_shim.c) with plain integers across.
#ifndef FGDS_BACKEND_CEPH_CEPH_C_SHIM_H_
#define FGDS_BACKEND_CEPH_CEPH_C_SHIM_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ceph_mount_info;
struct Inode;

// The file's layout (ceph_ll_file_layout), in bytes and objects.
void fgds_ceph_file_layout(struct ceph_mount_info* cmount, struct Inode* in,
                           uint32_t* stripe_unit, uint32_t* stripe_count,
                           uint32_t* object_size);

// Registers the cache invalidation callbacks (ceph_ll_register_callbacks)
// of `handle`, which the C++ side defines below. Snapshot inodes (snapid
// other than head) are not passed on: they never change.
void fgds_ceph_register_callbacks(struct ceph_mount_info* cmount, void* handle);

// Defined by the backend (ceph_backend.cc); called on libcephfs's
// invalidator threads.
void fgds_ceph_inode_invalidated(void* handle, uint64_t ino, int64_t offset,
                                 int64_t len);
void fgds_ceph_dentry_invalidated(void* handle, uint64_t dir_ino,
                                  const char* name, size_t len);

#ifdef __cplusplus
}
#endif

#endif  // FGDS_BACKEND_CEPH_CEPH_C_SHIM_H_
