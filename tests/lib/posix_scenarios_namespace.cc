// Scenarios for the namespace: lookup/stat, mkdir/rmdir, mknod and readdir.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tests/lib/posix_scenarios.h"

namespace fgds::testing {
namespace {

void LookupStat(Trace& t) {
  t.ExpectOk(t.CreateFile("f", "hello"));
  t.ExpectOk(FGDS_SYS(t, mkdir("d", 0755)));
  t.ExpectOk(FGDS_SYS(t, symlink("f", "l")));
  t.ExpectOk(FGDS_SYS(t, symlink("d", "ld")));
  auto f = t.Stat("f");
  t.Expect(IsA(f, S_IFREG, 0644) && f->st_size == 5 && f->st_nlink == 1 &&
               f->st_uid == 0 && f->st_gid == 0,
           "f is a 0644 regular file of 5 bytes, nlink 1, owned by root");
  t.Expect(IsA(t.Stat("d"), S_IFDIR, 0755), "d is a 0755 directory");
  auto l = t.Lstat("l");
  t.Expect(IsA(l, S_IFLNK, 0777) && l->st_size == 1,
           "lstat(l) is the symlink itself, size = strlen(target)");
  t.Expect(IsA(t.Stat("l"), S_IFREG, 0644), "stat(l) follows to f");
  t.Expect(IsA(t.Stat("ld"), S_IFDIR, 0755), "stat(ld) follows to d");
  t.Stat(".");
  t.Stat("d/.");
  t.Stat("d/..");
  t.Stat("d/../f");
  t.Note("d/../f is f", YesNo(SameInode("d/../f", "f")));
  t.Note("ld/. is d", YesNo(SameInode("ld/.", "d")));
  struct stat st;
  t.ExpectErrno(FGDS_SYS(t, stat("missing", &st)), ENOENT);
  t.ExpectErrno(FGDS_SYS(t, stat("d/missing/x", &st)), ENOENT);
  t.ExpectErrno(FGDS_SYS(t, stat("", &st)), ENOENT);
  t.ExpectErrno(FGDS_SYS(t, stat("f/", &st)), ENOTDIR);
  t.ExpectErrno(FGDS_SYS(t, stat("f/x", &st)), ENOTDIR);
  t.ExpectOk(FGDS_SYS(t, stat("d/", &st)));
  t.ExpectOk(FGDS_SYS(t, fstatat(AT_FDCWD, "l", &st, AT_SYMLINK_NOFOLLOW)));
  t.ExpectOk(FGDS_SYS(t, access("f", R_OK | W_OK)));
  // Root may execute only files with at least one x bit.
  t.ExpectErrno(FGDS_SYS(t, access("f", X_OK)), EACCES);
  t.ExpectOk(FGDS_SYS(t, access("d", X_OK)));
  t.ExpectErrno(FGDS_SYS(t, access("missing", F_OK)), ENOENT);
  // A lookup of a name that was just created and removed must not be
  // answered from a stale cache.
  t.ExpectOk(FGDS_SYS(t, unlink("f")));
  t.ExpectErrno(FGDS_SYS(t, stat("f", &st)), ENOENT);
  t.ExpectErrno(FGDS_SYS(t, stat("l", &st)), ENOENT);
  t.ExpectOk(t.CreateFile("f", "again!"));
  t.Stat("l");
  // Names are bytes: spaces, control characters, UTF-8, format specifiers.
  // (octal escapes: a hex escape would swallow the letters after it)
  for (const char* name : {"with space", "new\nline", "tab\there", "\001ctrl",
                           "\303\274n\303\257c\303\266de", "%s%n%x",
                           "back\\slash", "-dash", "...", " "}) {
    t.ExpectOk(t.CreateFile(name, name));
  }
  std::string utf8_max;
  while (utf8_max.size() + 2 <= 255) utf8_max += "\xc3\xa9";  // 254 bytes
  t.ExpectOk(t.CreateFile(utf8_max.c_str(), "long utf-8"));
  t.Content("new\nline");
  t.Content(utf8_max.c_str());
  // Below the mount root, ".fgds" is an ordinary name.
  t.ExpectOk(FGDS_SYS(t, mkdir(".fgds", 0755)));
  t.ExpectOk(t.CreateFile("d/.fgds", "plain file"));
  t.Expect(IsA(t.Lstat(".fgds"), S_IFDIR, 0755), ".fgds is a plain dir here");
  t.Content("d/.fgds");
  t.ReadDir(".");
  t.ReadDir("d");
}

void MkdirRmdir(Trace& t) {
  t.ExpectOk(FGDS_SYS(t, mkdir("d", 0755)));
  t.ExpectErrno(FGDS_SYS(t, mkdir("d", 0755)), EEXIST);
  t.ExpectOk(FGDS_SYS(t, mkdir("d/sub", 0700)));
  auto d = t.Lstat("d");
  t.Expect(d && d->st_nlink == 3, "a subdirectory adds a link to d");
  t.Expect(IsA(t.Lstat("d/sub"), S_IFDIR, 0700), "d/sub has mode 0700");
  t.Expect(IsA(t.Lstat("."), S_IFDIR, 0755), "scenario root is 0755");
  // umask 022 applies; set-id bits are dropped by mkdir; sticky stays.
  t.ExpectOk(FGDS_SYS(t, mkdir("m", 0777)));
  t.Expect(IsA(t.Lstat("m"), S_IFDIR, 0755), "umask applies to mkdir");
  t.ExpectOk(FGDS_SYS(t, mkdir("s", 01777)));
  t.Expect(IsA(t.Lstat("s"), S_IFDIR, 01755), "mkdir keeps the sticky bit");
  t.ExpectOk(FGDS_SYS(t, mkdir("g", 06777)));
  t.Lstat("g");
  t.ExpectOk(FGDS_SYS(t, mkdir("trail/", 0755)));
  t.Lstat("trail");
  t.ExpectOk(t.CreateFile("f", "x"));
  t.ExpectErrno(FGDS_SYS(t, mkdir("f", 0755)), EEXIST);
  t.ExpectErrno(FGDS_SYS(t, mkdir("missing/x", 0755)), ENOENT);
  t.ExpectErrno(FGDS_SYS(t, mkdir("f/x", 0755)), ENOTDIR);
  t.ExpectErrno(FGDS_SYS(t, mkdir(TooLongName(), 0755)), ENAMETOOLONG);
  t.ExpectOk(FGDS_SYS(t, mkdir(std::string(255, 'm').c_str(), 0755)));
  t.ExpectOk(FGDS_SYS(t, symlink("d", "ld")));
  t.ExpectErrno(FGDS_SYS(t, mkdir("ld", 0755)), EEXIST);

  t.ExpectErrnoIn(FGDS_SYS(t, rmdir("d")), {ENOTEMPTY, EEXIST});
  t.ExpectErrno(FGDS_SYS(t, rmdir("f")), ENOTDIR);
  t.ExpectErrno(FGDS_SYS(t, rmdir("ld")), ENOTDIR);
  t.ExpectErrno(FGDS_SYS(t, rmdir(".")), EINVAL);
  t.ExpectErrno(FGDS_SYS(t, rmdir("d/sub/..")), ENOTEMPTY);
  t.ExpectErrno(FGDS_SYS(t, rmdir("missing")), ENOENT);
  t.ExpectOk(FGDS_SYS(t, rmdir("d/sub")));
  d = t.Lstat("d");
  t.Expect(d && d->st_nlink == 2, "rmdir of d/sub drops d's link count");
  t.ExpectOk(FGDS_SYS(t, rmdir("d/")));
  t.ExpectErrno(FGDS_SYS(t, rmdir("d")), ENOENT);
  struct stat st;
  t.ExpectErrno(FGDS_SYS(t, lstat("d", &st)), ENOENT);
  t.ExpectOk(FGDS_SYS(t, mkdir("d", 0711)));  // reuse of the name
  t.Lstat("d");
  // Creating and removing entries updates the parent's mtime (a stale
  // cached parent would keep the old one).
  const struct timespec old_times[2] = {{1000000000, 0}, {1000000000, 0}};
  t.ExpectOk(FGDS_SYS(t, utimensat(AT_FDCWD, "d", old_times, 0)));
  struct timespec lo = WindowStart();
  t.ExpectOk(FGDS_SYS(t, mkdir("d/new", 0755)));
  struct timespec hi = WindowEnd();
  bool now_ish = lstat("d", &st) == 0 && InWindow(st.st_mtim, lo, hi);
  t.Note("mtime(d) after mkdir is now", YesNo(now_ish));
  t.Expect(now_ish, "mkdir updates the parent's mtime");
  t.ExpectOk(FGDS_SYS(t, utimensat(AT_FDCWD, "d", old_times, 0)));
  lo = WindowStart();
  t.ExpectOk(FGDS_SYS(t, rmdir("d/new")));
  hi = WindowEnd();
  now_ish = lstat("d", &st) == 0 && InWindow(st.st_mtim, lo, hi);
  t.Note("mtime(d) after rmdir is now", YesNo(now_ish));
  t.Expect(now_ish, "rmdir updates the parent's mtime");
  t.ReadDir(".");
}

void Mknod(Trace& t) {
  t.ExpectOk(FGDS_SYS(t, mknod("p", S_IFIFO | 0644, 0)));
  t.Expect(IsA(t.Lstat("p"), S_IFIFO, 0644), "p is a 0644 fifo");
  t.ExpectErrno(FGDS_SYS(t, mkfifo("p", 0600)), EEXIST);
  t.ExpectOk(FGDS_SYS(t, mkfifo("q", 0666)));
  t.Expect(IsA(t.Lstat("q"), S_IFIFO, 0644), "umask applies to mkfifo");
  // A fifo on the mount is a kernel pipe: data goes through, not to disk.
  int fd = FGDS_SYS(t, open("p", O_RDWR)).fd();
  t.ExpectRc(FGDS_SYS(t, write(fd, "ab", 2)), 2);
  char buf[8] = {};
  t.ExpectRc(FGDS_SYS(t, read(fd, buf, sizeof(buf))), 2);
  t.Note("read from fifo", buf);
  t.ExpectOk(FGDS_SYS(t, close(fd)));
  t.ExpectErrno(FGDS_SYS(t, open("q", O_WRONLY | O_NONBLOCK)), ENXIO);
  int rd = FGDS_SYS(t, open("q", O_RDONLY | O_NONBLOCK)).fd();
  int wr = FGDS_SYS(t, open("q", O_WRONLY | O_NONBLOCK)).fd();
  t.Expect(rd >= 0 && wr >= 0, "fifo opens with a reader present");
  FGDS_SYS(t, close(wr));
  FGDS_SYS(t, close(rd));
  t.Lstat("p");  // size stays 0
  t.ExpectOk(FGDS_SYS(t, mknod("r", S_IFREG | 0600, 0)));
  t.Expect(IsA(t.Lstat("r"), S_IFREG, 0600), "mknod S_IFREG makes a file");
  t.ExpectOk(FGDS_SYS(t, mknod("s", S_IFSOCK | 0644, 0)));
  t.Expect(IsA(t.Lstat("s"), S_IFSOCK, 0644), "mknod S_IFSOCK");
  t.ExpectErrno(FGDS_SYS(t, mknod("missing/p", S_IFIFO | 0644, 0)), ENOENT);
  t.ExpectErrno(FGDS_SYS(t, mknod(TooLongName(), S_IFIFO | 0644, 0)),
                ENAMETOOLONG);
  t.ReadDir(".");
  t.ExpectOk(FGDS_SYS(t, unlink("p")));
  t.ExpectOk(FGDS_SYS(t, unlink("s")));
  t.ReadDir(".");
}

// Reads all names of an open stream, in stream order.
std::vector<std::string> ReadNames(DIR* dir, int max) {
  std::vector<std::string> names;
  while (static_cast<int>(names.size()) < max) {
    struct dirent* e = readdir(dir);
    if (e == nullptr) break;
    names.push_back(e->d_name);
  }
  return names;
}

void ReadDirTypes(Trace& t) {
  t.ExpectOk(FGDS_SYS(t, mkdir("e", 0755)));
  t.ReadDir("e");
  t.ExpectOk(FGDS_SYS(t, mkdir("d", 0755)));
  t.ExpectOk(t.CreateFile("d/reg", "r"));
  t.ExpectOk(FGDS_SYS(t, mkdir("d/dir", 0755)));
  t.ExpectOk(FGDS_SYS(t, symlink("reg", "d/lnk")));
  t.ExpectOk(FGDS_SYS(t, mkfifo("d/fifo", 0644)));
  t.ExpectOk(FGDS_SYS(t, symlink("d", "ld")));
  t.ReadDir("d");
  t.ReadDir("ld");
  t.ReadDir(".");
  // d_ino must be the st_ino that lstat reports (find, du and tar rely on
  // it to detect hard links and cycles).
  if (DIR* dir = opendir("d")) {
    std::vector<std::string> mismatched;
    while (struct dirent* e = readdir(dir)) {
      struct stat st;
      std::string path = absl::StrCat("d/", e->d_name);
      if (lstat(path.c_str(), &st) != 0 || st.st_ino != e->d_ino) {
        mismatched.push_back(e->d_name);
      }
    }
    closedir(dir);
    std::sort(mismatched.begin(), mismatched.end());
    t.Note("entries whose d_ino != st_ino", absl::StrJoin(mismatched, " "));
    t.Expect(mismatched.empty(), "d_ino matches st_ino");
  }
  t.ExpectOk(FGDS_SYS(t, unlink("d/reg")));
  t.ReadDir("d");
  t.ReadDir("d/reg");  // ENOENT
  t.ExpectOk(t.CreateFile("file", "x"));
  t.ReadDir("file");  // ENOTDIR
  t.ReadDir("missing");
}

// More entries than one readdir reply holds, and position handling.
void ReadDirMany(Trace& t) {
  constexpr int kFiles = 300;
  t.ExpectOk(FGDS_SYS(t, mkdir("many", 0755)));
  int created = 0;
  for (int i = 0; i < kFiles; ++i) {
    // Long names so that the listing spans several kernel buffers.
    std::string name =
        absl::StrFormat("many/entry_%03d_%s", i, std::string(40 + i % 50, 'x'));
    int fd = open(name.c_str(), O_CREAT | O_WRONLY, 0644);
    if (fd >= 0 && close(fd) == 0) ++created;
  }
  t.Note("created", absl::StrCat(created));
  t.ReadDir("many");

  DIR* dir = opendir("many");
  t.Expect(dir != nullptr, "opendir(many)");
  if (dir == nullptr) return;
  std::vector<std::string> first = ReadNames(dir, 100);
  long pos = telldir(dir);
  std::vector<std::string> next = ReadNames(dir, 50);
  seekdir(dir, pos);
  std::vector<std::string> again = ReadNames(dir, 50);
  t.Note("seekdir(telldir()) replays the same entries", YesNo(next == again));
  t.Expect(next == again && next.size() == 50, "seekdir replays entries");
  std::vector<std::string> rest = ReadNames(dir, 1 << 20);
  std::set<std::string> all(first.begin(), first.end());
  all.insert(next.begin(), next.end());
  all.insert(rest.begin(), rest.end());
  size_t total = first.size() + next.size() + rest.size();
  t.Note("entries seen once each",
         absl::StrCat(all.size(), " unique of ", total));
  t.Expect(all.size() == total && total == kFiles + 2,
           "every entry exactly once, '.' and '..' included");
  rewinddir(dir);
  t.Note("entries after rewinddir",
         absl::StrCat(ReadNames(dir, 1 << 20).size()));
  closedir(dir);
}

}  // namespace

std::vector<Scenario> NamespaceScenarios() {
  return {
      {"LookupStat", LookupStat},
      {"MkdirRmdir", MkdirRmdir},
      {"Mknod", Mknod},
      {"ReadDirTypes", ReadDirTypes},
      {"ReadDirMany", ReadDirMany},
  };
}

}  // namespace fgds::testing
