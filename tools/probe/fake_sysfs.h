// File: tools/probe/fake_sysfs.h
//
// A fake host tree (/sys, /proc, /boot, /dev) in a temp dir, for running
// `fgds probe --sysfs-root` in tests. Links are relative so that they
// resolve inside the tree, as HostFs::RealPath requires.
#ifndef FGDS_TOOLS_PROBE_FAKE_SYSFS_H_
#define FGDS_TOOLS_PROBE_FAKE_SYSFS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace fgds::probe {

// A 64 GiB prefetchable 64-bit BAR1, as on an H100.
extern const char kBigBar1Resource[];
// A 256 MiB BAR1, as on a GPU without Resizable BAR.
extern const char kSmallBar1Resource[];
// An NVMe controller's single 16 KiB BAR0.
extern const char kNvmeResource[];

class FakeHost {
 public:
  // Creates an empty tree under $TMPDIR (or /tmp).
  FakeHost();
  // Removes the tree.
  ~FakeHost();
  FakeHost(const FakeHost&) = delete;
  FakeHost& operator=(const FakeHost&) = delete;

  const std::string& root() const { return root_; }

  // Write creates `host_path` (and its parents) holding `content`.
  void Write(const std::string& host_path, const std::string& content);
  void Mkdir(const std::string& host_path);
  void Remove(const std::string& host_path);
  // Link makes `host_path` a relative symlink to `target`.
  void Link(const std::string& host_path, const std::string& target);

  // Baseline: kernel 6.1 with every config symbol set, iommu=pt, module
  // support, and NVIDIA's open module 550 loaded.
  void AddBaseline();

  // AddPciDevice creates /sys/devices/<path> (e.g. "pci0000:00/0000:00:
  // 01.0/0000:03:00.0"), its attributes, and the /sys/bus/pci/devices
  // link named after the last component. The bridges on the way are
  // created as plain directories.
  void AddPciDevice(const std::string& path, uint32_t vendor, uint32_t device,
                    uint32_t pci_class, const std::string& resource,
                    int numa_node);
  // AddGpu: an H100 (10de:2330, class 0x030200).
  void AddGpu(const std::string& path, int numa_node = 0,
              const std::string& resource = kBigBar1Resource);
  // AddNvme: a PCIe NVMe controller `ctrl` ("nvme0") at `path` with
  // namespace nvme<N>n1 in /sys/class/block and /dev.
  void AddNvme(const std::string& ctrl, const std::string& path,
               int numa_node = 0);
  // AddFgdsModule: /sys/module/fgds, plus a /dev node (a regular file:
  // it cannot answer FGDS_IOCTL_QUERY) for each BDF in `nodes_for`.
  void AddFgdsModule(const std::vector<std::string>& nodes_for);

 private:
  std::string Host(const std::string& host_path) const;

  std::string root_;
};

}  // namespace fgds::probe

#endif  // FGDS_TOOLS_PROBE_FAKE_SYSFS_H_
