// File: fusefs/session/gpu_iov_test_message.h
//
// A GPU_IOV_REGISTER payload every check accepts, for the session tests
// (wire_parse_test.cc, gpu_iov_test.cc) to start from and break one field.
#ifndef FGDS_FUSEFS_SESSION_GPU_IOV_TEST_MESSAGE_H_
#define FGDS_FUSEFS_SESSION_GPU_IOV_TEST_MESSAGE_H_

#include <cstring>

#include "fgds/usrbio_wire.h"

namespace fgds::session {

inline fgds_msg_gpu_iov_register ValidGpuIovRegister() {
  fgds_msg_gpu_iov_register g = {};
  g.size = 1 << 20;
  g.dmabuf_offset = 4096;
  g.dmabuf_size = 2 << 20;
  std::strcpy(g.pci_bus_id, "0000:3B:00.0");
  return g;
}

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_GPU_IOV_TEST_MESSAGE_H_
