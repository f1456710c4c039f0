// File: tests/ceph/test_cluster.h
//
// The ceph tests' handle on a throwaway cluster (start-cluster.sh,
// stop-cluster.sh, cluster-ctl.sh in this directory): start and stop one,
// kill and restart single daemons, ask the ceph CLI. Used from one thread
// (gtest's main thread; the fault tests' I/O threads never call it).
#ifndef FGDS_TESTS_CEPH_TEST_CLUSTER_H_
#define FGDS_TESTS_CEPH_TEST_CLUSTER_H_

#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"

namespace fgds::testing {

// Runs `command` through the shell; returns its stdout and sets *rc to its
// exit status (-1: it did not exit normally).
inline std::string RunScript(const std::string& command, int* rc) {
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

// The value of a KEY=value line of `out`, or "".
inline std::string Value(const std::string& out, const std::string& key) {
  size_t at = out.find(key + "=");
  if (at == std::string::npos) return "";
  size_t end = out.find('\n', at);
  return out.substr(at + key.size() + 1, end - at - key.size() - 1);
}

struct TestCluster {
  std::string dir;   // empty: not started by us
  std::string conf;  // empty: unavailable (skip_reason says why)
  std::string skip_reason;

  // Starts a cluster (CEPH_* variables of start-cluster.sh in `env`, e.g.
  // "CEPH_OSDS=3"); on failure sets skip_reason and returns false, with
  // *missing set when the ceph packages are not installed.
  bool Start(const std::string& env, bool* missing) {
    int rc = 0;
    std::string out = RunScript(
        absl::StrCat(env, " ", FGDS_CEPH_SCRIPTS, "/start-cluster.sh"), &rc);
    *missing = rc == 77;
    if (rc != 0) {
      skip_reason = rc == 77
                        ? "ceph daemons not installed (deploy/install-deps.sh)"
                        : absl::StrCat("start-cluster.sh failed (rc ", rc, ")");
      return false;
    }
    dir = Value(out, "CEPH_CLUSTER_DIR");
    conf = Value(out, "CEPH_CONF");
    return true;
  }
  void Stop() {
    if (dir.empty()) return;
    int rc = 0;
    RunScript(absl::StrCat(FGDS_CEPH_SCRIPTS, "/stop-cluster.sh ", dir), &rc);
    dir.clear();
  }
  // cluster-ctl.sh: `action` kill|start|running, `name` e.g. "osd.1".
  bool Ctl(const std::string& action, const std::string& name) const {
    int rc = 0;
    RunScript(absl::StrCat(FGDS_CEPH_SCRIPTS, "/cluster-ctl.sh ", dir, " ",
                           action, " ", name),
              &rc);
    return rc == 0;
  }
  // The ceph CLI's output (stdout), bounded by `timeout_s`.
  std::string Ceph(const std::string& args, int timeout_s = 20) const {
    int rc = 0;
    return RunScript(absl::StrCat("timeout ", timeout_s, " ceph --conf ", conf,
                                  " ", args, " 2>/dev/null"),
                     &rc);
  }
};

}  // namespace fgds::testing

#endif  // FGDS_TESTS_CEPH_TEST_CLUSTER_H_
