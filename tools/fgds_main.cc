// fgds: the command line. `fgds mount` is the daemon itself, so this
// executable links no client library and no CUDA loader: `fgds bench` runs
// the fgds-bench executable (tools/helper_exec.h), and the unit test
// deps.daemon_links_no_client fails on any client symbol in this binary.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "backend/remote/agent/agent_main.h"
#include "common/log.h"
#include "fusefs/daemon.h"
#include "fusefs/options.h"
#include "tools/helper_exec.h"
#include "tools/probe/probe.h"

namespace {

constexpr char kUsage[] =
    "usage: fgds COMMAND [ARGS]\n"
    "  mount [--data DIR] [-f] [options] MOUNTPOINT   serve DIR at MOUNTPOINT\n"
    "  umount [-l] MOUNTPOINT                          unmount (-l: lazily)\n"
    "  stat MOUNTPOINT                                 per-operation "
    "statistics\n"
    "  bench --mount MNT --backing DIR [options]       throughput vs native\n"
    "  probe [--json] [--sysfs-root DIR]               can the GPU direct "
    "path work here?\n"
    "  agent --listen HOST:PORT --data DIR --key FILE  serve file extents to "
    "daemons\n"
    "Run `fgds mount --help` or `fgds bench --help` for their options.\n";

int Fail(std::string_view command, const absl::Status& status) {
  std::fprintf(stderr, "fgds %.*s: %.*s\n", static_cast<int>(command.size()),
               command.data(), static_cast<int>(status.message().size()),
               status.message().data());
  return 1;
}

// Says which libfuse the new mount runs on and which FUSE features it has
// (the daemon decides them when the kernel's INIT arrives, so the line is
// read from the mount's /.fgds/stats, which waits for that).
void PrintFeatures(const std::string& mountpoint) {
  std::ifstream in(mountpoint + "/.fgds/stats");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# features: ", 0) == 0) {
      std::fprintf(stderr, "fgds mount: %s\n", line.c_str() + 12);
      return;
    }
  }
}

// Daemonizes: the parent waits until the child reports that the mount is
// live (or why it is not), so `fgds mount` returns only once it is usable
// and its exit status tells the truth.
int MountInBackground(const fgds::fusefs::DaemonOptions& options) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    std::perror("fgds mount: pipe");
    return 1;
  }
  pid_t pid = fork();
  if (pid < 0) {
    std::perror("fgds mount: fork");
    return 1;
  }
  if (pid > 0) {
    close(pipefd[1]);
    std::string message;
    char buf[512];
    ssize_t n;
    while ((n = read(pipefd[0], buf, sizeof(buf))) > 0) message.append(buf, n);
    close(pipefd[0]);
    if (message == "OK") {
      PrintFeatures(options.mountpoint);
      return 0;
    }
    std::fprintf(
        stderr, "fgds mount: %s\n",
        message.empty() ? "the daemon died while starting" : message.c_str());
    return 1;
  }
  close(pipefd[0]);
  setsid();
  if (chdir("/") != 0) _exit(1);
  int ready_fd = pipefd[1];
  auto ready = [ready_fd](const absl::Status& status) {
    std::string message = status.ok() ? "OK" : std::string(status.message());
    (void)!write(ready_fd, message.data(), message.size());
    close(ready_fd);
    if (status.ok()) {
      int null_fd = open("/dev/null", O_RDWR);
      if (null_fd >= 0) {
        dup2(null_fd, STDIN_FILENO);
        dup2(null_fd, STDOUT_FILENO);
        dup2(null_fd, STDERR_FILENO);
        if (null_fd > STDERR_FILENO) close(null_fd);
      }
      fgds::LogToSyslog();
    }
  };
  absl::Status status = fgds::fusefs::ServeMount(options, ready);
  _exit(status.ok() ? 0 : 1);
}

int MountCommand(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 ||
        std::strcmp(argv[i], "-h") == 0) {
      std::fputs(fgds::fusefs::MountUsage(), stdout);
      return 0;
    }
  }
  auto options = fgds::fusefs::ParseMountArgs(argc, argv);
  if (!options.ok()) {
    Fail("mount", options.status());
    std::fputs(fgds::fusefs::MountUsage(), stderr);
    return 2;
  }
  if (absl::Status st = fgds::fusefs::PrepareMount(*options); !st.ok()) {
    return Fail("mount", st);
  }
  if (!options->foreground) return MountInBackground(*options);
  absl::Status st =
      fgds::fusefs::ServeMount(*options, [](const absl::Status&) {});
  return st.ok() ? 0 : Fail("mount", st);
}

int UmountCommand(int argc, char** argv) {
  bool lazy = false;
  std::string mountpoint;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-l" || arg == "--lazy") {
      lazy = true;
    } else if (!arg.empty() && arg[0] == '-') {
      std::fprintf(stderr, "fgds umount: unknown option %s\n", argv[i]);
      return 2;
    } else if (mountpoint.empty()) {
      mountpoint = argv[i];
    } else {
      std::fprintf(stderr, "fgds umount: more than one MOUNTPOINT\n");
      return 2;
    }
  }
  if (mountpoint.empty()) {
    std::fprintf(stderr, "usage: fgds umount [-l] MOUNTPOINT\n");
    return 2;
  }
  absl::Status st = fgds::fusefs::Unmount(mountpoint, lazy);
  return st.ok() ? 0 : Fail("umount", st);
}

int StatCommand(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fgds stat MOUNTPOINT\n");
    return 2;
  }
  std::string path = std::string(argv[1]) + "/.fgds/stats";
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr,
                 "fgds stat: cannot read %s: %s (is it an fgds mount?)\n",
                 path.c_str(), std::strerror(errno));
    return 1;
  }
  std::cout << in.rdbuf();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string_view command = argv[1];
  if (command == "mount") return MountCommand(argc - 1, argv + 1);
  if (command == "umount" || command == "unmount") {
    return UmountCommand(argc - 1, argv + 1);
  }
  if (command == "stat") return StatCommand(argc - 1, argv + 1);
  if (command == "bench") {
    return fgds::tools::ExecHelper("bench", "fgds-bench", FGDS_LIBEXEC_FROM_EXE,
                                   argc - 1, argv + 1);
  }
  if (command == "probe") return fgds::probe::ProbeMain(argc - 1, argv + 1);
  if (command == "agent") return fgds::remote::AgentMain(argc - 1, argv + 1);
  if (command == "help" || command == "--help" || command == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::fprintf(stderr, "fgds: unknown command '%s'\n%s", argv[1], kUsage);
  return 2;
}
