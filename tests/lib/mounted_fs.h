// File: tests/lib/mounted_fs.h
//
// MountedFs runs a real fgds daemon (`fgds mount -f`) on a private temporary
// mountpoint over a private temporary backing directory, for integration
// tests. It waits until the mount is live, and its destructor unmounts,
// kills whatever it started and removes both directories, so a failing test
// leaves nothing behind.
//
// Example:
//   auto fs = fgds::testing::MountedFs::Start();
//   ASSERT_TRUE(fs.ok()) << fs.status();
//   std::string path = (*fs)->mountpoint() + "/file";
//
// The backend comes from the environment, so one test binary runs over
// either: FGDS_TEST_BACKEND unset or "local" serves the private backing
// directory; FGDS_TEST_BACKEND=ceph serves a fresh directory of the CephFS
// that CEPH_CONF describes (`fgds mount --backend ceph --ceph-root`), and
// backing() is that same directory seen through Ceph's own FUSE client
// (ceph-fuse), an independent view of what reached the cluster.
//
// Thread safety: a MountedFs is used from one thread.
#ifndef FGDS_TESTS_LIB_MOUNTED_FS_H_
#define FGDS_TESTS_LIB_MOUNTED_FS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace fgds::testing {

struct MountOptions {
  // Extra arguments for `fgds mount`, e.g. {"--writeback-cache"}.
  std::vector<std::string> extra_args;
  // How long to wait for the mount to come up.
  int timeout_ms = 10000;
  // Serve a private tmpfs mounted on the backing directory: tmpfs hands out
  // small inode numbers, counting from 1, as some attacks need. (Local
  // backend only; over ceph it is ignored.)
  bool backing_tmpfs = false;
};

// The backend the tests run over (FGDS_TEST_BACKEND): "local" or "ceph".
std::string TestBackend();
inline bool TestingCeph() { return TestBackend() == "ceph"; }
// Whether the mounts use storage-side agents (FGDS_TEST_MOUNT_ARGS has
// --agents: tests/ceph/with-agent.sh): file data then moves through them.
bool TestingAgents();

class MountedFs {
 public:
  static absl::StatusOr<std::unique_ptr<MountedFs>> Start(
      const MountOptions& options = {});

  ~MountedFs();
  MountedFs(const MountedFs&) = delete;
  MountedFs& operator=(const MountedFs&) = delete;

  // The FUSE mountpoint and the backing directory it serves (over ceph: the
  // served CephFS directory through ceph-fuse).
  const std::string& mountpoint() const { return mountpoint_; }
  const std::string& backing() const { return backing_; }
  pid_t daemon_pid() const { return pid_; }

  // Sends `sig` to the daemon and reaps it (SIGKILL simulates a crash; the
  // mount is then left stale until Unmount or a remount). Over ceph it then
  // evicts the dead daemon's Ceph session (EvictCephSession), as an
  // operator would: else the capabilities it held stall every other client
  // of its files until the MDS declares it stale (session_timeout, 60 s).
  void KillDaemon(int sig);
  // Unmounts and waits for the daemon to exit. Idempotent.
  absl::Status Unmount();
  // The wait status of the daemon the last Unmount saw exit by itself, or
  // -1 if it had to be killed (or none has been unmounted).
  int last_exit_status() const { return last_exit_status_; }
  // Starts a daemon again on the same mountpoint and backing directory (for
  // restart tests); a stale mount left by a killed daemon must not need any
  // manual cleanup.
  absl::Status Remount();

 private:
  MountedFs(std::string root, MountOptions options);
  absl::Status Launch();
  // Over ceph: mounts the file system's root with ceph-fuse on ceph_view_
  // and makes the test's own directory in it (backing_).
  absl::Status StartCephView();

  std::string root_;        // private temporary directory holding both
  std::string mountpoint_;  // root_/mnt
  std::string backing_;     // root_/data; over ceph root_/ceph/<name>
  std::string ceph_view_;   // over ceph: root_/ceph, a ceph-fuse mount
  std::string ceph_root_;   // over ceph: /<name>, what the daemon serves
  MountOptions options_;
  pid_t pid_ = -1;
  int last_exit_status_ = -1;
};

// True if `path` is the root of a live FUSE mount.
bool IsFuseMount(const std::string& path);

// The device ("major:minor") of the topmost mount at exactly `path`, read
// from /proc/self/mountinfo; empty if nothing is mounted there. Unlike
// IsFuseMount it never touches the mount, so it cannot hang on a daemon
// that stopped serving.
std::string MountDevice(const std::string& path);

// Evicts the Ceph session(s) of process `pid` from the MDSs of the cluster
// `conf` names (`ceph tell mds.* client evict client_metadata.pid=PID`),
// waiting at most 30 s. True if the command succeeded.
bool EvictCephSession(const std::string& conf, pid_t pid);

// Path of the fgds binary under test (set by CMake).
std::string FgdsBinary();

// Creates a fresh, empty temporary directory (removed by the caller).
absl::StatusOr<std::string> MakeTempDir(const std::string& prefix);
// rm -rf, never crossing into another filesystem (a stale mount).
void RemoveTree(const std::string& path);

}  // namespace fgds::testing

#endif  // FGDS_TESTS_LIB_MOUNTED_FS_H_
