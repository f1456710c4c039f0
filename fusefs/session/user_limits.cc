#include "fusefs/session/user_limits.h"

#include <cerrno>
#include <new>
#include <utility>

#include "fgds/usrbio.h"

namespace fgds::session {
namespace {

// Whether `held` + `more` stays within `limit`, without overflowing.
bool Fits(uint64_t held, uint64_t more, uint64_t limit) {
  return more <= limit && held <= limit - more;
}

Usage Plus(const Usage& a, const Usage& b) {
  return {a.sessions + b.sessions,
          a.rings + b.rings,
          a.ring_entries + b.ring_entries,
          a.mappings + b.mappings,
          a.bytes + b.bytes,
          a.files + b.files};
}

Usage Minus(const Usage& a, const Usage& b) {
  return {a.sessions - b.sessions,
          a.rings - b.rings,
          a.ring_entries - b.ring_entries,
          a.mappings - b.mappings,
          a.bytes - b.bytes,
          a.files - b.files};
}

bool IsZero(const Usage& u) {
  return u.sessions == 0 && u.rings == 0 && u.ring_entries == 0 &&
         u.mappings == 0 && u.bytes == 0 && u.files == 0;
}

// The per-user limit `user` + `more` would pass (FGDS_LIMIT_NONE: none).
uint32_t PerUserRefusal(const Usage& user, const Usage& more,
                        const Usage& limit) {
  if (!Fits(user.sessions, more.sessions, limit.sessions)) {
    return FGDS_LIMIT_USER_SESSIONS;
  }
  if (!Fits(user.rings, more.rings, limit.rings)) return FGDS_LIMIT_USER_RINGS;
  if (!Fits(user.ring_entries, more.ring_entries, limit.ring_entries)) {
    return FGDS_LIMIT_USER_RING_ENTRIES;
  }
  if (!Fits(user.mappings, more.mappings, limit.mappings)) {
    return FGDS_LIMIT_USER_MAPPINGS;
  }
  if (!Fits(user.bytes, more.bytes, limit.bytes)) return FGDS_LIMIT_USER_BYTES;
  if (!Fits(user.files, more.files, limit.files)) return FGDS_LIMIT_USER_FILES;
  return FGDS_LIMIT_NONE;
}

}  // namespace

Charge::Charge(Charge&& other) noexcept
    : owner_(std::move(other.owner_)),
      uid_(other.uid_),
      amount_(other.amount_) {
  other.owner_ = nullptr;
}

Charge& Charge::operator=(Charge&& other) noexcept {
  if (this != &other) {
    Release();
    owner_ = std::move(other.owner_);
    other.owner_ = nullptr;
    uid_ = other.uid_;
    amount_ = other.amount_;
  }
  return *this;
}

void Charge::Release() {
  if (owner_ == nullptr) return;
  owner_->Give(uid_, amount_);
  owner_ = nullptr;
}

int UserLimits::Take(const std::shared_ptr<UserLimits>& limits, uid_t uid,
                     const Usage& amount, Charge* charge, uint32_t* refused) {
  *refused = FGDS_LIMIT_NONE;
  if (limits == nullptr) return 0;
  UserLimits& self = *limits;
  {
    fgds::MutexLock lock(&self.mu_);
    auto it = self.users_.find(uid);
    const Usage held = it == self.users_.end() ? Usage{} : it->second;
    *refused = PerUserRefusal(held, amount, self.config_.per_user);
    if (*refused != FGDS_LIMIT_NONE) return -EDQUOT;
    if (!Fits(self.total_.mappings, amount.mappings,
              self.config_.daemon_mappings)) {
      *refused = FGDS_LIMIT_DAEMON_MAPPINGS;
      return -EAGAIN;
    }
    if (!Fits(self.total_.bytes, amount.bytes, self.config_.daemon_bytes)) {
      *refused = FGDS_LIMIT_DAEMON_BYTES;
      return -EAGAIN;
    }
    if (!Fits(self.total_.files, amount.files, self.config_.daemon_files)) {
      *refused = FGDS_LIMIT_DAEMON_FILES;
      return -EAGAIN;
    }
    try {
      // A new user's entry may need memory: nothing was changed yet.
      self.users_[uid] = Plus(held, amount);
    } catch (const std::bad_alloc&) {
      return -ENOMEM;
    }
    self.total_ = Plus(self.total_, amount);
  }
  charge->Release();
  charge->owner_ = limits;
  charge->uid_ = uid;
  charge->amount_ = amount;
  return 0;
}

void UserLimits::Give(uid_t uid, const Usage& amount) {
  fgds::MutexLock lock(&mu_);
  auto it = users_.find(uid);
  if (it == users_.end()) return;  // impossible: a Charge took it
  it->second = Minus(it->second, amount);
  if (IsZero(it->second)) users_.erase(it);
  total_ = Minus(total_, amount);
}

Usage UserLimits::UsageOf(uid_t uid) const {
  fgds::MutexLock lock(&mu_);
  auto it = users_.find(uid);
  return it == users_.end() ? Usage{} : it->second;
}

Usage UserLimits::Total() const {
  fgds::MutexLock lock(&mu_);
  return total_;
}

}  // namespace fgds::session
