// Unit tests of tools/bench/daemon_cpu.h, on this test's own process: its
// threads burn CPU, named as the daemon's are, between two samples.
#include "tools/bench/daemon_cpu.h"

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>
#include <future>
#include <thread>

#include "gtest/gtest.h"

namespace fgds::bench {
namespace {

// Enough CPU to stand far above what sampling and waiting cost the main
// thread (tens of microseconds), little enough for a loaded machine.
constexpr uint64_t kBurnNs = 50'000'000;

uint64_t ThreadCpuNs() {
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1'000'000'000u +
         static_cast<uint64_t>(now.tv_nsec);
}

// Spins on the calling thread until it has used at least `ns` of CPU;
// returns how much it used.
uint64_t BurnCpu(uint64_t ns) {
  const uint64_t start = ThreadCpuNs();
  volatile uint64_t sink = 0;
  while (ThreadCpuNs() - start < ns) {
    for (int i = 0; i < 10000; ++i) sink = sink + static_cast<uint64_t>(i);
  }
  return ThreadCpuNs() - start;
}

// The regression: the sampler summed the live threads, so a thread that
// burned CPU and ended between the samples (as libfuse's idle workers do
// during a POSIX row) was not counted at all.
TEST(DaemonCpuTest, CountsAThreadThatEndedBetweenTheSamples) {
  const DaemonCpu before = SampleDaemonCpu(getpid());
  ASSERT_TRUE(before.valid);
  uint64_t burned = 0;
  std::thread([&] {
    pthread_setname_np(pthread_self(), "short-lived");
    burned = BurnCpu(kBurnNs);
  }).join();
  const DaemonCpu used = SampleDaemonCpu(getpid()) - before;
  ASSERT_TRUE(used.valid);
  EXPECT_GE(used.total_ns(), burned);
  EXPECT_GE(used.other_ns, burned);
  EXPECT_EQ(used.ring_ns, 0u);
  EXPECT_EQ(used.io_ns, 0u);
}

// Live threads named as the daemon's ring and io workers are counted in
// their own kind, and not a second time in other_ns.
TEST(DaemonCpuTest, SplitsLiveThreadsByName) {
  for (const char* name : {"fgds-ring", "fgds-io"}) {
    SCOPED_TRACE(name);
    std::promise<void> go;
    std::promise<uint64_t> burned;
    std::promise<void> release;
    std::future<void> go_future = go.get_future();
    std::future<uint64_t> burned_future = burned.get_future();
    std::future<void> release_future = release.get_future();
    std::thread worker([&] {
      pthread_setname_np(pthread_self(), name);
      go_future.wait();
      burned.set_value(BurnCpu(kBurnNs));
      release_future.wait();  // still live at the second sample
    });
    const DaemonCpu before = SampleDaemonCpu(getpid());
    go.set_value();
    const uint64_t burned_ns = burned_future.get();
    const DaemonCpu used = SampleDaemonCpu(getpid()) - before;
    release.set_value();
    worker.join();
    ASSERT_TRUE(used.valid);
    const bool ring = ThreadKind(name) == 0;
    EXPECT_GE(ring ? used.ring_ns : used.io_ns, burned_ns);
    EXPECT_EQ(ring ? used.io_ns : used.ring_ns, 0u);
    EXPECT_LT(used.other_ns, burned_ns / 2);
  }
}

// A ring thread that ended between the samples takes its time out of the
// live ring sum: the kinds are clamped, and the total stays the process's.
TEST(DaemonCpuTest, DifferenceKeepsTheProcessTotal) {
  DaemonCpu earlier;
  earlier.valid = true;
  earlier.ring_ns = 100;
  earlier.io_ns = 50;
  earlier.other_ns = 10;
  DaemonCpu later = earlier;
  later.ring_ns = 40;  // a ring thread that had used 100 ended
  later.io_ns = 80;
  later.other_ns = 300;
  const DaemonCpu used = later - earlier;
  EXPECT_TRUE(used.valid);
  EXPECT_EQ(used.total_ns(), 420u - 160u);
  EXPECT_EQ(used.ring_ns, 0u);
  EXPECT_EQ(used.io_ns, 30u);
  EXPECT_EQ(used.other_ns, 230u);
  // Kinds that grew more than the total (read at other moments) are cut
  // to it.
  later = earlier;
  later.ring_ns = 200;  // +100
  later.other_ns = 0;   // total +90
  const DaemonCpu cut = later - earlier;
  EXPECT_EQ(cut.total_ns(), 90u);
  EXPECT_EQ(cut.ring_ns, 90u);
  EXPECT_EQ(cut.io_ns, 0u);
  EXPECT_EQ(cut.other_ns, 0u);
  EXPECT_FALSE((later - DaemonCpu()).valid);
}

TEST(DaemonCpuTest, NoProcessIsNotValid) {
  EXPECT_FALSE(SampleDaemonCpu(-1).valid);
  EXPECT_FALSE(SampleDaemonCpu(0).valid);
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_FALSE(SampleDaemonCpu(child).valid);  // reaped: gone
}

TEST(DaemonCpuTest, ThreadKindByName) {
  EXPECT_EQ(ThreadKind("fgds-ring"), 0);
  EXPECT_EQ(ThreadKind("fgds-ring-wd"), 0);
  EXPECT_EQ(ThreadKind("fgds-io"), 1);
  EXPECT_EQ(ThreadKind("fgds-release"), 2);
  EXPECT_EQ(ThreadKind("fgds"), 2);
}

}  // namespace
}  // namespace fgds::bench
