// Scenarios for file locks: flock, POSIX record locks (held by a second
// process) and open file description (OFD) locks.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "tests/lib/posix_child.h"
#include "tests/lib/posix_scenarios.h"

namespace fgds::testing {
namespace {

void Flock(Trace& t) {
  t.ExpectOk(t.CreateFile("f", "locked"));
  int fd1 = FGDS_SYS(t, open("f", O_RDWR)).fd();
  int fd2 = FGDS_SYS(t, open("f", O_RDWR)).fd();
  t.ExpectOk(FGDS_SYS(t, flock(fd1, LOCK_EX)));
  // A second open file description conflicts, even in the same process.
  t.ExpectErrno(FGDS_SYS(t, flock(fd2, LOCK_EX | LOCK_NB)), EWOULDBLOCK);
  t.ExpectErrno(FGDS_SYS(t, flock(fd2, LOCK_SH | LOCK_NB)), EWOULDBLOCK);
  // A dup shares the description and so the lock.
  int fd3 = FGDS_SYS(t, dup(fd1)).fd();
  t.ExpectOk(FGDS_SYS(t, flock(fd3, LOCK_EX | LOCK_NB)));
  t.ExpectOk(FGDS_SYS(t, flock(fd1, LOCK_UN)));
  t.ExpectOk(FGDS_SYS(t, flock(fd2, LOCK_SH | LOCK_NB)));
  t.ExpectOk(FGDS_SYS(t, flock(fd1, LOCK_SH | LOCK_NB)));  // shared + shared
  t.ExpectErrno(FGDS_SYS(t, flock(fd1, LOCK_EX | LOCK_NB)), EWOULDBLOCK);
  // Closing the last descriptor of a description drops its lock.
  t.ExpectOk(FGDS_SYS(t, close(fd2)));
  t.ExpectOk(FGDS_SYS(t, flock(fd1, LOCK_EX | LOCK_NB)));
  t.ExpectErrno(FGDS_SYS(t, flock(fd1, 0)), EINVAL);
  t.ExpectErrno(FGDS_SYS(t, flock(fd1, LOCK_SH | LOCK_EX)), EINVAL);
  FGDS_SYS(t, close(fd3));
  FGDS_SYS(t, close(fd1));
  // Another process's lock.
  {
    HoldingChild holder(t, [](ChildLog& log) {
      int fd = FGDS_CHILD_SYS(log, open("f", O_RDONLY));
      FGDS_CHILD_SYS(log, flock(fd, LOCK_EX | LOCK_NB));
    });
    int fd = FGDS_SYS(t, open("f", O_RDONLY)).fd();
    t.ExpectErrno(FGDS_SYS(t, flock(fd, LOCK_SH | LOCK_NB)), EWOULDBLOCK);
    holder.Release();
    t.ExpectOk(FGDS_SYS(t, flock(fd, LOCK_SH | LOCK_NB)));
    FGDS_SYS(t, close(fd));
  }
  // Directories can be flocked too.
  int dfd = FGDS_SYS(t, open(".", O_RDONLY | O_DIRECTORY)).fd();
  t.ExpectOk(FGDS_SYS(t, flock(dfd, LOCK_EX | LOCK_NB)));
  FGDS_SYS(t, close(dfd));
}

// Records the answer of F_GETLK / F_OFD_GETLK for [start, start+len).
void NoteGetlk(Trace& t, int fd, int cmd, short type, off_t start, off_t len,
               pid_t holder) {
  struct flock fl = {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = start;
  fl.l_len = len;
  std::string label = absl::StrCat(
      cmd == F_GETLK ? "F_GETLK" : "F_OFD_GETLK", "(",
      type == F_WRLCK ? "F_WRLCK " : "F_RDLCK ", start, ",", len, ")");
  SysResult r = t.Call(label, [&] { return fcntl(fd, cmd, &fl); });
  if (!r.ok()) return;
  if (fl.l_type == F_UNLCK) return t.Note("  conflict", "none");
  std::string pid = fl.l_pid == holder ? "holder"
                    : fl.l_pid == -1   ? "-1"
                                       : absl::StrCat("other(", fl.l_pid, ")");
  t.Note("  conflict",
         absl::StrCat(fl.l_type == F_WRLCK ? "F_WRLCK" : "F_RDLCK",
                      " start=", fl.l_start, " len=", fl.l_len, " pid=", pid));
}

SysResult SetLock(Trace& t, int fd, int cmd, short type, off_t start,
                  off_t len) {
  struct flock fl = {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = start;
  fl.l_len = len;
  const char* name = cmd == F_SETLK ? "F_SETLK" : "F_OFD_SETLK";
  const char* type_name = type == F_WRLCK   ? "F_WRLCK"
                          : type == F_RDLCK ? "F_RDLCK"
                                            : "F_UNLCK";
  return t.Call(absl::StrCat(name, "(", type_name, " ", start, ",", len, ")"),
                [&] { return fcntl(fd, cmd, &fl); });
}

void PosixLocks(Trace& t) {
  t.ExpectOk(t.CreateFile("f", Pattern(1000)));
  pid_t holder_pid;
  {
    // The child write-locks [0,100) and read-locks [200,250).
    HoldingChild holder(t, [](ChildLog& log) {
      int fd = FGDS_CHILD_SYS(log, open("f", O_RDWR));
      struct flock w = {};
      w.l_type = F_WRLCK;
      w.l_whence = SEEK_SET;
      w.l_start = 0;
      w.l_len = 100;
      FGDS_CHILD_SYS(log, fcntl(fd, F_SETLK, &w));
      struct flock r = w;
      r.l_type = F_RDLCK;
      r.l_start = 200;
      r.l_len = 50;
      FGDS_CHILD_SYS(log, fcntl(fd, F_SETLK, &r));
    });
    holder_pid = holder.pid();
    int fd = FGDS_SYS(t, open("f", O_RDWR)).fd();
    NoteGetlk(t, fd, F_GETLK, F_WRLCK, 50, 10, holder_pid);
    struct flock fl = {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = 50;
    fl.l_len = 10;
    t.Expect(fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type == F_WRLCK &&
                 fl.l_start == 0 && fl.l_len == 100 && fl.l_pid == holder_pid,
             "F_GETLK reports the child's write lock and its pid");
    t.ExpectErrnoIn(SetLock(t, fd, F_SETLK, F_WRLCK, 50, 10), {EAGAIN, EACCES});
    t.ExpectErrnoIn(SetLock(t, fd, F_SETLK, F_RDLCK, 0, 10), {EAGAIN, EACCES});
    NoteGetlk(t, fd, F_GETLK, F_WRLCK, 100, 50, holder_pid);  // adjacent
    t.ExpectOk(SetLock(t, fd, F_SETLK, F_WRLCK, 100, 50));
    // Read locks share, write locks conflict with them.
    NoteGetlk(t, fd, F_GETLK, F_RDLCK, 200, 50, holder_pid);
    t.ExpectOk(SetLock(t, fd, F_SETLK, F_RDLCK, 210, 10));
    t.ExpectErrnoIn(SetLock(t, fd, F_SETLK, F_WRLCK, 240, 20),
                    {EAGAIN, EACCES});
    NoteGetlk(t, fd, F_GETLK, F_WRLCK, 240, 20, holder_pid);
    // Locks are per process: our own locks never conflict with each other.
    t.ExpectOk(SetLock(t, fd, F_SETLK, F_WRLCK, 120, 10));
    t.ExpectOk(SetLock(t, fd, F_SETLK, F_UNLCK, 0, 0));
    holder.Release();  // its locks go with it
    t.ExpectOk(SetLock(t, fd, F_SETLK, F_WRLCK, 0, 0));
    NoteGetlk(t, fd, F_GETLK, F_WRLCK, 0, 0, holder_pid);
    FGDS_SYS(t, close(fd));
  }
  // A write lock needs a descriptor open for writing.
  int rd = FGDS_SYS(t, open("f", O_RDONLY)).fd();
  t.ExpectErrno(SetLock(t, rd, F_SETLK, F_WRLCK, 0, 1), EBADF);
  t.ExpectOk(SetLock(t, rd, F_SETLK, F_RDLCK, 0, 1));
  FGDS_SYS(t, close(rd));
}

void OfdLocks(Trace& t) {
  t.ExpectOk(t.CreateFile("f", Pattern(100)));
  int fd1 = FGDS_SYS(t, open("f", O_RDWR)).fd();
  int fd2 = FGDS_SYS(t, open("f", O_RDWR)).fd();
  t.ExpectOk(SetLock(t, fd1, F_OFD_SETLK, F_WRLCK, 0, 10));
  t.ExpectErrnoIn(SetLock(t, fd2, F_OFD_SETLK, F_WRLCK, 5, 10),
                  {EAGAIN, EACCES});
  NoteGetlk(t, fd2, F_OFD_GETLK, F_WRLCK, 5, 10, -2);
  t.ExpectOk(SetLock(t, fd2, F_OFD_SETLK, F_WRLCK, 10, 10));
  t.ExpectOk(FGDS_SYS(t, close(fd1)));  // releases fd1's description locks
  t.ExpectOk(SetLock(t, fd2, F_OFD_SETLK, F_WRLCK, 0, 10));
  FGDS_SYS(t, close(fd2));
}

}  // namespace

std::vector<Scenario> LockScenarios() {
  return {
      {"Flock", Flock},
      {"PosixLocks", PosixLocks},
      {"OfdLocks", OfdLocks},
  };
}

}  // namespace fgds::testing
