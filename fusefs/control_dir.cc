#include "fusefs/control_dir.h"

#include <fuse_lowlevel.h>

#include <cstring>

#include "backend/local/inode_table.h"

namespace fgds::fusefs {

bool IsControlNode(uint64_t node) {
  return node >= kControlDirNode && node < backend::kFirstNodeId;
}

bool IsReservedName(uint64_t parent, const char* name) {
  return parent == FUSE_ROOT_ID && name == kControlDirName;
}

void ControlDir::AddFile(std::string name, Producer produce) {
  files_.push_back({std::move(name), std::move(produce)});
}

uint64_t ControlDir::Lookup(uint64_t parent, const char* name) const {
  if (IsReservedName(parent, name)) return kControlDirNode;
  if (parent != kControlDirNode) return 0;
  for (size_t i = 0; i < files_.size(); ++i) {
    if (files_[i].name == name) return FileNode(i);
  }
  return 0;
}

bool ControlDir::IsFile(uint64_t node) const {
  return node > kControlDirNode && node - kControlDirNode - 1 < files_.size();
}

struct stat ControlDir::Attr(uint64_t node) const {
  struct stat st;
  std::memset(&st, 0, sizeof(st));
  st.st_ino = node;
  if (IsFile(node)) {
    st.st_mode = S_IFREG | 0444;
    st.st_nlink = 1;
  } else {
    st.st_mode = S_IFDIR | 0555;
    st.st_nlink = 2;
  }
  st.st_blksize = 4096;
  st.st_atime = st.st_mtime = st.st_ctime = created_;
  return st;
}

std::string ControlDir::Content(uint64_t node) const {
  return IsFile(node) ? files_[node - kControlDirNode - 1].produce() : "";
}

}  // namespace fgds::fusefs
