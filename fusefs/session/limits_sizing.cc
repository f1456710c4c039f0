#include "fusefs/session/limits_sizing.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>

#include <algorithm>
#include <cstdio>

namespace fgds::session {
namespace {

// The kernel's default vm.max_map_count (DEFAULT_MAX_MAP_COUNT).
constexpr uint64_t kDefaultMaxMapCount = 65530;
// The usual soft RLIMIT_NOFILE.
constexpr uint64_t kDefaultFdLimit = 1024;
// User address space with 4-level page tables: 128 TiB on x86-64; arm64
// kernels may be built with as little as 39 bits, so assume that there.
#if defined(__x86_64__)
constexpr uint64_t kUserAddressSpace = uint64_t{1} << 47;
#else
constexpr uint64_t kUserAddressSpace = uint64_t{1} << 39;
#endif

uint64_t Clamp(uint64_t value, uint64_t low, uint64_t high) {
  return std::min(std::max(value, low), high);
}

}  // namespace

MachineFacts ReadMachineFacts() {
  MachineFacts facts;
  struct sysinfo si = {};
  if (sysinfo(&si) == 0) {
    facts.ram_bytes = static_cast<uint64_t>(si.totalram) * si.mem_unit;
  }
  facts.max_map_count = kDefaultMaxMapCount;
  if (FILE* f = fopen("/proc/sys/vm/max_map_count", "re")) {
    unsigned long long n = 0;
    if (fscanf(f, "%llu", &n) == 1 && n > 0) facts.max_map_count = n;
    fclose(f);
  }
  facts.address_space = kUserAddressSpace;
  rlimit as = {};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    facts.address_space = std::min<uint64_t>(facts.address_space, as.rlim_cur);
  }
  facts.fd_limit = kDefaultFdLimit;
  rlimit nofile = {};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
    facts.fd_limit = nofile.rlim_cur == RLIM_INFINITY
                         ? uint64_t{1} << 20
                         : static_cast<uint64_t>(nofile.rlim_cur);
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    facts.cpus = std::max(1, CPU_COUNT(&set));
  }
  return facts;
}

UserLimitsConfig SizeUserLimits(const MachineFacts& facts) {
  UserLimitsConfig config;
  // Half of the kernel's mapping and address-space limits for all usrbio
  // registrations together: the other half stays for the daemon itself
  // (libraries, thread stacks, malloc arenas, io_uring and FUSE buffers),
  // so that no registration can make an ordinary FUSE request fail.
  config.daemon_mappings = facts.max_map_count / 2;
  config.daemon_bytes = facts.address_space / 2;
  Usage& user = config.per_user;
  // An eighth of the daemon-wide caps per user: one user reaching his
  // limit leaves the daemon room for at least seven more.
  user.mappings = std::max<uint64_t>(64, config.daemon_mappings / 8);
  // Host iovs must be fully allocated by their owner, so a user has at
  // most his share of RAM in distinct pages; more registered bytes than
  // RAM would be the same pages mapped again, costing only the daemon's
  // address space.
  user.bytes = std::min(std::max<uint64_t>(facts.ram_bytes, 1ull << 30),
                        config.daemon_bytes / 8);
  // The session server admits 1024 sessions in all: a quarter per user at
  // most, so one user's idle connections cannot take every slot.
  user.sessions = Clamp(8 * facts.cpus, 16, 256);
  // Rings and their entries are served by the daemon's CPUs: a budget per
  // CPU, with a floor that leaves a small machine usable.
  user.rings = Clamp(32 * facts.cpus, 64, 1024);
  user.ring_entries = Clamp(32768 * facts.cpus, 65536, 1u << 22);
  // Registered files hold up to two descriptors each (the file and its
  // O_DIRECT twin): all of them together may use half the daemon's
  // descriptors, so that the other half stays for FUSE opens (two each
  // too), the namespace, sockets and the engine's rings, and one user at
  // most an eighth of that (at least 16, so a small limit stays usable).
  config.daemon_files = facts.fd_limit / 4;
  user.files = std::max<uint64_t>(16, config.daemon_files / 8);
  return config;
}

}  // namespace fgds::session
