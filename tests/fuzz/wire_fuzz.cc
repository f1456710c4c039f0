// Fuzzes ParseRequest, the parser of every packet a usrbio client sends.
// Input: byte 0 = the number of descriptors that came with the packet
// (0..7), the rest = the packet. Beyond not crashing, an accepted packet
// must satisfy what the session relies on.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "fusefs/session/wire_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int nfds = data[0] & 7;
  fgds::session::Request request;
  if (fgds::session::ParseRequest(data + 1, size - 1, nfds, &request) != 0) {
    return 0;
  }
  const fgds_msg_header& h = request.header;
  if (h.magic != FGDS_WIRE_MAGIC || h.version != FGDS_WIRE_VERSION ||
      h.length != size - 1 || h.length > FGDS_WIRE_MAX_MESSAGE ||
      fgds::session::ExpectedFds(h.type) != nfds) {
    abort();  // accepted something malformed
  }
  if (h.type == FGDS_MSG_GPU_IOV_REGISTER) {
    // The daemon hands pci_bus_id to string functions: it must end inside
    // its field, and nothing may follow the NUL.
    const fgds_msg_gpu_iov_register& g = request.gpu_iov_register;
    const size_t n = strnlen(g.pci_bus_id, sizeof(g.pci_bus_id));
    if (n == sizeof(g.pci_bus_id) || g.flags != 0 || g.reserved0 != 0) abort();
    for (size_t i = n; i < sizeof(g.pci_bus_id); ++i) {
      if (g.pci_bus_id[i] != 0) abort();
    }
  }
  if (h.type == FGDS_MSG_IOV_GPU_STAGING) {
    const fgds_msg_iov_gpu_staging& t = request.iov_gpu_staging;
    const size_t n = strnlen(t.pci_bus_id, sizeof(t.pci_bus_id));
    if (n == sizeof(t.pci_bus_id) || t.flags != 0 || t.reserved != 0) abort();
    for (size_t i = n; i < sizeof(t.pci_bus_id); ++i) {
      if (t.pci_bus_id[i] != 0) abort();
    }
  }
  return 0;
}
