// The mode table. Add a mode here after writing its engine.
#include "tools/bench/bench_posix.h"
#include "tools/bench/bench_uring.h"
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
