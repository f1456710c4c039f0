#include "fusefs/fd_limit.h"

#include <cstdio>

namespace fgds::fusefs {
namespace {

// fs.nr_open, or 0 if it cannot be read.
rlim_t SystemCeiling() {
  FILE* f = std::fopen("/proc/sys/fs/nr_open", "re");
  if (f == nullptr) return 0;
  unsigned long long value = 0;
  if (std::fscanf(f, "%llu", &value) != 1) value = 0;
  std::fclose(f);
  return static_cast<rlim_t>(value);
}

}  // namespace

rlim_t RaiseFdLimit() {
  rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  const rlim_t ceiling = SystemCeiling();
  if (ceiling > limit.rlim_max) {
    rlimit raised = {ceiling, ceiling};
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) return ceiling;
  }
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &limit) == 0) return limit.rlim_cur;
  }
  getrlimit(RLIMIT_NOFILE, &limit);
  return limit.rlim_cur;
}

}  // namespace fgds::fusefs
