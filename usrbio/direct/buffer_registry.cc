#include "usrbio/direct/buffer_registry.h"

#include <cerrno>

namespace fgds::direct {

Pin& Pin::operator=(Pin&& other) noexcept {
  if (this != &other) {
    Reset();
    registry_ = other.registry_;
    registration_ = std::move(other.registration_);
    other.registry_ = nullptr;
  }
  return *this;
}

void Pin::Reset() {
  if (registration_ != nullptr) registry_->Release(registration_.get());
  registration_.reset();
  registry_ = nullptr;
}

int BufferRegistry::Add(uint64_t base, uint64_t size, uint64_t buffer_id) {
  if (size == 0 || base + size < base) return -EINVAL;
  fgds::MutexLock lock(&mu_);
  auto next = by_base_.lower_bound(base);
  if (next != by_base_.end() && next->first < base + size) return -EEXIST;
  if (next != by_base_.begin()) {
    const Registration& previous = *std::prev(next)->second;
    if (previous.base() + previous.size() > base) return -EEXIST;
  }
  by_base_.emplace(base, std::make_shared<Registration>(base, size, buffer_id));
  return 0;
}

int BufferRegistry::Acquire(uint64_t address, uint64_t size, Pin* pin) {
  fgds::MutexLock lock(&mu_);
  auto it = by_base_.upper_bound(address);
  if (it == by_base_.begin()) return 0;
  --it;
  const std::shared_ptr<Registration>& registration = it->second;
  const uint64_t offset = address - registration->base();
  if (offset >= registration->size()) return 0;
  if (size > registration->size() - offset) return -EINVAL;
  ++registration->pins_;
  *pin = Pin(this, registration);
  return 0;
}

void BufferRegistry::Release(Registration* registration) {
  fgds::MutexLock lock(&mu_);
  if (--registration->pins_ == 0) unpinned_.SignalAll();
}

int BufferRegistry::Remove(uint64_t base) {
  fgds::MutexLock lock(&mu_);
  auto it = by_base_.find(base);
  if (it == by_base_.end()) return -ENOENT;
  std::shared_ptr<Registration> registration = std::move(it->second);
  by_base_.erase(it);
  // The fence: I/O pinned before the erase may still be copying into the
  // range; the caller is about to free it.
  while (registration->pins_ != 0) unpinned_.Wait(&mu_);
  return 0;
}

size_t BufferRegistry::size() const {
  fgds::MutexLock lock(&mu_);
  return by_base_.size();
}

}  // namespace fgds::direct
