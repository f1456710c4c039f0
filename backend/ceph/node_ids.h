// File: backend/ceph/node_ids.h
//
// How CephFS inode numbers become the node ids the FUSE mount uses. FUSE
// fixes the root's id at 1 (FUSE_ROOT_ID); CephFS's own root is inode 1,
// but a mount of a subtree (--ceph-root) has another root. The two numbers
// swap places, which keeps the map a bijection, so every node id names one
// inode and back, with no table.
#ifndef FGDS_BACKEND_CEPH_NODE_IDS_H_
#define FGDS_BACKEND_CEPH_NODE_IDS_H_

#include <cstdint>

namespace fgds::backend {

inline constexpr uint64_t kCephRootNode = 1;

// The node id of inode `ino`, in a mount whose root is inode `root_ino`.
constexpr uint64_t NodeOfIno(uint64_t ino, uint64_t root_ino) {
  if (ino == root_ino) return kCephRootNode;
  if (ino == kCephRootNode) return root_ino;
  return ino;
}

// The inverse of NodeOfIno (the swap is its own inverse).
constexpr uint64_t InoOfNode(uint64_t node, uint64_t root_ino) {
  return NodeOfIno(node, root_ino);
}

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_CEPH_NODE_IDS_H_
