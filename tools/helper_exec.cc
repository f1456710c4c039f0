#include "tools/helper_exec.h"

#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace fgds::tools {

std::vector<std::string> HelperCandidates(std::string_view self_exe,
                                          std::string_view helper,
                                          std::string_view libexec_from_exe) {
  const size_t slash = self_exe.rfind('/');
  if (slash == std::string_view::npos) return {};
  const std::string dir(self_exe.substr(0, slash + 1));
  std::vector<std::string> candidates = {dir + std::string(helper)};
  if (!libexec_from_exe.empty()) {
    std::string libexec = dir + std::string(libexec_from_exe);
    if (libexec.back() != '/') libexec += '/';
    candidates.push_back(libexec + std::string(helper));
  }
  return candidates;
}

int ExecHelper(std::string_view command, const char* helper,
               std::string_view libexec_from_exe, int argc, char** argv) {
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n < 0) {
    std::fprintf(stderr, "fgds %.*s: cannot find %s: /proc/self/exe: %s\n",
                 static_cast<int>(command.size()), command.data(), helper,
                 std::strerror(errno));
    return kExitHelperMissing;
  }
  self[n] = '\0';
  const std::vector<std::string> candidates =
      HelperCandidates(self, helper, libexec_from_exe);
  // args[0] becomes each candidate's path in turn.
  std::vector<char*> args = {nullptr};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  std::string looked;
  for (const std::string& path : candidates) {
    args[0] = const_cast<char*>(path.c_str());
    execv(path.c_str(), args.data());
    // Only a missing file means "try the next place"; any other failure
    // is a broken install the user should hear about as it is.
    if (errno != ENOENT) {
      std::fprintf(stderr, "fgds %.*s: cannot run %s: %s\n",
                   static_cast<int>(command.size()), command.data(),
                   path.c_str(), std::strerror(errno));
      return kExitHelperNotExecutable;
    }
    looked += looked.empty() ? path : " or " + path;
  }
  std::fprintf(stderr,
               "fgds %.*s: the %s executable is missing (looked for %s); it "
               "is installed with fgds, or build the %s target\n",
               static_cast<int>(command.size()), command.data(), helper,
               looked.c_str(), helper);
  return kExitHelperMissing;
}

}  // namespace fgds::tools
