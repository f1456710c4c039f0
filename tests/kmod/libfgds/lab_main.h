// File: tests/kmod/libfgds/lab_main.h
//
// What the lab's user-space test programs (direct_lab_test.cc,
// usrbio_lab_test.cc) share: their result lines ("PASS <name>" / "FAIL
// <name>: <why>", which guest-tests.sh passes on to the host), the size of
// the BAR window they use as device memory, and their --name VALUE option
// parsing.
#ifndef FGDS_TESTS_KMOD_LIBFGDS_LAB_MAIN_H_
#define FGDS_TESTS_KMOD_LIBFGDS_LAB_MAIN_H_

#include <getopt.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace fgds::lab {

inline constexpr uint64_t kMiB = 1 << 20;
// The window of the BAR (one 16 MiB slot, guest-tests.sh) standing for
// device memory.
inline constexpr uint64_t kWindow = 16 * kMiB;

inline int failures = 0;  // FAIL lines printed so far
inline void Pass(const std::string& name) {
  std::printf("PASS %s\n", name.c_str());
}
inline void Fail(const std::string& name, const std::string& why) {
  std::printf("FAIL %s: %s\n", name.c_str(), why.c_str());
  ++failures;
}

// One --name VALUE option; `required` ones must be given.
struct LabOption {
  const char* name;
  std::string* value;
  bool required = true;
};

// ParseLabOptions fills the options' values from argv: false (with a line
// on stderr) for an unknown or missing option.
inline bool ParseLabOptions(int argc, char** argv,
                            const std::vector<LabOption>& options) {
  std::vector<option> long_options;
  for (const LabOption& o : options) {
    long_options.push_back({o.name, required_argument, nullptr, 0});
  }
  long_options.push_back({nullptr, 0, nullptr, 0});
  int index = 0;
  for (int c;
       (c = getopt_long(argc, argv, "", long_options.data(), &index)) != -1;) {
    if (c != 0) {
      std::fprintf(stderr, "usage: see the file comment\n");
      return false;
    }
    *options[static_cast<size_t>(index)].value = optarg;
  }
  for (const LabOption& o : options) {
    if (o.required && o.value->empty()) {
      std::fprintf(stderr, "--%s is needed\n", o.name);
      return false;
    }
  }
  return true;
}

}  // namespace fgds::lab

#endif  // FGDS_TESTS_KMOD_LIBFGDS_LAB_MAIN_H_
