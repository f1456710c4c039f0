#include "fusefs/session/refusal_log.h"

#include <time.h>

#include <new>
#include <vector>

#include "absl/strings/str_cat.h"

namespace fgds::session {

bool RefusalLog::Admit(uid_t uid, uint64_t now_ns, uint64_t* suppressed) {
  *suppressed = 0;
  fgds::MutexLock lock(&mu_);
  auto it = users_.find(uid);
  if (it == users_.end()) {
    if (users_.size() >= kPruneAt) {
      // Drop users quiet for an interval: they would be admitted anyway,
      // and only their suppressed counts (none) would be lost.
      absl::erase_if(users_, [&](const auto& entry) {
        return now_ns - entry.second.last_ns >= interval_ns_ &&
               entry.second.suppressed == 0;
      });
    }
    try {
      users_[uid] = Entry{now_ns, 0};
    } catch (const std::bad_alloc&) {
      // No room to remember him: log (a line is cheaper than silence
      // about a refusal), unlimited only while memory is short.
    }
    return true;
  }
  Entry& entry = it->second;
  if (now_ns - entry.last_ns < interval_ns_) {
    ++entry.suppressed;
    return false;
  }
  *suppressed = entry.suppressed;
  entry = Entry{now_ns, 0};
  return true;
}

bool RefusalLog::Admit(uid_t uid, uint64_t* suppressed) {
  timespec ts = {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return Admit(uid,
               static_cast<uint64_t>(ts.tv_sec) * 1000000000u +
                   static_cast<uint64_t>(ts.tv_nsec),
               suppressed);
}

size_t RefusalLog::tracked() const {
  fgds::MutexLock lock(&mu_);
  return users_.size();
}

std::string SuppressedNote(uint64_t suppressed) {
  if (suppressed == 0) return "";
  return absl::StrCat(" (", suppressed,
                      " more refusals of this user since the last line were "
                      "not logged)");
}

}  // namespace fgds::session
