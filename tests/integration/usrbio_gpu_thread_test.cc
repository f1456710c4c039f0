// usrbio GPU iovs with separate submitting and reaping threads (the ior
// contract: one of each at a time), mixed with host entries, on fake device
// memory against a mounted daemon. Labelled "unit" too, so that the TSan
// stage runs it (it skips where it cannot mount).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <thread>
#include <vector>

#include "tests/integration/usrbio_gpu_harness.h"

namespace fgds::testing {
namespace {

constexpr uint64_t kBlock = 96 * 1024 + 100;  // unaligned, several chunks
constexpr uint64_t kBlocks = 300;

TEST_F(UsrbioGpuTest, SubmitterAndReaperThreads) {
  const uint64_t size = kBlock * kBlocks;
  const std::string path = MakeFile("threads", size, 21);
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  const uint64_t dev = ops_.Alloc(size);
  FakeGpuIov g(&s.s, &ops_, dev, size, 256 * 1024, 32 * 1024);
  ASSERT_EQ(g.result, 0);
  Iov host(&s.s, size);
  ASSERT_EQ(host.result, 0);
  fgds_ior_params ip = {};
  ip.entries = 16;
  Ior ior(&s.s, &ip);
  ASSERT_EQ(ior.result, 0);
  const int id = Register(&s.s, path, O_RDONLY);
  ASSERT_GE(id, 0);
  ops_.SetPendingQueries(1);  // copies are not instant: both wait paths

  std::atomic<uint64_t> submitted{0};
  std::thread submitter([&] {
    for (uint64_t i = 0; i < kBlocks; ++i) {
      // Every third block goes to the host iov, the rest to the GPU one.
      const bool gpu = i % 3 != 0;
      for (;;) {
        int ret = gpu ? fgds_prep_read(&ior.ior, &g.iov, Dev(dev, i * kBlock),
                                       id, i * kBlock, kBlock, i)
                      : fgds_prep_read(&ior.ior, &host.iov, host.at(i * kBlock),
                                       id, i * kBlock, kBlock, i);
        if (ret == 0) break;
        ASSERT_EQ(ret, -EAGAIN);
        fgds_ior_submit(&ior.ior);
        submitted.store(i);  // blocks [0, i) are with the library now
        std::this_thread::yield();
      }
      if (i % 4 == 3) {
        fgds_ior_submit(&ior.ior);
        submitted.store(i + 1);
      }
    }
    fgds_ior_submit(&ior.ior);
    submitted.store(kBlocks);
  });
  std::vector<int64_t> results(kBlocks, -1);
  std::vector<int> paths(kBlocks, -1);
  uint64_t reaped = 0;
  int failures = 0;
  while (reaped < kBlocks && failures < 50) {
    fgds_cqe cqes[8];
    // Never ask for more than has surely been submitted.
    const uint64_t ready = submitted.load() - reaped;
    if (ready == 0) {
      std::this_thread::yield();
      continue;
    }
    int ret = fgds_ior_wait(&ior.ior, cqes, 8, 1, 100000);
    if (ret == 0) ++failures;  // 100 ms without a completion
    ASSERT_GE(ret, 0);
    for (int i = 0; i < ret; ++i) {
      results[cqes[i].userdata] = cqes[i].result;
      paths[cqes[i].userdata] = static_cast<int>(cqes[i].path);
    }
    reaped += static_cast<uint64_t>(ret);
  }
  submitter.join();
  ASSERT_EQ(reaped, kBlocks);
  for (uint64_t i = 0; i < kBlocks; ++i) {
    EXPECT_EQ(results[i], static_cast<int64_t>(kBlock)) << i;
    if (i % 3 != 0) {
      EXPECT_EQ(paths[i], static_cast<int>(FGDS_PATH_BOUNCE)) << i;
      EXPECT_TRUE(MatchesPattern(Dev(dev, i * kBlock), kBlock, 21, i * kBlock))
          << i;
    } else {
      EXPECT_TRUE(MatchesPattern(host.at(i * kBlock), kBlock, 21, i * kBlock))
          << i;
    }
  }
}

}  // namespace
}  // namespace fgds::testing
