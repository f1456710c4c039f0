#include "fusefs/session/wire_parse.h"

#include <cerrno>
#include <cstring>

#include "fgds/usrbio.h"

namespace fgds::session {
namespace {

size_t PayloadSize(uint16_t type) {
  switch (type) {
    case FGDS_MSG_HELLO:
      return sizeof(fgds_msg_hello);
    case FGDS_MSG_IOV_REGISTER:
      return sizeof(fgds_msg_iov_register);
    case FGDS_MSG_GPU_IOV_REGISTER:
      return sizeof(fgds_msg_gpu_iov_register);
    case FGDS_MSG_IOV_GPU_STAGING:
      return sizeof(fgds_msg_iov_gpu_staging);
    case FGDS_MSG_IOR_REGISTER:
      return sizeof(fgds_msg_ior_register);
    case FGDS_MSG_FD_REGISTER:
      return sizeof(fgds_msg_fd_register);
    case FGDS_MSG_IOV_UNREGISTER:
    case FGDS_MSG_IOR_UNREGISTER:
    case FGDS_MSG_FD_UNREGISTER:
      return sizeof(fgds_msg_unregister);
    default:
      return 0;
  }
}

// A C string that fills its field exactly: a NUL, and only NULs after it,
// so every reader sees the same text (and nothing hides behind the NUL).
bool TerminatedText(const char* text, size_t size) {
  size_t i = 0;
  while (i < size && text[i] != '\0') ++i;
  if (i == size) return false;
  for (; i < size; ++i) {
    if (text[i] != '\0') return false;
  }
  return true;
}

// Reserved words and flags (and text fields, TerminatedText): nonzero means
// a newer client or garbage; either way this daemon cannot honour it
// (botching-up-ioctls.rst).
bool ReservedClear(const Request& r) {
  switch (r.header.type) {
    case FGDS_MSG_HELLO:
      return r.hello.flags == 0 && r.hello.reserved[0] == 0 &&
             r.hello.reserved[1] == 0 && r.hello.reserved[2] == 0;
    case FGDS_MSG_IOV_REGISTER:
      return r.iov_register.flags == 0 && r.iov_register.reserved == 0;
    case FGDS_MSG_GPU_IOV_REGISTER:
      return r.gpu_iov_register.flags == 0 &&
             r.gpu_iov_register.reserved0 == 0 &&
             r.gpu_iov_register.reserved[0] == 0 &&
             r.gpu_iov_register.reserved[1] == 0 &&
             TerminatedText(r.gpu_iov_register.pci_bus_id,
                            sizeof(r.gpu_iov_register.pci_bus_id));
    case FGDS_MSG_IOV_GPU_STAGING:
      return r.iov_gpu_staging.flags == 0 && r.iov_gpu_staging.reserved == 0 &&
             TerminatedText(r.iov_gpu_staging.pci_bus_id,
                            sizeof(r.iov_gpu_staging.pci_bus_id));
    case FGDS_MSG_IOR_REGISTER:
      return (r.ior_register.flags & ~FGDS_IOR_VALID_FLAGS) == 0 &&
             r.ior_register.reserved == 0;
    case FGDS_MSG_FD_REGISTER:
      return r.fd_register.flags == 0 && r.fd_register.reserved == 0;
    default:
      return r.unregister.reserved == 0;
  }
}

}  // namespace

int ExpectedFds(uint16_t type) {
  switch (type) {
    case FGDS_MSG_HELLO:
    case FGDS_MSG_IOV_GPU_STAGING:
    case FGDS_MSG_IOV_UNREGISTER:
    case FGDS_MSG_IOR_UNREGISTER:
    case FGDS_MSG_FD_UNREGISTER:
      return 0;
    case FGDS_MSG_IOV_REGISTER:
    case FGDS_MSG_GPU_IOV_REGISTER:
    case FGDS_MSG_FD_REGISTER:
      return 1;
    case FGDS_MSG_IOR_REGISTER:
      return 3;
    default:
      return -1;
  }
}

int ParseRequest(const void* data, size_t len, int nfds, Request* out) {
  if (len < sizeof(fgds_msg_header) || len > FGDS_WIRE_MAX_MESSAGE) {
    return -EPROTO;
  }
  // Copy out first: everything below reads only the copy.
  fgds_msg_header header;
  memcpy(&header, data, sizeof(header));
  if (header.magic != FGDS_WIRE_MAGIC || header.version != FGDS_WIRE_VERSION ||
      header.length != len) {
    return -EPROTO;
  }
  const int fds = ExpectedFds(header.type);
  const size_t payload = PayloadSize(header.type);
  if (fds < 0 || payload == 0 || len != sizeof(header) + payload ||
      nfds != fds) {
    return -EPROTO;
  }
  memset(out, 0, sizeof(*out));
  out->header = header;
  static_assert(sizeof(out->raw) >= sizeof(fgds_msg_ior_register) &&
                sizeof(out->raw) >= sizeof(fgds_msg_gpu_iov_register));
  memcpy(out->raw, static_cast<const char*>(data) + sizeof(header), payload);
  return ReservedClear(*out) ? 0 : -EPROTO;
}

}  // namespace fgds::session
