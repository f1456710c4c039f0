// `fgds agent` as a user runs it: the real binary serves a directory over
// loopback TCP to a daemon's client, prints where it listens, refuses bad
// setups with a message, and stops cleanly on SIGTERM.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "backend/remote/agent_client.h"
#include "gtest/gtest.h"

namespace fgds::remote {
namespace {

struct Agent {
  pid_t pid = -1;
  int out = -1;  // the agent's stdout and stderr
};

Agent StartAgent(const std::vector<std::string>& args) {
  int pipefd[2];
  EXPECT_EQ(pipe2(pipefd, O_CLOEXEC), 0);
  Agent a;
  a.pid = fork();
  if (a.pid == 0) {
    dup2(pipefd[1], 1);
    dup2(pipefd[1], 2);
    std::vector<char*> argv = {const_cast<char*>(FGDS_BINARY),
                               const_cast<char*>("agent")};
    for (const std::string& s : args)
      argv.push_back(const_cast<char*>(s.c_str()));
    argv.push_back(nullptr);
    execv(FGDS_BINARY, argv.data());
    _exit(127);
  }
  close(pipefd[1]);
  a.out = pipefd[0];
  return a;
}

// Reads the agent's output up to the first newline (or its exit).
std::string ReadLine(int fd) {
  std::string line;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') line.push_back(c);
  return line;
}

std::string ReadAll(int fd) {
  std::string all;
  char buf[512];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) all.append(buf, n);
  return all;
}

int Wait(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class AgentCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/agent_cli_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    data_ = dir_ + "/data";
    ASSERT_EQ(mkdir(data_.c_str(), 0755), 0);
    key_ = dir_ + "/key";
    std::ofstream(key_) << std::string(44, 'q') << "\n";
    chmod(key_.c_str(), 0600);
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }
  std::string dir_, data_, key_;
};

TEST_F(AgentCliTest, ServesADirectoryUntilSigterm) {
  std::ofstream(data_ + "/weights.bin") << "0123456789abcdef";
  Agent agent =
      StartAgent({"--listen", "127.0.0.1:0", "--data", data_, "--key", key_});
  const std::string line = ReadLine(agent.out);
  const std::string marker = " on ";
  ASSERT_NE(line.find("fgds agent: serving directory " + data_),
            std::string::npos)
      << line;
  const size_t at = line.find(marker);
  ASSERT_NE(at, std::string::npos) << line;
  std::string address = line.substr(at + marker.size());
  address = address.substr(0, address.find(' '));
  auto hp = ParseHostPort(address);
  ASSERT_TRUE(hp.ok()) << line;

  AgentClientOptions o;
  o.agent = *hp;
  auto key = LoadAgentKey(key_);
  ASSERT_TRUE(key.ok());
  o.key = *key;
  auto client = AgentClient::Connect(o);
  ASSERT_TRUE(client.ok()) << client.status();
  char buf[32] = {};
  EXPECT_EQ((*client)->Read("weights.bin", 4, buf, sizeof(buf)), 12);
  EXPECT_EQ(std::string(buf, 12), "456789abcdef");
  ASSERT_EQ((*client)->Write("weights.bin", 0, "WXYZ", 4), 4);

  kill(agent.pid, SIGTERM);
  const std::string rest = ReadAll(agent.out);
  EXPECT_EQ(Wait(agent.pid), 0) << rest;
  EXPECT_NE(rest.find("1 reads (12 bytes), 1 writes (4 bytes"),
            std::string::npos)
      << rest;
  close(agent.out);
  std::ifstream in(data_ + "/weights.bin");
  std::string content((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(content, "WXYZ456789abcdef");
}

TEST_F(AgentCliTest, BadSetupsAreRefusedWithTheReason) {
  struct Case {
    std::vector<std::string> args;
    int status;
    std::string message;
  };
  const std::string open_key = dir_ + "/open-key";
  std::ofstream(open_key) << std::string(44, 'q');
  chmod(open_key.c_str(), 0644);
  const std::vector<Case> cases = {
      {{"--listen", "127.0.0.1:0", "--data", data_}, 2, "are required"},
      {{"--listen", "127.0.0.1", "--data", data_, "--key", key_}, 2, "no port"},
      {{"--listen", "127.0.0.1:0", "--data", data_, "--key", open_key},
       1,
       "chmod 600"},
      {{"--listen", "127.0.0.1:0", "--data", dir_ + "/none", "--key", key_},
       1,
       "data directory"},
      {{"--listen", "127.0.0.1:0", "--data", data_, "--key", key_,
        "--transport", "rdma"},
       2,
       "rdma transport is not built yet"},
      {{"--listen", "127.0.0.1:0", "--data", data_, "--key", key_, "--bogus"},
       2,
       "unknown option --bogus"},
  };
  for (const Case& c : cases) {
    Agent agent = StartAgent(c.args);
    const std::string out = ReadAll(agent.out);
    close(agent.out);
    EXPECT_EQ(Wait(agent.pid), c.status) << out;
    EXPECT_NE(out.find(c.message), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace fgds::remote
