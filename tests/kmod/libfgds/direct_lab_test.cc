// File: tests/kmod/libfgds/direct_lab_test.cc
//
// libfgds's direct path, end to end, in the kmod lab's QEMU guest: the
// real engine (usrbio/direct: driver, workers, io_uring, O_DIRECT) and the
// real fgds module, with the GPU driver replaced by the lab's exporter
// (lab_device_ops.h). Each test prints "PASS <name>" or "FAIL <name>:
// <why>" (the lab's result lines); the exit status is 1 when any failed.
//
//   fgds_direct_lab_test --node /dev/fgds_0000_03_00_0 --bar-off BYTES
//       --raw /dev/nvme0n1 --ext4-dir /mnt/ext4 --ext4-file /mnt/ext4/data.bin
//       [--noroute /dev/nvme2n1]
//
// Reads come from the raw drive and the ext4 pattern file and are checked
// against buffered reads of the same bytes; writes go to new files in the
// ext4 directory (the raw drive's bytes belong to the other lab tests).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fgds/fgds.h"
#include "tests/kmod/libfgds/lab_device_ops.h"
#include "tests/kmod/libfgds/lab_main.h"
#include "usrbio/direct/driver.h"

namespace fgds::lab {
namespace {

struct Args {
  std::string node, raw, ext4_dir, ext4_file, noroute;
  uint64_t bar_off = 0;
};

// How an I/O's bytes should move.
enum class Want {
  kDirect,  // every byte direct: path DIRECT
  kMixed,   // some direct, some through staging: path BOUNCE
  kBounce,  // every byte through staging: path BOUNCE
};

// Check: "" when the outcome moved `len` bytes the wanted way, else why.
std::string Check(const direct::RequestOutcome& o, uint64_t len, Want want) {
  const std::string got = "result " + std::to_string(o.result) + ", path " +
                          std::to_string(o.path) + ", direct bytes " +
                          std::to_string(o.bytes_direct) + ", source " +
                          std::to_string(o.source);
  const bool ok = want == Want::kDirect
                      ? o.path == FGDS_GPU_PATH_DIRECT && o.bytes_direct == len
                  : want == Want::kMixed
                      ? o.path == FGDS_GPU_PATH_BOUNCE && o.bytes_direct > 0 &&
                            o.bytes_direct < len
                      : o.path == FGDS_GPU_PATH_BOUNCE && o.bytes_direct == 0;
  return ok ? "" : "moved the wrong way: " + got;
}

// The lab's "GPU" plus a libfgds driver on it.
struct Rig {
  LabDeviceOps* ops = nullptr;  // owned by the driver
  std::unique_ptr<direct::Driver> driver;
};

int MakeRig(const Args& args, int view_storage_fd, Rig* rig, std::string* why) {
  std::unique_ptr<LabDeviceOps> ops;
  if (int error = LabDeviceOps::Open(args.node, args.bar_off, kWindow,
                                     view_storage_fd, &ops, why);
      error != 0) {
    return error;
  }
  rig->ops = ops.get();
  direct::DriverConfig config;
  config.workers = 2;
  config.slots_per_worker = 4;
  config.chunk_bytes = kMiB;
  config.staging_bytes = 8 * kMiB;
  return direct::Driver::Open(config, std::move(ops), &rig->driver, why);
}

void DropCache(int fd) { posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED); }

bool PreadAll(int fd, uint8_t* buf, uint64_t len, uint64_t off) {
  return pread(fd, buf, len, static_cast<off_t>(off)) ==
         static_cast<ssize_t>(len);
}

// ReadCase reads `len` bytes of `path` at `off` into the window at
// `buf_off` through libfgds and checks the bytes and the path.
void ReadCase(const std::string& name, Rig& rig, const std::string& path,
              uint64_t off, uint64_t len, uint64_t buf_off, Want want,
              bool drop_cache) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Fail(name, "open " + path + ": " + std::strerror(errno));
  std::string why;
  if (rig.driver->RegisterFile(fd, &why) != 0) {
    close(fd);
    return Fail(name, "RegisterFile: " + why);
  }
  std::memset(rig.ops->view() + buf_off, 0xa5, len);
  if (drop_cache) DropCache(fd);
  direct::RequestOutcome outcome;
  const int64_t n = rig.driver->Transfer(
      direct::Op::kRead, fd, kDeviceBase, len, static_cast<int64_t>(off),
      static_cast<int64_t>(buf_off), &outcome, &why);
  std::vector<uint8_t> expected(len);
  const bool read_back = PreadAll(fd, expected.data(), len, off);
  rig.driver->DeregisterFile(fd);
  close(fd);
  if (n != static_cast<int64_t>(len)) {
    return Fail(name, "read returned " + std::to_string(n) + " " + why);
  }
  if (!read_back) return Fail(name, "buffered read-back failed");
  if (std::memcmp(rig.ops->view() + buf_off, expected.data(), len) != 0) {
    return Fail(name, "the bytes in device memory differ from the file");
  }
  if (std::string bad = Check(outcome, len, want); !bad.empty()) {
    return Fail(name, bad);
  }
  Pass(name);
}

// WriteCase fills the window at `buf_off` and writes it to a new file at
// `off` through libfgds, then checks the file.
void WriteCase(const std::string& name, Rig& rig, const std::string& path,
               uint64_t off, uint64_t len, uint64_t buf_off, Want want) {
  const int fd =
      open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Fail(name, "open " + path + ": " + std::strerror(errno));
  std::string why;
  rig.driver->RegisterFile(fd, &why);
  uint8_t* src = rig.ops->view() + buf_off;
  for (uint64_t i = 0; i < len; ++i) {
    src[i] = static_cast<uint8_t>((i * 131 + off + name.size()) >> 3);
  }
  direct::RequestOutcome outcome;
  const int64_t n = rig.driver->Transfer(
      direct::Op::kWrite, fd, kDeviceBase, len, static_cast<int64_t>(off),
      static_cast<int64_t>(buf_off), &outcome, &why);
  rig.driver->DeregisterFile(fd);
  fsync(fd);
  DropCache(fd);
  std::vector<uint8_t> got(len);
  const bool read_back = PreadAll(fd, got.data(), len, off);
  close(fd);
  unlink(path.c_str());
  if (n != static_cast<int64_t>(len)) {
    return Fail(name, "write returned " + std::to_string(n) + " " + why);
  }
  if (!read_back || std::memcmp(got.data(), src, len) != 0) {
    return Fail(name, "the file differs from device memory");
  }
  if (std::string bad = Check(outcome, len, want); !bad.empty()) {
    return Fail(name, bad);
  }
  Pass(name);
}

// ThreadsCase: several threads read into their own parts of the buffer at
// once, each through its own file descriptor of the raw drive.
void ThreadsCase(Rig& rig, const Args& args) {
  const std::string name = "libfgds_threads_direct";
  constexpr int kThreads = 4;
  constexpr uint64_t kEach = 2 * kMiB;
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const int fd = open(args.raw.c_str(), O_RDONLY | O_CLOEXEC);
      std::string why;
      if (fd < 0 || rig.driver->RegisterFile(fd, &why) != 0) {
        errors[t] = "open/register failed " + why;
        if (fd >= 0) close(fd);
        return;
      }
      const uint64_t off = 40 * kMiB + t * kEach;
      const uint64_t buf_off = t * kEach;
      direct::RequestOutcome outcome;
      const int64_t n = rig.driver->Transfer(
          direct::Op::kRead, fd, kDeviceBase, kEach, static_cast<int64_t>(off),
          static_cast<int64_t>(buf_off), &outcome, &why);
      std::vector<uint8_t> want(kEach);
      if (n != static_cast<int64_t>(kEach)) {
        errors[t] = "read returned " + std::to_string(n) + " " + why;
      } else if (!PreadAll(fd, want.data(), kEach, off) ||
                 std::memcmp(rig.ops->view() + buf_off, want.data(), kEach) !=
                     0) {
        errors[t] = "bytes differ";
      } else {
        errors[t] = Check(outcome, kEach, Want::kDirect);
      }
      rig.driver->DeregisterFile(fd);
      close(fd);
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    if (!errors[t].empty()) {
      return Fail(name, "thread " + std::to_string(t) + ": " + errors[t]);
    }
  }
  Pass(name);
}

void FreedBufferCase(Rig& rig, const Args& args) {
  const std::string name = "libfgds_freed_buffer";
  const int fd = open(args.raw.c_str(), O_RDONLY | O_CLOEXEC);
  std::string why;
  rig.driver->RegisterFile(fd, &why);
  DropCache(fd);
  rig.ops->Free();  // the buffer registered earlier is gone now
  direct::RequestOutcome outcome;
  const int64_t n = rig.driver->Transfer(direct::Op::kRead, fd, kDeviceBase,
                                         kMiB, 0, 0, &outcome, &why);
  rig.driver->DeregisterFile(fd);
  close(fd);
  if (n != -EFAULT) {
    return Fail(name, "read into a freed buffer returned " + std::to_string(n) +
                          ", want -EFAULT");
  }
  Pass(name);
}

int Run(const Args& args) {
  const int raw = open(args.raw.c_str(), O_RDONLY | O_CLOEXEC);
  if (raw < 0) {
    Fail("libfgds_setup", "open " + args.raw + ": " + std::strerror(errno));
    return 1;
  }
  Rig rig;
  std::string why;
  if (MakeRig(args, raw, &rig, &why) != 0) {
    close(raw);
    Fail("libfgds_setup", why);
    return 1;
  }
  close(raw);

  fgds_driver_info info;
  rig.driver->Query(&info);
  if (info.path != FGDS_GPU_PATH_DIRECT) {
    Fail("libfgds_path_direct",
         std::string("driver path is bounce: ") + info.direct_unavailable);
    return 1;
  }
  Pass("libfgds_path_direct");

  // Unregistered memory always bounces (no registration to map).
  ReadCase("libfgds_unregistered_bounces", rig, args.raw, 3 * kMiB, kMiB, 0,
           Want::kBounce, true);

  if (rig.driver->RegisterBuffer(kDeviceBase, kWindow, 0, &why) != 0) {
    Fail("libfgds_register", why);
    return 1;
  }
  const int exports_before = rig.ops->exports();
  ReadCase("libfgds_read_direct_raw", rig, args.raw, 5 * kMiB, 6 * kMiB, kMiB,
           Want::kDirect, true);
  ReadCase("libfgds_read_direct_raw_again", rig, args.raw, 12 * kMiB,
           kMiB + 64 * 1024, 8 * kMiB, Want::kDirect, true);
  if (rig.ops->exports() - exports_before != 1) {
    Fail("libfgds_one_export",
         std::to_string(rig.ops->exports() - exports_before) +
             " dma-buf exports for one registered buffer, want 1");
  } else {
    Pass("libfgds_one_export");
  }
  ReadCase("libfgds_read_direct_ext4", rig, args.ext4_file, 9 * kMiB, 4 * kMiB,
           2 * kMiB, Want::kDirect, true);
  // Cached pages bounce: the second read of a range finds it all cached.
  ReadCase("libfgds_read_cached_bounces", rig, args.ext4_file, 9 * kMiB,
           4 * kMiB, 2 * kMiB, Want::kBounce, false);
  // Unaligned head and tail bounce, the aligned middle goes direct: the
  // I/O as a whole reports bounce, and the bytes are right.
  ReadCase("libfgds_read_unaligned", rig, args.raw, 20 * kMiB + 100,
           2 * kMiB + 300, 4096 + 100, Want::kMixed, true);
  if (!args.noroute.empty()) {
    ReadCase("libfgds_read_noroute_bounces", rig, args.noroute, kMiB, kMiB, 0,
             Want::kBounce, true);
  }
  WriteCase("libfgds_write_direct_ext4", rig,
            args.ext4_dir + "/libfgds-write.bin", 2 * kMiB, 4 * kMiB, 4 * kMiB,
            Want::kDirect);
  // Memory and file out of step (no chunk can go O_DIRECT from the
  // mapping): the whole I/O bounces.
  WriteCase("libfgds_write_unaligned", rig,
            args.ext4_dir + "/libfgds-write2.bin", 4096 + 10, kMiB, 0,
            Want::kBounce);
  // In step but unaligned at both ends: head and tail bounce, the middle
  // goes direct.
  WriteCase("libfgds_write_unaligned_in_step", rig,
            args.ext4_dir + "/libfgds-write3.bin", 3 * 4096 + 10, 2 * kMiB,
            4096 + 10, Want::kMixed);
  {
    const int fd = open(args.raw.c_str(), O_RDONLY | O_CLOEXEC);
    DropCache(fd);
    close(fd);
  }
  ThreadsCase(rig, args);
  FreedBufferCase(rig, args);
  if (rig.driver->DeregisterBuffer(kDeviceBase) != 0) {
    Fail("libfgds_deregister", "DeregisterBuffer failed");
  }
  // An allocation that ends inside a page (cudaMalloc(16 MiB - 100)): the
  // whole pages go direct, I/O reaching into the last partial page
  // bounces.
  rig.ops->Free();
  rig.ops->SetAllocationBytes(kWindow - 100);
  if (rig.driver->RegisterBuffer(kDeviceBase, kWindow - 100, 0, &why) != 0) {
    Fail("libfgds_register_odd_size", why);
  } else {
    ReadCase("libfgds_odd_size_whole_pages_direct", rig, args.raw, 30 * kMiB,
             kMiB, kWindow - 2 * kMiB, Want::kDirect, true);
    ReadCase("libfgds_odd_size_last_page_bounces", rig, args.raw, 32 * kMiB,
             8192 - 100, kWindow - 8192, Want::kBounce, true);
    rig.driver->DeregisterBuffer(kDeviceBase);
  }
  rig.driver->Close();
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace fgds::lab

int main(int argc, char** argv) {
  fgds::lab::Args args;
  std::string bar_off;
  if (!fgds::lab::ParseLabOptions(argc, argv,
                                  {{"node", &args.node},
                                   {"bar-off", &bar_off},
                                   {"raw", &args.raw},
                                   {"ext4-dir", &args.ext4_dir},
                                   {"ext4-file", &args.ext4_file},
                                   {"noroute", &args.noroute, false}})) {
    return 2;
  }
  args.bar_off = std::strtoull(bar_off.c_str(), nullptr, 0);
  return fgds::lab::Run(args);
}
