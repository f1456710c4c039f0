// File: usrbio/cuda/gpu_allowed.h
//
// The client libraries' GPU subset: FGDS_GPUS (common/gpu/gpu_subset.h
// syntax; indexes are CUDA device ordinals as this process sees them) names
// the GPUs that libfgds drivers and usrbio GPU iovs may use. Read and
// checked once per process, on first use. A device outside the subset is
// refused with -ENODEV and a message: the client side has no path that
// avoids touching the GPU (the bounce path's copies run on it too), so
// "bounce instead" is no answer here; the daemon's --gpus only limits its
// direct path (docs/gpu.md, "Several GPUs").
#ifndef FGDS_USRBIO_CUDA_GPU_ALLOWED_H_
#define FGDS_USRBIO_CUDA_GPU_ALLOWED_H_

#include <string>

#include "common/gpu/gpu_subset.h"
#include "usrbio/cuda/cuda_types.h"

namespace fgds::cuda {

struct CudaApi;

// DeviceIdentity: `device`'s ordinal, PCI address (cuDeviceGetPCIBusId) and
// UUID (the NVIDIA driver's /proc file), as subset entries name GPUs.
gpu::GpuIdentity DeviceIdentity(const CudaApi& api, CUdevice device);

// CheckGpuAllowedBy: 0 when `subset` selects `device`, else -ENODEV and a
// message naming the device and `what` (the variable). Unit-testable.
int CheckGpuAllowedBy(const gpu::GpuSubset& subset, std::string_view what,
                      const gpu::GpuIdentity& device, std::string* message);

// CheckGpuAllowed applies FGDS_GPUS to `device`. A malformed FGDS_GPUS
// (-EINVAL) or one naming a GPU this process cannot see (-ENODEV) fails
// every call, with the reason, rather than using GPUs it did not mean.
int CheckGpuAllowed(const CudaApi& api, CUdevice device, std::string* message);

}  // namespace fgds::cuda

#endif  // FGDS_USRBIO_CUDA_GPU_ALLOWED_H_
