// Scenarios for open flags, read/write/pread/pwrite, close and fsync.
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "tests/lib/posix_scenarios.h"

namespace fgds::testing {
namespace {

// Reads up to `n` bytes at the current offset; records the call and data.
std::string ReadSome(Trace& t, int fd, size_t n) {
  std::string buf(n, '\0');
  SysResult r = t.Call(absl::StrCat("read(fd, ", n, ")"),
                       [&] { return read(fd, buf.data(), n); });
  buf.resize(r.ok() ? r.rc : 0);
  t.Note("  data", absl::StrCat("\"", absl::CEscape(buf), "\""));
  return buf;
}

std::string PreadSome(Trace& t, int fd, size_t n, off_t off) {
  std::string buf(n, '\0');
  SysResult r = t.Call(absl::StrCat("pread(fd, ", n, ", ", off, ")"),
                       [&] { return pread(fd, buf.data(), n, off); });
  buf.resize(r.ok() ? r.rc : 0);
  t.Note("  data", absl::StrCat("\"", absl::CEscape(buf.substr(0, 64)), "\""));
  return buf;
}

void OpenFlags(Trace& t) {
  struct stat st;
  int fd = FGDS_SYS(t, open("n", O_CREAT | O_EXCL | O_WRONLY, 0640)).fd();
  t.Expect(fd >= 0, "O_CREAT|O_EXCL creates");
  t.Expect(IsA(t.Fstat(fd, "fd"), S_IFREG, 0640), "created with mode 0640");
  FGDS_SYS(t, close(fd));
  t.ExpectErrno(FGDS_SYS(t, open("n", O_CREAT | O_EXCL | O_WRONLY, 0640)),
                EEXIST);
  // O_EXCL never follows a symlink, even a dangling one.
  t.ExpectOk(FGDS_SYS(t, symlink("n", "sl")));
  t.ExpectErrno(FGDS_SYS(t, open("sl", O_CREAT | O_EXCL | O_RDWR, 0644)),
                EEXIST);
  t.ExpectOk(FGDS_SYS(t, symlink("nowhere", "dangling")));
  t.ExpectErrno(FGDS_SYS(t, open("dangling", O_CREAT | O_EXCL | O_RDWR, 0644)),
                EEXIST);
  t.ExpectErrno(FGDS_SYS(t, lstat("nowhere", &st)), ENOENT);
  // Without O_EXCL, O_CREAT through a dangling symlink creates the target.
  fd = FGDS_SYS(t, open("dangling", O_CREAT | O_WRONLY, 0600)).fd();
  FGDS_SYS(t, close(fd));
  t.Expect(IsA(t.Lstat("nowhere"), S_IFREG, 0600), "target created");
  // O_CREAT on an existing file neither truncates nor changes the mode.
  t.ExpectOk(t.CreateFile("e", "existing"));
  fd = FGDS_SYS(t, open("e", O_CREAT | O_RDWR, 0600)).fd();
  FGDS_SYS(t, close(fd));
  t.Lstat("e");
  t.Expect(t.Content("e") == "existing", "O_CREAT alone keeps data");
  // O_TRUNC.
  fd = FGDS_SYS(t, open("e", O_WRONLY | O_TRUNC)).fd();
  t.Fstat(fd, "fd after O_TRUNC");
  FGDS_SYS(t, close(fd));
  t.Expect(t.Content("e") == "", "O_TRUNC empties the file");
  t.ExpectOk(t.CreateFile("e", "again"));
  fd = FGDS_SYS(t, open("e", O_RDWR | O_CREAT | O_TRUNC, 0644)).fd();
  t.ExpectRc(FGDS_SYS(t, write(fd, "new", 3)), 3);
  FGDS_SYS(t, close(fd));
  t.Expect(t.Content("e") == "new", "O_CREAT|O_TRUNC then write");
  t.ExpectOk(t.CreateFile("e", "readonly trunc"));
  fd = FGDS_SYS(t, open("e", O_RDONLY | O_TRUNC)).fd();  // Linux truncates
  FGDS_SYS(t, close(fd));
  t.Content("e");
  // O_APPEND: every write goes to the end, whatever the offset.
  t.ExpectOk(t.CreateFile("a", "12345"));
  fd = FGDS_SYS(t, open("a", O_WRONLY | O_APPEND)).fd();
  t.ExpectRc(FGDS_SYS(t, lseek(fd, 0, SEEK_SET)), 0);
  t.ExpectRc(FGDS_SYS(t, write(fd, "ab", 2)), 2);
  t.ExpectRc(FGDS_SYS(t, lseek(fd, 0, SEEK_CUR)), 7);
  t.ExpectRc(FGDS_SYS(t, pwrite(fd, "cd", 2, 0)), 2);  // Linux appends
  FGDS_SYS(t, close(fd));
  t.Expect(t.Content("a") == "12345abcd", "O_APPEND writes at the end");
  // Two appenders interleave without overwriting each other.
  int a1 = FGDS_SYS(t, open("a", O_WRONLY | O_APPEND)).fd();
  int a2 = FGDS_SYS(t, open("a", O_WRONLY | O_APPEND)).fd();
  FGDS_SYS(t, write(a1, "1", 1));
  FGDS_SYS(t, write(a2, "2", 1));
  FGDS_SYS(t, write(a1, "3", 1));
  FGDS_SYS(t, close(a1));
  FGDS_SYS(t, close(a2));
  t.Expect(t.Content("a") == "12345abcd123", "appenders interleave");
  // umask, and a creator may write a file it created without write mode.
  fd = FGDS_SYS(t, open("m", O_CREAT | O_WRONLY, 0777)).fd();
  FGDS_SYS(t, close(fd));
  t.Expect(IsA(t.Lstat("m"), S_IFREG, 0755), "umask applies to create");
  fd = FGDS_SYS(t, open("z", O_CREAT | O_RDWR, 0)).fd();
  t.ExpectRc(FGDS_SYS(t, write(fd, "x", 1)), 1);
  FGDS_SYS(t, close(fd));
  t.Lstat("z");
  // Errors.
  t.ExpectErrno(FGDS_SYS(t, open("missing", O_RDONLY)), ENOENT);
  t.ExpectErrno(FGDS_SYS(t, open("missing/x", O_CREAT | O_RDWR, 0644)), ENOENT);
  t.ExpectOk(FGDS_SYS(t, mkdir("d", 0755)));
  t.ExpectErrno(FGDS_SYS(t, open("d", O_WRONLY)), EISDIR);
  t.ExpectErrno(FGDS_SYS(t, open("d", O_RDWR)), EISDIR);
  t.ExpectErrno(FGDS_SYS(t, open("d", O_CREAT | O_WRONLY, 0644)), EISDIR);
  t.ExpectErrno(FGDS_SYS(t, open("new/", O_CREAT | O_WRONLY, 0644)), EISDIR);
  fd = FGDS_SYS(t, open("d", O_RDONLY)).fd();
  t.Expect(fd >= 0, "a directory opens read-only");
  char c;
  t.ExpectErrno(FGDS_SYS(t, read(fd, &c, 1)), EISDIR);
  FGDS_SYS(t, close(fd));
  t.ExpectErrno(FGDS_SYS(t, open("e", O_RDONLY | O_DIRECTORY)), ENOTDIR);
  t.ExpectErrno(FGDS_SYS(t, open("e/", O_RDONLY)), ENOTDIR);
  t.ExpectErrno(FGDS_SYS(t, open("e/x", O_CREAT | O_RDWR, 0644)), ENOTDIR);
  t.ExpectErrno(FGDS_SYS(t, open(TooLongName(), O_CREAT | O_RDWR, 0644)),
                ENAMETOOLONG);
  t.ExpectErrno(FGDS_SYS(t, open("", O_RDONLY)), ENOENT);
  fd = FGDS_SYS(t, open("e", O_WRONLY)).fd();
  t.ExpectErrno(FGDS_SYS(t, read(fd, &c, 1)), EBADF);
  FGDS_SYS(t, close(fd));
  fd = FGDS_SYS(t, open("e", O_RDONLY)).fd();
  t.ExpectErrno(FGDS_SYS(t, write(fd, "x", 1)), EBADF);
  FGDS_SYS(t, close(fd));
  fd = FGDS_SYS(t, open("e", O_RDWR | O_SYNC | O_NOATIME)).fd();
  t.ExpectRc(FGDS_SYS(t, write(fd, "sync", 4)), 4);
  FGDS_SYS(t, close(fd));
  t.Content("e");
  t.ReadDir(".");
}

void ReadWrite(Trace& t) {
  int fd = FGDS_SYS(t, open("f", O_RDWR | O_CREAT, 0644)).fd();
  t.ExpectRc(FGDS_SYS(t, write(fd, "hello world", 11)), 11);
  t.ExpectRc(FGDS_SYS(t, lseek(fd, 0, SEEK_CUR)), 11);
  t.Expect(ReadSome(t, fd, 10).empty(), "read at EOF returns 0");
  t.Expect(PreadSome(t, fd, 5, 6) == "world", "pread");
  t.ExpectRc(FGDS_SYS(t, pwrite(fd, "W", 1, 6)), 1);
  t.ExpectRc(FGDS_SYS(t, lseek(fd, 0, SEEK_CUR)), 11);  // pwrite: no move
  t.ExpectRc(FGDS_SYS(t, lseek(fd, 0, SEEK_SET)), 0);
  t.Expect(ReadSome(t, fd, 4) == "hell", "read from the start");
  t.Expect(ReadSome(t, fd, 100) == "o World", "short read at EOF");
  // Writing past EOF leaves a hole that reads as zeros.
  t.ExpectRc(FGDS_SYS(t, lseek(fd, 100, SEEK_SET)), 100);
  t.ExpectRc(FGDS_SYS(t, write(fd, "X", 1)), 1);
  auto st = t.Fstat(fd, "fd");
  t.Expect(st && st->st_size == 101, "size after write past EOF");
  t.Expect(t.ContentFd(fd, "content(fd)") ==
               "hello World" + std::string(89, '\0') + "X",
           "hole reads as zeros");
  t.ExpectRc(FGDS_SYS(t, lseek(fd, 0, SEEK_END)), 101);
  t.ExpectRc(FGDS_SYS(t, lseek(fd, -1, SEEK_END)), 100);
  t.ExpectErrno(FGDS_SYS(t, lseek(fd, -1, SEEK_SET)), EINVAL);
  t.Expect(PreadSome(t, fd, 10, 1000).empty(), "pread past EOF returns 0");
  char c;
  t.ExpectErrno(FGDS_SYS(t, pread(fd, &c, 1, -1)), EINVAL);
  t.ExpectRc(FGDS_SYS(t, write(fd, "", 0)), 0);
  // Far offsets: a sparse 1 TiB file.
  t.ExpectRc(FGDS_SYS(t, pwrite(fd, "end", 3, 1LL << 40)), 3);
  st = t.Fstat(fd, "fd");
  t.Expect(st && st->st_size == (1LL << 40) + 3, "size after a far write");
  t.Expect(
      PreadSome(t, fd, 10, (1LL << 40) - 2) == std::string(2, '\0') + "end",
      "read across the far write");
  t.ExpectOk(FGDS_SYS(t, ftruncate(fd, 101)));
  // Vectored I/O.
  char a[3] = {'a', 'b', 'c'}, b[2] = {'d', 'e'};
  struct iovec wv[2] = {{a, 3}, {b, 2}};
  t.ExpectRc(FGDS_SYS(t, pwritev(fd, wv, 2, 20)), 5);
  char r1[2], r2[4];
  struct iovec rv[2] = {{r1, 2}, {r2, 4}};
  t.ExpectRc(FGDS_SYS(t, preadv(fd, rv, 2, 19)), 6);
  t.Note("preadv", absl::CEscape(std::string(r1, 2) + std::string(r2, 4)));
  FGDS_SYS(t, close(fd));
  // A large write in one call, then unaligned reads.
  std::string big = Pattern((1 << 20) + 123, 1);
  fd = FGDS_SYS(t, open("big", O_RDWR | O_CREAT | O_TRUNC, 0644)).fd();
  t.ExpectRc(FGDS_SYS(t, write(fd, big.data(), big.size())),
             static_cast<long>(big.size()));
  std::string part(70000, '\0');
  t.ExpectRc(FGDS_SYS(t, pread(fd, part.data(), part.size(), 300001)), 70000);
  t.Expect(part == big.substr(300001, 70000), "unaligned pread matches");
  t.ExpectRc(FGDS_SYS(t, pwrite(fd, "0123456789", 10, 4095)), 10);
  big.replace(4095, 10, "0123456789");
  FGDS_SYS(t, close(fd));
  t.Expect(t.Content("big") == big, "large file content");
  // Two descriptors of one file see each other's writes at once.
  int w = FGDS_SYS(t, open("big", O_WRONLY)).fd();
  int r = FGDS_SYS(t, open("big", O_RDONLY)).fd();
  t.ExpectRc(FGDS_SYS(t, pwrite(w, "shared", 6, 500)), 6);
  t.Expect(PreadSome(t, r, 6, 500) == "shared", "coherent across fds");
  t.ExpectRc(FGDS_SYS(t, ftruncate(w, 510)), 0);
  t.Fstat(r, "reader fd");
  FGDS_SYS(t, close(w));
  FGDS_SYS(t, close(r));
}

void CloseFsync(Trace& t) {
  int fd = FGDS_SYS(t, open("f", O_RDWR | O_CREAT, 0644)).fd();
  t.ExpectRc(FGDS_SYS(t, write(fd, "durable", 7)), 7);
  t.ExpectOk(FGDS_SYS(t, fsync(fd)));
  t.ExpectOk(FGDS_SYS(t, fdatasync(fd)));
  int dup_fd = FGDS_SYS(t, dup(fd)).fd();
  t.ExpectOk(FGDS_SYS(t, close(fd)));  // flush, but dup_fd keeps it open
  t.ExpectRc(FGDS_SYS(t, write(dup_fd, "!", 1)), 1);
  t.ExpectOk(FGDS_SYS(t, close(dup_fd)));
  t.ExpectErrno(FGDS_SYS(t, close(dup_fd)), EBADF);
  t.Expect(t.Content("f") == "durable!", "data visible after close");
  int rd = FGDS_SYS(t, open("f", O_RDONLY)).fd();
  t.ExpectOk(FGDS_SYS(t, fsync(rd)));
  t.ExpectOk(FGDS_SYS(t, fdatasync(rd)));
  t.ExpectOk(FGDS_SYS(t, close(rd)));
  // fsync on directories: needed by applications to persist a create.
  int dfd = FGDS_SYS(t, open(".", O_RDONLY | O_DIRECTORY)).fd();
  t.ExpectOk(FGDS_SYS(t, fsync(dfd)));
  t.ExpectOk(FGDS_SYS(t, fdatasync(dfd)));
  t.ExpectOk(FGDS_SYS(t, close(dfd)));
  t.ExpectOk(FGDS_SYS(t, mkdir("d", 0755)));
  dfd = FGDS_SYS(t, open("d", O_RDONLY | O_DIRECTORY)).fd();
  t.ExpectOk(FGDS_SYS(t, fsync(dfd)));
  t.ExpectOk(FGDS_SYS(t, syncfs(dfd)));
  t.ExpectOk(FGDS_SYS(t, close(dfd)));
  t.ExpectOk(FGDS_SYS(t, mkfifo("p", 0644)));
  int pfd = FGDS_SYS(t, open("p", O_RDWR)).fd();
  t.ExpectErrno(FGDS_SYS(t, fsync(pfd)), EINVAL);
  FGDS_SYS(t, close(pfd));
  // Many opens and closes of one file must not leak or lose data.
  int failures = 0;
  for (int i = 0; i < 200; ++i) {
    int f = open("f", i % 2 ? O_RDONLY : O_WRONLY | O_APPEND);
    if (f < 0 || (i % 2 == 0 && write(f, "+", 1) != 1) || close(f) != 0) {
      ++failures;
    }
  }
  t.Note("failed open/write/close rounds", absl::StrCat(failures));
  t.Lstat("f");
}

// Shared mappings must be coherent with read/write on the same file.
void Mmap(Trace& t) {
  std::string data = Pattern(3 * 4096 + 100, 6);
  t.ExpectOk(t.CreateFile("m", data));
  int fd = FGDS_SYS(t, open("m", O_RDWR)).fd();
  void* map =
      mmap(nullptr, data.size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  t.Record("mmap(MAP_SHARED, rw)", map == MAP_FAILED ? -1 : 0,
           map == MAP_FAILED ? errno : 0);
  if (map != MAP_FAILED) {
    char* p = static_cast<char*>(map);
    t.Expect(std::string(p, data.size()) == data, "mapping shows the file");
    memcpy(p + 4096, "MAPPED", 6);
    data.replace(4096, 6, "MAPPED");
    t.ExpectOk(FGDS_SYS(t, msync(map, data.size(), MS_SYNC)));
    t.Expect(PreadSome(t, fd, 6, 4096) == "MAPPED",
             "pread sees a store through the mapping");
    t.ExpectRc(FGDS_SYS(t, pwrite(fd, "WRITTEN", 7, 8192)), 7);
    data.replace(8192, 7, "WRITTEN");
    t.Note("mapping after pwrite", std::string(p + 8192, 7));
    t.Expect(std::string(p + 8192, 7) == "WRITTEN", "the mapping sees pwrite");
    munmap(map, data.size());
  }
  FGDS_SYS(t, close(fd));
  t.Expect(t.Content("m") == data, "file content after unmap");
  // A private mapping never writes back.
  fd = FGDS_SYS(t, open("m", O_RDONLY)).fd();
  map = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  t.Record("mmap(MAP_PRIVATE)", map == MAP_FAILED ? -1 : 0,
           map == MAP_FAILED ? errno : 0);
  if (map != MAP_FAILED) {
    memcpy(map, "private", 7);
    munmap(map, 4096);
  }
  FGDS_SYS(t, close(fd));
  t.Expect(t.Content("m") == data, "MAP_PRIVATE stores stay private");
  // MAP_SHARED writable on a read-only descriptor is refused.
  fd = FGDS_SYS(t, open("m", O_RDONLY)).fd();
  map = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  t.Record("mmap(MAP_SHARED, rw) on O_RDONLY", map == MAP_FAILED ? -1 : 0,
           map == MAP_FAILED ? errno : 0);
  t.Expect(map == MAP_FAILED && errno == EACCES, "EACCES");
  if (map != MAP_FAILED) munmap(map, 4096);
  FGDS_SYS(t, close(fd));
}

}  // namespace

std::vector<Scenario> IoScenarios() {
  return {
      {"OpenFlags", OpenFlags},
      {"ReadWrite", ReadWrite},
      {"CloseFsync", CloseFsync},
      {"Mmap", Mmap},
  };
}

}  // namespace fgds::testing
