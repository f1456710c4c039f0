// File: fusefs/session/sqe_check.h
//
// CheckSqe: the validation of one submission entry, after the ring worker
// copied it out of shared memory (the client may rewrite the slot at any
// moment; only the copy is looked at). A failed check fails just that entry.
// Pure apart from registry lookups, so it is unit-tested rule by rule
// (sqe_check_test.cc) and fuzzed (tests/fuzz/sqe_fuzz.cc). Whether an entry
// then moves O_DIRECT or through the page cache is the backend's policy
// (backend/local/io_policy.h), not the ring's.
#ifndef FGDS_FUSEFS_SESSION_SQE_CHECK_H_
#define FGDS_FUSEFS_SESSION_SQE_CHECK_H_

#include <cstdint>
#include <memory>

#include "backend/file_io.h"
#include "fgds/usrbio_ring.h"
#include "fusefs/session/registry.h"

namespace fgds::session {

// The largest length of one entry. Larger transfers are split by the client
// (the backend's io_uring lengths are 32-bit).
inline constexpr uint64_t kMaxSqeLen = uint64_t{1} << 30;

// What a valid entry resolves to: a backend request (backend/file_io.h)
// and the references that keep its memory and file alive.
struct CheckedIo {
  bool write = false;
  // FGDS_OP_FSYNC: only `file` and `datasync` matter.
  bool sync = false;
  bool datasync = false;
  backend::File* file = nullptr;
  const backend::MemoryRegion* region = nullptr;
  char* buf = nullptr;
  uint64_t len = 0;
  uint64_t offset = 0;
  // backend::kIo* hints: kIoPreferDirect unless the entry or the ring asks for
  // the page cache; kIoKillPrivileges for writes to a file an unprivileged
  // client registered. How the bytes then move is the backend's decision.
  uint32_t flags = 0;
  // The registry's entries, valid while its lock is held: the caller copies
  // them to keep the memory and the file alive while the I/O runs.
  const std::shared_ptr<SharedMemory>* iov = nullptr;
  const std::shared_ptr<RegisteredFile>* registered = nullptr;
};

// Returns 0 and fills *out, or:
//   -EINVAL  nonzero reserved fields, unknown opcode or flags, an fsync
//            with a nonzero iov, offset or length, FGDS_SQE_DATASYNC on a
//            read or write, zero or oversized length, an iov id this
//            session does not have, a range outside the iov, a file range
//            past the largest offset;
//   -EBADF   a file id this session does not have;
//   -EACCES  a read from a file registered write-only, or the reverse.
// What the backend refuses (device memory it cannot reach) fails later,
// in the entry's completion.
// `ring_flags` are the ior's FGDS_IOR_* flags.
// REQUIRES: a ReaderLock on registry.mu().
int CheckSqe(const fgds_sqe& sqe, const Registry& registry, uint32_t ring_flags,
             CheckedIo* out) ABSL_SHARED_LOCKS_REQUIRED(registry.mu());

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_SQE_CHECK_H_
