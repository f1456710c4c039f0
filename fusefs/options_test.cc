#include "fusefs/options.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace fgds::fusefs {
namespace {

absl::StatusOr<DaemonOptions> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "mount");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return ParseMountArgs(static_cast<int>(argv.size()), argv.data());
}

TEST(OptionsTest, DefaultsWithOnlyMountpoint) {
  auto options = Parse({"/mnt/fgds"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->mountpoint, "/mnt/fgds");
  EXPECT_EQ(options->data_dir, "/var/lib/fgds/data");
  EXPECT_FALSE(options->foreground);
  EXPECT_TRUE(options->keep_cache);
  EXPECT_EQ(options->max_io, 1u << 20);
  EXPECT_EQ(options->backend, "local");
  // usrbio helpers and batched inline reads: by the machine, and on.
  EXPECT_EQ(options->usrbio_helpers, -1);
  EXPECT_TRUE(options->usrbio_inline_uring);
  EXPECT_TRUE(options->usrbio_fixed);
}

TEST(OptionsTest, BackendIsChosenByName) {
  auto options = Parse({"--backend", "local", "/mnt/fgds"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->backend, "local");
  // Unknown names fail when the backend is created (backend_factory.h),
  // with the list of known ones; a missing value fails here.
  EXPECT_FALSE(Parse({"/mnt/fgds", "--backend"}).ok());
}

TEST(OptionsTest, AgentsAreAListOfHostPortsWithAKey) {
  auto options = Parse({"--backend", "ceph", "--agents",
                        "10.0.0.1:7070,[::1]:7071,store-3:7072", "--agent-key",
                        "/etc/fgds/agent.key", "/mnt/fgds"});
  ASSERT_TRUE(options.ok()) << options.status();
  ASSERT_EQ(options->agents.size(), 3u);
  EXPECT_EQ(options->agents[0].host, "10.0.0.1");
  EXPECT_EQ(options->agents[0].port, 7070);
  EXPECT_EQ(options->agents[1].host, "::1");
  EXPECT_EQ(options->agents[2].host, "store-3");
  EXPECT_EQ(options->agent_key, "/etc/fgds/agent.key");
  EXPECT_TRUE(Parse({"/mnt/fgds"})->agents.empty());
  // rdma:// names an agent of --transport rdma; the local backend takes
  // agents too (of its own directory: backend/agent_backend.h).
  auto rdma = Parse({"--agents", "rdma://10.0.2.15:7471,tcp://b:2",
                     "--agent-key", "k", "/mnt/fgds"});
  ASSERT_TRUE(rdma.ok()) << rdma.status();
  ASSERT_EQ(rdma->agents.size(), 2u);
  EXPECT_EQ(rdma->agents[0].transport, remote::AgentTransport::kRdma);
  EXPECT_EQ(rdma->agents[0].host, "10.0.2.15");
  EXPECT_EQ(rdma->agents[1].transport, remote::AgentTransport::kTcp);
  EXPECT_FALSE(rdma->agent_crc);
  auto crc = Parse(
      {"--agents", "a:1", "--agent-key", "k", "--agent-crc", "/mnt/fgds"});
  ASSERT_TRUE(crc.ok()) << crc.status();
  EXPECT_TRUE(crc->agent_crc);
}

TEST(OptionsTest, BadAgentsAreRefusedWithTheReason) {
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  const Case cases[] = {
      {{"--backend", "ceph", "--agents", "nohost", "--agent-key", "k"},
       "--agents"},
      {{"--backend", "ceph", "--agents", "a:1,,b:2", "--agent-key", "k"},
       "--agents"},
      {{"--backend", "ceph", "--agents", "a:70000", "--agent-key", "k"},
       "--agents"},
      {{"--backend", "ceph", "--agents", "a:0", "--agent-key", "k"}, "port 0"},
      {{"--backend", "ceph", "--agents", "a:1"}, "needs --agent-key"},
      {{"--backend", "ceph", "--agent-key", "k"}, "only used with --agents"},
      {{"--agent-crc"}, "only used with --agents"},
      {{"--agents", "udp://a:1", "--agent-key", "k"}, "tcp:// or rdma://"},
      {{"--backend", "ceph", "--agents"}, "--agents"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    args.push_back("/mnt/fgds");
    auto options = Parse(args);
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    ASSERT_FALSE(options.ok()) << joined;
    EXPECT_NE(options.status().message().find(c.says), std::string::npos)
        << joined << ": " << options.status();
  }
}

TEST(OptionsTest, CephOptions) {
  auto options =
      Parse({"--backend", "ceph", "--ceph-conf", "/c/ceph.conf", "--ceph-id",
             "fgds", "--ceph-fs", "data", "--ceph-root", "/sub", "/mnt/fgds"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->backend, "ceph");
  EXPECT_EQ(options->ceph_conf, "/c/ceph.conf");
  EXPECT_EQ(options->ceph_id, "fgds");
  EXPECT_EQ(options->ceph_fs, "data");
  EXPECT_EQ(options->ceph_root, "/sub");
  EXPECT_EQ(Parse({"/mnt/fgds"})->ceph_root, "/");
  EXPECT_FALSE(Parse({"/mnt/fgds", "--ceph-conf"}).ok());
}

TEST(OptionsTest, CephTimeout) {
  EXPECT_EQ(Parse({"/mnt/fgds"})->ceph_timeout_ms, 120000u);
  EXPECT_EQ(Parse({"--ceph-timeout", "3", "/m"})->ceph_timeout_ms, 3000u);
  EXPECT_EQ(Parse({"--ceph-timeout", "0.5", "/m"})->ceph_timeout_ms, 500u);
  EXPECT_EQ(Parse({"--ceph-timeout", "0", "/m"})->ceph_timeout_ms, 0u);
  for (const char* bad : {"-1", "x", "nan", "1e9", ""}) {
    EXPECT_FALSE(Parse({"--ceph-timeout", bad, "/m"}).ok()) << bad;
  }
  EXPECT_FALSE(Parse({"/m", "--ceph-timeout"}).ok());
}

TEST(OptionsTest, AllFlags) {
  auto options = Parse({"--data",
                        "/d",
                        "-f",
                        "--writeback-cache",
                        "--direct-io",
                        "--no-keep-cache",
                        "--attr-timeout",
                        "2.5",
                        "--entry-timeout",
                        "0",
                        "--readahead-kb",
                        "0",
                        "--max-io",
                        "131072",
                        "--io-workers",
                        "0",
                        "--io-spin-us",
                        "7",
                        "--threads",
                        "4",
                        "--usrbio-ring-workers",
                        "3",
                        "--usrbio-max-spin-us",
                        "0",
                        "--usrbio-max-batch",
                        "8",
                        "--usrbio-inline-reads",
                        "0",
                        "--usrbio-helpers",
                        "0",
                        "--usrbio-inline-uring",
                        "0",
                        "--usrbio-fixed",
                        "0",
                        "--gpus",
                        "0,0000:3b:00.0",
                        "-o",
                        "debug",
                        "/m"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->data_dir, "/d");
  EXPECT_TRUE(options->foreground);
  EXPECT_TRUE(options->writeback_cache);
  EXPECT_TRUE(options->direct_io);
  EXPECT_FALSE(options->keep_cache);
  EXPECT_DOUBLE_EQ(options->attr_timeout, 2.5);
  EXPECT_DOUBLE_EQ(options->entry_timeout, 0);
  EXPECT_EQ(options->readahead_kb, 0u);
  EXPECT_EQ(options->max_io, 131072u);
  EXPECT_EQ(options->io_workers, 0);
  EXPECT_EQ(options->io_spin_us, 7);
  EXPECT_EQ(options->max_threads, 4);
  EXPECT_EQ(options->usrbio_ring_workers, 3);
  EXPECT_EQ(options->usrbio_max_spin_us, 0);
  EXPECT_EQ(options->usrbio_max_batch, 8);
  EXPECT_FALSE(options->usrbio_inline_reads);
  EXPECT_EQ(options->usrbio_helpers, 0);
  EXPECT_FALSE(options->usrbio_inline_uring);
  EXPECT_FALSE(options->usrbio_fixed);
  EXPECT_EQ(options->gpus, "0,0000:3b:00.0");
  EXPECT_EQ(options->fuse_options, std::vector<std::string>{"debug"});
}

TEST(OptionsTest, CacheModeSetsTheTimeoutsNotGivenExplicitly) {
  auto local = Parse({"/m"});
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(local->cache, CacheMode::kDefault);
  EXPECT_DOUBLE_EQ(local->attr_timeout, 600);
  EXPECT_DOUBLE_EQ(local->entry_timeout, 600);
  EXPECT_DOUBLE_EQ(local->negative_timeout, 600);
  // A shared backend keeps the old second and never caches a missing name.
  auto ceph = Parse({"--backend", "ceph", "/m"});
  ASSERT_TRUE(ceph.ok()) << ceph.status();
  EXPECT_DOUBLE_EQ(ceph->attr_timeout, 1);
  EXPECT_DOUBLE_EQ(ceph->entry_timeout, 1);
  EXPECT_DOUBLE_EQ(ceph->negative_timeout, 0);
  for (const char* backend : {"local", "ceph"}) {
    auto strict = Parse({"--backend", backend, "--cache", "strict", "/m"});
    ASSERT_TRUE(strict.ok()) << strict.status();
    EXPECT_EQ(strict->cache, CacheMode::kStrict);
    EXPECT_DOUBLE_EQ(strict->attr_timeout, 0) << backend;
    EXPECT_DOUBLE_EQ(strict->entry_timeout, 0) << backend;
    EXPECT_DOUBLE_EQ(strict->negative_timeout, 0) << backend;
  }
  // An explicit time wins over the mode, whatever the order.
  auto mixed = Parse({"--entry-timeout", "5", "--cache", "strict",
                      "--negative-timeout", "0.5", "/m"});
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  EXPECT_DOUBLE_EQ(mixed->attr_timeout, 0);
  EXPECT_DOUBLE_EQ(mixed->entry_timeout, 5);
  EXPECT_DOUBLE_EQ(mixed->negative_timeout, 0.5);
}

struct BadCase {
  std::vector<std::string> args;
  std::string message;  // must appear in the error
};

TEST(OptionsTest, UsrbioLimitsDefaultToTheMachineAndCanBeSet) {
  auto defaults = Parse({"/m"});
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->user_sessions, 0u);  // 0: sized from the machine
  EXPECT_EQ(defaults->user_bytes, 0u);
  EXPECT_EQ(defaults->daemon_mappings, 0u);
  auto options =
      Parse({"--user-sessions", "3", "--user-rings", "5", "--user-ring-entries",
             "4096", "--user-mappings", "100", "--user-bytes", "256M",
             "--daemon-mappings", "20000", "--daemon-bytes", "2T",
             "--user-files", "300", "--daemon-files", "4000", "/m"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->user_sessions, 3u);
  EXPECT_EQ(options->user_rings, 5u);
  EXPECT_EQ(options->user_ring_entries, 4096u);
  EXPECT_EQ(options->user_mappings, 100u);
  EXPECT_EQ(options->user_bytes, uint64_t{256} << 20);
  EXPECT_EQ(options->daemon_mappings, 20000u);
  EXPECT_EQ(options->daemon_bytes, uint64_t{2} << 40);
  EXPECT_EQ(options->user_files, 300u);
  EXPECT_EQ(options->daemon_files, 4000u);
  auto plain = Parse({"--user-bytes", "12345", "--daemon-bytes", "1k", "/m"});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->user_bytes, 12345u);
  EXPECT_EQ(plain->daemon_bytes, 1024u);
  // Every limit is in the help text.
  for (const char* flag :
       {"--user-sessions", "--user-rings", "--user-ring-entries",
        "--user-mappings", "--user-bytes", "--daemon-mappings",
        "--daemon-bytes", "--user-files", "--daemon-files"}) {
    EXPECT_NE(std::string(MountUsage()).find(flag), std::string::npos) << flag;
  }
}

TEST(OptionsTest, ErrorsNameTheProblem) {
  const BadCase kCases[] = {
      {{}, "missing MOUNTPOINT"},
      {{"/a", "/b"}, "more than one"},
      {{"--bogus", "/m"}, "--bogus"},
      {{"/m", "--data"}, "--data needs a value"},
      {{"--threads", "0", "/m"}, "--threads"},
      {{"--threads", "x", "/m"}, "'x'"},
      {{"--attr-timeout", "-1", "/m"}, "--attr-timeout"},
      {{"--negative-timeout", "nan", "/m"}, "--negative-timeout"},
      {{"--entry-timeout", "1e12", "/m"}, "--entry-timeout"},
      {{"--cache", "always", "/m"}, "'always' for --cache"},
      {{"--max-io", "100", "/m"}, "--max-io"},
      {{"--max-io", "4194304", "/m"}, "--max-io"},
      {{"--user-sessions", "-1", "/m"}, "--user-sessions"},
      {{"--user-mappings", "1K", "/m"}, "--user-mappings"},  // counts
      {{"--user-bytes", "5X", "/m"}, "'5X'"},
      {{"--daemon-bytes", "99999999T", "/m"}, "--daemon-bytes"},
      {{"/m", "--user-rings"}, "--user-rings needs a value"},
      {{"--usrbio-max-spin-us", "1000001", "/m"}, "--usrbio-max-spin-us"},
      {{"--usrbio-max-batch", "0", "/m"}, "--usrbio-max-batch"},
      {{"--usrbio-inline-reads", "2", "/m"}, "--usrbio-inline-reads"},
      {{"--usrbio-helpers", "65", "/m"}, "--usrbio-helpers"},
      {{"--usrbio-inline-uring", "2", "/m"}, "--usrbio-inline-uring"},
      {{"--usrbio-fixed", "2", "/m"}, "--usrbio-fixed"},
      {{"--gpus", "0,,1", "/m"}, "--gpus: GPU list \"0,,1\" has an empty"},
      {{"--gpus", "gpu0", "/m"}, "\"gpu0\" is neither an index"},
      {{"/m", "--gpus"}, "--gpus needs a value"},
  };
  for (const BadCase& c : kCases) {
    auto options = Parse(c.args);
    ASSERT_FALSE(options.ok());
    EXPECT_NE(options.status().message().find(c.message), std::string::npos)
        << options.status();
  }
}

TEST(OptionsTest, FeatureModes) {
  auto options = Parse({"/mnt/fgds"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->passthrough, FeatureMode::kAuto);
  EXPECT_EQ(options->fuse_uring, FeatureMode::kAuto);
  options = Parse({"--passthrough", "off", "--fuse-uring=on", "/mnt/fgds"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->passthrough, FeatureMode::kOff);
  EXPECT_EQ(options->fuse_uring, FeatureMode::kOn);
  options = Parse({"--passthrough=on", "--fuse-uring", "auto", "/mnt/fgds"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->passthrough, FeatureMode::kOn);
  EXPECT_EQ(options->fuse_uring, FeatureMode::kAuto);
}

TEST(OptionsTest, FeatureModeErrors) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--passthrough", "yes", "/m"},
        {"--passthrough=", "/m"},
        {"--fuse-uring"},
        {"--passthroughx=on", "/m"},
        {"--passthrough", "on", "--writeback-cache", "/m"},
        {"--direct-io", "--passthrough=on", "/m"}}) {
    auto options = Parse(args);
    EXPECT_FALSE(options.ok()) << args[0];
    EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument);
  }
  // auto gives way to those options instead (fuse_features.h).
  EXPECT_TRUE(Parse({"--writeback-cache", "/m"}).ok());
}

}  // namespace
}  // namespace fgds::fusefs
