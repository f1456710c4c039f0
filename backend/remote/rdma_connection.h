// File: backend/remote/rdma_connection.h
//
// RdmaConnection: one reliable-connected (RC) queue pair set up with
// librdmacm, carrying agent-protocol frames (agent_wire.h) as SEND/RECV
// messages and moving file data with RDMA WRITE and RDMA READ. The daemon's
// end (rdma_agent_client.h) and the agent's (agent/rdma_agent_server.h) are
// both built on it.
//
// Messages: each side posts `slots` receive buffers of kRdmaSlotBytes
// before the connection is established, and reposts one as soon as its
// frame has been taken. A frame (32-byte header and payload) must fit one
// slot, so over RDMA requests carry no file data (the IoBody names the
// daemon's memory instead). Flow control is by credits: the agent grants
// the daemon `credits` outstanding requests and posts credits + 1 receives
// (one more for a frame the daemon sends unasked: none today); the daemon
// posts credits + 1 (a reply per request, and an error frame).
//
// Every wait has a deadline, and returns early when the peer disconnects
// (the connection manager's DISCONNECTED event, sent by the peer's kernel
// also when the peer process dies), when a work request fails (the queue
// pair goes to the error state and every later one is flushed), or when
// Shutdown is called from another thread. Results are 0 (or bytes) or
// -errno: -ETIMEDOUT at the deadline, -ECONNRESET when the peer went away
// or Shutdown was called, -EIO (-EACCES for a protection error: a bad rkey
// or range) when a work request failed, -EPROTO/-EMSGSIZE/-EBADMSG for a
// malformed frame. After any failure the connection is unusable; its
// destructor tears down in order (disconnect, queue pair, memory regions,
// completion queue, protection domain, id, channel).
//
// Thread safety: one thread uses a connection; Shutdown may be called from
// any thread.
#ifndef FGDS_BACKEND_REMOTE_RDMA_CONNECTION_H_
#define FGDS_BACKEND_REMOTE_RDMA_CONNECTION_H_

#include <rdma/rdma_cma.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backend/remote/agent_handshake.h"
#include "backend/remote/agent_wire.h"
#include "backend/remote/socket_address.h"

namespace fgds::remote {

// One message buffer: a header and the largest request (an IoBody with the
// longest path) or error frame, rounded up.
inline constexpr size_t kRdmaSlotBytes = 8192;
static_assert(kFrameHeaderSize + 64 + kMaxPathBytes <= kRdmaSlotBytes);

// A protection domain shared by a connection and the memory regions
// registered in it, so that a region outlives neither.
class RdmaProtectionDomain {
 public:
  static absl::StatusOr<std::shared_ptr<RdmaProtectionDomain>> Allocate(
      ibv_context* context);
  ~RdmaProtectionDomain();
  RdmaProtectionDomain(const RdmaProtectionDomain&) = delete;
  RdmaProtectionDomain& operator=(const RdmaProtectionDomain&) = delete;
  ibv_pd* pd() const { return pd_; }
  ibv_context* context() const { return pd_->context; }

 private:
  explicit RdmaProtectionDomain(ibv_pd* pd) : pd_(pd) {}
  ibv_pd* const pd_;
};

// A registered memory region; deregistered when destroyed.
class RdmaMemoryRegion {
 public:
  // Host memory, for the local side only (access IBV_ACCESS_LOCAL_WRITE)
  // or also for the peer to write into and read from.
  static absl::StatusOr<std::unique_ptr<RdmaMemoryRegion>> RegisterHost(
      std::shared_ptr<RdmaProtectionDomain> pd, void* addr, size_t length,
      bool remote_access);
  // A dma-buf (e.g. GPU memory exported by its driver): `length` bytes at
  // `fd_offset` in the dma-buf, addressed by the peer from `iova` on.
  static absl::StatusOr<std::unique_ptr<RdmaMemoryRegion>> RegisterDmabuf(
      std::shared_ptr<RdmaProtectionDomain> pd, int fd, uint64_t fd_offset,
      size_t length, uint64_t iova);
  ~RdmaMemoryRegion();
  RdmaMemoryRegion(const RdmaMemoryRegion&) = delete;
  RdmaMemoryRegion& operator=(const RdmaMemoryRegion&) = delete;

  uint32_t lkey() const { return mr_->lkey; }
  uint32_t rkey() const { return mr_->rkey; }
  size_t length() const { return length_; }
  // The address the peer names in its work requests for byte 0.
  uint64_t remote_base() const { return remote_base_; }
  // Host regions only: the local address of byte 0 (nullptr for dma-bufs).
  void* local_addr() const { return local_addr_; }
  const RdmaProtectionDomain& domain() const { return *pd_; }

 private:
  RdmaMemoryRegion(std::shared_ptr<RdmaProtectionDomain> pd, ibv_mr* mr,
                   size_t length, uint64_t remote_base, void* local_addr)
      : pd_(std::move(pd)),
        mr_(mr),
        length_(length),
        remote_base_(remote_base),
        local_addr_(local_addr) {}
  std::shared_ptr<RdmaProtectionDomain> pd_;
  ibv_mr* const mr_;
  const size_t length_;
  const uint64_t remote_base_;
  void* const local_addr_;
};

class RdmaConnection {
 public:
  // The daemon's side: resolves `agent`, connects an RC queue pair in `pd`
  // (allocated here if null; it must belong to the device the route
  // leads to) and waits until it is established.
  static absl::StatusOr<std::unique_ptr<RdmaConnection>> Connect(
      const HostPort& agent, std::shared_ptr<RdmaProtectionDomain> pd,
      uint32_t slots, int timeout_ms);

  // The agent's side: `id` arrived in a CONNECT_REQUEST event (already
  // acknowledged), with the peer's connection parameters `request`; it is
  // moved to a channel of its own here. Takes ownership of `id` whatever
  // the result. Accepts, and waits until established.
  static absl::StatusOr<std::unique_ptr<RdmaConnection>> Accept(
      rdma_cm_id* id, const rdma_conn_param& request, uint32_t slots,
      int timeout_ms);

  ~RdmaConnection();
  RdmaConnection(const RdmaConnection&) = delete;
  RdmaConnection& operator=(const RdmaConnection&) = delete;

  const std::shared_ptr<RdmaProtectionDomain>& domain() const { return pd_; }
  const std::string& peer() const { return peer_; }

  // Frames from the handshake on carry a CRC (kFrameChecked), and every
  // frame received must.
  void set_checked(bool checked) { checked_ = checked; }

  // Posts one frame as a SEND. Waits only while every send slot is still
  // in flight (their completions free them).
  int SendFrame(FrameType type, uint64_t request_id,
                std::span<const uint8_t> payload, int timeout_ms);
  // Waits for the next frame; refuses (-EMSGSIZE) a payload larger than
  // `max_payload`. timeout_ms < 0: no deadline.
  int ReceiveFrame(FrameHeader* header, std::vector<uint8_t>* payload,
                   uint32_t max_payload, int timeout_ms);
  // RDMA WRITE of `length` bytes of `local` (in `region`) to the peer's
  // (remote_addr, rkey), or RDMA READ from there into `local`; waits for
  // the completion.
  int Write(const RdmaMemoryRegion& region, const void* local, size_t length,
            uint64_t remote_addr, uint32_t rkey, int timeout_ms);
  int Read(const RdmaMemoryRegion& region, void* local, size_t length,
           uint64_t remote_addr, uint32_t rkey, int timeout_ms);

  // Makes blocked and later calls fail with -ECONNRESET.
  void Shutdown();

  // What the last failure was, for messages.
  const std::string& last_error() const { return last_error_; }

 private:
  RdmaConnection() = default;
  // Creates the completion queue, queue pair and message buffers on id_
  // and posts the receives.
  absl::Status SetUp(uint32_t slots);
  int PostReceive(uint32_t slot);
  int PostRdma(ibv_wr_opcode opcode, const RdmaMemoryRegion& region,
               const void* local, size_t length, uint64_t remote_addr,
               uint32_t rkey, int timeout_ms);
  // Takes every completion there is; records failures.
  void Drain();
  // Waits until `ready()` or a failure or the deadline (-1: none).
  template <typename Ready>
  int WaitUntil(Ready ready, int64_t deadline_ms);
  // One connection-manager event on id_'s channel, if any.
  void TakeCmEvent();
  int Fail(int err, std::string what);

  rdma_event_channel* channel_ = nullptr;
  rdma_cm_id* id_ = nullptr;
  std::shared_ptr<RdmaProtectionDomain> pd_;
  ibv_comp_channel* comp_channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  bool qp_created_ = false;
  int wake_fd_ = -1;  // eventfd: Shutdown
  std::atomic<bool> shut_down_{false};

  std::vector<uint8_t> recv_buffer_;  // slots x kRdmaSlotBytes
  std::vector<uint8_t> send_buffer_;
  std::unique_ptr<RdmaMemoryRegion> recv_mr_;
  std::unique_ptr<RdmaMemoryRegion> send_mr_;
  uint32_t slots_ = 0;
  std::vector<uint32_t> free_send_slots_;
  struct Received {
    uint32_t slot;
    uint32_t bytes;
  };
  std::deque<Received> received_;
  uint64_t rdma_posted_ = 0;     // RDMA work requests posted
  uint64_t rdma_completed_ = 0;  // and completed (in order, on one QP)

  bool checked_ = false;
  int failed_ = 0;  // the first failure's errno; sticky
  std::string last_error_;
  std::string peer_;
};

// HandshakeChannel (agent_handshake.h) over an RDMA connection's frames.
class RdmaChannel : public HandshakeChannel {
 public:
  explicit RdmaChannel(RdmaConnection& conn) : conn_(conn) {}
  int Receive(FrameHeader* header, std::vector<uint8_t>* payload,
              uint32_t max_payload, int timeout_ms) override {
    return conn_.ReceiveFrame(header, payload, max_payload, timeout_ms);
  }
  int Send(FrameType type, std::span<const uint8_t> payload,
           int timeout_ms) override {
    return conn_.SendFrame(type, 0, payload, timeout_ms);
  }
  void SendError(int err, const std::string& message) override {
    std::vector<uint8_t> payload;
    EncodeError({err, message}, &payload);
    conn_.SendFrame(FrameType::kError, 0, payload, 1000);
  }
  const std::string& peer() const override { return conn_.peer(); }
  std::string Detail() const override { return conn_.last_error(); }

 private:
  RdmaConnection& conn_;
};

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_RDMA_CONNECTION_H_
