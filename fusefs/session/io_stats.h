// File: fusefs/session/io_stats.h
//
// IoStats counts the usrbio entries the daemon completes, for /.fgds/stats
// (`fgds stat`): entries, bytes and errors per operation, per kind of memory
// and per file side, so that an operator can see where the bytes of GPU
// iovs went (straight into GPU memory, or through the library's staging)
// and whether they came from the page cache or the disk.
//
// Memory:
//   host        an ordinary iov (fgds_prep_io on host memory);
//   gpu-bounce  a GPU iov's staging (entries tagged FGDS_SQE_TAG_GPU_STAGING;
//               the tag is the client's word, and only picks the row);
//   gpu-direct  a GPU iov the daemon mapped through the fgds module.
//
// Recording is lock-free and mostly uncontended: each recording thread
// adds to one of kShards cache-line-aligned copies of the counters (relaxed
// atomics), and reads sum the copies. Engine threads of every ring record
// here, once per completion; one shared copy would bounce its cache lines
// between them on small I/O. A snapshot need not be consistent across
// counters. Thread safety: any thread.
#ifndef FGDS_FUSEFS_SESSION_IO_STATS_H_
#define FGDS_FUSEFS_SESSION_IO_STATS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "fusefs/session/ring_stage_stats.h"

namespace fgds::session {

class IoStats {
 public:
  enum class Op : uint8_t { kRead, kWrite, kSync, kCount };
  enum class Memory : uint8_t { kHost, kGpuBounce, kGpuDirect, kCount };
  enum class FileSide : uint8_t { kPageCache, kODirect, kCount };

  // Where one entry's bytes go; chosen when it is checked, recorded when it
  // completes. An fsync is {kSync, kHost, kPageCache}.
  struct Kind {
    Op op = Op::kRead;
    Memory memory = Memory::kHost;
    FileSide file_side = FileSide::kPageCache;
  };

  // One completed entry: `result` is bytes moved or -errno.
  void Record(Kind kind, int64_t result);
  // One entry refused before any I/O (a bad SQE: its errno went back).
  void RecordRejected();

  struct Totals {
    uint64_t entries = 0;
    uint64_t bytes = 0;
    uint64_t errors = 0;
  };
  Totals Get(Kind kind) const;
  uint64_t rejected() const;

  // Where the ring path's time goes (ring_stage_stats.h).
  RingStageStats& stages() { return stages_; }
  const RingStageStats& stages() const { return stages_; }

  // A table, one line per possible kind in a fixed order (so that scripts
  // can read it), then fsync and the rejected count, then the stages.
  std::string Render() const;

 private:
  struct Counters {
    std::atomic<uint64_t> entries{0};
    std::atomic<uint64_t> bytes{0};
    std::atomic<uint64_t> errors{0};
  };
  static constexpr size_t kKinds = static_cast<size_t>(Op::kCount) *
                                   static_cast<size_t>(Memory::kCount) *
                                   static_cast<size_t>(FileSide::kCount);
  static constexpr size_t kShards = 16;
  struct alignas(64) Shard {
    std::array<Counters, kKinds> counters;
    std::atomic<uint64_t> rejected{0};
  };
  static size_t Index(Kind kind);
  // The calling thread's shard (threads take them round robin).
  Shard& Mine();

  std::array<Shard, kShards> shards_;
  RingStageStats stages_;
};

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_IO_STATS_H_
