// File: usrbio/direct/cuda_device_ops.h
//
// DeviceOps on the CUDA driver API (loaded by usrbio/cuda). Uses the
// context that was current when it was created, or the device's primary
// context when asked to; never creates one of its own. Its pinned staging
// is placed on the GPU's NUMA node (sysfs), where the host has NUMA.
#ifndef FGDS_USRBIO_DIRECT_CUDA_DEVICE_OPS_H_
#define FGDS_USRBIO_DIRECT_CUDA_DEVICE_OPS_H_

#include <memory>
#include <string>

#include "usrbio/direct/device_ops.h"

namespace fgds::direct {

// MakeCudaDeviceOps: with `primary_context`, retains the primary context of
// device `device` (released by the returned object's destructor); else
// takes the calling thread's current context (-EINVAL when none). Returns
// -ENODEV/-ENOTSUP when CUDA is unusable, with `message` saying why.
// Either way the device must be in the process's GPU subset (FGDS_GPUS,
// usrbio/cuda/gpu_allowed.h), else -ENODEV.
int MakeCudaDeviceOps(bool primary_context, int device,
                      std::unique_ptr<DeviceOps>* out, std::string* message);

// MakeCudaDeviceOpsForBuffer: DeviceOps on the device that device address
// `address` lives on (CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL), whichever
// context is current on the calling thread, if any (GPU iovs: the buffer,
// not the thread, decides the device). The context is the calling thread's
// current one when it is on that device (the application's own, perhaps
// not a primary one), else the buffer's allocation context when that is
// not the device's primary context, else the device's primary context
// (retained until the returned object goes). With `primary_context`, the
// device's primary context, and `device` must be the buffer's: -EXDEV
// otherwise. -EFAULT: not device memory; -ENODEV: outside FGDS_GPUS.
int MakeCudaDeviceOpsForBuffer(uint64_t address, bool primary_context,
                               int device, std::unique_ptr<DeviceOps>* out,
                               std::string* message);

}  // namespace fgds::direct

#endif  // FGDS_USRBIO_DIRECT_CUDA_DEVICE_OPS_H_
