// `fgds agent` as a user runs it: the real binary serves a directory over
// loopback TCP to a daemon's client, prints where it listens, refuses bad
// setups with a message, and stops cleanly on SIGTERM.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "backend/remote/agent_client.h"
#include "gtest/gtest.h"
#include "tests/lib/agent_process.h"

namespace fgds::remote {
namespace {

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
  auto agent = testing::AgentProcess::Start(
      {"--listen", "127.0.0.1:0", "--data", data_, "--key", key_});
  ASSERT_TRUE(agent.ok()) << agent.status();
  EXPECT_NE(
      (*agent)->first_line().find("fgds agent: serving directory " + data_),
      std::string::npos)
      << (*agent)->first_line();
  auto hp = ParseHostPort((*agent)->address());
  ASSERT_TRUE(hp.ok()) << (*agent)->first_line();

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

  std::string rest;
  EXPECT_EQ((*agent)->Stop(&rest), 0) << rest;
  EXPECT_NE(rest.find("1 reads (12 bytes), 1 writes (4 bytes"),
            std::string::npos)
      << rest;
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
#if FGDS_HAVE_RDMA
  // Built with RDMA, on a host without an RDMA stack (CI's): the transport
  // says what is missing. (The rdma lab, tests/rdma/, serves with it.)
  const int rdma_status = 1;
  const std::string rdma_message = "cannot open the RDMA connection manager";
#else
  const int rdma_status = 2;
  const std::string rdma_message = "built without RDMA";
#endif
  const std::vector<Case> cases = {
      {{"--listen", "127.0.0.1:0", "--data", data_}, 2, "are required"},
      {{"--listen", "127.0.0.1:0", "--key", key_}, 2, "serve one store"},
      {{"--listen", "127.0.0.1:0", "--key", key_, "--data", data_,
        "--ceph-conf", "/etc/ceph/ceph.conf"},
       2,
       "serve one store"},
      {{"--listen", "127.0.0.1", "--data", data_, "--key", key_}, 2, "no port"},
      {{"--listen", "127.0.0.1:0", "--data", data_, "--key", open_key},
       1,
       "chmod 600"},
      {{"--listen", "127.0.0.1:0", "--data", dir_ + "/none", "--key", key_},
       1,
       "data directory"},
      {{"--listen", "127.0.0.1:0", "--data", data_, "--key", key_,
        "--transport", "rdma"},
       rdma_status,
       rdma_message},
      {{"--listen", "127.0.0.1:0", "--data", data_, "--key", key_,
        "--transport", "udp"},
       2,
       "--transport: tcp or rdma"},
      {{"--listen", "127.0.0.1:0", "--data", data_, "--key", key_, "--bogus"},
       2,
       "unknown option --bogus"},
  };
  for (const Case& c : cases) {
    std::string out;
    EXPECT_EQ(testing::AgentProcess::RunToExit(c.args, &out), c.status) << out;
    EXPECT_NE(out.find(c.message), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace fgds::remote
