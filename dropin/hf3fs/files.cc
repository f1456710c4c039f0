// hf3fs_reg_fd / hf3fs_dereg_fd: a process-wide table from fd to the
// session and id usrbio registered it under.
#include <unistd.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <string>

#include "dropin/hf3fs/handles.h"
#include "dropin/hf3fs/include/hf3fs_usrbio.h"
#include "dropin/hf3fs/mounts.h"

namespace fgds::hf3fs {
namespace {

struct FileTable {
  std::mutex mu;
  std::map<int, RegisteredFile> by_fd;
};

FileTable& Files() {
  static FileTable* table = new FileTable();  // never destroyed
  return *table;
}

}  // namespace

bool FindFile(int fd, RegisteredFile* file) {
  FileTable& table = Files();
  std::lock_guard<std::mutex> lock(table.mu);
  auto it = table.by_fd.find(fd);
  if (it == table.by_fd.end()) return false;
  *file = it->second;
  return true;
}

}  // namespace fgds::hf3fs

using fgds::hf3fs::RegisteredFile;

extern "C" {

int hf3fs_reg_fd(int fd, uint64_t flags) {
  // 3FS's convention: <= 0 on success, a positive errno on failure.
  if (flags != 0) return EINVAL;
  if (fd < 0) return EBADF;
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  int error = 0;
  fgds_session* session = fgds::hf3fs::AcquireSession(link.c_str(), &error);
  if (session == nullptr) return error == -ENOTSUP ? EINVAL : -error;
  auto& table = fgds::hf3fs::Files();
  std::lock_guard<std::mutex> lock(table.mu);
  if (table.by_fd.count(fd) != 0) {
    // 3FS: a registered fd number registers again only after dereg.
    fgds::hf3fs::ReleaseSession(session);
    return EINVAL;
  }
  const int id = fgds_fd_register(session, fd, 0);
  if (id < 0) {
    fgds::hf3fs::ReleaseSession(session);
    return -id;
  }
  table.by_fd[fd] = RegisteredFile{session, id};
  return 0;
}

void hf3fs_dereg_fd(int fd) {
  RegisteredFile file;
  {
    auto& table = fgds::hf3fs::Files();
    std::lock_guard<std::mutex> lock(table.mu);
    auto it = table.by_fd.find(fd);
    if (it == table.by_fd.end()) return;
    file = it->second;
    table.by_fd.erase(it);
  }
  fgds_fd_unregister(file.session, file.id);
  fgds::hf3fs::ReleaseSession(file.session);
}

}  // extern "C"
