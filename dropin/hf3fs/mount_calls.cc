// The hf3fs calls about mounts and namespace: is_hf3fs,
// extract_mount_point, hardlink, punchhole. hardlink and punchhole return
// 0 or a positive errno, as 3FS's do.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "dropin/hf3fs/include/hf3fs_usrbio.h"
#include "dropin/hf3fs/mounts.h"

extern "C" {

bool hf3fs_is_hf3fs(int fd) {
  if (fd < 0) return false;
  return !fgds::hf3fs::MountRootOf("/proc/self/fd/" + std::to_string(fd))
              .empty();
}

int hf3fs_extract_mount_point(char* hf3fs_mount_point, int size,
                              const char* path) {
  if (path == nullptr) return -1;
  const std::string root = fgds::hf3fs::MountRootOf(path);
  if (root.empty()) return -1;
  const int needed = static_cast<int>(root.size()) + 1;
  if (hf3fs_mount_point != nullptr && needed <= size) {
    std::memcpy(hf3fs_mount_point, root.c_str(), root.size() + 1);
  }
  return needed;
}

int hf3fs_hardlink(const char* target, const char* link_name) {
  if (target == nullptr || link_name == nullptr) return EINVAL;
  return link(target, link_name) == 0 ? 0 : errno;
}

int hf3fs_punchhole(int fd, int n, const size_t* start, const size_t* end,
                    size_t flags) {
  if (n < 0 || (n > 0 && (start == nullptr || end == nullptr)) || flags != 0) {
    return EINVAL;
  }
  for (int i = 0; i < n; ++i) {
    if (end[i] < start[i]) return EINVAL;
    if (end[i] == start[i]) continue;
    if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  static_cast<off_t>(start[i]),
                  static_cast<off_t>(end[i] - start[i])) != 0) {
      return errno;
    }
  }
  return 0;
}

}  // extern "C"
