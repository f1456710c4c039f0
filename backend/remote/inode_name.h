// File: backend/remote/inode_name.h
//
// How a daemon names a CephFS file to an agent by its inode number rather
// than by a path: "@inode/<decimal inode number>". A path would have to be
// rebuilt from the daemon's node (libcephfs gives inodes, not names),
// could name another file after a rename, and names nothing for an open
// file that was unlinked; the inode number is the file's identity on every
// client of the file system. The form passes CheckRelativePath, so the
// protocol (agent_wire.h) carries it unchanged; the CephFS store reads it
// (ceph_store.h), the directory store has no such file.
#ifndef FGDS_BACKEND_REMOTE_INODE_NAME_H_
#define FGDS_BACKEND_REMOTE_INODE_NAME_H_

#include <cstdint>
#include <string_view>

#include "absl/strings/numbers.h"

namespace fgds::remote {

inline constexpr char kInodeNamePrefix[] = "@inode/";

// True, with *ino set, when `name` is an inode name (one decimal number,
// not 0).
inline bool ParseInodeName(std::string_view name, uint64_t* ino) {
  constexpr std::string_view prefix = kInodeNamePrefix;
  if (name.substr(0, prefix.size()) != prefix) return false;
  std::string_view digits = name.substr(prefix.size());
  if (digits.empty() || digits.size() > 20) return false;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
  }
  return absl::SimpleAtoi(absl::string_view(digits.data(), digits.size()),
                          ino) &&
         *ino != 0;
}

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_INODE_NAME_H_
