// `fgds probe` against fake host trees: the real binary for the verdicts
// and exit status, and RunProbe with a fake FGDS_IOCTL_QUERY for the
// AVAILABLE verdict, which needs a device node that answers the ioctl.
#include <stdio.h>
#include <sys/wait.h>

#include <cstring>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "include/uapi/fgds_ioctl.h"
#include "tools/probe/fake_sysfs.h"
#include "tools/probe/probe.h"

namespace fgds::probe {
namespace {

// Three PCI layouts: GPU and NVMe under one switch (the one root port
// 0000:00:01.0 leads to switch 0000:01:00.0); NVMe on its own root port of
// the same root complex; NVMe on another root complex and NUMA node.
constexpr char kGpuPath[] =
    "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0";
constexpr char kGpuBdf[] = "0000:03:00.0";
constexpr char kNvmeSameSwitch[] =
    "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0";
constexpr char kNvmeOtherRootPort[] = "pci0000:00/0000:00:02.0/0000:05:00.0";
constexpr char kNvmeOtherRootComplex[] = "pci0000:80/0000:80:01.0/0000:81:00.0";

struct RunResult {
  int exit_status = -1;
  std::string output;
};

// RunFgdsProbe runs the real binary against `root` and collects stdout.
RunResult RunFgdsProbe(const std::string& root, const std::string& extra = "") {
  std::string command = absl::StrCat(FGDS_BINARY, " probe --sysfs-root '", root,
                                     "' ", extra, " 2>&1");
  RunResult result;
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << command;
  if (pipe == nullptr) return result;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0)
    result.output.append(buf, n);
  int status = pclose(pipe);
  result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// Line returns the line of `output` that starts with `prefix`, or "".
std::string Line(const std::string& output, const std::string& prefix) {
  size_t at = 0;
  while (at < output.size()) {
    size_t end = output.find('\n', at);
    if (end == std::string::npos) end = output.size();
    std::string line = output.substr(at, end - at);
    if (absl::StartsWith(line, prefix)) return line;
    at = end + 1;
  }
  return "";
}

std::string LastLine(const std::string& output) {
  std::string trimmed = output.substr(0, output.find_last_not_of('\n') + 1);
  return trimmed.substr(trimmed.rfind('\n') + 1);
}

// A fake module: QUERY answers for any node; the route for any storage fd
// is `p2p_status`.
QueryFn FakeModule(int p2p_status) {
  return [p2p_status](int dev_fd, fgds_query* q) {
    q->abi_version = FGDS_ABI_VERSION;
    q->bar_index = 1;
    q->bar_start = 0x220000000000;
    q->bar_size = uint64_t{64} << 30;
    q->max_buffer_size = uint64_t{16} << 30;
    q->max_buffers = 1024;
    std::strcpy(q->version, "0.1.0");
    if (q->flags & FGDS_QUERY_STORAGE_FD) {
      q->p2p_status = p2p_status;
      q->p2p_distance = p2p_status == 0 ? 4 : -1;
    }
    return 0;
  };
}

TEST(ProbeSysfsTest, SameSwitchRouteIsOk) {
  FakeHost host;
  host.AddBaseline();
  host.AddGpu(kGpuPath);
  host.AddNvme("nvme0", kNvmeSameSwitch);
  RunResult r = RunFgdsProbe(host.root());
  EXPECT_EQ(Line(r.output, "[ ok ] route 0000:03:00.0 <-> nvme0:"),
            "[ ok ] route 0000:03:00.0 <-> nvme0: same PCIe switch (via "
            "switch 0000:01:00.0)")
      << r.output;
  EXPECT_NE(Line(r.output,
                 "[ ok ] gpu 0000:03:00.0: [10de:2330] BAR1 64 GiB "
                 "prefetchable 64-bit, NUMA 0"),
            "")
      << r.output;
  EXPECT_NE(Line(r.output, "[ ok ] nvme0: 0000:04:00.0 (nvme0n1), NUMA 0"), "")
      << r.output;
  EXPECT_NE(Line(r.output, "[ ok ] iommu: passthrough"), "") << r.output;
  EXPECT_NE(Line(r.output, "[ ok ] gpu dma-buf: open module, release 550"), "")
      << r.output;
  // Everything but the module: the GPU works, so the bounce path does.
  EXPECT_EQ(LastLine(r.output),
            "bounce path only (direct path NOT AVAILABLE: fgds module: not "
            "loaded)");
  EXPECT_EQ(r.exit_status, 1);
}

TEST(ProbeSysfsTest, SameSwitchWithModuleIsAvailable) {
  FakeHost host;
  host.AddBaseline();
  host.AddGpu(kGpuPath);
  host.AddNvme("nvme0", kNvmeSameSwitch);
  host.AddFgdsModule({kGpuBdf});
  ProbeReport report = RunProbe(HostFs(host.root()), FakeModule(0));
  std::string text = FormatText(report);
  EXPECT_EQ(report.verdict.kind, VerdictKind::kAvailable) << text;
  EXPECT_EQ(report.verdict.exit_status, 0);
  EXPECT_EQ(LastLine(text), "direct path: AVAILABLE");
  EXPECT_NE(Line(text,
                 "[ ok ] query fgds_0000_03_00_0: module 0.1.0, BAR1 "
                 "64 GiB at 0x220000000000"),
            "")
      << text;
  EXPECT_EQ(Line(text, "[ ok ] p2p fgds_0000_03_00_0 <-> nvme0n1:"),
            "[ ok ] p2p fgds_0000_03_00_0 <-> nvme0n1: module accepts it "
            "(distance 4)")
      << text;
  EXPECT_NE(Line(text, "[ ok ] access fgds_0000_03_00_0: read-write"), "")
      << text;
}

TEST(ProbeSysfsTest, ModuleRefusingEveryRouteIsBounceOnly) {
  FakeHost host;
  host.AddBaseline();
  host.AddGpu(kGpuPath);
  host.AddNvme("nvme0", kNvmeSameSwitch);
  host.AddFgdsModule({kGpuBdf});
  ProbeReport report = RunProbe(HostFs(host.root()), FakeModule(-EREMOTEIO));
  EXPECT_EQ(report.verdict.kind, VerdictKind::kBounceOnly);
  ASSERT_EQ(report.verdict.reasons.size(), 1u);
  EXPECT_EQ(report.verdict.reasons[0], "module route: none passes");
}

TEST(ProbeSysfsTest, NodeThatIsNotTheModuleFails) {
  // The real binary on a fake node (a regular file): QUERY gets ENOTTY.
  FakeHost host;
  host.AddBaseline();
  host.AddGpu(kGpuPath);
  host.AddNvme("nvme0", kNvmeSameSwitch);
  host.AddFgdsModule({kGpuBdf});
  RunResult r = RunFgdsProbe(host.root());
  EXPECT_NE(Line(r.output, "[ ok ] fgds module: loaded, version 0.1.0"), "")
      << r.output;
  EXPECT_NE(Line(r.output,
                 "[FAIL] query fgds_0000_03_00_0: "
                 "FGDS_IOCTL_QUERY: Inappropriate ioctl"),
            "")
      << r.output;
  EXPECT_TRUE(absl::StartsWith(LastLine(r.output), "bounce path only ("))
      << r.output;
  EXPECT_EQ(r.exit_status, 1);
}

TEST(ProbeSysfsTest, OtherRootPortIsWarnOnly) {
  FakeHost host;
  host.AddBaseline();
  host.AddGpu(kGpuPath);
  host.AddNvme("nvme0", kNvmeOtherRootPort);
  host.AddFgdsModule({kGpuBdf});
  ProbeReport report = RunProbe(HostFs(host.root()), FakeModule(0));
  std::string text = FormatText(report);
  EXPECT_EQ(Line(text, "[warn] route"),
            "[warn] route 0000:03:00.0 <-> nvme0: same root complex only "
            "(via pci0000:00)")
      << text;
  EXPECT_EQ(report.verdict.kind, VerdictKind::kAvailable) << text;

  RunResult r = RunFgdsProbe(host.root());
  EXPECT_NE(Line(r.output, "[warn] route 0000:03:00.0 <-> nvme0"), "")
      << r.output;
  EXPECT_EQ(r.exit_status, 1);  // the fake node cannot answer QUERY
}

TEST(ProbeSysfsTest, OtherRootComplexFails) {
  FakeHost host;
  host.AddBaseline();
  host.AddGpu(kGpuPath, /*numa_node=*/0);
  host.AddNvme("nvme0", kNvmeOtherRootComplex, /*numa_node=*/1);
  RunResult r = RunFgdsProbe(host.root());
  EXPECT_EQ(Line(r.output, "[FAIL] route"),
            "[FAIL] route 0000:03:00.0 <-> nvme0: different root complexes "
            "(pci0000:00 vs pci0000:80, NUMA 0 vs 1)")
      << r.output;
  EXPECT_TRUE(
      absl::StrContains(LastLine(r.output), "GPU-NVMe route: none passes"))
      << r.output;
  EXPECT_EQ(r.exit_status, 1);
}

TEST(ProbeSysfsTest, OneGoodPairOfTwoIsEnough) {
  FakeHost host;
  host.AddBaseline();
  host.AddGpu(kGpuPath);
  host.AddNvme("nvme0", kNvmeSameSwitch);
  host.AddNvme("nvme1", kNvmeOtherRootComplex, /*numa_node=*/1);
  host.AddFgdsModule({kGpuBdf});
  ProbeReport report = RunProbe(HostFs(host.root()), FakeModule(0));
  EXPECT_EQ(report.verdict.kind, VerdictKind::kAvailable) << FormatText(report);
}

TEST(ProbeSysfsTest, ManyPairsFoldIntoOneLinePerGpu) {
  // 2 GPUs x 9 NVMe = 18 pairs > kMaxPairLines.
  FakeHost host;
  host.AddBaseline();
  host.AddGpu(kGpuPath);
  host.AddGpu("pci0000:80/0000:80:02.0/0000:82:00.0", /*numa_node=*/1);
  host.AddNvme("nvme0", kNvmeSameSwitch);
  for (int i = 1; i < 9; ++i) {
    host.AddNvme(
        absl::StrCat("nvme", i),
        absl::StrCat("pci0000:00/0000:00:02.", i, "/0000:1", i, ":00.0"));
  }
  host.AddFgdsModule({kGpuBdf, "0000:82:00.0"});
  ProbeReport report = RunProbe(HostFs(host.root()), FakeModule(0));
  std::string text = FormatText(report);
  EXPECT_EQ(Line(text, "[ ok ] route 0000:03:00.0: "),
            "[ ok ] route 0000:03:00.0: ok: nvme0; warn: nvme1 nvme2 nvme3 "
            "nvme4 nvme5 nvme6 nvme7 nvme8")
      << text;
  EXPECT_EQ(Line(text, "[FAIL] route 0000:82:00.0: "),
            "[FAIL] route 0000:82:00.0: fail: nvme0 nvme1 nvme2 nvme3 nvme4 "
            "nvme5 nvme6 nvme7 nvme8")
      << text;
  EXPECT_NE(Line(text, "[ ok ] p2p fgds_0000_82_00_0: ok: nvme0n1 "), "")
      << text;
  EXPECT_EQ(Line(text, "[ ok ] route 0000:03:00.0 <-> "), "") << text;
  // Each GPU line ends with its number for `fgds mount --gpus`.
  EXPECT_TRUE(absl::EndsWith(Line(text, "[ ok ] gpu 0000:03:00.0: "),
                             ", NUMA 0, --gpus index 0"))
      << text;
  EXPECT_TRUE(absl::EndsWith(Line(text, "[ ok ] gpu 0000:82:00.0: "),
                             ", NUMA 1, --gpus index 1"))
      << text;
  EXPECT_EQ(report.verdict.kind, VerdictKind::kAvailable) << text;
}

TEST(ProbeSysfsTest, NoGpuIsNotAvailable) {
  FakeHost host;
  host.AddBaseline();
  host.Remove("/sys/module/nvidia");
  host.Remove("/proc/driver/nvidia");
  host.AddNvme("nvme0", kNvmeOtherRootPort);
  RunResult r = RunFgdsProbe(host.root());
  EXPECT_NE(Line(r.output, "[FAIL] gpu: no NVIDIA GPU"), "") << r.output;
  EXPECT_NE(Line(r.output, "[ -- ] nvidia module: not loaded (no GPU)"), "")
      << r.output;
  EXPECT_EQ(Line(r.output, "[ ok ] route"), "") << r.output;
  EXPECT_TRUE(absl::StartsWith(LastLine(r.output),
                               "direct path: NOT AVAILABLE (gpu: no NVIDIA "
                               "GPU; fgds module: not loaded)"))
      << r.output;
  EXPECT_EQ(r.exit_status, 1);
}

TEST(ProbeSysfsTest, TranslatedIommuSmallBarProprietaryDriver) {
  FakeHost host;
  host.AddBaseline();
  host.Write("/proc/cmdline", "quiet intel_iommu=on\n");
  host.Write("/proc/driver/nvidia/version",
             "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.07\n");
  host.Write("/sys/module/nvidia_drm/version", "535.161.07\n");
  host.AddGpu(kGpuPath, 0, kSmallBar1Resource);
  host.Write(std::string("/sys/devices/") + kGpuPath + "/iommu_group/type",
             "DMA-FQ\n");
  host.AddNvme("nvme0", kNvmeSameSwitch);
  RunResult r = RunFgdsProbe(host.root());
  EXPECT_NE(Line(r.output, "[FAIL] iommu: translated"), "") << r.output;
  EXPECT_NE(Line(r.output, "[FAIL] gpu dma-buf: proprietary module"), "")
      << r.output;
  EXPECT_NE(Line(r.output, "[warn] nvidia_drm: loaded"), "") << r.output;
  EXPECT_NE(Line(r.output,
                 "[warn] gpu 0000:03:00.0: [10de:2330] BAR1 256 "
                 "MiB"),
            "")
      << r.output;
  EXPECT_EQ(r.exit_status, 1);
}

// The H200 of the device machine (a VM): BAR0 is 64-bit, so the 256 GiB
// aperture NVIDIA calls BAR1 is PCI resource 2 (read off its sysfs).
TEST(ProbeSysfsTest, ApertureIsTheLargestPrefetchableBarWhateverItsIndex) {
  FakeHost host;
  host.AddBaseline();
  host.AddGpu(kGpuPath, 0,
              "0x0000104002000000 0x0000104002ffffff 0x000000000014220c\n"
              "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
              "0x0000100000000000 0x0000103fffffffff 0x000000000014220c\n"
              "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
              "0x0000104000000000 0x0000104001ffffff 0x000000000014220c\n"
              "0x0000000000000000 0x0000000000000000 0x0000000000000000\n");
  RunResult r = RunFgdsProbe(host.root());
  EXPECT_NE(Line(r.output,
                 "[ ok ] gpu 0000:03:00.0: [10de:2330] BAR2 256 GiB "
                 "prefetchable 64-bit"),
            "")
      << r.output;
}

TEST(ProbeSysfsTest, GpuOnAnotherDriverFails) {
  FakeHost host;
  host.AddBaseline();
  host.AddGpu(kGpuPath);
  host.Remove(std::string("/sys/devices/") + kGpuPath + "/driver");
  host.Mkdir("/sys/bus/pci/drivers/vfio-pci");
  host.Link(std::string("/sys/devices/") + kGpuPath + "/driver",
            "/sys/bus/pci/drivers/vfio-pci");
  host.AddNvme("nvme0", kNvmeSameSwitch);
  RunResult r = RunFgdsProbe(host.root());
  EXPECT_NE(Line(r.output,
                 "[FAIL] gpu 0000:03:00.0: [10de:2330] BAR1 64 GiB "
                 "prefetchable 64-bit, NUMA 0, driver vfio-pci"),
            "")
      << r.output;
  EXPECT_EQ(r.exit_status, 1);
}

TEST(ProbeSysfsTest, MissingConfigAndOldKernel) {
  FakeHost host;
  host.AddBaseline();
  host.Write("/proc/sys/kernel/osrelease", "5.10.0-28-amd64\n");
  host.Remove("/boot");
  RunResult r = RunFgdsProbe(host.root());
  EXPECT_NE(Line(r.output, "[FAIL] kernel: 5.10.0-28-amd64"), "") << r.output;
  EXPECT_NE(Line(r.output, "[ -- ] kernel config: unknown"), "") << r.output;
  EXPECT_EQ(r.exit_status, 1);
}

TEST(ProbeSysfsTest, JsonOutput) {
  FakeHost host;
  host.AddBaseline();
  host.AddGpu(kGpuPath);
  host.AddNvme("nvme0", kNvmeSameSwitch);
  RunResult r = RunFgdsProbe(host.root(), "--json");
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_TRUE(absl::StrContains(r.output, "\"verdict\": \"bounce_only\""))
      << r.output;
  EXPECT_TRUE(absl::StrContains(
      r.output,
      "{\"name\": \"route 0000:03:00.0 <-> nvme0\", \"level\": \"ok\""))
      << r.output;
  EXPECT_TRUE(absl::StrContains(r.output, "\"exit_status\": 1")) << r.output;
  EXPECT_TRUE(absl::StartsWith(r.output, "{\n")) << r.output;
}

TEST(ProbeSysfsTest, UsageErrors) {
  FakeHost host;
  EXPECT_EQ(RunFgdsProbe(host.root(), "--bogus").exit_status, 2);
  EXPECT_EQ(RunFgdsProbe(host.root() + "/does-not-exist").exit_status, 2);
  // An empty tree is a host with nothing: it must not crash.
  RunResult r = RunFgdsProbe(host.root());
  EXPECT_EQ(r.exit_status, 1) << r.output;
  EXPECT_TRUE(
      absl::StartsWith(LastLine(r.output), "direct path: NOT AVAILABLE"))
      << r.output;
}

}  // namespace
}  // namespace fgds::probe
