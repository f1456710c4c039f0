// File: tests/lib/proc_status.h
//
// ProcStatusBytes: a "Name:  value kB" line of /proc/<pid>/status (VmSize,
// VmRSS, ...) in bytes, or 0 if the process or the line is not there.
// Tests that cap a daemon's address space start from its VmSize.
#ifndef FGDS_TESTS_LIB_PROC_STATUS_H_
#define FGDS_TESTS_LIB_PROC_STATUS_H_

#include <sys/types.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace fgds::testing {

inline uint64_t ProcStatusBytes(pid_t pid, const std::string& name) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(name + ":", 0) == 0) {
      return std::stoull(line.substr(name.size() + 1)) * 1024;
    }
  }
  return 0;
}

}  // namespace fgds::testing

#endif  // FGDS_TESTS_LIB_PROC_STATUS_H_
