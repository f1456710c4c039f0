#include "backend/remote/agent_pool.h"

#include <netdb.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "absl/strings/str_cat.h"
#ifdef FGDS_HAVE_RDMA
#include "backend/remote/rdma_agent_link.h"
#endif

namespace fgds::remote {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The IP part of two socket addresses is the same (ports ignored; an IPv4
// address matches its IPv6-mapped form).
bool SameIp(const struct sockaddr_storage& a,
            const struct sockaddr_storage& b) {
  auto v4 = [](const struct sockaddr_storage& s, struct in_addr* out) {
    if (s.ss_family == AF_INET) {
      *out = reinterpret_cast<const struct sockaddr_in&>(s).sin_addr;
      return true;
    }
    if (s.ss_family == AF_INET6) {
      const auto& a6 = reinterpret_cast<const struct sockaddr_in6&>(s);
      if (IN6_IS_ADDR_V4MAPPED(&a6.sin6_addr)) {
        std::memcpy(out, a6.sin6_addr.s6_addr + 12, 4);
        return true;
      }
    }
    return false;
  };
  struct in_addr x, y;
  if (v4(a, &x) && v4(b, &y)) return x.s_addr == y.s_addr;
  if (a.ss_family != AF_INET6 || b.ss_family != AF_INET6) return false;
  return std::memcmp(&reinterpret_cast<const struct sockaddr_in6&>(a).sin6_addr,
                     &reinterpret_cast<const struct sockaddr_in6&>(b).sin6_addr,
                     sizeof(struct in6_addr)) == 0;
}

}  // namespace

struct AgentPool::Agent {
  AgentAddress address;
  std::string name;                          // AgentAddressText
  std::vector<struct sockaddr_storage> ips;  // what the host resolved to
  std::atomic<int64_t> down_until_ns{0};     // steady clock; 0: up
  fgds::Mutex mu;
  std::vector<std::unique_ptr<AgentClient>> idle ABSL_GUARDED_BY(mu);
#ifdef FGDS_HAVE_RDMA
  std::vector<std::unique_ptr<RdmaAgentLink>> rdma_idle ABSL_GUARDED_BY(mu);
#endif
  std::string last_error ABSL_GUARDED_BY(mu);
  // RDMA: the last failure to register an iov (its requests were staged).
  std::string registration_error ABSL_GUARDED_BY(mu);
  bool logged_down ABSL_GUARDED_BY(mu) = false;
  std::atomic<uint64_t> reads{0}, read_bytes{0}, writes{0}, write_bytes{0};
  std::atomic<uint64_t> fallbacks{0}, connects{0}, failures{0};
  std::atomic<uint64_t> retries{0}, crc_errors{0}, syncs{0}, sync_errors{0};
  // RDMA: requests moved in place in a registered iov, or through a
  // staging buffer; iovs registered, and iovs that could not be.
  std::atomic<uint64_t> in_place{0}, staged{0};
  std::atomic<uint64_t> registrations{0}, registration_failures{0};
};

AgentPool::AgentPool(AgentPoolOptions options) : options_(std::move(options)) {}

AgentPool::~AgentPool() {
  // The links before the domain they were made in.
  agents_.clear();
}

absl::StatusOr<std::unique_ptr<AgentPool>> AgentPool::Create(
    AgentPoolOptions options) {
  if (options.agents.empty()) {
    return absl::InvalidArgumentError("no agents given");
  }
  if (options.agents.size() > kMaxAgents) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.agents.size(), " agents: at most ", kMaxAgents));
  }
  std::unique_ptr<AgentPool> pool(new AgentPool(std::move(options)));
  for (const AgentAddress& address : pool->options_.agents) {
    auto agent = std::make_unique<Agent>();
    agent->address = address;
    agent->name = AgentAddressText(address);
    struct addrinfo hints = {};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    struct addrinfo* found = nullptr;
    const std::string port = std::to_string(address.port);
    if (int rc =
            getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found);
        rc != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "agent ", agent->name, ": cannot resolve: ", gai_strerror(rc)));
    }
    for (struct addrinfo* a = found; a != nullptr; a = a->ai_next) {
      struct sockaddr_storage ip = {};
      std::memcpy(&ip, a->ai_addr, std::min<size_t>(a->ai_addrlen, sizeof(ip)));
      agent->ips.push_back(ip);
    }
    freeaddrinfo(found);
    pool->agents_.push_back(std::move(agent));
  }
  return pool;
}

bool AgentPool::Up(const Agent& agent) const {
  const int64_t until = agent.down_until_ns.load(std::memory_order_relaxed);
  return until == 0 || NowNs() >= until;
}

int AgentPool::Choose(const struct sockaddr_storage* near, uint64_t spread) {
  // At most a few dozen agents: a scan per request costs less than keeping
  // a list of those up in step.
  int up[kMaxAgents];
  size_t n = 0;
  for (size_t i = 0; i < agents_.size(); ++i) {
    const Agent& agent = *agents_[i];
    if (!Up(agent)) continue;
    if (near != nullptr) {
      for (const auto& ip : agent.ips) {
        if (SameIp(ip, *near)) return static_cast<int>(i);
      }
    }
    if (n < std::size(up)) up[n++] = static_cast<int>(i);
  }
  return n == 0 ? -1 : up[spread % n];
}

void AgentPool::MarkDown(Agent& agent, const std::string& why) {
  agent.failures.fetch_add(1, std::memory_order_relaxed);
  // Closed after the lock is let go (declared before it).
  std::vector<std::unique_ptr<AgentClient>> drop;
#ifdef FGDS_HAVE_RDMA
  std::vector<std::unique_ptr<RdmaAgentLink>> drop_rdma;
#endif
  fgds::MutexLock lock(&agent.mu);
  agent.last_error = why;
  agent.down_until_ns.store(
      NowNs() + int64_t{options_.retry_after_ms} * 1000000,
      std::memory_order_relaxed);
  drop.swap(agent.idle);  // their connections are likely gone too
#ifdef FGDS_HAVE_RDMA
  drop_rdma.swap(agent.rdma_idle);
#endif
  if (!agent.logged_down) {
    agent.logged_down = true;
    fprintf(stderr,
            "fgds: agent %s is down, its extents go through the backend's "
            "own path until it answers (retried every %d ms): %s\n",
            agent.name.c_str(), options_.retry_after_ms, why.c_str());
  }
}

std::unique_ptr<AgentClient> AgentPool::Borrow(Agent& agent, int* error) {
  {
    fgds::MutexLock lock(&agent.mu);
    if (!agent.idle.empty()) {
      auto client = std::move(agent.idle.back());
      agent.idle.pop_back();
      return client;
    }
  }
  AgentClientOptions o;
  o.agent = agent.address;
  o.key = options_.key;
  o.checked = options_.checked;
  o.deferred_sync = options_.deferred_sync;
  o.connect_timeout_ms = options_.connect_timeout_ms;
  o.io_timeout_ms = options_.io_timeout_ms;
  // A client id of its own (Connect picks one): the agent applies each
  // (client id, sequence number) once, and every AgentClient counts its
  // write sequence from 1, so two connections sharing an id would have
  // the second one's writes taken for retries of the first's, and not
  // applied.
  o.client_id = 0;
  agent.connects.fetch_add(1, std::memory_order_relaxed);
  auto client = AgentClient::Connect(std::move(o));
  if (!client.ok()) {
    MarkDown(agent, std::string(client.status().message()));
    *error = client.status().code() == absl::StatusCode::kPermissionDenied
                 ? -EACCES
                 : -EHOSTDOWN;
    return nullptr;
  }
  MarkUp(agent);
  return *std::move(client);
}

void AgentPool::MarkUp(Agent& agent) {
  fgds::MutexLock lock(&agent.mu);
  agent.down_until_ns.store(0, std::memory_order_relaxed);
  if (agent.logged_down) {
    agent.logged_down = false;
    fprintf(stderr, "fgds: agent %s answers again\n", agent.name.c_str());
  }
}

void AgentPool::Return(Agent& agent, std::unique_ptr<AgentClient> client) {
  fgds::MutexLock lock(&agent.mu);
  if (agent.idle.size() < options_.max_idle) {
    agent.idle.push_back(std::move(client));
  }
}

int64_t AgentPool::Transfer(int index, bool write, std::string_view name,
                            uint64_t offset, void* buffer, size_t length,
                            const backend::MemoryRegion* region) {
  if (index < 0 || static_cast<size_t>(index) >= agents_.size()) {
    return -EINVAL;
  }
  Agent& agent = *agents_[index];
  const bool device = region != nullptr &&
                      region->kind() == backend::MemoryRegion::Kind::kDevice;
  const bool rdma = agent.address.transport == AgentTransport::kRdma;
  if (device && !rdma) {
    // Not an error of the agent's: the CPU cannot copy GPU memory into a
    // socket, so only a NIC reading the dma-buf can move it.
    NoteGpuFallback(absl::StrCat("agent ", agent.name,
                                 " speaks TCP: GPU iovs move only by RDMA"));
    return -EOPNOTSUPP;
  }
  std::string why;
  const int64_t n =
      rdma ? TransferRdma(agent, write, name, offset, buffer, length, region,
                          &why)
           : TransferTcp(index, write, name, offset, buffer, length);
  if (device && n < 0) {
    if (why.empty()) {
      fgds::MutexLock lock(&agent.mu);
      why = absl::StrCat("agent ", agent.name, ": ", agent.last_error);
    }
    NoteGpuFallback(std::move(why));
  }
  if (n >= 0) {
    (write ? agent.writes : agent.reads)
        .fetch_add(1, std::memory_order_relaxed);
    (write ? agent.write_bytes : agent.read_bytes)
        .fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
  }
  return n;
}

void AgentPool::NoteFileError(Agent& agent, bool write, std::string_view name,
                              int64_t n) {
  // The file's error on the agent's side (its connection is fine).
  fgds::MutexLock lock(&agent.mu);
  agent.last_error =
      absl::StrCat(agent.name, ": ", write ? "write" : "read", " of ",
                   std::string(name), ": ", strerror(static_cast<int>(-n)));
}

int64_t AgentPool::TransferTcp(int index, bool write, std::string_view name,
                               uint64_t offset, void* buffer, size_t length) {
  Agent& agent = *agents_[index];
  int error = 0;
  std::unique_ptr<AgentClient> client = Borrow(agent, &error);
  if (client == nullptr) return error;
  const ClientCounts before = CountsOf(*client);
  const uint32_t instance = client->agent_instance();
  const int64_t n = write ? client->Write(name, offset, buffer, length)
                          : client->Read(name, offset, buffer, length);
  AddCounts(agent, before, CountsOf(*client));
  if (write && n > 0 && client->deferred_sync()) {
    // Requests acknowledged before a reconnection went to the instance
    // before it (the caller's pieces are one request each but for those
    // over max_io).
    if (client->agent_instance() != instance && length > client->max_io()) {
      unsynced_.Note(name, index, instance);
    }
    unsynced_.Note(name, index, client->agent_instance());
  }
  if (n < 0 && !client->connected()) {
    // The connection failed, and so did its one retry: the agent is down.
    MarkDown(agent, client->last_error());
    return n;
  }
  if (n < 0) NoteFileError(agent, write, name, n);
  Return(agent, std::move(client));
  return n;
}

void AgentPool::NoteGpuFallback(std::string why) {
  gpu_fallbacks_.fetch_add(1, std::memory_order_relaxed);
  fgds::MutexLock lock(&gpu_mu_);
  gpu_fallback_reason_ = std::move(why);
}

void AgentPool::NoteGpuBounce(bool always) {
  gpu_bounced_.fetch_add(1, std::memory_order_relaxed);
  if (always) gpu_bounced_always_.fetch_add(1, std::memory_order_relaxed);
}

bool AgentPool::DeviceNeverMoves(const backend::MemoryRegion& region) const {
  if (region.dmabuf_fd() < 0 || !TakesDmabufs() || options_.checked) {
    return true;
  }
#ifdef FGDS_HAVE_RDMA
  return RdmaAgentLink::RegistrationFailed(region);
#else
  return true;
#endif
}

bool AgentPool::TakesDmabufs() const {
#ifdef FGDS_HAVE_RDMA
  for (const auto& agent : agents_) {
    if (agent->address.transport == AgentTransport::kRdma) return true;
  }
#endif
  return false;
}

int64_t AgentPool::TransferRdma(Agent& agent, bool write, std::string_view name,
                                uint64_t offset, void* buffer, size_t length,
                                const backend::MemoryRegion* region,
                                std::string* why) {
#ifdef FGDS_HAVE_RDMA
  std::unique_ptr<RdmaAgentLink> link;
  {
    fgds::MutexLock lock(&agent.mu);
    if (!agent.rdma_idle.empty()) {
      link = std::move(agent.rdma_idle.back());
      agent.rdma_idle.pop_back();
    }
  }
  if (link == nullptr) {
    RdmaAgentClientOptions o;
    o.agent = agent.address;
    o.key = options_.key;
    o.connect_timeout_ms = options_.connect_timeout_ms;
    o.io_timeout_ms = options_.io_timeout_ms;
    o.client_id = 0;  // one of its own, as TCP clients (Borrow)
    o.checked = options_.checked;
    agent.connects.fetch_add(1, std::memory_order_relaxed);
    absl::StatusOr<std::unique_ptr<RdmaAgentLink>> made;
    std::shared_ptr<RdmaProtectionDomain> pd;
    {
      fgds::MutexLock lock(&rdma_mu_);
      pd = rdma_pd_;
    }
    if (pd != nullptr) {
      o.pd = std::move(pd);
      made = RdmaAgentLink::Connect(std::move(o), options_.rdma_staging_bytes);
    } else {
      // The first link makes the domain: held while it connects, so that
      // two first links do not make two.
      fgds::MutexLock lock(&rdma_mu_);
      o.pd = rdma_pd_;
      made = RdmaAgentLink::Connect(std::move(o), options_.rdma_staging_bytes);
      if (made.ok() && rdma_pd_ == nullptr) rdma_pd_ = (*made)->domain();
    }
    if (!made.ok()) {
      MarkDown(agent, std::string(made.status().message()));
      return made.status().code() == absl::StatusCode::kPermissionDenied
                 ? -EACCES
                 : -EHOSTDOWN;
    }
    link = *std::move(made);
    MarkUp(agent);
  }
  RdmaTransferNote note;
  const ClientCounts before = CountsOf(*link);
  const int64_t n =
      link->Transfer(write, name, offset, buffer, length, region, &note);
  AddCounts(agent, before, CountsOf(*link));
  if (note.registration_made) {
    agent.registrations.fetch_add(1, std::memory_order_relaxed);
  }
  if (note.registration_failed) {
    agent.registration_failures.fetch_add(1, std::memory_order_relaxed);
    fgds::MutexLock lock(&agent.mu);
    agent.registration_error = note.registration_error;
  }
  if (note.refused) {
    // Device memory the link could not take: the agent is fine.
    *why = absl::StrCat("agent ", agent.name, ": ", note.registration_error);
  } else if (n < 0 && !link->connected()) {
    MarkDown(agent, link->last_error());
    return n;
  }
  if (n < 0) {
    if (!note.refused) NoteFileError(agent, write, name, n);
  } else {
    (note.registered ? agent.in_place : agent.staged)
        .fetch_add(1, std::memory_order_relaxed);
  }
  fgds::MutexLock lock(&agent.mu);
  if (agent.rdma_idle.size() < options_.max_idle) {
    agent.rdma_idle.push_back(std::move(link));
  }
  return n;
#else
  (void)write, (void)name, (void)offset, (void)buffer, (void)length;
  (void)region, (void)why;
  MarkDown(agent,
           "this fgds was built without RDMA (FGDS_RDMA=OFF, or no "
           "libibverbs-dev/librdmacm-dev)");
  return -EHOSTDOWN;
#endif
}

int64_t AgentPool::Read(int agent, std::string_view name, uint64_t offset,
                        void* out, size_t length,
                        const backend::MemoryRegion* region) {
  return Transfer(agent, false, name, offset, out, length, region);
}

int64_t AgentPool::Write(int agent, std::string_view name, uint64_t offset,
                         const void* data, size_t length,
                         const backend::MemoryRegion* region) {
  // The clients only read a write's buffer.
  return Transfer(agent, true, name, offset, const_cast<void*>(data), length,
                  region);
}

backend::IoPath AgentPool::PathOf(int agent) const {
  if (agent >= 0 && static_cast<size_t>(agent) < agents_.size() &&
      agents_[agent]->address.transport == AgentTransport::kRdma) {
    return backend::IoPath::kAgentRdma;
  }
  return backend::IoPath::kAgentTcp;
}

void AgentPool::AddCounts(Agent& agent, const ClientCounts& before,
                          const ClientCounts& now) {
  agent.retries.fetch_add(now.retries - before.retries,
                          std::memory_order_relaxed);
  agent.crc_errors.fetch_add(now.crc_errors - before.crc_errors,
                             std::memory_order_relaxed);
}

int AgentPool::Sync(std::string_view name, uint64_t* told, bool fsync) {
  UnsyncedWrites::Sync sync = unsynced_.BeginSync(name);
  int result = 0;
  for (const UnsyncedWrites::Pending& pending : sync.pending) {
    if (pending.agent < 0 ||
        static_cast<size_t>(pending.agent) >= agents_.size()) {
      continue;
    }
    const int rc = SyncAgent(*agents_[pending.agent], name, pending);
    if (rc < 0 && result == 0) result = rc;
  }
  unsynced_.EndSync(name, sync, result);
  // This sync's failure is the newest (Check marks it told with fsync),
  // or an earlier one that another handle's sync or close met (a sync
  // this one waited for, too).
  const int earlier = unsynced_.Check(name, told, fsync);
  return result < 0 ? result : earlier;
}

int AgentPool::SyncAgent(Agent& agent, std::string_view name,
                         const UnsyncedWrites::Pending& pending) {
  // Every failure here may have lost acknowledged writes: logged each
  // time (it is rare, and the application sees only an errno).
  auto failed = [&](int err, const std::string& why) {
    agent.sync_errors.fetch_add(1, std::memory_order_relaxed);
    const std::string text =
        absl::StrCat(agent.name, ": sync of ", std::string(name), ": ", why);
    fprintf(stderr, "fgds: agent %s\n", text.c_str());
    fgds::MutexLock lock(&agent.mu);
    agent.last_error = text;
    return err;
  };
  if (pending.lost) {
    return failed(-EIO,
                  "the agent restarted after it acknowledged writes; those "
                  "it had not synced are lost");
  }
  int error = 0;
  std::unique_ptr<AgentClient> client = Borrow(agent, &error);
  if (client == nullptr) {
    return failed(-EIO,
                  "unreachable; the writes it had not synced may be "
                  "lost");
  }
  const ClientCounts before = CountsOf(*client);
  const int rc = client->Sync(name);
  AddCounts(agent, before, CountsOf(*client));
  agent.syncs.fetch_add(1, std::memory_order_relaxed);
  const bool restarted = client->agent_instance() != pending.instance;
  if (rc < 0 && !client->connected()) {
    MarkDown(agent, client->last_error());
    return failed(-EIO, absl::StrCat(client->last_error(),
                                     "; the writes it had not synced may be "
                                     "lost"));
  }
  Return(agent, std::move(client));
  if (restarted) {
    return failed(-EIO,
                  "the agent restarted after it acknowledged writes; those "
                  "it had not synced are lost");
  }
  if (rc < 0) return failed(rc, strerror(-rc));
  return 0;
}

void AgentPool::Fallback(int agent, const backend::MemoryRegion* region) {
  if (agent < 0 || static_cast<size_t>(agent) >= agents_.size()) {
    unrouted_.fetch_add(1, std::memory_order_relaxed);
    if (region != nullptr &&
        region->kind() == backend::MemoryRegion::Kind::kDevice) {
      NoteGpuFallback("no agent up");
    }
    return;
  }
  agents_[agent]->fallbacks.fetch_add(1, std::memory_order_relaxed);
}

std::string AgentPool::StatsText() const {
  std::string text;
  for (const auto& a : agents_) {
    std::string last_error, registration_error;
    {
      fgds::MutexLock lock(&a->mu);
      last_error = a->last_error;
      registration_error = a->registration_error;
    }
    const bool rdma = a->address.transport == AgentTransport::kRdma;
    absl::StrAppend(
        // Down from a failure until a connection succeeds again (MarkUp),
        // also once its retry is due: Up() says only that it may be tried.
        &text, "# agent ", a->name, ": state=",
        a->down_until_ns.load(std::memory_order_relaxed) == 0 ? "up" : "down",
        " path=", rdma ? "rdma" : "tcp",
        " reads=", a->reads.load(std::memory_order_relaxed),
        " read_bytes=", a->read_bytes.load(std::memory_order_relaxed),
        " writes=", a->writes.load(std::memory_order_relaxed),
        " write_bytes=", a->write_bytes.load(std::memory_order_relaxed),
        " fallbacks=", a->fallbacks.load(std::memory_order_relaxed),
        " connects=", a->connects.load(std::memory_order_relaxed),
        " failures=", a->failures.load(std::memory_order_relaxed),
        " retries=", a->retries.load(std::memory_order_relaxed),
        " crc_errors=", a->crc_errors.load(std::memory_order_relaxed),
        " syncs=", a->syncs.load(std::memory_order_relaxed),
        " sync_errors=", a->sync_errors.load(std::memory_order_relaxed),
        " last_error=\"", last_error, "\"");
    if (rdma) {
      absl::StrAppend(&text,
                      " in_place=", a->in_place.load(std::memory_order_relaxed),
                      " staged=", a->staged.load(std::memory_order_relaxed),
                      " iov_registrations=",
                      a->registrations.load(std::memory_order_relaxed),
                      " iov_registration_failures=",
                      a->registration_failures.load(std::memory_order_relaxed),
                      " registration_error=\"", registration_error, "\"");
    }
    absl::StrAppend(&text, "\n");
  }
  std::string gpu_reason;
  {
    fgds::MutexLock lock(&gpu_mu_);
    gpu_reason = gpu_fallback_reason_;
  }
  absl::StrAppend(
      &text, "# agents: fallbacks_no_agent_up=",
      unrouted_.load(std::memory_order_relaxed),
      " gpu_fallbacks=", gpu_fallbacks_.load(std::memory_order_relaxed),
      " gpu_fallback_reason=\"", gpu_reason,
      "\" gpu_bounced=", gpu_bounced_.load(std::memory_order_relaxed),
      " gpu_bounced_for_good=",
      gpu_bounced_always_.load(std::memory_order_relaxed), "\n");
  return text;
}

}  // namespace fgds::remote
