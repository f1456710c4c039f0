// File: backend/remote/rdma_agent_link.h
//
// RdmaAgentLink: what AgentPool (agent_pool.h) keeps per connection to an
// RDMA agent: an RdmaAgentClient, and a staging buffer registered with the
// NIC for requests whose memory is not registered (FUSE reads and writes,
// whose buffers are libfuse's).
//
// Where the bytes go: memory of a usrbio host iov (a backend::MemoryRegion
// of Kind::kHost) is registered once, at its first request through any
// link of the pool (all links share one protection domain), and the agent
// moves the bytes straight into or out of it. The registration is the
// region's attachment (file_io.h): it is deregistered when the region
// goes, after the last request that named it completed. If the
// registration fails (no memory-lock room, a mapping the NIC cannot pin),
// the region's requests go through the staging buffer instead, and the
// reason is kept for `fgds stat`.
//
// Device memory (Kind::kDevice, a GPU iov the fgds module mapped) is
// registered the same way, once per iov, but from the dma-buf the session
// kept for it (MemoryRegion::dmabuf_fd; ibv_reg_dmabuf_mr, so no CUDA
// here). The CPU cannot stage GPU memory, so when there is no such
// registration (no dma-buf kept, a NIC or driver that takes no dma-bufs,
// as soft-RoCE, a GPU BAR too small to expose the range, checked payloads,
// which the CPU would have to sum) the link refuses the transfer
// (-EOPNOTSUPP, note.refused, the reason in note.registration_error)
// without touching the connection, and the caller serves it by its own
// path (the local backend's O_DIRECT into the module's mapping). A failed
// registration is kept as the region's attachment like a host one: it is
// not tried again per request.
//
// Thread safety: thread-compatible, like the client (the pool lends a link
// to one thread at a time).
#ifndef FGDS_BACKEND_REMOTE_RDMA_AGENT_LINK_H_
#define FGDS_BACKEND_REMOTE_RDMA_AGENT_LINK_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "backend/file_io.h"
#include "backend/remote/rdma_agent_client.h"

namespace fgds::remote {

// How one transfer went, for the pool's counters.
struct RdmaTransferNote {
  bool registered = false;  // in place, in the caller's registered iov
  bool staged = false;      // through the link's staging buffer
  // The iov's registration was made by this transfer (first use), or
  // failed (then `registration_error` says why; the transfer was staged).
  bool registration_made = false;
  bool registration_failed = false;
  std::string registration_error;
  // Device memory the link could not take (registration_error says why):
  // nothing was sent, the connection is as it was.
  bool refused = false;
};

class RdmaAgentLink {
 public:
  // Connects (options.pd: the pool's protection domain, or null for the
  // first link) and registers a staging buffer of `staging_bytes`.
  static absl::StatusOr<std::unique_ptr<RdmaAgentLink>> Connect(
      RdmaAgentClientOptions options, size_t staging_bytes);
  ~RdmaAgentLink();
  RdmaAgentLink(const RdmaAgentLink&) = delete;
  RdmaAgentLink& operator=(const RdmaAgentLink&) = delete;

  // Reads or writes `length` bytes of `name` at `offset`, the data at
  // `data`, which lies inside `region` when that is set. As the client's:
  // bytes moved or -errno (the connection's errno when it failed, even
  // after some bytes moved).
  int64_t Transfer(bool write, std::string_view name, uint64_t offset,
                   void* data, size_t length,
                   const backend::MemoryRegion* region, RdmaTransferNote* note);

  // Whether `region`'s registration was tried and failed (its attachment
  // says so): it is never tried again, so no link will move it in place.
  static bool RegistrationFailed(const backend::MemoryRegion& region);

  bool connected() const { return client_->connected(); }
  const std::string& last_error() const { return client_->last_error(); }
  // The client's counts: transfers redone on a new connection, data whose
  // CRC did not match.
  uint64_t retries() const { return client_->retries(); }
  uint64_t crc_errors() const { return client_->crc_errors(); }
  const std::shared_ptr<RdmaProtectionDomain>& domain() const {
    return client_->domain();
  }

 private:
  RdmaAgentLink() = default;
  // The registration of `region` in this link's domain, made at first use;
  // null if it failed (*note says why).
  const RdmaMemoryRegion* RegistrationOf(const backend::MemoryRegion& region,
                                         RdmaTransferNote* note);

  // In this order, so destroyed in reverse: the staging buffer is
  // deregistered before it is freed.
  std::unique_ptr<RdmaAgentClient> client_;
  std::unique_ptr<char[]> staging_;
  size_t staging_bytes_ = 0;
  std::unique_ptr<RdmaMemoryRegion> staging_mr_;
};

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_RDMA_AGENT_LINK_H_
