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
// reason is kept for `fgds stat`. Device memory (Kind::kDevice) is not
// taken: it would need a dma-buf registration, which no caller provides
// yet (-EINVAL; the backend serves it itself).
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
