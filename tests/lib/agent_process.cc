#include "tests/lib/agent_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "tests/lib/mounted_fs.h"

namespace fgds::testing {
namespace {

pid_t Spawn(const std::vector<std::string>& args, int* out) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return -1;
  const std::string binary = FgdsBinary();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipefd[1], 1);
    dup2(pipefd[1], 2);
    std::vector<char*> argv = {const_cast<char*>(binary.c_str()),
                               const_cast<char*>("agent")};
    for (const std::string& s : args)
      argv.push_back(const_cast<char*>(s.c_str()));
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  close(pipefd[1]);
  if (pid < 0) {
    close(pipefd[0]);
    return -1;
  }
  *out = pipefd[0];
  return pid;
}

std::string ReadRest(int fd) {
  std::string all;
  char buf[512];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) all.append(buf, n);
  return all;
}

int Reap(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

absl::StatusOr<std::unique_ptr<AgentProcess>> AgentProcess::Start(
    const std::vector<std::string>& args, int timeout_ms) {
  int out = -1;
  pid_t pid = Spawn(args, &out);
  if (pid < 0) return absl::InternalError("cannot start fgds agent");
  std::unique_ptr<AgentProcess> agent(new AgentProcess(pid, out));
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string line;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    struct pollfd p = {out, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0) {
      std::string rest;
      agent->Stop(&rest);
      return absl::DeadlineExceededError(absl::StrCat(
          "fgds agent did not say where it listens: ", line, rest));
    }
    char c;
    ssize_t n = read(out, &c, 1);
    if (n <= 0) {
      std::string rest;
      int status = agent->Stop(&rest);
      return absl::FailedPreconditionError(absl::StrCat(
          "fgds agent exited (status ", status, "): ", line, rest));
    }
    if (c == '\n') break;
    line.push_back(c);
  }
  agent->first_line_ = line;
  const std::string marker = " on ";
  size_t at = line.rfind(marker);
  if (at == std::string::npos) {
    return absl::InternalError(absl::StrCat("unexpected first line: ", line));
  }
  std::string address = line.substr(at + marker.size());
  agent->address_ = address.substr(0, address.find(' '));
  return agent;
}

int AgentProcess::RunToExit(const std::vector<std::string>& args,
                            std::string* output) {
  int out = -1;
  pid_t pid = Spawn(args, &out);
  if (pid < 0) return -1;
  *output = ReadRest(out);
  close(out);
  return Reap(pid);
}

int AgentProcess::Stop(std::string* output) {
  if (pid_ < 0) return -1;
  kill(pid_, SIGTERM);
  std::string rest = ReadRest(out_);
  if (output != nullptr) *output = rest;
  close(out_);
  int status = Reap(pid_);
  pid_ = -1;
  return status;
}

AgentProcess::~AgentProcess() {
  if (pid_ >= 0) Stop(nullptr);
}

bool WriteAgentKey(const std::string& path, char fill) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return false;
  const std::string key(44, fill);
  const bool ok =
      write(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size());
  return close(fd) == 0 && ok;
}

}  // namespace fgds::testing
