// The bounce engine end to end on fake device memory (fake_device_ops.h):
// real files in a directory on disk, real O_DIRECT and io_uring, every byte
// checked. The same scenarios run on a GPU in tests/gpu/.
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/io/fault_uring_os.h"
#include "fgds/fgds.h"
#include "gtest/gtest.h"
#include "tests/lib/random_bytes.h"
#include "usrbio/direct/driver.h"
#include "usrbio/direct/fake_device_ops.h"

namespace fgds::direct {
namespace {

constexpr uint64_t kChunk = 64 * 1024;

using ::fgds::testing::RandomBytes;

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // On disk beside the test binary: tmpfs (often /tmp) has no O_DIRECT.
    char templ[] = "fgds-engine-test.XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr) << std::strerror(errno);
    dir_ = std::filesystem::absolute(templ).string();
    OpenDriver(/*use_page_cache=*/true);
  }

  void TearDown() override {
    if (driver_ != nullptr) {
      EXPECT_EQ(driver_->Close(), 0);
    }
    driver_.reset();
    std::filesystem::remove_all(dir_);
  }

  // `uring_os`: the engine's system calls (null: the real ones).
  void OpenDriver(bool use_page_cache, io::FaultUringOs* uring_os = nullptr) {
    if (driver_ != nullptr) {
      ASSERT_EQ(driver_->Close(), 0);
    }
    driver_.reset();
    auto ops = std::make_unique<FakeDeviceOps>();
    ops_ = ops.get();
    DriverConfig config;
    config.workers = 3;
    config.slots_per_worker = 3;
    config.chunk_bytes = kChunk;
    config.staging_bytes = 9 * kChunk;
    config.use_page_cache = use_page_cache;
    std::string message;
    ASSERT_EQ(
        Driver::Open(config, std::move(ops), &driver_, &message, uring_os), 0)
        << message;
    if (uring_os == nullptr || uring_os->rings() == 0) return;
    // Let the engine's workers make their first submission (their wake
    // poll alone), so that the faults a test sets hit transfers.
    const auto end =
        std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (uring_os->submit_calls() < config.workers &&
           std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  // WriteFile creates `name` with `bytes` and returns an fd opened `flags`.
  int WriteFile(const std::string& name, const std::vector<uint8_t>& bytes,
                int flags = O_RDONLY) {
    const std::string path = dir_ + "/" + name;
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(pwrite(fd, bytes.data(), bytes.size(), 0),
              static_cast<ssize_t>(bytes.size()));
    close(fd);
    const int reopened = open(path.c_str(), flags);
    EXPECT_GE(reopened, 0) << std::strerror(errno);
    return reopened;
  }

  std::vector<uint8_t> ReadFile(const std::string& name) {
    const std::string path = dir_ + "/" + name;
    std::vector<uint8_t> bytes(std::filesystem::file_size(path));
    const int fd = open(path.c_str(), O_RDONLY);
    EXPECT_EQ(pread(fd, bytes.data(), bytes.size(), 0),
              static_cast<ssize_t>(bytes.size()));
    close(fd);
    return bytes;
  }

  uint8_t* Host(uint64_t device_address) {
    return reinterpret_cast<uint8_t*>(device_address);
  }

  int64_t Read(int fd, uint64_t dev, uint64_t size, int64_t file_offset,
               int64_t buf_offset, RequestOutcome* outcome = nullptr) {
    std::string message;
    return driver_->Transfer(Op::kRead, fd, dev, size, file_offset, buf_offset,
                             outcome, &message);
  }
  int64_t Write(int fd, uint64_t dev, uint64_t size, int64_t file_offset,
                int64_t buf_offset, RequestOutcome* outcome = nullptr) {
    std::string message;
    return driver_->Transfer(Op::kWrite, fd, dev, size, file_offset, buf_offset,
                             outcome, &message);
  }

  std::string dir_;
  FakeDeviceOps* ops_ = nullptr;
  std::unique_ptr<Driver> driver_;
};

struct Range {
  uint64_t file_offset;
  uint64_t size;
  uint64_t buf_offset;
};

// Aligned, unaligned head/tail, inside one block, one byte, chunk edges.
constexpr Range kRanges[] = {
    {0, 5 * kChunk, 0},
    {4096, 3 * kChunk, 4096},
    {1, 3 * kChunk, 7},
    {100, 10, 3},
    {4095, 2, 0},
    {kChunk - 1, kChunk + 2, 100},
    {12345, 2 * kChunk + 4321, 4096 + 1},
    {5 * kChunk - 10, 10, 0},
};

TEST_F(EngineTest, ReadsLandByteForByte) {
  const std::vector<uint8_t> data = RandomBytes(5 * kChunk + 777, 1);
  const int fd = WriteFile("r", data);
  for (bool page_cache : {true, false}) {
    OpenDriver(page_cache);
    for (const Range& r : kRanges) {
      SCOPED_TRACE(::testing::Message()
                   << "offset " << r.file_offset << " size " << r.size
                   << " page_cache " << page_cache);
      const uint64_t capacity = r.buf_offset + r.size + 64;
      const uint64_t dev = ops_->Alloc(capacity);
      std::memset(Host(dev), 0xAB, capacity);
      ASSERT_EQ(Read(fd, dev, r.size, r.file_offset, r.buf_offset),
                static_cast<int64_t>(r.size));
      EXPECT_EQ(
          std::memcmp(Host(dev) + r.buf_offset, &data[r.file_offset], r.size),
          0);
      // Nothing outside the target range was touched.
      for (uint64_t i = 0; i < r.buf_offset; ++i) {
        ASSERT_EQ(Host(dev)[i], 0xAB) << i;
      }
      for (uint64_t i = r.buf_offset + r.size; i < capacity; ++i) {
        ASSERT_EQ(Host(dev)[i], 0xAB) << i;
      }
      ops_->Free(dev);
    }
  }
  close(fd);
}

TEST_F(EngineTest, EndOfFile) {
  const std::vector<uint8_t> data = RandomBytes(3 * kChunk + 100, 2);
  const int fd = WriteFile("eof", data);
  const uint64_t dev = ops_->Alloc(8 * kChunk);
  // Across the end: short, with the bytes that exist.
  EXPECT_EQ(Read(fd, dev, 4 * kChunk, kChunk, 0),
            static_cast<int64_t>(data.size() - kChunk));
  EXPECT_EQ(std::memcmp(Host(dev), &data[kChunk], data.size() - kChunk), 0);
  // At and past the end: 0.
  EXPECT_EQ(Read(fd, dev, 4096, static_cast<int64_t>(data.size()), 0), 0);
  EXPECT_EQ(Read(fd, dev, 4096, 100 * kChunk, 0), 0);
  // Zero bytes.
  RequestOutcome outcome;
  EXPECT_EQ(Read(fd, dev, 0, 0, 0, &outcome), 0);
  EXPECT_EQ(outcome.path, FGDS_GPU_PATH_NONE);
  ops_->Free(dev);
  close(fd);
}

TEST_F(EngineTest, WritesLandByteForByte) {
  const std::vector<uint8_t> original = RandomBytes(4 * kChunk, 3);
  const int fd = WriteFile("w", original, O_RDWR);
  std::vector<uint8_t> expected = original;
  uint64_t seed = 100;
  for (const Range& r : kRanges) {
    SCOPED_TRACE(::testing::Message()
                 << "offset " << r.file_offset << " size " << r.size);
    const uint64_t dev = ops_->Alloc(r.buf_offset + r.size);
    const std::vector<uint8_t> bytes = RandomBytes(r.size, seed++);
    std::memcpy(Host(dev) + r.buf_offset, bytes.data(), r.size);
    ASSERT_EQ(Write(fd, dev, r.size, r.file_offset, r.buf_offset),
              static_cast<int64_t>(r.size));
    if (expected.size() < r.file_offset + r.size) {
      expected.resize(r.file_offset + r.size);
    }
    std::memcpy(&expected[r.file_offset], bytes.data(), r.size);
    ops_->Free(dev);
  }
  close(fd);
  EXPECT_EQ(ReadFile("w"), expected);
}

TEST_F(EngineTest, ReportsWhereBytesCameFrom) {
  const std::vector<uint8_t> data = RandomBytes(4 * kChunk, 4);
  const int fd = WriteFile("src", data);  // written buffered: cached
  const uint64_t dev = ops_->Alloc(4 * kChunk);
  RequestOutcome outcome;
  ASSERT_EQ(Read(fd, dev, 4 * kChunk, 0, 0, &outcome), 4 * kChunk);
  EXPECT_EQ(outcome.path, FGDS_GPU_PATH_BOUNCE);
  EXPECT_NE(outcome.source & FGDS_SRC_PAGE_CACHE, 0u);

  OpenDriver(/*use_page_cache=*/false);
  const uint64_t dev2 = ops_->Alloc(4 * kChunk);
  ASSERT_EQ(Read(fd, dev2, 4 * kChunk, 0, 0, &outcome), 4 * kChunk);
  EXPECT_EQ(outcome.source, FGDS_SRC_O_DIRECT);
  EXPECT_EQ(outcome.bytes_by_source[1], 4 * kChunk);
  EXPECT_EQ(std::memcmp(Host(dev2), data.data(), data.size()), 0);
  ASSERT_EQ(Read(fd, dev2, 100, 5, 0, &outcome), 100);
  EXPECT_EQ(outcome.source, FGDS_SRC_BUFFERED);
  close(fd);
}

TEST_F(EngineTest, ODirectCallerFdStillServesUnalignedRanges) {
  const std::vector<uint8_t> data = RandomBytes(3 * kChunk, 5);
  const int fd = WriteFile("odirect", data, O_RDONLY | O_DIRECT);
  const uint64_t dev = ops_->Alloc(3 * kChunk);
  ASSERT_EQ(Read(fd, dev, 2 * kChunk + 3, 17, 1), 2 * kChunk + 3);
  EXPECT_EQ(std::memcmp(Host(dev) + 1, &data[17], 2 * kChunk + 3), 0);
  close(fd);
}

TEST_F(EngineTest, BadArguments) {
  const std::vector<uint8_t> data = RandomBytes(kChunk, 6);
  const int fd = WriteFile("args", data);
  const uint64_t dev = ops_->Alloc(kChunk);
  std::string message;
  EXPECT_EQ(Read(-1, dev, 10, 0, 0), -EBADF);
  EXPECT_EQ(Write(fd, dev, 10, 0, 0), -EBADF);  // read-only fd
  EXPECT_EQ(Read(fd, dev, 10, -1, 0), -EINVAL);
  EXPECT_EQ(Read(fd, dev, 10, 0, -1), -EINVAL);
  EXPECT_EQ(Read(fd, 0, 10, 0, 0), -EFAULT);
  // Not device memory at all, and past the end of the allocation.
  std::vector<uint8_t> host(100);
  EXPECT_EQ(Read(fd, reinterpret_cast<uint64_t>(host.data()), 10, 0, 0),
            -EFAULT);
  EXPECT_EQ(Read(fd, dev, kChunk + 1, 0, 0), -EFAULT);
  // Registered: the range must stay inside the registered part.
  ASSERT_EQ(driver_->RegisterBuffer(dev, kChunk / 2, 0, &message), 0);
  EXPECT_EQ(Read(fd, dev, kChunk / 2 + 1, 0, 0), -EINVAL);
  EXPECT_EQ(Read(fd, dev, 10, 0, kChunk / 2 - 10), 10);
  EXPECT_EQ(driver_->DeregisterBuffer(dev), 0);
  EXPECT_EQ(driver_->DeregisterBuffer(dev), -ENOENT);
  close(fd);
}

TEST_F(EngineTest, RegistrationRules) {
  const uint64_t dev = ops_->Alloc(kChunk);
  std::string message;
  EXPECT_EQ(driver_->RegisterBuffer(dev, 0, 0, &message), -EINVAL);
  EXPECT_EQ(driver_->RegisterBuffer(dev, 10, 1, &message), -EINVAL);
  EXPECT_EQ(driver_->RegisterBuffer(dev, kChunk + 1, 0, &message), -EFAULT);
  EXPECT_EQ(driver_->RegisterBuffer(12345, 10, 0, &message), -EFAULT);
  // Sub-ranges of one allocation are separate buffers.
  ASSERT_EQ(driver_->RegisterBuffer(dev, 4096, 0, &message), 0);
  ASSERT_EQ(driver_->RegisterBuffer(dev + 4096, 4096, 0, &message), 0);
  EXPECT_EQ(driver_->RegisterBuffer(dev + 100, 10, 0, &message), -EEXIST);
  EXPECT_EQ(driver_->DeregisterBuffer(dev + 4096), 0);
  EXPECT_EQ(driver_->DeregisterBuffer(dev), 0);
}

// A driver serves one GPU: a buffer on another is refused by name
// (-EXDEV) at registration and at I/O, and nothing moves; its own GPU's
// buffers keep working beside it.
TEST_F(EngineTest, BuffersOnAnotherGpuAreRefused) {
  const std::vector<uint8_t> bytes = RandomBytes(2 * kChunk, 18);
  const int fd = WriteFile("f", bytes, O_RDWR);
  const uint64_t other = ops_->AllocOn(2 * kChunk, 1);
  const uint64_t own = ops_->Alloc(2 * kChunk);
  std::string message;
  EXPECT_EQ(driver_->RegisterBuffer(other, kChunk, 0, &message), -EXDEV);
  EXPECT_NE(message.find("the buffer lives on GPU 1, this driver serves GPU 0"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("device 1"), std::string::npos) << message;
  std::memset(Host(other), 0xee, 2 * kChunk);
  EXPECT_EQ(Read(fd, other, 2 * kChunk, 0, 0), -EXDEV);
  EXPECT_EQ(Write(fd, other, kChunk, 0, 0), -EXDEV);
  for (uint64_t i = 0; i < 2 * kChunk; ++i) ASSERT_EQ(Host(other)[i], 0xee);
  EXPECT_EQ(ReadFile("f"), bytes);
  ASSERT_EQ(Read(fd, own, 2 * kChunk, 0, 0), static_cast<int64_t>(2 * kChunk));
  EXPECT_EQ(std::memcmp(Host(own), bytes.data(), bytes.size()), 0);
  close(fd);
}

TEST_F(EngineTest, ConcurrentReadersAndWritersManyBuffers) {
  ops_->SetPendingQueries(2);  // drive the polling path too
  const uint64_t file_size = 16 * kChunk + 999;
  const std::vector<uint8_t> data = RandomBytes(file_size, 7);
  const int fd = WriteFile("many", data);
  const int wfd =
      WriteFile("many-out", std::vector<uint8_t>(file_size), O_RDWR);
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(1000 + t);
      const uint64_t dev = ops_->Alloc(4 * kChunk);
      for (int i = 0; i < 40; ++i) {
        const uint64_t size = 1 + rng() % (3 * kChunk);
        const uint64_t offset = rng() % (file_size - size);
        const uint64_t buf_offset = rng() % (kChunk);
        std::string message;
        if (driver_->Transfer(Op::kRead, fd, dev, size, offset, buf_offset,
                              nullptr,
                              &message) != static_cast<int64_t>(size) ||
            std::memcmp(Host(dev) + buf_offset, &data[offset], size) != 0) {
          ++failures;
        }
        // Each thread writes its own stripe of the output file back.
        const uint64_t stripe = file_size / kThreads;
        const uint64_t wsize = std::min<uint64_t>(size, stripe);
        const uint64_t woffset = t * stripe + rng() % (stripe - wsize + 1);
        if (driver_->Transfer(Op::kWrite, wfd, dev, wsize, woffset, buf_offset,
                              nullptr,
                              &message) != static_cast<int64_t>(wsize)) {
          ++failures;
        }
        std::vector<uint8_t> back(wsize);
        if (pread(wfd, back.data(), wsize, woffset) !=
                static_cast<ssize_t>(wsize) ||
            std::memcmp(back.data(), Host(dev) + buf_offset, wsize) != 0) {
          ++failures;
        }
      }
      ops_->Free(dev);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  close(fd);
  close(wfd);
}

TEST_F(EngineTest, DeviceCopyFailureFailsTheIoOnly) {
  const std::vector<uint8_t> data = RandomBytes(4 * kChunk, 8);
  const int fd = WriteFile("fail", data);
  const uint64_t dev = ops_->Alloc(4 * kChunk);
  ops_->FailCopies(1, -EIO);
  EXPECT_EQ(Read(fd, dev, 4 * kChunk, 0, 0), -EIO);
  // The engine is fine afterwards.
  EXPECT_EQ(Read(fd, dev, 4 * kChunk, 0, 0), 4 * kChunk);
  EXPECT_EQ(std::memcmp(Host(dev), data.data(), data.size()), 0);
  close(fd);
}

// Freeing a buffer while its I/O runs must not write into memory that is
// not the buffer any more: the I/O fails with -EFAULT (or completed before
// the free), and a neighbouring allocation is untouched.
TEST_F(EngineTest, FreedBufferDoesNotCorruptOthers) {
  const std::vector<uint8_t> data = RandomBytes(32 * kChunk, 9);
  const int fd = WriteFile("freed", data);
  ops_->SetPendingQueries(5);
  for (int round = 0; round < 20; ++round) {
    const uint64_t canary = ops_->Alloc(kChunk);
    std::memset(Host(canary), 0x5A, kChunk);
    const uint64_t dev = ops_->Alloc(32 * kChunk);
    std::shared_ptr<Request> request;
    std::string message;
    ASSERT_EQ(driver_->Submit(Op::kRead, fd, dev, 32 * kChunk, 0, 0, &request,
                              &message),
              0);
    ops_->Free(dev);
    request->Wait(-1);
    const int64_t result = request->outcome().result;
    EXPECT_TRUE(result == -EFAULT || result == 32 * kChunk) << result;
    for (uint64_t i = 0; i < kChunk; ++i) ASSERT_EQ(Host(canary)[i], 0x5A);
    ops_->Free(canary);
  }
  close(fd);
}

TEST_F(EngineTest, DeregisterFencesIoInFlight) {
  const std::vector<uint8_t> data = RandomBytes(32 * kChunk, 10);
  const int fd = WriteFile("fence", data);
  ops_->SetPendingQueries(5);
  const uint64_t dev = ops_->Alloc(32 * kChunk);
  std::string message;
  ASSERT_EQ(driver_->RegisterBuffer(dev, 32 * kChunk, 0, &message), 0);
  std::shared_ptr<Request> request;
  ASSERT_EQ(driver_->Submit(Op::kRead, fd, dev, 32 * kChunk, 0, 0, &request,
                            &message),
            0);
  ASSERT_EQ(driver_->DeregisterBuffer(dev), 0);
  // Deregistration returned: every copy into the buffer is over, so the
  // memory may go. (The request's own bookkeeping may still be finishing:
  // the fence is released before completion is signalled, so waiting for
  // the request is separate.)
  for (uint64_t i = 0; i < 32 * kChunk; ++i) ASSERT_EQ(Host(dev)[i], data[i]);
  EXPECT_TRUE(request->Wait(-1));
  EXPECT_EQ(request->outcome().result, 32 * kChunk);
  ops_->Free(dev);
  close(fd);
}

TEST_F(EngineTest, StagingIsAllocatedOncePerWorker) {
  EXPECT_EQ(ops_->active_pinned(), 3);
  const std::vector<uint8_t> data = RandomBytes(64 * kChunk, 11);
  const int fd = WriteFile("staging", data);
  const uint64_t dev = ops_->Alloc(64 * kChunk);
  EXPECT_EQ(Read(fd, dev, 64 * kChunk, 0, 0), 64 * kChunk);
  EXPECT_EQ(ops_->active_pinned(), 3);
  close(fd);
}

TEST_F(EngineTest, StatsCountBytesAndPaths) {
  const std::vector<uint8_t> data = RandomBytes(2 * kChunk, 12);
  const int fd = WriteFile("stats", data, O_RDWR);
  const uint64_t dev = ops_->Alloc(2 * kChunk);
  ASSERT_EQ(Read(fd, dev, 2 * kChunk, 0, 0), 2 * kChunk);
  ASSERT_EQ(Write(fd, dev, 100, 1, 0), 100);
  EXPECT_EQ(Read(-1, dev, 1, 0, 0), -EBADF);  // never submitted: not an I/O
  fgds_driver_stats stats;
  driver_->Stats(&stats);
  EXPECT_EQ(stats.ios, 2u);
  EXPECT_EQ(stats.bytes_read, 2 * kChunk);
  EXPECT_EQ(stats.bytes_written, 100u);
  EXPECT_EQ(stats.bytes_bounce, 2 * kChunk + 100);
  EXPECT_EQ(
      stats.bytes_page_cache + stats.bytes_o_direct + stats.bytes_buffered,
      2 * kChunk + 100);
  fgds_driver_info info;
  driver_->Query(&info);
  EXPECT_EQ(info.path, FGDS_GPU_PATH_BOUNCE);
  EXPECT_EQ(info.workers, 3u);
  EXPECT_NE(std::string(info.direct_unavailable), "");
  close(fd);
}

// The engine under the driver fails (fault_uring_os.h): every read and
// write still completes exactly once, with the engine's error, whichever
// path its chunks take; the workers do not spin or hang, and Close returns.
class EngineFaultTest : public EngineTest {
 protected:
  void TearDown() override {
    EngineTest::TearDown();  // closes the driver: must not hang
    os_.Heal();
  }
  fgds_driver_stats Stats() {
    fgds_driver_stats stats;
    driver_->Stats(&stats);
    return stats;
  }
  io::FaultUringOs os_;
};

// Chunks that are memory copies out of the page cache (all pages cached,
// or unaligned pieces) run in the worker's own thread (Worker::ReadInline),
// so only the I/O that needs the engine's ring fails with it.
TEST_F(EngineFaultTest, SubmitFailingAlwaysFailsEveryIoOnce) {
  const std::vector<uint8_t> data = RandomBytes(6 * kChunk, 20);
  const int fd = WriteFile("fail-always", data, O_RDWR);
  for (bool page_cache : {true, false}) {
    SCOPED_TRACE(page_cache ? "page cache" : "O_DIRECT");
    OpenDriver(page_cache, &os_);
    os_.FailSubmit({-EIO, -1});
    const uint64_t dev = ops_->Alloc(6 * kChunk);
    // Aligned body, unaligned head and tail, one small unaligned piece:
    // with the page cache every read is served from it; without, a read
    // with any aligned chunk fails whole, and the unaligned one still
    // works. Writes always need the ring.
    const int64_t kFailed = -EIO;
    EXPECT_EQ(Read(fd, dev, 6 * kChunk, 0, 0),
              page_cache ? int64_t{6 * kChunk} : kFailed);
    EXPECT_EQ(Read(fd, dev, 4 * kChunk + 10, 100, 0),
              page_cache ? int64_t{4 * kChunk + 10} : kFailed);
    EXPECT_EQ(Read(fd, dev, 10, 5, 0), 10);
    EXPECT_EQ(Write(fd, dev, 6 * kChunk, 0, 0), -EIO);
    EXPECT_EQ(Write(fd, dev, 10, 5, 0), -EIO);
    const fgds_driver_stats stats = Stats();
    const uint64_t failures = page_cache ? 2 : 4;
    EXPECT_EQ(stats.ios, 5u);
    EXPECT_EQ(stats.errors, failures);
    EXPECT_GE(os_.submit_failures(), static_cast<int>(failures));
    // Idle now: no worker spins on the failed ring.
    timespec before, after;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &before);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &after);
    EXPECT_LT((after.tv_sec - before.tv_sec) +
                  (after.tv_nsec - before.tv_nsec) * 1e-9,
              0.05);
    ops_->Free(dev);
    os_.Heal();
  }
  close(fd);
  EXPECT_EQ(ReadFile("fail-always"), data);  // no write went through
}

TEST_F(EngineFaultTest, SubmitFailingOnceFailsOneIoThenRecovers) {
  const std::vector<uint8_t> data = RandomBytes(4 * kChunk, 21);
  const int fd = WriteFile("fail-once", data);
  OpenDriver(/*use_page_cache=*/false, &os_);
  os_.FailSubmit({-ENOMEM, 1});
  const uint64_t dev = ops_->Alloc(4 * kChunk);
  EXPECT_EQ(Read(fd, dev, kChunk, 0, 0), -ENOMEM);
  EXPECT_EQ(Read(fd, dev, 4 * kChunk, 0, 0), 4 * kChunk);
  EXPECT_EQ(std::memcmp(Host(dev), data.data(), data.size()), 0);
  EXPECT_EQ(Stats().ios, 2u);
  EXPECT_EQ(Stats().errors, 1u);
  ops_->Free(dev);
  close(fd);
}

TEST_F(EngineFaultTest, RingSetupFailureFallsBackToInlineTransfers) {
  const std::vector<uint8_t> data = RandomBytes(3 * kChunk + 5, 22);
  const int fd = WriteFile("no-ring", data);
  os_.FailQueueInit({-ENOSYS, -1});
  for (bool page_cache : {true, false}) {
    OpenDriver(page_cache, &os_);
    const uint64_t dev = ops_->Alloc(4 * kChunk);
    EXPECT_EQ(Read(fd, dev, data.size(), 0, 0),
              static_cast<int64_t>(data.size()));
    EXPECT_EQ(std::memcmp(Host(dev), data.data(), data.size()), 0);
    ops_->Free(dev);
  }
  EXPECT_EQ(os_.rings(), 0);
  close(fd);
}

TEST_F(EngineFaultTest, WaitFailingStillCompletesEverything) {
  const std::vector<uint8_t> data = RandomBytes(8 * kChunk, 23);
  const int fd = WriteFile("wait-fails", data);
  OpenDriver(/*use_page_cache=*/false, &os_);
  os_.FailWait({-EBADF, -1});
  const uint64_t dev = ops_->Alloc(8 * kChunk);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(Read(fd, dev, 8 * kChunk, 0, 0), 8 * kChunk);
  }
  EXPECT_EQ(std::memcmp(Host(dev), data.data(), data.size()), 0);
  ops_->Free(dev);
  close(fd);
}

// Many threads while submissions fail now and then: each I/O returns once,
// whole or failed (a failed chunk fails its whole request), and the driver
// counts exactly as many I/Os as were made.
TEST_F(EngineFaultTest, ConcurrentIoWithIntermittentFailures) {
  const uint64_t file_size = 16 * kChunk;
  const std::vector<uint8_t> data = RandomBytes(file_size, 24);
  const int fd = WriteFile("intermittent", data);
  // O_DIRECT: cached pages would be read in the workers' threads, past the
  // failing ring.
  OpenDriver(/*use_page_cache=*/false, &os_);
  os_.FailSubmit({-EIO, 40, /*skip=*/20});
  constexpr int kThreads = 6;
  constexpr int kIos = 30;
  std::atomic<int> bad{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(2000 + t);
      const uint64_t dev = ops_->Alloc(4 * kChunk);
      for (int i = 0; i < kIos; ++i) {
        const uint64_t size = 1 + rng() % (3 * kChunk);
        const uint64_t offset = rng() % (file_size - size);
        const int64_t r = Read(fd, dev, size, offset, 0);
        if (r == -EIO) {
          ++failed;
        } else if (r != static_cast<int64_t>(size) ||
                   std::memcmp(Host(dev), &data[offset], size) != 0) {
          ++bad;
        }
      }
      ops_->Free(dev);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(failed.load(), 0);
  EXPECT_EQ(Stats().ios, uint64_t{kThreads * kIos});
  EXPECT_EQ(Stats().errors, static_cast<uint64_t>(failed.load()));
  close(fd);
}

}  // namespace
}  // namespace fgds::direct
