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
  HostPort address;
  std::string name;                          // "HOST:PORT"
  std::vector<struct sockaddr_storage> ips;  // what the host resolved to
  std::atomic<int64_t> down_until_ns{0};     // steady clock; 0: up
  fgds::Mutex mu;
  std::vector<std::unique_ptr<AgentClient>> idle ABSL_GUARDED_BY(mu);
  std::string last_error ABSL_GUARDED_BY(mu);
  bool logged_down ABSL_GUARDED_BY(mu) = false;
  std::atomic<uint64_t> reads{0}, read_bytes{0}, writes{0}, write_bytes{0};
  std::atomic<uint64_t> fallbacks{0}, connects{0}, failures{0};
  std::atomic<uint64_t> retries{0}, crc_errors{0}, syncs{0}, sync_errors{0};
};

AgentPool::AgentPool(AgentPoolOptions options) : options_(std::move(options)) {}

AgentPool::~AgentPool() = default;

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
  for (const HostPort& address : pool->options_.agents) {
    auto agent = std::make_unique<Agent>();
    agent->address = address;
    agent->name = absl::StrCat(address.host, ":", address.port);
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
  std::vector<std::unique_ptr<AgentClient>> drop;
  fgds::MutexLock lock(&agent.mu);
  agent.last_error = why;
  agent.down_until_ns.store(
      NowNs() + int64_t{options_.retry_after_ms} * 1000000,
      std::memory_order_relaxed);
  drop.swap(agent.idle);  // their connections are likely gone too
  if (!agent.logged_down) {
    agent.logged_down = true;
    fprintf(stderr,
            "fgds: agent %s is down, its extents go through libcephfs until "
            "it answers (retried every %d ms): %s\n",
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
  fgds::MutexLock lock(&agent.mu);
  agent.down_until_ns.store(0, std::memory_order_relaxed);
  if (agent.logged_down) {
    agent.logged_down = false;
    fprintf(stderr, "fgds: agent %s answers again\n", agent.name.c_str());
  }
  return *std::move(client);
}

void AgentPool::Return(Agent& agent, std::unique_ptr<AgentClient> client) {
  fgds::MutexLock lock(&agent.mu);
  if (agent.idle.size() < options_.max_idle) {
    agent.idle.push_back(std::move(client));
  }
}

int64_t AgentPool::Transfer(int index, bool write, std::string_view name,
                            uint64_t offset, void* buffer, size_t length) {
  if (index < 0 || static_cast<size_t>(index) >= agents_.size()) {
    return -EINVAL;
  }
  Agent& agent = *agents_[index];
  int error = 0;
  std::unique_ptr<AgentClient> client = Borrow(agent, &error);
  if (client == nullptr) return error;
  const ClientCounts before = CountsOf(*client);
  const uint32_t instance = client->agent_instance();
  const int64_t n = write ? client->Write(name, offset, buffer, length)
                          : client->Read(name, offset, buffer, length);
  AddCounts(agent, *client, before);
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
  if (n < 0) {
    // The file's error on the agent's side (its connection is fine).
    fgds::MutexLock lock(&agent.mu);
    agent.last_error =
        absl::StrCat(agent.name, ": ", write ? "write" : "read", " of ",
                     std::string(name), ": ", strerror(static_cast<int>(-n)));
  } else {
    (write ? agent.writes : agent.reads)
        .fetch_add(1, std::memory_order_relaxed);
    (write ? agent.write_bytes : agent.read_bytes)
        .fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
  }
  Return(agent, std::move(client));
  return n;
}

int64_t AgentPool::Read(int agent, std::string_view name, uint64_t offset,
                        void* out, size_t length) {
  return Transfer(agent, false, name, offset, out, length);
}

int64_t AgentPool::Write(int agent, std::string_view name, uint64_t offset,
                         const void* data, size_t length) {
  // The client only reads a write's buffer.
  return Transfer(agent, true, name, offset, const_cast<void*>(data), length);
}

AgentPool::ClientCounts AgentPool::CountsOf(const AgentClient& client) {
  return {client.retries(), client.crc_errors()};
}

void AgentPool::AddCounts(Agent& agent, const AgentClient& client,
                          const ClientCounts& before) {
  const ClientCounts now = CountsOf(client);
  agent.retries.fetch_add(now.retries - before.retries,
                          std::memory_order_relaxed);
  agent.crc_errors.fetch_add(now.crc_errors - before.crc_errors,
                             std::memory_order_relaxed);
}

int AgentPool::Sync(std::string_view name) {
  UnsyncedWrites::Sync sync = unsynced_.BeginSync(name);
  int result = sync.earlier_error;
  for (const UnsyncedWrites::Pending& pending : sync.pending) {
    if (pending.agent < 0 ||
        static_cast<size_t>(pending.agent) >= agents_.size()) {
      continue;
    }
    const int rc = SyncAgent(*agents_[pending.agent], name, pending);
    if (rc < 0 && result == 0) result = rc;
  }
  unsynced_.EndSync(name, sync, result);
  return result;
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
  AddCounts(agent, *client, before);
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

void AgentPool::Fallback(int agent) {
  if (agent < 0 || static_cast<size_t>(agent) >= agents_.size()) {
    unrouted_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  agents_[agent]->fallbacks.fetch_add(1, std::memory_order_relaxed);
}

std::string AgentPool::StatsText() const {
  std::string text;
  for (const auto& a : agents_) {
    std::string last_error;
    {
      fgds::MutexLock lock(&a->mu);
      last_error = a->last_error;
    }
    absl::StrAppend(
        &text, "# agent ", a->name, ": state=", Up(*a) ? "up" : "down",
        " path=tcp reads=", a->reads.load(std::memory_order_relaxed),
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
        " last_error=\"", last_error, "\"\n");
  }
  absl::StrAppend(&text, "# agents: fallbacks_no_agent_up=",
                  unrouted_.load(std::memory_order_relaxed), "\n");
  return text;
}

}  // namespace fgds::remote
