// File: tools/bench/bench.h
//
// `fgds bench` measures I/O through an fgds mount and, in the same process,
// the same I/O on the backing filesystem directly, so that every result can
// be reported as a ratio against a baseline taken on the same (noisy)
// machine a moment earlier.
//
// Example:
//   fgds bench --mount /mnt/fgds --backing /data --size 2G --cache both
#ifndef FGDS_TOOLS_BENCH_BENCH_H_
#define FGDS_TOOLS_BENCH_BENCH_H_

namespace fgds::bench {

// BenchMain runs `fgds bench`. argv[0] (the program or subcommand name) is
// not parsed. Prints the result table on stdout and diagnostics on
// stderr. Returns the process exit status: 0 on success, 1 when a
// measurement failed, 2 for a bad command line, 130 when interrupted by
// SIGINT or SIGTERM. The bench's files are removed in every case.
//
// Installs SIGINT/SIGTERM handlers for the duration of the call and
// restores the previous ones before returning.
int BenchMain(int argc, char** argv);

}  // namespace fgds::bench

#endif  // FGDS_TOOLS_BENCH_BENCH_H_
