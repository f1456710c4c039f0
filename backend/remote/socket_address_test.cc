#include "backend/remote/socket_address.h"

#include "gtest/gtest.h"

namespace fgds::remote {
namespace {

TEST(SocketAddressTest, ParsesHostsPortsAndBracketedIpv6) {
  auto a = ParseHostPort("127.0.0.1:7070");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 7070);
  auto b = ParseHostPort("[::1]:0");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->port, 0);
  auto list = ParseHostPortList("storage-1:7070,storage-2:7071");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[1].host, "storage-2");
}

TEST(SocketAddressTest, RefusesMalformedAddressesByName) {
  for (const char* bad : {"", "host", ":7070", "host:", "host:70000", "host:7x",
                          "::1:7070", "[::1]7070", "[::1"}) {
    auto a = ParseHostPort(bad);
    EXPECT_FALSE(a.ok()) << bad;
  }
  EXPECT_FALSE(ParseHostPortList("a:1,,b:2").ok());
}

TEST(SocketAddressTest, ConnectingToAClosedPortIsRefused) {
  auto listener = ListenTcp({"127.0.0.1", 0}, 1);
  ASSERT_TRUE(listener.ok());
  auto bound = ParseHostPort(LocalAddressOf(*listener));
  ASSERT_TRUE(bound.ok());
  close(*listener);  // nothing listens there now
  EXPECT_EQ(ConnectTcp(*bound, 2000), -ECONNREFUSED);
}

}  // namespace
}  // namespace fgds::remote
