// fgds-bench: `fgds bench` as its own executable. The bench links the
// client libraries (libfgds, usrbio, the dlopen'd CUDA loader); the `fgds`
// executable, which serves mounts, must not (DESIGN.md: the process that
// serves a mount links no client library), so `fgds bench` execs this one
// (tools/helper_exec.h) with its arguments unchanged. It is installed in
// libexec/fgds; developers may run it directly.
#include "tools/bench/bench.h"

int main(int argc, char** argv) { return fgds::bench::BenchMain(argc, argv); }
