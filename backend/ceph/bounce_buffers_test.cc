#include "backend/ceph/bounce_buffers.h"

#include <cstring>
#include <memory>

#include "gtest/gtest.h"

namespace fgds::backend {
namespace {

TEST(BounceBuffersTest, ADroppedBufferIsHandedOutAgain) {
  auto buffers = BounceBuffers::Create(4);
  std::shared_ptr<char> first = buffers->Get(4096);
  char* const address = first.get();
  memset(address, 'x', BounceBuffers::kPooledSize);  // whole buffer usable
  first.reset();
  EXPECT_EQ(buffers->free_count(), 1u);
  EXPECT_EQ(buffers->Get(1 << 20).get(), address);
}

TEST(BounceBuffersTest, AHeldBufferIsNeverHandedOutTwice) {
  auto buffers = BounceBuffers::Create(4);
  std::shared_ptr<char> held = buffers->Get(10);
  // A second owner (a call the gate gave up on) keeps it after the first
  // lets go.
  std::shared_ptr<char> call = held;
  held.reset();
  EXPECT_EQ(buffers->free_count(), 0u);
  std::shared_ptr<char> other = buffers->Get(10);
  EXPECT_NE(other.get(), call.get());
  call.reset();
  EXPECT_EQ(buffers->free_count(), 1u);
}

TEST(BounceBuffersTest, KeepsAtMostKeepFreeBuffers) {
  auto buffers = BounceBuffers::Create(2);
  {
    std::shared_ptr<char> a = buffers->Get(1), b = buffers->Get(1),
                          c = buffers->Get(1);
  }
  EXPECT_EQ(buffers->free_count(), 2u);
}

TEST(BounceBuffersTest, LargeBuffersAreNotKept) {
  auto buffers = BounceBuffers::Create(2);
  {
    std::shared_ptr<char> big = buffers->Get(BounceBuffers::kPooledSize + 1);
    memset(big.get(), 'y', BounceBuffers::kPooledSize + 1);
  }
  EXPECT_EQ(buffers->free_count(), 0u);
}

TEST(BounceBuffersTest, ABufferMayOutliveItsPool) {
  auto buffers = BounceBuffers::Create(2);
  std::shared_ptr<char> late = buffers->Get(100);
  buffers.reset();
  memset(late.get(), 'z', 100);
  late.reset();  // goes back to the pool the deleter keeps (ASan checks)
}

}  // namespace
}  // namespace fgds::backend
