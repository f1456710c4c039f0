// File: tests/lib/proc_status.h
//
// Fields of /proc/<pid>/status, for tests that watch a daemon: its
// address space (tests that cap it start from its VmSize), its threads,
// whether it still runs.
#ifndef FGDS_TESTS_LIB_PROC_STATUS_H_
#define FGDS_TESTS_LIB_PROC_STATUS_H_

#include <sys/types.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace fgds::testing {

// The value of the line "Name:  value" ("" if the process or the line is
// not there).
inline std::string ProcStatusField(pid_t pid, const std::string& name) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(name + ":", 0) == 0) return line.substr(name.size() + 1);
  }
  return "";
}

// A "Name:  value kB" line (VmSize, VmRSS, ...) in bytes, or 0.
inline uint64_t ProcStatusBytes(pid_t pid, const std::string& name) {
  const std::string value = ProcStatusField(pid, name);
  return value.empty() ? 0 : std::stoull(value) * 1024;
}

// Whether `pid` is there and neither a zombie nor dead (a child of the
// caller stays a zombie until reaped).
inline bool ProcRunning(pid_t pid) {
  const std::string state = ProcStatusField(pid, "State");
  return !state.empty() && state.find('Z') == std::string::npos &&
         state.find('X') == std::string::npos;
}

}  // namespace fgds::testing

#endif  // FGDS_TESTS_LIB_PROC_STATUS_H_
