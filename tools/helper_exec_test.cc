// `fgds bench` runs the fgds-bench executable: where it is looked for, that
// arguments and exit status pass through unchanged, and what a user sees
// when it is missing.
#include "tools/helper_exec.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace fgds::tools {
namespace {

TEST(HelperCandidatesTest, BesideThenLibexec) {
  EXPECT_EQ(
      HelperCandidates("/usr/local/sbin/fgds", "fgds-bench", "../libexec/fgds"),
      (std::vector<std::string>{"/usr/local/sbin/fgds-bench",
                                "/usr/local/sbin/../libexec/fgds/fgds-bench"}));
  EXPECT_EQ(
      HelperCandidates("/opt/fgds/sbin/fgds", "fgds-bench", "../libexec/fgds/"),
      (std::vector<std::string>{"/opt/fgds/sbin/fgds-bench",
                                "/opt/fgds/sbin/../libexec/fgds/fgds-bench"}));
}

TEST(HelperCandidatesTest, NoLibexecNoDirectory) {
  EXPECT_EQ(HelperCandidates("/build/tools/fgds", "fgds-bench", ""),
            (std::vector<std::string>{"/build/tools/fgds-bench"}));
  EXPECT_TRUE(HelperCandidates("fgds", "fgds-bench", "../libexec").empty());
}

struct RunResult {
  int exit_status = -1;
  std::string output;  // stdout and stderr
};

RunResult RunFgds(const std::string& binary, const std::string& args) {
  const std::string command = "'" + binary + "' " + args + " 2>&1";
  RunResult result;
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << command;
  if (pipe == nullptr) return result;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) {
    result.output.append(buf, n);
  }
  const int status = pclose(pipe);
  result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// In the build tree fgds-bench sits beside fgds, as in one directory of
// copied binaries.
TEST(FgdsBenchTest, RunsThroughFgds) {
  const RunResult r = RunFgds(FGDS_BINARY, "bench --help");
  EXPECT_EQ(r.exit_status, 0) << r.output;
  EXPECT_NE(r.output.find("usage: fgds bench"), std::string::npos) << r.output;
}

TEST(FgdsBenchTest, ArgumentsAndExitStatusPassThrough) {
  const RunResult r = RunFgds(FGDS_BINARY, "bench --no-such-flag");
  EXPECT_EQ(r.exit_status, 2) << r.output;
  EXPECT_NE(r.output.find("unknown flag '--no-such-flag'"), std::string::npos)
      << r.output;
}

TEST(FgdsBenchTest, MissingHelperIsNamed) {
  char dir[] = "/tmp/fgds-helper-exec-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string lone = std::string(dir) + "/fgds";
  std::filesystem::copy_file(FGDS_BINARY, lone);
  const RunResult r = RunFgds(lone, "bench --help");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.exit_status, kExitHelperMissing) << r.output;
  EXPECT_NE(r.output.find("the fgds-bench executable is missing (looked for " +
                          std::string(dir) + "/fgds-bench or "),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace fgds::tools
