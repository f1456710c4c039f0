// File: tests/lib/agent_process.h
//
// AgentProcess: a real `fgds agent` started as a user would start it, for
// tests: its output is captured, the address it listens on is read from its
// first line, and Stop sends SIGTERM and returns its exit status and the
// rest of its output.
//
// Example:
//   auto agent = AgentProcess::Start({"--listen", "127.0.0.1:0", "--data",
//                                     dir, "--key", key});
//   ... agent->address() ...
//   int status = agent->Stop(&output);
#ifndef FGDS_TESTS_LIB_AGENT_PROCESS_H_
#define FGDS_TESTS_LIB_AGENT_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace fgds::testing {

class AgentProcess {
 public:
  // Starts `fgds agent ARGS` and waits (up to timeout_ms) for the line
  // saying where it listens. An agent that exits first is an error carrying
  // its output.
  static absl::StatusOr<std::unique_ptr<AgentProcess>> Start(
      const std::vector<std::string>& args, int timeout_ms = 30000);
  // Runs `fgds agent ARGS` to its end (for setups it must refuse).
  static int RunToExit(const std::vector<std::string>& args,
                       std::string* output);
  ~AgentProcess();

  // "HOST:PORT" from the agent's first line.
  const std::string& address() const { return address_; }
  const std::string& first_line() const { return first_line_; }
  // The agent's process (a test may kill it outright; Stop still reaps it).
  pid_t pid() const { return pid_; }
  // SIGTERM, then the exit status (128 + signal if killed) and the output
  // after the first line.
  int Stop(std::string* output);

 private:
  AgentProcess(pid_t pid, int out) : pid_(pid), out_(out) {}
  pid_t pid_;
  int out_;
  std::string address_;
  std::string first_line_;
};

// Writes a cluster key file as agents and mounts want it: mode 0600, 44
// bytes of `fill` (the minimum is 32). False when it cannot be written.
bool WriteAgentKey(const std::string& path, char fill);

}  // namespace fgds::testing

#endif  // FGDS_TESTS_LIB_AGENT_PROCESS_H_
