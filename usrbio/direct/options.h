// File: usrbio/direct/options.h
//
// fgds_driver_params and fgds_io, checked and turned into what the engine
// runs with. Pure functions of their inputs (unit-tested): every rejection
// a C caller can cause has a test.
#ifndef FGDS_USRBIO_DIRECT_OPTIONS_H_
#define FGDS_USRBIO_DIRECT_OPTIONS_H_

#include <cstdint>
#include <string>

#include "fgds/fgds.h"

namespace fgds::direct {

// File offsets and sizes that are multiples of this go O_DIRECT. 4096 is
// the page size and at least the logical block size of the devices we
// meet, so an O_DIRECT request never shares a page with a buffered one of
// the same I/O (mixing them on one page would make the kernel write back
// and invalidate that page mid-request).
inline constexpr uint64_t kFileAlignment = 4096;

inline constexpr uint64_t kDefaultChunkBytes = uint64_t{2} << 20;
inline constexpr uint64_t kMinChunkBytes = uint64_t{64} << 10;
inline constexpr uint64_t kMaxChunkBytes = uint64_t{256} << 20;
inline constexpr int kDefaultMaxWorkers = 16;
inline constexpr int kMaxWorkers = 256;
inline constexpr int kDefaultSlotsPerWorker = 8;
inline constexpr int kMinSlotsPerWorker = 2;  // one filling, one copying
inline constexpr int kMaxSlotsPerWorker = 64;

// What a driver runs with, all defaults resolved.
struct DriverConfig {
  bool primary_context = false;  // FGDS_DRIVER_PRIMARY_CTX
  int device = 0;                // with primary_context
  bool use_page_cache = true;    // !FGDS_DRIVER_NO_PAGE_CACHE
  int workers = 0;
  int slots_per_worker = 0;
  uint64_t chunk_bytes = 0;
  uint64_t staging_bytes = 0;  // workers * slots_per_worker * chunk_bytes
};

// ResolveDriverParams checks `params` (null: defaults) and fills `config`.
// `online_cpus` sizes the default worker count. Returns 0, or -EINVAL with
// `message` naming the offending field.
int ResolveDriverParams(const fgds_driver_params* params, int online_cpus,
                        DriverConfig* config, std::string* message);

// ValidateIoShape checks the parts of an fgds_io that make it malformed
// (opcode, flags, reserved words, a non-null `internal`). File descriptor
// and buffer problems are I/O results, not shape errors. Returns 0 or
// -EINVAL with `message`.
int ValidateIoShape(const fgds_io& io, std::string* message);

}  // namespace fgds::direct

#endif  // FGDS_USRBIO_DIRECT_OPTIONS_H_
