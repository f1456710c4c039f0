// Scenarios for space management: fallocate, copy_file_range and
// SEEK_DATA/SEEK_HOLE on sparse files.
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "tests/lib/posix_scenarios.h"

namespace fgds::testing {
namespace {

constexpr off_t kMiB = 1 << 20;

void Fallocate(Trace& t) {
  int fd = FGDS_SYS(t, open("a", O_RDWR | O_CREAT, 0644)).fd();
  t.ExpectOk(FGDS_SYS(t, fallocate(fd, 0, 0, kMiB)));
  auto st = t.Fstat(fd, "fd");
  t.Expect(st && st->st_size == kMiB, "mode 0 extends the size");
  t.Expect(t.ContentFd(fd, "content(a)") == std::string(kMiB, '\0'),
           "allocated space reads as zeros");
  t.ExpectOk(FGDS_SYS(t, fallocate(fd, FALLOC_FL_KEEP_SIZE, kMiB, kMiB)));
  st = t.Fstat(fd, "fd");
  t.Expect(st && st->st_size == kMiB, "KEEP_SIZE keeps the size");
  t.ExpectOk(FGDS_SYS(t, fallocate(fd, 0, 2 * kMiB, 4096)));
  st = t.Fstat(fd, "fd");
  t.Expect(st && st->st_size == 2 * kMiB + 4096, "mode 0 past EOF");
  // Allocating inside existing data must not change it.
  t.ExpectRc(FGDS_SYS(t, pwrite(fd, "keep", 4, 100)), 4);
  t.ExpectOk(FGDS_SYS(t, fallocate(fd, 0, 0, 8192)));
  t.ContentFd(fd, "content(a)");
  t.ExpectErrno(FGDS_SYS(t, fallocate(fd, 0, 0, 0)), EINVAL);
  t.ExpectErrno(FGDS_SYS(t, fallocate(fd, 0, -1, 10)), EINVAL);
  FGDS_SYS(t, close(fd));

  // Punching holes: aligned and unaligned, data around them intact.
  std::string data = Pattern(3 * 65536, 2);
  t.ExpectOk(t.CreateFile("b", data));
  fd = FGDS_SYS(t, open("b", O_RDWR)).fd();
  t.ExpectOk(FGDS_SYS(
      t,
      fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 65536, 65536)));
  data.replace(65536, 65536, std::string(65536, '\0'));
  t.ExpectOk(FGDS_SYS(
      t, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100, 1000)));
  data.replace(100, 1000, std::string(1000, '\0'));
  // Past EOF: nothing to punch, size kept.
  t.ExpectOk(
      FGDS_SYS(t, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                            3 * 65536 - 10, 65536)));
  data.replace(3 * 65536 - 10, 10, std::string(10, '\0'));
  st = t.Fstat(fd, "fd");
  t.Expect(st && st->st_size == 3 * 65536, "punching keeps the size");
  t.Expect(t.ContentFd(fd, "content(b)") == data,
           "punched ranges read as zeros, the rest is intact");
  t.ExpectErrno(FGDS_SYS(t, fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 10)),
                EOPNOTSUPP);
  FGDS_SYS(t, close(fd));
  // The hole is seen through a new descriptor too (no stale cache).
  t.Expect(t.Content("b") == data, "punched content after reopen");
  fd = FGDS_SYS(t, open("b", O_RDONLY)).fd();
  t.ExpectErrno(FGDS_SYS(t, fallocate(fd, 0, 0, 10)), EBADF);
  FGDS_SYS(t, close(fd));
  fd = FGDS_SYS(t, open(".", O_RDONLY | O_DIRECTORY)).fd();
  t.ExpectErrnoIn(FGDS_SYS(t, fallocate(fd, 0, 0, 10)), {EISDIR, EBADF});
  FGDS_SYS(t, close(fd));
}

// Copies `len` bytes, looping over short copies; records the total (or the
// error when nothing was copied) as one line.
SysResult CopyAll(Trace& t, int in, off_t* off_in, int out, off_t* off_out,
                  size_t len) {
  long total = 0;
  int err = 0;
  while (static_cast<size_t>(total) < len) {
    ssize_t n = copy_file_range(in, off_in, out, off_out, len - total, 0);
    if (n < 0) err = errno;
    if (n <= 0) break;
    total += n;
  }
  std::string label = absl::StrCat("copy_file_range loop(", len, ")");
  if (err != 0 && total == 0) return t.Record(label, -1, err);
  return t.Record(label, total, 0);
}

void CopyFileRange(Trace& t) {
  std::string src = Pattern(200000, 3);
  t.ExpectOk(t.CreateFile("src", src));
  int in = FGDS_SYS(t, open("src", O_RDONLY)).fd();
  int out = FGDS_SYS(t, open("dst", O_WRONLY | O_CREAT, 0644)).fd();
  t.ExpectRc(CopyAll(t, in, nullptr, out, nullptr, src.size()),
             static_cast<long>(src.size()));
  // Without offset pointers both file offsets advance.
  t.ExpectRc(FGDS_SYS(t, lseek(in, 0, SEEK_CUR)), 200000);
  t.ExpectRc(FGDS_SYS(t, lseek(out, 0, SEEK_CUR)), 200000);
  t.Expect(t.Content("dst") == src, "copy equals the source");
  // With offsets: the file offsets stay, a gap becomes a hole.
  off_t off_in = 1000, off_out = 300000;
  t.ExpectRc(CopyAll(t, in, &off_in, out, &off_out, 5000), 5000);
  t.Note("offsets after", absl::StrCat(off_in, " ", off_out));
  t.ExpectRc(FGDS_SYS(t, lseek(in, 0, SEEK_CUR)), 200000);
  std::string expect = src + std::string(100000, '\0') + src.substr(1000, 5000);
  t.Expect(t.Content("dst") == expect, "offset copy with a hole before it");
  // At the source's EOF there is nothing to copy.
  off_in = 200000;
  off_out = 0;
  t.ExpectRc(FGDS_SYS(t, copy_file_range(in, &off_in, out, &off_out, 100, 0)),
             0);
  // Errors.
  int rw = FGDS_SYS(t, open("src", O_RDWR)).fd();
  off_in = 0;
  off_out = 10;
  t.ExpectErrno(FGDS_SYS(t, copy_file_range(rw, &off_in, rw, &off_out, 100, 0)),
                EINVAL);  // overlapping ranges in one file
  t.ExpectErrno(FGDS_SYS(t, copy_file_range(out, nullptr, rw, nullptr, 10, 0)),
                EBADF);  // source not readable
  t.ExpectErrno(FGDS_SYS(t, copy_file_range(rw, nullptr, in, nullptr, 10, 0)),
                EBADF);  // destination not writable
  int app = FGDS_SYS(t, open("dst", O_WRONLY | O_APPEND)).fd();
  t.ExpectErrno(FGDS_SYS(t, copy_file_range(in, nullptr, app, nullptr, 10, 0)),
                EBADF);
  t.ExpectErrno(FGDS_SYS(t, copy_file_range(in, nullptr, out, nullptr, 10, 1)),
                EINVAL);  // flags must be 0
  // Copy within one file, non-overlapping.
  off_in = 0;
  off_out = 150000;
  t.ExpectRc(CopyAll(t, rw, &off_in, rw, &off_out, 1000), 1000);
  src.replace(150000, 1000, src.substr(0, 1000));
  for (int fd : {in, out, rw, app}) FGDS_SYS(t, close(fd));
  t.Expect(t.Content("src") == src, "copy within one file");
}

// lseek(SEEK_DATA/SEEK_HOLE) at `offsets` of an open file.
void NoteSeeks(Trace& t, int fd, std::initializer_list<off_t> offsets) {
  for (off_t off : offsets) {
    t.Call(absl::StrCat("lseek(", off, ", SEEK_DATA)"),
           [&] { return lseek(fd, off, SEEK_DATA); });
    t.Call(absl::StrCat("lseek(", off, ", SEEK_HOLE)"),
           [&] { return lseek(fd, off, SEEK_HOLE); });
  }
}

void SeekDataHole(Trace& t) {
  // data [0,4K), hole, data [1M,1M+4K), hole up to 3M.
  int fd = FGDS_SYS(t, open("s", O_RDWR | O_CREAT, 0644)).fd();
  std::string block = Pattern(4096, 5);
  t.ExpectRc(FGDS_SYS(t, pwrite(fd, block.data(), 4096, 0)), 4096);
  t.ExpectRc(FGDS_SYS(t, pwrite(fd, block.data(), 4096, kMiB)), 4096);
  t.ExpectOk(FGDS_SYS(t, ftruncate(fd, 3 * kMiB)));
  t.ExpectOk(FGDS_SYS(t, fsync(fd)));
  NoteSeeks(t, fd,
            {0, 100, 4096, 8192, kMiB / 2, kMiB, kMiB + 100, kMiB + 4096,
             2 * kMiB, 3 * kMiB - 1, 3 * kMiB, 4 * kMiB});
  // What any correct implementation returns, precise or not.
  t.ExpectRc(FGDS_SYS(t, lseek(fd, 0, SEEK_DATA)), 0);
  t.ExpectRc(FGDS_SYS(t, lseek(fd, kMiB + 100, SEEK_DATA)), kMiB + 100);
  t.ExpectErrno(FGDS_SYS(t, lseek(fd, 3 * kMiB, SEEK_DATA)), ENXIO);
  t.ExpectErrno(FGDS_SYS(t, lseek(fd, 3 * kMiB, SEEK_HOLE)), ENXIO);
  off_t hole = lseek(fd, 0, SEEK_HOLE);
  t.Expect(hole >= 4096 && hole <= 3 * kMiB, "first hole after the data");
  t.ExpectRc(FGDS_SYS(t, lseek(fd, -1, SEEK_DATA)), -1);
  FGDS_SYS(t, close(fd));
  // A file without holes, and one without data.
  t.ExpectOk(t.CreateFile("full", Pattern(10000)));
  fd = FGDS_SYS(t, open("full", O_RDONLY)).fd();
  NoteSeeks(t, fd, {0, 9999});
  t.ExpectRc(FGDS_SYS(t, lseek(fd, 0, SEEK_HOLE)), 10000);
  FGDS_SYS(t, close(fd));
  fd = FGDS_SYS(t, open("empty", O_RDWR | O_CREAT, 0644)).fd();
  t.ExpectOk(FGDS_SYS(t, ftruncate(fd, kMiB)));
  NoteSeeks(t, fd, {0, 4096});
  t.ExpectErrno(FGDS_SYS(t, lseek(fd, kMiB, SEEK_DATA)), ENXIO);
  FGDS_SYS(t, close(fd));
}

}  // namespace

std::vector<Scenario> SpaceScenarios() {
  return {
      {"Fallocate", Fallocate},
      {"CopyFileRange", CopyFileRange},
      {"SeekDataHole", SeekDataHole},
  };
}

}  // namespace fgds::testing
