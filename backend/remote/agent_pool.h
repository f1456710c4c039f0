// File: backend/remote/agent_pool.h
//
// AgentPool: the daemon's agents (`fgds mount --agents HOST:PORT,...`), with
// idle connections to each (AgentClient is one call at a time), which
// agent is up, and what each moved, for /.fgds/stats.
//
// Transports: an agent named rdma://HOST:PORT (agent_address.h) is reached
// with RdmaAgentLinks (rdma_agent_link.h): all of them in one protection
// domain (the first connection's device: one RDMA device per daemon), so a
// usrbio iov registered once serves every link; other memory goes through
// each link's registered staging buffer. A daemon built without RDMA
// (FGDS_RDMA=OFF) has such agents down, saying why, and serves their
// extents itself.
//
// Example:
//   auto pool = AgentPool::Create(options);
//   int agent = (*pool)->Choose(&osd_address, object_number);  // -1: none
//   int64_t n = (*pool)->Read(agent, "@inode/1099511627776", off, buf, len,
//                             region);  // region: the iov, or null
//   if (n < 0) ... the caller's own path (libcephfs) ...
//
// Health: an agent whose connection failed (refused, timed out, reset, a
// wrong key) is down for `retry_after_ms`; Choose skips it meanwhile, and
// the next call after that tries it again. Each change of state is logged
// once to stderr (the daemon's log), not once per request; every request
// the caller served elsewhere is counted as a fallback with its reason.
//
// GPU memory (a MemoryRegion of Kind::kDevice, with the dma-buf the
// session kept): only an RDMA agent moves it, in place, once the link
// registered the dma-buf (rdma_agent_link.h). A TCP agent, an RDMA agent
// that is down, or a registration that failed gives -EOPNOTSUPP (or the
// connection's errno) before any byte moved, and the caller serves the
// request by its own path; each such request is counted in the stats'
// `gpu_fallbacks`, with the last reason in `gpu_fallback_reason`.
//
// Choosing: an agent whose address is the given one (the primary OSD of
// the extent, ceph_get_osd_addr): the agent on the host that holds the
// data. Addresses compare by IP only (agents and OSDs listen on different
// ports). Without an address or a match, the agents that are up share the
// work by `spread` (the same key, the same agent while the set is
// unchanged).
//
// Durability: with deferred_sync agents acknowledge writes before they
// are durable, and Sync(name) (the daemon's fsync, fdatasync
// and close) syncs the file on every agent that took a write of it since
// its last sync (unsynced_writes.h). A sync fails (EIO) when such an agent
// cannot be reached or restarted in between: what it had not synced may
// be lost, as a page cache's writes are when a kernel's write-back fails.
//
// Thread safety: every method may be called concurrently.
#ifndef FGDS_BACKEND_REMOTE_AGENT_POOL_H_
#define FGDS_BACKEND_REMOTE_AGENT_POOL_H_

#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "backend/file_io.h"
#include "backend/remote/agent_address.h"
#include "backend/remote/agent_client.h"
#include "backend/remote/unsynced_writes.h"
#include "common/mutex.h"

namespace fgds::remote {

inline constexpr size_t kMaxAgents = 64;

class RdmaProtectionDomain;  // rdma_connection.h (built with FGDS_RDMA)

struct AgentPoolOptions {
  std::vector<AgentAddress> agents;
  AgentKey key;
  // How long an agent that failed is left alone before it is tried again.
  int retry_after_ms = 2000;
  int connect_timeout_ms = 2000;
  int io_timeout_ms = 30000;
  // Idle connections kept per agent (more are closed when returned).
  size_t max_idle = 16;
  bool checked = false;
  // Agents acknowledge writes before syncing them; the caller calls Sync
  // for durability (its fsync, fdatasync and close). false: every write
  // is synced before its reply, for callers that never call Sync.
  bool deferred_sync = false;
  // RDMA agents: each connection's registered staging buffer (requests
  // larger than it are moved a buffer at a time).
  size_t rdma_staging_bytes = size_t{1} << 20;
};

class AgentPool {
 public:
  // Resolves every agent's name (an unresolvable one is an error naming
  // it); connects to none yet.
  static absl::StatusOr<std::unique_ptr<AgentPool>> Create(
      AgentPoolOptions options);
  ~AgentPool();
  AgentPool(const AgentPool&) = delete;
  AgentPool& operator=(const AgentPool&) = delete;

  // The agent to send an extent to: one on `near`'s IP if that one is up
  // (near may be null), else the one `spread` picks among those up; -1 if
  // none is.
  int Choose(const struct sockaddr_storage* near, uint64_t spread);

  // As AgentClient's, on agent `agent` (from Choose). Bytes moved, or
  // -errno; on an error the caller serves the request itself and calls
  // Fallback. `region`: the registered memory the buffer lies in (a usrbio
  // iov), or null; an RDMA agent then moves the bytes in place.
  int64_t Read(int agent, std::string_view name, uint64_t offset, void* out,
               size_t length, const backend::MemoryRegion* region = nullptr);
  int64_t Write(int agent, std::string_view name, uint64_t offset,
                const void* data, size_t length,
                const backend::MemoryRegion* region = nullptr);
  // The path a request agent `agent` served took (kAgentTcp, kAgentRdma).
  backend::IoPath PathOf(int agent) const;
  // Counts one request of `agent` (-1: none was up) served elsewhere;
  // `region`: its memory, so that GPU memory's count (gpu_fallbacks) has
  // the requests no agent was up for too.
  void Fallback(int agent, const backend::MemoryRegion* region = nullptr);
  // Makes the writes of `name` that agents acknowledged durable: 0, the
  // agent store's -errno, or -EIO when an agent holding unsynced writes of
  // it cannot be reached or restarted since. `told`: the handle's record
  // (FileOpened): a failure of an earlier sync since the handle was told
  // is reported too; `fsync` marks it told (a close does not: see
  // unsynced_writes.h).
  int Sync(std::string_view name, uint64_t* told, bool fsync);
  // A handle of `name` opened (returns its `told` for Sync) and closed.
  uint64_t FileOpened(std::string_view name) { return unsynced_.Opened(name); }
  void FileClosed(std::string_view name) { unsynced_.Closed(name); }

  size_t size() const { return agents_.size(); }
  // Whether a GPU iov's dma-buf may be of use: some agent is an RDMA one
  // and this fgds was built with RDMA.
  bool TakesDmabufs() const;
  // Whether device memory `region` can never move by these agents: it has
  // no dma-buf, no agent is an RDMA one (or this fgds has no RDMA),
  // payloads are checked (the CPU cannot sum GPU memory), or a link's
  // registration of its dma-buf failed (remembered per region, never
  // tried again). A region's "no" is for good; a "maybe" is not a promise.
  bool DeviceNeverMoves(const backend::MemoryRegion& region) const;
  // Counts one request on GPU memory that no agent moved, with why.
  void NoteGpuFallback(std::string why);
  // Counts one request on GPU memory answered "bounce this entry" (a
  // backend that reaches no GPU memory itself): the client stages it.
  // `always`: and every later one of its region too.
  void NoteGpuBounce(bool always);
  // Lines for /.fgds/stats, one per agent, each ending in a newline.
  std::string StatsText() const;

 private:
  struct Agent;
  explicit AgentPool(AgentPoolOptions options);
  int64_t Transfer(int agent, bool write, std::string_view name,
                   uint64_t offset, void* buffer, size_t length,
                   const backend::MemoryRegion* region);
  // `agent`: its index (the unsynced-writes record names agents by it).
  int64_t TransferTcp(int agent, bool write, std::string_view name,
                      uint64_t offset, void* buffer, size_t length);
  // *why: set when the link did not move device memory, and why.
  int64_t TransferRdma(Agent& agent, bool write, std::string_view name,
                       uint64_t offset, void* buffer, size_t length,
                       const backend::MemoryRegion* region, std::string* why);
  // A connected client of `agent`, or null (the agent is marked down;
  // *error: -EACCES for a wrong key, else -EHOSTDOWN).
  std::unique_ptr<AgentClient> Borrow(Agent& agent, int* error);
  void Return(Agent& agent, std::unique_ptr<AgentClient> client);
  void MarkDown(Agent& agent, const std::string& why);
  // One agent's part of Sync.
  int SyncAgent(Agent& agent, std::string_view name,
                const UnsyncedWrites::Pending& pending);
  // What a TCP client or an RDMA link has counted; AddCounts adds the
  // difference between two readings to the agent's counters.
  struct ClientCounts {
    uint64_t retries = 0, crc_errors = 0;
  };
  template <typename Client>
  static ClientCounts CountsOf(const Client& client) {
    return {client.retries(), client.crc_errors()};
  }
  static void AddCounts(Agent& agent, const ClientCounts& before,
                        const ClientCounts& now);
  void MarkUp(Agent& agent);
  void NoteFileError(Agent& agent, bool write, std::string_view name,
                     int64_t n);
  bool Up(const Agent& agent) const;

  const AgentPoolOptions options_;
  std::vector<std::unique_ptr<Agent>> agents_;
  // RDMA: the protection domain of every link and registered iov, from
  // the first link that connected (TransferRdma).
  fgds::Mutex rdma_mu_;
  std::shared_ptr<RdmaProtectionDomain> rdma_pd_ ABSL_GUARDED_BY(rdma_mu_);
  std::atomic<uint64_t> unrouted_{0};  // fallbacks with no agent up
  std::atomic<uint64_t> gpu_fallbacks_{0};
  std::atomic<uint64_t> gpu_bounced_{0};         // NoteGpuBounce
  std::atomic<uint64_t> gpu_bounced_always_{0};  // of those, for good
  mutable fgds::Mutex gpu_mu_;
  std::string gpu_fallback_reason_ ABSL_GUARDED_BY(gpu_mu_);
  UnsyncedWrites unsynced_;
};

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_AGENT_POOL_H_
