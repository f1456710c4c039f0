// Who may use an fgds node, for real unprivileged users (tests/lib/
// test_users.h): the user comes from the socket as the daemon gets it, the
// answer from the node's mode as the kernel would give it.
#include "common/kmod/node_access.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "gtest/gtest.h"
#include "tests/lib/test_users.h"

namespace fgds::kmod {
namespace {

using ::fgds::testing::BecomeUser;
using ::fgds::testing::EnsureTestUser;
using ::fgds::testing::TestUser;

class NodeAccessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to create test users";
    absl::StatusOr<TestUser> alice = EnsureTestUser(::fgds::testing::kAlice);
    absl::StatusOr<TestUser> bob = EnsureTestUser(::fgds::testing::kBob);
    ASSERT_TRUE(alice.ok()) << alice.status();
    ASSERT_TRUE(bob.ok()) << bob.status();
    alice_ = *alice;
    bob_ = *bob;
    char dir[] = "/tmp/fgds-node-access-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    // World-searchable, so the users' connect() reaches the socket.
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
    node_ = dir_ + "/fgds_0000_3b_00_0";
  }
  void TearDown() override {
    if (dir_.empty()) return;
    unlink(node_.c_str());
    unlink((dir_ + "/sock").c_str());
    rmdir(dir_.c_str());
  }

  // A stand-in for the node: a file with the udev rule's ownership.
  void MakeNode(gid_t group, mode_t mode) {
    int fd = open(node_.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    close(fd);
    ASSERT_EQ(chown(node_.c_str(), 0, group), 0);
    ASSERT_EQ(chmod(node_.c_str(), mode), 0);
  }

  // The user at the far end of a connection made by a child running as
  // `who`, as SocketPeerUser reports it.
  NodeUser PeerOf(const TestUser& who) {
    const std::string path = dir_ + "/sock";
    int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(listener, 0);
    sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    unlink(path.c_str());
    EXPECT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)),
              0);
    EXPECT_EQ(chmod(path.c_str(), 0777), 0);
    EXPECT_EQ(listen(listener, 1), 0);
    pid_t pid = fork();
    if (pid == 0) {
      if (BecomeUser(who) != 0) _exit(126);
      int s = socket(AF_UNIX, SOCK_STREAM, 0);
      if (s < 0 ||
          connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        _exit(127);
      }
      char byte;
      (void)read(s, &byte, 1);  // until the parent has asked
      _exit(0);
    }
    NodeUser user;
    int conn = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    EXPECT_GE(conn, 0);
    EXPECT_EQ(SocketPeerUser(conn, &user), 0);
    close(conn);
    close(listener);
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    return user;
  }

  TestUser alice_, bob_;
  std::string dir_, node_;
};

TEST_F(NodeAccessTest, PeerIsTheConnectingUser) {
  NodeUser bob = PeerOf(bob_);
  EXPECT_EQ(bob.uid, bob_.uid);
  EXPECT_EQ(bob.gid, bob_.gid);
  // BecomeUser sets the supplementary groups of the account: its own.
  EXPECT_NE(std::find(bob.groups.begin(), bob.groups.end(), bob_.gid),
            bob.groups.end());
}

TEST_F(NodeAccessTest, GroupOfTheNodeMayOthersMayNot) {
  MakeNode(alice_.gid, 0660);  // alice's group plays "fgds"
  std::string message;
  EXPECT_EQ(CheckNodeAccess(node_, PeerOf(alice_), &message), 0) << message;
  EXPECT_EQ(CheckNodeAccess(node_, PeerOf(bob_), &message), -EACCES);
  EXPECT_NE(message.find("may not use"), std::string::npos) << message;
  EXPECT_NE(message.find(node_), std::string::npos) << message;
  NodeUser root;
  root.uid = 0;
  root.gid = 0;
  EXPECT_EQ(CheckNodeAccess(node_, root, &message), 0) << message;
}

TEST_F(NodeAccessTest, SupplementaryGroupCounts) {
  MakeNode(alice_.gid, 0660);
  NodeUser bob = PeerOf(bob_);
  bob.groups.push_back(alice_.gid);  // as if bob were in alice's group
  std::string message;
  EXPECT_EQ(CheckNodeAccess(node_, bob, &message), 0) << message;
}

TEST_F(NodeAccessTest, ModeDecidesNotOwnershipAlone) {
  std::string message;
  MakeNode(alice_.gid, 0640);  // the group may read only: not enough
  EXPECT_EQ(CheckNodeAccess(node_, PeerOf(alice_), &message), -EACCES);
  ASSERT_EQ(chmod(node_.c_str(), 0666), 0);  // anyone
  EXPECT_EQ(CheckNodeAccess(node_, PeerOf(bob_), &message), 0) << message;
  ASSERT_EQ(unlink(node_.c_str()), 0);
  EXPECT_EQ(CheckNodeAccess(node_, PeerOf(bob_), &message), -ENOENT);
}

}  // namespace
}  // namespace fgds::kmod
