// File: backend/registration_key.h
//
// RegistrationKey: a process-wide identity for an object a kernel table may
// hold registered on some thread (io_uring fixed files and fixed buffers of
// the ring workers' own io_urings: backend/local/nowait_reader.h). Issue 17.
//
// Why not the descriptor number or the address: both are reused. A file
// closed and another opened get the same descriptor; an iov unmapped and
// another mapped may get the same address. A table keyed on those would
// read the old file, or copy into the old (still pinned) pages where the
// client no longer looks: silent wrong data. Keys are never reused, so a
// table entry for a gone object can only go unused, never be mistaken for
// a new one.
//
// A registered entry also holds a kernel reference (the open file, the
// pinned pages), which must go when the object does: an unlinked file's
// blocks, a dead client's memory. So a key some table holds
// (MarkRegistered) logs its destruction, and each table drops what the log
// names at its next use (RetiredSince), or drops everything when it fell
// too far behind to tell.
//
// Thread safety: keys are made and destroyed on any thread; the log is
// shared (a mutex, taken only when a marked key dies or a table catches
// up).
#ifndef FGDS_BACKEND_REGISTRATION_KEY_H_
#define FGDS_BACKEND_REGISTRATION_KEY_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

namespace fgds::backend {

class RegistrationKey {
 public:
  RegistrationKey();   // a value never handed out before, never 0
  ~RegistrationKey();  // logs the retirement if marked
  RegistrationKey(const RegistrationKey&) = delete;
  RegistrationKey& operator=(const RegistrationKey&) = delete;

  uint64_t value() const { return value_; }
  // A table is about to hold this key: its destruction must be logged.
  // Call before the kernel registration, while the object is in use (so
  // its destruction comes after, and sees the mark).
  void MarkRegistered() const {
    registered_.store(true, std::memory_order_seq_cst);
  }

 private:
  const uint64_t value_;
  mutable std::atomic<bool> registered_{false};
};

// How many marked keys died so far (a position in the log).
uint64_t RetiredCount();

// Copies into `keys` the keys retired from position `from` on, sets
// `*count` to how many and `*to` to the new position; false when they do
// not fit in `keys` or some are no longer in the log (it keeps the last
// kRetiredLogSize): the caller must then drop everything it holds.
// Allocates nothing.
constexpr uint64_t kRetiredLogSize = 1024;
bool RetiredSince(uint64_t from, uint64_t* to, std::span<uint64_t> keys,
                  size_t* count);

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_REGISTRATION_KEY_H_
