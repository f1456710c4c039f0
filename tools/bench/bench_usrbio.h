// File: tools/bench/bench_usrbio.h
//
// The usrbio engine: each thread opens its own usrbio session on the mount,
// one iov holding --qd buffers of --bs bytes and one ior of --qd entries,
// and keeps --qd requests in flight, as a training job's loader would.
// `usrbio` asks for the page cache on every entry (compare with `native`
// and `posix`); `usrbio-direct` lets aligned entries go O_DIRECT into the
// shared iov (compare with `native-direct`).
#ifndef FGDS_TOOLS_BENCH_BENCH_USRBIO_H_
#define FGDS_TOOLS_BENCH_BENCH_USRBIO_H_

#include "absl/status/statusor.h"
#include "tools/bench/mode.h"

namespace fgds::bench {

absl::StatusOr<PhaseResult> RunUsrbioPhase(const PhaseSpec& spec);
// REQUIRES: spec.block_size is a multiple of 4096.
absl::StatusOr<PhaseResult> RunUsrbioDirectPhase(const PhaseSpec& spec);

}  // namespace fgds::bench

#endif  // FGDS_TOOLS_BENCH_BENCH_USRBIO_H_
