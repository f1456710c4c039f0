// File: fusefs/session/session_server.h
//
// SessionServer: the daemon's usrbio endpoint. It listens on a unix socket
// (SOCK_SEQPACKET) under /run/fgds/, named per daemon so several mounts
// coexist, open to every user (a session grants nothing a client could not
// already do: it reaches only files it opened through the mount and memory
// it owns). Clients find the socket through the mount's control file
// /.fgds/session (ControlFileContent).
//
// Threads are bounded and all created at Start: a few session threads
// share one epoll set holding the listening socket and every session's
// socket (EPOLLONESHOT, so one thread serves a session at a time, one
// request per turn), and a RingWorkerPool serves every ring. No client
// action creates a thread, so a tasks limit cannot end the daemon through
// clients. At most max_sessions sessions are open at once.
//
// Out of descriptors, accept4 fails while the connection stays queued (so
// the socket stays readable): the server closes a spare descriptor it keeps
// for this, accepts the connection, answers it FGDS_MSG_ERROR with -EMFILE
// and closes it, and takes the spare back. A connection beyond
// max_sessions is answered -EAGAIN the same way.
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

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "common/mutex.h"
#include "fusefs/session/ring_worker_pool.h"
#include "fusefs/session/session.h"

namespace fgds::session {

class SessionServer {
 public:
  struct Options {
    std::string socket_dir = "/run/fgds";
    SessionContext context;  // its ring_pool is the server's own
    size_t max_sessions = 1024;
    // Threads serving session sockets (requests are short: registration,
    // a reply); at least 1.
    unsigned session_threads = 2;
    RingWorkerPoolOptions rings;
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
  // A session and the lock of its turns. EPOLLONESHOT already gives a
  // session to one thread at a time; the lock makes that hand-over, from
  // the thread that re-arms the socket to the one its next event wakes,
  // visible as an ordering (to the reader and to TSan, which sees none in
  // EPOLL_CTL_MOD).
  struct Connection {
    Connection(int sock, const SessionContext& context)
        : session(sock, context) {}
    Session session;
    fgds::Mutex turn_mu;
  };

  SessionServer(Options options, int listen_fd, int stop_efd, int epoll_fd,
                std::string socket_path);
  // A session thread: waits on the epoll set and serves one event a turn.
  void ServeLoop();
  // Accepts what is queued on the listening socket.
  void AcceptPending();
  void Accepted(int sock);
  // Out of descriptors: drops one queued connection through the spare.
  void RefuseForWantOfDescriptors();
  // Serves one request of `connection`'s session; ends it if it is over.
  void ServeSession(Connection* connection);
  // Re-arms a one-shot watch (the listening socket or a session's).
  void Rearm(int fd, uint64_t key);

  Options options_;
  const int listen_fd_;
  const int stop_efd_;
  const int epoll_fd_;
  const std::string socket_path_;
  std::unique_ptr<RingWorkerPool> ring_pool_;
  std::vector<std::thread> threads_;
  fgds::Mutex mu_;
  absl::flat_hash_map<Connection*, std::unique_ptr<Connection>> sessions_
      ABSL_GUARDED_BY(mu_);
  // Session slots held: those in sessions_ and those being set up, taken
  // in the same step as the max_sessions check (never above it).
  size_t slots_ ABSL_GUARDED_BY(mu_) = 0;
  // Kept open to be closed when accept4 runs out of descriptors.
  int spare_fd_ ABSL_GUARDED_BY(mu_) = -1;
  uint64_t last_fd_warning_ns_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopped_ = false;
};

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_SESSION_SERVER_H_
