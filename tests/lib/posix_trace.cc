#include "tests/lib/posix_trace.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace fgds::testing {
namespace {

// Contents up to this size are recorded verbatim.
constexpr size_t kVerbatimLimit = 64;

const char* TypeName(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return "reg";
    case S_IFDIR:
      return "dir";
    case S_IFLNK:
      return "lnk";
    case S_IFIFO:
      return "fifo";
    case S_IFSOCK:
      return "sock";
    case S_IFCHR:
      return "chr";
    case S_IFBLK:
      return "blk";
  }
  return "?";
}

const char* DirentTypeName(unsigned char type) {
  switch (type) {
    case DT_REG:
      return "reg";
    case DT_DIR:
      return "dir";
    case DT_LNK:
      return "lnk";
    case DT_FIFO:
      return "fifo";
    case DT_SOCK:
      return "sock";
    case DT_CHR:
      return "chr";
    case DT_BLK:
      return "blk";
    case DT_UNKNOWN:
      return "unknown";
  }
  return "?";
}

std::string Failed(int err) { return absl::StrCat("-1 ", ErrnoName(err)); }

// A path as it appears in a label: escaped, long names shortened.
std::string Shown(const char* path) {
  std::string escaped = absl::CEscape(path);
  if (escaped.size() <= 48) return escaped;
  return absl::StrCat(escaped.substr(0, 40), "...(", strlen(path), " bytes)");
}

uint64_t Fnv1a(absl::string_view data) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// "len=N runs=data@0+4096,zero@4096+8192 fnv=..." : the run layout makes a
// wrong hole or a lost write readable in a failure message.
std::string Summarize(absl::string_view data) {
  if (data.size() <= kVerbatimLimit) {
    return absl::StrCat("\"", absl::CEscape(data), "\"");
  }
  std::vector<std::string> runs;
  size_t start = 0;
  for (size_t i = 1; i <= data.size(); ++i) {
    if (i == data.size() || (data[i] == 0) != (data[start] == 0)) {
      if (runs.size() < 16) {
        runs.push_back(absl::StrCat(data[start] == 0 ? "zero@" : "data@", start,
                                    "+", i - start));
      } else if (runs.size() == 16) {
        runs.push_back("...");
      }
      start = i;
    }
  }
  return absl::StrFormat("len=%d runs=%s fnv=%016x", data.size(),
                         absl::StrJoin(runs, ","), Fnv1a(data));
}

}  // namespace

std::string ErrnoName(int err) {
  if (err == 0) return "OK";
  const char* name = strerrorname_np(err);
  return name != nullptr ? name : absl::StrCat("errno ", err);
}

std::string DescribeStat(const struct stat& st) {
  std::string out =
      absl::StrFormat("%s %04o", TypeName(st.st_mode), st.st_mode & 07777);
  if (!S_ISDIR(st.st_mode)) absl::StrAppend(&out, " size=", st.st_size);
  absl::StrAppend(&out, " nlink=", st.st_nlink, " uid=", st.st_uid,
                  " gid=", st.st_gid);
  return out;
}

SysResult Trace::Record(absl::string_view label, long rc, int err) {
  lines_.push_back(
      absl::StrCat(label, " = ", rc < 0 ? Failed(err) : absl::StrCat(rc)));
  return SysResult{std::string(label), rc, err};
}

void Trace::Note(absl::string_view label, absl::string_view value) {
  lines_.push_back(absl::StrCat(label, ": ", value));
}

std::optional<struct stat> Trace::Stat(const char* path) {
  struct stat st;
  if (stat(path, &st) != 0) {
    Note(absl::StrCat("stat(", Shown(path), ")"), Failed(errno));
    return std::nullopt;
  }
  Note(absl::StrCat("stat(", Shown(path), ")"), DescribeStat(st));
  return st;
}

std::optional<struct stat> Trace::Lstat(const char* path) {
  struct stat st;
  if (lstat(path, &st) != 0) {
    Note(absl::StrCat("lstat(", Shown(path), ")"), Failed(errno));
    return std::nullopt;
  }
  Note(absl::StrCat("lstat(", Shown(path), ")"), DescribeStat(st));
  return st;
}

std::optional<struct stat> Trace::Fstat(int fd, absl::string_view label) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    Note(absl::StrCat("fstat(", label, ")"), Failed(errno));
    return std::nullopt;
  }
  Note(absl::StrCat("fstat(", label, ")"), DescribeStat(st));
  return st;
}

void Trace::Times(const char* path) {
  struct stat st;
  std::string label = absl::StrCat("times(", Shown(path), ")");
  if (lstat(path, &st) != 0) return Note(label, Failed(errno));
  Note(label, absl::StrFormat("atime=%d.%09d mtime=%d.%09d", st.st_atim.tv_sec,
                              st.st_atim.tv_nsec, st.st_mtim.tv_sec,
                              st.st_mtim.tv_nsec));
}

void Trace::ReadDir(const char* path) {
  std::string label = absl::StrCat("readdir(", Shown(path), ")");
  DIR* dir = opendir(path);
  if (dir == nullptr) return Note(label, Failed(errno));
  std::vector<std::string> entries;
  errno = 0;
  while (struct dirent* e = readdir(dir)) {
    entries.push_back(
        absl::StrCat(absl::CEscape(e->d_name), ":", DirentTypeName(e->d_type)));
  }
  int err = errno;
  closedir(dir);
  if (err != 0) return Note(label, Failed(err));
  // Order is the filesystem's hash order, which differs between any two
  // directories; only the set of entries is specified.
  std::sort(entries.begin(), entries.end());
  Note(label, absl::StrJoin(entries, " "));
}

std::string Trace::Content(const char* path) {
  std::string label = absl::StrCat("content(", Shown(path), ")");
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    Note(label, Failed(errno));
    return "";
  }
  std::string data = ContentFd(fd, label);
  close(fd);
  return data;
}

std::string Trace::ContentFd(int fd, absl::string_view label) {
  std::string data;
  char buf[65536];
  for (off_t off = 0;;) {
    ssize_t n = pread(fd, buf, sizeof(buf), off);
    if (n < 0) {
      Note(label, Failed(errno));
      return data;
    }
    if (n == 0) break;
    data.append(buf, n);
    off += n;
  }
  Note(label, Summarize(data));
  return data;
}

void Trace::UserXattrs(const char* path) {
  std::string label = absl::StrCat("user xattrs(", Shown(path), ")");
  char buf[65536];
  ssize_t n = llistxattr(path, buf, sizeof(buf));
  if (n < 0) return Note(label, Failed(errno));
  std::vector<std::string> names;
  for (ssize_t i = 0; i < n; i += strlen(buf + i) + 1) {
    if (strncmp(buf + i, "user.", 5) == 0) names.push_back(buf + i);
  }
  std::sort(names.begin(), names.end());
  Note(label, absl::StrJoin(names, " "));
}

SysResult Trace::CreateFile(const char* path, absl::string_view data,
                            mode_t mode) {
  std::string label = absl::StrFormat("create(%s, %d bytes, %04o)", Shown(path),
                                      data.size(), mode);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
  if (fd < 0) return Record(label, -1, errno);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      close(fd);
      return Record(label, -1, err);
    }
    done += n;
  }
  if (close(fd) != 0) return Record(label, -1, errno);
  return Record(label, 0, 0);
}

void Trace::Expect(bool cond, absl::string_view what) {
  if (!cond) failures_.push_back(std::string(what));
}

void Trace::ExpectOk(const SysResult& r) {
  Expect(r.ok(),
         absl::StrCat(r.label, ": expected success, got ", ErrnoName(r.err)));
}

void Trace::ExpectRc(const SysResult& r, long rc) {
  Expect(r.rc == rc,
         absl::StrCat(r.label, ": expected ", rc, ", got ",
                      r.rc < 0 ? Failed(r.err) : absl::StrCat(r.rc)));
}

void Trace::ExpectErrno(const SysResult& r, int err) {
  ExpectErrnoIn(r, {err});
}

void Trace::ExpectErrnoIn(const SysResult& r, std::initializer_list<int> errs) {
  bool match =
      r.rc < 0 && std::find(errs.begin(), errs.end(), r.err) != errs.end();
  std::vector<std::string> names;
  for (int e : errs) names.push_back(ErrnoName(e));
  Expect(match,
         absl::StrCat(r.label, ": expected -1 ", absl::StrJoin(names, " or "),
                      ", got ", r.rc < 0 ? Failed(r.err) : absl::StrCat(r.rc)));
}

std::string Pattern(size_t len, int seed) {
  std::string out(len, '\0');
  for (size_t i = 0; i < len; ++i) {
    out[i] = static_cast<char>('A' + (i * 7 + seed * 13 + i / 251) % 58);
  }
  return out;
}

std::string DiffTraces(const Trace& a, absl::string_view a_name, const Trace& b,
                       absl::string_view b_name) {
  // A line diff (longest common subsequence), so one extra or missing step
  // does not misalign everything after it. Traces are a few hundred lines.
  const auto& x = a.lines();
  const auto& y = b.lines();
  const size_t n = x.size(), m = y.size();
  std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      lcs[i][j] = x[i] == y[j] ? lcs[i + 1][j + 1] + 1
                               : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  std::string out = absl::StrCat("  trace diff: '-' only on ", a_name,
                                 ", '+' only on ", b_name, "\n");
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] == y[j]) {
      absl::StrAppend(&out, "    ", x[i], "\n");
      ++i;
      ++j;
    } else if (j == m || (i < n && lcs[i + 1][j] >= lcs[i][j + 1])) {
      absl::StrAppend(&out, "  - ", x[i], "\n");
      ++i;
    } else {
      absl::StrAppend(&out, "  + ", y[j], "\n");
      ++j;
    }
  }
  return out;
}

}  // namespace fgds::testing
