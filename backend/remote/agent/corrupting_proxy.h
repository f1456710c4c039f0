// File: backend/remote/agent/corrupting_proxy.h (tests only)
//
// CorruptingProxy: a hostile network between a daemon and an agent, for
// the tests of end-to-end payload checks. A real TCP peer: it accepts the
// daemon's connections, connects each to the agent, forwards the bytes
// both ways, and flips one byte (xor 0x5a) at a fixed position of one
// direction in each of the first `corrupt_connections` connections, as a
// bad NIC, switch or buffer would. The client and the agent under test are
// the real ones.
//
// Example:
//   CorruptingProxy proxy(agent, CorruptingProxy::kToDaemon, 200, 1);
//   options.agent = {"127.0.0.1", proxy.port()};  // the daemon's view
//
// Thread safety: the methods may be called while connections are pumped.
#ifndef FGDS_BACKEND_REMOTE_AGENT_CORRUPTING_PROXY_H_
#define FGDS_BACKEND_REMOTE_AGENT_CORRUPTING_PROXY_H_

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "backend/remote/socket_address.h"
#include "common/mutex.h"

namespace fgds::remote {

class CorruptingProxy {
 public:
  enum Direction { kToAgent, kToDaemon };
  // Listens on 127.0.0.1 (a free port). `at`: the 0-based offset of the
  // byte to flip in the chosen direction's stream of a connection.
  CorruptingProxy(HostPort agent, Direction direction, uint64_t at,
                  int corrupt_connections);
  // Closes every connection and joins the threads.
  ~CorruptingProxy();
  CorruptingProxy(const CorruptingProxy&) = delete;
  CorruptingProxy& operator=(const CorruptingProxy&) = delete;

  uint16_t port() const { return port_; }
  int connections() const { return connections_.load(); }
  int flipped() const { return flipped_.load(); }

 private:
  void AcceptLoop();
  void Pump(int daemon_fd, int agent_fd, bool corrupt);

  const HostPort agent_;
  const Direction direction_;
  const uint64_t at_;
  const int corrupt_connections_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::atomic<int> flipped_{0};
  std::thread accept_thread_;
  fgds::Mutex mu_;
  std::vector<std::thread> pumps_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_AGENT_CORRUPTING_PROXY_H_
