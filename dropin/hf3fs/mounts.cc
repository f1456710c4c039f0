#include "dropin/hf3fs/mounts.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <memory>
#include <mutex>

namespace fgds::hf3fs {
namespace {

struct SharedSession {
  fgds_session session = {};
  int users = 0;
};

struct SessionTable {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<SharedSession>> by_root;
};

SessionTable& Sessions() {
  static SessionTable* table = new SessionTable();  // never destroyed
  return *table;
}

// ParentOf("/a/b") is "/a"; ParentOf("/a") is "/".
std::string ParentOf(const std::string& dir) {
  const size_t slash = dir.rfind('/');
  return slash == 0 || slash == std::string::npos ? std::string("/")
                                                  : std::string(dir, 0, slash);
}

}  // namespace

std::string MountRootOf(const std::string& path) {
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) return "";
  struct stat st;
  if (stat(resolved, &st) != 0) return "";
  std::string dir(resolved);
  if (!S_ISDIR(st.st_mode)) dir = ParentOf(dir);
  // Walk up while the file system stays the same: its top is the root.
  while (dir != "/") {
    const std::string parent = ParentOf(dir);
    struct stat here, above;
    if (stat(dir.c_str(), &here) != 0 || stat(parent.c_str(), &above) != 0) {
      return "";
    }
    if (here.st_dev != above.st_dev) break;
    dir = parent;
  }
  return access((dir + "/.fgds/session").c_str(), F_OK) == 0 ? dir : "";
}

fgds_session* AcquireSession(const char* path, int* error) {
  if (path == nullptr) {
    *error = -EINVAL;
    return nullptr;
  }
  const std::string root = MountRootOf(path);
  if (root.empty()) {
    *error = -ENOTSUP;
    return nullptr;
  }
  SessionTable& table = Sessions();
  std::lock_guard<std::mutex> lock(table.mu);
  auto& shared = table.by_root[root];
  if (shared == nullptr) {
    auto created = std::make_unique<SharedSession>();
    if (int ret = fgds_session_open(&created->session, root.c_str(), nullptr);
        ret != 0) {
      table.by_root.erase(root);
      *error = ret;
      return nullptr;
    }
    shared = std::move(created);
  }
  ++shared->users;
  return &shared->session;
}

void ReleaseSession(fgds_session* session) {
  SessionTable& table = Sessions();
  std::lock_guard<std::mutex> lock(table.mu);
  for (auto it = table.by_root.begin(); it != table.by_root.end(); ++it) {
    if (&it->second->session != session) continue;
    if (--it->second->users == 0) {
      fgds_session_close(&it->second->session);
      table.by_root.erase(it);
    }
    return;
  }
}

}  // namespace fgds::hf3fs
