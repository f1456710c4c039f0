#include "tests/lib/mounted_fs.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace fgds::testing {
namespace {

constexpr long kFuseSuperMagic = 0x65735546;

absl::Status ErrnoStatus(int err, const std::string& what) {
  return absl::ErrnoToStatus(err, what);
}

}  // namespace

bool IsFuseMount(const std::string& path) {
  struct statfs sfs;
  return statfs(path.c_str(), &sfs) == 0 && sfs.f_type == kFuseSuperMagic;
}

std::string MountDevice(const std::string& path) {
  // Resolve the parent only: resolving `path` itself would look up the
  // mount's root, which asks its daemon.
  std::filesystem::path p(path);
  char parent[PATH_MAX];
  if (realpath(p.parent_path().c_str(), parent) == nullptr) return "";
  std::string want = (std::filesystem::path(parent) / p.filename()).string();
  std::ifstream in("/proc/self/mountinfo");
  std::string line, device;
  while (std::getline(in, line)) {
    // id parent major:minor root mountpoint ...; mountinfo writes a space,
    // tab, newline or backslash in a path as \ooo.
    std::vector<std::string> fields = absl::StrSplit(line, ' ');
    if (fields.size() < 5) continue;
    std::string mountpoint;
    const std::string& f = fields[4];
    for (size_t i = 0; i < f.size(); ++i) {
      if (f[i] == '\\' && i + 3 < f.size()) {
        mountpoint.push_back(static_cast<char>(
            (f[i + 1] - '0') * 64 + (f[i + 2] - '0') * 8 + (f[i + 3] - '0')));
        i += 3;
      } else {
        mountpoint.push_back(f[i]);
      }
    }
    if (mountpoint == want) device = fields[2];  // the last one is on top
  }
  return device;
}

std::string TestBackend() {
  const char* env = getenv("FGDS_TEST_BACKEND");
  return env != nullptr && *env ? env : "local";
}

bool TestingAgents() {
  const char* args = getenv("FGDS_TEST_MOUNT_ARGS");
  return args != nullptr &&
         std::string(args).find("--agents") != std::string::npos;
}

bool EvictCephSession(const std::string& conf, pid_t pid) {
  std::string command =
      absl::StrCat("timeout 30 ceph --conf '", conf,
                   "' tell 'mds.*' client evict client_metadata.pid=", pid,
                   " >/dev/null 2>&1");
  return std::system(command.c_str()) == 0;
}

std::string FgdsBinary() {
  const char* env = getenv("FGDS_BINARY");
  return env != nullptr ? env : FGDS_BINARY;
}

absl::StatusOr<std::string> MakeTempDir(const std::string& prefix) {
  const char* base = getenv("TMPDIR");
  std::string templ = absl::StrCat(base ? base : "/tmp", "/", prefix, "XXXXXX");
  if (mkdtemp(templ.data()) == nullptr) {
    return ErrnoStatus(errno, "mkdtemp " + templ);
  }
  return templ;
}

void RemoveTree(const std::string& path) {
  std::error_code ec;
  // A stale FUSE mount under the tree would make remove_all fail with
  // ENOTCONN; detach it first so cleanup never hangs or throws.
  umount2(path.c_str(), MNT_DETACH);
  std::filesystem::remove_all(path, ec);
}

absl::StatusOr<std::unique_ptr<MountedFs>> MountedFs::Start(
    const MountOptions& options) {
  if (geteuid() != 0) return absl::FailedPreconditionError("needs root");
  if (access("/dev/fuse", R_OK | W_OK) != 0) {
    return absl::FailedPreconditionError("/dev/fuse is not available");
  }
  const std::string backend = TestBackend();
  if (backend != "local" && backend != "ceph") {
    return absl::InvalidArgumentError("FGDS_TEST_BACKEND=" + backend +
                                      ": must be local or ceph");
  }
  auto root = MakeTempDir("fgds-test.");
  if (!root.ok()) return root.status();
  // Other users must reach the mountpoint for the permission tests.
  chmod(root->c_str(), 0755);
  std::unique_ptr<MountedFs> fs(new MountedFs(*root, options));
  if (mkdir(fs->mountpoint_.c_str(), 0755) != 0) {
    return ErrnoStatus(errno, "mkdir under " + *root);
  }
  if (backend == "ceph") {
    // (root_/data: an empty directory for --data, which the ceph backend
    // does not use but the daemon checks)
    absl::Status st = fs->StartCephView();
    if (!st.ok()) return st;
    if (mkdir((*root + "/data").c_str(), 0755) != 0) {
      return ErrnoStatus(errno, "mkdir under " + *root);
    }
  } else if (mkdir(fs->backing_.c_str(), 0755) != 0) {
    return ErrnoStatus(errno, "mkdir under " + *root);
  }
  if (backend == "local" && options.backing_tmpfs &&
      mount("fgds-test", fs->backing_.c_str(), "tmpfs", 0, "mode=0755") != 0) {
    return ErrnoStatus(errno, "mount tmpfs on " + fs->backing_);
  }
  absl::Status st = fs->Launch();
  if (!st.ok()) return st;
  return fs;
}

MountedFs::MountedFs(std::string root, MountOptions options)
    : root_(std::move(root)),
      mountpoint_(root_ + "/mnt"),
      backing_(root_ + "/data"),
      options_(std::move(options)) {}

MountedFs::~MountedFs() {
  (void)Unmount();
  if (options_.backing_tmpfs) umount2(backing_.c_str(), MNT_DETACH);
  if (!ceph_view_.empty() && MountDevice(ceph_view_) != "") {
    // The test's directory goes from the (shared) file system, then the
    // ceph-fuse mount; its daemon exits when unmounted.
    std::error_code ec;
    std::filesystem::remove_all(backing_, ec);
    if (umount2(ceph_view_.c_str(), 0) != 0) {
      umount2(ceph_view_.c_str(), MNT_DETACH);
    }
  }
  RemoveTree(root_);
}

absl::Status MountedFs::StartCephView() {
  const char* conf = getenv("CEPH_CONF");
  if (conf == nullptr || *conf == '\0') {
    return absl::InvalidArgumentError(
        "FGDS_TEST_BACKEND=ceph needs CEPH_CONF (tests/ceph/start-cluster.sh)");
  }
  ceph_view_ = root_ + "/ceph";
  if (mkdir(ceph_view_.c_str(), 0755) != 0) {
    return ErrnoStatus(errno, "mkdir " + ceph_view_);
  }
  // ceph-fuse forks; its parent returns once the mount is up (or failed).
  // Its log goes beside the cluster's, not to /var/log/ceph.
  std::string conf_dir = std::filesystem::path(conf).parent_path().string();
  std::vector<std::string> args = {
      "ceph-fuse",
      "-c",
      conf,
      "--client_mount_timeout=30",
      "--log_file=" + conf_dir + "/log/ceph-fuse.$pid.log",
      ceph_view_};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return ErrnoStatus(errno, "fork");
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
      dup2(null, STDOUT_FILENO);
      dup2(null, STDERR_FILENO);
    }
    execvp(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      MountDevice(ceph_view_).empty()) {
    ceph_view_.clear();
    return absl::InternalError(
        absl::StrCat("ceph-fuse -c ", conf, " failed (its log: ", conf_dir,
                     "/log/ceph-fuse.*.log; status ", status,
                     WIFEXITED(status) && WEXITSTATUS(status) == 127
                         ? ": ceph-fuse not installed, deploy/install-deps.sh"
                         : "",
                     ")"));
  }
  std::string name = std::filesystem::path(root_).filename().string();
  backing_ = ceph_view_ + "/" + name;
  ceph_root_ = "/" + name;
  if (mkdir(backing_.c_str(), 0755) != 0) {
    return ErrnoStatus(errno, "mkdir " + backing_);
  }
  return absl::OkStatus();
}

absl::Status MountedFs::Launch() {
  std::vector<std::string> args = {FgdsBinary(), "mount", "-f"};
  if (ceph_root_.empty()) {
    args.insert(args.end(), {"--data", backing_});
  } else {
    // (--data must name a directory; the ceph backend does not use it)
    args.insert(args.end(),
                {"--data", root_ + "/data", "--backend", "ceph", "--ceph-conf",
                 getenv("CEPH_CONF"), "--ceph-root", ceph_root_});
  }
  // FGDS_TEST_MOUNT_ARGS (space-separated) runs a whole suite in another
  // mode, e.g. "--passthrough off" (tests/integration/CMakeLists.txt
  // registers suites a second time with it); a test's own arguments follow.
  if (const char* env = getenv("FGDS_TEST_MOUNT_ARGS"); env != nullptr) {
    for (absl::string_view a : absl::StrSplit(env, ' ', absl::SkipEmpty())) {
      args.emplace_back(a);
    }
  }
  args.insert(args.end(), options_.extra_args.begin(),
              options_.extra_args.end());
  args.push_back(mountpoint_);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = fork();
  if (pid < 0) return ErrnoStatus(errno, "fork");
  if (pid == 0) {
    execv(argv[0], argv.data());
    _exit(127);
  }
  pid_ = pid;
  // A ceph mount waits for the cluster (monitor, MDS) first.
  int timeout_ms = ceph_root_.empty() ? options_.timeout_ms
                                      : std::max(options_.timeout_ms, 40000);
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (IsFuseMount(mountpoint_)) return absl::OkStatus();
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::InternalError(
          absl::StrCat("fgds mount exited early with status ", status));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  KillDaemon(SIGKILL);
  return absl::DeadlineExceededError("mount did not come up in time");
}

void MountedFs::KillDaemon(int sig) {
  if (pid_ <= 0) return;
  kill(pid_, sig);
  int status;
  waitpid(pid_, &status, 0);
  if (!ceph_root_.empty() && WIFSIGNALED(status)) {
    EvictCephSession(getenv("CEPH_CONF"), pid_);
  }
  pid_ = -1;
}

absl::Status MountedFs::Unmount() {
  absl::Status result;
  // A killed daemon leaves a mount whose statfs fails with ENOTCONN: that
  // mount must go too, or it outlives the test.
  struct statfs sfs;
  bool stale = statfs(mountpoint_.c_str(), &sfs) != 0 && errno == ENOTCONN;
  if (IsFuseMount(mountpoint_) || stale || pid_ > 0) {
    // A clean unmount makes the daemon's loop return; a lazy detach covers a
    // daemon that is already dead (stale mount, ENOTCONN).
    if (umount2(mountpoint_.c_str(), 0) != 0 &&
        umount2(mountpoint_.c_str(), MNT_DETACH) != 0 && errno != EINVAL) {
      result = ErrnoStatus(errno, "umount " + mountpoint_);
    }
  }
  if (pid_ > 0) {
    // Give the daemon a moment to exit by itself, then make sure.
    last_exit_status_ = -1;
    for (int i = 0; i < 500; ++i) {
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        last_exit_status_ = status;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    KillDaemon(SIGKILL);
  }
  return result;
}

absl::Status MountedFs::Remount() {
  if (pid_ > 0) return absl::FailedPreconditionError("daemon still running");
  return Launch();
}

}  // namespace fgds::testing
