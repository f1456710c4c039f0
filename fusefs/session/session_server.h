// File: fusefs/session/session_server.h
//
// SessionServer: the daemon's usrbio endpoint. It listens on a unix socket
// (SOCK_SEQPACKET) under /run/fgds/, named per daemon so several mounts
// coexist, open to every user (a session grants nothing a client could not
// already do: it reaches only files it opened through the mount and memory
// it owns). Each connection becomes a Session on its own thread. Clients
// find the socket through the mount's control file /.fgds/session
// (ControlFileContent).
//
// Example (fusefs/daemon.cc):
//   SessionServer::Options o;
//   o.context.backend = backend; o.context.mount_dev = dev;
//   auto server = SessionServer::Start(o);
//
// Thread safety: Start and Stop from one thread; ControlFileContent from
// any.
#ifndef FGDS_FUSEFS_SESSION_SESSION_SERVER_H_
#define FGDS_FUSEFS_SESSION_SESSION_SERVER_H_

#include <list>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/mutex.h"
#include "fusefs/session/session.h"

namespace fgds::session {

class SessionServer {
 public:
  struct Options {
    std::string socket_dir = "/run/fgds";
    SessionContext context;
    size_t max_sessions = 1024;
  };

  // Creates the socket (removing sockets of dead daemons left in
  // socket_dir) and starts accepting.
  static absl::StatusOr<std::unique_ptr<SessionServer>> Start(
      const Options& options);
  // Stop().
  ~SessionServer();
  SessionServer(const SessionServer&) = delete;
  SessionServer& operator=(const SessionServer&) = delete;

  // Ends every session (their clients see the socket close), joins all
  // threads and removes the socket. Idempotent.
  void Stop();

  const std::string& socket_path() const { return socket_path_; }
  // What /.fgds/session says: "socket=<path>\nprotocol=<version>\n".
  std::string ControlFileContent() const;

 private:
  struct Running {
    std::unique_ptr<Session> session;
    std::thread thread;
  };

  SessionServer(Options options, int listen_fd, int stop_efd,
                std::string socket_path);
  void AcceptLoop();
  // Joins sessions that have ended.
  void ReapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  const int listen_fd_;
  const int stop_efd_;
  const std::string socket_path_;
  std::thread acceptor_;
  fgds::Mutex mu_;
  std::list<Running> sessions_ ABSL_GUARDED_BY(mu_);
  bool stopped_ = false;
};

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_SESSION_SERVER_H_
