#include "usrbio/cuda/gpu_allowed.h"

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "common/gpu/gpu_sysfs.h"
#include "usrbio/cuda/cuda_api.h"
#include "usrbio/cuda/cuda_memory.h"

namespace fgds::cuda {
namespace {

constexpr char kVariable[] = "FGDS_GPUS";

// The process's subset, parsed and checked against its devices once.
struct Allowed {
  gpu::GpuSubset subset;
  int error = 0;
  std::string message;
};

const Allowed& LoadAllowed(const CudaApi& api) {
  static Allowed* allowed = [&api] {
    auto* a = new Allowed;  // never freed: read by every later call
    const char* spec = std::getenv(kVariable);
    a->error = gpu::ParseGpuSubset(spec != nullptr ? spec : "", &a->subset,
                                   &a->message);
    if (a->error != 0) {
      a->message = std::string(kVariable) + ": " + a->message;
      return a;
    }
    if (a->subset.all) return a;
    std::vector<gpu::GpuIdentity> devices;
    int count = 0;
    if (api.cuDeviceGetCount(&count) != kCudaSuccess) count = 0;
    for (int i = 0; i < count; ++i) {
      CUdevice device = 0;
      if (api.cuDeviceGet(&device, i) == kCudaSuccess) {
        devices.push_back(DeviceIdentity(api, device));
      }
    }
    a->error =
        gpu::CheckSubsetNamesGpus(a->subset, devices, kVariable, &a->message);
    return a;
  }();
  return *allowed;
}

}  // namespace

gpu::GpuIdentity DeviceIdentity(const CudaApi& api, CUdevice device) {
  gpu::GpuIdentity identity;
  identity.index = device;
  DeviceInfo info;
  std::string ignored;
  if (QueryDevice(api, device, &info, &ignored) == 0) {
    identity.pci_bus_id = gpu::NormalizePciBusId(info.pci_bus_id);
    identity.uuid = gpu::NvidiaGpuUuid("/proc", identity.pci_bus_id);
  }
  return identity;
}

int CheckGpuAllowedBy(const gpu::GpuSubset& subset, std::string_view what,
                      const gpu::GpuIdentity& device, std::string* message) {
  if (subset.Contains(device)) return 0;
  *message = gpu::Describe(device) + " is not in " + std::string(what) + "=" +
             subset.spec + ": use a GPU of the subset, or widen it";
  return -ENODEV;
}

int CheckGpuAllowed(const CudaApi& api, CUdevice device, std::string* message) {
  const Allowed& allowed = LoadAllowed(api);
  if (allowed.error != 0) {
    *message = allowed.message;
    return allowed.error;
  }
  if (allowed.subset.all) return 0;
  return CheckGpuAllowedBy(allowed.subset, kVariable,
                           DeviceIdentity(api, device), message);
}

}  // namespace fgds::cuda
