// File: fusefs/session/session.h
//
// Session: one usrbio client connection. It reads requests from the socket
// (wire_parse.h), registers iovs, iors and files, and replies. It owns no
// thread: the server's few session threads call ServeOne when its socket is
// readable (session_server.h); Run is the same on a thread of the caller's.
// It ends when the client closes the socket or dies, when a message is
// malformed (FGDS_MSG_ERROR, then close), or when the server stops; then it
// stops its rings and drops every registration. I/O still in flight keeps
// what it uses alive until it completes (ring.h).
//
// Limits: the session, its rings and its mappings are charged to the uid
// of the socket's peer (SO_PEERCRED) in SessionContext::user_limits. A
// session its user has no room for is refused at once: FGDS_MSG_ERROR with
// the errno and the limit (reply.reason), then close, so a refused
// connection holds nothing. A registration over a limit gets a REPLY with
// the errno and the limit; the session goes on.
//
// Thread safety: ServeOne/Run/End on one thread at a time; Shutdown from
// any.
#ifndef FGDS_FUSEFS_SESSION_SESSION_H_
#define FGDS_FUSEFS_SESSION_SESSION_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "backend/backend.h"
#include "common/gpu/gpu_subset.h"
#include "common/mutex.h"
#include "fusefs/session/cache_invalidator.h"
#include "fusefs/session/io_stats.h"
#include "fusefs/session/refusal_log.h"
#include "fusefs/session/registry.h"
#include "fusefs/session/ring.h"
#include "fusefs/session/user_limits.h"
#include "fusefs/session/wire_parse.h"

namespace fgds::session {

struct SessionLimits {
  RegistryLimits registry;
  size_t max_rings = 64;
};

// What a session needs from the daemon.
struct SessionContext {
  backend::Backend* backend = nullptr;
  // st_dev of the mount as clients see it: a registered fd must be on it.
  dev_t mount_dev = 0;
  // Which backend node a client's registered descriptor (on the mount)
  // names. Empty: the kernel's own answer (mount_node.h). Tests without a
  // mount give their own.
  std::function<int(int fd, backend::NodeId* node)> node_of_fd;
  // Keeps the mount's page cache coherent with usrbio writes; null: none
  // (a daemon without a mount, tests).
  CacheInvalidator* invalidator = nullptr;
  // Serves the session's rings (ring_worker_pool.h); required for iors.
  RingWorkerPool* ring_pool = nullptr;
  // Counts every ring's completed entries (/.fgds/stats); null: none. Must
  // outlive the engine's I/O, which completes after sessions end.
  IoStats* io_stats = nullptr;
  // GPU iovs (gpu_iov.h): the backing directory, whose block device the
  // fgds module checks the peer-to-peer route to ("": none, so every GPU
  // iov bounces), and where the module's nodes are.
  std::string storage_dir;
  std::string device_dir = "/dev";
  // Keep each direct GPU iov's dma-buf descriptor for the iov's lifetime
  // (SharedMemory::KeepDmabuf), for a backend that registers it with a NIC
  // (backend::Backend::TakesDmabufs). One descriptor per such iov, charged
  // to the user as a registered file.
  bool keep_dmabufs = false;
  // The backend reaches no device memory (storage_dir empty) but its RDMA
  // agents take dma-bufs: a GPU iov gets no mapping, keeps its dma-buf for
  // the NIC, and is answered DIRECT (SharedMemory::NicOnly; docs/agent.md,
  // "GPU iovs over RDMA"). Its entries no agent moves come back "bounce
  // this entry" (FGDS_PATH_BOUNCE_ENTRY) for the client to stage.
  bool nic_only_gpu_iovs = false;
  // The GPUs whose memory GPU iovs may map (--gpus); all by default.
  gpu::GpuAllowList gpus;
  SessionLimits limits;
  // Per-user and daemon-wide limits, shared by every session (null: none).
  std::shared_ptr<UserLimits> user_limits;
  // Rate-limits the log lines of refusals, per user (null: every line).
  std::shared_ptr<RefusalLog> refusal_log;
  // Test hook (tests/integration/usrbio_daemon_death_test.cc): called while a
  // file registration holds the client's descriptor of a file on the mount, to
  // make the daemon die exactly there. Empty: nothing.
  std::function<void()> while_holding_client_fd;
};

class Session {
 public:
  // Takes ownership of the connected socket `sock`.
  Session(int sock, const SessionContext& context);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Serves the connection until it ends, then releases everything (End).
  void Run();
  enum class Step { kOpen, kEnded };
  // Reads and answers at most one request; with `wait`, waits for one.
  // kEnded: the session is over and End must follow.
  Step ServeOne(bool wait);
  // Stops the rings, drops every registration and closes the socket.
  void End();
  // Makes Run return soon (shuts the socket down).
  void Shutdown();
  bool done() const { return done_.load(std::memory_order_acquire); }
  // Refused at accept (its user has no room): Run answers and ends it at
  // once, without waiting for the client to send anything.
  bool refused() const { return refusal_ != 0; }
  int socket() const { return sock_; }

 private:
  // Handles one request and fills the reply (result, id; path and reason
  // for GPU iovs; with a negative result, reason is the FGDS_LIMIT_* that
  // refused it). Takes the received descriptors (closes what it does not
  // keep).
  void Handle(const Request& request, int* fds, fgds_msg_reply* reply);
  // Register*: 0 or -errno; on a refusal by a limit, *refused names it.
  int RegisterIov(const fgds_msg_iov_register& msg, int memfd, uint32_t* id,
                  uint32_t* refused);
  int RegisterGpuIov(const fgds_msg_gpu_iov_register& msg, int dmabuf_fd,
                     fgds_msg_reply* reply, uint32_t* refused);
  // RegisterGpuIov's way for context_.nic_only_gpu_iovs (values checked).
  int RegisterNicOnlyGpuIov(const fgds_msg_gpu_iov_register& msg, int dmabuf_fd,
                            fgds_msg_reply* reply, uint32_t* refused);
  int RegisterIor(const fgds_msg_ior_register& msg, int* fds, uint32_t* id,
                  uint32_t* refused);
  // IOV_GPU_STAGING: tags a host iov with its GPU, for IoStats.
  int TagGpuStaging(const fgds_msg_iov_gpu_staging& msg);
  int RegisterFile(int fd, uint32_t* id, uint32_t* refused);
  // Answers a session refused at construction (FGDS_MSG_ERROR) and drops
  // whatever the client sent, without waiting for it.
  void Refuse();
  int UnregisterIor(uint32_t id);
  void Reply(uint16_t type, uint32_t seq, const fgds_msg_reply& reply);
  void Teardown();

  const int sock_;
  // Guards closing sock_ at the end of Run against Shutdown from another
  // thread (which must not touch a descriptor number already reused).
  fgds::Mutex sock_mu_;
  bool sock_closed_ ABSL_GUARDED_BY(sock_mu_) = false;
  const SessionContext context_;
  pid_t pid_ = 0;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  bool hello_done_ = false;
  // This session's place in its user's session limit; empty when refused
  // (refusal_ then holds the errno, refused_limit_ the FGDS_LIMIT_*).
  Charge session_charge_;
  int refusal_ = 0;
  uint32_t refused_limit_ = 0;
  std::shared_ptr<Registry> registry_;
  uint32_t next_ring_ = 0;
  absl::flat_hash_map<uint32_t, std::shared_ptr<Ring>> rings_;
  std::atomic<bool> done_{false};
};

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_SESSION_H_
