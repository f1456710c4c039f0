// The RDMA transport where there is no RDMA device (CI's machines): every
// entry point says what is missing, at once, instead of hanging or
// crashing. The transport itself runs over soft-RoCE in the lab
// (tests/rdma/rdma_lab_test.cc); on a host with an RDMA stack these skip.
#include <unistd.h>

#include <chrono>

#include "backend/remote/agent/agent_store.h"
#include "backend/remote/agent/rdma_agent_server.h"
#include "backend/remote/rdma_agent_client.h"
#include "gtest/gtest.h"

namespace fgds::remote {
namespace {

class NoRdmaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access("/dev/infiniband/rdma_cm", F_OK) == 0) {
      GTEST_SKIP() << "this host has an RDMA stack; the lab covers it";
    }
  }
};

TEST_F(NoRdmaDeviceTest, TheClientSaysThereIsNoRdma) {
  RdmaAgentClientOptions options;
  options.agent = {"127.0.0.1", 7070};
  options.key.secret = std::string(40, 'k');
  const auto start = std::chrono::steady_clock::now();
  auto client = RdmaAgentClient::Connect(options);
  ASSERT_FALSE(client.ok());
  EXPECT_NE(
      client.status().message().find("cannot open the RDMA connection manager"),
      std::string::npos)
      << client.status();
  EXPECT_NE(client.status().message().find("127.0.0.1:7070"), std::string::npos)
      << client.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST_F(NoRdmaDeviceTest, TheAgentSaysThereIsNoRdma) {
  auto dir = DirStore::Open("/tmp");
  ASSERT_TRUE(dir.ok()) << dir.status();
  AgentServerOptions options;
  options.listen = {"127.0.0.1", 0};
  options.key.secret = std::string(40, 'k');
  auto server = RdmaAgentServer::Start(options, std::move(*dir));
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("rdma_ucm"), std::string::npos)
      << server.status();
}

TEST(RdmaAgentServerOptionsTest, BadLimitsAreRefusedBeforeAnyDevice) {
  auto dir = DirStore::Open("/tmp");
  ASSERT_TRUE(dir.ok()) << dir.status();
  AgentServerOptions options;
  options.listen = {"127.0.0.1", 0};
  options.credits = 1000;  // more than a queue pair's receives we post
  auto server = RdmaAgentServer::Start(options, std::move(*dir));
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fgds::remote
