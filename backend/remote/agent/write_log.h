// File: backend/remote/agent/write_log.h
//
// WriteLog: applies each daemon's write once, however often it is retried.
// A daemon numbers its writes (IoBody.seq, increasing per client_id) and
// resends one on a new connection when the old one failed before the
// reply came; the agent may have applied it already. As 3FS does for its
// chunk updates, the agent remembers the results of each client's recent
// writes and answers a repeated sequence number with the recorded result
// instead of writing again (a write repeated after a later write to the
// same bytes would otherwise undo that later write).
//
// Bounded: kWritesPerClient results per client and kClients clients, the
// least recently seen forgotten first. A write whose sequence number is
// below what is remembered (a retry, or a request delayed behind more than
// kWritesPerClient later writes) gets -ESTALE rather than a second
// application. A client forgotten because more than kClients others were
// seen since starts afresh: a retry of one of its older writes would be
// applied again. Hence kClients is far above the daemons one agent serves.
//
// Thread safety: all methods may be called concurrently. A retry that
// arrives while the first attempt is still being applied (the old
// connection's thread) waits for that attempt's result.
#ifndef FGDS_BACKEND_REMOTE_AGENT_WRITE_LOG_H_
#define FGDS_BACKEND_REMOTE_AGENT_WRITE_LOG_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <unordered_map>

#include "common/mutex.h"

namespace fgds::remote {

class WriteLog {
 public:
  static constexpr size_t kWritesPerClient = 1024;
  static constexpr size_t kClients = 4096;

  // Runs `apply` for (client_id, seq) unless it ran already, and returns
  // its result (bytes or -errno) either way; *repeated (if given) says
  // whether this call was a repeat that did not run it.
  int64_t ApplyOnce(uint64_t client_id, uint64_t seq,
                    const std::function<int64_t()>& apply,
                    bool* repeated = nullptr);

 private:
  struct Record {
    uint64_t seq;
    bool done;
    int64_t result;
  };
  struct Client {
    std::deque<Record> records;    // in arrival order
    uint64_t forgotten_below = 0;  // seqs below this are no longer known
    std::list<uint64_t>::iterator lru;
  };
  Record* Find(Client& client, uint64_t seq) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EvictOne() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Mutex mu_;
  CondVar done_;
  std::unordered_map<uint64_t, Client> clients_ ABSL_GUARDED_BY(mu_);
  std::list<uint64_t> lru_ ABSL_GUARDED_BY(mu_);  // front: most recent
};

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_AGENT_WRITE_LOG_H_
