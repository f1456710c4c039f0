// File: fusefs/session/wire_parse.h
//
// ParseRequest: turns one received packet of a usrbio session into a typed
// request, or rejects it as malformed (usrbio_wire.h states the rules). It
// only looks at bytes and a descriptor count, so it is fuzzed as is
// (tests/fuzz/wire_fuzz.cc).
#ifndef FGDS_FUSEFS_SESSION_WIRE_PARSE_H_
#define FGDS_FUSEFS_SESSION_WIRE_PARSE_H_

#include <cstddef>
#include <cstdint>

#include "fgds/usrbio_wire.h"

namespace fgds::session {

struct Request {
  fgds_msg_header header;
  union {
    fgds_msg_hello hello;
    fgds_msg_iov_register iov_register;
    fgds_msg_gpu_iov_register gpu_iov_register;
    fgds_msg_iov_gpu_staging iov_gpu_staging;
    fgds_msg_ior_register ior_register;
    fgds_msg_fd_register fd_register;
    fgds_msg_unregister unregister;
    unsigned char raw[sizeof(fgds_msg_gpu_iov_register)];  // the largest
  };
};

// How many descriptors a request of `type` carries, or -1 for an unknown
// type.
int ExpectedFds(uint16_t type);

// Parses `len` bytes received with `nfds` descriptors. Returns 0 and fills
// *out, or -EPROTO for anything malformed: short or long packet, wrong
// magic/version/length, unknown type, a reply type from the client, nonzero
// reserved fields, unknown flags, the wrong number of descriptors, or a
// GPU_IOV_REGISTER pci_bus_id without a NUL or with bytes after it.
// Values that are well-formed but unacceptable (sizes, ids) are the
// handler's to reject.
int ParseRequest(const void* data, size_t len, int nfds, Request* out);

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_WIRE_PARSE_H_
