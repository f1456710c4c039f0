#include "usrbio/direct/options.h"

#include <algorithm>
#include <cerrno>

namespace fgds::direct {
namespace {

int Invalid(std::string* message, std::string text) {
  *message = std::move(text);
  return -EINVAL;
}

template <typename T, size_t N>
bool AllZero(const T (&words)[N]) {
  return std::all_of(words, words + N, [](T word) { return word == 0; });
}

}  // namespace

int ResolveDriverParams(const fgds_driver_params* params, int online_cpus,
                        DriverConfig* config, std::string* message) {
  const fgds_driver_params defaults{};
  const fgds_driver_params& p = params != nullptr ? *params : defaults;
  if ((p.flags & ~FGDS_DRIVER_VALID_FLAGS) != 0) {
    return Invalid(message,
                   "fgds_driver_params.flags has unknown bits " +
                       std::to_string(p.flags & ~FGDS_DRIVER_VALID_FLAGS));
  }
  if (p.reserved0 != 0 || !AllZero(p.reserved)) {
    return Invalid(message, "fgds_driver_params.reserved must be zero");
  }
  const bool primary = (p.flags & FGDS_DRIVER_PRIMARY_CTX) != 0;
  if (primary ? p.device < 0 : p.device != 0) {
    return Invalid(message,
                   primary ? "fgds_driver_params.device must be a device "
                             "ordinal (>= 0)"
                           : "fgds_driver_params.device is used only with "
                             "FGDS_DRIVER_PRIMARY_CTX and must be 0 otherwise");
  }
  if (p.workers > static_cast<uint32_t>(kMaxWorkers)) {
    return Invalid(message, "fgds_driver_params.workers must be at most " +
                                std::to_string(kMaxWorkers));
  }
  const uint64_t chunk =
      p.chunk_bytes != 0 ? p.chunk_bytes : kDefaultChunkBytes;
  if (chunk % kFileAlignment != 0 || chunk < kMinChunkBytes ||
      chunk > kMaxChunkBytes) {
    return Invalid(message,
                   "fgds_driver_params.chunk_bytes must be a multiple of 4096 "
                   "from 64 KiB to 256 MiB");
  }
  // Half the CPUs by default: each worker copies page-cache data with its
  // own thread, and on the device machine (16 cores) 8 workers with 2 MiB
  // chunks delivered the most from the page cache (docs/gpu.md): those
  // copies and the GPU's DMA share memory bandwidth, and callers need
  // cores too.
  int workers = p.workers != 0
                    ? static_cast<int>(p.workers)
                    : std::clamp(online_cpus / 2, 1, kDefaultMaxWorkers);
  int slots = kDefaultSlotsPerWorker;
  if (p.staging_bytes != 0) {
    if (p.staging_bytes / chunk < static_cast<uint64_t>(kMinSlotsPerWorker)) {
      return Invalid(message,
                     "fgds_driver_params.staging_bytes must hold at least 2 "
                     "chunks");
    }
    // The bound is the point (a burst of large requests must not pin more
    // memory): give each worker its share, and run fewer workers rather
    // than fewer than two slots each.
    const uint64_t chunks = p.staging_bytes / chunk;
    if (chunks / static_cast<uint64_t>(workers) <
        static_cast<uint64_t>(kMinSlotsPerWorker)) {
      workers = static_cast<int>(chunks / kMinSlotsPerWorker);
    }
    slots = static_cast<int>(std::min<uint64_t>(
        chunks / static_cast<uint64_t>(workers), kMaxSlotsPerWorker));
  }
  config->primary_context = primary;
  config->device = p.device;
  config->use_page_cache = (p.flags & FGDS_DRIVER_NO_PAGE_CACHE) == 0;
  config->workers = workers;
  config->slots_per_worker = slots;
  config->chunk_bytes = chunk;
  config->staging_bytes =
      static_cast<uint64_t>(workers) * static_cast<uint64_t>(slots) * chunk;
  return 0;
}

int ValidateIoShape(const fgds_io& io, std::string* message) {
  if (io.opcode != FGDS_OP_READ && io.opcode != FGDS_OP_WRITE) {
    return Invalid(message,
                   "fgds_io.opcode must be FGDS_OP_READ or "
                   "FGDS_OP_WRITE, not " +
                       std::to_string(io.opcode));
  }
  if (io.flags != 0) return Invalid(message, "fgds_io.flags must be 0");
  if (io.reserved0 != 0 || !AllZero(io.reserved)) {
    return Invalid(message, "fgds_io.reserved must be zero");
  }
  if (io.internal != nullptr) {
    return Invalid(message,
                   "fgds_io.internal is set: the io is in flight (or was not "
                   "zeroed)");
  }
  return 0;
}

}  // namespace fgds::direct
