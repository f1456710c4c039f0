#include "backend/remote/agent_address.h"

#include "gtest/gtest.h"

namespace fgds::remote {
namespace {

TEST(AgentAddressTest, TheSchemeSaysTheTransport) {
  auto agents =
      ParseAgentList("a:1,tcp://b:2,rdma://10.0.0.7:7070,rdma://[::1]:9");
  ASSERT_TRUE(agents.ok()) << agents.status();
  ASSERT_EQ(agents->size(), 4u);
  EXPECT_EQ((*agents)[0].transport, AgentTransport::kTcp);
  EXPECT_EQ((*agents)[0].host, "a");
  EXPECT_EQ((*agents)[1].transport, AgentTransport::kTcp);
  EXPECT_EQ((*agents)[1].port, 2);
  EXPECT_EQ((*agents)[2].transport, AgentTransport::kRdma);
  EXPECT_EQ((*agents)[2].host, "10.0.0.7");
  EXPECT_EQ((*agents)[2].port, 7070);
  EXPECT_EQ((*agents)[3].host, "::1");
  EXPECT_EQ(AgentAddressText((*agents)[0]), "a:1");
  EXPECT_EQ(AgentAddressText((*agents)[2]), "rdma://10.0.0.7:7070");
  EXPECT_EQ(AgentAddressText((*agents)[3]), "rdma://[::1]:9");
}

TEST(AgentAddressTest, BadItemsAreRefusedByName) {
  const struct {
    const char* text;
    const char* says;
  } kBad[] = {
      {"", "empty item"},
      {"a:1,,b:2", "empty item"},
      {"udp://a:1", "tcp:// or rdma://"},
      {"rdma://a", "a"},
      {"rdma://a:0", "port 0"},
      {"rdma://", ""},
  };
  for (const auto& bad : kBad) {
    auto agents = ParseAgentList(bad.text);
    ASSERT_FALSE(agents.ok()) << bad.text;
    EXPECT_NE(agents.status().message().find(bad.says), std::string::npos)
        << bad.text << ": " << agents.status();
  }
}

}  // namespace
}  // namespace fgds::remote
