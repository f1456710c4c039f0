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
// Per GPU: GPU iov entries also count for the GPU they serve (a direct
// iov's GPU, or the GPU a staging iov was tagged for, IOV_GPU_STAGING),
// with what the daemon knows of that GPU: NUMA node, BAR1 size, and how its
// GPU iovs' direct-path offers ended (the P2P path's availability as
// registrations met it).
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
#include <string_view>

#include "common/mutex.h"
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
    // GpuSlot of the GPU a GPU-memory entry serves; -1: none known.
    int gpu = -1;
    bool operator==(const Kind&) const = default;
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
  // `t.entries` completed entries of one kind at once, with their bytes and
  // errors: what a batch's inline completions add (ring.cc), one atomic
  // add per counter instead of one per entry.
  void RecordMany(Kind kind, const Totals& t);
  Totals Get(Kind kind) const;
  uint64_t rejected() const;

  // Where the ring path's time goes (ring_stage_stats.h).
  RingStageStats& stages() { return stages_; }
  const RingStageStats& stages() const { return stages_; }
  static constexpr int kMaxGpus = 16;
  // GpuSlot: the slot of the GPU at `pci_bus_id` (any form
  // NormalizePciBusId takes), made on first use with its NUMA node and BAR1
  // size from `sysfs_root`; -1 when the text is no PCI address or all
  // kMaxGpus slots are taken. Registration-time only (takes a lock).
  // The daemon makes the host's GPUs' slots at start, so that a client
  // naming PCI addresses of its choosing can take only the spare slots:
  // it can clutter the table, never take a real GPU's row.
  int GpuSlot(std::string_view pci_bus_id,
              std::string_view sysfs_root = "/sys");
  // NoteGpuIov: a GPU iov offer for slot `gpu` ended on `path`
  // (FGDS_PATH_DIRECT or _BOUNCE) with `reason` (FGDS_IOV_GPU_REASON_*).
  void NoteGpuIov(int gpu, uint32_t path, uint32_t reason);
  // GetGpu: slot `gpu`'s totals for op (read or write) and memory
  // (kGpuBounce or kGpuDirect), over both file sides.
  Totals GetGpu(int gpu, Op op, Memory memory) const;

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
    std::array<Counters, kMaxGpus * 2 * 2> gpu_counters;
    std::atomic<uint64_t> rejected{0};
  };
  static size_t Index(Kind kind);
  // Index of (gpu, op, memory) in Shard::gpu_counters; -1: not counted
  // per GPU (no slot, host memory, fsync).
  static int GpuIndex(Kind kind);
  std::string RenderGpus() const;

  // What the daemon knows of one GPU. Written once under gpus_mu_ before
  // gpus_used_ publishes it (release); the counters any time.
  struct GpuInfo {
    std::string pci_bus_id;
    int numa_node = -1;
    uint64_t bar_bytes = 0;
    std::atomic<uint64_t> iovs_direct{0};
    std::atomic<uint64_t> iovs_bounce{0};
    std::atomic<uint32_t> last_reason{0};
  };
  Mutex gpus_mu_;
  std::array<GpuInfo, kMaxGpus> gpus_;
  std::atomic<int> gpus_used_{0};
  // The calling thread's shard (threads take them round robin).
  Shard& Mine();

  std::array<Shard, kShards> shards_;
  RingStageStats stages_;
};

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_IO_STATS_H_
