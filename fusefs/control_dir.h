// File: fusefs/control_dir.h
//
// ControlDir: the hidden control directory /.fgds at the mount root. It is
// not listed by readdir and cannot be created, renamed or removed by anyone,
// but it is reachable by name. It holds read-only virtual files whose
// content is produced when they are opened (e.g. `stats`). Their node ids
// are below backend::kFirstNodeId, which no backend hands out.
//
// Thread safety: AddFile only before serving; everything else is const and
// may be called from any thread.
#ifndef FGDS_FUSEFS_CONTROL_DIR_H_
#define FGDS_FUSEFS_CONTROL_DIR_H_

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace fgds::fusefs {

inline constexpr absl::string_view kControlDirName = ".fgds";
inline constexpr uint64_t kControlDirNode = 2;

// True for every id in the range reserved for control nodes.
bool IsControlNode(uint64_t node);
// True for the control directory's own name under the mount root (so users
// can neither create nor remove it).
bool IsReservedName(uint64_t parent, const char* name);

class ControlDir {
 public:
  using Producer = std::function<std::string()>;

  // Adds /.fgds/<name>, whose content `produce` returns at each open.
  void AddFile(std::string name, Producer produce);

  // The node of `name` under `parent`, or 0 if there is none.
  uint64_t Lookup(uint64_t parent, const char* name) const;
  // Attributes of a control node (owned by root, read-only, size 0: read
  // until end of file, as with /proc).
  struct stat Attr(uint64_t node) const;
  // Whether `node` is one of the files (not the directory).
  bool IsFile(uint64_t node) const;
  // A fresh snapshot of a file's content.
  std::string Content(uint64_t node) const;

  // The files, in readdir order, with their nodes.
  size_t file_count() const { return files_.size(); }
  const std::string& file_name(size_t i) const { return files_[i].name; }
  static uint64_t FileNode(size_t i) { return kControlDirNode + 1 + i; }

 private:
  struct File {
    std::string name;
    Producer produce;
  };
  std::vector<File> files_;
  time_t created_ = time(nullptr);
};

}  // namespace fgds::fusefs

#endif  // FGDS_FUSEFS_CONTROL_DIR_H_
