// File: fusefs/session/limits_sizing.h
//
// Default usrbio limits (user_limits.h) sized from the machine the daemon
// runs on: its memory, the kernel's per-process mapping limit
// (vm.max_map_count), the address space the daemon may use, its CPUs and
// its descriptor limit (read after the daemon raised it).
// SizeUserLimits is a pure function of MachineFacts, so the rules are
// tested with any machine; ReadMachineFacts reads the real one.
// docs/limits.md explains each rule.
//
// Thread safety: both are thread-safe.
#ifndef FGDS_FUSEFS_SESSION_LIMITS_SIZING_H_
#define FGDS_FUSEFS_SESSION_LIMITS_SIZING_H_

#include <cstdint>

#include "fusefs/session/user_limits.h"

namespace fgds::session {

struct MachineFacts {
  uint64_t ram_bytes = 0;      // physical memory
  uint64_t max_map_count = 0;  // vm.max_map_count
  uint64_t address_space = 0;  // bytes the daemon may map (RLIMIT_AS)
  uint64_t cpus = 1;           // CPUs the daemon may run on
  uint64_t fd_limit = 0;       // the daemon's RLIMIT_NOFILE (soft)
};

// The machine this process runs on; what cannot be read is replaced by the
// kernel's default (max_map_count 65530, 1024 descriptors) or the
// architecture's (address space), never left zero.
MachineFacts ReadMachineFacts();

// The default limits for a machine.
UserLimitsConfig SizeUserLimits(const MachineFacts& facts);

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_LIMITS_SIZING_H_
