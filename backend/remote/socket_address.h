// File: backend/remote/socket_address.h
//
// HOST:PORT strings as `fgds agent --listen` and `fgds mount --agents` take
// them: "127.0.0.1:7070", "storage-3:7070", "[::1]:7070". Port 0 asks the
// kernel for a free port (listen only).
#ifndef FGDS_BACKEND_REMOTE_SOCKET_ADDRESS_H_
#define FGDS_BACKEND_REMOTE_SOCKET_ADDRESS_H_

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace fgds::remote {

struct HostPort {
  std::string host;
  uint16_t port = 0;
};

// Splits and checks "HOST:PORT" (brackets around an IPv6 host).
absl::StatusOr<HostPort> ParseHostPort(const std::string& text);
// A comma-separated list of them (`--agents`); empty items are refused.
absl::StatusOr<std::vector<HostPort>> ParseHostPortList(
    const std::string& text);

// Connects a TCP socket to `address` within `timeout_ms`, trying each
// address the name resolves to. Returns the connected descriptor
// (non-blocking, TCP_NODELAY set) or -errno.
int ConnectTcp(const HostPort& address, int timeout_ms);
// A listening TCP socket bound to `address`, or an error naming it.
absl::StatusOr<int> ListenTcp(const HostPort& address, int backlog);
// "HOST:PORT" of a socket's local or peer address.
std::string LocalAddressOf(int fd);
std::string PeerAddressOf(int fd);

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_SOCKET_ADDRESS_H_
