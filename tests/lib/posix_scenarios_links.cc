// Scenarios for names of existing files: unlink, rename, renameat2, link
// and symlink.
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "tests/lib/posix_scenarios.h"

namespace fgds::testing {
namespace {

void Unlink(Trace& t) {
  t.ExpectOk(t.CreateFile("f", "data"));
  t.ExpectOk(FGDS_SYS(t, unlink("f")));
  struct stat st;
  t.ExpectErrno(FGDS_SYS(t, lstat("f", &st)), ENOENT);
  t.ExpectErrno(FGDS_SYS(t, unlink("f")), ENOENT);
  t.ExpectOk(FGDS_SYS(t, mkdir("d", 0755)));
  t.ExpectErrno(FGDS_SYS(t, unlink("d")), EISDIR);
  t.ExpectErrno(FGDS_SYS(t, unlink("d/")), EISDIR);
  t.ExpectOk(t.CreateFile("g", "x"));
  t.ExpectErrno(FGDS_SYS(t, unlink("g/")), ENOTDIR);
  t.ExpectErrno(FGDS_SYS(t, unlink("g/x")), ENOTDIR);
  t.ExpectErrno(FGDS_SYS(t, unlink("missing/x")), ENOENT);
  t.ExpectErrno(FGDS_SYS(t, unlink(TooLongName())), ENAMETOOLONG);
  // An open file outlives its last name.
  t.ExpectOk(t.CreateFile("open", "still here"));
  int fd = FGDS_SYS(t, open("open", O_RDWR)).fd();
  t.ExpectOk(FGDS_SYS(t, unlink("open")));
  auto st_open = t.Fstat(fd, "unlinked open fd");
  t.Expect(st_open && st_open->st_nlink == 0, "unlinked file has nlink 0");
  t.ContentFd(fd, "content(unlinked open fd)");
  t.ExpectRc(FGDS_SYS(t, pwrite(fd, "!", 1, 10)), 1);
  t.ContentFd(fd, "content(unlinked open fd)");
  // Every fd-based operation still works on the nameless inode.
  t.ExpectOk(FGDS_SYS(t, fchmod(fd, 0600)));
  t.ExpectOk(FGDS_SYS(t, fchown(fd, 12, 34)));
  t.ExpectOk(FGDS_SYS(t, ftruncate(fd, 5)));
  const struct timespec times[2] = {{1000000000, 1}, {1000000000, 2}};
  t.ExpectOk(FGDS_SYS(t, futimens(fd, times)));
  t.ExpectOk(FGDS_SYS(t, fsetxattr(fd, "user.gone", "g", 1, 0)));
  char xbuf[8];
  t.ExpectRc(FGDS_SYS(t, fgetxattr(fd, "user.gone", xbuf, sizeof(xbuf))), 1);
  t.ExpectOk(FGDS_SYS(t, fsync(fd)));
  st_open = t.Fstat(fd, "unlinked open fd");
  t.Expect(IsA(st_open, S_IFREG, 0600) && st_open->st_size == 5 &&
               st_open->st_uid == 12 && st_open->st_mtim.tv_nsec == 2,
           "fd-based setattr on an unlinked file");
  // The name is free again: a new file there is a different inode.
  t.ExpectOk(t.CreateFile("open", "new inode"));
  t.ContentFd(fd, "content(unlinked open fd)");
  t.Content("open");
  t.ExpectOk(FGDS_SYS(t, close(fd)));
  // Unlinking a symlink leaves its target alone.
  t.ExpectOk(FGDS_SYS(t, symlink("g", "l")));
  t.ExpectOk(FGDS_SYS(t, unlink("l")));
  t.Expect(IsA(t.Lstat("g"), S_IFREG, 0644), "symlink target survives");
  t.ExpectOk(FGDS_SYS(t, unlinkat(AT_FDCWD, "d", AT_REMOVEDIR)));
  t.ReadDir(".");
}

void Rename(Trace& t) {
  struct stat st;
  t.ExpectOk(t.CreateFile("a", "A"));
  t.ExpectOk(FGDS_SYS(t, rename("a", "b")));
  t.ExpectErrno(FGDS_SYS(t, lstat("a", &st)), ENOENT);
  t.Content("b");
  // Over an existing file: the target is replaced; a descriptor of the
  // replaced file still reads the old data, and its inode has no name left.
  t.ExpectOk(t.CreateFile("c", "CCC"));
  int old_fd = FGDS_SYS(t, open("c", O_RDONLY)).fd();
  struct stat before;
  bool have_ino = lstat("b", &before) == 0;
  t.ExpectOk(FGDS_SYS(t, rename("b", "c")));
  t.Expect(t.Content("c") == "A", "rename replaced c");
  t.ExpectErrno(FGDS_SYS(t, lstat("b", &st)), ENOENT);
  bool same = have_ino && lstat("c", &st) == 0 && st.st_ino == before.st_ino;
  t.Note("rename keeps the inode number", YesNo(same));
  t.Expect(same, "rename keeps the inode number");
  auto replaced = t.Fstat(old_fd, "fd of the replaced c");
  t.Expect(replaced && replaced->st_nlink == 0, "replaced inode has nlink 0");
  t.Expect(t.ContentFd(old_fd, "content(fd of the replaced c)") == "CCC",
           "replaced file still readable through its descriptor");
  FGDS_SYS(t, close(old_fd));
  // Two names of one inode: rename does nothing and succeeds.
  t.ExpectOk(FGDS_SYS(t, link("c", "c2")));
  t.ExpectOk(FGDS_SYS(t, rename("c", "c2")));
  t.Lstat("c");
  t.Lstat("c2");
  t.ExpectOk(FGDS_SYS(t, rename("c", "c")));
  // Type mismatches.
  t.ExpectOk(FGDS_SYS(t, mkdir("d1", 0755)));
  t.ExpectErrno(FGDS_SYS(t, rename("c", "d1")), EISDIR);
  t.ExpectErrno(FGDS_SYS(t, rename("d1", "c")), ENOTDIR);
  // Directory over an empty directory.
  t.ExpectOk(t.CreateFile("d1/inside", "i"));
  t.ExpectOk(FGDS_SYS(t, mkdir("d2", 0700)));
  t.ExpectOk(FGDS_SYS(t, rename("d1", "d2")));
  t.ExpectErrno(FGDS_SYS(t, lstat("d1", &st)), ENOENT);
  t.Expect(IsA(t.Lstat("d2"), S_IFDIR, 0755), "d2 is now the old d1");
  t.Content("d2/inside");
  // Directory over a non-empty directory.
  t.ExpectOk(FGDS_SYS(t, mkdir("d3", 0755)));
  t.ExpectErrnoIn(FGDS_SYS(t, rename("d3", "d2")), {ENOTEMPTY, EEXIST});
  t.Content("d2/inside");
  // Into its own subtree.
  t.ExpectOk(FGDS_SYS(t, mkdir("d3/x", 0755)));
  t.ExpectErrno(FGDS_SYS(t, rename("d3", "d3/x/y")), EINVAL);
  // Across directories: link counts of both parents change.
  t.ExpectOk(FGDS_SYS(t, mkdir("p", 0755)));
  t.ExpectOk(FGDS_SYS(t, mkdir("q", 0755)));
  t.ExpectOk(FGDS_SYS(t, mkdir("p/s", 0755)));
  t.ExpectOk(FGDS_SYS(t, rename("p/s", "q/s")));
  auto p = t.Lstat("p");
  auto q = t.Lstat("q");
  t.Expect(p && q && p->st_nlink == 2 && q->st_nlink == 3,
           "moving a subdirectory moves a parent link");
  t.ReadDir("q/s/..");
  // Errors.
  t.ExpectErrno(FGDS_SYS(t, rename("missing", "z")), ENOENT);
  t.ExpectErrno(FGDS_SYS(t, rename("c", "missing/z")), ENOENT);
  t.ExpectErrno(FGDS_SYS(t, rename("c", "c2/z")), ENOTDIR);
  t.ExpectErrno(FGDS_SYS(t, rename("c/", "z")), ENOTDIR);
  t.ExpectErrno(FGDS_SYS(t, rename("c", TooLongName())), ENAMETOOLONG);
  t.ExpectErrnoIn(FGDS_SYS(t, rename(".", "z")), {EBUSY, EINVAL});
  // An open file keeps working across a rename.
  int fd = FGDS_SYS(t, open("c2", O_RDWR)).fd();
  t.ExpectOk(FGDS_SYS(t, rename("c2", "q/moved")));
  t.ExpectRc(FGDS_SYS(t, pwrite(fd, "Z", 1, 1)), 1);
  t.ExpectOk(FGDS_SYS(t, fchmod(fd, 0640)));
  t.ExpectOk(FGDS_SYS(t, fsetxattr(fd, "user.moved", "m", 1, 0)));
  t.ExpectOk(FGDS_SYS(t, close(fd)));
  t.Content("q/moved");
  t.Lstat("q/moved");
  t.UserXattrs("q/moved");
  // A directory descriptor follows its directory across a rename, for
  // lookups, creates and removals relative to it.
  t.ExpectOk(t.CreateFile("p/inside", "in p"));
  int dfd = FGDS_SYS(t, open("p", O_RDONLY | O_DIRECTORY)).fd();
  t.ExpectOk(FGDS_SYS(t, rename("p", "q/p2")));
  int in = FGDS_SYS(t, openat(dfd, "inside", O_RDONLY)).fd();
  t.ContentFd(in, "content(openat(dfd, inside))");
  FGDS_SYS(t, close(in));
  t.ExpectOk(FGDS_SYS(t, mkdirat(dfd, "made", 0755)));
  t.ExpectOk(FGDS_SYS(t, symlinkat("inside", dfd, "sym")));
  t.ExpectOk(FGDS_SYS(t, renameat(dfd, "inside", dfd, "renamed")));
  t.ExpectOk(FGDS_SYS(t, unlinkat(dfd, "made", AT_REMOVEDIR)));
  t.ExpectOk(FGDS_SYS(t, fstatat(dfd, "renamed", &st, 0)));
  t.ExpectErrno(FGDS_SYS(t, fstatat(dfd, "inside", &st, 0)), ENOENT);
  FGDS_SYS(t, close(dfd));
  t.ReadDir("q/p2");
  t.ExpectErrno(FGDS_SYS(t, lstat("p", &st)), ENOENT);
  // A symlink is renamed, not its target; renaming one symlink over
  // another must not leave the old target cached.
  t.ExpectOk(FGDS_SYS(t, symlink("q/moved", "sl")));
  t.ExpectOk(FGDS_SYS(t, rename("sl", "sl2")));
  char buf[64] = {};
  t.ExpectRc(FGDS_SYS(t, readlink("sl2", buf, sizeof(buf))), 7);
  t.Note("readlink(sl2)", buf);
  t.ExpectOk(FGDS_SYS(t, symlink("q", "sl3")));
  t.ExpectOk(FGDS_SYS(t, rename("sl3", "sl2")));
  memset(buf, 0, sizeof(buf));
  t.ExpectRc(FGDS_SYS(t, readlink("sl2", buf, sizeof(buf))), 1);
  t.Note("readlink(sl2)", buf);
  t.Expect(IsA(t.Stat("sl2"), S_IFDIR, 0755), "sl2 now points to q");
  t.ReadDir(".");
}

void Rename2(Trace& t) {
  struct stat st;
  t.ExpectOk(t.CreateFile("e1", "one"));
  t.ExpectOk(t.CreateFile("e2", "two"));
  t.ExpectErrno(
      FGDS_SYS(t, renameat2(AT_FDCWD, "e1", AT_FDCWD, "e2", RENAME_NOREPLACE)),
      EEXIST);
  t.Expect(t.Content("e1") == "one" && t.Content("e2") == "two",
           "RENAME_NOREPLACE failure changes nothing");
  t.ExpectOk(
      FGDS_SYS(t, renameat2(AT_FDCWD, "e1", AT_FDCWD, "e3", RENAME_NOREPLACE)));
  t.ExpectErrno(FGDS_SYS(t, lstat("e1", &st)), ENOENT);
  t.Content("e3");
  // RENAME_EXCHANGE swaps two files, then a file and a directory.
  t.ExpectOk(
      FGDS_SYS(t, renameat2(AT_FDCWD, "e2", AT_FDCWD, "e3", RENAME_EXCHANGE)));
  t.Expect(t.Content("e2") == "one" && t.Content("e3") == "two",
           "RENAME_EXCHANGE swapped contents");
  t.ExpectOk(FGDS_SYS(t, mkdir("dir", 0700)));
  t.ExpectOk(t.CreateFile("dir/in", "in"));
  t.ExpectOk(
      FGDS_SYS(t, renameat2(AT_FDCWD, "e2", AT_FDCWD, "dir", RENAME_EXCHANGE)));
  t.Expect(
      IsA(t.Lstat("e2"), S_IFDIR, 0700) && IsA(t.Lstat("dir"), S_IFREG, 0644),
      "RENAME_EXCHANGE swapped a file and a directory");
  t.Content("e2/in");
  t.Content("dir");
  t.ExpectErrno(
      FGDS_SYS(t, renameat2(AT_FDCWD, "e3", AT_FDCWD, "nope", RENAME_EXCHANGE)),
      ENOENT);
  t.ExpectErrno(FGDS_SYS(t, renameat2(AT_FDCWD, "e3", AT_FDCWD, "dir",
                                      RENAME_EXCHANGE | RENAME_NOREPLACE)),
                EINVAL);
  // Exchanging across directories moves the parents' link counts too.
  t.ExpectOk(FGDS_SYS(t, mkdir("a", 0755)));
  t.ExpectOk(FGDS_SYS(t, mkdir("a/sub", 0755)));
  t.ExpectOk(FGDS_SYS(t, mkdir("b", 0755)));
  t.ExpectOk(t.CreateFile("b/file", "f"));
  t.ExpectOk(FGDS_SYS(
      t, renameat2(AT_FDCWD, "a/sub", AT_FDCWD, "b/file", RENAME_EXCHANGE)));
  t.Lstat("a");
  t.Lstat("b");
  t.Lstat("a/sub");
  t.Lstat("b/file");
  t.ReadDir(".");
}

void Link(Trace& t) {
  t.ExpectOk(t.CreateFile("f", "F"));
  t.ExpectOk(FGDS_SYS(t, link("f", "g")));
  auto f = t.Lstat("f");
  auto g = t.Lstat("g");
  t.Expect(f && g && f->st_nlink == 2 && g->st_nlink == 2,
           "both names see nlink 2");
  t.Note("f and g are one inode", YesNo(SameInode("f", "g")));
  t.ExpectErrno(FGDS_SYS(t, link("f", "g")), EEXIST);
  t.ExpectErrno(FGDS_SYS(t, link("missing", "h")), ENOENT);
  t.ExpectOk(FGDS_SYS(t, mkdir("d", 0755)));
  t.ExpectErrno(FGDS_SYS(t, link("d", "dl")), EPERM);
  t.ExpectErrno(FGDS_SYS(t, link("f", "d/missing/x")), ENOENT);
  t.ExpectErrno(FGDS_SYS(t, link("f", TooLongName())), ENAMETOOLONG);
  // A write through one name is seen through the other, size included.
  int fd = FGDS_SYS(t, open("g", O_WRONLY | O_APPEND)).fd();
  t.ExpectRc(FGDS_SYS(t, write(fd, "GG", 2)), 2);
  t.ExpectOk(FGDS_SYS(t, close(fd)));
  t.Expect(t.Content("f") == "FGG", "write through g is seen through f");
  t.Lstat("f");
  t.ExpectOk(FGDS_SYS(t, link("g", "d/g")));
  f = t.Lstat("f");
  t.Expect(f && f->st_nlink == 3, "a third name gives nlink 3");
  t.ExpectOk(FGDS_SYS(t, unlink("f")));
  g = t.Lstat("g");
  t.Expect(g && g->st_nlink == 2, "unlink drops nlink");
  // linkat without AT_SYMLINK_FOLLOW links the symlink itself.
  t.ExpectOk(FGDS_SYS(t, symlink("g", "s")));
  t.ExpectOk(FGDS_SYS(t, linkat(AT_FDCWD, "s", AT_FDCWD, "s2", 0)));
  auto s2 = t.Lstat("s2");
  t.Expect(s2 && S_ISLNK(s2->st_mode) && s2->st_nlink == 2,
           "linkat(0) makes a second name of the symlink");
  t.ExpectOk(
      FGDS_SYS(t, linkat(AT_FDCWD, "s", AT_FDCWD, "s3", AT_SYMLINK_FOLLOW)));
  auto s3 = t.Lstat("s3");
  t.Expect(s3 && S_ISREG(s3->st_mode) && s3->st_nlink == 3,
           "linkat(AT_SYMLINK_FOLLOW) links the target");
  t.Lstat("g");
  t.ReadDir(".");
}

void Symlink(Trace& t) {
  struct stat st;
  char buf[5000];
  t.ExpectOk(FGDS_SYS(t, symlink("target", "s")));
  auto s = t.Lstat("s");
  t.Expect(IsA(s, S_IFLNK, 0777) && s->st_size == 6, "symlink lstat");
  ssize_t n = FGDS_SYS(t, readlink("s", buf, sizeof(buf))).rc;
  t.Note("readlink(s)", std::string(buf, n > 0 ? n : 0));
  t.ExpectRc(FGDS_SYS(t, readlink("s", buf, 3)), 3);  // truncates silently
  t.Note("readlink(s, 3)", std::string(buf, 3));
  t.ExpectErrno(FGDS_SYS(t, stat("s", &st)), ENOENT);  // dangling
  t.ExpectOk(t.CreateFile("target", "T"));
  t.Expect(IsA(t.Stat("s"), S_IFREG, 0644), "symlink resolves once created");
  t.ExpectErrno(FGDS_SYS(t, symlink("x", "s")), EEXIST);
  t.ExpectErrno(FGDS_SYS(t, symlink("x", "target")), EEXIST);
  t.ExpectErrno(FGDS_SYS(t, readlink("target", buf, sizeof(buf))), EINVAL);
  t.ExpectErrno(FGDS_SYS(t, readlink("missing", buf, sizeof(buf))), ENOENT);
  t.ExpectErrno(FGDS_SYS(t, symlink("x", TooLongName())), ENAMETOOLONG);
  // Absolute and long targets are stored verbatim.
  t.ExpectOk(FGDS_SYS(t, symlink("/nonexistent/abs", "abs")));
  n = FGDS_SYS(t, readlink("abs", buf, sizeof(buf))).rc;
  t.Note("readlink(abs)", std::string(buf, n > 0 ? n : 0));
  std::string long_target(4000, 't');
  for (size_t i = 100; i < long_target.size(); i += 100) long_target[i] = '/';
  t.ExpectOk(FGDS_SYS(t, symlink(long_target.c_str(), "long")));
  n = FGDS_SYS(t, readlink("long", buf, sizeof(buf))).rc;
  t.Expect(n == 4000 && std::string(buf, 4000) == long_target,
           "a 4000-byte target reads back verbatim");
  std::string too_long(4096, 'x');
  t.ExpectErrno(FGDS_SYS(t, symlink(too_long.c_str(), "toolong")),
                ENAMETOOLONG);
  // Creating through a symlink to a directory.
  t.ExpectOk(FGDS_SYS(t, mkdir("d", 0755)));
  t.ExpectOk(FGDS_SYS(t, symlink("d", "sd")));
  t.ExpectOk(t.CreateFile("sd/f", "via link"));
  t.Content("d/f");
  t.ExpectOk(FGDS_SYS(t, symlink("../target", "d/up")));
  t.Content("d/up");
  // Loops.
  t.ExpectOk(FGDS_SYS(t, symlink("loop2", "loop1")));
  t.ExpectOk(FGDS_SYS(t, symlink("loop1", "loop2")));
  t.ExpectErrno(FGDS_SYS(t, stat("loop1", &st)), ELOOP);
  t.ExpectErrno(FGDS_SYS(t, open("loop1", O_RDONLY)), ELOOP);
  t.ExpectOk(FGDS_SYS(t, symlink("self", "self")));
  t.ExpectErrno(FGDS_SYS(t, open("self", O_CREAT | O_WRONLY, 0644)), ELOOP);
  t.ExpectErrno(FGDS_SYS(t, stat("self/x", &st)), ELOOP);
  // O_NOFOLLOW refuses a symlink in the last component only.
  t.ExpectErrno(FGDS_SYS(t, open("s", O_RDONLY | O_NOFOLLOW)), ELOOP);
  int fd = FGDS_SYS(t, open("sd/f", O_RDONLY | O_NOFOLLOW)).fd();
  t.Expect(fd >= 0, "O_NOFOLLOW follows symlinks before the last component");
  FGDS_SYS(t, close(fd));
  fd = FGDS_SYS(t, open("s", O_PATH | O_NOFOLLOW)).fd();
  auto ps = t.Fstat(fd, "O_PATH|O_NOFOLLOW fd of s");
  t.Expect(ps && S_ISLNK(ps->st_mode), "O_PATH|O_NOFOLLOW opens the link");
  FGDS_SYS(t, close(fd));
  // Chains: 40 links resolve, more do not.
  t.ExpectOk(FGDS_SYS(t, mkdir("chain", 0755)));
  for (int i = 0; i < 45; ++i) {
    std::string to = i == 44 ? "../target" : absl::StrCat("l", i + 1);
    std::string name = absl::StrCat("chain/l", i);
    if (symlink(to.c_str(), name.c_str()) != 0) {
      t.Expect(false, absl::StrCat("symlink ", name, ": ", ErrnoName(errno)));
    }
  }
  t.ExpectErrno(FGDS_SYS(t, stat("chain/l0", &st)), ELOOP);
  t.ExpectOk(FGDS_SYS(t, stat("chain/l10", &st)));
  t.ReadDir(".");
}

}  // namespace

std::vector<Scenario> LinkScenarios() {
  return {
      {"Unlink", Unlink}, {"Rename", Rename},   {"Rename2", Rename2},
      {"Link", Link},     {"Symlink", Symlink},
  };
}

}  // namespace fgds::testing
