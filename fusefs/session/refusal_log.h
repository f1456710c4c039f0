// File: fusefs/session/refusal_log.h
//
// RefusalLog: rate-limits the daemon's log lines about refused usrbio
// requests and sessions, per user. Each refusal is a request a client
// chose to make, so a hostile user could otherwise write a line per
// request into the daemon's log (and the journal every user shares). A
// user gets at most one line per interval; the next line he is given says
// how many were left out before it.
//
// Example:
//   uint64_t suppressed = 0;
//   if (log->Admit(uid, &suppressed)) {
//     LogInfo("... refused ...%s", SuppressedNote(suppressed).c_str());
//   }
//
// Thread safety: thread-safe. Never throws and never blocks on I/O.
#ifndef FGDS_FUSEFS_SESSION_REFUSAL_LOG_H_
#define FGDS_FUSEFS_SESSION_REFUSAL_LOG_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "common/mutex.h"

namespace fgds::session {

class RefusalLog {
 public:
  // One line per user per `interval_ns` (default 5 s).
  explicit RefusalLog(uint64_t interval_ns = uint64_t{5} * 1000000000u)
      : interval_ns_(interval_ns) {}
  RefusalLog(const RefusalLog&) = delete;
  RefusalLog& operator=(const RefusalLog&) = delete;

  // Whether a line about `uid` may be logged now (monotonic `now_ns`);
  // if so, *suppressed is how many were left out since the last one (and
  // the count starts again), else the refusal is counted.
  bool Admit(uid_t uid, uint64_t now_ns, uint64_t* suppressed);
  // The same at the current monotonic time.
  bool Admit(uid_t uid, uint64_t* suppressed);

  // Users tracked; entries of users quiet for an interval are dropped when
  // the table grows (kPruneAt), so it stays bounded by the active users.
  size_t tracked() const;
  static constexpr size_t kPruneAt = 1024;

 private:
  struct Entry {
    uint64_t last_ns = 0;
    uint64_t suppressed = 0;
  };
  const uint64_t interval_ns_;
  mutable fgds::Mutex mu_;
  absl::flat_hash_map<uid_t, Entry> users_ ABSL_GUARDED_BY(mu_);
};

// ", and N more like it in the last interval not logged" for N > 0, else
// "": appended to an admitted line.
std::string SuppressedNote(uint64_t suppressed);

// Admits a line about `uid` through `log` (null: every line is logged).
inline bool AdmitRefusalLine(const std::shared_ptr<RefusalLog>& log, uid_t uid,
                             uint64_t* suppressed) {
  *suppressed = 0;
  return log == nullptr || log->Admit(uid, suppressed);
}

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_REFUSAL_LOG_H_
