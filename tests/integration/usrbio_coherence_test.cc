// usrbio writes and the mount's page cache, in every mount mode: a usrbio
// write over a range the mount holds dirty (a POSIX write with a writeback
// cache, a store through a shared mapping not yet msync'd) must be what
// every later reader sees: read and mmap through the mount, the backing
// file, also after fsync. The daemon writes such pages back before the
// usrbio write starts (fusefs/session/cache_invalidator.h); before it did,
// the kernel wrote them back after it, over the usrbio bytes.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tests/integration/usrbio_harness.h"
#include "tests/lib/mount_features.h"
#include "tests/lib/posix_stress.h"

namespace fgds::testing {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kFileSize = 2 * kPage;

struct MountMode {
  const char* name;
  std::vector<std::string> args;  // for `fgds mount`
  // Requests through FUSE over io_uring (UsrbioCoherenceBusyTest only).
  bool fuse_uring = false;
};

const MountMode kModes[] = {
    {"Default", {}},
    {"NoKeepCache", {"--no-keep-cache"}},
    {"WritebackCache", {"--writeback-cache"}},
    {"WritebackCacheNoKeepCache", {"--writeback-cache", "--no-keep-cache"}},
    {"DirectIo", {"--direct-io"}},
    {"DirectIoNoKeepCache", {"--direct-io", "--no-keep-cache"}},
};

bool IsDirectIo(const MountMode& mode) {
  for (const std::string& a : mode.args) {
    if (a == "--direct-io") return true;
  }
  return false;
}

// How the page gets dirty in the mount before the usrbio write.
enum class Dirtier { kWrite, kMmapStore };

// gtest prints parameters with these (else as bytes).
void PrintTo(const MountMode& mode, std::ostream* os) { *os << mode.name; }
void PrintTo(Dirtier dirtier, std::ostream* os) {
  *os << (dirtier == Dirtier::kWrite ? "Write" : "MmapStore");
}

// A mapping, unmapped at scope exit (before the fixture unmounts).
struct Mapping {
  char* p = nullptr;
  size_t len = 0;
  Mapping() = default;
  Mapping(int fd, size_t len_in, int prot, int flags) : len(len_in) {
    void* m = mmap(nullptr, len, prot, flags, fd, 0);
    if (m != MAP_FAILED) p = static_cast<char*>(m);
  }
  ~Mapping() {
    if (p != nullptr) munmap(p, len);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  Mapping(Mapping&& o) noexcept : p(o.p), len(o.len) { o.p = nullptr; }
  Mapping& operator=(Mapping&& o) noexcept {
    std::swap(p, o.p);
    std::swap(len, o.len);
    return *this;
  }
  std::string Content() const { return std::string(p, len); }
};

// A read-only mapping as a reader would make it: shared, or private where
// the mount refuses shared mappings (direct I/O gives ENODEV).
Mapping MapForReading(int fd, size_t len) {
  Mapping m(fd, len, PROT_READ, MAP_SHARED);
  if (m.p == nullptr && errno == ENODEV) {
    m = Mapping(fd, len, PROT_READ, MAP_PRIVATE);
  }
  return m;
}

std::string PreadAll(int fd, size_t len) {
  std::string out(len, '\0');
  ssize_t n = pread(fd, out.data(), len, 0);
  out.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return out;
}

// "A x100, B x100, A x3896, . x4096": what a failure shows.
std::string Runs(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    size_t j = i;
    while (j < s.size() && s[j] == s[i]) ++j;
    absl::StrAppend(&out, out.empty() ? "" : ", ", std::string(1, s[i]), " x",
                    j - i);
    i = j;
  }
  return out.empty() ? "(empty)" : out;
}

void ExpectContent(const std::string& where, const std::string& got,
                   const std::string& want) {
  EXPECT_TRUE(got == want) << where << " holds " << Runs(got) << ", want "
                           << Runs(want);
}

class UsrbioCoherenceTest
    : public ::testing::TestWithParam<std::tuple<MountMode, Dirtier>> {
 protected:
  void SetUp() override {
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
      GTEST_SKIP() << "needs root and /dev/fuse";
    }
    MountOptions options;
    options.extra_args = mode().args;
    auto fs = MountedFs::Start(options);
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = *std::move(fs);
  }
  const MountMode& mode() const { return std::get<0>(GetParam()); }
  Dirtier dirtier() const { return std::get<1>(GetParam()); }

  // Dirties page 0 of a two-page file through the mount with 'A', writes
  // 'B' to [offset, offset + len) through a ring, and checks every reader.
  void WriteOverDirtyPage(uint64_t offset, uint64_t len) {
    const std::string backing = fs_->backing() + "/f";
    const std::string path = fs_->mountpoint() + "/f";
    {
      int fd = open(backing.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
      ASSERT_GE(fd, 0);
      const std::string dots(kFileSize, '.');
      ASSERT_EQ(pwrite(fd, dots.data(), dots.size(), 0),
                static_cast<ssize_t>(dots.size()));
      close(fd);
    }
    Session s(fs_->mountpoint());
    ASSERT_EQ(s.open_result, 0);
    // Registered before the page is dirtied: with --no-keep-cache an open
    // through the mount writes the file's dirty pages back and drops them.
    const int id = RegisterPath(&s.s, path, O_RDWR);
    ASSERT_GE(id, 0);
    Iov iov(&s.s, kPage);
    ASSERT_EQ(iov.result, 0);
    Ior ior(&s.s);
    ASSERT_EQ(ior.result, 0);

    const int fd = open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    std::string want(kFileSize, '.');
    want.replace(0, kPage, kPage, 'A');
    Mapping store;
    if (dirtier() == Dirtier::kWrite) {
      const std::string a(kPage, 'A');
      ASSERT_EQ(pwrite(fd, a.data(), kPage, 0), static_cast<ssize_t>(kPage));
    } else {
      store = Mapping(fd, kFileSize, PROT_READ | PROT_WRITE, MAP_SHARED);
      if (store.p == nullptr && errno == ENODEV && IsDirectIo(mode())) {
        close(fd);
        GTEST_SKIP() << "direct I/O refuses shared mappings: nothing there "
                        "can dirty a page";
      }
      ASSERT_NE(store.p, nullptr) << strerror(errno);
      memset(store.p, 'A', kPage);  // dirty, and no msync
    }
    // A reader that mapped the file already, and saw the 'A's.
    Mapping view = MapForReading(fd, kFileSize);
    ASSERT_NE(view.p, nullptr) << strerror(errno);
    ASSERT_TRUE(view.Content() == want) << Runs(view.Content());

    memset(iov.at(0), 'B', len);
    want.replace(offset, len, len, 'B');
    ASSERT_EQ(
        fgds_prep_write(&ior.ior, &iov.iov, iov.at(0), id, offset, len, 1), 0);
    fgds_cqe cqe;
    ASSERT_EQ(SubmitAndWaitAll(&ior.ior, &cqe, 1), 1);
    ASSERT_EQ(cqe.result, static_cast<int64_t>(len));

    // Once the writer has its completion, readers of the mount see it.
    ExpectContent("read through the mount", PreadAll(fd, kFileSize), want);
    ExpectContent("an existing mapping", view.Content(), want);
    if (store.p != nullptr) {
      ExpectContent("the stored-to mapping", store.Content(), want);
    }

    // fsync through the mount (a writeback of anything still dirty) and
    // through the ring change nothing.
    EXPECT_EQ(fsync(fd), 0) << strerror(errno);
    ASSERT_EQ(fgds_prep_fsync(&ior.ior, id, 0, 2), 0);
    ASSERT_EQ(SubmitAndWaitAll(&ior.ior, &cqe, 1), 1);
    EXPECT_EQ(cqe.result, 0);
    ExpectContent("read through the mount after fsync", PreadAll(fd, kFileSize),
                  want);
    ExpectContent("an existing mapping after fsync", view.Content(), want);
    if (store.p != nullptr) {
      ExpectContent("the stored-to mapping after fsync", store.Content(), want);
    }
    Mapping fresh = MapForReading(fd, kFileSize);
    ASSERT_NE(fresh.p, nullptr) << strerror(errno);
    ExpectContent("a fresh mapping", fresh.Content(), want);
    int bfd = open(backing.c_str(), O_RDONLY);
    ASSERT_GE(bfd, 0);
    ExpectContent("the backing file", PreadAll(bfd, kFileSize), want);
    close(bfd);
    close(fd);
    // What a later open sees (one that drops the cache, or keeps it).
    int again = open(path.c_str(), O_RDONLY);
    ASSERT_GE(again, 0);
    ExpectContent("a later open of the mount", PreadAll(again, kFileSize),
                  want);
    close(again);
  }

  std::unique_ptr<MountedFs> fs_;
};

TEST_P(UsrbioCoherenceTest, WholePageWriteWinsOverDirtyPage) {
  WriteOverDirtyPage(0, kPage);
}

// The dirty page's other bytes stay: the page is written back before the
// usrbio bytes land inside it, not merged over them afterwards.
TEST_P(UsrbioCoherenceTest, PartialWriteMergesIntoDirtyPage) {
  WriteOverDirtyPage(100, 100);
}

std::string CaseName(
    const ::testing::TestParamInfo<std::tuple<MountMode, Dirtier>>& info) {
  return absl::StrCat(std::get<0>(info.param).name, "_",
                      ::testing::PrintToString(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(
    Modes, UsrbioCoherenceTest,
    ::testing::Combine(::testing::ValuesIn(kModes),
                       ::testing::Values(Dirtier::kWrite, Dirtier::kMmapStore)),
    CaseName);

// Fails a test instead of leaving it asleep forever: if it is still
// running `limit` after the start, reports what the daemon's threads wait
// in (tests/lib/posix_stress.h) and aborts the mount's FUSE connection, so
// that every request in flight ends with an error and the test's threads
// return and can be joined. Declare it before anything whose destructor
// may wait on the mount.
class HangGuard {
 public:
  HangGuard(const MountedFs& fs, std::chrono::seconds limit)
      : fs_(fs), thread_([this, limit] { Watch(limit); }) {}
  ~HangGuard() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
    if (!report_.empty()) ADD_FAILURE() << report_;
  }
  HangGuard(const HangGuard&) = delete;
  HangGuard& operator=(const HangGuard&) = delete;

 private:
  void Watch(std::chrono::seconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, limit, [this] { return done_; })) return;
    lock.unlock();
    std::string report = absl::StrCat(
        "still running after ", limit.count(), " s: the mount hangs\n",
        DescribeHang(fs_.daemon_pid(), -1, fs_.mountpoint(), /*gdb=*/true));
    // Now: after the abort, a thread whose store or read through a mapping
    // was waiting on the mount gets SIGBUS, which ends the test here.
    fprintf(stderr, "%s", report.c_str());
    const bool aborted = AbortFuseConnection(fs_.mountpoint());
    absl::StrAppend(&report, aborted ? "FUSE connection aborted\n"
                                     : "could not abort the connection\n");
    lock.lock();
    report_ = std::move(report);
  }

  const MountedFs& fs_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string report_;
  std::thread thread_;
};

constexpr char kEnableUring[] = "/sys/module/fuse/parameters/enable_uring";

// usrbio writes while the mount is busy with the same pages: POSIX writes
// and stores dirtying them, reads holding their locks in flight. The
// write-backs before and after each usrbio write wait for those; nothing
// may wait forever (the FUSE threads serve the write-backs, the engine the
// reads, the invalidator thread neither). A hang fails the test (HangGuard)
// rather than stopping the suite.
//
// The FuseUring case serves the mount's requests through FUSE over
// io_uring (the fuse module's enable_uring, on for the test and put back
// after), where each CPU's queue has a single thread and libfuse 3.18.3
// loses a queue for good when a reply leaves from another thread (its
// submission race, fuse_uring_test.cc): before every reply left from the
// ring thread, this case hung in about one run of 75, a ring thread asleep
// on its queue's lock and the usrbio write's invalidation waiting for a
// WRITE on that queue. FGDS_BUSY_SECONDS (default 2) runs it longer by hand.
class UsrbioCoherenceBusyTest : public ::testing::TestWithParam<MountMode> {
 protected:
  void SetUp() override {
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
      GTEST_SKIP() << "needs root and /dev/fuse";
    }
    if (GetParam().fuse_uring) {
      std::ifstream in(kEnableUring);
      if (!std::getline(in, saved_enable_uring_)) {
        GTEST_SKIP() << "this kernel has no FUSE over io_uring";
      }
      std::ofstream(kEnableUring) << "1";
    }
    MountOptions options;
    options.extra_args = GetParam().args;
    auto fs = MountedFs::Start(options);
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = *std::move(fs);
    if (GetParam().fuse_uring && !FuseUringOn(fs_->mountpoint())) {
      GTEST_SKIP() << MountFeatures(fs_->mountpoint());
    }
  }
  // The parameter is the kernel's, for every mount: put it back.
  void TearDown() override {
    fs_.reset();
    if (!saved_enable_uring_.empty()) {
      std::ofstream(kEnableUring) << (saved_enable_uring_ == "Y" ? "1" : "0");
    }
  }
  static int BusySeconds() {
    int seconds = 0;
    const char* env = getenv("FGDS_BUSY_SECONDS");
    return env != nullptr && absl::SimpleAtoi(env, &seconds) && seconds > 0
               ? seconds
               : 2;
  }
  std::unique_ptr<MountedFs> fs_;
  std::string saved_enable_uring_;
};

TEST_P(UsrbioCoherenceBusyTest, WritesFinishWhileTheMountIsBusy) {
  constexpr uint64_t kPages = 64;
  constexpr uint64_t kSize = kPages * kPage;
  const std::string path = fs_->mountpoint() + "/busy";
  int fd = open(path.c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, kSize), 0);
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  const int id = RegisterPath(&s.s, path, O_RDWR);
  ASSERT_GE(id, 0);
  Iov iov(&s.s, kSize);
  ASSERT_EQ(iov.result, 0);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  memset(iov.at(0), 'B', kSize);

  // Beyond the busy time and the usrbio waits' own 10 s bounds.
  HangGuard guard(*fs_, std::chrono::seconds(BusySeconds() + 60));
  std::atomic<bool> stop{false};
  std::vector<std::thread> mount_users;
  // Stops and joins them however the test ends (a failed ASSERT returns).
  struct Joiner {
    std::atomic<bool>& stop;
    std::vector<std::thread>& threads;
    ~Joiner() {
      stop.store(true);
      for (std::thread& t : threads) t.join();
    }
  } joiner{stop, mount_users};
  // A writer through the mount, page by page, and a storer through a
  // shared mapping where the mode has them.
  mount_users.emplace_back([&] {
    const std::string a(kPage, 'A');
    for (uint64_t i = 0; !stop.load(); ++i) {
      (void)!pwrite(fd, a.data(), kPage, ((i * 7) % kPages) * kPage);
    }
  });
  mount_users.emplace_back([&] {
    Mapping m(fd, kSize, PROT_READ | PROT_WRITE, MAP_SHARED);
    if (m.p == nullptr) return;  // direct I/O
    for (uint64_t i = 0; !stop.load(); ++i) m.p[((i * 13) % kSize)] = 'C';
  });
  // Readers through the mount (their read-ahead holds page locks).
  for (int r = 0; r < 2; ++r) {
    mount_users.emplace_back([&] {
      std::string buf(kSize, '\0');
      while (!stop.load()) {
        int rfd = open(path.c_str(), O_RDONLY);
        if (rfd < 0) continue;
        (void)!pread(rfd, buf.data(), kSize, 0);
        close(rfd);
      }
    });
  }

  // Batches of writes over every page, until the time is up.
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::seconds(BusySeconds());
  int batches = 0;
  while (std::chrono::steady_clock::now() < end) {
    constexpr unsigned kBatch = 8;
    for (unsigned k = 0; k < kBatch; ++k) {
      // Whole pages only, as the mount's writers write them: the backing
      // file then takes every write O_DIRECT. (Buffered and O_DIRECT
      // writes racing on one page of the backing file fail its page-cache
      // invalidation, and its next fsync says EIO: the backing
      // filesystem's collision, not this test's subject.)
      const uint64_t off = ((batches * kBatch + k) % kPages) * kPage;
      ASSERT_EQ(
          fgds_prep_write(&ior.ior, &iov.iov, iov.at(off), id, off, kPage, k),
          0);
    }
    fgds_cqe cqes[kBatch];
    // SubmitAndWaitAll gives up after 10 s: a stuck write-back fails here.
    ASSERT_EQ(SubmitAndWaitAll(&ior.ior, cqes, kBatch),
              static_cast<int>(kBatch))
        << "batch " << batches;
    for (const fgds_cqe& c : cqes) EXPECT_GT(c.result, 0);
    ++batches;
  }
  stop.store(true);
  for (std::thread& t : mount_users) t.join();
  mount_users.clear();
  EXPECT_GT(batches, 0);

  // Quiet again: a last usrbio write over the whole file is what the mount
  // and the backing file hold.
  ASSERT_EQ(fgds_prep_write(&ior.ior, &iov.iov, iov.at(0), id, 0, kSize, 99),
            0);
  fgds_cqe cqe;
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, &cqe, 1), 1);
  ASSERT_EQ(cqe.result, static_cast<int64_t>(kSize));
  EXPECT_EQ(fsync(fd), 0) << strerror(errno);
  const std::string want(kSize, 'B');
  ExpectContent("read through the mount", PreadAll(fd, kSize), want);
  int bfd = open((fs_->backing() + "/busy").c_str(), O_RDONLY);
  ASSERT_GE(bfd, 0);
  ExpectContent("the backing file", PreadAll(bfd, kSize), want);
  close(bfd);
  close(fd);
  if (GetParam().fuse_uring) {
    EXPECT_GT(MountCounter(fs_->mountpoint(), "requests_fuse_uring"), 0u);
    EXPECT_EQ(MountCounter(fs_->mountpoint(), "uring_replies_off_thread"), 0u);
  }
}

std::string ModeName(const ::testing::TestParamInfo<MountMode>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Modes, UsrbioCoherenceBusyTest,
                         ::testing::ValuesIn(kModes), ModeName);

// A daemon told to stop (SIGTERM) while usrbio writes and the mount's
// writers are busy on the same pages exits: its FUSE loop ends first, so a
// usrbio write's invalidation that then waits for a page's write-back (a
// FUSE WRITE nobody will answer any more) must not hold the daemon, which
// would sleep uninterruptibly, unkillable, with the mount.
TEST(UsrbioCoherenceStopTest, DaemonStopsWhileTheMountIsBusy) {
  if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
    GTEST_SKIP() << "needs root and /dev/fuse";
  }
  MountOptions options;
  // Dirty pages from plain writes (no mapping, whose faults would raise
  // SIGBUS once the daemon is gone).
  options.extra_args = {"--writeback-cache", "--no-keep-cache"};
  // Under ASan the daemon would report the handles of the files still open
  // when it stopped (this test's) as leaks: the kernel never releases them
  // once the connection is gone, and the exit frees them.
  const char* asan = getenv("ASAN_OPTIONS");
  const std::string saved_asan = asan != nullptr ? asan : "";
  const std::string daemon_asan =
      saved_asan.empty() ? "detect_leaks=0" : saved_asan + ":detect_leaks=0";
  setenv("ASAN_OPTIONS", daemon_asan.c_str(), 1);
  auto mounted = MountedFs::Start(options);
  if (asan != nullptr) {
    setenv("ASAN_OPTIONS", saved_asan.c_str(), 1);
  } else {
    unsetenv("ASAN_OPTIONS");
  }
  ASSERT_TRUE(mounted.ok()) << mounted.status();
  std::unique_ptr<MountedFs> fs = *std::move(mounted);
  constexpr uint64_t kPages = 64;
  constexpr uint64_t kSize = kPages * kPage;
  const std::string path = fs->mountpoint() + "/busy";
  int fd = open(path.c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, kSize), 0);
  Session s(fs->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  const int id = RegisterPath(&s.s, path, O_RDWR);
  ASSERT_GE(id, 0);
  Iov iov(&s.s, kSize);
  ASSERT_EQ(iov.result, 0);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  memset(iov.at(0), 'B', kSize);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    const std::string a(kPage, 'A');
    for (uint64_t i = 0; !stop.load(); ++i) {
      (void)!pwrite(fd, a.data(), kPage, ((i * 7) % kPages) * kPage);
    }
  });
  const pid_t daemon = fs->daemon_pid();
  const std::string conn = FuseConnectionDir(fs->mountpoint());
  const auto term_at =
      std::chrono::steady_clock::now() + std::chrono::seconds(1);
  bool termed = false;
  // usrbio writes over every page until the daemon is gone (its session
  // then fails them) or 5 s after the signal.
  for (int batch = 0;; ++batch) {
    const auto now = std::chrono::steady_clock::now();
    if (!termed && now >= term_at) {
      ASSERT_EQ(kill(daemon, SIGTERM), 0);
      termed = true;
    }
    if (now >= term_at + std::chrono::seconds(5)) break;
    constexpr unsigned kBatch = 8;
    bool prepared = true;
    for (unsigned k = 0; k < kBatch && prepared; ++k) {
      const uint64_t off = ((batch * kBatch + k) % kPages) * kPage;
      prepared = fgds_prep_write(&ior.ior, &iov.iov, iov.at(off), id, off,
                                 kPage, k) == 0;
    }
    fgds_cqe cqes[kBatch];
    if (!prepared || SubmitAndWaitAll(&ior.ior, cqes, kBatch) < 0) break;
  }
  // Exited within 20 s of the signal (waitid's WNOWAIT leaves the reaping
  // to MountedFs).
  bool exited = false;
  for (int i = 0; i < 200 && !exited; ++i) {
    siginfo_t info = {};
    exited = waitid(P_PID, static_cast<id_t>(daemon), &info,
                    WEXITED | WNOHANG | WNOWAIT) == 0 &&
             info.si_pid == daemon;
    if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!exited) {
    ADD_FAILURE() << "the daemon did not exit within 20 s of SIGTERM\n"
                  << DescribeHang(daemon, -1, fs->mountpoint(),
                                  /*gdb=*/false);
    // What the operator would do: the waits end, and so does the daemon.
    AbortFuseConnectionDir(conn);
  }
  stop.store(true);
  writer.join();
  close(fd);
}

// The mode the hang was seen in, over io_uring (--fuse-uring auto, the
// default, with the kernel's parameter on).
const MountMode kUringModes[] = {
    {"FuseUringNoKeepCache", {"--no-keep-cache"}, true},
};
INSTANTIATE_TEST_SUITE_P(Uring, UsrbioCoherenceBusyTest,
                         ::testing::ValuesIn(kUringModes), ModeName);

}  // namespace
}  // namespace fgds::testing
