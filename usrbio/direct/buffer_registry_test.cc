#include "usrbio/direct/buffer_registry.h"

#include <atomic>
#include <cerrno>
#include <thread>

#include "gtest/gtest.h"

namespace fgds::direct {
namespace {

constexpr uint64_t kBase = 0x7f0000000000;

TEST(BufferRegistryTest, AddRejectsOverlapsAndEmpty) {
  BufferRegistry registry;
  EXPECT_EQ(registry.Add(kBase, 0, 1), -EINVAL);
  EXPECT_EQ(registry.Add(~uint64_t{0} - 10, 100, 1), -EINVAL);
  ASSERT_EQ(registry.Add(kBase + 100, 100, 1), 0);
  EXPECT_EQ(registry.Add(kBase + 100, 100, 1), -EEXIST);
  EXPECT_EQ(registry.Add(kBase + 150, 10, 1), -EEXIST);  // inside
  EXPECT_EQ(registry.Add(kBase + 50, 51, 1), -EEXIST);   // across start
  EXPECT_EQ(registry.Add(kBase + 199, 10, 1), -EEXIST);  // across end
  EXPECT_EQ(registry.Add(kBase, 1000, 1), -EEXIST);      // around
  EXPECT_EQ(registry.Add(kBase, 100, 2), 0);             // just before
  EXPECT_EQ(registry.Add(kBase + 200, 100, 3), 0);       // just after
  EXPECT_EQ(registry.size(), 3u);
}

TEST(BufferRegistryTest, AcquireFindsContainingRange) {
  BufferRegistry registry;
  ASSERT_EQ(registry.Add(kBase, 1000, 7), 0);
  Pin pin;
  ASSERT_EQ(registry.Acquire(kBase + 10, 990, &pin), 0);
  ASSERT_NE(pin.get(), nullptr);
  EXPECT_EQ(pin.get()->buffer_id(), 7u);
  pin.Reset();
  // Past the end of the registered buffer it starts in.
  EXPECT_EQ(registry.Acquire(kBase + 10, 991, &pin), -EINVAL);
  EXPECT_EQ(pin.get(), nullptr);
  // Outside any registration: unregistered memory, no pin.
  EXPECT_EQ(registry.Acquire(kBase + 1000, 10, &pin), 0);
  EXPECT_EQ(pin.get(), nullptr);
  EXPECT_EQ(registry.Acquire(kBase - 1, 10, &pin), 0);
  EXPECT_EQ(pin.get(), nullptr);
}

TEST(BufferRegistryTest, RemoveUnknownIsNoEnt) {
  BufferRegistry registry;
  EXPECT_EQ(registry.Remove(kBase), -ENOENT);
  ASSERT_EQ(registry.Add(kBase, 100, 1), 0);
  EXPECT_EQ(registry.Remove(kBase + 1), -ENOENT);  // not its start
  EXPECT_EQ(registry.Remove(kBase), 0);
  EXPECT_EQ(registry.Remove(kBase), -ENOENT);
}

// The fence: Remove returns only after the I/O holding a pin released it,
// and new I/O no longer finds the registration meanwhile.
TEST(BufferRegistryTest, RemoveWaitsForPins) {
  BufferRegistry registry;
  ASSERT_EQ(registry.Add(kBase, 4096, 1), 0);
  Pin pin;
  ASSERT_EQ(registry.Acquire(kBase, 4096, &pin), 0);
  ASSERT_NE(pin.get(), nullptr);

  std::atomic<bool> released{false};
  std::atomic<bool> removed{false};
  std::atomic<bool> removing{false};
  std::thread remover([&] {
    removing.store(true);
    EXPECT_EQ(registry.Remove(kBase), 0);
    // The pin was released before Remove could return.
    EXPECT_TRUE(released.load());
    removed.store(true);
  });
  while (!removing.load()) std::this_thread::yield();
  EXPECT_FALSE(removed.load());
  released.store(true);
  pin.Reset();
  remover.join();
  EXPECT_TRUE(removed.load());
  EXPECT_EQ(registry.size(), 0u);
}

}  // namespace
}  // namespace fgds::direct
