#include "backend/backend_factory.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backend/agent_backend.h"
#include "backend/local/local_backend.h"
#include "backend/remote/agent_key.h"
#include "backend/remote/agent_pool.h"
#ifdef FGDS_HAVE_CEPH
#include "backend/ceph/ceph_backend.h"
#endif

namespace fgds::backend {
namespace {

// Requests that may wait on the local backend's agents at once.
constexpr unsigned kLocalAgentThreads = 16;

absl::StatusOr<std::unique_ptr<Backend>> WithAgents(
    std::unique_ptr<Backend> local, const BackendConfig& config) {
  remote::AgentPoolOptions pool_options;
  pool_options.agents = config.agents;
  pool_options.checked = config.agent_crc;
  auto key = remote::LoadAgentKey(config.agent_key);
  if (!key.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--agent-key: ", key.status().message()));
  }
  pool_options.key = *std::move(key);
  pool_options.max_idle = kLocalAgentThreads;
  auto pool = remote::AgentPool::Create(std::move(pool_options));
  if (!pool.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--agents: ", pool.status().message()));
  }
  return RouteThroughAgents(std::move(local), config.data_dir, *std::move(pool),
                            kLocalAgentThreads);
}

}  // namespace

std::vector<std::string> BackendNames() {
#ifdef FGDS_HAVE_CEPH
  return {kDefaultBackend, "ceph"};
#else
  return {kDefaultBackend};
#endif
}

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(
    const BackendConfig& config, std::string* warning) {
  if (config.name == "local") {
    auto local = LocalBackend::Create(config.data_dir, config.engine);
    if (!local.ok()) return local.status();
    if (warning != nullptr && !(*local)->engine_fallback_reason().empty() &&
        config.engine.use_io_uring) {
      *warning = absl::StrCat("io_uring unavailable, using blocking I/O: ",
                              (*local)->engine_fallback_reason());
    }
    if (warning != nullptr && !(*local)->uses_file_handles()) {
      // Each node the kernel knows then holds a descriptor: the namespace
      // is bounded by the descriptor limit (docs/fgdsd.md).
      absl::StrAppend(warning, warning->empty() ? "" : "; ",
                      "no file handles on ", config.data_dir,
                      " (filesystem or CAP_DAC_READ_SEARCH): every known "
                      "node holds a descriptor");
    }
    std::unique_ptr<Backend> backend(*std::move(local));
    if (config.agents.empty()) return backend;
    return WithAgents(std::move(backend), config);
  }
#ifdef FGDS_HAVE_CEPH
  if (config.name == "ceph") {
    CephOptions options;
    options.conf = config.ceph_conf;
    options.id = config.ceph_id;
    options.fs = config.ceph_fs;
    options.root = config.ceph_root;
    options.call_timeout_ms = config.ceph_timeout_ms;
    options.client_uuid = config.ceph_client_uuid;
    options.here_reads = config.ceph_here_reads;
    options.agents = config.agents;
    options.agent_key = config.agent_key;
    options.agent_crc = config.agent_crc;
    return CreateCephBackend(options);
  }
#endif
  return absl::InvalidArgumentError(
      absl::StrCat("unknown backend '", config.name,
                   "' (known: ", absl::StrJoin(BackendNames(), ", "), ")"));
}

}  // namespace fgds::backend
