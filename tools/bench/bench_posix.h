// File: tools/bench/bench_posix.h
//
// The synchronous engine: one blocking read(2)/write(2) per block, the way
// an ordinary application uses a file. Used by the `posix` mode (through the
// mount) and its `native` baseline (on the backing directory), so the two
// differ only in the path.
#ifndef FGDS_TOOLS_BENCH_BENCH_POSIX_H_
#define FGDS_TOOLS_BENCH_BENCH_POSIX_H_

#include "absl/status/statusor.h"
#include "tools/bench/mode.h"

namespace fgds::bench {

// RunSyncPhase: each thread opens its own descriptor on spec.path. Sequential
// passes use read/write after one lseek to the region start; random passes
// use pread/pwrite. A write pass ends with fsync on every descriptor.
absl::StatusOr<PhaseResult> RunSyncPhase(const PhaseSpec& spec);

}  // namespace fgds::bench

#endif  // FGDS_TOOLS_BENCH_BENCH_POSIX_H_
