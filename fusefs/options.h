// File: fusefs/options.h
//
// DaemonOptions: everything `fgds mount` accepts, parsed once and passed by
// const reference (no globals). Defaults are documented per field.
#ifndef FGDS_FUSEFS_OPTIONS_H_
#define FGDS_FUSEFS_OPTIONS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backend/remote/agent_address.h"

namespace fgds::fusefs {

// off: never; auto: where the kernel, libfuse and the other options allow
// it; on: as auto, and the mount fails where libfuse or the options rule it
// out (a kernel without it is reported at INIT: the mount runs without).
enum class FeatureMode { kOff, kAuto, kOn };

// How long the kernel may trust what it learnt about names and attributes
// (docs/fgdsd.md "Caching").
enum class CacheMode {
  // The backing store changes only through this mount (and usrbio, which
  // tells the kernel): the local backend lets the kernel keep names,
  // attributes and "no such name" for 10 minutes, so that stat, `ls -l`
  // and path walks cost no request (a shorter time re-asks, once per
  // timeout, for every file of a tree that takes longer to go through).
  // Other backends (shared with other clients) keep a second, and never
  // cache "no such name".
  kDefault,
  // Something else changes the backing directory too: nothing is cached,
  // every stat and path walk asks the daemon, so outside changes show at
  // once.
  kStrict,
};

struct DaemonOptions {
  // Which backend serves the namespace (backend/backend_factory.h).
  std::string backend = "local";
  // Where the files live: the embedded default backing store.
  std::string data_dir = "/var/lib/fgds/data";
  // The ceph backend's cluster (backend/ceph/ceph_backend.h): --ceph-conf,
  // --ceph-id, --ceph-fs, --ceph-root.
  std::string ceph_conf;
  std::string ceph_id;
  std::string ceph_fs;
  std::string ceph_root = "/";
  // --ceph-timeout: how long a call may wait for the cluster before it and
  // every later one fail with ENOTCONN (0: forever; docs/ceph.md).
  unsigned ceph_timeout_ms = 120000;
  // --agents [rdma://]HOST:PORT[,...] and --agent-key FILE: the
  // storage-side agents that move file data (docs/remote.md), and the
  // cluster key file they prove. Empty: none.
  std::vector<remote::AgentAddress> agents;
  std::string agent_key;
  // --agent-crc: end-to-end CRC-32C of the agents' data (docs/agent.md).
  bool agent_crc = false;
  // Where the namespace is mounted (required argument).
  std::string mountpoint;
  // Stay in the foreground (log to stderr) instead of daemonizing.
  bool foreground = false;
  // Let the kernel cache writes (FUSE writeback cache): faster small
  // writes; the kernel then owns file size and mtime while a file is open.
  bool writeback_cache = false;
  // Bypass the kernel page cache for file data (every read and write goes to
  // the daemon). Shared mmap then needs the kernel's direct_io mmap support.
  bool direct_io = false;
  // FUSE passthrough (fusefs/passthrough.h): the kernel reads, writes and
  // maps regular files of the local backend straight from the backing
  // file. Excludes writeback_cache and direct_io.
  FeatureMode passthrough = FeatureMode::kAuto;
  // FUSE over io_uring: requests that still reach the daemon come through
  // io_uring rings instead of /dev/fuse reads (Linux 6.14+, with the fuse
  // module's enable_uring parameter set; libfuse 3.18+).
  // auto: on where the kernel and libfuse offer it, for the local backend
  // (a queue's one thread serves its requests one at a time, which the
  // other backends' network waits would serialize; docs/fgdsd.md, "FUSE
  // over io_uring").
  FeatureMode fuse_uring = FeatureMode::kAuto;
  // Keep a file's cached pages across opens when the backing file did not
  // change in between.
  bool keep_cache = true;
  // --cache; the timeouts below follow it unless given explicitly.
  CacheMode cache = CacheMode::kDefault;
  // Seconds the kernel may cache attributes, names, and the absence of a
  // name. ParseMountArgs sets them from `cache` and `backend` (see
  // CacheMode); these initial values are the local backend's default mode.
  double attr_timeout = 600.0;
  double entry_timeout = 600.0;
  double negative_timeout = 600.0;
  // Kernel read-ahead for the mount, in KiB (0: kernel default).
  unsigned readahead_kb = 4096;
  // Largest read and write request, in bytes.
  unsigned max_io = 1 << 20;
  // io_uring worker threads, a ring each; -1 = one per CPU (at most 8), 0
  // disables io_uring.
  int io_workers = -1;
  // Microseconds an idle io_uring worker polls before sleeping; -1 = 20 on
  // hosts with 8 or more CPUs (where a polling thread is cheap and saves a
  // wakeup per batch), else 0.
  int io_spin_us = -1;
  // Most threads serving FUSE requests.
  int max_threads = 16;
  // Threads serving every usrbio ring (ring_worker_pool.h); 0 = one per CPU
  // the daemon may run on, at most 64. Rings never add threads.
  int usrbio_ring_workers = 0;
  // Microseconds a ring worker polls a ring after serving its entries
  // before sleeping: the most a client's spin_us gets (0: never spin).
  int usrbio_max_spin_us = 50;
  // Most entries a ring worker takes from one ring per turn.
  int usrbio_max_batch = 16;
  // Most idle ring workers helping one busy ring at once (Ring::Help); 0:
  // a ring is served by its own worker alone; -1: 3 with 8 or more CPUs,
  // else 0 (on a small machine a helper takes the CPU its clients need:
  // docs/usrbio.md).
  int usrbio_helpers = -1;
  // Ring workers' cached reads go to the kernel in one io_uring_enter per
  // turn (backend/local/nowait_reader.h); false: one preadv2 each.
  bool usrbio_inline_uring = true;
  // Those reads use io_uring fixed files and buffers registered on each
  // worker's ring (nowait_reader.h); false: by descriptor and address.
  bool usrbio_fixed = true;
  // Ring workers copy cached reads themselves (ring.h); false: every entry
  // goes to the io_uring workers.
  bool usrbio_inline_reads = true;
  // The GPUs whose memory the daemon maps for the direct path (GPU
  // subset: common/gpu/gpu_subset.h, indexes in PCI order): "" = all. GPU
  // iovs of other GPUs bounce (FGDS_IOV_GPU_REASON_EXCLUDED).
  std::string gpus;
  // Extra -o options handed to libfuse (comma-separated, may repeat).
  std::vector<std::string> fuse_options;
  // usrbio limits (docs/limits.md; fusefs/usrbio_limits.h applies them).
  // 0 = sized from the machine (fusefs/session/limits_sizing.h).
  // Per user (by the uid of a session's peer): sessions, iors, ring
  // entries summed over the iors, regions the daemon maps (iovs and iors),
  // and their bytes.
  uint64_t user_sessions = 0;
  uint64_t user_rings = 0;
  uint64_t user_ring_entries = 0;
  uint64_t user_mappings = 0;
  uint64_t user_bytes = 0;
  // Registered files of one user (each holds daemon descriptors).
  uint64_t user_files = 0;
  // All users together: mapped regions (below vm.max_map_count) and bytes
  // (below the daemon's address space).
  uint64_t daemon_mappings = 0;
  uint64_t daemon_bytes = 0;
  // Registered files of all users (below the descriptor limit).
  uint64_t daemon_files = 0;
};

// Parses `fgds mount` arguments (argv[0] is "mount"). Errors name the
// offending argument.
absl::StatusOr<DaemonOptions> ParseMountArgs(int argc, char** argv);

// The usage text of `fgds mount`.
const char* MountUsage();

}  // namespace fgds::fusefs

#endif  // FGDS_FUSEFS_OPTIONS_H_
