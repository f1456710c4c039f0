#include "tools/probe/kconfig.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace fgds::probe {

KernelConfig ParseKernelConfig(absl::string_view text) {
  KernelConfig config;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&line, "# ")) {
      if (absl::StartsWith(line, "CONFIG_") &&
          absl::ConsumeSuffix(&line, " is not set")) {
        // assign(1, 'n'), not = "n": GCC 12's -Wrestrict misfires on the
        // latter (GCC bug 105329).
        config[std::string(line)].assign(1, 'n');
      }
      continue;
    }
    if (!absl::StartsWith(line, "CONFIG_")) continue;
    size_t eq = line.find('=');
    if (eq == absl::string_view::npos) continue;
    config[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  return config;
}

std::string ConfigValue(const KernelConfig& config, absl::string_view symbol) {
  auto it = config.find(symbol);
  return it == config.end() ? "n" : it->second;
}

absl::StatusOr<std::string> GunzipFile(const std::string& path) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return absl::ErrnoToStatus(errno, "pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null",
                                   O_WRONLY, 0);
  const char* argv[] = {"gzip", "-dc", "--", path.c_str(), nullptr};
  pid_t pid;
  int rc = posix_spawnp(&pid, "gzip", &actions, nullptr,
                        const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipefd[1]);
  if (rc != 0) {
    close(pipefd[0]);
    return absl::ErrnoToStatus(rc, "spawning gzip");
  }
  std::string out;
  char buf[16384];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof(buf))) > 0 ||
         (n < 0 && errno == EINTR)) {
    if (n > 0) out.append(buf, n);
  }
  close(pipefd[0]);
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::DataLossError(
        absl::StrCat("gzip -dc ", path, " failed (not gzip data?)"));
  }
  return out;
}

Check CheckConfigSymbol(const KernelConfig& config, absl::string_view symbol) {
  std::string value = ConfigValue(config, symbol);
  bool set = value == "y" || value == "m";
  std::string name(symbol);
  if (set) return MakeCheck(name, Level::kOk, value);
  if (symbol == "CONFIG_PCI_P2PDMA") {
    return MakeCheck(name, Level::kWarn, "not set",
                     "the kernel's P2P distance check is missing; the fgds "
                     "module falls back to its own topology check");
  }
  absl::string_view why;
  if (symbol == "CONFIG_MODULES") {
    why =
        "this kernel cannot load modules at all; boot a distribution "
        "kernel (or one built with CONFIG_MODULES=y)";
  } else if (symbol == "CONFIG_ZONE_DEVICE") {
    why =
        "fgds gives the GPU BAR struct pages with memremap_pages(), which "
        "needs ZONE_DEVICE; use a kernel built with it (Debian, Ubuntu and "
        "RHEL kernels are)";
  } else if (symbol == "CONFIG_MEMORY_HOTPLUG") {
    why =
        "ZONE_DEVICE depends on memory hotplug; use a kernel built with "
        "it";
  } else if (symbol == "CONFIG_DMA_SHARED_BUFFER") {
    why =
        "GPU memory reaches fgds as a dma-buf; use a kernel built with "
        "dma-buf support";
  } else {
    why = "required by the fgds module";
  }
  return MakeCheck(name, Level::kFail, "not set", std::string(why));
}

}  // namespace fgds::probe
