// The mode table. Add a mode here after writing its engine.
#include "tools/bench/bench_gpu.h"
#include "tools/bench/bench_posix.h"
#include "tools/bench/bench_uring.h"
#include "tools/bench/bench_usrbio.h"
#include "tools/bench/mode.h"

namespace fgds::bench {
namespace {

constexpr ModeSpec kModes[] = {
    {
        .name = "posix",
        .help = "read/write syscalls through --mount",
        .baseline = "native",
        .location = FileLocation::kMount,
        .bypasses_page_cache = false,
        .block_alignment = 1,
        .uses_queue_depth = false,
        .run_phase = RunSyncPhase,
    },
    {
        .name = "native",
        .help = "the same in --backing (baseline)",
        .baseline = "",
        .location = FileLocation::kBacking,
        .bypasses_page_cache = false,
        .block_alignment = 1,
        .uses_queue_depth = false,
        .run_phase = RunSyncPhase,
    },
    {
        .name = "native-direct",
        .help = "io_uring + O_DIRECT in --backing (baseline)",
        .baseline = "",
        .location = FileLocation::kBacking,
        .bypasses_page_cache = true,
        .block_alignment = 4096,
        .uses_queue_depth = true,
        .run_phase = RunUringDirectPhase,
    },
    {
        .name = "usrbio",
        .help = "usrbio rings via --mount, page cache",
        .baseline = "native",
        .location = FileLocation::kMount,
        .bypasses_page_cache = false,
        .block_alignment = 1,
        .uses_queue_depth = true,
        .run_phase = RunUsrbioPhase,
    },
    {
        .name = "usrbio-direct",
        .help = "usrbio rings, O_DIRECT into the iov",
        .baseline = "native-direct",
        .location = FileLocation::kMount,
        .bypasses_page_cache = true,
        .block_alignment = 4096,
        .uses_queue_depth = true,
        .run_phase = RunUsrbioDirectPhase,
    },
    {
        .name = "libfgds",
        .help = "libfgds direct API: file <-> GPU memory",
        .baseline = "native-direct",
        .location = FileLocation::kBacking,
        .bypasses_page_cache = false,
        .block_alignment = 1,
        .uses_queue_depth = true,
        .run_phase = RunLibfgdsPhase,
    },
    {
        .name = "naive",
        .help = "pread + cuMemcpyHtoD per block (GPU baseline)",
        .baseline = "native-direct",
        .location = FileLocation::kBacking,
        .bypasses_page_cache = false,
        .block_alignment = 1,
        .uses_queue_depth = false,
        .run_phase = RunNaiveGpuPhase,
    },
    {
        .name = "bounce-baseline",
        .help = "pinned double buffers + async copies (GPU baseline)",
        .baseline = "native-direct",
        .location = FileLocation::kBacking,
        .bypasses_page_cache = false,
        .block_alignment = 1,
        .uses_queue_depth = false,
        .run_phase = RunBounceBaselinePhase,
    },
    {
        .name = "usrbio-gpu",
        .help = "usrbio rings via --mount into GPU iovs (bounce)",
        .baseline = "native-direct",
        .location = FileLocation::kMount,
        .bypasses_page_cache = false,
        .block_alignment = 1,
        .uses_queue_depth = true,
        .run_phase = RunUsrbioGpuPhase,
    },
    {
        .name = "cufile",
        .help = "NVIDIA cuFile, O_DIRECT (fails with cuFile's error)",
        .baseline = "native-direct",
        .location = FileLocation::kBacking,
        .bypasses_page_cache = true,
        .block_alignment = 4096,
        .uses_queue_depth = false,
        .run_phase = RunCufilePhase,
    },
    {
        .name = "h2d",
        .help = "pinned host<->GPU copies, no file (read H2D, write D2H)",
        .baseline = "",
        .location = FileLocation::kBacking,
        .bypasses_page_cache = true,
        .block_alignment = 1,
        .uses_queue_depth = false,
        .run_phase = RunH2dPhase,
    },
};

}  // namespace

std::span<const ModeSpec> AllModes() { return kModes; }

const ModeSpec* FindMode(absl::string_view name) {
  for (const ModeSpec& mode : kModes) {
    if (mode.name == name) return &mode;
  }
  return nullptr;
}

}  // namespace fgds::bench
