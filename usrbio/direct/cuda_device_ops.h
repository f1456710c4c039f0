// File: usrbio/direct/cuda_device_ops.h
//
// DeviceOps on the CUDA driver API (loaded by usrbio/cuda). Uses the
// context that was current when it was created, or the device's primary
// context when asked to; never creates one of its own.
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
int MakeCudaDeviceOps(bool primary_context, int device,
                      std::unique_ptr<DeviceOps>* out, std::string* message);

}  // namespace fgds::direct

#endif  // FGDS_USRBIO_DIRECT_CUDA_DEVICE_OPS_H_
