#include "fusefs/session/session_server.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <random>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/errno_status.h"
#include "common/log.h"
#include "fgds/usrbio_wire.h"
#include "fusefs/session/client_eventfd.h"

namespace fgds::session {
namespace {

// The key of refusals whose user is not known (RefusalLog).
constexpr uid_t kAnyUser = static_cast<uid_t>(-1);

// Sockets are named "<daemon pid>-<random>.sock"; one whose daemon no longer
// exists was left by a crash (SIGKILL runs no cleanup).
void RemoveStaleSockets(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    std::vector<absl::string_view> parts =
        absl::StrSplit(absl::string_view(e->d_name), '-');
    int pid = 0;
    if (parts.size() != 2 || !absl::EndsWith(parts[1], ".sock") ||
        !absl::SimpleAtoi(parts[0], &pid) || pid <= 0) {
      continue;
    }
    if (kill(pid, 0) != 0 && errno == ESRCH) {
      unlinkat(dirfd(d), e->d_name, 0);
    }
  }
  closedir(d);
}

// Tells a connection the server will not serve why (FGDS_MSG_ERROR with
// -err, which the client reads as the answer to its HELLO: a clear errno
// instead of a bare close), then closes it.
void Refuse(int sock, int err) {
  unsigned char msg[sizeof(fgds_msg_header) + sizeof(fgds_msg_reply)] = {};
  fgds_msg_header header = {};
  header.magic = FGDS_WIRE_MAGIC;
  header.version = FGDS_WIRE_VERSION;
  header.type = FGDS_MSG_ERROR;
  header.length = sizeof(msg);
  fgds_msg_reply reply = {};
  reply.result = -err;
  memcpy(msg, &header, sizeof(header));
  memcpy(msg + sizeof(header), &reply, sizeof(reply));
  (void)!send(sock, msg, sizeof(msg), MSG_NOSIGNAL | MSG_DONTWAIT);
  close(sock);
}

// epoll keys besides sessions' addresses (never this small).
constexpr uint64_t kStopKey = 0;
constexpr uint64_t kListenKey = 1;

}  // namespace

absl::StatusOr<std::unique_ptr<SessionServer>> SessionServer::Start(
    const Options& options) {
  if (mkdir(options.socket_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return PosixError("create " + options.socket_dir, errno);
  }
  RemoveStaleSockets(options.socket_dir);
  std::random_device random;
  std::string path =
      absl::StrCat(options.socket_dir, "/", getpid(), "-",
                   absl::Hex(uint64_t{random()} << 32 | random()), ".sock");
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError("socket path too long: " + path);
  }
  memcpy(addr.sun_path, path.data(), path.size());
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return PosixError("socket", errno);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      // Every user may connect: what a session can reach is decided per
      // file and per buffer, not by who connects.
      chmod(path.c_str(), 0666) != 0 || listen(fd, 128) != 0) {
    int err = errno;
    close(fd);
    unlink(path.c_str());
    return PosixError("listen on " + path, err);
  }
  int stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (stop_efd < 0 || epoll_fd < 0) {
    int err = errno;
    close(fd);
    if (stop_efd >= 0) close(stop_efd);
    if (epoll_fd >= 0) close(epoll_fd);
    unlink(path.c_str());
    return PosixError("eventfd/epoll", err);
  }
  // From here the server owns the descriptors (and ~SessionServer stops
  // whatever started).
  std::unique_ptr<SessionServer> server(
      new SessionServer(options, fd, stop_efd, epoll_fd, path));
  auto pool = RingWorkerPool::Start(options.rings);
  if (!pool.ok()) return pool.status();
  server->ring_pool_ = *std::move(pool);
  server->options_.context.ring_pool = server->ring_pool_.get();
  // The stop eventfd stays readable once written: every thread sees it.
  epoll_event stop = {};
  stop.events = EPOLLIN;
  stop.data.u64 = kStopKey;
  epoll_event listen_ev = {};
  listen_ev.events = EPOLLIN | EPOLLONESHOT;
  listen_ev.data.u64 = kListenKey;
  if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, stop_efd, &stop) != 0 ||
      epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &listen_ev) != 0) {
    return PosixError("epoll_ctl", errno);
  }
  {
    fgds::MutexLock lock(&server->mu_);
    server->spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
  const unsigned threads = std::max(1u, options.session_threads);
  for (unsigned i = 0; i < threads; ++i) {
    try {
      server->threads_.emplace_back(&SessionServer::ServeLoop, server.get());
    } catch (const std::system_error& e) {
      return PosixError("start a session thread", e.code().value());
    }
  }
  return server;
}

SessionServer::SessionServer(Options options, int listen_fd, int stop_efd,
                             int epoll_fd, std::string socket_path)
    : options_(std::move(options)),
      listen_fd_(listen_fd),
      stop_efd_(stop_efd),
      epoll_fd_(epoll_fd),
      socket_path_(std::move(socket_path)) {}

SessionServer::~SessionServer() {
  Stop();
  close(listen_fd_);
  close(stop_efd_);
  close(epoll_fd_);
  fgds::MutexLock lock(&mu_);
  if (spare_fd_ >= 0) close(spare_fd_);
}

std::string SessionServer::ControlFileContent() const {
  // pid: whose CPU use tools may account (`fgds bench`, daemon_cpu.h).
  return absl::StrCat("socket=", socket_path_, "\nprotocol=", FGDS_WIRE_VERSION,
                      "\npid=", getpid(), "\n");
}

void SessionServer::ServeLoop() {
  for (;;) {
    epoll_event event;
    int n = epoll_wait(epoll_fd_, &event, 1, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      LogWarning("usrbio: epoll_wait on the session sockets failed: %s",
                 strerror(errno));
      return;
    }
    if (n == 0) continue;
    if (event.data.u64 == kStopKey) return;
    if (event.data.u64 == kListenKey) {
      try {
        AcceptPending();
      } catch (const std::bad_alloc&) {
        // Whatever was being set up is dropped (a new session's socket is
        // closed by ~Session, its slot given back); the daemon and the
        // other sessions go on.
        LogWarning("usrbio: out of memory accepting a session");
      }
      // Re-armed by the thread that took the event, and only by it: one
      // accepting thread at a time.
      Rearm(listen_fd_, kListenKey);
      continue;
    }
    try {
      ServeSession(reinterpret_cast<Connection*>(event.data.u64));
    } catch (const std::bad_alloc&) {
      LogWarning("usrbio: out of memory serving a session socket");
    }
  }
}

void SessionServer::AcceptPending() {
  // A bounded number per turn: the other sockets get served in between.
  for (int i = 0; i < 16; ++i) {
    int sock = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (sock >= 0) {
      Accepted(sock);
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EMFILE || errno == ENFILE) RefuseForWantOfDescriptors();
    return;  // EAGAIN: nothing queued (or an error the next turn retries)
  }
}

void SessionServer::RefuseForWantOfDescriptors() {
  bool back_off = false;
  {
    fgds::MutexLock lock(&mu_);
    const uint64_t now = MonotonicNs();
    if (now - last_fd_warning_ns_ > 10ull * 1000000000u) {
      last_fd_warning_ns_ = now;
      LogWarning(
          "usrbio: out of file descriptors (%zu sessions open): refusing new "
          "sessions until some close",
          sessions_.size());
    }
    if (spare_fd_ >= 0) {
      close(spare_fd_);
      int sock = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (sock >= 0) Refuse(sock, EMFILE);
      spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    back_off = spare_fd_ < 0;
  }
  // No spare (another thread took the number): back off instead of spinning
  // on a socket that stays readable.
  if (back_off) usleep(10000);
}

void SessionServer::Accepted(int sock) {
  std::unique_ptr<Connection> connection;
  {
    // Checked and taken in one step: however many threads accept, no more
    // than max_sessions slots are ever held.
    fgds::MutexLock lock(&mu_);
    if (slots_ >= options_.max_sessions) {
      // The peer is not known yet: one rate for all such refusals.
      uint64_t suppressed = 0;
      if (AdmitRefusalLine(options_.context.refusal_log, kAnyUser,
                           &suppressed)) {
        LogWarning(
            "usrbio: %zu sessions open (the most this daemon serves), "
            "refusing another with EAGAIN%s",
            sessions_.size(), SuppressedNote(suppressed).c_str());
      }
      Refuse(sock, EAGAIN);
      return;
    }
    ++slots_;
  }
  // This connection's slot, given back on every path that does not leave
  // it in sessions_ (whose removal gives it back).
  auto give_back_slot = [this] {
    fgds::MutexLock lock(&mu_);
    --slots_;
  };
  try {
    connection = std::make_unique<Connection>(sock, options_.context);
  } catch (const std::bad_alloc&) {
    give_back_slot();
    LogWarning("usrbio: out of memory, refusing a session");
    close(sock);  // no Session took it
    return;
  }
  if (connection->session.refused()) {
    // Its user has no room (user_limits.h): answered and ended now, since
    // an idle client would never make its socket readable, and a refused
    // session holds no slot.
    give_back_slot();
    connection->session.Run();
    return;
  }
  {
    fgds::MutexLock lock(&mu_);
    Connection* key = connection.get();
    // In the table before it is watched: its first event may reach another
    // thread at once. (Inserting may throw bad_alloc: the slot is given
    // back before the exception leaves.)
    try {
      sessions_[key] = std::move(connection);
    } catch (const std::bad_alloc&) {
      --slots_;
      throw;
    }
    epoll_event ev = {};
    ev.events = EPOLLIN | EPOLLONESHOT;
    ev.data.u64 = reinterpret_cast<uint64_t>(key);
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, sock, &ev) == 0) return;
    LogWarning("usrbio: cannot watch a session socket: %s", strerror(errno));
    connection = std::move(sessions_[key]);
    sessions_.erase(key);
    --slots_;
  }
  connection->session.End();
}

void SessionServer::ServeSession(Connection* connection) {
  {
    fgds::MutexLock turn(&connection->turn_mu);
    // One-shot: no other thread serves this session until Rearm.
    if (connection->session.ServeOne(/*wait=*/false) == Session::Step::kOpen) {
      Rearm(connection->session.socket(),
            reinterpret_cast<uint64_t>(connection));
      return;
    }
    // Ended: removed from the epoll set by the close in End, and never
    // re-armed, so no other thread can take a turn of it any more.
    connection->session.End();
  }
  std::unique_ptr<Connection> ended;
  fgds::MutexLock lock(&mu_);
  auto it = sessions_.find(connection);
  if (it != sessions_.end()) {
    ended = std::move(it->second);
    sessions_.erase(it);
    --slots_;
  }
}

void SessionServer::Rearm(int fd, uint64_t key) {
  epoll_event ev = {};
  ev.events = EPOLLIN | EPOLLONESHOT;
  ev.data.u64 = key;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev) != 0) {
    LogWarning("usrbio: cannot re-arm a socket: %s", strerror(errno));
  }
}

void SessionServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  SignalOwnEventfd(stop_efd_);
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
  absl::flat_hash_map<Connection*, std::unique_ptr<Connection>> sessions;
  {
    fgds::MutexLock lock(&mu_);
    sessions.swap(sessions_);
    slots_ = 0;  // no thread accepts any more
  }
  for (auto& [key, connection] : sessions) {
    fgds::MutexLock turn(&connection->turn_mu);
    connection->session.End();
  }
  sessions.clear();
  // Every ring is detached by now (Session::End).
  ring_pool_.reset();
  unlink(socket_path_.c_str());
}

}  // namespace fgds::session
