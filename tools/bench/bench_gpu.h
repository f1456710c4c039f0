// File: tools/bench/bench_gpu.h
//
// The GPU modes of `fgds bench`: file bytes into GPU memory (read rows) and
// out of it (write rows), on the backing directory, each worker owning a
// device region that mirrors its file region.
//
//   libfgds          the direct API (include/fgds/fgds.h), --qd async I/Os
//                    per thread; its path report goes to stderr
//   naive            pread into pageable memory + cuMemcpyHtoD, per block
//   bounce-baseline  what a careful application writes by hand: pinned
//                    double buffers, pread + cuMemcpyHtoDAsync overlapped
//   cufile           NVIDIA cuFile (GDS or its compat mode), when
//                    libcufile.so loads and registers the file; else the
//                    mode fails with cuFile's error
//   usrbio-gpu       usrbio rings via --mount into GPU iovs (the bounce
//                    path of fgds_iov_wrap_gpu), --qd entries per thread
//   h2d              no file at all: pinned host <-> device copies of the
//                    same blocks, the ceiling for page-cached reads (read
//                    rows are H2D, write rows D2H)
//
// Every read is checked: after the timed pass each block's stamp is read
// back from device memory. libfgds reads a cold file with O_DIRECT, which
// leaves nothing in the page cache, so after each of its read passes it
// reads its file region through the page cache, untimed, as a prior
// buffered reader would: the runner's warm row that follows then measures
// a cached file. cufile (O_DIRECT descriptors) runs once, as "direct".
#ifndef FGDS_TOOLS_BENCH_BENCH_GPU_H_
#define FGDS_TOOLS_BENCH_BENCH_GPU_H_

#include "absl/status/statusor.h"
#include "tools/bench/mode.h"

namespace fgds::bench {

absl::StatusOr<PhaseResult> RunLibfgdsPhase(const PhaseSpec& spec);
absl::StatusOr<PhaseResult> RunNaiveGpuPhase(const PhaseSpec& spec);
absl::StatusOr<PhaseResult> RunBounceBaselinePhase(const PhaseSpec& spec);
absl::StatusOr<PhaseResult> RunCufilePhase(const PhaseSpec& spec);
absl::StatusOr<PhaseResult> RunH2dPhase(const PhaseSpec& spec);
absl::StatusOr<PhaseResult> RunUsrbioGpuPhase(const PhaseSpec& spec);

}  // namespace fgds::bench

#endif  // FGDS_TOOLS_BENCH_BENCH_GPU_H_
