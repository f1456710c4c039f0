// File: tools/bench/bench_uring.h
//
// The queued engine: io_uring with O_DIRECT and --qd requests in flight per
// thread. This is the fastest the backing device can be driven from one
// process without the page cache, the bar for the zero-copy modes to come.
#ifndef FGDS_TOOLS_BENCH_BENCH_URING_H_
#define FGDS_TOOLS_BENCH_BENCH_URING_H_

#include "absl/status/statusor.h"
#include "tools/bench/mode.h"

namespace fgds::bench {

// RunUringDirectPhase: each thread has its own ring of spec.queue_depth
// entries, its own O_DIRECT descriptor and queue_depth page-aligned buffers
// (registered with the ring when the memlock limit allows). Latency is
// measured from submission to completion of each request. A write pass ends
// with fsync. REQUIRES: spec.block_size is a multiple of 4096.
absl::StatusOr<PhaseResult> RunUringDirectPhase(const PhaseSpec& spec);

}  // namespace fgds::bench

#endif  // FGDS_TOOLS_BENCH_BENCH_URING_H_
