// usrbio sessions: finding the daemon through the mount, connecting, and the
// request/reply exchange every registration uses.
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/limit_names.h"
#include "usrbio/internal.h"

namespace fgds::usrbio {
namespace {

constexpr long kFuseSuperMagic = 0x65735546;

// The root of the mount holding `path`: the topmost directory above it on
// the same device. Works for the mountpoint itself and any path inside.
int FindMountRoot(const char* path, std::string* root) {
  char resolved[PATH_MAX];
  if (realpath(path, resolved) == nullptr) return -errno;
  struct stat st;
  if (stat(resolved, &st) != 0) return -errno;
  std::string dir = resolved;
  if (!S_ISDIR(st.st_mode)) {
    size_t slash = dir.rfind('/');
    dir = slash == 0 ? "/" : dir.substr(0, slash);
  }
  const dev_t dev = st.st_dev;
  while (dir != "/") {
    size_t slash = dir.rfind('/');
    std::string parent = slash == 0 ? "/" : dir.substr(0, slash);
    struct stat pst;
    if (stat(parent.c_str(), &pst) != 0 || pst.st_dev != dev) break;
    dir = parent;
  }
  *root = dir;
  return 0;
}

// Reads "socket=<path>" from <root>/.fgds/session.
int ReadSocketPath(const std::string& root, std::string* socket_path) {
  struct statfs sfs;
  if (statfs(root.c_str(), &sfs) != 0) return -errno;
  if (sfs.f_type != kFuseSuperMagic) return -ENOTSUP;
  int fd = open((root + "/.fgds/session").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? -ENOTSUP : -errno;
  char buf[512];
  ssize_t n;
  size_t len = 0;
  while (len < sizeof(buf) - 1 &&
         (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0) {
    len += static_cast<size_t>(n);
  }
  close(fd);
  buf[len] = '\0';
  const char* key = strstr(buf, "socket=");
  if (key == nullptr) return -ENOTSUP;
  key += strlen("socket=");
  const char* end = strchr(key, '\n');
  *socket_path = end ? std::string(key, end) : std::string(key);
  return socket_path->empty() ? -ENOTSUP : 0;
}

int Connect(const std::string& socket_path) {
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path)) return -ENAMETOOLONG;
  memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (sock < 0) return -errno;
  if (connect(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    close(sock);
    return -err;
  }
  return sock;
}

int SendRequest(int sock, const void* msg, size_t len, const int* fds,
                int nfds) {
  iovec iov = {const_cast<void*>(msg), len};
  msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * FGDS_WIRE_MAX_FDS)];
  if (nfds > 0) {
    mh.msg_control = control;
    mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    cmsghdr* cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
  }
  ssize_t n;
  do {
    // MSG_NOSIGNAL: a dead daemon must give -EPIPE, not kill the client.
    n = sendmsg(sock, &mh, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return errno == ECONNRESET ? -EPIPE : -errno;
  return n == static_cast<ssize_t>(len) ? 0 : -EPROTO;
}

}  // namespace

int Exchange(fgds_session* session, uint16_t type, const void* payload,
             size_t payload_len, const int* fds, int nfds, uint32_t* id) {
  fgds_msg_reply reply = {};
  const int ret =
      ExchangeReply(session, type, payload, payload_len, fds, nfds, &reply);
  if (ret == 0 && id != nullptr) *id = reply.id;
  return ret;
}

int ExchangeReply(fgds_session* session, uint16_t type, const void* payload,
                  size_t payload_len, const int* fds, int nfds,
                  fgds_msg_reply* out) {
  unsigned char msg[FGDS_WIRE_MAX_MESSAGE];
  fgds_msg_header header = {};
  header.magic = FGDS_WIRE_MAGIC;
  header.version = FGDS_WIRE_VERSION;
  header.type = type;
  header.length = static_cast<uint32_t>(sizeof(header) + payload_len);

  pthread_mutex_lock(&session->lock);
  header.seq = session->seq++;
  memcpy(msg, &header, sizeof(header));
  memcpy(msg + sizeof(header), payload, payload_len);
  int ret = SendRequest(session->sock, msg, header.length, fds, nfds);
  unsigned char reply[FGDS_WIRE_MAX_MESSAGE];
  ssize_t n = 0;
  if (ret == -EPIPE) {
    // The daemon may have refused the session (a limit) and shut its side
    // before our first request arrived: its FGDS_MSG_ERROR, which says
    // why, is still waiting to be read.
    do {
      n = recv(session->sock, reply, sizeof(reply),
               MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n > 0) ret = 0;
  } else if (ret == 0) {
    // The daemon never passes descriptors back; MSG_CMSG_CLOEXEC guards
    // against leaking any into exec'd children all the same.
    do {
      n = recv(session->sock, reply, sizeof(reply), MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n < 0) ret = errno == ECONNRESET ? -ENOTCONN : -errno;
    if (n == 0) ret = -ENOTCONN;
  }
  pthread_mutex_unlock(&session->lock);
  if (ret != 0) return ret;

  fgds_msg_header rh;
  fgds_msg_reply body;
  if (static_cast<size_t>(n) != sizeof(rh) + sizeof(body)) return -EPROTO;
  memcpy(&rh, reply, sizeof(rh));
  memcpy(&body, reply + sizeof(rh), sizeof(body));
  if (rh.magic != FGDS_WIRE_MAGIC || rh.version != FGDS_WIRE_VERSION ||
      rh.length != n) {
    return -EPROTO;
  }
  // A refusal names the limit in `reason` (FGDS_LIMIT_*). Atomic: threads
  // sharing the session may finish requests at once (the last one wins).
  __atomic_store_n(
      &session->last_limit,
      body.result < 0 && body.reason <= FGDS_LIMIT_MAX ? body.reason : 0,
      __ATOMIC_RELAXED);
  // FGDS_MSG_ERROR: the daemon found our message malformed, or refused the
  // session, and closed it; its result says why.
  if (rh.type == FGDS_MSG_ERROR) return body.result < 0 ? body.result : -EPROTO;
  if (rh.type != FGDS_MSG_REPLY || rh.seq != header.seq) return -EPROTO;
  if (body.result > 0) return -EPROTO;
  *out = body;
  return body.result;
}

int Unregister(fgds_session* session, uint16_t type, uint32_t id) {
  fgds_msg_unregister msg = {};
  msg.id = id;
  return Exchange(session, type, &msg, sizeof(msg), nullptr, 0, nullptr);
}

}  // namespace fgds::usrbio

using fgds::usrbio::ErrnoSaver;

extern "C" int fgds_session_open(
    struct fgds_session* session, const char* path,
    const struct fgds_session_params* params) noexcept {
  ErrnoSaver saver;
  if (session == nullptr || path == nullptr) return -EINVAL;
  if (params != nullptr) {
    if (params->flags != 0) return -EINVAL;
    for (uint32_t r : params->reserved) {
      if (r != 0) return -EINVAL;
    }
  }
  session->last_limit = FGDS_LIMIT_NONE;
  try {
    std::string root;
    std::string socket_path;
    int ret = fgds::usrbio::FindMountRoot(path, &root);
    if (ret == 0) ret = fgds::usrbio::ReadSocketPath(root, &socket_path);
    if (ret != 0) return ret;
    int sock = fgds::usrbio::Connect(socket_path);
    if (sock < 0) return sock;
    memset(session, 0, sizeof(*session));
    session->sock = sock;
    pthread_mutex_init(&session->lock, nullptr);
    fgds_msg_hello hello = {};
    uint32_t version = 0;
    ret = fgds::usrbio::Exchange(session, FGDS_MSG_HELLO, &hello, sizeof(hello),
                                 nullptr, 0, &version);
    if (ret == 0 && version != FGDS_WIRE_VERSION) ret = -EPROTO;
    if (ret != 0) {
      // session->last_limit stays: it names the limit that refused us.
      close(sock);
      pthread_mutex_destroy(&session->lock);
      session->sock = -1;
      return ret;
    }
    session->version = version;
    return 0;
  } catch (...) {
    return -ENOMEM;
  }
}

extern "C" const char* fgds_limit_describe(uint32_t limit) noexcept {
  return fgds::LimitDescription(limit);
}

extern "C" void fgds_session_close(struct fgds_session* session) noexcept {
  ErrnoSaver saver;
  if (session == nullptr || session->sock < 0) return;
  close(session->sock);
  session->sock = -1;
  pthread_mutex_destroy(&session->lock);
}

extern "C" int fgds_fd_register(struct fgds_session* session, int fd,
                                uint32_t flags) noexcept {
  ErrnoSaver saver;
  if (session == nullptr || flags != 0) return -EINVAL;
  if (fd < 0) return -EBADF;
  fgds_msg_fd_register msg = {};
  uint32_t id = 0;
  int ret = fgds::usrbio::Exchange(session, FGDS_MSG_FD_REGISTER, &msg,
                                   sizeof(msg), &fd, 1, &id);
  if (ret != 0) return ret;
  return id > static_cast<uint32_t>(INT_MAX) ? -EOVERFLOW
                                             : static_cast<int>(id);
}

extern "C" int fgds_fd_unregister(struct fgds_session* session,
                                  int id) noexcept {
  ErrnoSaver saver;
  if (session == nullptr || id < 0) return -EINVAL;
  return fgds::usrbio::Unregister(session, FGDS_MSG_FD_UNREGISTER,
                                  static_cast<uint32_t>(id));
}
