// File: backend/local/nowait_reader.h
//
// ReadNowait: reads a batch of file ranges from the page cache without ever
// waiting for the disk (RWF_NOWAIT), in one io_uring_enter per batch on an
// io_uring the calling thread owns, instead of one preadv2 system call per
// range. Issue 17: a usrbio ring worker copies its rings' cached 4 KiB reads
// itself (local_io.cc, kIoInlineIfCached), and the per-entry system call was
// most of its cost on the device machine (docs/usrbio.md, "Where the time
// goes").
//
// Each read completes inside the call (RWF_NOWAIT never blocks): the bytes,
// fewer at end of file or when only part is cached, or -errno (-EAGAIN:
// pages missing or locked; -EOPNOTSUPP: the file system refuses
// RWF_NOWAIT). The caller sends anything but a whole read to its engine.
//
// The io_uring is the thread's own (thread_local, created at the thread's
// first batch, closed at its exit; single issuer, completions run on the
// thread), so nothing is shared or locked. Where io_uring cannot be set up
// (disabled by sysctl, old kernel, out of memory) or a submission fails,
// the thread reads each range with preadv2(RWF_NOWAIT) as before: slower,
// same results.
//
// Fixed files and buffers (issue 17, third round): a read that names its
// file's and its memory region's RegistrationKey (registration_key.h) goes
// through the ring's registered file table (IOSQE_FIXED_FILE: no fget/fput,
// two atomic operations on the open file's shared counter, per read) and
// its registered buffer table (IORING_OP_READ_FIXED into pages pinned once:
// no per-read import of the user address). Each thread registers what it
// meets, keyed by the never-reused keys, in small tables (evicting round
// robin, never a slot the batch being prepared uses); a registered region
// is pinned in 1 MiB windows, only those its reads touch, so a large iov
// the client barely uses is not faulted in and pinned whole. What the
// tables hold goes when its key is retired (checked at each batch) and
// when the thread goes idle (ReleaseNowaitRegistrations), so neither a
// closed file nor a dead client's memory stays held by a sleeping worker.
// A file slot holds a share of its key (RegistrationKey::Hold) until the
// slot is dropped, so the owner's descriptor outlives the table's
// reference and the file's last release never happens here.
// Where registration fails (old kernel, memory that cannot be pinned) the
// read goes by descriptor and address as before.
//
// Thread safety: any thread; each uses its own ring.
#ifndef FGDS_BACKEND_LOCAL_NOWAIT_READER_H_
#define FGDS_BACKEND_LOCAL_NOWAIT_READER_H_

#include <cstdint>
#include <span>

#include "backend/registration_key.h"

namespace fgds::backend {

struct NowaitRead {
  int fd = -1;
  void* buf = nullptr;
  uint32_t len = 0;
  uint64_t offset = 0;
  int64_t result = 0;  // out: bytes read or -errno
  // Optional (null: by descriptor): the open file `fd` belongs to, alive
  // for the call.
  const RegistrationKey* file_key = nullptr;
  // Optional (null: by address): the mapped region [region_base,
  // region_base + region_size) that holds [buf, buf + len), alive and
  // mapped for the call.
  const RegistrationKey* region_key = nullptr;
  const char* region_base = nullptr;
  uint64_t region_size = 0;
};

// Reads every entry of `reads` as described above; sets each `result`.
void ReadNowait(std::span<NowaitRead> reads);

// Process-wide: false makes every thread read with preadv2 (the daemon's
// --usrbio-inline-uring 0, to compare the two or to step around a kernel's
// io_uring). Default true.
void SetNowaitUring(bool use);

// Process-wide: false stops registering files and buffers (the daemon's
// --usrbio-fixed 0); what threads hold goes at their next batch. Default
// true.
void SetNowaitFixed(bool use);

// Drops every file and buffer this thread's ring holds registered: for a
// thread about to sleep (the ring workers, after an idle wait). Cheap when
// it holds none.
void ReleaseNowaitRegistrations();
// Whether this thread's ring holds any registration now.
bool NowaitHoldsRegistrations();

// For tests: how many files and buffer windows this thread's ring holds
// registered, and how many of this thread's reads went through a fixed
// file and a fixed buffer so far.
struct NowaitFixedStats {
  unsigned files = 0;
  unsigned buffers = 0;
  uint64_t fixed_file_reads = 0;
  uint64_t fixed_buffer_reads = 0;
};
NowaitFixedStats NowaitThreadFixedStats();

// For tests: whether this thread's batches go through its io_uring (false:
// not set up yet, or fell back to preadv2).
bool NowaitUsesUring();
// For tests: make this thread read with preadv2 from now on, as after a
// failed setup.
void NowaitForceFallback();

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_LOCAL_NOWAIT_READER_H_
