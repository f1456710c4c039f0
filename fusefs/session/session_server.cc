#include "fusefs/session/session_server.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/errno_status.h"
#include "common/log.h"
#include "fgds/usrbio_wire.h"

namespace fgds::session {
namespace {

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
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
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
  if (stop_efd < 0) {
    int err = errno;
    close(fd);
    unlink(path.c_str());
    return PosixError("eventfd", err);
  }
  std::unique_ptr<SessionServer> server(
      new SessionServer(options, fd, stop_efd, path));
  server->acceptor_ = std::thread(&SessionServer::AcceptLoop, server.get());
  return server;
}

SessionServer::SessionServer(Options options, int listen_fd, int stop_efd,
                             std::string socket_path)
    : options_(std::move(options)),
      listen_fd_(listen_fd),
      stop_efd_(stop_efd),
      socket_path_(std::move(socket_path)) {}

SessionServer::~SessionServer() {
  Stop();
  close(listen_fd_);
  close(stop_efd_);
}

std::string SessionServer::ControlFileContent() const {
  return absl::StrCat("socket=", socket_path_, "\nprotocol=", FGDS_WIRE_VERSION,
                      "\n");
}

void SessionServer::AcceptLoop() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_efd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      LogWarning("usrbio: poll on the session socket failed: %s",
                 strerror(errno));
      return;
    }
    if (fds[1].revents & POLLIN) return;
    if (!(fds[0].revents & POLLIN)) continue;
    int sock = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (sock < 0) continue;  // the client gave up, or out of descriptors
    fgds::MutexLock lock(&mu_);
    ReapLocked();
    if (sessions_.size() >= options_.max_sessions) {
      LogWarning("usrbio: %zu sessions open, refusing another",
                 sessions_.size());
      close(sock);
      continue;
    }
    Running& running = sessions_.emplace_back();
    running.session = std::make_unique<Session>(sock, options_.context);
    running.thread = std::thread(&Session::Run, running.session.get());
  }
}

void SessionServer::ReapLocked() {
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (it->session->done()) {
      it->thread.join();
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
}

void SessionServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  uint64_t one = 1;
  (void)!write(stop_efd_, &one, sizeof(one));
  acceptor_.join();
  fgds::MutexLock lock(&mu_);
  for (Running& running : sessions_) running.session->Shutdown();
  for (Running& running : sessions_) running.thread.join();
  sessions_.clear();
  unlink(socket_path_.c_str());
}

}  // namespace fgds::session
