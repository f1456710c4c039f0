// usrbio GPU iovs, bounce path, against a mounted daemon with fake device
// memory: reads and writes verified byte for byte, sub-ranges, unaligned
// shapes, requests larger than the staging, mixed host and GPU entries,
// EOF, per-request errors, a buffer freed under I/O.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "tests/integration/usrbio_gpu_harness.h"
#include "usrbio/internal.h"

namespace fgds::testing {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// Completions by userdata.
std::map<uint64_t, fgds_cqe> ByUserdata(const std::vector<fgds_cqe>& cqes) {
  std::map<uint64_t, fgds_cqe> out;
  for (const fgds_cqe& c : cqes) out[c.userdata] = c;
  return out;
}

std::vector<fgds_cqe> RunAll(fgds_ior* ior, unsigned n) {
  std::vector<fgds_cqe> cqes(n);
  int got = SubmitAndWaitAll(ior, cqes.data(), n);
  EXPECT_EQ(got, static_cast<int>(n));
  cqes.resize(got > 0 ? static_cast<size_t>(got) : 0);
  return cqes;
}

TEST_F(UsrbioGpuTest, ReadsLandInDeviceMemoryThroughBoundedStaging) {
  const uint64_t size = 8 * kMiB;
  const std::string path = MakeFile("r", size, 11);
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  const uint64_t dev = ops_.Alloc(size);
  // Staging of 4 chunks of 256 KiB: every request below is larger.
  FakeGpuIov g(&s.s, &ops_, dev, size, kMiB, 256 * 1024);
  ASSERT_EQ(g.result, 0);
  EXPECT_EQ(g.iov.base, reinterpret_cast<void*>(dev));
  EXPECT_EQ(g.iov.size, size);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  const int id = Register(&s.s, path, O_RDONLY);
  ASSERT_GE(id, 0);

  struct Req {
    uint64_t dev_offset, file_offset, len;
  } reqs[] = {
      {0, 0, 4 * kMiB},                      // aligned, 16 chunks
      {4 * kMiB + 1, 4097, 2 * kMiB + 333},  // unaligned everything
      {7 * kMiB, 7 * kMiB, 1},               // one byte
      {7 * kMiB + 4096, 12345, 300000},      // unaligned start
  };
  for (size_t i = 0; i < std::size(reqs); ++i) {
    ASSERT_EQ(fgds_prep_read(&ior.ior, &g.iov, Dev(dev, reqs[i].dev_offset), id,
                             reqs[i].file_offset, reqs[i].len, i + 1),
              0);
  }
  auto cqes = ByUserdata(RunAll(&ior.ior, std::size(reqs)));
  for (size_t i = 0; i < std::size(reqs); ++i) {
    const fgds_cqe& c = cqes[i + 1];
    EXPECT_EQ(c.result, static_cast<int64_t>(reqs[i].len)) << i;
    EXPECT_EQ(c.path, FGDS_PATH_BOUNCE);
    EXPECT_EQ(c.tag, 0u);
    EXPECT_TRUE(MatchesPattern(Dev(dev, reqs[i].dev_offset), reqs[i].len, 11,
                               reqs[i].file_offset))
        << i;
  }
  EXPECT_EQ(ior.ior.in_flight, 0u);
  // Nothing copied outside the requests: the gap before 7 MiB + 4096.
  EXPECT_EQ(*Dev(dev, 7 * kMiB + 1), 0);
  // fgds stat puts every byte in the GPU bounce rows, none in host memory.
  const std::string mnt = fs_->mountpoint();
  const UsrbioStatsRow direct =
      ReadUsrbioStats(mnt, "read", "gpu-bounce", "o-direct");
  const UsrbioStatsRow cached =
      ReadUsrbioStats(mnt, "read", "gpu-bounce", "page-cache");
  int64_t bytes = 0;
  for (const Req& r : reqs) bytes += static_cast<int64_t>(r.len);
  EXPECT_EQ(direct.bytes + cached.bytes, bytes);
  EXPECT_EQ(direct.errors + cached.errors, 0);
  EXPECT_EQ(ReadUsrbioStats(mnt, "read", "host", "o-direct").entries, 0);
  EXPECT_EQ(ReadUsrbioStats(mnt, "read", "host", "page-cache").entries, 0);
  EXPECT_EQ(ReadUsrbioStats(mnt, "read", "gpu-direct", "o-direct").entries, 0);
  // And per GPU: the fake device's PCI address, told to the daemon with
  // the staging iov (IOV_GPU_STAGING), gets them all.
  const UsrbioGpuStatsRow gpu =
      ReadUsrbioGpuStats(mnt, "0000:00:00.0", "read", "gpu-bounce");
  EXPECT_EQ(gpu.bytes, bytes);
  EXPECT_EQ(gpu.entries, direct.entries + cached.entries);
  EXPECT_EQ(gpu.errors, 0);
  EXPECT_EQ(gpu.iovs_direct, 0);  // no dma-buf offered: no registration
  EXPECT_EQ(
      ReadUsrbioGpuStats(mnt, "0000:00:00.0", "read", "gpu-direct").entries, 0);
}

TEST_F(UsrbioGpuTest, SubRangeOfALargerAllocation) {
  const uint64_t size = 2 * kMiB;
  const std::string path = MakeFile("sub", size, 12);
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  const uint64_t block = ops_.Alloc(8 * kMiB);  // a caching allocator block
  const uint64_t tensor = block + 3 * kMiB + 512;
  FakeGpuIov g(&s.s, &ops_, tensor, size, 512 * 1024, 128 * 1024);
  ASSERT_EQ(g.result, 0);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  const int id = Register(&s.s, path, O_RDONLY);
  ASSERT_EQ(fgds_prep_read(&ior.ior, &g.iov, Dev(tensor), id, 0, size, 7), 0);
  // Outside the iov, though inside the allocation: refused.
  EXPECT_EQ(fgds_prep_read(&ior.ior, &g.iov, Dev(tensor, 1), id, 0, size, 8),
            -EINVAL);
  EXPECT_EQ(fgds_prep_read(&ior.ior, &g.iov, Dev(tensor - 1), id, 0, 10, 8),
            -EINVAL);
  auto cqes = RunAll(&ior.ior, 1);
  ASSERT_EQ(cqes.size(), 1u);
  EXPECT_EQ(cqes[0].result, static_cast<int64_t>(size));
  EXPECT_TRUE(MatchesPattern(Dev(tensor), size, 12, 0));
  EXPECT_EQ(*Dev(tensor - 1), 0);
  EXPECT_EQ(*Dev(tensor + size), 0);
  // Past the allocation's end: refused at wrap time.
  fgds_iov bad;
  fgds_iov_gpu_params p = {};
  EXPECT_EQ(
      usrbio::gpu::WrapGpuIov(&s.s, &bad, block + kMiB, 8 * kMiB, &p, &ops_),
      -EINVAL);
  // Not device memory at all.
  char host[64];
  EXPECT_EQ(usrbio::gpu::WrapGpuIov(
                &s.s, &bad, reinterpret_cast<uint64_t>(host), 64, &p, &ops_),
            -EFAULT);
}

TEST_F(UsrbioGpuTest, WritesReachTheFile) {
  const uint64_t size = 6 * kMiB;
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  const uint64_t dev = ops_.Alloc(size);
  FillPattern(Dev(dev), size, 13, 0);
  FakeGpuIov g(&s.s, &ops_, dev, size, kMiB, 256 * 1024);
  ASSERT_EQ(g.result, 0);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  int fd = open(Mnt("w").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  const int id = fgds_fd_register(&s.s, fd, 0);
  close(fd);
  ASSERT_GE(id, 0);
  // Aligned (O_DIRECT chunks), then an unaligned one; all disjoint.
  ASSERT_EQ(fgds_prep_write(&ior.ior, &g.iov, Dev(dev), id, 0, 4 * kMiB, 1), 0);
  ASSERT_EQ(fgds_prep_write(&ior.ior, &g.iov, Dev(dev, 4 * kMiB), id, 4 * kMiB,
                            kMiB + 777, 2),
            0);
  auto cqes = ByUserdata(RunAll(&ior.ior, 2));
  EXPECT_EQ(cqes[1].result, static_cast<int64_t>(4 * kMiB));
  EXPECT_EQ(cqes[2].result, static_cast<int64_t>(kMiB + 777));
  EXPECT_EQ(cqes[1].path, FGDS_PATH_BOUNCE);
  const std::string mnt = fs_->mountpoint();
  EXPECT_EQ(ReadUsrbioStats(mnt, "write", "gpu-bounce", "o-direct").bytes +
                ReadUsrbioStats(mnt, "write", "gpu-bounce", "page-cache").bytes,
            static_cast<int64_t>(5 * kMiB + 777));
  std::vector<char> back(5 * kMiB + 777);
  int bfd = open(Backing("w").c_str(), O_RDONLY);
  ASSERT_GE(bfd, 0);
  EXPECT_EQ(pread(bfd, back.data(), back.size(), 0),
            static_cast<ssize_t>(back.size()));
  close(bfd);
  EXPECT_TRUE(MatchesPattern(back.data(), back.size(), 13, 0));
}

TEST_F(UsrbioGpuTest, HostAndGpuEntriesShareOneIor) {
  const uint64_t size = 4 * kMiB;
  const std::string path = MakeFile("mix", size, 14);
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  const uint64_t dev_a = ops_.Alloc(size);
  const uint64_t dev_b = ops_.Alloc(size);
  FakeGpuIov a(&s.s, &ops_, dev_a, size, 512 * 1024, 128 * 1024);
  FakeGpuIov b(&s.s, &ops_, dev_b, size, 256 * 1024, 64 * 1024);
  ASSERT_EQ(a.result, 0);
  ASSERT_EQ(b.result, 0);
  Iov host(&s.s, size);
  ASSERT_EQ(host.result, 0);
  fgds_ior_params ip = {};
  ip.entries = 8;  // a small ring: chunks and host entries compete for it
  Ior ior(&s.s, &ip);
  ASSERT_EQ(ior.result, 0);
  const int id = Register(&s.s, path, O_RDONLY);
  // Host entries before the ior has a stager, then GPU, then host again.
  ASSERT_EQ(fgds_prep_read(&ior.ior, &host.iov, host.at(0), id, 0, kMiB, 1), 0);
  ASSERT_EQ(fgds_prep_read(&ior.ior, &a.iov, Dev(dev_a), id, 0, size, 2), 0);
  ASSERT_EQ(fgds_prep_read(&ior.ior, &b.iov, Dev(dev_b, 5), id, 5, size - 5, 3),
            0);
  ASSERT_EQ(
      fgds_prep_read(&ior.ior, &host.iov, host.at(kMiB), id, kMiB, kMiB + 3, 4),
      0);
  auto cqes = ByUserdata(RunAll(&ior.ior, 4));
  EXPECT_EQ(cqes[1].result, static_cast<int64_t>(kMiB));
  EXPECT_NE(cqes[1].path, FGDS_PATH_BOUNCE);
  EXPECT_EQ(cqes[2].result, static_cast<int64_t>(size));
  EXPECT_EQ(cqes[3].result, static_cast<int64_t>(size - 5));
  EXPECT_EQ(cqes[4].result, static_cast<int64_t>(kMiB + 3));
  EXPECT_TRUE(MatchesPattern(host.at(0), 2 * kMiB + 3, 14, 0));
  EXPECT_TRUE(MatchesPattern(Dev(dev_a), size, 14, 0));
  EXPECT_TRUE(MatchesPattern(Dev(dev_b, 5), size - 5, 14, 5));
  // Many small GPU requests, more than the ring holds: -EAGAIN, then room.
  unsigned prepared = 0;
  int ret = 0;
  for (uint64_t i = 0; i < 64; ++i) {
    ret = fgds_prep_read(&ior.ior, &a.iov, Dev(dev_a, i * 4096), id, i * 4096,
                         4096, 100 + i);
    if (ret != 0) break;
    ++prepared;
  }
  EXPECT_EQ(ret, -EAGAIN);
  EXPECT_EQ(prepared, 16u);  // the CQ's size
  EXPECT_EQ(RunAll(&ior.ior, prepared).size(), prepared);
}

TEST_F(UsrbioGpuTest, ShortReadsAtEof) {
  const uint64_t size = kMiB + 1000;
  const std::string path = MakeFile("eof", size, 15);
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  const uint64_t dev = ops_.Alloc(8 * kMiB);
  FakeGpuIov g(&s.s, &ops_, dev, 8 * kMiB, 512 * 1024, 128 * 1024);
  ASSERT_EQ(g.result, 0);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  const int id = Register(&s.s, path, O_RDONLY);
  ASSERT_EQ(fgds_prep_read(&ior.ior, &g.iov, Dev(dev), id, 0, 4 * kMiB, 1), 0);
  ASSERT_EQ(
      fgds_prep_read(&ior.ior, &g.iov, Dev(dev, 4 * kMiB), id, size, kMiB, 2),
      0);
  ASSERT_EQ(fgds_prep_read(&ior.ior, &g.iov, Dev(dev, 6 * kMiB), id, size - 10,
                           100, 3),
            0);
  auto cqes = ByUserdata(RunAll(&ior.ior, 3));
  EXPECT_EQ(cqes[1].result, static_cast<int64_t>(size));
  EXPECT_EQ(cqes[2].result, 0);
  EXPECT_EQ(cqes[3].result, 10);
  EXPECT_TRUE(MatchesPattern(Dev(dev), size, 15, 0));
  EXPECT_EQ(*Dev(dev, size), 0);  // nothing past EOF was copied
  EXPECT_TRUE(MatchesPattern(Dev(dev, 6 * kMiB), 10, 15, size - 10));
}

TEST_F(UsrbioGpuTest, ErrorsArePerRequest) {
  const std::string path = MakeFile("err", kMiB, 16);
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  const uint64_t dev = ops_.Alloc(4 * kMiB);
  FakeGpuIov g(&s.s, &ops_, dev, 4 * kMiB, 512 * 1024, 128 * 1024);
  ASSERT_EQ(g.result, 0);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  const int id = Register(&s.s, path, O_RDONLY);
  // Refused at prep: outside the iov, zero length, bad opcode.
  EXPECT_EQ(fgds_prep_read(&ior.ior, &g.iov, Dev(dev, 4 * kMiB), id, 0, 1, 9),
            -EINVAL);
  EXPECT_EQ(fgds_prep_read(&ior.ior, &g.iov, Dev(dev), id, 0, 0, 9), -EINVAL);
  EXPECT_EQ(fgds_prep_io(&ior.ior, &g.iov, 7, 0, Dev(dev), id, 0, 1, 9),
            -EINVAL);
  // Failing in the daemon, each alone.
  ASSERT_EQ(fgds_prep_read(&ior.ior, &g.iov, Dev(dev), 9999, 0, kMiB, 1), 0);
  ASSERT_EQ(fgds_prep_read(&ior.ior, &g.iov, Dev(dev, kMiB), id,
                           uint64_t{1} << 63, 4096, 2),
            0);
  ASSERT_EQ(
      fgds_prep_write(&ior.ior, &g.iov, Dev(dev, 2 * kMiB), id, 0, 4096, 3),
      0);  // a read-only registration
  ASSERT_EQ(
      fgds_prep_read(&ior.ior, &g.iov, Dev(dev, 3 * kMiB), id, 0, kMiB, 4), 0);
  auto cqes = ByUserdata(RunAll(&ior.ior, 4));
  EXPECT_EQ(cqes[1].result, -EBADF);
  EXPECT_EQ(cqes[2].result, -EINVAL);
  EXPECT_EQ(cqes[3].result, -EACCES);
  EXPECT_EQ(cqes[4].result, static_cast<int64_t>(kMiB));
  EXPECT_TRUE(MatchesPattern(Dev(dev, 3 * kMiB), kMiB, 16, 0));
  // Device copies that fail fail their request.
  ops_.FailCopies(1, -EIO);
  ASSERT_EQ(fgds_prep_read(&ior.ior, &g.iov, Dev(dev), id, 0, 4096, 5), 0);
  cqes = ByUserdata(RunAll(&ior.ior, 1));
  EXPECT_EQ(cqes[5].result, -EIO);
}

TEST_F(UsrbioGpuTest, BufferFreedUnderIoFailsWithEfault) {
  const uint64_t size = 4 * kMiB;
  const std::string path = MakeFile("freed", size, 17);
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  const uint64_t dev = ops_.Alloc(size);
  const uint64_t other = ops_.Alloc(size);
  FakeGpuIov g(&s.s, &ops_, dev, size, 512 * 1024, 128 * 1024);
  FakeGpuIov h(&s.s, &ops_, other, size, 512 * 1024, 128 * 1024);
  ASSERT_EQ(g.result, 0);
  ASSERT_EQ(h.result, 0);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  const int id = Register(&s.s, path, O_RDWR);
  ASSERT_EQ(fgds_prep_read(&ior.ior, &g.iov, Dev(dev), id, 0, size, 1), 0);
  ASSERT_EQ(fgds_prep_read(&ior.ior, &h.iov, Dev(other), id, 0, size, 2), 0);
  ASSERT_EQ(fgds_ior_submit(&ior.ior), 2);
  // Chunk reads are with the daemon; the buffer goes away under them.
  ops_.Free(dev);
  std::vector<fgds_cqe> cqes(2);
  unsigned got = 0;
  while (got < 2) {
    int ret = fgds_ior_wait(&ior.ior, cqes.data() + got, 2 - got, 1,
                            10 * 1000 * 1000);
    ASSERT_GT(ret, 0);
    got += static_cast<unsigned>(ret);
  }
  auto by = ByUserdata(cqes);
  EXPECT_EQ(by[1].result, -EFAULT);
  EXPECT_EQ(by[2].result, static_cast<int64_t>(size));
  EXPECT_TRUE(MatchesPattern(Dev(other), size, 17, 0));
  // Writes from a freed buffer fail before any byte reaches the file.
  ASSERT_EQ(fgds_prep_write(&ior.ior, &g.iov, Dev(dev), id, 0, kMiB, 3), 0);
  auto w = RunAll(&ior.ior, 1);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].result, -EFAULT);
}

TEST_F(UsrbioGpuTest, SlowCopiesAreWaitedFor) {
  const uint64_t size = 2 * kMiB;
  const std::string path = MakeFile("slow", size, 18);
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  const uint64_t dev = ops_.Alloc(size);
  FakeGpuIov g(&s.s, &ops_, dev, size, 256 * 1024, 64 * 1024);
  ASSERT_EQ(g.result, 0);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  const int id = Register(&s.s, path, O_RDWR);
  // Every event reports "not ready" a few times: wait must block on the
  // copy (WaitEvent), not sleep on the eventfd until its timeout.
  ops_.SetPendingQueries(3);
  ASSERT_EQ(fgds_prep_read(&ior.ior, &g.iov, Dev(dev), id, 0, size, 1), 0);
  ASSERT_EQ(fgds_ior_submit(&ior.ior), 1);
  fgds_cqe cqe;
  const uint64_t start = usrbio::NowNs();
  ASSERT_EQ(fgds_ior_wait(&ior.ior, &cqe, 1, 1, 5 * 1000 * 1000), 1);
  EXPECT_LT(usrbio::NowNs() - start, uint64_t{2} * 1000 * 1000 * 1000);
  EXPECT_EQ(cqe.result, static_cast<int64_t>(size));
  EXPECT_TRUE(MatchesPattern(Dev(dev), size, 18, 0));
  // The same for writes (the copy comes first there).
  ASSERT_EQ(fgds_prep_write(&ior.ior, &g.iov, Dev(dev), id, size, size, 2), 0);
  ASSERT_EQ(fgds_ior_submit(&ior.ior), 1);
  ASSERT_EQ(fgds_ior_wait(&ior.ior, &cqe, 1, 1, 5 * 1000 * 1000), 1);
  EXPECT_EQ(cqe.result, static_cast<int64_t>(size));
  // Nothing to wait for: -EINVAL, as host iors.
  EXPECT_EQ(fgds_ior_wait(&ior.ior, &cqe, 1, 1, 0), -EINVAL);
}

TEST_F(UsrbioGpuTest, AnIovServesOneIorAtATime) {
  const std::string path = MakeFile("busy", kMiB, 19);
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  const uint64_t dev = ops_.Alloc(kMiB);
  FakeGpuIov g(&s.s, &ops_, dev, kMiB, 256 * 1024, 64 * 1024);
  ASSERT_EQ(g.result, 0);
  Ior first(&s.s);
  Ior second(&s.s);
  ASSERT_EQ(first.result, 0);
  ASSERT_EQ(second.result, 0);
  const int id = Register(&s.s, path, O_RDONLY);
  ASSERT_EQ(fgds_prep_read(&first.ior, &g.iov, Dev(dev), id, 0, kMiB, 1), 0);
  EXPECT_EQ(fgds_prep_read(&second.ior, &g.iov, Dev(dev), id, 0, kMiB, 2),
            -EBUSY);
  EXPECT_EQ(RunAll(&first.ior, 1).size(), 1u);
  // Once the first ior is done with it, the second may use it.
  ASSERT_EQ(fgds_prep_read(&second.ior, &g.iov, Dev(dev), id, 0, kMiB, 3), 0);
  auto cqes = RunAll(&second.ior, 1);
  ASSERT_EQ(cqes.size(), 1u);
  EXPECT_EQ(cqes[0].result, static_cast<int64_t>(kMiB));
}

}  // namespace
}  // namespace fgds::testing
