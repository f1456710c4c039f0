#include "tools/probe/host_fs.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace fgds::probe {

HostFs::HostFs(std::string root) : root_(std::move(root)) {
  char resolved[PATH_MAX];
  if (!root_.empty() && realpath(root_.c_str(), resolved) != nullptr) {
    root_ = resolved;
  }
  while (!root_.empty() && root_.back() == '/') root_.pop_back();
}

std::string HostFs::Path(absl::string_view host_path) const {
  return absl::StrCat(root_, host_path);
}

absl::StatusOr<std::string> HostFs::Read(absl::string_view host_path) const {
  std::string path = Path(host_path);
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "re"),
                                             &std::fclose);
  if (file == nullptr) return absl::ErrnoToStatus(errno, path);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), file.get())) > 0) {
    text.append(buf, n);
  }
  if (std::ferror(file.get())) return absl::ErrnoToStatus(errno, path);
  return text;
}

std::string HostFs::ReadLine(absl::string_view host_path,
                             absl::string_view fallback) const {
  absl::StatusOr<std::string> text = Read(host_path);
  if (!text.ok()) return std::string(fallback);
  absl::string_view line = *text;
  line = line.substr(0, line.find('\n'));
  return std::string(absl::StripAsciiWhitespace(line));
}

absl::StatusOr<std::vector<std::string>> HostFs::List(
    absl::string_view host_path) const {
  std::string path = Path(host_path);
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir(path.c_str()), &closedir);
  if (dir == nullptr) return absl::ErrnoToStatus(errno, path);
  std::vector<std::string> names;
  while (dirent* entry = readdir(dir.get())) {
    absl::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    names.emplace_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool HostFs::Exists(absl::string_view host_path) const {
  struct stat st;
  return stat(Path(host_path).c_str(), &st) == 0;
}

absl::StatusOr<std::string> HostFs::RealPath(
    absl::string_view host_path) const {
  std::string path = Path(host_path);
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) {
    return absl::ErrnoToStatus(errno, path);
  }
  absl::string_view result = resolved;
  if (!root_.empty()) {
    if (!absl::ConsumePrefix(&result, root_) ||
        (!result.empty() && result[0] != '/')) {
      return absl::OutOfRangeError(
          absl::StrCat(path, " resolves outside ", root_));
    }
  }
  return std::string(result.empty() ? "/" : result);
}

}  // namespace fgds::probe
