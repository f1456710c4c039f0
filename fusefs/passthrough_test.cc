#include "fusefs/passthrough.h"

#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace fgds::fusefs {
namespace {

// Backing ids handed out and taken back, as the kernel would.
struct FakeKernel {
  std::atomic<int> next_id{1};
  std::atomic<int> opened{0};
  std::atomic<int> closed{0};
  std::atomic<int> last_closed{0};
  int fail_with = 0;  // -errno: every registration fails

  PassthroughFiles Files() {
    return PassthroughFiles(
        [this](void*, int) {
          if (fail_with != 0) return fail_with;
          opened.fetch_add(1);
          return next_id.fetch_add(1);
        },
        [this](void*, int id) {
          closed.fetch_add(1);
          last_closed.store(id);
        });
  }
};

constexpr mode_t kPlain = S_IFREG | 0644;
constexpr mode_t kSetUid = S_IFREG | 04755;
constexpr mode_t kSetGid = S_IFREG | 02755;

int a, b, c;  // distinct file handles

TEST(PassthroughFilesTest, PlainFileIsPassthrough) {
  FakeKernel kernel;
  PassthroughFiles files = kernel.Files();
  const int id = files.Open(nullptr, 5, &a, 3, kPlain);
  EXPECT_GT(id, 0);
  EXPECT_TRUE(files.HasPassthroughFiles(5));
  EXPECT_EQ(files.passthrough_opens(), 1u);
  EXPECT_EQ(files.daemon_opens(), 0u);
  files.Release(nullptr, 5, &a);
  EXPECT_FALSE(files.HasPassthroughFiles(5));
  EXPECT_EQ(kernel.closed.load(), 1);
  EXPECT_EQ(kernel.last_closed.load(), id);
}

TEST(PassthroughFilesTest, SetIdFileIsServedByTheDaemon) {
  FakeKernel kernel;
  PassthroughFiles files = kernel.Files();
  EXPECT_EQ(files.Open(nullptr, 5, &a, 3, kSetUid), 0);
  EXPECT_EQ(files.Open(nullptr, 6, &b, 4, kSetGid), 0);
  EXPECT_EQ(kernel.opened.load(), 0);
  EXPECT_EQ(files.daemon_opens(), 2u);
  files.Release(nullptr, 5, &a);
  files.Release(nullptr, 6, &b);
  EXPECT_EQ(kernel.closed.load(), 0);
}

// The kernel refuses a mix of modes, and a second backing file, on one
// inode: later opens follow the files open, sharing one backing id.
TEST(PassthroughFilesTest, OpensFollowTheFilesOpen) {
  FakeKernel kernel;
  PassthroughFiles files = kernel.Files();
  const int id = files.Open(nullptr, 5, &a, 3, kPlain);
  ASSERT_GT(id, 0);
  // Gained a set-uid bit meanwhile: still passthrough, the same id.
  EXPECT_EQ(files.Open(nullptr, 5, &b, 4, kSetUid), id);
  EXPECT_EQ(kernel.opened.load(), 1);
  files.Release(nullptr, 5, &a);
  EXPECT_EQ(kernel.closed.load(), 0);  // b still open
  files.Release(nullptr, 5, &b);
  EXPECT_EQ(kernel.closed.load(), 1);

  // The other way: open while set-uid, bit removed, opened again.
  EXPECT_EQ(files.Open(nullptr, 5, &a, 3, kSetUid), 0);
  EXPECT_EQ(files.Open(nullptr, 5, &b, 4, kPlain), 0);
  files.Release(nullptr, 5, &a);
  EXPECT_EQ(files.Open(nullptr, 5, &c, 5, kPlain), 0);  // b still open
  files.Release(nullptr, 5, &b);
  files.Release(nullptr, 5, &c);
  // All closed: the next open chooses afresh.
  EXPECT_GT(files.Open(nullptr, 5, &a, 3, kPlain), 0);
  files.Release(nullptr, 5, &a);
}

TEST(PassthroughFilesTest, FailedRegistrationFallsBackToTheDaemon) {
  FakeKernel kernel;
  kernel.fail_with = -EPERM;
  PassthroughFiles files = kernel.Files();
  EXPECT_EQ(files.Open(nullptr, 5, &a, 3, kPlain), 0);
  EXPECT_NE(files.last_error().find("Operation not permitted"),
            std::string::npos)
      << files.last_error();
  EXPECT_FALSE(files.HasPassthroughFiles(5));
  files.Release(nullptr, 5, &a);
  EXPECT_EQ(kernel.closed.load(), 0);
}

TEST(PassthroughFilesTest, ReleaseOfAnUnknownFileIsHarmless) {
  FakeKernel kernel;
  PassthroughFiles files = kernel.Files();
  files.Release(nullptr, 5, &a);
  EXPECT_EQ(files.Open(nullptr, 5, &a, 3, kPlain) > 0, true);
  files.Release(nullptr, 5, &a);
  files.Release(nullptr, 5, &a);
  EXPECT_EQ(kernel.closed.load(), 1);
}

// Threads opening and releasing files of a few nodes at once: every
// registration is closed exactly once, and no node ends with two ids.
TEST(PassthroughFilesTest, ConcurrentOpensAndReleases) {
  FakeKernel kernel;
  PassthroughFiles files = kernel.Files();
  constexpr int kThreads = 4;
  constexpr int kRounds = 2000;
  std::vector<std::thread> threads;
  std::vector<int> handles(kThreads * 2);
  std::atomic<int> mismatches{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        const uint64_t node = static_cast<uint64_t>(i % 3);
        const mode_t mode = (i % 7 == 0) ? kSetUid : kPlain;
        void* first = &handles[t * 2];
        void* second = &handles[t * 2 + 1];
        const int x = files.Open(nullptr, node, first, 3, mode);
        const int y = files.Open(nullptr, node, second, 3, kPlain);
        // With `first` open, `second` follows it.
        if ((x > 0) != (y > 0) || (x > 0 && x != y)) mismatches.fetch_add(1);
        files.Release(nullptr, node, first);
        files.Release(nullptr, node, second);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(kernel.opened.load(), kernel.closed.load());
  for (uint64_t node = 0; node < 3; ++node) {
    EXPECT_FALSE(files.HasPassthroughFiles(node));
  }
}

}  // namespace
}  // namespace fgds::fusefs
