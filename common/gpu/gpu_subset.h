// File: common/gpu/gpu_subset.h
//
// GPU subset selection: which GPUs an FGDS process may use, named the way
// operators name GPUs. A spec is a comma-separated list of entries, each
//   - an index ("0", "2"): for the client library the CUDA device ordinal
//     as the process sees it (after CUDA_VISIBLE_DEVICES); for the daemon,
//     which has no CUDA, the GPU's place in PCI address order (as
//     nvidia-smi numbers GPUs, and CUDA with CUDA_DEVICE_ORDER=PCI_BUS_ID);
//   - a PCI address ("0000:3b:00.0", or "3b:00.0" for domain 0), any case;
//   - a GPU UUID ("GPU-5e0c0e4a-...", as nvidia-smi -L prints it), any case.
// "" and "all" select every GPU. Used by the daemon (`fgds mount --gpus`)
// and the client libraries (FGDS_GPUS); docs/gpu.md, "Several GPUs".
//
// Pure: no I/O (the GPU lists come from gpu_sysfs.h or CUDA), unit-tested.
//
// Example:
//   GpuSubset subset;
//   std::string why;
//   if (ParseGpuSubset("0,0000:3b:00.0", &subset, &why) != 0) fail(why);
//   if (!subset.Contains({.index = 1, .pci_bus_id = "0000:3b:00.0"})) ...
#ifndef FGDS_COMMON_GPU_GPU_SUBSET_H_
#define FGDS_COMMON_GPU_GPU_SUBSET_H_

#include <string>
#include <string_view>
#include <vector>

namespace fgds::gpu {

// One GPU as a subset entry can name it. Unknown fields stay empty (-1):
// an entry of that kind then never matches it.
struct GpuIdentity {
  int index = -1;
  std::string pci_bus_id;  // normalized: "0000:3b:00.0"
  std::string uuid;        // normalized: "gpu-5e0c..." (lower case)
};

struct GpuSubset {
  struct Entry {
    enum class Kind { kIndex, kPci, kUuid };
    Kind kind = Kind::kIndex;
    int index = -1;
    std::string text;  // normalized PCI address or UUID
  };
  bool all = true;  // "" or "all"
  std::vector<Entry> entries;
  std::string spec;  // as given, for messages

  // Contains: whether `gpu` is selected.
  bool Contains(const GpuIdentity& gpu) const;
};

// ParseGpuSubset parses `spec` into *out. Returns 0, or -EINVAL with a
// message naming the bad entry (empty entries, negative or huge indexes,
// text that is neither an index, a PCI address nor a UUID).
int ParseGpuSubset(std::string_view spec, GpuSubset* out, std::string* message);

// NormalizePciBusId turns "0000:3B:00.0" or "3b:00.0" into
// "0000:3b:00.0"; returns "" for text that is not a PCI address.
std::string NormalizePciBusId(std::string_view text);

// CheckSubsetNamesGpus: 0 when every entry of `subset` names one of `gpus`,
// else -ENODEV and a message listing what there is, so that a typo in
// --gpus or FGDS_GPUS is an error at start instead of a GPU silently left
// out. `what` names the option in the message ("--gpus", "FGDS_GPUS").
int CheckSubsetNamesGpus(const GpuSubset& subset,
                         const std::vector<GpuIdentity>& gpus,
                         std::string_view what, std::string* message);

// A subset resolved against the GPUs of a host: the PCI addresses it
// selects. What a process keeps after start, so that a GPU's place in a
// list is looked up once.
struct GpuAllowList {
  bool all = true;
  std::vector<std::string> pci_bus_ids;  // normalized; when !all
  std::string spec;                      // as given, for messages

  // Allows: whether the GPU at `pci_bus_id` (any case or form that
  // NormalizePciBusId accepts) is selected.
  bool Allows(std::string_view pci_bus_id) const;
};

// ResolveGpuSubset: the allow list of `subset` over `gpus`. REQUIRES:
// CheckSubsetNamesGpus passed, if entries must name GPUs.
GpuAllowList ResolveGpuSubset(const GpuSubset& subset,
                              const std::vector<GpuIdentity>& gpus);

// Describe: "GPU 1 (0000:3b:00.0)" for messages.
std::string Describe(const GpuIdentity& gpu);

}  // namespace fgds::gpu

#endif  // FGDS_COMMON_GPU_GPU_SUBSET_H_
