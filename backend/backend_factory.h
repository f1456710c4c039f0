// File: backend/backend_factory.h
//
// CreateBackend: the one place that knows every backend by name, so the
// daemon picks one from its mount options (`fgds mount --backend NAME`) and
// adding a backend changes nothing in fusefs/.
//
// Example:
//   BackendConfig config;
//   config.data_dir = "/var/lib/fgds/data";
//   std::string warning;
//   auto backend = CreateBackend(config, &warning);
#ifndef FGDS_BACKEND_BACKEND_FACTORY_H_
#define FGDS_BACKEND_BACKEND_FACTORY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backend/backend.h"
#include "backend/remote/agent_address.h"
#include "common/io/io_engine.h"

namespace fgds::backend {

inline constexpr char kDefaultBackend[] = "local";

struct BackendConfig {
  // Which backend (BackendNames()).
  std::string name = kDefaultBackend;
  // local: the backing directory.
  std::string data_dir;
  // ceph (backend/ceph/ceph_backend.h): the cluster's ceph.conf, the
  // cephx id, the file system and the directory served as the root.
  std::string ceph_conf;
  std::string ceph_id;
  std::string ceph_fs;
  std::string ceph_root = "/";
  // ceph: CephOptions::call_timeout_ms and CephOptions::client_uuid.
  unsigned ceph_timeout_ms = 120000;
  std::string ceph_client_uuid;
  // ceph: CephOptions::here_reads (the daemon: half its FUSE threads).
  unsigned ceph_here_reads = 0;
  // The storage-side agents and their key file (ceph_backend.h; for the
  // local backend, agent_backend.h).
  std::vector<remote::AgentAddress> agents;
  std::string agent_key;
  bool agent_crc = false;  // CRC-32C of the agents' data, checked
  // The I/O engine of backends that do local I/O.
  io::IoEngineOptions engine;
};

// The names CreateBackend accepts.
std::vector<std::string> BackendNames();

// Creates the backend `config.name` names. A degraded but working start
// (io_uring unavailable) is not an error: *warning says why (may be null).
absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(
    const BackendConfig& config, std::string* warning);

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_BACKEND_FACTORY_H_
