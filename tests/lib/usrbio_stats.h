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

}  // namespace fgds::testing

#endif  // FGDS_TESTS_LIB_USRBIO_STATS_H_
