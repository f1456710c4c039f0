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
#include "tests/ceph/test_cluster.h"
#include "tests/lib/mounted_fs.h"

namespace fgds::testing {

using CephCluster = TestCluster;

// Set by CephClusterEnvironment::SetUp, for the whole run.
inline CephCluster* ceph_cluster = nullptr;

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
    bool missing = false;
    if (!ceph_cluster->Start("", &missing)) {
      if (!missing) ADD_FAILURE() << "test cluster did not start";
      return;
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    fprintf(stderr, "ceph test cluster up in %.1f s: %s\n", secs,
            ceph_cluster->conf.c_str());
  }
  void TearDown() override {
    if (ceph_cluster != nullptr) ceph_cluster->Stop();
    delete ceph_cluster;
    ceph_cluster = nullptr;
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
