#include "tests/lib/posix_stress.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/lib/mounted_fs.h"

namespace fgds::testing {
namespace {

constexpr uint64_t kBlock = 4096;

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u +
         static_cast<uint64_t>(ts.tv_nsec);
}

enum class StressOp : uint32_t {
  kNone,
  kOpen,
  kWrite,
  kUnalignedWrite,
  kRead,
  kFsync,
  kFdatasync
};

const char* OpName(uint32_t op) {
  switch (static_cast<StressOp>(op)) {
    case StressOp::kNone:
      return "none";
    case StressOp::kOpen:
      return "mkdir + open";
    case StressOp::kWrite:
      return "pwrite 4 KiB";
    case StressOp::kUnalignedWrite:
      return "pwrite unaligned";
    case StressOp::kRead:
      return "pread 4 KiB";
    case StressOp::kFsync:
      return "fsync";
    case StressOp::kFdatasync:
      return "fdatasync";
  }
  return "?";
}

// One worker's state, in memory shared with the watchdog (written by the
// worker, read by the watchdog; lock-free atomics on shared anonymous
// memory work across processes).
struct Slot {
  std::atomic<uint64_t> op_start_ns;  // 0: between operations
  std::atomic<uint32_t> op;
  std::atomic<uint64_t> op_offset;
  std::atomic<uint64_t> ops;
  std::atomic<uint64_t> errors;
  std::atomic<uint64_t> max_op_ns;
  char first_error[160];
};
static_assert(std::atomic<uint64_t>::is_always_lock_free);

std::string ReadSmall(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "/sys/fs/fuse/connections/<n>" of the mount at `mountpoint`, or "".
// From /proc/self/mountinfo: a stat of the mountpoint would wait for the
// daemon, which may be the one not answering.
std::string ConnectionDir(const std::string& mountpoint) {
  if (mountpoint.empty()) return "";
  const std::string device = MountDevice(mountpoint);  // "major:minor"
  unsigned major_number = 0;
  unsigned minor_number = 0;
  if (sscanf(device.c_str(), "%u:%u", &major_number, &minor_number) != 2) {
    return "";
  }
  // The kernel names the directory after the superblock's dev_t, in its
  // own encoding (major << 20 | minor).
  return absl::StrCat("/sys/fs/fuse/connections/",
                      (major_number << 20) | minor_number);
}

void DescribeTasks(pid_t pid, std::string* out) {
  const std::string task_dir = absl::StrCat("/proc/", pid, "/task");
  DIR* dir = opendir(task_dir.c_str());
  if (dir == nullptr) {
    absl::StrAppend(out, "  (", task_dir, ": ", strerror(errno), ")\n");
    return;
  }
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const std::string t = absl::StrCat(task_dir, "/", e->d_name);
    std::string comm = ReadSmall(t + "/comm");
    if (!comm.empty() && comm.back() == '\n') comm.pop_back();
    // State: the field after the parenthesized name in stat.
    const std::string stat = ReadSmall(t + "/stat");
    const size_t paren = stat.rfind(')');
    const std::string state =
        paren != std::string::npos && paren + 2 < stat.size()
            ? stat.substr(paren + 2, 1)
            : "?";
    absl::StrAppend(out, "  task ", e->d_name, " (", comm, ") state ", state,
                    " wchan ", ReadSmall(t + "/wchan"), "\n");
    std::istringstream stack(ReadSmall(t + "/stack"));
    for (std::string line; std::getline(stack, line);) {
      absl::StrAppend(out, "      ", line, "\n");
    }
  }
  closedir(dir);
}

std::string RunCommand(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return absl::StrCat("(", command, ": ", strerror(errno));
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

void Worker(const PosixStressOptions& options, int index, Slot* slot,
            uint64_t deadline_ns) {
  // Half the workers share file 0, the others have their own: contention
  // on one inode (its lock, its size) and parallel requests on several.
  const int file = index % 2 == 0 ? 0 : index;
  const std::string path = absl::StrCat(options.dir, "/f", file);
  std::mt19937_64 rng(options.seed * 7919 + static_cast<uint64_t>(index));
  auto fail = [&](const char* what, int err) {
    slot->errors.fetch_add(1);
    if (slot->first_error[0] == '\0') {
      snprintf(slot->first_error, sizeof(slot->first_error), "%s %s: %s", what,
               path.c_str(), strerror(err));
    }
  };
  // Here, under the watchdog, not in the caller, which never touches the
  // mount (its daemon may be the one not answering).
  slot->op.store(static_cast<uint32_t>(StressOp::kOpen));
  slot->op_start_ns.store(NowNs());
  if (mkdir(options.dir.c_str(), 0755) != 0 && errno != EEXIST) {
    fail("mkdir", errno);
    _exit(1);
  }
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  slot->op_start_ns.store(0);
  if (fd < 0) {
    fail("open", errno);
    _exit(1);
  }
  void* mem = nullptr;
  if (posix_memalign(&mem, kBlock, 2 * kBlock) != 0) _exit(1);
  char* buf = static_cast<char*>(mem);
  memset(buf, 'a' + index % 26, 2 * kBlock);
  const uint64_t blocks = options.file_bytes / kBlock;
  while (NowNs() < deadline_ns) {
    const int pick = static_cast<int>(rng() % 1000);
    const uint64_t block = rng() % blocks;
    StressOp op = StressOp::kWrite;
    uint64_t offset = block * kBlock;
    size_t len = kBlock;
    if (pick < options.sync_per_mille) {
      op = pick % 2 == 0 ? StressOp::kFsync : StressOp::kFdatasync;
    } else if (pick < options.sync_per_mille + options.read_per_mille) {
      op = StressOp::kRead;
    } else if (pick < options.sync_per_mille + options.read_per_mille +
                          options.unaligned_per_mille) {
      op = StressOp::kUnalignedWrite;
      offset += rng() % kBlock;
      len = 1 + rng() % kBlock;
    }
    slot->op.store(static_cast<uint32_t>(op));
    slot->op_offset.store(offset);
    const uint64_t start = NowNs();
    slot->op_start_ns.store(start);
    ssize_t res = 0;
    switch (op) {
      case StressOp::kWrite:
      case StressOp::kUnalignedWrite:
        res = pwrite(fd, buf, len, static_cast<off_t>(offset));
        break;
      case StressOp::kRead:
        res = pread(fd, buf, len, static_cast<off_t>(offset));
        break;
      case StressOp::kFsync:
        res = fsync(fd);
        break;
      case StressOp::kFdatasync:
        res = fdatasync(fd);
        break;
      case StressOp::kNone:
      case StressOp::kOpen:
        break;
    }
    const int err = errno;
    const uint64_t took = NowNs() - start;
    slot->op_start_ns.store(0);
    if (res < 0) fail(OpName(static_cast<uint32_t>(op)), err);
    if (took > slot->max_op_ns.load()) slot->max_op_ns.store(took);
    slot->ops.fetch_add(1);
  }
  close(fd);
  _exit(0);
}

}  // namespace

std::string DescribeHang(pid_t daemon_pid, pid_t stuck_pid,
                         const std::string& mountpoint, bool gdb) {
  std::string out;
  const std::string conn = ConnectionDir(mountpoint);
  if (!conn.empty()) {
    absl::StrAppend(&out, "FUSE connection ", conn, ": waiting ",
                    ReadSmall(conn + "/waiting"), "  max_background ",
                    ReadSmall(conn + "/max_background"),
                    "  congestion_threshold ",
                    ReadSmall(conn + "/congestion_threshold"));
  }
  if (stuck_pid > 0) {
    absl::StrAppend(&out, "stuck process ", stuck_pid, ":\n");
    DescribeTasks(stuck_pid, &out);
  }
  if (daemon_pid > 0) {
    absl::StrAppend(&out, "daemon ", daemon_pid, ":\n");
    DescribeTasks(daemon_pid, &out);
    if (gdb && access("/usr/bin/gdb", X_OK) == 0) {
      absl::StrAppend(
          &out, "gdb backtraces:\n",
          RunCommand(absl::StrCat(
              "timeout -k 5 60 /usr/bin/gdb -p ", daemon_pid,
              " -batch -nx -ex 'thread apply all bt' 2>&1 | grep -E "
              "'^(Thread|#)'")));
      // gdb cannot stop a thread asleep uninterruptibly (a FUSE request
      // never answered); killed at its timeout, it leaves the threads it
      // did stop stopped.
      kill(daemon_pid, SIGCONT);
    }
  }
  return out;
}

bool AbortFuseConnection(const std::string& mountpoint) {
  return AbortFuseConnectionDir(ConnectionDir(mountpoint));
}

std::string FuseConnectionDir(const std::string& mountpoint) {
  return ConnectionDir(mountpoint);
}

bool AbortFuseConnectionDir(const std::string& conn) {
  if (conn.empty()) return false;
  const int fd = open((conn + "/abort").c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool written = write(fd, "1", 1) == 1;
  close(fd);
  return written;
}

PosixStressResult RunPosixStress(const PosixStressOptions& options) {
  PosixStressResult result;
  const size_t bytes = sizeof(Slot) * static_cast<size_t>(options.processes);
  void* shared = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    result.stuck = absl::StrCat("mmap: ", strerror(errno));
    return result;
  }
  auto* slots = static_cast<Slot*>(shared);
  for (int i = 0; i < options.processes; ++i) new (&slots[i]) Slot();
  const std::string conn = ConnectionDir(options.mountpoint);
  const uint64_t deadline =
      NowNs() + static_cast<uint64_t>(options.seconds) * 1000000000u;
  std::vector<pid_t> pids;
  for (int i = 0; i < options.processes; ++i) {
    const pid_t pid = fork();
    if (pid == 0) Worker(options, i, &slots[i], deadline);
    if (pid < 0) break;
    pids.push_back(pid);
  }
  const uint64_t limit_ns =
      static_cast<uint64_t>(options.op_limit_seconds) * 1000000000u;
  size_t running = pids.size();
  std::vector<bool> reaped(pids.size(), false);
  while (running > 0) {
    for (size_t i = 0; i < pids.size(); ++i) {
      if (reaped[i]) continue;
      int status;
      if (waitpid(pids[i], &status, WNOHANG) == pids[i]) {
        reaped[i] = true;
        --running;
      }
    }
    if (running == 0) break;
    for (size_t i = 0; i < pids.size() && result.stuck.empty(); ++i) {
      const uint64_t start = slots[i].op_start_ns.load();
      // The clock is read after the start: a start taken after an earlier
      // reading of it would look like an operation of 584 years.
      const uint64_t now = NowNs();
      if (reaped[i] || start == 0 || now - start < limit_ns) continue;
      result.stuck = absl::StrCat(
          "worker ", i, " (pid ", pids[i], "): ", OpName(slots[i].op.load()),
          " at offset ", slots[i].op_offset.load(), " running for ",
          (now - start) / 1000000, " ms\n",
          DescribeHang(options.daemon_pid, pids[i], options.mountpoint,
                       options.gdb));
    }
    if (!result.stuck.empty()) {
      for (size_t i = 0; i < pids.size(); ++i) {
        if (!reaped[i]) kill(pids[i], SIGKILL);
      }
      // A request the daemon never answers ends on a fatal signal only
      // where the kernel waits killably; aborting the connection ends it
      // in every case, so that the workers can be reaped.
      // Bounded: a worker the abort cannot free is left (and reported).
      for (int tries = 0; running > 0 && tries < 300; ++tries) {
        if (tries == 50 && !conn.empty()) {
          const int afd = open((conn + "/abort").c_str(), O_WRONLY);
          if (afd >= 0) {
            (void)!write(afd, "1", 1);
            close(afd);
          }
        }
        for (size_t i = 0; i < pids.size(); ++i) {
          int status;
          if (!reaped[i] && waitpid(pids[i], &status, WNOHANG) == pids[i]) {
            reaped[i] = true;
            --running;
          }
        }
        if (running > 0) usleep(100 * 1000);
      }
      break;
    }
    usleep(200 * 1000);
  }
  for (int i = 0; i < options.processes; ++i) {
    result.ops += slots[i].ops.load();
    result.errors += slots[i].errors.load();
    result.max_op_ms =
        std::max(result.max_op_ms, slots[i].max_op_ns.load() / 1000000);
    if (result.first_error.empty() && slots[i].first_error[0] != '\0') {
      result.first_error = slots[i].first_error;
    }
  }
  munmap(shared, bytes);
  return result;
}

}  // namespace fgds::testing
