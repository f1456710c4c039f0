// cephfs_baseline: the ceiling for the ceph benchmark (tests/ceph/bench.sh):
// the same reads and writes fgds bench makes through a mount, made straight
// with libcephfs (ceph_open/ceph_read/ceph_write) in this process, on a
// fresh Ceph session per run (so reads are cold, as through a fresh mount).
//
//   cephfs_baseline CONF PATH write|read|writeread seq|rand BLOCK SIZE
//                   [THREADS]
//
// PATH is in the file system (e.g. /bench/f). write creates PATH with SIZE
// bytes (sequential) or rewrites random blocks of an existing PATH (rand),
// then fsyncs; read reads SIZE bytes in BLOCK-sized pieces, in order or at
// random block offsets; writeread does both in one session (the reads then
// find what the client cache kept of the writes, as they do through a
// mount whose daemon wrote the file). Prints a line per phase: "<op>
// <pattern> <MB/s> <IOPS>", MB = 1e6 bytes, timing from the first I/O to
// the last (write: through the fsync). Exit 1 with a message on any error.
#include <cephfs/libcephfs.h>
#include <fcntl.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

int Fail(const char* what, int res) {
  std::fprintf(stderr, "cephfs_baseline: %s: %s\n", what, std::strerror(-res));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr,
                 "usage: cephfs_baseline CONF PATH write|read seq|rand BLOCK "
                 "SIZE [THREADS]\n");
    return 2;
  }
  const char* conf = argv[1];
  const char* path = argv[2];
  const bool write_only = std::strcmp(argv[3], "write") == 0;
  const bool rand = std::strcmp(argv[4], "rand") == 0;
  const int64_t block = std::atoll(argv[5]);
  const int64_t size = std::atoll(argv[6]);
  const int threads = argc > 7 ? std::atoi(argv[7]) : 1;
  if (block <= 0 || size < block || threads < 1)
    return Fail("arguments", -EINVAL);

  ceph_mount_info* cmount = nullptr;
  int res;
  if ((res = ceph_create(&cmount, nullptr)) < 0) return Fail("create", res);
  if ((res = ceph_conf_read_file(cmount, conf)) < 0) return Fail("conf", res);
  ceph_conf_set(cmount, "client_mount_timeout", "30");
  if ((res = ceph_mount(cmount, "/")) < 0) return Fail("mount", res);

  auto phase = [&](bool write) -> int {
    int flags =
        write ? (rand ? O_WRONLY : O_WRONLY | O_CREAT | O_TRUNC) : O_RDONLY;
    int fd = ceph_open(cmount, path, flags, 0644);
    if (fd < 0) return Fail(path, fd);

    const int64_t blocks = size / block;
    std::atomic<int64_t> next{0};
    std::atomic<int> error{0};
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        std::vector<char> buf(block, static_cast<char>('a' + t));
        std::mt19937_64 rng(t + 1);
        for (int64_t i; (i = next.fetch_add(1)) < blocks;) {
          int64_t off =
              (rand ? static_cast<int64_t>(rng() % blocks) : i) * block;
          int64_t n = write ? ceph_write(cmount, fd, buf.data(), block, off)
                            : ceph_read(cmount, fd, buf.data(), block, off);
          if (n != block) {
            error = n < 0 ? static_cast<int>(n) : -EIO;
            return;
          }
        }
      });
    }
    for (auto& w : workers) w.join();
    if (error != 0) return Fail(write ? "write" : "read", error);
    if (write && (res = ceph_fsync(cmount, fd, 0)) < 0)
      return Fail("fsync", res);
    double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    ceph_close(cmount, fd);
    std::printf("%s %s %.1f %.0f\n", write ? "write" : "read", argv[4],
                size / secs / 1e6, blocks / secs);
    return 0;
  };
  const bool both = std::strcmp(argv[3], "writeread") == 0;
  if (int rc = phase(both || write_only); rc != 0) return rc;
  if (both) {
    if (int rc = phase(false); rc != 0) return rc;
  }
  ceph_unmount(cmount);
  ceph_release(cmount);
  return 0;
}
