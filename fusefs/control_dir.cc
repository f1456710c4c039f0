#include "fusefs/control_dir.h"

#include <fuse_lowlevel.h>

#include <cstring>

namespace fgds::fusefs {

bool IsReservedName(uint64_t parent, const char* name) {
  return parent == FUSE_ROOT_ID && name == kControlDirName;
}

struct stat ControlAttr(uint64_t node) {
  struct stat st;
  std::memset(&st, 0, sizeof(st));
  st.st_ino = node;
  if (node == kControlDirNode) {
    st.st_mode = S_IFDIR | 0555;
    st.st_nlink = 2;
  } else {
    // Size 0 like /proc files; the file is opened with direct_io, so readers
    // read until they get 0 bytes.
    st.st_mode = S_IFREG | 0444;
    st.st_nlink = 1;
  }
  st.st_blksize = 4096;
  return st;
}

uint64_t ControlLookup(uint64_t parent, const char* name) {
  if (IsReservedName(parent, name)) return kControlDirNode;
  if (parent == kControlDirNode && std::strcmp(name, "stats") == 0) {
    return kStatsNode;
  }
  return 0;
}

}  // namespace fgds::fusefs
