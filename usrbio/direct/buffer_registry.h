// File: usrbio/direct/buffer_registry.h
//
// The registered device buffers of one driver, and the fence that makes
// fgds_buf_deregister safe: every I/O on a registered buffer holds a pin on
// its Registration from submission to completion, and Remove waits until
// the pins are gone. (Not the daemon's session Registry, fusefs/session/
// registry.h: that one maps a usrbio session's ids to its iovs and files;
// this one maps device address ranges to fences. Different keys, lifetimes
// and locking, so they stay two classes, with two names.)
#ifndef FGDS_USRBIO_DIRECT_BUFFER_REGISTRY_H_
#define FGDS_USRBIO_DIRECT_BUFFER_REGISTRY_H_

#include <cstdint>
#include <map>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"
#include "usrbio/direct/direct_buffer.h"

namespace fgds::direct {

class BufferRegistry;

// One registered range [base, base + size). Immutable but for the pins
// and its direct-path mappings (internally synchronized).
class Registration {
 public:
  Registration(uint64_t base, uint64_t size, uint64_t buffer_id)
      : base_(base), size_(size), buffer_id_(buffer_id), direct_(base, size) {}

  uint64_t base() const { return base_; }
  uint64_t size() const { return size_; }
  // The CUDA buffer id at registration: a copy into the range checks that
  // the allocation there is still this one.
  uint64_t buffer_id() const { return buffer_id_; }
  // The range's dma-buf and fgds mappings, made on first direct I/O and
  // released when the registration goes (after its I/O drained).
  DirectBuffer& direct() const { return direct_; }

 private:
  friend class BufferRegistry;
  const uint64_t base_;
  const uint64_t size_;
  const uint64_t buffer_id_;
  mutable DirectBuffer direct_;
  int pins_ = 0;  // I/O in flight on it; guarded by BufferRegistry::mu_
};

// Pin keeps a registration's I/O counted until it is destroyed (the
// request completes). Movable, not copyable.
class Pin {
 public:
  Pin() = default;
  Pin(BufferRegistry* registry, std::shared_ptr<Registration> registration)
      : registry_(registry), registration_(std::move(registration)) {}
  ~Pin() { Reset(); }
  Pin(Pin&& other) noexcept { *this = std::move(other); }
  Pin& operator=(Pin&& other) noexcept;
  Pin(const Pin&) = delete;
  Pin& operator=(const Pin&) = delete;

  const Registration* get() const { return registration_.get(); }
  void Reset();

 private:
  BufferRegistry* registry_ = nullptr;
  std::shared_ptr<Registration> registration_;
};

// Thread-safe.
class BufferRegistry {
 public:
  BufferRegistry() = default;
  BufferRegistry(const BufferRegistry&) = delete;
  BufferRegistry& operator=(const BufferRegistry&) = delete;

  // Add registers [base, base + size). -EEXIST when it overlaps a
  // registered range, -EINVAL for size 0 or an overflowing range.
  int Add(uint64_t base, uint64_t size, uint64_t buffer_id);

  // Acquire looks for the registration holding `address`. Not found: 0 and
  // an empty pin (the I/O runs on unregistered memory). Found: the range
  // [address, address + size) must lie inside it (-EINVAL otherwise), and
  // the pin counts the I/O until released.
  int Acquire(uint64_t address, uint64_t size, Pin* pin);

  // Remove unregisters the range starting at `base` (-ENOENT if none) and
  // returns once every pin on it is released. New Acquire calls no longer
  // see it.
  int Remove(uint64_t base);

  size_t size() const;

 private:
  friend class Pin;
  friend class Registration;
  void Release(Registration* registration);

  mutable fgds::Mutex mu_;
  fgds::CondVar unpinned_;  // some registration's pins_ reached 0
  std::map<uint64_t, std::shared_ptr<Registration>> by_base_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace fgds::direct

#endif  // FGDS_USRBIO_DIRECT_BUFFER_REGISTRY_H_
