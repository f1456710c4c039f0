// Several GPUs in one host (issue 18): every GPU path honours the device a
// buffer lives on, not the thread's current context, and every byte is
// checked on the device it landed on (a checksum kernel there,
// gpu_kernels.h).
//
//   OnePerGpu          one process per GPU (as a job's ranks run), each
//                      limited to its GPU by FGDS_GPUS, reads a disjoint
//                      part of one file through libfgds and through usrbio
//                      with its current context on GPU 0; runs on any
//                      number of GPUs, one included.
//   Gpu1WhileGpu0Busy  a buffer on GPU 1, wrapped and read and written
//                      while GPU 0 runs a spinning kernel and is the
//                      thread's current context; needs two GPUs.
//   WrapWithoutContext a GPU iov made on a thread with no current context.
//   DaemonGpuSubset    `fgds mount --gpus` naming no GPU fails the mount.
//
// Skips without a GPU (FGDS_REQUIRE_GPU), and the usrbio parts without
// root or /dev/fuse.
#include <fcntl.h>
#include <linux/mempolicy.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/gpu/gpu_subset.h"
#include "common/gpu/gpu_sysfs.h"
#include "fgds/fgds.h"
#include "fgds/usrbio.h"
#include "gtest/gtest.h"
#include "tests/gpu/gpu_env.h"
#include "tests/gpu/gpu_kernels.h"
#include "tests/lib/mounted_fs.h"
#include "tests/lib/random_bytes.h"
#include "usrbio/cuda/cuda_api.h"
#include "usrbio/cuda/cuda_error.h"
#include "usrbio/cuda/cuda_memory.h"
#include "usrbio/gpu/gpu_iov.h"

extern char** environ;

namespace fgds::testing {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

int GpuCount() {
  int count = 0;
  if (GpuEnv::Get().api().cuDeviceGetCount(&count) != cuda::kCudaSuccess) {
    return 0;
  }
  return count;
}

// Device `ordinal`'s primary context, retained for the process's life.
cuda::CUcontext Primary(int ordinal) {
  const cuda::CudaApi& api = GpuEnv::Get().api();
  cuda::CUdevice device = 0;
  cuda::CUcontext context = nullptr;
  EXPECT_EQ(api.cuDeviceGet(&device, ordinal), cuda::kCudaSuccess);
  EXPECT_EQ(api.cuDevicePrimaryCtxRetain(&context, device), cuda::kCudaSuccess);
  return context;
}

std::string PciOf(int ordinal) {
  cuda::DeviceInfo info;
  std::string why;
  EXPECT_EQ(cuda::QueryDevice(GpuEnv::Get().api(), ordinal, &info, &why), 0)
      << why;
  return info.pci_bus_id;
}

// A cuMemAlloc'd range in `context`, whatever context the thread has.
class Allocation {
 public:
  Allocation(cuda::CUcontext context, uint64_t size) : context_(context) {
    const cuda::CudaApi& api = GpuEnv::Get().api();
    cuda::CUcontext previous = nullptr;
    api.cuCtxGetCurrent(&previous);
    api.cuCtxSetCurrent(context_);
    EXPECT_EQ(api.cuMemAlloc(&address_, size), cuda::kCudaSuccess);
    EXPECT_EQ(api.cuMemsetD8(address_, 0xa5, size), cuda::kCudaSuccess);
    api.cuCtxSetCurrent(previous);
  }
  ~Allocation() {
    const cuda::CudaApi& api = GpuEnv::Get().api();
    cuda::CUcontext previous = nullptr;
    api.cuCtxGetCurrent(&previous);
    api.cuCtxSetCurrent(context_);
    api.cuMemFree(address_);
    api.cuCtxSetCurrent(previous);
  }
  uint64_t address() const { return address_; }
  void* ptr() const { return reinterpret_cast<void*>(address_); }

 private:
  cuda::CUcontext context_;
  cuda::CUdeviceptr address_ = 0;
};

// Runs `n` bytes of `op` between file `id` at `offset` and `dev` on a GPU
// iov through a fresh ior; returns the completion's result.
int64_t RingIo(fgds_session* session, fgds_iov* iov, bool write, int id,
               uint64_t dev, uint64_t offset, uint64_t n) {
  fgds_ior ior;
  if (fgds_ior_create(session, &ior, nullptr) != 0) return -1000;
  int ret = write ? fgds_prep_write(&ior, iov, reinterpret_cast<void*>(dev), id,
                                    offset, n, 7)
                  : fgds_prep_read(&ior, iov, reinterpret_cast<void*>(dev), id,
                                   offset, n, 7);
  fgds_cqe cqe = {};
  if (ret == 0) ret = fgds_ior_submit(&ior) < 0 ? -1001 : 0;
  if (ret == 0)
    ret = fgds_ior_wait(&ior, &cqe, 1, 1, 60000000) == 1 ? 0 : -1002;
  fgds_ior_destroy(&ior);
  return ret != 0 ? ret : cqe.result;
}

int RegisterFile(fgds_session* session, const std::string& path, int flags) {
  const int fd = open(path.c_str(), flags, 0644);
  if (fd < 0) return -errno;
  const int id = fgds_fd_register(session, fd, 0);
  close(fd);
  return id;
}

// The NUMA node the page at `addr` is on, or -1.
int NodeOfPage(void* addr) {
  int node = -1;
  if (syscall(SYS_get_mempolicy, &node, nullptr, 0, addr,
              MPOL_F_NODE | MPOL_F_ADDR) != 0) {
    return -1;
  }
  return node;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// ---- one process per GPU -------------------------------------------------

// The child: reads its slice into memory of its GPU through libfgds (its
// own driver, FGDS_DRIVER_PRIMARY_CTX) and through usrbio (a GPU iov
// wrapped while GPU 0's context is current), checking the bytes on its GPU
// each time. Run only by OnePerGpu (hence DISABLED_: a plain run skips it).
TEST(MultiGpuChild, DISABLED_ReadsItsSlice) {
  if (Env("FGDS_MGPU_DEVICE").empty()) GTEST_SKIP() << "a child of OnePerGpu";
  FGDS_REQUIRE_GPU();  // GPU 0's primary context is current from here on
  const int device = std::atoi(Env("FGDS_MGPU_DEVICE").c_str());
  const uint64_t offset = std::strtoull(Env("FGDS_MGPU_OFFSET").c_str(), 0, 10);
  const uint64_t len = std::strtoull(Env("FGDS_MGPU_LEN").c_str(), 0, 10);
  const uint64_t sum = std::strtoull(Env("FGDS_MGPU_SUM").c_str(), 0, 10);
  const int expect_errno = std::atoi(Env("FGDS_MGPU_EXPECT_ERRNO").c_str());

  fgds_driver_params params = {};
  params.flags = FGDS_DRIVER_PRIMARY_CTX;
  params.device = device;
  fgds_driver* driver = nullptr;
  const int opened = fgds_driver_open(&driver, &params);
  if (expect_errno != 0) {
    EXPECT_EQ(opened, -expect_errno);
    EXPECT_NE(std::string(fgds_last_error()).find("FGDS_GPUS"),
              std::string::npos)
        << fgds_last_error();
  } else {
    ASSERT_EQ(opened, 0) << fgds_last_error();
    fgds_driver_info info = {};
    ASSERT_EQ(fgds_driver_query(driver, &info), 0);
    EXPECT_EQ(info.device, device);
    EXPECT_EQ(std::string(info.pci_bus_id), PciOf(device));

    const cuda::CUcontext context = Primary(device);
    Allocation buffer(context, len);
    GpuKernels kernels(context);
    ASSERT_TRUE(kernels.ok()) << kernels.why();
    const int fd = open(Env("FGDS_MGPU_FILE").c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(fgds_pread(driver, fd, buffer.ptr(), len,
                         static_cast<off_t>(offset), 0),
              static_cast<ssize_t>(len))
        << fgds_last_error();
    close(fd);
    uint64_t got = 0;
    ASSERT_TRUE(kernels.Checksum(buffer.address(), len, &got)) << kernels.why();
    EXPECT_EQ(got, sum) << "libfgds, GPU " << device;
    EXPECT_EQ(fgds_driver_close(driver), 0);

    const std::string mounted = Env("FGDS_MGPU_MOUNTED_FILE");
    if (!mounted.empty()) {
      fgds_session session = {};
      ASSERT_EQ(fgds_session_open(&session, mounted.c_str(), nullptr), 0);
      Allocation target(context, len);
      fgds_iov iov;
      ASSERT_EQ(
          fgds_iov_wrap_gpu(&session, &iov, target.address(), len, nullptr), 0);
      usrbio::gpu::GpuIov* g = usrbio::gpu::GpuOf(&iov);
      EXPECT_EQ(g->ops->Describe().ordinal, device);
      const int node = gpu::PciNumaNode("/sys", PciOf(device));
      if (node >= 0) {
        EXPECT_EQ(NodeOfPage(g->staging.base), node);
      }
      const int id = RegisterFile(&session, mounted, O_RDONLY);
      ASSERT_GE(id, 0);
      EXPECT_EQ(
          RingIo(&session, &iov, false, id, target.address(), offset, len),
          static_cast<int64_t>(len));
      got = 0;
      ASSERT_TRUE(kernels.Checksum(target.address(), len, &got))
          << kernels.why();
      EXPECT_EQ(got, sum) << "usrbio, GPU " << device;
      EXPECT_EQ(fgds_iov_destroy(&iov), 0);
      fgds_session_close(&session);
    }
  }
  if (!::testing::Test::HasFailure()) {
    std::ofstream(Env("FGDS_MGPU_DONE")) << "ok\n";
  }
}

struct Child {
  pid_t pid = -1;
  std::string done;
  std::string what;
};

// Starts this binary again as a MultiGpuChild with `vars` added to the
// environment (built before fork: the child only execs).
Child StartChild(const std::vector<std::string>& vars, const std::string& done,
                 const std::string& what) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  for (const std::string& v : vars) env_strings.push_back(v);
  env_strings.push_back("FGDS_MGPU_DONE=" + done);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string self = "/proc/self/exe";
  std::string also = "--gtest_also_run_disabled_tests";
  std::string filter = "--gtest_filter=MultiGpuChild.DISABLED_ReadsItsSlice";
  char* argv[] = {self.data(), also.data(), filter.data(), nullptr};
  Child child;
  child.done = done;
  child.what = what;
  unlink(done.c_str());
  child.pid = fork();
  if (child.pid == 0) {
    execve("/proc/self/exe", argv, envp.data());
    _exit(127);
  }
  return child;
}

// Waits for every child (120 s in all; late ones are killed) and checks
// that each finished its checks.
void Finish(std::vector<Child>* children) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(120);
  for (Child& c : *children) {
    int status = 0;
    while (true) {
      const pid_t r = waitpid(c.pid, &status, WNOHANG);
      if (r == c.pid) break;
      if (std::chrono::steady_clock::now() > deadline) {
        kill(c.pid, SIGKILL);
        waitpid(c.pid, &status, 0);
        ADD_FAILURE() << c.what << ": timed out";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << c.what << ": status " << status;
    EXPECT_EQ(access(c.done.c_str(), F_OK), 0) << c.what << " did not finish";
    unlink(c.done.c_str());
  }
}

TEST(MultiGpuTest, OnePerGpu) {
  FGDS_REQUIRE_GPU();
  const int gpus = GpuCount();
  std::unique_ptr<MountedFs> fs;
  if (geteuid() == 0 && access("/dev/fuse", R_OK | W_OK) == 0) {
    auto started = MountedFs::Start();
    ASSERT_TRUE(started.ok()) << started.status();
    fs = *std::move(started);
  }
  ScratchDir scratch;
  // Slices of 24 MiB, the last one 12345 bytes longer: an unaligned tail.
  const uint64_t slice = 24 * kMiB;
  const uint64_t size = slice * static_cast<uint64_t>(gpus) + 12345;
  const std::vector<uint8_t> data = RandomBytes(size, 18);
  std::string path;
  std::string mounted;
  if (fs != nullptr) {
    const std::string backing = fs->backing() + "/shared";
    std::ofstream(backing, std::ios::binary)
        .write(reinterpret_cast<const char*>(data.data()),
               static_cast<std::streamsize>(size));
    path = backing;
    mounted = fs->mountpoint() + "/shared";
  } else {
    path = scratch.WriteFile("shared", data);
  }
  std::vector<Child> children;
  for (int i = 0; i < gpus; ++i) {
    const uint64_t offset = slice * static_cast<uint64_t>(i);
    const uint64_t len = i == gpus - 1 ? size - offset : slice;
    const uint64_t sum = HostChecksum(data.data() + offset, len);
    children.push_back(StartChild(
        {"FGDS_MGPU_DEVICE=" + std::to_string(i),
         "FGDS_MGPU_OFFSET=" + std::to_string(offset),
         "FGDS_MGPU_LEN=" + std::to_string(len),
         "FGDS_MGPU_SUM=" + std::to_string(sum), "FGDS_MGPU_FILE=" + path,
         "FGDS_MGPU_MOUNTED_FILE=" + mounted,
         // Each rank limited to its own GPU, by PCI address.
         "FGDS_GPUS=" + PciOf(i)},
        scratch.path() + "/done" + std::to_string(i),
        "the process of GPU " + std::to_string(i)));
  }
  // And one whose FGDS_GPUS names no GPU: every driver is refused.
  children.push_back(StartChild(
      {"FGDS_MGPU_DEVICE=0", "FGDS_MGPU_LEN=4096",
       "FGDS_MGPU_EXPECT_ERRNO=" + std::to_string(ENODEV), "FGDS_GPUS=4000"},
      scratch.path() + "/done-refused", "the process with FGDS_GPUS=4000"));
  Finish(&children);
  std::printf("checked %d GPU(s), one process each, %llu bytes\n", gpus,
              static_cast<unsigned long long>(size));
}

// ---- a buffer on GPU 1 while GPU 0 is busy ------------------------------

TEST(MultiGpuTest, Gpu1WhileGpu0Busy) {
  FGDS_REQUIRE_GPU();  // GPU 0's context is current on this thread
  const int gpus = GpuCount();
  if (gpus < 2) {
    GTEST_SKIP() << "needs two GPUs; this host has " << gpus;
  }
  if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
    GTEST_SKIP() << "needs root and /dev/fuse";
  }
  const cuda::CudaApi& api = GpuEnv::Get().api();
  // The daemon maps memory of GPU 0 only: GPU 1's iovs bounce, and say so.
  auto started = MountedFs::Start({.extra_args = {"--gpus", "0"}});
  ASSERT_TRUE(started.ok()) << started.status();
  std::unique_ptr<MountedFs> fs = *std::move(started);
  const uint64_t size = 48 * kMiB + 4321;
  const std::vector<uint8_t> data = RandomBytes(size, 1800);
  const std::string backing = fs->backing() + "/in";
  std::ofstream(backing, std::ios::binary)
      .write(reinterpret_cast<const char*>(data.data()),
             static_cast<std::streamsize>(size));
  const uint64_t want = HostChecksum(data.data(), size);

  const cuda::CUcontext ctx0 = GpuEnv::Get().context();
  const cuda::CUcontext ctx1 = Primary(1);
  GpuKernels kernels0(ctx0);
  GpuKernels kernels1(ctx1);
  ASSERT_TRUE(kernels0.ok()) << kernels0.why();
  ASSERT_TRUE(kernels1.ok()) << kernels1.why();
  cuda::CUstream busy = nullptr;
  cuda::CUevent spun = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&busy, cuda::kStreamNonBlocking),
            cuda::kCudaSuccess);
  ASSERT_EQ(api.cuEventCreate(&spun, cuda::kEventDisableTiming),
            cuda::kCudaSuccess);
  Allocation buffer(ctx1, size);  // current: still GPU 0's context
  // GPU 0 spins for 8 s from here.
  ASSERT_TRUE(kernels0.Spin(busy, 8'000'000'000ull)) << kernels0.why();
  ASSERT_EQ(api.cuEventRecord(spun, busy), cuda::kCudaSuccess);
  const auto start = std::chrono::steady_clock::now();

  // usrbio: wrapped with GPU 0's context current; the buffer's device wins.
  fgds_session session = {};
  ASSERT_EQ(fgds_session_open(&session, fs->mountpoint().c_str(), nullptr), 0);
  fgds_iov iov;
  ASSERT_EQ(fgds_iov_wrap_gpu(&session, &iov, buffer.address(), size, nullptr),
            0);
  EXPECT_EQ(usrbio::gpu::GpuOf(&iov)->ops->Describe().ordinal, 1);
  uint32_t reason = 0;
  EXPECT_EQ(fgds_iov_gpu_path(&iov, &reason),
            static_cast<int>(FGDS_PATH_BOUNCE));
  // NO_DMABUF where the GPU cannot export; else the daemon's --gpus says no.
  EXPECT_TRUE(reason == FGDS_IOV_GPU_REASON_EXCLUDED ||
              reason == FGDS_IOV_GPU_REASON_NO_DMABUF)
      << reason;
  const int in = RegisterFile(&session, fs->mountpoint() + "/in", O_RDONLY);
  const int out =
      RegisterFile(&session, fs->mountpoint() + "/out", O_CREAT | O_WRONLY);
  ASSERT_GE(in, 0);
  ASSERT_GE(out, 0);
  EXPECT_EQ(RingIo(&session, &iov, false, in, buffer.address(), 0, size),
            static_cast<int64_t>(size));
  uint64_t got = 0;
  ASSERT_TRUE(kernels1.Checksum(buffer.address(), size, &got))
      << kernels1.why();
  EXPECT_EQ(got, want) << "usrbio read into GPU 1";
  EXPECT_EQ(RingIo(&session, &iov, true, out, buffer.address(), 0, size),
            static_cast<int64_t>(size));
  EXPECT_EQ(fgds_iov_destroy(&iov), 0);
  fgds_session_close(&session);
  std::vector<uint8_t> back(size);
  {
    std::ifstream f(fs->backing() + "/out", std::ios::binary);
    f.read(reinterpret_cast<char*>(back.data()),
           static_cast<std::streamsize>(size));
    EXPECT_EQ(f.gcount(), static_cast<std::streamsize>(size));
  }
  EXPECT_TRUE(back == data) << "usrbio write from GPU 1";

  // libfgds: GPU 0's driver refuses the buffer by name; GPU 1's serves it.
  fgds_driver* driver0 = nullptr;
  ASSERT_EQ(fgds_driver_open(&driver0, nullptr), 0) << fgds_last_error();
  const int fd = open(backing.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(fgds_pread(driver0, fd, buffer.ptr(), size, 0, 0), -EXDEV);
  EXPECT_NE(std::string(fgds_last_error()).find("lives on GPU 1"),
            std::string::npos)
      << fgds_last_error();
  EXPECT_EQ(fgds_driver_close(driver0), 0);
  fgds_driver_params params = {};
  params.flags = FGDS_DRIVER_PRIMARY_CTX;
  params.device = 1;
  fgds_driver* driver1 = nullptr;
  ASSERT_EQ(fgds_driver_open(&driver1, &params), 0) << fgds_last_error();
  ASSERT_EQ(fgds_buf_register(driver1, buffer.ptr(), size, 0), 0)
      << fgds_last_error();
  ASSERT_EQ(api.cuCtxSetCurrent(ctx1), cuda::kCudaSuccess);
  ASSERT_EQ(api.cuMemsetD8(buffer.address(), 0, size), cuda::kCudaSuccess);
  ASSERT_EQ(api.cuCtxSetCurrent(ctx0), cuda::kCudaSuccess);
  EXPECT_EQ(fgds_pread(driver1, fd, buffer.ptr(), size, 0, 0),
            static_cast<ssize_t>(size))
      << fgds_last_error();
  got = 0;
  ASSERT_TRUE(kernels1.Checksum(buffer.address(), size, &got))
      << kernels1.why();
  EXPECT_EQ(got, want) << "libfgds read into GPU 1";
  const std::string out2 = fs->backing() + "/out2";
  const int wfd = open(out2.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  ASSERT_GE(wfd, 0);
  EXPECT_EQ(fgds_pwrite(driver1, wfd, buffer.ptr(), size, 0, 0),
            static_cast<ssize_t>(size))
      << fgds_last_error();
  close(wfd);
  close(fd);
  EXPECT_EQ(fgds_buf_deregister(driver1, buffer.ptr()), 0);
  EXPECT_EQ(fgds_driver_close(driver1), 0);
  {
    std::ifstream f(out2, std::ios::binary);
    f.read(reinterpret_cast<char*>(back.data()),
           static_cast<std::streamsize>(size));
  }
  EXPECT_TRUE(back == data) << "libfgds write from GPU 1";

  // All of it while GPU 0 was still spinning: nothing above waited for it.
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_EQ(api.cuEventQuery(spun), cuda::kCudaErrorNotReady)
      << "GPU 0's kernel ended before the GPU 1 I/O did (" << seconds << " s)";
  EXPECT_EQ(api.cuStreamSynchronize(busy), cuda::kCudaSuccess);
  api.cuEventDestroy(spun);
  api.cuStreamDestroy(busy);
}

// ---- no current context --------------------------------------------------

TEST(MultiGpuTest, WrapWithoutContext) {
  FGDS_REQUIRE_GPU();
  if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
    GTEST_SKIP() << "needs root and /dev/fuse";
  }
  auto started = MountedFs::Start();
  ASSERT_TRUE(started.ok()) << started.status();
  std::unique_ptr<MountedFs> fs = *std::move(started);
  const int last = GpuCount() - 1;
  const cuda::CUcontext context = Primary(last);
  Allocation buffer(context, 4 * kMiB);
  // A thread that never made a context current, as a data loader's may be.
  std::thread([&] {
    cuda::CUcontext current = nullptr;
    ASSERT_EQ(GpuEnv::Get().api().cuCtxGetCurrent(&current),
              cuda::kCudaSuccess);
    ASSERT_EQ(current, nullptr);
    fgds_session session = {};
    ASSERT_EQ(fgds_session_open(&session, fs->mountpoint().c_str(), nullptr),
              0);
    fgds_iov iov;
    ASSERT_EQ(
        fgds_iov_wrap_gpu(&session, &iov, buffer.address(), 4 * kMiB, nullptr),
        0);
    EXPECT_EQ(usrbio::gpu::GpuOf(&iov)->ops->Describe().ordinal, last);
    GpuEnv::Get().api().cuCtxGetCurrent(&current);
    EXPECT_EQ(current, nullptr) << "the library left a context current";
    // Naming another device than the buffer's is refused.
    fgds_iov_gpu_params p = {};
    p.flags = FGDS_IOV_GPU_PRIMARY_CTX;
    p.device = last == 0 ? 1 : 0;
    fgds_iov other;
    EXPECT_EQ(
        fgds_iov_wrap_gpu(&session, &other, buffer.address(), 4 * kMiB, &p),
        -EXDEV);
    EXPECT_EQ(fgds_iov_destroy(&iov), 0);
    fgds_session_close(&session);
  }).join();
}

// ---- the daemon's subset -------------------------------------------------

TEST(MultiGpuTest, DaemonGpuSubsetMustNameGpus) {
  if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
    GTEST_SKIP() << "needs root and /dev/fuse";
  }
  auto started = MountedFs::Start({.extra_args = {"--gpus", "4000"}});
  ASSERT_FALSE(started.ok());
}

}  // namespace
}  // namespace fgds::testing
