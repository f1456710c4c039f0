#include "backend/remote/agent/write_log.h"

#include <algorithm>
#include <cerrno>
#include <iterator>

namespace fgds::remote {

WriteLog::Record* WriteLog::Find(Client& client, uint64_t seq) {
  for (Record& r : client.records) {
    if (r.seq == seq) return &r;
  }
  return nullptr;
}

void WriteLog::EvictOne() {
  // The least recently seen client with no write in progress (never the
  // one at the front, which is being served); its retries, if any come,
  // get -ESTALE. If every one is busy the map stays over its bound until
  // one finishes: busy clients are bounded by the agent's connections.
  for (auto it = lru_.rbegin(); it != lru_.rend() && *it != lru_.front();
       ++it) {
    Client& c = clients_.at(*it);
    bool busy = false;
    for (const Record& r : c.records) busy = busy || !r.done;
    if (busy) continue;
    clients_.erase(*it);
    lru_.erase(std::next(it).base());
    return;
  }
}

int64_t WriteLog::ApplyOnce(uint64_t client_id, uint64_t seq,
                            const std::function<int64_t()>& apply,
                            bool* repeated) {
  if (repeated != nullptr) *repeated = true;
  {
    MutexLock lock(&mu_);
    auto [it, inserted] = clients_.try_emplace(client_id);
    Client& client = it->second;
    if (inserted) {
      lru_.push_front(client_id);
      client.lru = lru_.begin();
      if (clients_.size() > kClients) EvictOne();
    } else {
      lru_.splice(lru_.begin(), lru_, client.lru);
    }
    if (seq < client.forgotten_below) return -ESTALE;
    for (;;) {
      Record* r = Find(client, seq);
      if (r == nullptr) break;
      if (r->done) return r->result;
      // `client` stays valid: a client with a write in progress is never
      // evicted.
      done_.Wait(&mu_);
    }
    client.records.push_back({seq, false, 0});
    while (client.records.size() > kWritesPerClient &&
           client.records.front().done) {
      client.forgotten_below =
          std::max(client.forgotten_below, client.records.front().seq + 1);
      client.records.pop_front();
    }
  }
  if (repeated != nullptr) *repeated = false;
  const int64_t result = apply();
  {
    MutexLock lock(&mu_);
    auto it = clients_.find(client_id);
    if (it != clients_.end()) {
      if (Record* r = Find(it->second, seq); r != nullptr) {
        r->done = true;
        r->result = result;
      }
    }
  }
  done_.SignalAll();
  return result;
}

}  // namespace fgds::remote
