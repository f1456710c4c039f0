// File: tests/ceph/ceph_cluster.h
//
// One throwaway CephFS (start-cluster.sh) shared by every test of a test
// binary, and fgds mounts of it. A binary registers the environment once:
//
//   const auto* const env = ::testing::AddGlobalTestEnvironment(
//       new fgds::testing::CephClusterEnvironment);
//
// and its fixtures skip, saying why, where there is no cluster to have:
// fgds built without libcephfs, the ceph daemons not installed, no root or
// /dev/fuse. CEPH_CONF=FILE uses a running cluster instead of starting one.
#ifndef FGDS_TESTS_CEPH_CEPH_CLUSTER_H_
#define FGDS_TESTS_CEPH_CEPH_CLUSTER_H_

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/lib/mounted_fs.h"

namespace fgds::testing {

struct CephCluster {
  std::string dir;   // empty: not started by us
  std::string conf;  // empty: unavailable (skip_reason says why)
  std::string skip_reason;
};

// Set by CephClusterEnvironment::SetUp, for the whole run.
inline CephCluster* ceph_cluster = nullptr;

// Runs `command` with sh; its stdout, and its exit code in *rc.
inline std::string RunCommand(const std::string& command, int* rc) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) {
    *rc = -1;
    return out;
  }
  char buf[512];
  while (fgets(buf, sizeof(buf), p) != nullptr) out += buf;
  int status = pclose(p);
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

class CephClusterEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    ceph_cluster = new CephCluster;
#ifndef FGDS_HAVE_CEPH
    ceph_cluster->skip_reason = "fgds built without libcephfs (libcephfs-dev)";
    return;
#endif
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
      ceph_cluster->skip_reason = "needs root and /dev/fuse";
      return;
    }
    if (const char* conf = getenv("CEPH_CONF"); conf != nullptr && *conf) {
      ceph_cluster->conf = conf;
      return;
    }
    auto start = std::chrono::steady_clock::now();
    int rc = 0;
    std::string out =
        RunCommand(absl::StrCat(FGDS_CEPH_SCRIPTS, "/start-cluster.sh"), &rc);
    double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (rc == 77) {
      ceph_cluster->skip_reason =
          "ceph daemons not installed (deploy/install-deps.sh)";
      return;
    }
    if (rc != 0) {
      ceph_cluster->skip_reason = absl::StrCat("start-cluster.sh failed (rc ",
                                               rc, "); its message is above");
      ADD_FAILURE() << "test cluster did not start: " << out;
      return;
    }
    ceph_cluster->dir = Value(out, "CEPH_CLUSTER_DIR");
    ceph_cluster->conf = Value(out, "CEPH_CONF");
    fprintf(stderr, "ceph test cluster up in %.1f s: %s\n", secs,
            ceph_cluster->conf.c_str());
  }
  void TearDown() override {
    if (ceph_cluster != nullptr && !ceph_cluster->dir.empty()) {
      int rc = 0;
      RunCommand(absl::StrCat(FGDS_CEPH_SCRIPTS, "/stop-cluster.sh ",
                              ceph_cluster->dir),
                 &rc);
    }
    delete ceph_cluster;
    ceph_cluster = nullptr;
  }

 private:
  static std::string Value(const std::string& out, const std::string& key) {
    size_t at = out.find(key + "=");
    if (at == std::string::npos) return "";
    size_t end = out.find('\n', at);
    return out.substr(at + key.size() + 1, end - at - key.size() - 1);
  }
};

// A daemon serving directory `root` of the cluster's file system.
inline absl::StatusOr<std::unique_ptr<MountedFs>> MountCeph(
    const std::string& root) {
  MountOptions options;
  options.extra_args = {"--backend",        "ceph",        "--ceph-conf",
                        ceph_cluster->conf, "--ceph-root", root};
  options.timeout_ms = 40000;
  return MountedFs::Start(options);
}

// Mounts the file system's root and makes a directory of the test's own in
// it (the cluster is shared, and may outlive the run): dir_, named name_.
class CephTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (ceph_cluster->conf.empty()) GTEST_SKIP() << ceph_cluster->skip_reason;
    auto fs = MountCeph("/");
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = *std::move(fs);
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    name_ =
        absl::StrCat(info->test_suite_name(), ".", info->name(), ".", getpid());
    dir_ = absl::StrCat(fs_->mountpoint(), "/", name_);
    ASSERT_EQ(mkdir(dir_.c_str(), 0755), 0) << strerror(errno);
  }

  std::unique_ptr<MountedFs> fs_;
  std::string name_;  // of dir_, in the file system's root
  std::string dir_;
};

}  // namespace fgds::testing

#endif  // FGDS_TESTS_CEPH_CEPH_CLUSTER_H_
