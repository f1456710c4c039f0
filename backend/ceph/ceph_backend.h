// File: backend/ceph/ceph_backend.h
//
// The CephFS backend: serves a CephFS file system (or a subtree of it)
// through libcephfs's low-level calls (ceph_ll_*). Each node the kernel
// knows holds one reference of libcephfs's Inode; file data goes through a
// fixed pool of threads (io_pool.h), because libcephfs calls block on the
// network. docs/ceph.md says what is served and what is not yet.
//
// Built only where libcephfs is installed (FGDS_HAVE_CEPH).
#ifndef FGDS_BACKEND_CEPH_CEPH_BACKEND_H_
#define FGDS_BACKEND_CEPH_CEPH_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backend/backend.h"
#include "backend/remote/agent_address.h"

namespace fgds::backend {

struct CephOptions {
  // ceph.conf of the cluster (monitors, keyring); required.
  std::string conf;
  // The cephx client name without "client." (default: libcephfs's, admin).
  std::string id;
  // The file system to mount (default: the cluster's default).
  std::string fs;
  // The directory of the file system that becomes the mount's root.
  std::string root = "/";
  // Threads moving file data (the most requests in flight to Ceph).
  unsigned io_threads = 8;
  // Seconds the connection and mount wait for the cluster before failing,
  // unless the conf sets client_mount_timeout (to other than libcephfs's
  // default, 300).
  unsigned mount_timeout_s = 30;
  // The Ceph client's uuid (ceph_set_uuid), stable across restarts of the
  // same mount; a session an earlier client left under it (a daemon that
  // died) is reclaimed, i.e. evicted, before mounting, so its capabilities
  // do not stall this one until the MDS's session_timeout. Empty: none.
  std::string client_uuid;
  // How long any call may wait for the cluster (libcephfs 16 has no
  // timeout of its own) before it, and every later call, fails with
  // ENOTCONN: the backend then runs behind a CallGate
  // (guarded_backend.h). 0: calls wait as long as libcephfs does.
  unsigned call_timeout_ms = 120000;
  // Calls that may wait on the cluster at once behind the gate.
  unsigned gate_threads = 32;
  // Reads (the FUSE layer's) that may run on the thread that submitted
  // them, at once, instead of on a gate thread (guarded_backend.h): one
  // hand-off less each. A dead cluster keeps up to this many of those
  // threads: keep it below the FUSE threads' number. 0: none.
  unsigned here_reads = 0;
  // Storage-side agents (`fgds mount --agents`, docs/agent.md) that serve
  // the file data of reads and writes, each extent by the agent on its
  // primary OSD's host; libcephfs serves what no agent answers. Empty:
  // none. agent_key is the cluster key file they prove.
  std::vector<remote::AgentAddress> agents;
  std::string agent_key;
  bool agent_crc = false;  // CRC-32C of the agents' data, checked
};

// Connects and mounts; an unreachable cluster fails after
// `mount_timeout_s` with the reason.
absl::StatusOr<std::unique_ptr<Backend>> CreateCephBackend(
    const CephOptions& options);

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_CEPH_CEPH_BACKEND_H_
