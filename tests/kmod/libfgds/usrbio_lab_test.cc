// File: tests/kmod/libfgds/usrbio_lab_test.cc
//
// The daemon's side of GPU iovs, end to end, in the kmod lab's QEMU guest:
// a real fgds daemon (mounted by guest-tests.sh over the ext4 drive, which
// has a P2P route to the "GPU") receives a GPU iov's dma-buf, maps it
// through the real fgds module, and serves aligned ring entries with
// O_DIRECT straight into it; everything else takes the bounce path. The GPU
// driver is replaced by the lab's exporter (lab_device_ops.h), as in
// direct_lab_test.cc. Prints "PASS <name>" / "FAIL <name>: <why>".
//
//   fgds_usrbio_lab_test --node /dev/fgds_0000_03_00_0 --bar-off BYTES
//       --raw /dev/nvme0n1 --mount /mnt/fgds --backing /mnt/ext4
//       --file data.bin
//
// --raw only serves the CPU view of the window (lab_device_ops.h). A user
// other than root, whom the node does not admit, gets the bounce path.
#include <fcntl.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fgds/usrbio.h"
#include "tests/kmod/libfgds/lab_device_ops.h"
#include "tests/kmod/libfgds/lab_main.h"
#include "tests/lib/usrbio_stats.h"
#include "usrbio/gpu/gpu_iov.h"
#include "usrbio/gpu/stager.h"

namespace fgds::lab {
namespace {

struct Args {
  std::string node, raw, mount, backing, file;
  uint64_t bar_off = 0;
};

void DropCache(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
}

// One entry through a fresh ior: the completion, or a failed one.
fgds_cqe RunOne(fgds_session* s, const fgds_iov* iov, uint32_t op, uint64_t dev,
                int fd_id, uint64_t off, uint64_t len) {
  fgds_cqe cqe = {};
  cqe.result = -EIO;
  fgds_ior ior = {};
  if (fgds_ior_create(s, &ior, nullptr) != 0) return cqe;
  const int prep = fgds_prep_io(&ior, iov, op, 0, reinterpret_cast<void*>(dev),
                                fd_id, off, len, 7);
  if (prep != 0) {
    cqe.result = prep;
  } else if (fgds_ior_submit(&ior) < 0 ||
             fgds_ior_wait(&ior, &cqe, 1, 1, 30 * 1000 * 1000) != 1) {
    cqe.result = -ETIMEDOUT;
  }
  fgds_ior_destroy(&ior);
  return cqe;
}

// Read `len` bytes of the file at `off` into the window at `buf_off` and
// check bytes and path.
void ReadCase(const std::string& name, fgds_session* s, const fgds_iov* iov,
              LabDeviceOps& ops, const Args& args, int fd_id, uint64_t off,
              uint64_t len, uint64_t buf_off, uint32_t want_path) {
  std::memset(ops.view() + buf_off, 0x5a, len);
  DropCache(args.backing + "/" + args.file);
  const fgds_cqe cqe =
      RunOne(s, iov, FGDS_OP_READ, kDeviceBase + buf_off, fd_id, off, len);
  if (cqe.result != static_cast<int64_t>(len)) {
    return Fail(name, "read returned " + std::to_string(cqe.result));
  }
  std::vector<uint8_t> want(len);
  const int fd =
      open((args.backing + "/" + args.file).c_str(), O_RDONLY | O_CLOEXEC);
  const bool got =
      fd >= 0 && pread(fd, want.data(), len, off) == static_cast<ssize_t>(len);
  if (fd >= 0) close(fd);
  if (!got) return Fail(name, "read-back of the backing file failed");
  if (std::memcmp(ops.view() + buf_off, want.data(), len) != 0) {
    return Fail(name, "the bytes in device memory differ from the file");
  }
  if (cqe.path != want_path) {
    return Fail(name, "path " + std::to_string(cqe.path) + ", want " +
                          std::to_string(want_path));
  }
  Pass(name);
}

// fgds stat on the daemon this test alone used: the aligned reads and the
// write in the GPU direct rows, the unaligned read's chunks in GPU bounce.
void StatsCase(const std::string& mount, int64_t direct_reads,
               int64_t direct_read_bytes, int64_t bounce_read_bytes,
               int64_t direct_write_bytes) {
  using testing::ReadUsrbioStats;
  const testing::UsrbioStatsRow reads =
      ReadUsrbioStats(mount, "read", "gpu-direct", "o-direct");
  const testing::UsrbioStatsRow writes =
      ReadUsrbioStats(mount, "write", "gpu-direct", "o-direct");
  const int64_t bounce =
      ReadUsrbioStats(mount, "read", "gpu-bounce", "o-direct").bytes +
      ReadUsrbioStats(mount, "read", "gpu-bounce", "page-cache").bytes;
  const std::string seen =
      "gpu-direct reads " + std::to_string(reads.entries) + "/" +
      std::to_string(reads.bytes) + " B, writes " +
      std::to_string(writes.entries) + "/" + std::to_string(writes.bytes) +
      " B, gpu-bounce reads " + std::to_string(bounce) + " B";
  if (reads.entries != direct_reads || reads.bytes != direct_read_bytes ||
      reads.errors != 0 || writes.entries != 1 ||
      writes.bytes != direct_write_bytes || bounce != bounce_read_bytes) {
    return Fail("usrbio_gpu_stats", seen);
  }
  Pass("usrbio_gpu_stats");
}

// Two iors read into one mapped GPU iov at once: a mapped iov's aligned
// entries go to the ring without the stager (no ior of the two makes one)
// and hold no ownership of the iov, so the second is accepted while the
// first is still in flight (a NIC-only iov's would get -EBUSY), and both
// land in device memory by O_DIRECT (path DIRECT).
void TwoIorsCase(fgds_session* s, const fgds_iov* iov, LabDeviceOps& ops,
                 const Args& args, int fd_id) {
  const std::string name = "usrbio_gpu_read_direct_two_iors";
  constexpr uint64_t kLen = 64 * 1024;
  const uint64_t file_off[2] = {16 * kMiB, 17 * kMiB + 4096};
  const uint64_t buf_off[2] = {6 * kMiB, 7 * kMiB};
  DropCache(args.backing + "/" + args.file);
  fgds_ior ior[2] = {};
  bool made[2] = {false, false};
  std::string why;
  for (int i = 0; i < 2 && why.empty(); ++i) {
    std::memset(ops.view() + buf_off[i], 0x5a, kLen);
    if (int ret = fgds_ior_create(s, &ior[i], nullptr); ret != 0) {
      why = "fgds_ior_create: " + std::to_string(ret);
      break;
    }
    made[i] = true;
    const int prep =
        fgds_prep_io(&ior[i], iov, FGDS_OP_READ, 0,
                     reinterpret_cast<void*>(kDeviceBase + buf_off[i]), fd_id,
                     file_off[i], kLen, static_cast<uint64_t>(i));
    if (prep != 0) {
      why = "ior " + std::to_string(i) + ": fgds_prep_io " +
            std::to_string(prep) + " with the other ior's entry in flight";
    } else if (usrbio::gpu::StagerOf(&ior[i]) != nullptr) {
      why = "ior " + std::to_string(i) + " made a stager for a mapped entry";
    } else if (fgds_ior_submit(&ior[i]) != 1) {
      why = "ior " + std::to_string(i) + ": submit";
    }
  }
  for (int i = 0; i < 2 && why.empty(); ++i) {
    fgds_cqe cqe = {};
    if (fgds_ior_wait(&ior[i], &cqe, 1, 1, 30 * 1000 * 1000) != 1) {
      why = "ior " + std::to_string(i) + ": no completion";
    } else if (cqe.result != static_cast<int64_t>(kLen) ||
               cqe.path != FGDS_PATH_DIRECT) {
      why = "ior " + std::to_string(i) + ": result " +
            std::to_string(cqe.result) + ", path " + std::to_string(cqe.path);
    }
  }
  const int fd =
      open((args.backing + "/" + args.file).c_str(), O_RDONLY | O_CLOEXEC);
  for (int i = 0; i < 2 && why.empty(); ++i) {
    std::vector<uint8_t> want(kLen);
    if (fd < 0 ||
        pread(fd, want.data(), kLen, static_cast<off_t>(file_off[i])) !=
            static_cast<ssize_t>(kLen)) {
      why = "read-back of the backing file failed";
    } else if (std::memcmp(ops.view() + buf_off[i], want.data(), kLen) != 0) {
      why = "ior " + std::to_string(i) + ": device memory differs from file";
    }
  }
  if (fd >= 0) close(fd);
  for (int i = 0; i < 2; ++i) {
    if (made[i]) fgds_ior_destroy(&ior[i]);
  }
  if (!why.empty()) return Fail(name, why);
  Pass(name);
}

// A user the node's mode does not admit (the guest has no udev: devtmpfs
// makes the node root's, 0600) registers the same GPU memory. The daemon
// runs as root and could open the node; it must not do so for this user,
// so the iov bounces with MODULE_ERROR. Before the daemon checked, it was
// DIRECT. The user is a bare uid/gid (no account needed: the daemon
// judges what SO_PEERCRED and SO_PEERGROUPS report).
void OtherUserCase(const Args& args, LabDeviceOps* ops) {
  constexpr uid_t kOther = 4242;
  const std::string name = "usrbio_gpu_other_user_bounces";
  const pid_t pid = fork();
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(kOther) != 0 ||
        setuid(kOther) != 0) {
      _exit(3);
    }
    fgds_session s = {};
    if (fgds_session_open(&s, args.mount.c_str(), nullptr) != 0) _exit(4);
    fgds_iov iov = {};
    fgds_iov_gpu_params params = {};
    if (usrbio::gpu::WrapGpuIov(&s, &iov, kDeviceBase, kWindow, &params, ops) !=
        0) {
      _exit(5);
    }
    uint32_t reason = 99;
    const int path = fgds_iov_gpu_path(&iov, &reason);
    fgds_iov_destroy(&iov);
    fgds_session_close(&s);
    if (path == static_cast<int>(FGDS_PATH_DIRECT)) _exit(6);
    _exit(reason == FGDS_IOV_GPU_REASON_MODULE_ERROR ? 0 : 7);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
    Fail(name, "the child did not run to its end");
    return;
  }
  switch (WEXITSTATUS(status)) {
    case 0:
      Pass(name);
      return;
    case 3:
      Fail(name, "cannot become uid 4242");
      return;
    case 4:
      Fail(name, "uid 4242 cannot open a session");
      return;
    case 5:
      Fail(name, "WrapGpuIov failed for uid 4242");
      return;
    case 6:
      Fail(name,
           "the daemon mapped the GPU memory through a node uid 4242 "
           "may not open: DIRECT");
      return;
    default:
      Fail(name, "bounced, but not for MODULE_ERROR");
  }
}

int Run(const Args& args) {
  const int raw = open(args.raw.c_str(), O_RDONLY | O_CLOEXEC);
  std::unique_ptr<LabDeviceOps> ops;
  std::string why;
  if (raw < 0 || LabDeviceOps::Open(args.node, args.bar_off, kWindow, raw, &ops,
                                    &why) != 0) {
    Fail("usrbio_gpu_setup", "lab device: " + why);
    return 1;
  }
  close(raw);
  OtherUserCase(args, ops.get());
  fgds_session s = {};
  if (int ret = fgds_session_open(&s, args.mount.c_str(), nullptr); ret != 0) {
    Fail("usrbio_gpu_setup", "fgds_session_open: " + std::to_string(ret));
    return 1;
  }
  fgds_iov iov = {};
  fgds_iov_gpu_params params = {};
  if (int ret = usrbio::gpu::WrapGpuIov(&s, &iov, kDeviceBase, kWindow, &params,
                                        ops.get());
      ret != 0) {
    Fail("usrbio_gpu_setup", "WrapGpuIov: " + std::to_string(ret));
    fgds_session_close(&s);
    return 1;
  }
  uint32_t reason = 99;
  const int path = fgds_iov_gpu_path(&iov, &reason);
  if (path != static_cast<int>(FGDS_PATH_DIRECT)) {
    Fail("usrbio_gpu_iov_direct", "path " + std::to_string(path) + ", reason " +
                                      std::to_string(reason) +
                                      " (the daemon's log says why)");
  } else if (usrbio::gpu::GpuOf(&iov)->nic_only) {
    // The daemon mapped it (the module's node): its reply must say so
    // (reason 0), or every entry would pay the stager's way.
    Fail("usrbio_gpu_iov_direct", "the reply said NIC-only, not mapped");
  } else {
    Pass("usrbio_gpu_iov_direct");
  }

  const int in = open((args.mount + "/" + args.file).c_str(), O_RDONLY);
  const int in_id = in >= 0 ? fgds_fd_register(&s, in, 0) : -EBADF;
  if (in >= 0) close(in);
  if (in_id < 0) {
    Fail("usrbio_gpu_setup", "fgds_fd_register: " + std::to_string(in_id));
  } else {
    ReadCase("usrbio_gpu_read_direct", &s, &iov, *ops, args, in_id, 8 * kMiB,
             4 * kMiB, kMiB, FGDS_PATH_DIRECT);
    ReadCase("usrbio_gpu_read_direct_small", &s, &iov, *ops, args, in_id,
             20 * kMiB + 4096, 64 * 1024, 9 * kMiB + 8192, FGDS_PATH_DIRECT);
    TwoIorsCase(&s, &iov, *ops, args, in_id);
    // Not 4 KiB aligned: the stager's staging and copies.
    ReadCase("usrbio_gpu_read_unaligned_bounces", &s, &iov, *ops, args, in_id,
             24 * kMiB + 100, kMiB + 17, 12 * kMiB + 100, FGDS_PATH_BOUNCE);
    fgds_fd_unregister(&s, in_id);
  }

  // A GPU -> file write, straight from the mapping.
  const std::string out_name = "usrbio-gpu-write.bin";
  const int out = open((args.mount + "/" + out_name).c_str(),
                       O_RDWR | O_CREAT | O_TRUNC, 0644);
  const int out_id = out >= 0 ? fgds_fd_register(&s, out, 0) : -EBADF;
  if (out >= 0) close(out);
  if (out_id < 0) {
    Fail("usrbio_gpu_write_direct", "register: " + std::to_string(out_id));
  } else {
    uint8_t* src = ops->view() + 2 * kMiB;
    for (uint64_t i = 0; i < 2 * kMiB; ++i) {
      src[i] = static_cast<uint8_t>((i * 7) ^ (i >> 11));
    }
    const fgds_cqe cqe = RunOne(&s, &iov, FGDS_OP_WRITE, kDeviceBase + 2 * kMiB,
                                out_id, 0, 2 * kMiB);
    std::vector<uint8_t> back(2 * kMiB);
    const int fd = open((args.backing + "/" + out_name).c_str(), O_RDONLY);
    const bool got = fd >= 0 && pread(fd, back.data(), back.size(), 0) ==
                                    static_cast<ssize_t>(back.size());
    if (fd >= 0) close(fd);
    if (cqe.result != static_cast<int64_t>(2 * kMiB)) {
      Fail("usrbio_gpu_write_direct",
           "write returned " + std::to_string(cqe.result));
    } else if (!got || std::memcmp(back.data(), src, back.size()) != 0) {
      Fail("usrbio_gpu_write_direct", "the file differs from device memory");
    } else if (cqe.path != FGDS_PATH_DIRECT) {
      Fail("usrbio_gpu_write_direct", "path " + std::to_string(cqe.path));
    } else {
      Pass("usrbio_gpu_write_direct");
    }
    fgds_fd_unregister(&s, out_id);
    unlink((args.backing + "/" + out_name).c_str());
  }

  // The direct reads: 4 MiB, 64 KiB, and the two iors' 64 KiB each.
  StatsCase(args.mount, 4, static_cast<int64_t>(4 * kMiB + 3 * 64 * 1024),
            static_cast<int64_t>(kMiB + 17), static_cast<int64_t>(2 * kMiB));

  if (int ret = fgds_iov_destroy(&iov); ret != 0) {
    Fail("usrbio_gpu_iov_destroy", std::to_string(ret));
  }
  fgds_session_close(&s);
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
                                   {"mount", &args.mount},
                                   {"backing", &args.backing},
                                   {"file", &args.file}})) {
    return 2;
  }
  args.bar_off = std::strtoull(bar_off.c_str(), nullptr, 0);
  return fgds::lab::Run(args);
}
