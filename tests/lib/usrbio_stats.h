// File: tests/lib/usrbio_stats.h
//
// Reads one row of the usrbio table in an fgds mount's /.fgds/stats (what
// `fgds stat` prints; fusefs/session/io_stats.h), for the integration tests
// and the kmod lab's usrbio test. Header-only, standard library only.
#ifndef FGDS_TESTS_LIB_USRBIO_STATS_H_
#define FGDS_TESTS_LIB_USRBIO_STATS_H_

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace fgds::testing {

// One row of the usrbio table in the mount's /.fgds/stats (`fgds stat`),
// e.g. {"read", "host", "o-direct"}; all -1 when there is no such row.
struct UsrbioStatsRow {
  int64_t entries = -1;
  int64_t bytes = -1;
  int64_t errors = -1;
};
inline UsrbioStatsRow ReadUsrbioStats(const std::string& mountpoint,
                                      const std::string& op,
                                      const std::string& memory,
                                      const std::string& file) {
  std::ifstream in(mountpoint + "/.fgds/stats");
  std::string line;
  bool in_table = false;  // the FUSE table above has "read" rows too
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string first, second, third;
    words >> first >> second >> third;
    if (first == "usrbio") in_table = true;
    if (!in_table || first != op || second != memory || third != file) {
      continue;
    }
    UsrbioStatsRow row;
    words >> row.entries >> row.bytes >> row.errors;
    return row;
  }
  return {};
}

// One row of the per-GPU table (after the usrbio table): the GPU at
// `pci_bus_id` (as the daemon normalizes it, "0000:3b:00.0"), `op` and
// `memory` ("gpu-bounce", "gpu-direct"); all -1 when there is no such row.
struct UsrbioGpuStatsRow {
  int64_t gpu = -1;
  int64_t numa = -1;
  int64_t bar_bytes = -1;
  int64_t iovs_direct = -1;
  int64_t iovs_bounce = -1;
  std::string why_bounce;
  int64_t entries = -1;
  int64_t bytes = -1;
  int64_t errors = -1;
};
inline UsrbioGpuStatsRow ReadUsrbioGpuStats(const std::string& mountpoint,
                                            const std::string& pci_bus_id,
                                            const std::string& op,
                                            const std::string& memory) {
  std::ifstream in(mountpoint + "/.fgds/stats");
  std::string line;
  bool in_table = false;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    UsrbioGpuStatsRow row;
    std::string first, pci, row_op, row_memory;
    words >> first;
    if (first == "gpu") in_table = true;
    if (!in_table || first == "gpu") continue;
    row.gpu = std::stoll(first);
    words >> pci >> row.numa >> row.bar_bytes >> row.iovs_direct >>
        row.iovs_bounce >> row.why_bounce >> row_op >> row_memory >>
        row.entries >> row.bytes >> row.errors;
    if (pci == pci_bus_id && row_op == op && row_memory == memory) return row;
  }
  return {};
}

}  // namespace fgds::testing

#endif  // FGDS_TESTS_LIB_USRBIO_STATS_H_
