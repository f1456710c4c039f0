#include "backend/remote/rdma_agent_link.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace fgds::remote {
namespace {

// A region's registration, kept as its attachment (file_io.h): the memory
// region, or why there is none (not tried again: a region that could not
// be pinned once will not be later, and each try costs a syscall).
class Registration : public backend::MemoryRegion::Attachment {
 public:
  const RdmaProtectionDomain* pd = nullptr;
  std::unique_ptr<RdmaMemoryRegion> mr;
  std::string error;
};

}  // namespace

RdmaAgentLink::~RdmaAgentLink() = default;

bool RdmaAgentLink::RegistrationFailed(const backend::MemoryRegion& region) {
  // Only links attach to regions of a mount that has agents (one backend
  // per mount); dynamic_cast all the same, as it costs nothing here.
  const auto* r = dynamic_cast<const Registration*>(region.attachment());
  return r != nullptr && r->mr == nullptr;
}

absl::StatusOr<std::unique_ptr<RdmaAgentLink>> RdmaAgentLink::Connect(
    RdmaAgentClientOptions options, size_t staging_bytes) {
  std::unique_ptr<RdmaAgentLink> link(new RdmaAgentLink());
  auto client = RdmaAgentClient::Connect(std::move(options));
  if (!client.ok()) return client.status();
  link->client_ = *std::move(client);
  link->staging_bytes_ = staging_bytes;
  link->staging_.reset(new (std::nothrow) char[staging_bytes]);
  if (link->staging_ == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "no memory for a staging buffer of ", staging_bytes, " bytes"));
  }
  auto mr = link->client_->RegisterHost(link->staging_.get(), staging_bytes);
  if (!mr.ok()) {
    return absl::Status(mr.status().code(),
                        absl::StrCat("registering the staging buffer: ",
                                     mr.status().message()));
  }
  link->staging_mr_ = *std::move(mr);
  return link;
}

const RdmaMemoryRegion* RdmaAgentLink::RegistrationOf(
    const backend::MemoryRegion& region, RdmaTransferNote* note) {
  bool made = false;
  auto* r = static_cast<Registration*>(region.Attach([&] {
    made = true;
    auto reg = std::make_unique<Registration>();
    reg->pd = domain().get();
    if (region.kind() == backend::MemoryRegion::Kind::kDevice) {
      // Remote addresses from 2^40 + the dma-buf offset (RegisterDmabuf):
      // an agent names byte i of the iov as remote_base() + i either way.
      auto mr = client_->RegisterDmabuf(region.dmabuf_fd(),
                                        region.dmabuf_offset(), region.size());
      if (mr.ok()) {
        reg->mr = *std::move(mr);
      } else {
        reg->error = absl::StrCat("GPU iov of ", region.size(),
                                  " bytes: ", mr.status().message(),
                                  "; served by the backend's own path");
      }
      return reg;
    }
    auto mr = RdmaMemoryRegion::RegisterHost(domain(), region.base(),
                                             region.size(), true);
    if (mr.ok()) {
      reg->mr = *std::move(mr);
    } else {
      reg->error = std::string(mr.status().message());
    }
    return reg;
  }));
  if (r->mr != nullptr && r->pd != domain().get()) {
    // The pool has one domain for all its links; a region attached by
    // another pool (none today) is not ours to use.
    note->registration_failed = true;
    note->registration_error = "the iov is registered in another domain";
    return nullptr;
  }
  if (r->mr == nullptr) {
    note->registration_failed = made;
    note->registration_error = r->error;
    return nullptr;
  }
  note->registration_made = made;
  return r->mr.get();
}

int64_t RdmaAgentLink::Transfer(bool write, std::string_view name,
                                uint64_t offset, void* data, size_t length,
                                const backend::MemoryRegion* region,
                                RdmaTransferNote* note) {
  const bool device = region != nullptr &&
                      region->kind() == backend::MemoryRegion::Kind::kDevice;
  if (device && region->dmabuf_fd() < 0) {
    note->refused = true;
    note->registration_error =
        "GPU iov without a dma-buf (the session did not keep one)";
    return -EOPNOTSUPP;
  }
  if (device && client_->checked()) {
    // The check sums the data with the CPU, which cannot read GPU memory.
    // The user asked for checked agent data, not for failing GPU I/O: the
    // backend's own path (no agent, nothing to check) serves it instead.
    note->refused = true;
    note->registration_error =
        "GPU iov with checked payloads (--agent-crc): the CPU cannot sum GPU "
        "memory; served by the backend's own path";
    return -EOPNOTSUPP;
  }
  const RdmaMemoryRegion* mr =
      region != nullptr ? RegistrationOf(*region, note) : nullptr;
  if (device && mr == nullptr) {
    note->refused = true;  // the CPU cannot stage it
    return -EOPNOTSUPP;
  }
  if (mr != nullptr) {
    const size_t at =
        static_cast<size_t>(static_cast<char*>(data) - region->base());
    note->registered = true;
    return write ? client_->Write(name, offset, *mr, at, length)
                 : client_->Read(name, offset, *mr, at, length);
  }
  // Through the staging buffer, a piece at a time.
  note->staged = true;
  char* bytes = static_cast<char*>(data);
  size_t done = 0;
  while (done < length) {
    const size_t n = std::min(length - done, staging_bytes_);
    if (write) std::memcpy(staging_.get(), bytes + done, n);
    const int64_t moved =
        write ? client_->Write(name, offset + done, *staging_mr_, 0, n)
              : client_->Read(name, offset + done, *staging_mr_, 0, n);
    if (moved < 0) {
      // A connection's failure is an error even after earlier pieces (a
      // short count would read as the end of the file); a file's error
      // after some bytes is a short transfer, as read(2) reports it.
      if (!client_->connected() || done == 0) return moved;
      break;
    }
    if (!write)
      std::memcpy(bytes + done, staging_.get(), static_cast<size_t>(moved));
    done += static_cast<size_t>(moved);
    if (static_cast<size_t>(moved) < n) break;  // end of file, full disk
  }
  return static_cast<int64_t>(done);
}

}  // namespace fgds::remote
