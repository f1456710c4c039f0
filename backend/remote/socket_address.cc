#include "backend/remote/socket_address.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "backend/remote/frame_stream.h"
#include "common/errno_status.h"

namespace fgds::remote {
namespace {

std::string FormatAddress(const struct sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const struct sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
    return absl::StrCat(host, ":", port);
  }
  if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const struct sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    port = ntohs(in6->sin6_port);
    return absl::StrCat("[", host, "]:", port);
  }
  return "?";
}

struct AddrInfoDeleter {
  void operator()(struct addrinfo* ai) const { freeaddrinfo(ai); }
};

int Resolve(const HostPort& address, bool passive,
            std::unique_ptr<struct addrinfo, AddrInfoDeleter>* out) {
  struct addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  const std::string port = std::to_string(address.port);
  struct addrinfo* list = nullptr;
  int rc = getaddrinfo(address.host.c_str(), port.c_str(), &hints, &list);
  if (rc != 0) return rc;
  out->reset(list);
  return 0;
}

}  // namespace

absl::StatusOr<HostPort> ParseHostPort(const std::string& text) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("address '", text, "': ", why, " (want HOST:PORT)"));
  };
  HostPort out;
  std::string port;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() ||
        text[close + 1] != ':') {
      return bad("unclosed '[' or no port");
    }
    out.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) return bad("no port");
    out.host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (out.host.find(':') != std::string::npos) {
      return bad("an IPv6 host needs brackets");
    }
  }
  if (out.host.empty()) return bad("no host");
  unsigned value = 0;
  auto [end, ec] =
      std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() ||
      value > 65535) {
    return bad("the port is not a number from 0 to 65535");
  }
  out.port = static_cast<uint16_t>(value);
  return out;
}

absl::StatusOr<std::vector<HostPort>> ParseHostPortList(
    const std::string& text) {
  std::vector<HostPort> out;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    if (item.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("address list '", text, "': an empty item"));
    }
    auto one = ParseHostPort(std::string(item));
    if (!one.ok()) return one.status();
    out.push_back(*one);
  }
  return out;
}

int ConnectTcp(const HostPort& address, int timeout_ms) {
  std::unique_ptr<struct addrinfo, AddrInfoDeleter> list;
  if (Resolve(address, false, &list) != 0) return -EHOSTUNREACH;
  const int64_t deadline = DeadlineFrom(timeout_ms);
  int err = EHOSTUNREACH;
  for (struct addrinfo* ai = list.get(); ai != nullptr; ai = ai->ai_next) {
    int fd =
        socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
               ai->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      int64_t left = deadline < 0 ? -1 : deadline - NowMs();
      struct pollfd p = {fd, POLLOUT, 0};
      int n =
          left == 0 ? 0 : poll(&p, 1, left < 0 ? -1 : static_cast<int>(left));
      if (n <= 0) {
        err = n == 0 ? ETIMEDOUT : errno;
        close(fd);
        continue;
      }
      socklen_t len = sizeof(err);
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
    } else if (rc != 0) {
      err = errno;
    }
    if (rc != 0) {
      close(fd);
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
  }
  return -err;
}

absl::StatusOr<int> ListenTcp(const HostPort& address, int backlog) {
  std::unique_ptr<struct addrinfo, AddrInfoDeleter> list;
  const std::string name = absl::StrCat(address.host, ":", address.port);
  if (int rc = Resolve(address, true, &list); rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen address ", name, ": ", gai_strerror(rc)));
  }
  int err = EADDRNOTAVAIL;
  for (struct addrinfo* ai = list.get(); ai != nullptr; ai = ai->ai_next) {
    int fd =
        socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
        listen(fd, backlog) != 0) {
      err = errno;
      close(fd);
      continue;
    }
    return fd;
  }
  return PosixError(absl::StrCat("listen on ", name), err);
}

std::string LocalAddressOf(int fd) {
  struct sockaddr_storage ss = {};
  socklen_t len = sizeof(ss);
  if (getsockname(fd, reinterpret_cast<struct sockaddr*>(&ss), &len) != 0) {
    return "?";
  }
  return FormatAddress(ss);
}

std::string PeerAddressOf(int fd) {
  struct sockaddr_storage ss = {};
  socklen_t len = sizeof(ss);
  if (getpeername(fd, reinterpret_cast<struct sockaddr*>(&ss), &len) != 0) {
    return "?";
  }
  return FormatAddress(ss);
}

}  // namespace fgds::remote
