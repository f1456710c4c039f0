// File: tests/lib/mount_features.h
//
// What an fgds mount runs with, from the "# features:" line of its
// /.fgds/stats (fusefs/fuse_features.h): the libfuse, FUSE passthrough,
// FUSE over io_uring. Header-only, standard library only.
#ifndef FGDS_TESTS_LIB_MOUNT_FEATURES_H_
#define FGDS_TESTS_LIB_MOUNT_FEATURES_H_

#include <cstdint>
#include <fstream>
#include <string>

namespace fgds::testing {

// The whole line, e.g. "# features: libfuse 3.18.3 (built with 3.18);
// passthrough on; fuse-uring off: ..."; "" if there is none.
inline std::string MountFeatures(const std::string& mountpoint) {
  std::ifstream in(mountpoint + "/.fgds/stats");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# features: ", 0) == 0) return line;
  }
  return "";
}

// Whether the mount's regular files use FUSE passthrough.
inline bool PassthroughOn(const std::string& mountpoint) {
  return MountFeatures(mountpoint).find("passthrough on") != std::string::npos;
}

// Whether the mount serves requests through FUSE over io_uring. (Not a
// search for "fuse-uring on" alone: the reason it is off may say
// "--fuse-uring on to use it".)
inline bool FuseUringOn(const std::string& mountpoint) {
  return MountFeatures(mountpoint).find("; fuse-uring on") != std::string::npos;
}

// The value of a counter of /.fgds/stats that is written "name value"
// (e.g. requests_fuse_uring); 0 if there is none.
inline uint64_t MountCounter(const std::string& mountpoint,
                             const std::string& name) {
  std::ifstream in(mountpoint + "/.fgds/stats");
  std::string word;
  while (in >> word) {
    uint64_t value;
    if (word == name && in >> value) return value;
  }
  return 0;
}

}  // namespace fgds::testing

#endif  // FGDS_TESTS_LIB_MOUNT_FEATURES_H_
