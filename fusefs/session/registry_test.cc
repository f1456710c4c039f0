// SharedMemory::Map's checks (what keeps a client from crashing the daemon
// with SIGBUS) and the registry's limits.
#include "fusefs/session/registry.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "gtest/gtest.h"

namespace fgds::session {
namespace {

int Memfd(off_t size, int seals) {
  int fd = memfd_create("test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(ftruncate(fd, size), 0);
  if (seals != 0) {
    EXPECT_EQ(fcntl(fd, F_ADD_SEALS, seals), 0);
  }
  return fd;
}

TEST(SharedMemoryTest, MapsASealedMemfd) {
  int fd = Memfd(8192, F_SEAL_SHRINK);
  std::shared_ptr<SharedMemory> mem;
  ASSERT_EQ(SharedMemory::Map(fd, 8192, &mem), 0);
  mem->base()[8191] = 1;  // mapped and writable
  EXPECT_EQ(mem->size(), 8192u);
  close(fd);
}

TEST(SharedMemoryTest, RefusesWhatCouldShrinkOrIsTooSmall) {
  std::shared_ptr<SharedMemory> mem;
  int unsealed = Memfd(8192, 0);
  EXPECT_EQ(SharedMemory::Map(unsealed, 8192, &mem), -EINVAL);
  close(unsealed);
  int small = Memfd(4096, F_SEAL_SHRINK);
  EXPECT_EQ(SharedMemory::Map(small, 8192, &mem), -EINVAL);
  EXPECT_EQ(SharedMemory::Map(small, 0, &mem), -EINVAL);
  close(small);
  // A regular file is not a memfd: it could be truncated under us.
  FILE* tmp = tmpfile();
  ASSERT_NE(tmp, nullptr);
  ASSERT_EQ(ftruncate(fileno(tmp), 8192), 0);
  EXPECT_EQ(SharedMemory::Map(fileno(tmp), 4096, &mem), -EINVAL);
  fclose(tmp);
  EXPECT_EQ(mem, nullptr);
}

TEST(RegistryTest, LimitsAndIds) {
  RegistryLimits limits;
  limits.max_iovs = 2;
  limits.max_files = 1;
  Registry registry(limits);
  char buf[64];
  EXPECT_EQ(registry.AddIov(SharedMemory::Borrow(buf, sizeof(buf))), 0);
  EXPECT_EQ(registry.AddIov(SharedMemory::Borrow(buf, sizeof(buf))), 1);
  EXPECT_EQ(registry.AddIov(SharedMemory::Borrow(buf, sizeof(buf))), -ENOSPC);
  EXPECT_EQ(registry.RemoveIov(0), 0);
  EXPECT_EQ(registry.AddIov(SharedMemory::Borrow(buf, sizeof(buf))), 2);
  EXPECT_EQ(registry.AddFile(std::make_shared<RegisteredFile>(nullptr, nullptr,
                                                              true, false)),
            0);
  EXPECT_EQ(registry.AddFile(std::make_shared<RegisteredFile>(nullptr, nullptr,
                                                              true, false)),
            -ENOSPC);
  EXPECT_EQ(registry.RemoveFile(5), -ENOENT);
}

}  // namespace
}  // namespace fgds::session
