#include "backend/remote/agent_auth.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "backend/remote/agent_key.h"
#include "gtest/gtest.h"

namespace fgds::remote {
namespace {

Proof Prove(const AgentKey& key, AuthRole role, uint64_t id, const Nonce& c,
            const Nonce& a) {
  Proof p;
  EXPECT_TRUE(ComputeProof(key, role, id, c, a, &p).ok());
  return p;
}

TEST(AgentAuthTest, AProofHoldsOnlyForItsKeyRoleClientAndNonces) {
  AgentKey key{std::string(32, 'k')};
  AgentKey other{std::string(32, 'j')};
  Nonce c, a;
  ASSERT_TRUE(MakeNonce(&c).ok());
  ASSERT_TRUE(MakeNonce(&a).ok());
  const Proof p = Prove(key, AuthRole::kDaemon, 7, c, a);
  EXPECT_TRUE(ProofMatches(p, Prove(key, AuthRole::kDaemon, 7, c, a)));
  EXPECT_FALSE(ProofMatches(p, Prove(other, AuthRole::kDaemon, 7, c, a)));
  EXPECT_FALSE(ProofMatches(p, Prove(key, AuthRole::kAgent, 7, c, a)))
      << "the agent's proof must not pass as the daemon's";
  EXPECT_FALSE(ProofMatches(p, Prove(key, AuthRole::kDaemon, 8, c, a)));
  EXPECT_FALSE(ProofMatches(p, Prove(key, AuthRole::kDaemon, 7, a, c)));
  Nonce fresh;
  ASSERT_TRUE(MakeNonce(&fresh).ok());
  EXPECT_NE(fresh, a) << "nonces come from the kernel's random source";
}

class AgentKeyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/agent_key_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }
  std::string Write(const std::string& name, const std::string& content,
                    mode_t mode) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << content;
    chmod(path.c_str(), mode);
    return path;
  }
  std::string dir_;
};

TEST_F(AgentKeyTest, LoadsAPrivateKeyWithoutItsTrailingNewline) {
  auto key = LoadAgentKey(Write("k", std::string(40, 'x') + "\n", 0600));
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ(key->secret, std::string(40, 'x'));
}

TEST_F(AgentKeyTest, RefusesKeysOthersCanReadShortKeysAndSymlinks) {
  auto shared = LoadAgentKey(Write("shared", std::string(40, 'x'), 0640));
  EXPECT_FALSE(shared.ok());
  EXPECT_NE(shared.status().message().find("chmod 600"), std::string::npos)
      << shared.status();
  auto short_key = LoadAgentKey(Write("short", "tooshort", 0600));
  EXPECT_FALSE(short_key.ok());
  EXPECT_NE(short_key.status().message().find("at least 32"),
            std::string::npos);
  const std::string target = Write("target", std::string(40, 'x'), 0600);
  ASSERT_EQ(symlink(target.c_str(), (dir_ + "/link").c_str()), 0);
  EXPECT_FALSE(LoadAgentKey(dir_ + "/link").ok())
      << "a symlink is not followed";
  EXPECT_FALSE(LoadAgentKey(dir_).ok()) << "a directory";
  EXPECT_FALSE(LoadAgentKey(dir_ + "/missing").ok());
  ASSERT_EQ(mkfifo((dir_ + "/fifo").c_str(), 0600), 0);
  EXPECT_FALSE(LoadAgentKey(dir_ + "/fifo").ok()) << "a FIFO, without blocking";
}

}  // namespace
}  // namespace fgds::remote
