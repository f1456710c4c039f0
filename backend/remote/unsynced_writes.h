// File: backend/remote/unsynced_writes.h
//
// UnsyncedWrites: which agents hold writes of which file that they
// acknowledged but have not made durable yet (agents that granted
// kHelloDeferSync), so that the daemon's fsync and close sync exactly
// those agents (AgentPool::Sync), and so that an agent that restarted in
// between, losing what it had buffered, is reported rather than silently
// synced on its new instance.
//
// Example:
//   unsynced.Note("@inode/42", agent, client->agent_instance());
//   UnsyncedWrites::Sync s = unsynced.BeginSync("@inode/42");
//   for (const auto& p : s.pending) ... sync p.agent ...
//   unsynced.EndSync("@inode/42", s, result);
//
// Syncs of one file run one at a time: a second fsync must not return
// while the writes the first one took are still being synced, and it
// reports the first one's failure if that failed while it waited (its
// handle was open then: below).
//
// A failed sync is reported to every handle of the file open when it
// failed, as Linux reports a failed write-back (errseq): a close (Flush)
// reports it each time, an fsync once (it marks the handle as told). So a
// close of the same handle elsewhere (a forked child's copy of the
// descriptor, closed at its exec) does not take the error from the
// writer's fsync. A handle opened after the failure is not told.
//
// Bounded by the files written since their last sync (the daemon syncs a
// file at its fsync and at every close) and by the files open.
//
// Thread safety: every method may be called concurrently.
#ifndef FGDS_BACKEND_REMOTE_UNSYNCED_WRITES_H_
#define FGDS_BACKEND_REMOTE_UNSYNCED_WRITES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"

namespace fgds::remote {

class UnsyncedWrites {
 public:
  struct Pending {
    int agent = 0;
    uint32_t instance = 0;  // the agent process that took the last write
    // The writes went to more than one instance of the agent: the earlier
    // one is gone, with whatever it had not synced.
    bool lost = false;
  };

  struct Sync {
    std::vector<Pending> pending;  // the agents to sync
    bool began = false;            // EndSync is due
  };

  // A write to `name` acknowledged, not yet durable, by `agent` running
  // as `instance`.
  void Note(std::string_view name, int agent, uint32_t instance);
  // Waits for a sync of `name` under way, then takes what `name` has
  // pending: the caller syncs each and calls EndSync if began. Writes
  // noted meanwhile are pending again (for the next sync).
  Sync BeginSync(std::string_view name);
  // `result`: 0, or the -errno the sync returned.
  void EndSync(std::string_view name, const Sync& sync, int result);

  // A handle of `name` opened: returns what it has been told of so far
  // (nothing: failures before the open are not its).
  uint64_t Opened(std::string_view name);
  // A handle of `name` closed.
  void Closed(std::string_view name);
  // The failure of a sync of `name` since `*told` (-errno), or 0. With
  // `mark`, the handle is told (an fsync): later checks report only newer
  // failures.
  int Check(std::string_view name, uint64_t* told, bool mark);
  // Files with writes pending, a sync under way or handles open (for
  // tests and stats).
  size_t files();

 private:
  struct File {
    std::vector<Pending> pending;
    bool syncing = false;
    int waiters = 0;
    int failure = 0;           // the last failed sync's -errno
    uint64_t failure_seq = 0;  // failures_ when it ended
    int opens = 0;             // handles open
  };
  // Erases `it` once nothing needs it.
  void EraseIfIdle(std::unordered_map<std::string, File>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  fgds::Mutex mu_;
  fgds::CondVar synced_;
  uint64_t failures_ ABSL_GUARDED_BY(mu_) = 0;  // failed syncs, all files
  std::unordered_map<std::string, File> files_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_UNSYNCED_WRITES_H_
