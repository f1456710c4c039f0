// C side of ceph_inode.h.
#include "backend/remote/agent/ceph_inode.h"

#include <cephfs/libcephfs.h>

int fgds_ceph_lookup_inode(struct ceph_mount_info* cmount, uint64_t ino,
                           struct Inode** out) {
  inodeno_t number = {ino};
  return ceph_ll_lookup_inode(cmount, number, out);
}
