// SharedMemory::Map's checks (what keeps a client from crashing the daemon
// with SIGBUS) and the registry's limits.
#include "fusefs/session/registry.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace fgds::session {
namespace {

// The permissions of the mapping of this process that holds all of
// [start, end) ("" if none does), from /proc/self/maps.
std::string PermsOf(uint64_t start, uint64_t end) {
  FILE* f = fopen("/proc/self/maps", "re");
  if (f == nullptr) return "?";
  char line[512];
  std::string perms;
  while (fgets(line, sizeof(line), f) != nullptr) {
    unsigned long lo = 0, hi = 0;
    char p[5] = {};
    if (sscanf(line, "%lx-%lx %4s", &lo, &hi, p) == 3 && lo <= start &&
        end <= hi) {
      perms = p;
      break;
    }
  }
  fclose(f);
  return perms;
}

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

// A GPU iov's kept dma-buf (KeepDmabuf, for a NIC's registration) lives
// exactly as long as the iov: past its removal from the registry while an
// I/O still holds it, closed with the last reference, after the backend's
// registration of it (the attachment) is gone, and its descriptor charge
// given back only then.
TEST(SharedMemoryTest,
     AKeptDmabufGoesWithTheLastReferenceAfterItsRegistration) {
  auto limits = std::make_shared<UserLimits>(
      UserLimitsConfig{.per_user = {.files = 1}, .daemon_files = 1});
  Charge charge;
  uint32_t refused = 0;
  ASSERT_EQ(UserLimits::Take(limits, 1000, {.files = 1}, &charge, &refused), 0);
  // Any descriptor stands in for the dma-buf: what is tested is who closes
  // it and when.
  const int fd = Memfd(4096, 0);
  auto open_now = [fd] { return fcntl(fd, F_GETFD) != -1; };
  alignas(4096) static char gpu[4096];
  auto iov = SharedMemory::Adopt(gpu, sizeof(gpu), std::make_shared<int>(0));
  ASSERT_EQ(iov->kind(), backend::MemoryRegion::Kind::kDevice);
  EXPECT_EQ(iov->dmabuf_fd(), -1);
  iov->KeepDmabuf(fd, 8192, std::move(charge));
  EXPECT_EQ(iov->dmabuf_fd(), fd);
  EXPECT_EQ(iov->dmabuf_offset(), 8192u);
  // The backend's registration, made at a first request, checks on its way
  // out that the dma-buf is still open.
  struct Registration : backend::MemoryRegion::Attachment {
    std::function<bool()> open_now;
    bool* saw_open = nullptr;
    ~Registration() override { *saw_open = open_now(); }
  };
  bool registration_saw_open = false;
  iov->Attach([&] {
    auto r = std::make_unique<Registration>();
    r->open_now = open_now;
    r->saw_open = &registration_saw_open;
    return r;
  });

  Registry registry;
  const int64_t id = registry.AddIov(iov);
  ASSERT_GE(id, 0);
  std::shared_ptr<SharedMemory> in_flight = iov;  // an entry's reference
  iov.reset();
  // Unregistered (or the session ended, or the client died) under I/O.
  ASSERT_EQ(registry.RemoveIov(static_cast<uint32_t>(id)), 0);
  EXPECT_TRUE(open_now());
  EXPECT_EQ(limits->UsageOf(1000).files, 1u);
  in_flight.reset();  // the I/O completes
  EXPECT_TRUE(registration_saw_open);
  EXPECT_FALSE(open_now());
  EXPECT_EQ(limits->UsageOf(1000).files, 0u);
}

// A NIC-only iov's memory: device memory whose bytes the CPU cannot
// reach (PROT_NONE address space, no pages), with the dma-buf it keeps
// closed when it goes.
TEST(SharedMemoryTest, NicOnlyIsDeviceMemoryTheCpuCannotTouch) {
  std::shared_ptr<SharedMemory> m;
  EXPECT_EQ(SharedMemory::NicOnly(0, &m), -EINVAL);
  ASSERT_EQ(SharedMemory::NicOnly(uint64_t{1} << 30, &m), 0);
  EXPECT_TRUE(m->direct_only());
  EXPECT_EQ(m->kind(), backend::MemoryRegion::Kind::kDevice);
  EXPECT_EQ(m->dmabuf_fd(), -1);
  // No access at all, as the kernel has it.
  const auto start = reinterpret_cast<uintptr_t>(m->base());
  const uint64_t end = start + (uint64_t{1} << 30);
  EXPECT_EQ(PermsOf(start, end), "---p");
  // A CPU access faults. (Re-executes the binary for it: other threads,
  // the sanitizers', make a plain fork unsafe.)
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH({ *reinterpret_cast<volatile char*>(m->base() + 4096) = 1; },
               "");
  int fd = memfd_create("kept", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  m->KeepDmabuf(fd, 0, Charge());
  EXPECT_EQ(m->dmabuf_fd(), fd);
  m.reset();
  EXPECT_EQ(fcntl(fd, F_GETFD), -1);  // closed with the memory
  EXPECT_EQ(PermsOf(start, end), "");
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
