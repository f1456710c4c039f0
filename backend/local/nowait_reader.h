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
// Thread safety: any thread; each uses its own ring.
#ifndef FGDS_BACKEND_LOCAL_NOWAIT_READER_H_
#define FGDS_BACKEND_LOCAL_NOWAIT_READER_H_

#include <cstdint>
#include <span>

namespace fgds::backend {

struct NowaitRead {
  int fd = -1;
  void* buf = nullptr;
  uint32_t len = 0;
  uint64_t offset = 0;
  int64_t result = 0;  // out: bytes read or -errno
};

// Reads every entry of `reads` as described above; sets each `result`.
void ReadNowait(std::span<NowaitRead> reads);

// Process-wide: false makes every thread read with preadv2 (the daemon's
// --usrbio-inline-uring 0, to compare the two or to step around a kernel's
// io_uring). Default true.
void SetNowaitUring(bool use);

// For tests: whether this thread's batches go through its io_uring (false:
// not set up yet, or fell back to preadv2).
bool NowaitUsesUring();
// For tests: make this thread read with preadv2 from now on, as after a
// failed setup.
void NowaitForceFallback();

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_LOCAL_NOWAIT_READER_H_
