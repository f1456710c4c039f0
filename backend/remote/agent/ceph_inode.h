// File: backend/remote/agent/ceph_inode.h
//
// libcephfs's lookup of an inode by number, which only C can call
// (ceph_ll_lookup_inode takes a struct inodeno_t that libcephfs.h defines
// for C alone; backend/ceph/ceph_c_shim.h says why).
#ifndef FGDS_BACKEND_REMOTE_AGENT_CEPH_INODE_H_
#define FGDS_BACKEND_REMOTE_AGENT_CEPH_INODE_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ceph_mount_info;
struct Inode;

// The inode numbered `ino` with a reference the caller drops
// (ceph_ll_put): 0, or -errno (-ESTALE: no such inode).
int fgds_ceph_lookup_inode(struct ceph_mount_info* cmount, uint64_t ino,
                           struct Inode** out);

#ifdef __cplusplus
}
#endif

#endif  // FGDS_BACKEND_REMOTE_AGENT_CEPH_INODE_H_
