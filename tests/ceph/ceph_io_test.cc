// File data through a ceph mount by every way in: usrbio rings with host
// iovs (registration of a file on the mount resolves its node through the
// daemon, Backend::OpenNode), large requests cut at the file's objects and
// moved in parallel (backend/ceph/object_split.h), unaligned ranges and
// short reads at end of file, checked byte for byte; GPU iovs through
// their bounce path (fake device memory: the library's staging, ring and
// daemon run for real, only the device copies are memcpy); the path each
// completion reports; and the backend's counters in /.fgds/stats.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/ceph/ceph_cluster.h"
#include "tests/integration/usrbio_gpu_harness.h"
#include "tests/lib/file_contents.h"

namespace fgds::testing {
namespace {

constexpr uint64_t kMiB = 1 << 20;

using CephIoTest = CephTest;

bool WritePattern(const std::string& path, uint64_t size, uint64_t seed) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return false;
  std::vector<char> buf(kMiB);
  bool ok = true;
  for (uint64_t off = 0; ok && off < size; off += kMiB) {
    uint64_t n = std::min<uint64_t>(kMiB, size - off);
    FillPattern(buf.data(), n, seed, off);
    ok = pwrite(fd, buf.data(), n, static_cast<off_t>(off)) ==
         static_cast<ssize_t>(n);
  }
  ok = ok && fsync(fd) == 0;
  return close(fd) == 0 && ok;
}

// A counter of the "# ceph:" line of /.fgds/stats.
uint64_t CephCounter(const std::string& mountpoint, const std::string& name) {
  std::string stats = ReadAll(mountpoint + "/.fgds/stats");
  size_t at = stats.find(" " + name + "=");
  if (at == std::string::npos) return ~0ull;
  return std::stoull(stats.substr(at + name.size() + 2));
}

TEST_F(CephIoTest, UsrbioHostIovsAcrossObjectsUnalignedAndAtEof) {
  const std::string path = dir_ + "/data";
  constexpr uint64_t kSize = 20 * kMiB + 12345;  // 6 objects, the last short
  ASSERT_TRUE(WritePattern(path, kSize, 1));

  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  Iov iov(&s.s, 40 * kMiB);
  ASSERT_EQ(iov.result, 0);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  int id = RegisterPath(&s.s, path, O_RDWR);
  ASSERT_GE(id, 0) << strerror(-id);
  const uint64_t splits_before =
      CephCounter(fs_->mountpoint(), "split_requests");
  ASSERT_NE(splits_before, ~0ull)
      << ReadAll(fs_->mountpoint() + "/.fgds/stats");

  // Reads: unaligned, across several object boundaries, and one that runs
  // past the end of the file (short, only there).
  struct Range {
    uint64_t offset, len;
  };
  const Range reads[] = {{3 * kMiB + 7, 9 * kMiB + 3},
                         {kMiB - 1, 2},
                         {0, 16 * kMiB},
                         {18 * kMiB + 1, 8 * kMiB}};
  uint64_t at = 0;
  for (const Range& r : reads) {
    ASSERT_EQ(
        fgds_prep_read(&ior.ior, &iov.iov, iov.at(at), id, r.offset, r.len, at),
        0);
    at += r.len;
  }
  fgds_cqe cqes[4];
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, cqes, 4), 4);
  for (const fgds_cqe& cqe : cqes) {
    uint64_t i = 0;
    at = 0;
    for (; i < 4 && at != cqe.userdata; ++i) at += reads[i].len;
    ASSERT_LT(i, 4u);
    const uint64_t want = std::min(reads[i].len, kSize - reads[i].offset);
    ASSERT_EQ(cqe.result, static_cast<int64_t>(want)) << "read " << i;
    EXPECT_EQ(cqe.path, FGDS_PATH_PAGE_CACHE);
    EXPECT_TRUE(MatchesPattern(iov.at(cqe.userdata), want, 1, reads[i].offset))
        << "read " << i << " bytes differ";
  }

  // Writes: a large unaligned one across objects, and one that extends the
  // file, then read back through POSIX (a fresh open: no stale pages).
  std::string model = ReadAll(path);
  ASSERT_EQ(model.size(), kSize);
  const Range writes[] = {{2 * kMiB + 333, 13 * kMiB + 17},
                          {kSize - 10, 5 * kMiB}};
  at = 0;
  for (int w = 0; w < 2; ++w) {
    FillPattern(iov.at(at), writes[w].len, 50 + w, 0);
    ASSERT_EQ(fgds_prep_write(&ior.ior, &iov.iov, iov.at(at), id,
                              writes[w].offset, writes[w].len, w),
              0);
    at += writes[w].len;
  }
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, cqes, 2), 2);
  for (int w = 0; w < 2; ++w) {
    EXPECT_EQ(cqes[w].result,
              static_cast<int64_t>(writes[cqes[w].userdata].len));
    EXPECT_EQ(cqes[w].path, FGDS_PATH_PAGE_CACHE);
  }
  ASSERT_EQ(fgds_prep_fsync(&ior.ior, id, 0, 9), 0);
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, cqes, 1), 1);
  EXPECT_EQ(cqes[0].result, 0);
  EXPECT_EQ(cqes[0].path, FGDS_PATH_NONE);
  for (int w = 0; w < 2; ++w) {
    std::string piece(writes[w].len, '\0');
    FillPattern(piece.data(), writes[w].len, 50 + w, 0);
    if (model.size() < writes[w].offset + writes[w].len) {
      model.resize(writes[w].offset + writes[w].len);
    }
    model.replace(writes[w].offset, writes[w].len, piece);
  }
  std::string back = ReadAll(path);
  ASSERT_EQ(back.size(), model.size());
  EXPECT_TRUE(back == model) << "file differs after usrbio writes";

  // The large requests went out in object pieces, and the stats say so.
  const uint64_t splits = CephCounter(fs_->mountpoint(), "split_requests");
  EXPECT_GE(splits - splits_before, 5u);
  EXPECT_GT(CephCounter(fs_->mountpoint(), "split_pieces"), splits);
  std::string stats = ReadAll(fs_->mountpoint() + "/.fgds/stats");
  EXPECT_NE(stats.find("backend=ceph"), std::string::npos) << stats;
  EXPECT_NE(stats.find("engine=libcephfs"), std::string::npos) << stats;
}

// A striped layout (4 objects, 1 MiB units) cuts at every unit: POSIX
// requests that cross units and usrbio requests over many of them read
// and write the right bytes.
TEST_F(CephIoTest, StripedLayoutByteForByte) {
  const std::string striped = dir_ + "/striped";
  ASSERT_EQ(mkdir(striped.c_str(), 0755), 0);
  static constexpr char kLayout[] =
      "stripe_unit=1048576 stripe_count=4 object_size=4194304";
  ASSERT_EQ(
      setxattr(striped.c_str(), "ceph.dir.layout", kLayout, strlen(kLayout), 0),
      0)
      << strerror(errno);
  const std::string path = striped + "/f";
  constexpr uint64_t kSize = 9 * kMiB + 100;
  ASSERT_TRUE(WritePattern(path, kSize, 3));
  char layout[128] = {};
  ASSERT_GT(getxattr(path.c_str(), "ceph.file.layout.stripe_count", layout,
                     sizeof(layout) - 1),
            0);
  EXPECT_STREQ(layout, "4");

  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  Iov iov(&s.s, 16 * kMiB);
  ASSERT_EQ(iov.result, 0);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  int id = RegisterPath(&s.s, path, O_RDWR);
  ASSERT_GE(id, 0) << strerror(-id);
  // From an odd offset to past the end of the file: short there.
  ASSERT_EQ(
      fgds_prep_read(&ior.ior, &iov.iov, iov.at(0), id, 511, 10 * kMiB, 1), 0);
  fgds_cqe cqe;
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, &cqe, 1), 1);
  ASSERT_EQ(cqe.result, static_cast<int64_t>(kSize - 511));
  EXPECT_TRUE(MatchesPattern(iov.at(0), kSize - 511, 3, 511));
  // POSIX, unaligned, across unit boundaries.
  int fd = open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  std::vector<char> buf(3 * kMiB);
  ASSERT_EQ(pread(fd, buf.data(), buf.size(), kMiB - 9),
            static_cast<ssize_t>(buf.size()));
  EXPECT_TRUE(MatchesPattern(buf.data(), buf.size(), 3, kMiB - 9));
  close(fd);
}

// GPU iovs over a ceph mount take the bounce path: the library stages
// through host memory it shares with the daemon, and the daemon moves that
// with libcephfs like any host iov.
TEST_F(CephIoTest, GpuIovsBounceThroughTheStaging) {
  const std::string path = dir_ + "/gpu";
  constexpr uint64_t kSize = 9 * kMiB + 7;
  ASSERT_TRUE(WritePattern(path, kSize, 21));
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  direct::FakeDeviceOps ops;
  const uint64_t dev = ops.Alloc(12 * kMiB);
  FakeGpuIov g(&s.s, &ops, dev, 12 * kMiB, 2 * kMiB, 512 * 1024);
  ASSERT_EQ(g.result, 0);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  int id = RegisterPath(&s.s, path, O_RDWR);
  ASSERT_GE(id, 0) << strerror(-id);
  char* base = reinterpret_cast<char*>(dev);
  // All of the file from an odd offset, and past its end.
  ASSERT_EQ(fgds_prep_read(&ior.ior, &g.iov, base + 3, id, 4095, 10 * kMiB, 1),
            0);
  fgds_cqe cqe;
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, &cqe, 1), 1);
  ASSERT_EQ(cqe.result, static_cast<int64_t>(kSize - 4095));
  EXPECT_EQ(cqe.path, FGDS_PATH_BOUNCE);
  EXPECT_TRUE(MatchesPattern(base + 3, kSize - 4095, 21, 4095));
  // A write from device memory across two objects.
  FillPattern(base, 5 * kMiB, 22, 0);
  ASSERT_EQ(
      fgds_prep_write(&ior.ior, &g.iov, base, id, 2 * kMiB + 9, 5 * kMiB, 2),
      0);
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, &cqe, 1), 1);
  ASSERT_EQ(cqe.result, static_cast<int64_t>(5 * kMiB));
  EXPECT_EQ(cqe.path, FGDS_PATH_BOUNCE);
  std::string back = ReadAll(path);
  ASSERT_EQ(back.size(), kSize);
  EXPECT_TRUE(MatchesPattern(back.data(), 2 * kMiB + 9, 21, 0));
  EXPECT_TRUE(MatchesPattern(back.data() + 2 * kMiB + 9, 5 * kMiB, 22, 0));
  EXPECT_TRUE(MatchesPattern(back.data() + 7 * kMiB + 9, kSize - 7 * kMiB - 9,
                             21, 7 * kMiB + 9));
}

}  // namespace
}  // namespace fgds::testing
