// File: tools/helper_exec.h
//
// Subcommands of `fgds` that live in executables of their own: `fgds bench`
// is fgds-bench, so that the `fgds` executable, which serves mounts, links
// no client library and no CUDA loader (DESIGN.md, STYLE.md 14). The user
// still types `fgds bench ...`; `fgds` finds the helper beside itself (the
// build tree, or both copied to one directory) or in the install's libexec
// directory, and replaces itself with it.
//
// Example:
//   return fgds::tools::ExecHelper("bench", "fgds-bench", "../libexec/fgds",
//                                  argc - 1, argv + 1);
#ifndef FGDS_TOOLS_HELPER_EXEC_H_
#define FGDS_TOOLS_HELPER_EXEC_H_

#include <string>
#include <string_view>
#include <vector>

namespace fgds::tools {

// Exit statuses when no helper ran, as the shell's for a command that is
// missing or cannot be executed.
inline constexpr int kExitHelperMissing = 127;
inline constexpr int kExitHelperNotExecutable = 126;

// HelperCandidates: where ExecHelper looks for `helper`, in order:
// <dir of self_exe>/helper, then <dir of self_exe>/<libexec_from_exe>/helper
// (skipped when libexec_from_exe is empty). Empty when self_exe has no
// directory part.
std::vector<std::string> HelperCandidates(std::string_view self_exe,
                                          std::string_view helper,
                                          std::string_view libexec_from_exe);

// ExecHelper replaces this process with the first of HelperCandidates
// (for /proc/self/exe) that exists, passing argv unchanged after argv[0]
// (argv[0] is the subcommand's name, which the helper does not parse; the
// helper gets its own path). Returns only when no helper ran, after
// telling stderr why: kExitHelperMissing when none exists,
// kExitHelperNotExecutable when one exists but execv failed.
int ExecHelper(std::string_view command, const char* helper,
               std::string_view libexec_from_exe, int argc, char** argv);

}  // namespace fgds::tools

#endif  // FGDS_TOOLS_HELPER_EXEC_H_
