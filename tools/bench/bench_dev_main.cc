// fgds-bench-dev: `fgds bench` without the rest of the fgds binary, for
// developing the bench before (and apart from) the daemon.
#include "tools/bench/bench.h"

int main(int argc, char** argv) { return fgds::bench::BenchMain(argc, argv); }
