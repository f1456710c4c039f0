#include "backend/remote/agent/corrupting_proxy.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace fgds::remote {
namespace {

// How often the threads look at stop_.
constexpr int kPollMs = 20;

// Sends all of `data` on a non-blocking socket: false if the peer is gone.
bool SendAll(int fd, const uint8_t* data, size_t size) {
  while (size > 0) {
    ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      struct pollfd p = {fd, POLLOUT, 0};
      poll(&p, 1, kPollMs);
      continue;
    }
    return false;
  }
  return true;
}

}  // namespace

CorruptingProxy::CorruptingProxy(HostPort agent, Direction direction,
                                 uint64_t at, int corrupt_connections)
    : agent_(std::move(agent)),
      direction_(direction),
      at_(at),
      corrupt_connections_(corrupt_connections) {
  auto fd = ListenTcp({"127.0.0.1", 0}, 16);
  if (!fd.ok()) {
    fprintf(stderr, "CorruptingProxy: %s\n", fd.status().ToString().c_str());
    abort();  // tests only: nothing can be tested without it
  }
  listen_fd_ = *fd;
  auto bound = ParseHostPort(LocalAddressOf(listen_fd_));
  port_ = bound.ok() ? bound->port : 0;
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

CorruptingProxy::~CorruptingProxy() {
  stop_ = true;
  accept_thread_.join();
  std::vector<std::thread> pumps;
  {
    fgds::MutexLock lock(&mu_);
    pumps.swap(pumps_);
  }
  for (std::thread& t : pumps) t.join();
  close(listen_fd_);
}

void CorruptingProxy::AcceptLoop() {
  while (!stop_) {
    struct pollfd p = {listen_fd_, POLLIN, 0};
    if (poll(&p, 1, kPollMs) <= 0) continue;
    int daemon_fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (daemon_fd < 0) continue;
    int agent_fd = ConnectTcp(agent_, 2000);
    if (agent_fd < 0) {
      close(daemon_fd);
      continue;
    }
    const bool corrupt = connections_.fetch_add(1) < corrupt_connections_;
    fgds::MutexLock lock(&mu_);
    pumps_.emplace_back([this, daemon_fd, agent_fd, corrupt] {
      Pump(daemon_fd, agent_fd, corrupt);
    });
  }
}

void CorruptingProxy::Pump(int daemon_fd, int agent_fd, bool corrupt) {
  // fds[0]: daemon side (its bytes go to the agent); fds[1]: agent side.
  struct pollfd fds[2] = {{daemon_fd, POLLIN, 0}, {agent_fd, POLLIN, 0}};
  uint64_t forwarded[2] = {0, 0};  // per source
  const int corrupt_source = direction_ == kToAgent ? 0 : 1;
  uint8_t buf[65536];
  while (!stop_) {
    if (poll(fds, 2, kPollMs) <= 0) continue;
    bool closed = false;
    for (int i = 0; i < 2 && !closed; ++i) {
      if (fds[i].revents == 0) continue;
      ssize_t n = recv(fds[i].fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) {
        closed = true;
        break;
      }
      const uint64_t from = forwarded[i];
      forwarded[i] += static_cast<uint64_t>(n);
      if (corrupt && i == corrupt_source && at_ >= from && at_ < forwarded[i]) {
        buf[at_ - from] ^= 0x5a;
        flipped_.fetch_add(1);
      }
      closed = !SendAll(fds[1 - i].fd, buf, static_cast<size_t>(n));
    }
    if (closed) break;
  }
  close(daemon_fd);
  close(agent_fd);
}

}  // namespace fgds::remote
