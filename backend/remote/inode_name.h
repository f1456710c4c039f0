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
//
// A directory store's file is named by its path, checked against its inode
// number: "@inode/<decimal inode number>/<path>". A path alone could name
// another file by the time the agent opens it (a rename, or a directory on
// the way swapped for a symlink by a hostile user racing the request: a
// write into someone else's file); the agent refuses a file whose inode is
// not the one named (ESTALE), and the daemon serves that request itself.
#ifndef FGDS_BACKEND_REMOTE_INODE_NAME_H_
#define FGDS_BACKEND_REMOTE_INODE_NAME_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

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

// True, with *ino and *path set, when `name` is a checked path name
// ("@inode/N/PATH", N not 0, PATH not empty).
inline bool ParseCheckedPathName(std::string_view name, uint64_t* ino,
                                 std::string_view* path) {
  constexpr std::string_view prefix = kInodeNamePrefix;
  if (name.substr(0, prefix.size()) != prefix) return false;
  const std::string_view rest = name.substr(prefix.size());
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash + 1 == rest.size()) {
    return false;
  }
  if (!ParseInodeName(name.substr(0, prefix.size() + slash), ino)) {
    return false;
  }
  *path = rest.substr(slash + 1);
  return true;
}

inline std::string CheckedPathName(uint64_t ino, std::string_view path) {
  return absl::StrCat(kInodeNamePrefix, ino, "/",
                      absl::string_view(path.data(), path.size()));
}

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_INODE_NAME_H_
