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
// Who releases last: a table's reference to an open file may be the last
// one (the owner closed its descriptor first), and the last reference's
// release is real work (an unlinked file's page cache goes with it:
// truncate_inode_pages_range), which must not land on a table's thread (a
// usrbio ring worker, which serves clients). So a table takes a share of
// the key (Hold) for as long as its kernel reference lives, the owner
// hands its descriptor over instead of closing it (CloseWhenUnregistered),
// and the descriptor is closed once no table holds the key: by the owner
// at once where none does, else after the last table let go, on the
// release thread, a single process-wide thread that sleeps while there is
// nothing to close. So the last reference is always the descriptor's, and
// it is never closed on a table's thread (MarkTableThread).
//
// Thread safety: keys are made and destroyed on any thread; the log is
// shared (a mutex, taken only when a marked key dies or a table catches
// up); holds are reference counts (atomics, one pair per registration, not
// per read).
#ifndef FGDS_BACKEND_REGISTRATION_KEY_H_
#define FGDS_BACKEND_REGISTRATION_KEY_H_

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

namespace fgds::backend {

// A table's share of a key (registration_key.cc): what keeps the owner's
// descriptor open while the table's kernel reference lives.
class RegistrationHold;

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
  // A table is about to register this key's open file: marks the key and
  // returns the table's share, which it gives back (ReleaseHold) once its
  // kernel reference is gone. Null when out of memory: the table must
  // then not register the file. Call as MarkRegistered, while the object
  // is in use.
  RegistrationHold* Hold() const;
  // The owner's descriptor of the object (the open file tables register)
  // is to be closed; call it before the key is destroyed, instead of
  // close(2). Closed at once where no table holds the key (off a table's
  // thread: CloseOffTableThreads), else when the last table lets go, on
  // the release thread. At most once per key.
  void CloseWhenUnregistered(int fd) const;

 private:
  const uint64_t value_;
  mutable std::atomic<bool> registered_{false};
  // Made at the first Hold; the key's own share until its destruction.
  mutable std::atomic<RegistrationHold*> hold_{nullptr};
};

// A table let go of its kernel reference (after the system call that
// dropped it): gives the share back. Any thread, also after the key died.
void ReleaseHold(RegistrationHold* hold);

// This thread holds tables and serves clients (a usrbio ring worker marks
// itself at start): descriptors whose last reference it would release go
// to the release thread instead. Unmarked threads close themselves.
void MarkTableThread();
// Closes `fd`: here, unless this thread is a table's (MarkTableThread);
// then on the release thread (here only when that thread cannot be
// started or the queue cannot grow).
void CloseOffTableThreads(int fd);

// For tests: descriptors closed so far by CloseOffTableThreads on the
// calling thread (`here`) and on the release thread (`released`), and the
// release thread's id (0 before it started).
struct RegistrationCloses {
  uint64_t here = 0;
  uint64_t released = 0;
  pid_t release_thread = 0;
};
RegistrationCloses RegistrationClosesSoFar();

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
