// File: fusefs/session/sqe_check.h
//
// CheckSqe: the validation of one submission entry, after the ring worker
// copied it out of shared memory (the client may rewrite the slot at any
// moment; only the copy is looked at). A failed check fails just that entry.
// Pure apart from registry lookups and, for large aligned reads, a
// page-cache query (common/page_cache.h), so it is unit-tested rule by rule
// (sqe_check_test.cc) and fuzzed (tests/fuzz/sqe_fuzz.cc).
#ifndef FGDS_FUSEFS_SESSION_SQE_CHECK_H_
#define FGDS_FUSEFS_SESSION_SQE_CHECK_H_

#include <cstdint>
#include <memory>

#include "fgds/usrbio_ring.h"
#include "fusefs/session/registry.h"

namespace fgds::session {

// The largest length of one entry. Larger transfers are split by the client
// (the backend's io_uring lengths are 32-bit).
inline constexpr uint64_t kMaxSqeLen = uint64_t{1} << 30;
// O_DIRECT needs buffer, offset and length aligned to the logical block;
// 4096 covers every common device.
inline constexpr uint64_t kDirectAlign = 4096;
// Aligned reads of at least this many bytes whose pages are all in the page
// cache are served from it (FGDS_PATH_PAGE_CACHE) instead of O_DIRECT.
inline constexpr uint64_t kCachedReadCheckMin = uint64_t{64} << 10;

// What a valid entry resolves to.
struct CheckedIo {
  bool write = false;
  // FGDS_OP_FSYNC: fd is the one to sync; buf, len, offset and iov unused.
  bool sync = false;
  bool datasync = false;
  int fd = -1;  // the descriptor to use (direct or buffered)
  char* buf = nullptr;
  uint64_t len = 0;
  uint64_t offset = 0;
  uint32_t path = FGDS_PATH_NONE;  // FGDS_PATH_DIRECT or _PAGE_CACHE
  // The registry's entries, valid while its lock is held: the caller copies
  // them to keep the memory and the descriptors alive while the I/O runs.
  const std::shared_ptr<SharedMemory>* iov = nullptr;
  const std::shared_ptr<RegisteredFile>* file = nullptr;
};

// Returns 0 and fills *out, or:
//   -EINVAL  nonzero reserved fields, unknown opcode or flags, an fsync
//            with a nonzero iov, offset or length, FGDS_SQE_DATASYNC on a
//            read or write, zero or
//            oversized length, an iov id this session does not have, a range
//            outside the iov, a file range past the largest offset, or
//            an unaligned or buffered entry on a direct_only (GPU) iov;
//   -EBADF   a file id this session does not have;
//   -EACCES  a read from a file registered write-only, or the reverse;
//   -EOPNOTSUPP  an aligned entry on a direct_only iov for a file the
//            backing filesystem cannot open O_DIRECT;
//   -EXDEV   an entry on a direct_only iov for a file on another device
//            than the one the iov was mapped for.
// `ring_flags` are the ior's FGDS_IOR_* flags.
// REQUIRES: a ReaderLock on registry.mu().
int CheckSqe(const fgds_sqe& sqe, const Registry& registry, uint32_t ring_flags,
             CheckedIo* out) ABSL_SHARED_LOCKS_REQUIRED(registry.mu());

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_SQE_CHECK_H_
