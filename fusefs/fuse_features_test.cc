#include "fusefs/fuse_features.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "fusefs/options.h"
#include "gtest/gtest.h"

namespace fgds::fusefs {
namespace {

// A stand-in for the fuse module's enable_uring parameter.
class EnableUringFile {
 public:
  explicit EnableUringFile(const char* value) {
    char templ[] = "/tmp/fgds-enable-uring.XXXXXX";
    const int fd = mkstemp(templ);
    path_ = templ;
    if (fd >= 0) close(fd);
    std::ofstream(path_) << value << "\n";
  }
  ~EnableUringFile() { unlink(path_.c_str()); }
  const char* path() const { return path_.c_str(); }

 private:
  std::string path_;
};

DaemonOptions WithMode(FeatureMode mode, const char* backend) {
  DaemonOptions options;
  options.fuse_uring = mode;
  options.backend = backend;
  return options;
}

TEST(FuseUringBlockerTest, OffIsOff) {
  EnableUringFile on("Y");
  EXPECT_EQ(
      FuseUringBlocker(WithMode(FeatureMode::kOff, "local"), true, on.path()),
      "--fuse-uring off");
}

// auto (the default) asks for rings for the local backend only; on asks
// for them whatever the backend.
TEST(FuseUringBlockerTest, AutoIsForTheLocalBackend) {
  EnableUringFile on("Y");
  const std::string ceph =
      FuseUringBlocker(WithMode(FeatureMode::kAuto, "ceph"), false, on.path());
  EXPECT_NE(ceph.find("auto leaves it off for the ceph backend"),
            std::string::npos)
      << ceph;
  const std::string local =
      FuseUringBlocker(WithMode(FeatureMode::kAuto, "local"), true, on.path());
  const std::string forced =
      FuseUringBlocker(WithMode(FeatureMode::kOn, "ceph"), false, on.path());
  EXPECT_EQ(forced, local);  // only what the kernel or libfuse rules out
#ifdef FGDS_TEST_LIBFUSE_URING
  EXPECT_EQ(local, "");
#endif
}

#ifdef FGDS_TEST_LIBFUSE_URING
TEST(FuseUringBlockerTest, SaysWhatTheKernelLacks) {
  EnableUringFile off("N");
  EXPECT_NE(
      FuseUringBlocker(WithMode(FeatureMode::kAuto, "local"), true, off.path())
          .find("enable_uring is off"),
      std::string::npos);
  EXPECT_NE(FuseUringBlocker(WithMode(FeatureMode::kAuto, "local"), true,
                             "/nonexistent/enable_uring")
                .find("the kernel has no FUSE over io_uring"),
            std::string::npos);
}
#endif

}  // namespace
}  // namespace fgds::fusefs
