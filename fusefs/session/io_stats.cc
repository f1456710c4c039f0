#include "fusefs/session/io_stats.h"

#include "absl/strings/str_format.h"
#include "common/gpu/gpu_subset.h"
#include "common/gpu/gpu_sysfs.h"
#include "fgds/usrbio.h"

namespace fgds::session {

namespace {

const char* OpName(IoStats::Op op) {
  return op == IoStats::Op::kRead ? "read" : "write";
}

const char* MemoryName(IoStats::Memory memory) {
  switch (memory) {
    case IoStats::Memory::kHost:
      return "host";
    case IoStats::Memory::kGpuBounce:
      return "gpu-bounce";
    default:
      return "gpu-direct";
  }
}

const char* FileSideName(IoStats::FileSide side) {
  return side == IoStats::FileSide::kPageCache ? "page-cache" : "o-direct";
}

const char* ReasonName(uint32_t reason) {
  switch (reason) {
    case FGDS_IOV_GPU_REASON_NONE:
      return "none";
    case FGDS_IOV_GPU_REASON_NO_DMABUF:
      return "no-dmabuf";
    case FGDS_IOV_GPU_REASON_REFUSED:
      return "refused";
    case FGDS_IOV_GPU_REASON_NO_MODULE:
      return "no-module";
    case FGDS_IOV_GPU_REASON_MODULE_ERROR:
      return "module-error";
    case FGDS_IOV_GPU_REASON_NO_P2P:
      return "no-p2p";
    case FGDS_IOV_GPU_REASON_MAP_FAILED:
      return "map-failed";
    case FGDS_IOV_GPU_REASON_EXCLUDED:
      return "excluded";
    default:
      return "?";
  }
}

}  // namespace

int IoStats::GpuIndex(Kind kind) {
  if (kind.gpu < 0 || kind.gpu >= kMaxGpus || kind.op == Op::kSync ||
      kind.memory == Memory::kHost) {
    return -1;
  }
  return (kind.gpu * 2 + (kind.op == Op::kWrite ? 1 : 0)) * 2 +
         (kind.memory == Memory::kGpuDirect ? 1 : 0);
}

int IoStats::GpuSlot(std::string_view pci_bus_id, std::string_view sysfs_root) {
  const std::string pci = gpu::NormalizePciBusId(pci_bus_id);
  if (pci.empty()) return -1;
  MutexLock lock(&gpus_mu_);
  const int used = gpus_used_.load(std::memory_order_relaxed);
  for (int i = 0; i < used; ++i) {
    if (gpus_[i].pci_bus_id == pci) return i;
  }
  if (used == kMaxGpus) return -1;
  GpuInfo& info = gpus_[used];
  info.pci_bus_id = pci;
  info.numa_node = gpu::PciNumaNode(sysfs_root, pci);
  info.bar_bytes = gpu::PciApertureBytes(sysfs_root, pci);
  // Readers (Render) look at slots below gpus_used_ only: publish after
  // the fields above are written.
  gpus_used_.store(used + 1, std::memory_order_release);
  return used;
}

void IoStats::NoteGpuIov(int gpu, uint32_t path, uint32_t reason) {
  if (gpu < 0 || gpu >= gpus_used_.load(std::memory_order_acquire)) return;
  GpuInfo& info = gpus_[gpu];
  (path == FGDS_PATH_DIRECT ? info.iovs_direct : info.iovs_bounce)
      .fetch_add(1, std::memory_order_relaxed);
  info.last_reason.store(reason, std::memory_order_relaxed);
}

IoStats::Totals IoStats::GetGpu(int gpu, Op op, Memory memory) const {
  Totals t;
  const int index = GpuIndex({op, memory, FileSide::kPageCache, gpu});
  if (index < 0) return t;
  for (const Shard& shard : shards_) {
    const Counters& c = shard.gpu_counters[index];
    t.entries += c.entries.load(std::memory_order_relaxed);
    t.bytes += c.bytes.load(std::memory_order_relaxed);
    t.errors += c.errors.load(std::memory_order_relaxed);
  }
  return t;
}

size_t IoStats::Index(Kind kind) {
  return (static_cast<size_t>(kind.op) * static_cast<size_t>(Memory::kCount) +
          static_cast<size_t>(kind.memory)) *
             static_cast<size_t>(FileSide::kCount) +
         static_cast<size_t>(kind.file_side);
}

IoStats::Shard& IoStats::Mine() {
  static std::atomic<size_t> next_shard{0};
  thread_local const size_t shard =
      next_shard.fetch_add(1, std::memory_order_relaxed) % kShards;
  return shards_[shard];
}

void IoStats::Record(Kind kind, int64_t result) {
  Shard& shard = Mine();
  auto add = [result](Counters& c) {
    c.entries.fetch_add(1, std::memory_order_relaxed);
    if (result < 0) {
      c.errors.fetch_add(1, std::memory_order_relaxed);
    } else {
      c.bytes.fetch_add(static_cast<uint64_t>(result),
                        std::memory_order_relaxed);
    }
  };
  add(shard.counters[Index(kind)]);
  if (const int g = GpuIndex(kind); g >= 0) add(shard.gpu_counters[g]);
}

void IoStats::RecordMany(Kind kind, const Totals& t) {
  Shard& shard = Mine();
  auto add = [&t](Counters& c) {
    c.entries.fetch_add(t.entries, std::memory_order_relaxed);
    if (t.errors > 0) c.errors.fetch_add(t.errors, std::memory_order_relaxed);
    if (t.bytes > 0) c.bytes.fetch_add(t.bytes, std::memory_order_relaxed);
  };
  add(shard.counters[Index(kind)]);
  if (const int g = GpuIndex(kind); g >= 0) add(shard.gpu_counters[g]);
}

void IoStats::RecordRejected() {
  Mine().rejected.fetch_add(1, std::memory_order_relaxed);
}

IoStats::Totals IoStats::Get(Kind kind) const {
  Totals t;
  for (const Shard& shard : shards_) {
    const Counters& c = shard.counters[Index(kind)];
    t.entries += c.entries.load(std::memory_order_relaxed);
    t.bytes += c.bytes.load(std::memory_order_relaxed);
    t.errors += c.errors.load(std::memory_order_relaxed);
  }
  return t;
}

uint64_t IoStats::rejected() const {
  uint64_t n = 0;
  for (const Shard& shard : shards_) {
    n += shard.rejected.load(std::memory_order_relaxed);
  }
  return n;
}

std::string IoStats::Render() const {
  std::string out =
      absl::StrFormat("%-16s %-10s %-10s %12s %16s %8s\n", "usrbio", "memory",
                      "file", "entries", "bytes", "errors");
  auto row = [&out](const char* op, const char* memory, const char* side,
                    const Totals& t) {
    absl::StrAppendFormat(&out, "%-16s %-10s %-10s %12u %16u %8u\n", op, memory,
                          side, t.entries, t.bytes, t.errors);
  };
  for (Op op : {Op::kRead, Op::kWrite}) {
    for (Memory memory :
         {Memory::kHost, Memory::kGpuBounce, Memory::kGpuDirect}) {
      for (FileSide side : {FileSide::kPageCache, FileSide::kODirect}) {
        // GPU memory is never read or written by the CPU (sqe_check.h).
        if (memory == Memory::kGpuDirect && side == FileSide::kPageCache) {
          continue;
        }
        row(OpName(op), MemoryName(memory), FileSideName(side),
            Get({op, memory, side}));
      }
    }
  }
  row("fsync", "-", "-", Get({Op::kSync, Memory::kHost, FileSide::kPageCache}));
  row("rejected", "-", "-", {rejected(), 0, rejected()});
  out += stages_.Render();
  out += RenderGpus();
  return out;
}

std::string IoStats::RenderGpus() const {
  const int used = gpus_used_.load(std::memory_order_acquire);
  if (used == 0) return "";
  // One table: a GPU's facts on each of its rows, so that a script can
  // read any row alone.
  std::string out = absl::StrFormat(
      "\n%-4s %-13s %5s %14s %7s %7s %-12s %-6s %-10s %12s %16s %8s\n", "gpu",
      "pci", "numa", "bar1-bytes", "direct", "bounce", "why-bounce", "op",
      "memory", "entries", "bytes", "errors");
  for (int i = 0; i < used; ++i) {
    const GpuInfo& info = gpus_[i];
    const uint64_t direct = info.iovs_direct.load(std::memory_order_relaxed);
    const uint64_t bounce = info.iovs_bounce.load(std::memory_order_relaxed);
    const char* why =
        bounce == 0
            ? "-"
            : ReasonName(info.last_reason.load(std::memory_order_relaxed));
    for (Op op : {Op::kRead, Op::kWrite}) {
      for (Memory memory : {Memory::kGpuBounce, Memory::kGpuDirect}) {
        const Totals t = GetGpu(i, op, memory);
        absl::StrAppendFormat(
            &out,
            "%-4d %-13s %5d %14u %7u %7u %-12s %-6s %-10s %12u %16u %8u\n", i,
            info.pci_bus_id, info.numa_node, info.bar_bytes, direct, bounce,
            why, OpName(op), MemoryName(memory), t.entries, t.bytes, t.errors);
      }
    }
  }
  return out;
}

}  // namespace fgds::session
