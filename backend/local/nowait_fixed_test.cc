// ReadNowait's fixed files and buffers (issue 17, nowait_reader.h): reads
// that name their file's and region's RegistrationKey go through the
// thread ring's registered tables, give the same bytes, and the tables
// never mistake a new file or region for an old one that had the same
// descriptor number or address (the stale-descriptor and stale-pages
// hazards), and drop what they hold when its key is retired, when they
// fall behind the log, when switched off, and on release.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backend/local/nowait_reader.h"
#include "backend/registration_key.h"
#include "gtest/gtest.h"

namespace fgds::backend {
namespace {

constexpr size_t kFileSize = 1 << 20;

// Whether io_uring (and so the fixed path) is there at all.
bool UringEnabled() {
  int fd = open("/proc/sys/kernel/io_uring_disabled", O_RDONLY);
  if (fd < 0) return true;
  char c = '0';
  (void)!read(fd, &c, 1);
  close(fd);
  return c == '0';
}

// A file with a key, like the local backend's File.
struct KeyedFile {
  explicit KeyedFile(char tag) {
    char path[] = "/tmp/nowait_fixed_test.XXXXXX";
    fd = mkstemp(path);
    unlink(path);
    data.resize(kFileSize);
    for (size_t i = 0; i < kFileSize; ++i) {
      data[i] = static_cast<char>(tag + i * 7);
    }
    if (fd >= 0) (void)!pwrite(fd, data.data(), kFileSize, 0);
  }
  ~KeyedFile() {
    if (fd >= 0) close(fd);
  }
  int fd = -1;
  std::string data;
  RegistrationKey key;
};

// Shared memory with a key, like a client's iov mapped in the daemon.
struct KeyedRegion {
  // At `where` (MAP_FIXED_NOREPLACE) when given.
  explicit KeyedRegion(size_t size_in, void* where = nullptr) : size(size_in) {
    int mfd = memfd_create("nowait_fixed_test", MFD_CLOEXEC);
    if (mfd < 0 || ftruncate(mfd, static_cast<off_t>(size)) != 0) return;
    void* p = mmap(where, size, PROT_READ | PROT_WRITE,
                   MAP_SHARED | (where ? MAP_FIXED_NOREPLACE : 0), mfd, 0);
    close(mfd);
    if (p != MAP_FAILED) base = static_cast<char*>(p);
  }
  ~KeyedRegion() {
    if (base != nullptr) munmap(base, size);
  }
  char* base = nullptr;
  size_t size;
  RegistrationKey key;
};

NowaitRead Keyed(const KeyedFile& f, const KeyedRegion& r, size_t at,
                 uint32_t len, uint64_t offset) {
  NowaitRead read{f.fd, r.base + at, len, offset, 0};
  read.file_key = &f.key;
  read.region_key = &r.key;
  read.region_base = r.base;
  read.region_size = r.size;
  return read;
}

// ReadNowait, with reads that found their pages missing (-EAGAIN: another
// process on the machine may drop the page cache at any time) read again
// after a pread brought the pages back, through ReadNowait too.
void ReadCached(std::vector<NowaitRead>& reads) {
  ReadNowait(std::span<NowaitRead>(reads));
  std::string scratch;
  for (int attempt = 0; attempt < 20; ++attempt) {
    std::vector<NowaitRead> again;
    std::vector<size_t> index;
    for (size_t i = 0; i < reads.size(); ++i) {
      if (reads[i].result != -EAGAIN) continue;
      scratch.resize(reads[i].len);
      (void)!pread(reads[i].fd, scratch.data(), reads[i].len,
                   static_cast<off_t>(reads[i].offset));
      again.push_back(reads[i]);
      index.push_back(i);
    }
    if (again.empty()) return;
    ReadNowait(std::span<NowaitRead>(again));
    for (size_t k = 0; k < again.size(); ++k) reads[index[k]] = again[k];
  }
}

// 16 reads of 4 KiB from `f` into `r`, checked.
void ReadSixteen(const KeyedFile& f, const KeyedRegion& r, uint64_t seed) {
  std::vector<NowaitRead> reads;
  for (uint64_t i = 0; i < 16; ++i) {
    const uint64_t offset = ((seed + i) * 7919 * 4096) % (kFileSize - 4096);
    reads.push_back(Keyed(f, r, i * 4096, 4096, offset));
  }
  ReadCached(reads);
  for (size_t i = 0; i < reads.size(); ++i) {
    ASSERT_EQ(reads[i].result, 4096) << i;
    ASSERT_EQ(memcmp(r.base + i * 4096, f.data.data() + reads[i].offset, 4096),
              0)
        << "read " << i;
  }
}

// Each test on a thread of its own: a fresh ring, empty tables.
template <typename Fn>
void OnFreshThread(Fn fn) {
  std::thread t(fn);
  t.join();
}

TEST(NowaitFixedTest, KeyedReadsGoThroughFixedFilesAndBuffers) {
  if (!UringEnabled()) GTEST_SKIP() << "io_uring disabled here";
  OnFreshThread([] {
    KeyedFile f('a');
    KeyedRegion r(256 << 10);
    ASSERT_GE(f.fd, 0);
    ASSERT_NE(r.base, nullptr);
    ReadSixteen(f, r, 1);
    ReadSixteen(f, r, 2);
    const NowaitFixedStats s = NowaitThreadFixedStats();
    EXPECT_EQ(s.files, 1u);
    EXPECT_EQ(s.buffers, 1u);
    // Every read (and any read again after -EAGAIN) went through both.
    EXPECT_GE(s.fixed_file_reads, 32u);
    EXPECT_EQ(s.fixed_buffer_reads, s.fixed_file_reads);
    EXPECT_TRUE(NowaitHoldsRegistrations());
    ReleaseNowaitRegistrations();
    EXPECT_FALSE(NowaitHoldsRegistrations());
    EXPECT_EQ(NowaitThreadFixedStats().files, 0u);
    // And registers again at the next batch.
    ReadSixteen(f, r, 3);
    EXPECT_EQ(NowaitThreadFixedStats().files, 1u);
  });
}

TEST(NowaitFixedTest, ADescriptorNumberReusedByAnotherFileReadsTheNewFile) {
  if (!UringEnabled()) GTEST_SKIP() << "io_uring disabled here";
  OnFreshThread([] {
    KeyedRegion r(64 << 10);
    ASSERT_NE(r.base, nullptr);
    auto old_file = std::make_unique<KeyedFile>('a');
    const int number = old_file->fd;
    ReadSixteen(*old_file, r, 1);
    ASSERT_EQ(NowaitThreadFixedStats().files, 1u);
    // The old file goes (closed, key retired) and a new one takes its
    // descriptor number: a table keyed on the number would read the old
    // file's bytes.
    old_file.reset();
    KeyedFile new_file('q');
    ASSERT_EQ(new_file.fd, number) << "the descriptor number was not reused";
    ReadSixteen(new_file, r, 1);
    // The retired key's slot went; the new file has its own.
    EXPECT_EQ(NowaitThreadFixedStats().files, 1u);
  });
}

TEST(NowaitFixedTest, ARegionMappedWhereAnUnmappedOneWasGetsTheBytes) {
  if (!UringEnabled()) GTEST_SKIP() << "io_uring disabled here";
  OnFreshThread([] {
    KeyedFile f('c');
    auto old_region = std::make_unique<KeyedRegion>(64 << 10);
    ASSERT_NE(old_region->base, nullptr);
    char* const where = old_region->base;
    ReadSixteen(f, *old_region, 1);
    ASSERT_EQ(NowaitThreadFixedStats().buffers, 1u);
    // A client's iov goes (unmapped, key retired; its pages stay pinned
    // until the table catches up) and another is mapped at the same
    // address: a table keyed on addresses would copy into the old pages,
    // and the new iov would stay zero.
    old_region.reset();
    KeyedRegion new_region(64 << 10, where);
    ASSERT_EQ(new_region.base, where) << "could not map at the old address";
    ReadSixteen(f, new_region, 5);
    EXPECT_EQ(NowaitThreadFixedStats().buffers, 1u);
  });
}

TEST(NowaitFixedTest, AnUnretiredRegionAtTheSameAddressIsStillNotConfused) {
  // Two live regions, read alternately through one thread: each key its
  // own window, each read's bytes in its own region.
  if (!UringEnabled()) GTEST_SKIP() << "io_uring disabled here";
  OnFreshThread([] {
    KeyedFile f('d');
    KeyedRegion a(64 << 10);
    KeyedRegion b(64 << 10);
    for (uint64_t round = 0; round < 4; ++round) {
      ReadSixteen(f, a, round);
      ReadSixteen(f, b, round + 100);
    }
    EXPECT_EQ(NowaitThreadFixedStats().buffers, 2u);
  });
}

TEST(NowaitFixedTest, FallingBehindTheRetiredLogDropsEverything) {
  if (!UringEnabled()) GTEST_SKIP() << "io_uring disabled here";
  OnFreshThread([] {
    KeyedFile f('e');
    KeyedRegion r(64 << 10);
    ReadSixteen(f, r, 1);
    ASSERT_TRUE(NowaitHoldsRegistrations());
    // More retirements than a batch takes in (marked keys of objects this
    // thread never saw): it cannot tell whether its own are among them.
    for (int i = 0; i < 200; ++i) {
      RegistrationKey k;
      k.MarkRegistered();
    }
    KeyedFile g('f');
    std::vector<NowaitRead> one = {Keyed(g, r, 0, 4096, 0)};
    ReadCached(one);
    ASSERT_EQ(one[0].result, 4096);
    EXPECT_EQ(memcmp(r.base, g.data.data(), 4096), 0);
    // Only what this batch registered again: g's file and r's window.
    EXPECT_EQ(NowaitThreadFixedStats().files, 1u);
    EXPECT_EQ(NowaitThreadFixedStats().buffers, 1u);
  });
}

TEST(NowaitFixedTest, MoreFilesThanSlotsStillReadRight) {
  // 80 files (more than the 64 slots), one batch of 64 and then again:
  // eviction never takes a slot the batch being prepared uses.
  if (!UringEnabled()) GTEST_SKIP() << "io_uring disabled here";
  OnFreshThread([] {
    std::vector<std::unique_ptr<KeyedFile>> files;
    for (int i = 0; i < 80; ++i) {
      files.push_back(std::make_unique<KeyedFile>(static_cast<char>(i)));
    }
    KeyedRegion r(64 * 4096 + 4096);
    for (int round = 0; round < 3; ++round) {
      std::vector<NowaitRead> reads;
      for (size_t i = 0; i < 64; ++i) {
        const KeyedFile& f = *files[(i * 5 + round * 17) % files.size()];
        reads.push_back(Keyed(f, r, i * 4096, 4096, i * 4096));
      }
      ReadCached(reads);
      for (size_t i = 0; i < 64; ++i) {
        const KeyedFile& f = *files[(i * 5 + round * 17) % files.size()];
        ASSERT_EQ(reads[i].result, 4096);
        ASSERT_EQ(memcmp(r.base + i * 4096, f.data.data() + i * 4096, 4096), 0)
            << "round " << round << " read " << i;
      }
    }
  });
}

TEST(NowaitFixedTest, ReadsAcrossAWindowEdgeOrOutsideTheRegionGoByAddress) {
  if (!UringEnabled()) GTEST_SKIP() << "io_uring disabled here";
  OnFreshThread([] {
    KeyedFile f('g');
    KeyedRegion r(2 << 20);
    // Straddles the 1 MiB window edge: by address, same bytes.
    NowaitRead across = Keyed(f, r, (1 << 20) - 2048, 4096, 8192);
    std::vector<NowaitRead> reads = {across};
    ReadCached(reads);
    ASSERT_EQ(reads[0].result, 4096);
    EXPECT_EQ(memcmp(r.base + (1 << 20) - 2048, f.data.data() + 8192, 4096), 0);
    EXPECT_EQ(NowaitThreadFixedStats().fixed_buffer_reads, 0u);
    EXPECT_GE(NowaitThreadFixedStats().fixed_file_reads, 1u);
    // A region that does not hold the buffer (a caller's mistake): by
    // address, never a fixed buffer over the wrong pages.
    std::string other(4096, '\0');
    NowaitRead wrong = Keyed(f, r, 0, 4096, 0);
    wrong.buf = other.data();
    reads = {wrong};
    ReadCached(reads);
    ASSERT_EQ(reads[0].result, 4096);
    EXPECT_EQ(memcmp(other.data(), f.data.data(), 4096), 0);
    EXPECT_EQ(NowaitThreadFixedStats().fixed_buffer_reads, 0u);
  });
}

TEST(NowaitFixedTest, SwitchedOffReadsByDescriptorAndDropsWhatItHeld) {
  if (!UringEnabled()) GTEST_SKIP() << "io_uring disabled here";
  OnFreshThread([] {
    KeyedFile f('h');
    KeyedRegion r(64 << 10);
    ReadSixteen(f, r, 1);
    ASSERT_TRUE(NowaitHoldsRegistrations());
    const NowaitFixedStats on = NowaitThreadFixedStats();
    SetNowaitFixed(false);
    ReadSixteen(f, r, 2);
    const NowaitFixedStats off = NowaitThreadFixedStats();
    SetNowaitFixed(true);
    EXPECT_FALSE(NowaitHoldsRegistrations());
    EXPECT_GE(on.fixed_file_reads, 16u);
    // None of the second batch's reads went through a table.
    EXPECT_EQ(off.fixed_file_reads, on.fixed_file_reads);
    EXPECT_EQ(off.fixed_buffer_reads, on.fixed_buffer_reads);
  });
}

TEST(NowaitFixedTest, ThreadsChurningFilesAndRegionsReadTheirOwnBytes) {
  // Several threads, each with its own ring, make and drop files and
  // regions while reading (descriptor numbers and addresses get reused
  // across threads); every read lands the right bytes. For TSan too: the
  // retired-key log is the one shared structure.
  if (!UringEnabled()) GTEST_SKIP() << "io_uring disabled here";
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int round = 0; round < 40; ++round) {
        KeyedFile f(static_cast<char>(t * 50 + round));
        KeyedRegion r(64 << 10);
        ASSERT_GE(f.fd, 0);
        ASSERT_NE(r.base, nullptr);
        ReadSixteen(f, r, static_cast<uint64_t>(round));
      }
    });
  }
  for (std::thread& t : threads) t.join();
}

// A file owned the way the local backend's File owns its descriptor
// (local_files.cc): its destruction hands the descriptor to its key
// (CloseWhenUnregistered) instead of closing it. Unlinked, as a file
// removed while open: its last reference takes its page cache with it.
struct OwnedFile {
  OwnedFile() {
    char path[] = "/tmp/nowait_fixed_owned.XXXXXX";
    fd = mkstemp(path);
    unlink(path);
    data.resize(kFileSize);
    for (size_t i = 0; i < kFileSize; ++i) {
      data[i] = static_cast<char>('o' + i * 3);
    }
    if (fd >= 0) (void)!pwrite(fd, data.data(), kFileSize, 0);
  }
  ~OwnedFile() { key.CloseWhenUnregistered(fd); }
  int fd = -1;
  std::string data;
  RegistrationKey key;
};

// One keyed 4 KiB read of `f` into `r` at its start, checked.
template <typename F>
void ReadOne(const F& f, const KeyedRegion& r, uint64_t offset) {
  std::vector<NowaitRead> one = {NowaitRead{f.fd, r.base, 4096, offset, 0}};
  one[0].file_key = &f.key;
  ReadCached(one);
  ASSERT_EQ(one[0].result, 4096);
  ASSERT_EQ(memcmp(r.base, f.data.data() + offset, 4096), 0);
}

bool IsOpen(int fd) { return fcntl(fd, F_GETFD) != -1; }

// Waits (at most 10 s, no timing assumed) until `done` holds.
template <typename Fn>
bool Eventually(Fn done) {
  for (int i = 0; i < 10000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

// A file whose owner let go while a table thread's fixed table held it:
// its descriptor stays open until the table drops the slot (at that
// thread's next batch, or when it releases everything going idle), and
// is then closed on the release thread, never on the table's thread
// (docs/usrbio.md, "Who releases a file"). Before, the owner's close left
// the table's reference the last one, released on the table's thread.
void ExpectReleasedOffTheTableThread(bool by_next_batch) {
  auto file = std::make_unique<OwnedFile>();
  const int fd = file->fd;
  ASSERT_GE(fd, 0);
  KeyedFile other('r');
  KeyedRegion r(64 << 10);
  std::atomic<int> step{0};
  std::atomic<pid_t> table_tid{0};
  std::atomic<bool> fixed{false};
  std::thread table([&] {
    MarkTableThread();  // as a ring worker does
    table_tid = gettid();
    ReadOne(*file, r, 8192);
    fixed = NowaitThreadFixedStats().files == 1;
    step = 1;
    while (step.load() != 2) std::this_thread::yield();
    if (by_next_batch) {
      ReadOne(other, r, 4096);  // catches up: drops the retired key
    } else {
      ReleaseNowaitRegistrations();  // as a ring worker going idle
    }
    step = 3;
  });
  while (step.load() != 1) std::this_thread::yield();
  const RegistrationCloses before = RegistrationClosesSoFar();
  if (!fixed) {
    step = 2;
    table.join();
    GTEST_SKIP() << "no fixed files here (kernel before 5.19?)";
  }
  file.reset();
  // The table holds the open file: the owner's descriptor is still open,
  // and nothing was closed anywhere.
  EXPECT_TRUE(IsOpen(fd));
  RegistrationCloses now = RegistrationClosesSoFar();
  EXPECT_EQ(now.here, before.here);
  EXPECT_EQ(now.released, before.released);
  step = 2;
  table.join();
  EXPECT_TRUE(Eventually([&] {
    return RegistrationClosesSoFar().released == before.released + 1;
  }));
  now = RegistrationClosesSoFar();
  EXPECT_EQ(now.here, before.here) << "closed on the table's thread";
  EXPECT_NE(now.release_thread, 0);
  EXPECT_NE(now.release_thread, table_tid.load());
  EXPECT_NE(now.release_thread, gettid());
  EXPECT_FALSE(IsOpen(fd)) << "the descriptor leaked";
}

TEST(NowaitFixedTest, ARetiredFileIsClosedOffTheTableThreadAtItsNextBatch) {
  if (!UringEnabled()) GTEST_SKIP() << "io_uring disabled here";
  ExpectReleasedOffTheTableThread(/*by_next_batch=*/true);
}

TEST(NowaitFixedTest, ARetiredFileIsClosedOffTheTableThreadWhenItGoesIdle) {
  if (!UringEnabled()) GTEST_SKIP() << "io_uring disabled here";
  ExpectReleasedOffTheTableThread(/*by_next_batch=*/false);
}

TEST(NowaitFixedTest, AFileNoTableHoldsIsClosedAtOnceByItsOwner) {
  // The common case stays as it was: closed by the owner, on its thread
  // (a fresh one, never marked as a table's).
  OnFreshThread([] {
    const RegistrationCloses before = RegistrationClosesSoFar();
    auto file = std::make_unique<OwnedFile>();
    const int fd = file->fd;
    ASSERT_GE(fd, 0);
    file.reset();
    EXPECT_FALSE(IsOpen(fd));
    EXPECT_EQ(RegistrationClosesSoFar().here, before.here + 1);
    // Also after a table held it and let go before the owner did.
    if (!UringEnabled()) return;
    file = std::make_unique<OwnedFile>();
    const int fd2 = file->fd;
    KeyedRegion r(64 << 10);
    OnFreshThread([&] {
      ReadOne(*file, r, 0);
      ReleaseNowaitRegistrations();
    });
    const RegistrationCloses mid = RegistrationClosesSoFar();
    file.reset();
    EXPECT_FALSE(IsOpen(fd2));
    EXPECT_EQ(RegistrationClosesSoFar().here, mid.here + 1);
    EXPECT_EQ(RegistrationClosesSoFar().released, mid.released);
  });
}

TEST(NowaitFixedTest, OwnersAndTablesLettingGoConcurrentlyLeakNothing) {
  // Owners drop files while several table threads hold, evict and drop
  // them: every descriptor is closed exactly once (none left open, none
  // closed twice: a double close would hit another file's descriptor and
  // fail a read), for TSan too (holds, the release thread's queue).
  if (!UringEnabled()) GTEST_SKIP() << "io_uring disabled here";
  constexpr int kThreads = 3;
  constexpr int kRounds = 30;
  std::vector<std::thread> threads;
  std::vector<std::vector<int>> fds(kThreads);
  const RegistrationCloses before = RegistrationClosesSoFar();
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &fds] {
      MarkTableThread();
      KeyedRegion r(64 << 10);
      std::vector<std::shared_ptr<OwnedFile>> live;
      for (int round = 0; round < kRounds; ++round) {
        live.push_back(std::make_shared<OwnedFile>());
        fds[t].push_back(live.back()->fd);
        for (const auto& f : live) ReadOne(*f, r, 4096 * (round % 8));
        // Owners go in another thread's hands half the time.
        if (live.size() > 2) {
          std::shared_ptr<OwnedFile> gone = live.front();
          live.erase(live.begin());
          if (round % 2 == 0) {
            std::thread([g = std::move(gone)]() mutable { g.reset(); }).join();
          }
        }
        if (round % 7 == 0) ReleaseNowaitRegistrations();
      }
      live.clear();
      ReleaseNowaitRegistrations();
    });
  }
  for (std::thread& t : threads) t.join();
  const uint64_t want = before.here + before.released + kThreads * kRounds;
  EXPECT_TRUE(Eventually([&] {
    const RegistrationCloses now = RegistrationClosesSoFar();
    return now.here + now.released >= want;
  }));
  const RegistrationCloses now = RegistrationClosesSoFar();
  EXPECT_EQ(now.here + now.released, want);
  for (const auto& list : fds) {
    for (int fd : list) EXPECT_FALSE(IsOpen(fd)) << fd;
  }
}

}  // namespace
}  // namespace fgds::backend
