#include "tools/bench/daemon_cpu.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace fgds::bench {
namespace {

// The top directory of the mount `path` is on (walking up while st_dev
// stays the same), as the usrbio library finds it.
std::string MountRoot(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return "";
  std::string dir = path;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  while (dir != "/") {
    const size_t slash = dir.rfind('/');
    if (slash == std::string::npos) break;
    const std::string parent = slash == 0 ? "/" : dir.substr(0, slash);
    struct stat parent_st;
    if (stat(parent.c_str(), &parent_st) != 0 ||
        parent_st.st_dev != st.st_dev) {
      break;
    }
    dir = parent;
  }
  return dir;
}

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

DaemonCpu DaemonCpu::operator-(const DaemonCpu& earlier) const {
  DaemonCpu d;
  d.valid = valid && earlier.valid;
  auto sub = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
  // The total comes from the process clock, which never goes back. The
  // ring and io sums are of live threads and drop when one ends, so each
  // is clamped, and the split never exceeds the total.
  const uint64_t total = sub(total_ns(), earlier.total_ns());
  d.ring_ns = std::min(sub(ring_ns, earlier.ring_ns), total);
  d.io_ns = std::min(sub(io_ns, earlier.io_ns), total - d.ring_ns);
  d.other_ns = total - d.ring_ns - d.io_ns;
  for (const auto& [name, value] : ring_stages) {
    uint64_t before = 0;
    for (const auto& [earlier_name, earlier_value] : earlier.ring_stages) {
      if (earlier_name == name) before = earlier_value;
    }
    d.ring_stages.emplace_back(name, sub(value, before));
  }
  return d;
}

int ThreadKind(const std::string& comm) {
  if (absl::StartsWith(comm, "fgds-ring")) return 0;
  if (absl::StartsWith(comm, "fgds-io")) return 1;
  return 2;
}

int DaemonPidOfMount(const std::string& path) {
  const std::string root = MountRoot(path);
  if (root.empty()) return -1;
  const std::string content = ReadSmallFile(root + "/.fgds/session");
  std::istringstream lines(content);
  std::string line;
  int pid = -1;
  while (std::getline(lines, line)) {
    int value;
    if (absl::StartsWith(line, "pid=") &&
        absl::SimpleAtoi(line.substr(4), &value)) {
      return value;
    }
    // Daemons before "pid=": the socket is <dir>/<pid>-<random>.sock.
    if (absl::StartsWith(line, "socket=")) {
      const size_t slash = line.rfind('/');
      const size_t dash = line.find('-', slash);
      if (slash != std::string::npos && dash != std::string::npos &&
          absl::SimpleAtoi(line.substr(slash + 1, dash - slash - 1), &value)) {
        pid = value;
      }
    }
  }
  return pid;
}

DaemonCpu SampleDaemonCpu(int pid, const std::string& mount_path) {
  DaemonCpu cpu;
  if (pid <= 0) return cpu;
  if (!mount_path.empty()) {
    std::istringstream lines(
        ReadSmallFile(MountRoot(mount_path) + "/.fgds/stats"));
    std::string line;
    while (std::getline(lines, line)) {
      if (!absl::StartsWith(line, "ring.")) continue;
      const size_t space = line.find(' ');
      uint64_t value;
      if (space != std::string::npos &&
          absl::SimpleAtoi(line.substr(space + 1), &value)) {
        cpu.ring_stages.emplace_back(line.substr(5, space - 5), value);
      }
    }
  }
  // The ring and io threads first, the process clock after: the clock
  // then covers at least what those threads had used when read, so
  // other_ns below is never negative.
  const std::string task_dir = absl::StrCat("/proc/", pid, "/task");
  DIR* dir = opendir(task_dir.c_str());
  if (dir == nullptr) return cpu;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    const std::string base = absl::StrCat(task_dir, "/", entry->d_name);
    std::string comm = ReadSmallFile(base + "/comm");
    while (!comm.empty() && comm.back() == '\n') comm.pop_back();
    const int kind = ThreadKind(comm);
    if (kind == 2) continue;  // other: the remainder of the total
    // schedstat: "<ns on cpu> <ns waiting> <timeslices>".
    const std::string schedstat = ReadSmallFile(base + "/schedstat");
    const uint64_t ns = std::strtoull(schedstat.c_str(), nullptr, 10);
    (kind == 0 ? cpu.ring_ns : cpu.io_ns) += ns;
  }
  closedir(dir);
  // The whole process: its CPU clock is the group's sum_exec_runtime, the
  // kernel's nanosecond count, live threads plus those that ended (each
  // adds its own to the group's signal struct as it exits). The
  // alternatives lose one or the other: /proc/<pid>/stat's utime+stime
  // keep ended threads but in clock ticks (10 ms, a large part of a short
  // row), and /proc/<pid>/schedstat is the main thread's alone, as summing
  // /proc/<pid>/task/*/schedstat is live threads' alone (libfuse's idle
  // workers end while a row runs: POSIX rows read near 0). Any process's
  // clock may be read (as its /proc/<pid>/stat may).
  clockid_t clock;
  timespec now;
  if (clock_getcpuclockid(pid, &clock) != 0 ||
      clock_gettime(clock, &now) != 0) {
    return cpu;
  }
  const uint64_t total_ns = static_cast<uint64_t>(now.tv_sec) * 1000000000u +
                            static_cast<uint64_t>(now.tv_nsec);
  cpu.other_ns = total_ns - std::min(total_ns, cpu.ring_ns + cpu.io_ns);
  cpu.valid = true;
  return cpu;
}

}  // namespace fgds::bench
