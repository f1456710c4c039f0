// File: tests/integration/posix_semantics_ceph.h
//
// Where CephFS (through `fgds mount --backend ceph`, libcephfs 16) answers
// the POSIX scenarios differently from a local file system: for each such
// scenario and mount mode, why, the mount's failed expectations and the
// differing trace lines ("- " only on the mount, "+ " only on local), as
// posix_semantics_test.cc requires them exactly over ceph. Regenerate an
// entry with FGDS_POSIX_CEPH_DUMP=1 and check the reason still holds.
#ifndef FGDS_TESTS_INTEGRATION_POSIX_SEMANTICS_CEPH_H_
#define FGDS_TESTS_INTEGRATION_POSIX_SEMANTICS_CEPH_H_

#include <cctype>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace fgds::testing {

struct CephDifference {
  std::vector<std::string> modes;  // mount modes it holds for
  std::string scenario;
  std::string why;
  std::vector<std::string> mount_failures;
  std::vector<std::string> diff;
  // The difference comes from a lazy update in CephFS that may also have
  // landed before the scenario looks: then no difference is right too.
  bool or_none = false;
};

const std::vector<CephDifference>& CephDifferences();

// A descriptor number in a trace line ("open(...) = 4", "open(...):
// expected ..., got 4") depends on what else the process has open: lines
// are compared with it replaced by "FD".
inline std::vector<std::string> WithoutFdNumbers(
    const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (std::string line : lines) {
    if (line.find("open(") != std::string::npos) {
      size_t end = line.size();
      size_t start = end;
      while (start > 0 &&
             std::isdigit(static_cast<unsigned char>(line[start - 1]))) {
        --start;
      }
      if (start < end && start >= 2 &&
          (line.compare(start - 2, 2, "= ") == 0 ||
           line.compare(start - 2, 2, "t ") == 0)) {
        line.replace(start, end - start, "FD");
      }
    }
    out.push_back(std::move(line));
  }
  return out;
}

// The ACL scenarios act as fgds-bob, whose uid and gid useradd picks on
// each machine (995 and 994 on one, 999 and 995 on another): lines are
// compared with them written "bob" ("[bob] open(...)", "uid=bob",
// "gid=bob", and "<bob>" for the uid inside an ACL's little-endian hex).
inline std::vector<std::string> WithBobIds(std::vector<std::string> lines,
                                           unsigned uid, unsigned gid) {
  auto replace_id = [](std::string& line, const std::string& prefix,
                       unsigned id) {
    const std::string needle = prefix + std::to_string(id);
    size_t pos = 0;
    while ((pos = line.find(needle, pos)) != std::string::npos) {
      const size_t end = pos + needle.size();
      if (end < line.size() &&
          std::isdigit(static_cast<unsigned char>(line[end]))) {
        pos = end;  // a longer number that starts with the id
        continue;
      }
      line.replace(pos + prefix.size(), end - pos - prefix.size(), "bob");
      pos += prefix.size() + 3;
    }
  };
  char hex[9];
  snprintf(hex, sizeof(hex), "%02x%02x%02x%02x", uid & 0xffu,
           (uid >> 8) & 0xffu, (uid >> 16) & 0xffu, (uid >> 24) & 0xffu);
  for (std::string& line : lines) {
    replace_id(line, "[", uid);
    replace_id(line, "uid=", uid);
    replace_id(line, "gid=", gid);
    for (size_t pos = line.find(hex); pos != std::string::npos;
         pos = line.find(hex, pos)) {
      line.replace(pos, 8, "<bob>");
    }
  }
  return lines;
}

inline const CephDifference* FindCephDifference(const std::string& mode,
                                                const std::string& scenario) {
  for (const CephDifference& d : CephDifferences()) {
    if (d.scenario != scenario) continue;
    for (const std::string& m : d.modes) {
      if (m == mode) return &d;
    }
  }
  return nullptr;
}

// C++ string literal of `s`.
inline std::string CephQuote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

inline std::string DumpCephDifference(const std::string& mode,
                                      const std::string& scenario,
                                      const std::vector<std::string>& failures,
                                      const std::vector<std::string>& diff) {
  if (failures.empty() && diff.empty()) return "";
  auto list = [](const std::vector<std::string>& v) {
    std::vector<std::string> q;
    for (const auto& s : v) q.push_back("         " + CephQuote(s));
    return absl::StrCat("{\n", absl::StrJoin(q, ",\n"), "}");
  };
  return absl::StrCat("    {{\"", mode, "\"}, \"", scenario,
                      "\", \"WHY\",\n     ", list(failures), ",\n     ",
                      list(diff), "},\n");
}

inline const std::vector<CephDifference>& CephDifferences() {
  static const auto* const differences = new std::vector<CephDifference>{
      {{"Default", "WritebackCache", "DirectIo"},
       "MkdirRmdir",
       "CephFS updates a directory's mtime from its fragments' statistics "
       "lazily (scatter-gather locks): right after rmdir the parent still "
       "shows the old mtime; ceph-fuse shows the same",
       {"rmdir updates the parent's mtime"},
       {"- mtime(d) after rmdir is now: no",
        "+ mtime(d) after rmdir is now: yes"},
       /*or_none=*/true},
      {{"Default", "WritebackCache", "DirectIo"},
       "Rename",
       "a directory's nlink in CephFS is 1 + its subdirectories, counted "
       "lazily like its mtime: right after a subdirectory moves out the old "
       "parent still counts it; ceph-fuse shows the same",
       {"moving a subdirectory moves a parent link"},
       {"- lstat(p): dir 0755 nlink=3 uid=0 gid=0",
        "+ lstat(p): dir 0755 nlink=2 uid=0 gid=0"},
       /*or_none=*/true},
      {{"Default", "WritebackCache", "DirectIo"},
       "Rename2",
       "libcephfs 16 has no rename flags: RENAME_NOREPLACE and RENAME_EXCHANGE "
       "are answered EINVAL (docs/ceph.md), and the later steps see the names "
       "unmoved",
       {"renameat2(AT_FDCWD, \"e1\", AT_FDCWD, \"e3\", RENAME_NOREPLACE): "
        "expected success, got EINVAL",
        "lstat(\"e1\", &st): expected -1 ENOENT, got 0",
        "renameat2(AT_FDCWD, \"e2\", AT_FDCWD, \"e3\", RENAME_EXCHANGE): "
        "expected success, got ENOENT",
        "RENAME_EXCHANGE swapped contents",
        "renameat2(AT_FDCWD, \"e2\", AT_FDCWD, \"dir\", RENAME_EXCHANGE): "
        "expected success, got EINVAL",
        "RENAME_EXCHANGE swapped a file and a directory",
        "renameat2(AT_FDCWD, \"a/sub\", AT_FDCWD, \"b/file\", "
        "RENAME_EXCHANGE): expected success, got EINVAL"},
       {"- renameat2(AT_FDCWD, \"e1\", AT_FDCWD, \"e3\", RENAME_NOREPLACE) = "
        "-1 EINVAL",
        "- lstat(\"e1\", &st) = 0",
        "- content(e3): -1 ENOENT",
        "- renameat2(AT_FDCWD, \"e2\", AT_FDCWD, \"e3\", RENAME_EXCHANGE) = -1 "
        "ENOENT",
        "- content(e2): \"two\"",
        "+ renameat2(AT_FDCWD, \"e1\", AT_FDCWD, \"e3\", RENAME_NOREPLACE) = 0",
        "+ lstat(\"e1\", &st) = -1 ENOENT",
        "+ content(e3): \"one\"",
        "+ renameat2(AT_FDCWD, \"e2\", AT_FDCWD, \"e3\", RENAME_EXCHANGE) = 0",
        "+ content(e2): \"one\"",
        "+ content(e3): \"two\"",
        "- renameat2(AT_FDCWD, \"e2\", AT_FDCWD, \"dir\", RENAME_EXCHANGE) = "
        "-1 EINVAL",
        "- lstat(e2): reg 0644 size=3 nlink=1 uid=0 gid=0",
        "- content(e2/in): -1 ENOTDIR",
        "- content(dir): -1 EISDIR",
        "+ renameat2(AT_FDCWD, \"e2\", AT_FDCWD, \"dir\", RENAME_EXCHANGE) = 0",
        "+ lstat(e2): dir 0700 nlink=2 uid=0 gid=0",
        "+ lstat(dir): reg 0644 size=3 nlink=1 uid=0 gid=0",
        "+ content(e2/in): \"in\"",
        "+ content(dir): \"one\"",
        "- renameat2(AT_FDCWD, \"a/sub\", AT_FDCWD, \"b/file\", "
        "RENAME_EXCHANGE) = -1 EINVAL",
        "- lstat(a): dir 0755 nlink=3 uid=0 gid=0",
        "- lstat(b): dir 0755 nlink=2 uid=0 gid=0",
        "- lstat(a/sub): dir 0755 nlink=2 uid=0 gid=0",
        "- lstat(b/file): reg 0644 size=1 nlink=1 uid=0 gid=0",
        "- readdir(.): ..:dir .:dir a:dir b:dir dir:dir e1:reg e2:reg",
        "+ renameat2(AT_FDCWD, \"a/sub\", AT_FDCWD, \"b/file\", "
        "RENAME_EXCHANGE) = 0",
        "+ lstat(a): dir 0755 nlink=2 uid=0 gid=0",
        "+ lstat(b): dir 0755 nlink=3 uid=0 gid=0",
        "+ lstat(a/sub): reg 0644 size=1 nlink=1 uid=0 gid=0",
        "+ lstat(b/file): dir 0755 nlink=2 uid=0 gid=0",
        "+ readdir(.): ..:dir .:dir a:dir b:dir dir:reg e2:dir e3:reg"}},
      {{"Default", "WritebackCache", "DirectIo"},
       "Chown",
       "CephFS clears the set-group-ID bit on every chown, also of a file "
       "without group execute (where Linux's local file systems keep it); "
       "ceph-fuse shows the same",
       {},
       {"- lstat(f): reg 0745 size=1 nlink=1 uid=1001 gid=1001",
        "+ lstat(f): reg 2745 size=1 nlink=1 uid=1001 gid=1001",
        "- fstat(fd): reg 0745 size=1 nlink=1 uid=7 gid=8",
        "+ fstat(fd): reg 2745 size=1 nlink=1 uid=7 gid=8",
        "- lstat(f): reg 0745 size=1 nlink=1 uid=7 gid=8",
        "+ lstat(f): reg 2745 size=1 nlink=1 uid=7 gid=8",
        "- lstat(f): reg 0745 size=1 nlink=1 uid=13 gid=14",
        "+ lstat(f): reg 2745 size=1 nlink=1 uid=13 gid=14"}},
      {{"Default", "WritebackCache", "DirectIo"},
       "Truncate",
       "CephFS refuses files of max_file_size (1 TiB by default, a "
       "per-file-system setting) or more with EFBIG",
       {"ftruncate(fd, 1LL << 40): expected success, got EFBIG"},
       {"- ftruncate(fd, 1LL << 40) = -1 EFBIG",
        "- fstat(fd): reg 0644 size=0 nlink=1 uid=0 gid=0",
        "+ ftruncate(fd, 1LL << 40) = 0",
        "+ fstat(fd): reg 0644 size=1099511627776 nlink=1 uid=0 gid=0"}},
      {{"Default", "WritebackCache", "DirectIo"},
       "Utimens",
       "CephFS keeps times as unsigned 32-bit seconds: a time before 1970 "
       "reads back wrapped",
       {},
       {"- times(f): atime=4294867296.500000000 mtime=4000000000.000000001",
        "+ times(f): atime=-100000.500000000 mtime=4000000000.000000001"}},
      {{"Default", "WritebackCache", "DirectIo"},
       "XattrErrors",
       "CephFS answers getxattr of a name outside the known namespaces ENODATA "
       "(no such attribute), not EOPNOTSUPP",
       {"getxattr(\"f\", \"foo.bar\", buf, sizeof(buf)): expected -1 "
        "EOPNOTSUPP, got -1 ENODATA"},
       {"- getxattr(\"f\", \"foo.bar\", buf, sizeof(buf)) = -1 ENODATA",
        "+ getxattr(\"f\", \"foo.bar\", buf, sizeof(buf)) = -1 EOPNOTSUPP"}},
      {{"Default", "DirectIo"},
       "ReadWrite",
       "CephFS refuses a write past max_file_size (1 TiB by default) with "
       "EFBIG; with --writeback-cache the kernel takes the write into its "
       "cache first (not listed for that mode)",
       {"pwrite(fd, \"end\", 3, 1LL << 40): expected 3, got -1 EFBIG",
        "size after a far write", "read across the far write"},
       {"- pwrite(fd, \"end\", 3, 1LL << 40) = -1 EFBIG",
        "- fstat(fd): reg 0644 size=101 nlink=1 uid=0 gid=0",
        "- pread(fd, 10, 1099511627774) = 0", "-   data: \"\"",
        "+ pwrite(fd, \"end\", 3, 1LL << 40) = 3",
        "+ fstat(fd): reg 0644 size=1099511627779 nlink=1 uid=0 gid=0",
        "+ pread(fd, 10, 1099511627774) = 5", "+   data: \"\\000\\000end\""}},
      {{"Default", "WritebackCache", "DirectIo"},
       "SeekDataHole",
       "libcephfs 16's lseek does not look for holes: SEEK_HOLE answers the "
       "end of the file and SEEK_DATA the offset asked (the whole file is "
       "data, as POSIX allows)",
       {},
       {"- lseek(0, SEEK_HOLE) = 3145728",
        "+ lseek(0, SEEK_HOLE) = 4096",
        "- lseek(100, SEEK_HOLE) = 3145728",
        "- lseek(4096, SEEK_DATA) = 4096",
        "- lseek(4096, SEEK_HOLE) = 3145728",
        "- lseek(8192, SEEK_DATA) = 8192",
        "- lseek(8192, SEEK_HOLE) = 3145728",
        "- lseek(524288, SEEK_DATA) = 524288",
        "- lseek(524288, SEEK_HOLE) = 3145728",
        "+ lseek(100, SEEK_HOLE) = 4096",
        "+ lseek(4096, SEEK_DATA) = 1048576",
        "+ lseek(4096, SEEK_HOLE) = 4096",
        "+ lseek(8192, SEEK_DATA) = 1048576",
        "+ lseek(8192, SEEK_HOLE) = 8192",
        "+ lseek(524288, SEEK_DATA) = 1048576",
        "+ lseek(524288, SEEK_HOLE) = 524288",
        "- lseek(1048576, SEEK_HOLE) = 3145728",
        "+ lseek(1048576, SEEK_HOLE) = 1052672",
        "- lseek(1048676, SEEK_HOLE) = 3145728",
        "- lseek(1052672, SEEK_DATA) = 1052672",
        "- lseek(1052672, SEEK_HOLE) = 3145728",
        "- lseek(2097152, SEEK_DATA) = 2097152",
        "- lseek(2097152, SEEK_HOLE) = 3145728",
        "- lseek(3145727, SEEK_DATA) = 3145727",
        "- lseek(3145727, SEEK_HOLE) = 3145728",
        "+ lseek(1048676, SEEK_HOLE) = 1052672",
        "+ lseek(1052672, SEEK_DATA) = -1 ENXIO",
        "+ lseek(1052672, SEEK_HOLE) = 1052672",
        "+ lseek(2097152, SEEK_DATA) = -1 ENXIO",
        "+ lseek(2097152, SEEK_HOLE) = 2097152",
        "+ lseek(3145727, SEEK_DATA) = -1 ENXIO",
        "+ lseek(3145727, SEEK_HOLE) = 3145727",
        "- lseek(0, SEEK_DATA) = 0",
        "- lseek(0, SEEK_HOLE) = 1048576",
        "- lseek(4096, SEEK_DATA) = 4096",
        "- lseek(4096, SEEK_HOLE) = 1048576",
        "+ lseek(0, SEEK_DATA) = -1 ENXIO",
        "+ lseek(0, SEEK_HOLE) = 0",
        "+ lseek(4096, SEEK_DATA) = -1 ENXIO",
        "+ lseek(4096, SEEK_HOLE) = 4096"}},
      {{"Default", "WritebackCache", "DirectIo"},
       "AclNamedUsers",
       "no POSIX ACLs over ceph (libcephfs runs without client_acl_type, "
       "docs/ceph.md): setting one is EOPNOTSUPP, reading ENODATA, and the "
       "mode bits alone decide",
       {"setxattr(\"deny\", kAclAccess, deny.data(), deny.size(), 0): expected "
        "success, got EOPNOTSUPP",
        "setxattr(\"grant\", kAclAccess, grant.data(), grant.size(), 0): "
        "expected success, got EOPNOTSUPP",
        "mode shows the mask",
        "[bob] open(\"deny\", O_RDONLY): expected -1 EACCES, got 4",
        "[bob] access(\"deny\", R_OK): expected -1 EACCES, got 0",
        "[bob] open(\"grant\", O_RDONLY): expected success, got EACCES",
        "[bob] close(static_cast<int>(fd)): expected success, got EBADF",
        "removexattr(\"deny\", kAclAccess): expected success, got ENODATA",
        "[bob] setxattr(\"sgid\", kAclAccess, own.data(), own.size(), 0): "
        "expected success, got EOPNOTSUPP",
        "S_ISGID dropped",
        "setxattr(\"sgid\", kAclAccess, own.data(), own.size(), 0): expected "
        "success, got EOPNOTSUPP"},
       {"- setxattr(\"deny\", kAclAccess, deny.data(), deny.size(), 0) = -1 "
        "EOPNOTSUPP",
        "+ setxattr(\"deny\", kAclAccess, deny.data(), deny.size(), 0) = 0",
        "- setxattr(\"grant\", kAclAccess, grant.data(), grant.size(), 0) = -1 "
        "EOPNOTSUPP",
        "- lstat(grant): reg 0600 size=1 nlink=1 uid=0 gid=0",
        "- system.posix_acl_access of deny: errno 61",
        "- system.posix_acl_access of grant: errno 61",
        "- [bob] open(\"deny\", O_RDONLY) = 4",
        "- [bob] access(\"deny\", R_OK) = 0",
        "- [bob] open(\"grant\", O_RDONLY) = -1 EACCES",
        "- [bob] close(static_cast<int>(fd)) = -1 EBADF",
        "+ setxattr(\"grant\", kAclAccess, grant.data(), grant.size(), 0) = 0",
        "+ lstat(grant): reg 0640 size=1 nlink=1 uid=0 gid=0",
        "+ system.posix_acl_access of deny: "
        "0200000001000600ffffffff02000000<bob>04000400ffffffff10000400ffffff"
        "ff20000400ffffffff",
        "+ system.posix_acl_access of grant: "
        "0200000001000600ffffffff02000400<bob>04000000ffffffff10000400ffffff"
        "ff20000000ffffffff",
        "+ [bob] open(\"deny\", O_RDONLY) = -1 EACCES",
        "+ [bob] access(\"deny\", R_OK) = -1 EACCES",
        "+ [bob] open(\"grant\", O_RDONLY) = 4",
        "+ [bob] close(static_cast<int>(fd)) = 0",
        "- system.posix_acl_access of grant: errno 61",
        "+ system.posix_acl_access of grant: "
        "0200000001000600ffffffff02000400<bob>04000000ffffffff10000000ffffff"
        "ff20000000ffffffff",
        "- removexattr(\"deny\", kAclAccess) = -1 ENODATA",
        "+ removexattr(\"deny\", kAclAccess) = 0",
        "- [bob] setxattr(\"sgid\", kAclAccess, own.data(), own.size(), 0) = "
        "-1 EOPNOTSUPP",
        "- lstat(sgid): reg 2755 size=1 nlink=1 uid=bob gid=0",
        "+ [bob] setxattr(\"sgid\", kAclAccess, own.data(), own.size(), 0) = 0",
        "+ lstat(sgid): reg 0755 size=1 nlink=1 uid=bob gid=0",
        "- setxattr(\"sgid\", kAclAccess, own.data(), own.size(), 0) = -1 "
        "EOPNOTSUPP",
        "+ setxattr(\"sgid\", kAclAccess, own.data(), own.size(), 0) = 0"}},
      {{"Default", "WritebackCache", "DirectIo"},
       "AclDefaultInheritance",
       "no POSIX ACLs over ceph (libcephfs runs without client_acl_type, "
       "docs/ceph.md): setting one is EOPNOTSUPP, so nothing is inherited",
       {"setxattr(\"inherit\", kAclAccess, acl.data(), acl.size(), 0): "
        "expected success, got EOPNOTSUPP",
        "setxattr(\"inherit\", kAclDefault, acl.data(), acl.size(), 0): "
        "expected success, got EOPNOTSUPP",
        "[bob] open(\"inherit/f\", O_CREAT | O_EXCL | O_WRONLY, 0666): "
        "expected success, got EACCES",
        "[bob] close(static_cast<int>(fd)): expected success, got EBADF",
        "[bob] mkdir(\"inherit/d\", 0777): expected success, got EACCES",
        "[bob] mknod(\"inherit/p\", S_IFIFO | 0666, 0): expected success, got "
        "EACCES",
        "default ACL, not the umask", "default ACL, not the umask"},
       {"- setxattr(\"inherit\", kAclAccess, acl.data(), acl.size(), 0) = -1 "
        "EOPNOTSUPP",
        "- setxattr(\"inherit\", kAclDefault, acl.data(), acl.size(), 0) = -1 "
        "EOPNOTSUPP",
        "+ setxattr(\"inherit\", kAclAccess, acl.data(), acl.size(), 0) = 0",
        "+ setxattr(\"inherit\", kAclDefault, acl.data(), acl.size(), 0) = 0",
        "- [bob] open(\"inherit/f\", O_CREAT | O_EXCL | O_WRONLY, 0666) = -1 "
        "EACCES",
        "- [bob] close(static_cast<int>(fd)) = -1 EBADF",
        "- [bob] mkdir(\"inherit/d\", 0777) = -1 EACCES",
        "- [bob] mknod(\"inherit/p\", S_IFIFO | 0666, 0) = -1 EACCES",
        "+ [bob] open(\"inherit/f\", O_CREAT | O_EXCL | O_WRONLY, 0666) = 4",
        "+ [bob] close(static_cast<int>(fd)) = 0",
        "+ [bob] mkdir(\"inherit/d\", 0777) = 0",
        "+ [bob] mknod(\"inherit/p\", S_IFIFO | 0666, 0) = 0",
        "- lstat(inherit/f): -1 ENOENT",
        "- lstat(inherit/d): -1 ENOENT",
        "- lstat(inherit/p): -1 ENOENT",
        "+ lstat(inherit/f): reg 0664 size=0 nlink=1 uid=bob gid=bob",
        "+ lstat(inherit/d): dir 0775 nlink=2 uid=bob gid=bob",
        "+ lstat(inherit/p): fifo 0664 size=0 nlink=1 uid=bob gid=bob",
        "- system.posix_acl_access of inherit/f: errno 2",
        "- system.posix_acl_access of inherit/d: errno 2",
        "- system.posix_acl_access of inherit/p: errno 2",
        "- system.posix_acl_default of inherit/d: errno 2",
        "+ system.posix_acl_access of inherit/f: "
        "0200000001000600ffffffff02000700<bob>04000500ffffffff10000600ffffff"
        "ff20000400ffffffff",
        "+ system.posix_acl_access of inherit/d: "
        "0200000001000700ffffffff02000700<bob>04000500ffffffff10000700ffffff"
        "ff20000500ffffffff",
        "+ system.posix_acl_access of inherit/p: "
        "0200000001000600ffffffff02000700<bob>04000500ffffffff10000600ffffff"
        "ff20000400ffffffff",
        "+ system.posix_acl_default of inherit/d: "
        "0200000001000700ffffffff02000700<bob>04000500ffffffff10000700ffffff"
        "ff20000500ffffffff"}},
  };
  return *differences;
}

}  // namespace fgds::testing

#endif  // FGDS_TESTS_INTEGRATION_POSIX_SEMANTICS_CEPH_H_
