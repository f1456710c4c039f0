// C side of ceph_c_shim.h.
#include "backend/ceph/ceph_c_shim.h"

#include <cephfs/libcephfs.h>

void fgds_ceph_file_layout(struct ceph_mount_info* cmount, struct Inode* in,
                           uint32_t* stripe_unit, uint32_t* stripe_count,
                           uint32_t* object_size) {
  struct ceph_file_layout layout = {0};
  ceph_ll_file_layout(cmount, in, &layout);
  *stripe_unit = layout.fl_stripe_unit;
  *stripe_count = layout.fl_stripe_count;
  *object_size = layout.fl_object_size;
}

static void OnInode(void* handle, vinodeno_t vino, int64_t offset,
                    int64_t len) {
  if (vino.snapid.val != CEPH_NOSNAP) return;
  fgds_ceph_inode_invalidated(handle, vino.ino.val, offset, len);
}

static void OnDentry(void* handle, vinodeno_t dir, vinodeno_t ino,
                     const char* name, size_t len) {
  (void)ino;
  if (dir.snapid.val != CEPH_NOSNAP) return;
  fgds_ceph_dentry_invalidated(handle, dir.ino.val, name, len);
}

void fgds_ceph_register_callbacks(struct ceph_mount_info* cmount,
                                  void* handle) {
  struct ceph_client_callback_args args = {0};
  args.handle = handle;
  args.ino_cb = OnInode;
  args.dentry_cb = OnDentry;
  ceph_ll_register_callbacks(cmount, &args);
}
