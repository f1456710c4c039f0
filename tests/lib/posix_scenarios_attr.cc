// Scenarios for setattr: chmod, chown, truncate/ftruncate and utimensat.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tests/lib/posix_scenarios.h"

namespace fgds::testing {
namespace {

void Chmod(Trace& t) {
  t.ExpectOk(t.CreateFile("f", "x"));
  t.ExpectOk(FGDS_SYS(t, chmod("f", 0600)));
  t.Expect(IsA(t.Lstat("f"), S_IFREG, 0600), "chmod 0600");
  for (mode_t mode : {04755, 02755, 01755, 0, 07777, 02745}) {
    t.ExpectOk(t.Call(absl::StrFormat("chmod(f, 0%o)", mode),
                      [&] { return chmod("f", mode); }));
    t.Expect(IsA(t.Lstat("f"), S_IFREG, mode), "chmod sets exactly the bits");
  }
  int fd = FGDS_SYS(t, open("f", O_RDONLY)).fd();
  t.ExpectOk(FGDS_SYS(t, fchmod(fd, 0640)));
  t.Expect(IsA(t.Fstat(fd, "fd"), S_IFREG, 0640), "fchmod 0640");
  FGDS_SYS(t, close(fd));
  t.ExpectOk(FGDS_SYS(t, mkdir("d", 0755)));
  t.ExpectOk(FGDS_SYS(t, chmod("d", 01700)));
  t.Expect(IsA(t.Lstat("d"), S_IFDIR, 01700), "chmod on a directory");
  t.ExpectOk(FGDS_SYS(t, chmod("d", 02755)));
  t.Lstat("d");
  // chmod through a symlink changes the target; a symlink's own mode is
  // always 0777 and cannot be changed.
  t.ExpectOk(FGDS_SYS(t, symlink("f", "l")));
  t.ExpectOk(FGDS_SYS(t, chmod("l", 0604)));
  t.Expect(IsA(t.Lstat("f"), S_IFREG, 0604), "chmod follows symlinks");
  t.Expect(IsA(t.Lstat("l"), S_IFLNK, 0777), "symlink mode unchanged");
  t.ExpectErrno(FGDS_SYS(t, fchmodat(AT_FDCWD, "l", 0600, AT_SYMLINK_NOFOLLOW)),
                EOPNOTSUPP);
  // Root ignores permission bits for reading, writing and searching.
  t.ExpectOk(FGDS_SYS(t, chmod("f", 0)));
  int any = FGDS_SYS(t, open("f", O_RDWR)).fd();
  t.Expect(any >= 0, "root opens a 0000 file read-write");
  FGDS_SYS(t, close(any));
  t.ExpectOk(FGDS_SYS(t, chmod("d", 0)));
  t.ExpectOk(t.CreateFile("d/in", "in a 0000 dir"));
  t.ReadDir("d");
  t.ExpectOk(FGDS_SYS(t, chmod("d", 0755)));
  t.ExpectOk(FGDS_SYS(t, chmod("f", 0604)));
  t.ExpectErrno(FGDS_SYS(t, chmod("missing", 0644)), ENOENT);
  t.ExpectErrno(FGDS_SYS(t, chmod("f/x", 0644)), ENOTDIR);
  // A chmod must not disturb the data.
  t.Content("f");
}

void Chown(Trace& t) {
  t.ExpectOk(t.CreateFile("f", "x"));
  t.ExpectOk(FGDS_SYS(t, chown("f", 1234, 5678)));
  auto f = t.Lstat("f");
  t.Expect(f && f->st_uid == 1234 && f->st_gid == 5678, "chown both ids");
  t.ExpectOk(FGDS_SYS(t, chown("f", -1, 42)));
  f = t.Lstat("f");
  t.Expect(f && f->st_uid == 1234 && f->st_gid == 42, "chown gid only");
  t.ExpectOk(FGDS_SYS(t, chown("f", 65534, -1)));
  f = t.Lstat("f");
  t.Expect(f && f->st_uid == 65534 && f->st_gid == 42, "chown uid only");
  t.ExpectOk(FGDS_SYS(t, chown("f", -1, -1)));
  t.Lstat("f");
  // chown of a regular file clears set-user-ID, and set-group-ID when the
  // group may execute (without group execute it marks mandatory locking).
  t.ExpectOk(FGDS_SYS(t, chmod("f", 06755)));
  t.ExpectOk(FGDS_SYS(t, chown("f", 1000, 1000)));
  t.Expect(IsA(t.Lstat("f"), S_IFREG, 0755), "chown cleared S_ISUID/S_ISGID");
  t.ExpectOk(FGDS_SYS(t, chmod("f", 02745)));
  t.ExpectOk(FGDS_SYS(t, chown("f", 1001, 1001)));
  t.Lstat("f");
  int fd = FGDS_SYS(t, open("f", O_RDONLY)).fd();
  t.ExpectOk(FGDS_SYS(t, fchown(fd, 7, 8)));
  t.Fstat(fd, "fd");
  FGDS_SYS(t, close(fd));
  // lchown changes the link, chown follows it.
  t.ExpectOk(FGDS_SYS(t, symlink("f", "l")));
  t.ExpectOk(FGDS_SYS(t, lchown("l", 11, 12)));
  auto l = t.Lstat("l");
  t.Expect(l && l->st_uid == 11 && l->st_gid == 12, "lchown on the link");
  t.Lstat("f");
  t.ExpectOk(FGDS_SYS(t, chown("l", 13, 14)));
  t.Lstat("l");
  f = t.Lstat("f");
  t.Expect(f && f->st_uid == 13 && f->st_gid == 14, "chown follows links");
  t.ExpectOk(FGDS_SYS(t, mkdir("d", 02755)));
  t.ExpectOk(FGDS_SYS(t, chmod("d", 06755)));
  t.ExpectOk(FGDS_SYS(t, chown("d", 100, 200)));
  t.Lstat("d");  // directories keep their set-id bits on chown
  t.ExpectErrno(FGDS_SYS(t, chown("missing", 1, 1)), ENOENT);
}

void Truncate(Trace& t) {
  t.ExpectOk(t.CreateFile("f", Pattern(100)));
  t.ExpectOk(FGDS_SYS(t, truncate("f", 10)));
  t.Expect(t.Content("f") == Pattern(10), "truncate keeps the head");
  t.ExpectOk(FGDS_SYS(t, truncate("f", 5000)));
  t.Expect(t.Content("f") == Pattern(10) + std::string(4990, '\0'),
           "extending truncate reads back zeros");
  int fd = FGDS_SYS(t, open("f", O_RDWR)).fd();
  t.ExpectOk(FGDS_SYS(t, ftruncate(fd, 3)));
  auto st = t.Fstat(fd, "fd");
  t.Expect(st && st->st_size == 3, "ftruncate to 3");
  // Data written past a truncation point must not resurrect old bytes.
  t.ExpectRc(FGDS_SYS(t, pwrite(fd, "Z", 1, 8)), 1);
  t.ContentFd(fd, "content(fd)");
  t.ExpectOk(FGDS_SYS(t, ftruncate(fd, 0)));
  t.ContentFd(fd, "content(fd)");
  t.ExpectOk(FGDS_SYS(t, ftruncate(fd, 1LL << 40)));  // sparse, 1 TiB
  t.Fstat(fd, "fd");
  t.ExpectErrno(FGDS_SYS(t, ftruncate(fd, -1)), EINVAL);
  t.ExpectOk(FGDS_SYS(t, ftruncate(fd, 7)));
  FGDS_SYS(t, close(fd));
  t.Content("f");
  fd = FGDS_SYS(t, open("f", O_RDONLY)).fd();
  t.ExpectErrnoIn(FGDS_SYS(t, ftruncate(fd, 1)), {EINVAL, EBADF});
  FGDS_SYS(t, close(fd));
  t.ExpectOk(FGDS_SYS(t, mkdir("d", 0755)));
  t.ExpectErrno(FGDS_SYS(t, truncate("d", 0)), EISDIR);
  t.ExpectErrno(FGDS_SYS(t, truncate("missing", 0)), ENOENT);
  t.ExpectErrno(FGDS_SYS(t, truncate("f", -1)), EINVAL);
  t.ExpectOk(FGDS_SYS(t, symlink("f", "l")));
  t.ExpectOk(FGDS_SYS(t, truncate("l", 2)));
  t.Lstat("f");
  t.Lstat("l");
  // A size change updates mtime.
  const struct timespec old_times[2] = {{1000000000, 0}, {1000000000, 0}};
  t.ExpectOk(FGDS_SYS(t, utimensat(AT_FDCWD, "f", old_times, 0)));
  struct timespec lo = WindowStart();
  t.ExpectOk(FGDS_SYS(t, truncate("f", 1)));
  struct timespec hi = WindowEnd();
  struct stat now;
  bool now_ish = lstat("f", &now) == 0 && InWindow(now.st_mtim, lo, hi);
  t.Note("mtime(f) after truncate is now", now_ish ? "yes" : "no");
  t.Expect(now_ish, "truncate updates mtime");
}

// Records whether `path`'s atime/mtime lie in [lo, hi].
void NoteTimesInWindow(Trace& t, const char* path, const struct timespec& lo,
                       const struct timespec& hi, bool expect_atime,
                       bool expect_mtime) {
  struct stat st;
  if (lstat(path, &st) != 0) {
    t.Note(absl::StrCat("times(", path, ")"), ErrnoName(errno));
    return;
  }
  bool a = InWindow(st.st_atim, lo, hi);
  bool m = InWindow(st.st_mtim, lo, hi);
  t.Note(absl::StrCat("times(", path, ") now-ish"),
         absl::StrCat("atime=", a ? "yes" : "no", " mtime=", m ? "yes" : "no"));
  if (expect_atime) t.Expect(a, absl::StrCat(path, ": atime set to now"));
  if (expect_mtime) t.Expect(m, absl::StrCat(path, ": mtime set to now"));
}

bool HasTimes(const char* path, const struct timespec& a,
              const struct timespec& m) {
  struct stat st;
  return lstat(path, &st) == 0 && st.st_atim.tv_sec == a.tv_sec &&
         st.st_atim.tv_nsec == a.tv_nsec && st.st_mtim.tv_sec == m.tv_sec &&
         st.st_mtim.tv_nsec == m.tv_nsec;
}

void Utimens(Trace& t) {
  t.ExpectOk(t.CreateFile("f", "x"));
  const struct timespec explicit_times[2] = {{1000000000, 111111111},
                                             {1200000000, 222222222}};
  t.ExpectOk(FGDS_SYS(t, utimensat(AT_FDCWD, "f", explicit_times, 0)));
  t.Times("f");
  t.Expect(HasTimes("f", explicit_times[0], explicit_times[1]),
           "explicit times are stored with nanoseconds");
  // UTIME_OMIT leaves that time alone.
  const struct timespec omit_atime[2] = {{0, UTIME_OMIT}, {1300000000, 333}};
  t.ExpectOk(FGDS_SYS(t, utimensat(AT_FDCWD, "f", omit_atime, 0)));
  t.Times("f");
  t.Expect(HasTimes("f", explicit_times[0], omit_atime[1]),
           "UTIME_OMIT kept atime");
  const struct timespec omit_both[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
  t.ExpectOk(FGDS_SYS(t, utimensat(AT_FDCWD, "f", omit_both, 0)));
  t.Times("f");
  // UTIME_NOW sets the current time; the other one is explicit.
  const struct timespec now_mtime[2] = {{1400000000, 5}, {0, UTIME_NOW}};
  struct timespec lo = WindowStart();
  t.ExpectOk(FGDS_SYS(t, utimensat(AT_FDCWD, "f", now_mtime, 0)));
  struct timespec hi = WindowEnd();
  NoteTimesInWindow(t, "f", lo, hi, false, true);
  struct stat st;
  t.Expect(lstat("f", &st) == 0 && st.st_atim.tv_sec == 1400000000 &&
               st.st_atim.tv_nsec == 5,
           "explicit atime next to UTIME_NOW mtime");
  const struct timespec now_atime[2] = {{0, UTIME_NOW}, {1500000000, 6}};
  lo = WindowStart();
  t.ExpectOk(FGDS_SYS(t, utimensat(AT_FDCWD, "f", now_atime, 0)));
  hi = WindowEnd();
  NoteTimesInWindow(t, "f", lo, hi, true, false);
  // NULL means both now.
  t.ExpectOk(FGDS_SYS(t, utimensat(AT_FDCWD, "f", explicit_times, 0)));
  lo = WindowStart();
  t.ExpectOk(FGDS_SYS(t, utimensat(AT_FDCWD, "f", nullptr, 0)));
  hi = WindowEnd();
  NoteTimesInWindow(t, "f", lo, hi, true, true);
  // Through a file descriptor, on a directory, on a symlink itself.
  int fd = FGDS_SYS(t, open("f", O_RDONLY)).fd();
  const struct timespec fd_times[2] = {{1600000000, 7}, {1600000001, 8}};
  t.ExpectOk(FGDS_SYS(t, futimens(fd, fd_times)));
  FGDS_SYS(t, close(fd));
  t.Times("f");
  t.ExpectOk(FGDS_SYS(t, mkdir("d", 0755)));
  t.ExpectOk(FGDS_SYS(t, utimensat(AT_FDCWD, "d", explicit_times, 0)));
  t.Times("d");
  t.ExpectOk(FGDS_SYS(t, symlink("f", "l")));
  const struct timespec link_times[2] = {{1700000000, 9}, {1700000001, 10}};
  t.ExpectOk(
      FGDS_SYS(t, utimensat(AT_FDCWD, "l", link_times, AT_SYMLINK_NOFOLLOW)));
  t.Times("l");
  t.Times("f");
  t.Expect(HasTimes("l", link_times[0], link_times[1]) &&
               HasTimes("f", fd_times[0], fd_times[1]),
           "AT_SYMLINK_NOFOLLOW sets the link's times, not the target's");
  // Times before 1970 and after 2038.
  const struct timespec wide[2] = {{-100000, 500000000}, {4000000000LL, 1}};
  t.ExpectOk(FGDS_SYS(t, utimensat(AT_FDCWD, "f", wide, 0)));
  t.Times("f");
  // Writing data updates mtime.
  t.ExpectOk(FGDS_SYS(t, utimensat(AT_FDCWD, "f", explicit_times, 0)));
  lo = WindowStart();
  t.ExpectOk(t.CreateFile("f", "rewritten"));
  hi = WindowEnd();
  NoteTimesInWindow(t, "f", lo, hi, false, true);
  const struct timespec bad[2] = {{0, 1000000000}, {0, 0}};
  t.ExpectErrno(FGDS_SYS(t, utimensat(AT_FDCWD, "f", bad, 0)), EINVAL);
  t.ExpectErrno(FGDS_SYS(t, utimensat(AT_FDCWD, "missing", explicit_times, 0)),
                ENOENT);
}

}  // namespace

std::vector<Scenario> AttrScenarios() {
  return {
      {"Chmod", Chmod},
      {"Chown", Chown},
      {"Truncate", Truncate},
      {"Utimens", Utimens},
  };
}

}  // namespace fgds::testing
