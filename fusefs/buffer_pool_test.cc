#include "fusefs/buffer_pool.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace fgds::fusefs {
namespace {

void* NoMemory(size_t) { return nullptr; }

TEST(BufferPoolTest, BuffersAreAlignedAndReused) {
  BufferPool pool(8192, 1);
  char* a = pool.Get();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 4096, 0u);
  pool.Put(a);
  EXPECT_EQ(pool.Get(), a);  // the cached one
  char* b = pool.Get();      // a fresh one
  ASSERT_NE(b, nullptr);
  pool.Put(a);
  pool.Put(b);  // beyond max_cached: freed (ASan would see a leak otherwise)
}

TEST(BufferPoolTest, OutOfMemoryIsNullNotAnException) {
  BufferPool pool(4096, 4, &NoMemory);
  EXPECT_EQ(pool.Get(), nullptr);
  PooledBuffer buffer(pool);
  EXPECT_EQ(buffer.get(), nullptr);
}

TEST(BufferPoolTest, PooledBufferGivesItsBufferBack) {
  BufferPool pool(4096, 1);
  char* seen = nullptr;
  {
    PooledBuffer buffer(pool);
    seen = buffer.get();
    ASSERT_NE(seen, nullptr);
  }
  PooledBuffer again(pool);
  EXPECT_EQ(again.get(), seen);
}

}  // namespace
}  // namespace fgds::fusefs
