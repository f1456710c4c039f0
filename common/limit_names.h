// File: common/limit_names.h
//
// What each usrbio limit the daemon can refuse a request with is called
// (FGDS_LIMIT_*, include/fgds/usrbio.h), with the `fgds mount` option that
// changes it: the daemon logs it, the client library hands it to
// applications (fgds_limit_describe). libc only, for both sides.
//
// Thread safety: thread-safe (constant strings).
#ifndef FGDS_COMMON_LIMIT_NAMES_H_
#define FGDS_COMMON_LIMIT_NAMES_H_

#include <cstdint>

namespace fgds {

// A constant description of `limit`; "unknown limit" for other values.
const char* LimitDescription(uint32_t limit);

}  // namespace fgds

#endif  // FGDS_COMMON_LIMIT_NAMES_H_
