// File: tests/lib/file_contents.h
//
// ReadAll: a file's whole content as a test compares it, or "<open failed>"
// (which no test writes), so that a failed open shows in the comparison's
// message instead of passing as an empty file.
#ifndef FGDS_TESTS_LIB_FILE_CONTENTS_H_
#define FGDS_TESTS_LIB_FILE_CONTENTS_H_

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace fgds::testing {

inline std::string ReadAll(const std::string& path) {
  std::string data;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "<open failed>";
  std::vector<char> buf(1 << 20);
  ssize_t n;
  while ((n = read(fd, buf.data(), buf.size())) > 0) data.append(buf.data(), n);
  close(fd);
  return data;
}

}  // namespace fgds::testing

#endif  // FGDS_TESTS_LIB_FILE_CONTENTS_H_
