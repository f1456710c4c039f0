// File: usrbio/direct/c_api_internal.h
//
// For tests only: wraps a Driver built on any DeviceOps (fake device memory)
// in an fgds_driver, so that the C API's batch and async paths are tested
// without a GPU. Release it with fgds_driver_close.
#ifndef FGDS_USRBIO_DIRECT_C_API_INTERNAL_H_
#define FGDS_USRBIO_DIRECT_C_API_INTERNAL_H_

#include <memory>

#include "fgds/fgds.h"
#include "usrbio/direct/driver.h"

namespace fgds::direct {

fgds_driver* WrapDriverForTesting(std::unique_ptr<Driver> driver);

}  // namespace fgds::direct

#endif  // FGDS_USRBIO_DIRECT_C_API_INTERNAL_H_
