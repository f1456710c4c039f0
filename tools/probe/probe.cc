#include "tools/probe/probe.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/string_view.h"
#include "tools/probe/checks.h"
#include "tools/probe/pci_inventory.h"

namespace fgds::probe {

ProbeReport RunProbe(const HostFs& fs, const QueryFn& query) {
  ProbeReport report;
  report.root = fs.root().empty() ? "/" : fs.root();
  Inventory inventory = ScanInventory(fs);
  AddKernelChecks(fs, &report.checks);
  AddConfigChecks(fs, &report.checks);
  AddIommuCheck(fs, inventory, &report.checks);
  bool gpu_usable = AddNvidiaChecks(fs, inventory, &report.checks);
  AddPciChecks(inventory, &report.checks);
  AddFgdsChecks(fs, inventory, query, &report.checks);
  report.verdict = Decide(report.checks, gpu_usable);
  return report;
}

namespace {

constexpr char kUsage[] =
    "usage: fgds probe [--json] [--sysfs-root DIR]\n"
    "  Checks, without changing anything, whether the GPU direct path\n"
    "  (NVMe -> GPU memory through the fgds module) can work on this host.\n"
    "  --json            machine-readable output\n"
    "  --sysfs-root DIR  read /sys, /proc, /boot, /lib/modules and /dev\n"
    "                    below DIR (default /), e.g. a fake tree in tests\n"
    "  Exit status: 0 direct path available, 1 not, 2 usage error.\n"
    "  docs/probe.md explains each line.\n";

}  // namespace

int ProbeMain(int argc, char** argv) {
  bool json = false;
  std::string root = "/";
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--json") {
      json = true;
    } else if (arg == "--sysfs-root" && i + 1 < argc) {
      root = argv[++i];
    } else if (arg.substr(0, 13) == "--sysfs-root=") {
      root = std::string(arg.substr(13));
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "fgds probe: unknown argument '%s'\n%s", argv[i],
                   kUsage);
      return 2;
    }
  }
  HostFs fs(root);
  if (!fs.Exists("/")) {
    std::fprintf(stderr, "fgds probe: --sysfs-root %s: %s\n", root.c_str(),
                 std::strerror(errno));
    return 2;
  }
  ProbeReport report = RunProbe(fs);
  std::string text = json ? FormatJson(report) : FormatText(report);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return report.verdict.exit_status;
}

}  // namespace fgds::probe
