// Session: one usrbio connection, driven over a socketpair by a test client
// that writes raw wire messages (usrbio_wire.h), against FakeBackend
// (session_testing.h). No mount: SessionContext.mount_dev is the device of
// a temporary directory, and node_of_fd names a file there by its inode
// number (a FUSE mount's kernel answers with the node id: mount_node.h), so
// registering a file made there reaches OpenNode.
//
// Each test checks what the daemon keeps: descriptors it received are
// closed unless a registration holds them, and every backend handle it
// opened is released exactly once by the time the session and its I/O
// are gone.
#include "fusefs/session/session.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fgds/usrbio.h"
#include "fgds/usrbio_wire.h"
#include "fusefs/session/session_testing.h"
#include "fusefs/session/user_limits.h"
#include "gtest/gtest.h"

namespace fgds::session {
namespace {

using backend::IoPath;
using testing::ClientRing;
using testing::FakeBackend;
using testing::MakeMemfd;
using testing::OpenFdCount;

constexpr uint64_t kIovSize = 64 * 1024;

struct Reply {
  uint16_t type = 0;
  uint32_t seq = 0;
  fgds_msg_reply body = {};
};

// Sends one packet with `fds` attached (SCM_RIGHTS); the caller keeps its
// descriptors.
bool SendPacket(int sock, const void* data, size_t len,
                const std::vector<int>& fds) {
  iovec iov = {const_cast<void*>(data), len};
  msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 8)] = {};
  if (!fds.empty()) {
    mh.msg_control = control;
    mh.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    memcpy(CMSG_DATA(cm), fds.data(), sizeof(int) * fds.size());
  }
  return sendmsg(sock, &mh, MSG_NOSIGNAL) == static_cast<ssize_t>(len);
}

template <typename Payload>
std::vector<unsigned char> Message(uint16_t type, uint32_t seq,
                                   const Payload& payload) {
  fgds_msg_header h = {};
  h.magic = FGDS_WIRE_MAGIC;
  h.version = FGDS_WIRE_VERSION;
  h.type = type;
  h.length = sizeof(h) + sizeof(payload);
  h.seq = seq;
  std::vector<unsigned char> out(h.length);
  memcpy(out.data(), &h, sizeof(h));
  memcpy(out.data() + sizeof(h), &payload, sizeof(payload));
  return out;
}

fgds_msg_ior_register IorParams(uint32_t entries) {
  fgds_msg_ior_register p = {};
  p.entries = entries;
  p.io_depth = 1;
  return p;
}

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = ::testing::TempDir() + "fgds-session-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir.data()), nullptr);
    dir_ = dir;
    path_ = dir_ + "/data";
    int fd = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    struct stat st;
    ASSERT_EQ(fstat(fd, &st), 0);
    close(fd);
    ino_ = st.st_ino;
    context_.backend = &backend_;
    context_.mount_dev = st.st_dev;
    context_.node_of_fd = [](int client_fd, backend::NodeId* node) {
      struct stat file_st;
      if (fstat(client_fd, &file_st) != 0) return -errno;
      *node = file_st.st_ino;
      return 0;
    };
    context_.io_stats = &stats_;
    context_.limits.max_rings = 2;
    context_.limits.registry.max_iovs = 4;
    context_.limits.registry.max_files = 4;
    context_.limits.registry.max_iov_bytes = 1 << 20;
    RingWorkerPoolOptions pool_options;
    pool_options.workers = 1;
    auto pool = RingWorkerPool::Start(pool_options);
    ASSERT_TRUE(pool.ok()) << pool.status();
    pool_ = *std::move(pool);
    context_.ring_pool = pool_.get();
    baseline_fds_ = OpenFdCount();
  }

  void TearDown() override {
    Disconnect();
    backend_.HoldSubmits(false);
    backend_.CompleteRest(-ECANCELED);
    EXPECT_EQ(backend_.open_handles(), 0);
    for (const FakeBackend::Opened& open : backend_.opens()) {
      EXPECT_EQ(backend_.releases(open.file), 1) << "node " << open.node;
    }
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }

  // Starts a session on a new socketpair; Run goes on its own thread, as
  // the session server runs it.
  void Connect() {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    client_ = sv[0];
    session_ = std::make_unique<Session>(sv[1], context_);
    thread_ = std::thread([this] { session_->Run(); });
  }
  void ConnectAndHello() {
    Connect();
    Reply r;
    ASSERT_TRUE(Call(FGDS_MSG_HELLO, fgds_msg_hello{}, {}, &r));
    ASSERT_EQ(r.type, FGDS_MSG_REPLY);
    ASSERT_EQ(r.body.result, 0);
    ASSERT_EQ(r.body.id, FGDS_WIRE_VERSION);
  }
  // Closes the client's end (if open) and waits for Run to return.
  void Disconnect() {
    if (client_ >= 0) close(client_);
    client_ = -1;
    if (thread_.joinable()) thread_.join();
    if (session_ != nullptr) {
      EXPECT_TRUE(session_->done());
    }
    session_.reset();
  }

  bool Receive(Reply* out) {
    pollfd fd = {client_, POLLIN, 0};
    const int guard_ms =
        static_cast<int>(std::chrono::milliseconds(testing::kGuard).count());
    if (poll(&fd, 1, guard_ms) != 1) return false;
    unsigned char buf[FGDS_WIRE_MAX_MESSAGE];
    const ssize_t n = recv(client_, buf, sizeof(buf), 0);
    if (n != sizeof(fgds_msg_header) + sizeof(fgds_msg_reply)) return false;
    fgds_msg_header h;
    memcpy(&h, buf, sizeof(h));
    EXPECT_EQ(h.magic, FGDS_WIRE_MAGIC);
    EXPECT_EQ(h.version, FGDS_WIRE_VERSION);
    EXPECT_EQ(h.length, static_cast<uint32_t>(n));
    out->type = h.type;
    out->seq = h.seq;
    memcpy(&out->body, buf + sizeof(h), sizeof(out->body));
    return true;
  }

  // Whether the daemon closed the session: its end reads as end of stream.
  bool Closed() {
    pollfd fd = {client_, POLLIN, 0};
    const int guard_ms =
        static_cast<int>(std::chrono::milliseconds(testing::kGuard).count());
    if (poll(&fd, 1, guard_ms) != 1) return false;
    char byte;
    return recv(client_, &byte, 1, 0) == 0;
  }

  template <typename Payload>
  bool Call(uint16_t type, const Payload& payload, const std::vector<int>& fds,
            Reply* out) {
    const uint32_t seq = ++seq_;
    auto m = Message(type, seq, payload);
    if (!SendPacket(client_, m.data(), m.size(), fds)) return false;
    if (!Receive(out)) return false;
    if (out->type == FGDS_MSG_REPLY) {
      EXPECT_EQ(out->seq, seq);
    }
    return true;
  }
  // A request that must get a REPLY: its result (0 or -errno), the new
  // object's id in *id.
  template <typename Payload>
  int Result(uint16_t type, const Payload& payload,
             const std::vector<int>& fds = {}, uint32_t* id = nullptr) {
    Reply r;
    if (!Call(type, payload, fds, &r)) {
      ADD_FAILURE() << "no reply to type " << type;
      return INT32_MIN;
    }
    EXPECT_EQ(r.type, FGDS_MSG_REPLY);
    if (id != nullptr) *id = r.body.id;
    return r.body.result;
  }

  int RegisterIov(int memfd, uint64_t size, uint32_t* id = nullptr) {
    fgds_msg_iov_register msg = {};
    msg.size = size;
    return Result(FGDS_MSG_IOV_REGISTER, msg, {memfd}, id);
  }
  int RegisterIor(const ClientRing& ring, const fgds_msg_ior_register& msg,
                  uint32_t* id = nullptr) {
    return Result(FGDS_MSG_IOR_REGISTER, msg,
                  {ring.memfd(), ring.submit_efd(), ring.complete_efd()}, id);
  }
  // Opens the temporary file with `flags` and registers it; the client's
  // descriptor is closed afterwards, as the library lets callers do.
  int RegisterFile(int flags, uint32_t* id = nullptr) {
    int fd = open(path_.c_str(), flags | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    int ret = Result(FGDS_MSG_FD_REGISTER, fgds_msg_fd_register{}, {fd}, id);
    close(fd);
    return ret;
  }
  int Unregister(uint16_t type, uint32_t id) {
    fgds_msg_unregister msg = {};
    msg.id = id;
    return Result(type, msg);
  }

  // Destroyed last: sessions and late I/O release handles on it.
  FakeBackend backend_;
  IoStats stats_;
  std::unique_ptr<RingWorkerPool> pool_;  // outlives every session's rings
  SessionContext context_;
  std::string dir_;
  std::string path_;
  ino_t ino_ = 0;
  int baseline_fds_ = 0;
  int client_ = -1;
  uint32_t seq_ = 0;
  std::unique_ptr<Session> session_;
  std::thread thread_;
};

TEST_F(SessionTest, HelloAnswersTheProtocolVersion) { ConnectAndHello(); }

TEST_F(SessionTest, ARequestBeforeHelloEndsTheSession) {
  Connect();
  fgds_msg_unregister msg = {};
  Reply r;
  ASSERT_TRUE(Call(FGDS_MSG_IOV_UNREGISTER, msg, {}, &r));
  EXPECT_EQ(r.type, FGDS_MSG_ERROR);
  EXPECT_EQ(r.body.result, -EPROTO);
  EXPECT_TRUE(Closed());
}

TEST_F(SessionTest, IovsNeedASealedMemfdOfTheirSize) {
  ConnectAndHello();
  // A fresh memfd per registration: a registered one is sealed against new
  // writable mappings (client_memory.h), the daemon's own included.
  std::vector<int> sealed;
  for (int i = 0; i < 8; ++i)
    sealed.push_back(MakeMemfd(kIovSize, F_SEAL_SHRINK));
  int unsealed = MakeMemfd(kIovSize, 0);
  int big = MakeMemfd(2 << 20, F_SEAL_SHRINK);
  int pipefd[2];
  ASSERT_EQ(pipe2(pipefd, O_CLOEXEC), 0);
  int regular = open(path_.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(regular, 0);
  ASSERT_EQ(ftruncate(regular, kIovSize), 0);
  const int before = OpenFdCount();

  uint32_t id = 99;
  EXPECT_EQ(RegisterIov(sealed[0], kIovSize, &id), 0);
  EXPECT_EQ(id, 0u);
  EXPECT_EQ(RegisterIov(sealed[1], kIovSize / 2, &id), 0);  // a prefix
  EXPECT_EQ(id, 1u);
  // Each refusal is a REPLY: the session goes on.
  EXPECT_EQ(RegisterIov(unsealed, kIovSize), -EINVAL);       // could shrink
  EXPECT_EQ(RegisterIov(sealed[2], 2 * kIovSize), -EINVAL);  // too small
  EXPECT_EQ(RegisterIov(sealed[2], 0), -EINVAL);
  EXPECT_EQ(RegisterIov(regular, kIovSize), -EINVAL);  // not a memfd
  EXPECT_EQ(RegisterIov(pipefd[0], kIovSize), -EINVAL);
  EXPECT_EQ(RegisterIov(big, 2 << 20), -EINVAL);  // over max_iov_bytes
  // Ids are never reused, and unknown ones are ENOENT.
  EXPECT_EQ(Unregister(FGDS_MSG_IOV_UNREGISTER, 0), 0);
  EXPECT_EQ(Unregister(FGDS_MSG_IOV_UNREGISTER, 0), -ENOENT);
  EXPECT_EQ(Unregister(FGDS_MSG_IOV_UNREGISTER, 77), -ENOENT);
  EXPECT_EQ(RegisterIov(sealed[2], kIovSize, &id), 0);
  EXPECT_EQ(id, 2u);
  // The daemon maps what it takes and keeps no descriptor of it.
  EXPECT_EQ(OpenFdCount(), before);
  // max_iovs is 4: two more fit, the fifth does not.
  EXPECT_EQ(RegisterIov(sealed[3], kIovSize), 0);
  EXPECT_EQ(RegisterIov(sealed[4], kIovSize), 0);
  EXPECT_EQ(RegisterIov(sealed[5], kIovSize), -ENOSPC);
  EXPECT_EQ(OpenFdCount(), before);
  for (int fd : {unsealed, big, pipefd[0], pipefd[1], regular}) close(fd);
  for (int fd : sealed) close(fd);
}

TEST_F(SessionTest, IorsAreCheckedAndLimited) {
  ConnectAndHello();
  ClientRing good1(8);
  ClientRing good2(8);
  ClientRing good3(8);
  ClientRing bad_header(8);
  bad_header.header()->magic = 0;
  int pipefd[2];
  ASSERT_EQ(pipe2(pipefd, O_CLOEXEC), 0);
  int memfd = MakeMemfd(4096, F_SEAL_SHRINK);
  const int before = OpenFdCount();

  EXPECT_EQ(RegisterIor(bad_header, IorParams(8)), -EINVAL);
  // Entries that do not match the header, or no layout at all.
  EXPECT_EQ(RegisterIor(good1, IorParams(4)), -EINVAL);
  EXPECT_EQ(RegisterIor(good1, IorParams(0)), -EINVAL);
  // A ring bigger than the memfd.
  EXPECT_EQ(RegisterIor(good1, IorParams(64)), -EINVAL);
  fgds_msg_ior_register priority = IorParams(8);
  priority.priority = 2;
  EXPECT_EQ(RegisterIor(good1, priority), -EINVAL);
  // Only eventfds: a pipe or a memfd could block the worker differently.
  EXPECT_EQ(Result(FGDS_MSG_IOR_REGISTER, IorParams(8),
                   {good1.memfd(), pipefd[0], good1.complete_efd()}),
            -EINVAL);
  EXPECT_EQ(Result(FGDS_MSG_IOR_REGISTER, IorParams(8),
                   {good1.memfd(), good1.submit_efd(), memfd}),
            -EINVAL);
  // Refusals keep nothing.
  EXPECT_EQ(OpenFdCount(), before);

  uint32_t id = 99;
  EXPECT_EQ(RegisterIor(good1, IorParams(8), &id), 0);
  EXPECT_EQ(id, 0u);
  EXPECT_EQ(RegisterIor(good2, IorParams(8), &id), 0);
  EXPECT_EQ(id, 1u);
  EXPECT_EQ(RegisterIor(good3, IorParams(8)), -ENOSPC);  // max_rings 2
  EXPECT_EQ(Unregister(FGDS_MSG_IOR_UNREGISTER, 0), 0);
  EXPECT_EQ(Unregister(FGDS_MSG_IOR_UNREGISTER, 0), -ENOENT);
  EXPECT_EQ(Unregister(FGDS_MSG_IOR_UNREGISTER, 9), -ENOENT);
  EXPECT_EQ(RegisterIor(good3, IorParams(8), &id), 0);
  EXPECT_EQ(id, 2u);
  EXPECT_EQ(Unregister(FGDS_MSG_IOR_UNREGISTER, 1), 0);
  EXPECT_EQ(Unregister(FGDS_MSG_IOR_UNREGISTER, 2), 0);
  // Unregistered rings leave nothing behind (their eventfds, the worker's
  // own, the mapping).
  EXPECT_EQ(OpenFdCount(), before);
  for (int fd : {pipefd[0], pipefd[1], memfd}) close(fd);
}

TEST_F(SessionTest, FilesAreRegisteredThroughTheBackendByInode) {
  ConnectAndHello();
  const int before = OpenFdCount();
  uint32_t id = 99;
  EXPECT_EQ(RegisterFile(O_RDWR, &id), 0);
  EXPECT_EQ(id, 0u);
  EXPECT_EQ(RegisterFile(O_RDONLY, &id), 0);
  EXPECT_EQ(id, 1u);
  EXPECT_EQ(RegisterFile(O_WRONLY, &id), 0);
  EXPECT_EQ(id, 2u);
  const std::vector<FakeBackend::Opened> opens = backend_.opens();
  ASSERT_EQ(opens.size(), 3u);
  EXPECT_EQ(opens[0].node, ino_);
  EXPECT_EQ(opens[0].flags, O_RDWR);
  EXPECT_EQ(opens[1].flags, O_RDONLY);
  EXPECT_EQ(opens[2].flags, O_WRONLY);
  // The client's descriptors were closed at once (a daemon holding its
  // own mount's files would keep the mount busy).
  EXPECT_EQ(OpenFdCount(), before);

  EXPECT_EQ(Unregister(FGDS_MSG_FD_UNREGISTER, 1), 0);
  EXPECT_EQ(backend_.releases(opens[1].file), 1);
  EXPECT_EQ(Unregister(FGDS_MSG_FD_UNREGISTER, 1), -ENOENT);
  EXPECT_EQ(Unregister(FGDS_MSG_FD_UNREGISTER, 42), -ENOENT);
  EXPECT_EQ(backend_.releases(opens[1].file), 1);
  EXPECT_EQ(backend_.releases(opens[0].file), 0);
}

TEST_F(SessionTest, FilesElsewhereOrNotRegularAreRefused) {
  ConnectAndHello();
  const int before = OpenFdCount();
  // Not on the mount: a memfd lives on another device.
  int memfd = MakeMemfd(4096, 0);
  EXPECT_EQ(Result(FGDS_MSG_FD_REGISTER, fgds_msg_fd_register{}, {memfd}),
            -EBADF);
  close(memfd);
  // A directory of the mount.
  int dir = open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir, 0);
  EXPECT_EQ(Result(FGDS_MSG_FD_REGISTER, fgds_msg_fd_register{}, {dir}),
            -EINVAL);
  close(dir);
  // O_PATH: no access mode to note.
  int path = open(path_.c_str(), O_PATH | O_CLOEXEC);
  ASSERT_GE(path, 0);
  EXPECT_EQ(Result(FGDS_MSG_FD_REGISTER, fgds_msg_fd_register{}, {path}),
            -EBADF);
  close(path);
  // The backend no longer knows the inode: EBADF; other errors as they are.
  backend_.FailOpens(-ESTALE);
  EXPECT_EQ(RegisterFile(O_RDWR), -EBADF);
  backend_.FailOpens(-EIO);
  EXPECT_EQ(RegisterFile(O_RDWR), -EIO);
  backend_.FailOpens(0);
  EXPECT_TRUE(backend_.opens().empty());
  EXPECT_EQ(OpenFdCount(), before);
  // The session went on through all of it.
  EXPECT_EQ(RegisterFile(O_RDWR), 0);
}

TEST_F(SessionTest, AFileOverTheLimitIsReleasedAtOnce) {
  ConnectAndHello();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(RegisterFile(O_RDONLY), 0);
  EXPECT_EQ(RegisterFile(O_RDONLY), -ENOSPC);  // max_files 4
  const std::vector<FakeBackend::Opened> opens = backend_.opens();
  ASSERT_EQ(opens.size(), 5u);
  EXPECT_EQ(backend_.releases(opens[4].file), 1);
  EXPECT_EQ(backend_.open_handles(), 4);
}

TEST_F(SessionTest, MalformedMessagesEndOnlyThatSession) {
  // Each case on its own session; the next connects fine.
  struct Case {
    const char* name;
    std::vector<unsigned char> message;
    bool with_fd;
  };
  fgds_msg_iov_register iov = {};
  iov.size = kIovSize;
  auto bad_magic = Message(FGDS_MSG_IOV_REGISTER, 1, iov);
  bad_magic[0] ^= 1;
  auto reply_type = Message(FGDS_MSG_REPLY, 1, fgds_msg_reply{});
  auto unknown_type = Message(0x77, 1, fgds_msg_unregister{});
  auto truncated = Message(FGDS_MSG_IOV_REGISTER, 1, iov);
  truncated.resize(truncated.size() - 1);
  auto oversized = Message(FGDS_MSG_IOV_REGISTER, 1, iov);
  oversized.resize(FGDS_WIRE_MAX_MESSAGE + 16);
  fgds_msg_unregister reserved = {};
  reserved.reserved = 1;
  const Case cases[] = {
      {"bad magic, with an fd", bad_magic, true},
      {"no fd where one belongs", Message(FGDS_MSG_IOV_REGISTER, 1, iov),
       false},
      {"an fd where none belongs",
       Message(FGDS_MSG_IOV_UNREGISTER, 1, fgds_msg_unregister{}), true},
      {"a reply type from the client", reply_type, false},
      {"unknown type", unknown_type, false},
      {"truncated, with an fd", truncated, true},
      {"oversized, with an fd", oversized, true},
      {"reserved field", Message(FGDS_MSG_FD_UNREGISTER, 1, reserved), false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ConnectAndHello();
    ASSERT_EQ(RegisterFile(O_RDWR), 0);
    int memfd = MakeMemfd(kIovSize, F_SEAL_SHRINK);
    std::vector<int> fds;
    if (c.with_fd) fds.push_back(memfd);
    ASSERT_TRUE(SendPacket(client_, c.message.data(), c.message.size(), fds));
    Reply r;
    ASSERT_TRUE(Receive(&r));
    EXPECT_EQ(r.type, FGDS_MSG_ERROR);
    EXPECT_EQ(r.body.result, -EPROTO);
    EXPECT_TRUE(Closed());
    close(memfd);
    Disconnect();
    // The session's registrations and the descriptor it was sent are gone.
    EXPECT_EQ(backend_.open_handles(), 0);
    EXPECT_EQ(OpenFdCount(), baseline_fds_);
  }
}

TEST_F(SessionTest, ClosingTheSocketReleasesEverything) {
  ConnectAndHello();
  ClientRing ring(8);
  int memfd = MakeMemfd(kIovSize, F_SEAL_SHRINK);
  ASSERT_EQ(RegisterIov(memfd, kIovSize), 0);
  ASSERT_EQ(RegisterIor(ring, IorParams(8)), 0);
  ASSERT_EQ(RegisterFile(O_RDWR), 0);
  ASSERT_EQ(RegisterFile(O_RDONLY), 0);
  close(memfd);
  EXPECT_EQ(backend_.open_handles(), 2);
  Disconnect();
  // Each handle released once (TearDown checks "once"), the rings' and
  // the session's descriptors closed.
  EXPECT_EQ(backend_.open_handles(), 0);
  EXPECT_EQ(OpenFdCount(), baseline_fds_ + 3);  // the ClientRing's own
}

TEST_F(SessionTest, ShutdownFromAnotherThreadEndsTheSession) {
  ConnectAndHello();
  ASSERT_EQ(RegisterFile(O_RDWR), 0);
  session_->Shutdown();
  thread_.join();
  EXPECT_TRUE(session_->done());
  EXPECT_EQ(backend_.open_handles(), 0);
}

TEST_F(SessionTest, ClosingWithIoInFlightReleasesWhenTheIoCompletes) {
  ConnectAndHello();
  ClientRing ring(8);
  int memfd = MakeMemfd(kIovSize, F_SEAL_SHRINK);
  uint32_t iov = 0, busy = 0, idle = 0;
  ASSERT_EQ(RegisterIov(memfd, kIovSize, &iov), 0);
  ASSERT_EQ(RegisterIor(ring, IorParams(8)), 0);
  ASSERT_EQ(RegisterFile(O_RDWR, &busy), 0);
  ASSERT_EQ(RegisterFile(O_RDWR, &idle), 0);
  close(memfd);
  const std::vector<FakeBackend::Opened> opens = backend_.opens();
  ASSERT_EQ(opens.size(), 2u);

  std::vector<fgds_sqe> sqes = {testing::ReadSqe(busy, iov, 0, 0, 4096, 5)};
  ring.Submit(sqes);
  ASSERT_TRUE(backend_.WaitForRequests(1));
  // The client goes away (as if killed) with the read in flight: the
  // session ends at once, without waiting for the I/O.
  Disconnect();
  EXPECT_EQ(backend_.releases(opens[idle].file), 1);
  EXPECT_EQ(backend_.releases(opens[busy].file), 0);  // the read holds it

  // The late completion lands in memory the daemon still maps, then lets
  // go of the file, the iov and the ring.
  backend_.Complete({{0, 4096, IoPath::kPageCache}});
  EXPECT_EQ(backend_.releases(opens[busy].file), 1);
  EXPECT_EQ(OpenFdCount(), baseline_fds_ + 3);  // the ClientRing's own
  std::vector<fgds_cqe> cqes = ring.Reap();
  ASSERT_EQ(cqes.size(), 1u);
  EXPECT_EQ(cqes[0].userdata, 5u);
  EXPECT_EQ(cqes[0].result, 4096);
  EXPECT_EQ(cqes[0].path, FGDS_PATH_PAGE_CACHE);
}

// A backend that reaches no GPU memory but whose RDMA agents take
// dma-bufs (ceph with rdma:// agents): a GPU iov keeps the descriptor, gets
// no mapping and is answered DIRECT; its entries reach the backend as
// device memory with the kept dma-buf, and the backend's "bounce this
// entry" reaches the client as -EREMOTEIO with FGDS_PATH_BOUNCE_ENTRY (or
// _ALWAYS). The descriptor goes with the iov.
TEST_F(SessionTest, NicOnlyGpuIovsKeepTheDmabufAndPassBounceAnswersOn) {
  context_.keep_dmabufs = true;
  context_.nic_only_gpu_iovs = true;
  ConnectAndHello();
  ClientRing ring(8);
  ASSERT_EQ(RegisterIor(ring, IorParams(8)), 0);
  uint32_t file = 0;
  ASSERT_EQ(RegisterFile(O_RDWR, &file), 0);
  fgds_msg_gpu_iov_register msg = {};
  msg.size = kIovSize;
  msg.dmabuf_size = kIovSize;
  strcpy(msg.pci_bus_id, "0000:3b:00.0");
  const int stand_in = MakeMemfd(kIovSize, 0);  // the NIC would refuse it
  const int before = OpenFdCount();
  Reply r;
  ASSERT_TRUE(Call(FGDS_MSG_GPU_IOV_REGISTER, msg, {stand_in}, &r));
  close(stand_in);
  ASSERT_EQ(r.body.result, 0);
  ASSERT_EQ(r.body.path, FGDS_PATH_DIRECT);
  // Which DIRECT: not mapped, its entries may bounce (the client's stager
  // must take them; 0 would tell it to send them straight to the ring).
  EXPECT_EQ(r.body.reason, FGDS_IOV_GPU_DIRECT_NIC_ONLY);
  const uint32_t iov = r.body.id;
  EXPECT_EQ(OpenFdCount(), before);  // ours closed, the daemon's kept

  // A pipe is no file the daemon keeps (its close could block elsewhere).
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  ASSERT_TRUE(Call(FGDS_MSG_GPU_IOV_REGISTER, msg, {pipe_fds[0]}, &r));
  EXPECT_EQ(r.body.result, -EINVAL);
  close(pipe_fds[0]);
  close(pipe_fds[1]);

  std::vector<fgds_sqe> sqes = {
      testing::ReadSqe(file, iov, 0, 0, 4096, 1),
      testing::ReadSqe(file, iov, 8192, 4096, 4096, 2)};
  ring.Submit(sqes);
  ASSERT_TRUE(backend_.WaitForRequests(2));
  for (const backend::FileIoRequest& q : backend_.requests()) {
    ASSERT_NE(q.region, nullptr);
    EXPECT_EQ(q.region->kind(), backend::MemoryRegion::Kind::kDevice);
    EXPECT_GE(q.region->dmabuf_fd(), 0);
  }
  backend_.Complete({{0, -EREMOTEIO, IoPath::kBounceEntry},
                     {1, -EREMOTEIO, IoPath::kBounceAlways}});
  ASSERT_TRUE(ring.WaitForCqes(2));
  std::vector<fgds_cqe> cqes = ring.Reap();
  ASSERT_EQ(cqes.size(), 2u);
  for (const fgds_cqe& c : cqes) {
    EXPECT_EQ(c.result, FGDS_RESULT_BOUNCE);
    EXPECT_EQ(c.path, c.userdata == 1 ? FGDS_PATH_BOUNCE_ENTRY
                                      : FGDS_PATH_BOUNCE_ALWAYS);
  }
  // Neither errors nor bytes of the gpu-direct row: the client moves these
  // entries again through its staging, counted there.
  IoStats::Kind direct_read;
  direct_read.op = IoStats::Op::kRead;
  direct_read.memory = IoStats::Memory::kGpuDirect;
  for (auto side :
       {IoStats::FileSide::kPageCache, IoStats::FileSide::kODirect}) {
    direct_read.file_side = side;
    EXPECT_EQ(stats_.Get(direct_read).entries, 0u);
    EXPECT_EQ(stats_.Get(direct_read).errors, 0u);
  }
  // Unregistering drops the kept descriptor (no I/O holds the iov).
  EXPECT_EQ(Unregister(FGDS_MSG_IOV_UNREGISTER, iov), 0);
  EXPECT_EQ(OpenFdCount(), before - 1);
}

TEST_F(SessionTest, AnEmptyPacketWithDescriptorsLeaksNone) {
  ConnectAndHello();
  int memfd = MakeMemfd(kIovSize, F_SEAL_SHRINK);
  ASSERT_TRUE(SendPacket(client_, nullptr, 0, {memfd}));
  close(memfd);
  // However the daemon takes it, the descriptor must not stay with it.
  Disconnect();
  EXPECT_EQ(OpenFdCount(), baseline_fds_);
}

// ---- limits (user_limits.h) and who pays for memory (client_memory.h) ----

TEST_F(SessionTest, SparseMemoryIsRefusedAndTheReplyNamesWhy) {
  // A 1 GiB memfd with no page allocated: before, the daemon mapped it and
  // its writes allocated pages charged to the daemon.
  context_.limits.registry.max_iov_bytes = 1 << 30;
  ConnectAndHello();
  int sparse = memfd_create("sparse", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(sparse, 0);
  ASSERT_EQ(ftruncate(sparse, 1 << 30), 0);
  ASSERT_EQ(fcntl(sparse, F_ADD_SEALS, F_SEAL_SHRINK), 0);
  // One page allocated, the rest holes.
  int partly = MakeMemfd(0, 0);
  ASSERT_EQ(ftruncate(partly, kIovSize), 0);
  ASSERT_EQ(fallocate(partly, 0, 0, 4096), 0);
  ASSERT_EQ(fcntl(partly, F_ADD_SEALS, F_SEAL_SHRINK), 0);
  // A sparse ring too (the daemon posts completions into it): its pages
  // after the header punched out again.
  ClientRing ring(1024);
  ASSERT_GT(ring.layout().total_size, 8192u);
  ASSERT_EQ(fallocate(ring.memfd(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                      4096, ring.layout().total_size - 4096),
            0);
  const int before = OpenFdCount();
  fgds_msg_iov_register msg = {};
  msg.size = 1 << 30;
  Reply r;
  ASSERT_TRUE(Call(FGDS_MSG_IOV_REGISTER, msg, {sparse}, &r));
  EXPECT_EQ(r.body.result, -EINVAL);
  EXPECT_EQ(r.body.reason, FGDS_LIMIT_UNALLOCATED);
  msg.size = kIovSize;
  ASSERT_TRUE(Call(FGDS_MSG_IOV_REGISTER, msg, {partly}, &r));
  EXPECT_EQ(r.body.result, -EINVAL);
  EXPECT_EQ(r.body.reason, FGDS_LIMIT_UNALLOCATED);
  ASSERT_TRUE(Call(FGDS_MSG_IOR_REGISTER, IorParams(1024),
                   {ring.memfd(), ring.submit_efd(), ring.complete_efd()}, &r));
  EXPECT_EQ(r.body.result, -EINVAL);
  EXPECT_EQ(r.body.reason, FGDS_LIMIT_UNALLOCATED);
  EXPECT_EQ(OpenFdCount(), before);
  // An ordinary refusal carries no limit.
  fgds_msg_unregister unknown = {};
  unknown.id = 5;
  ASSERT_TRUE(Call(FGDS_MSG_IOV_UNREGISTER, unknown, {}, &r));
  EXPECT_EQ(r.body.result, -ENOENT);
  EXPECT_EQ(r.body.reason, FGDS_LIMIT_NONE);
  close(sparse);
  close(partly);
}

TEST_F(SessionTest, RegisteredMemoryCannotLoseItsPages) {
  ConnectAndHello();
  int memfd = MakeMemfd(kIovSize, F_SEAL_SHRINK);
  void* mine =
      mmap(nullptr, kIovSize, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  ASSERT_NE(mine, MAP_FAILED);
  ASSERT_EQ(RegisterIov(memfd, kIovSize), 0);
  // A hole punched now would make the daemon's next write allocate (and
  // pay for) the page: the seal forbids it, as it forbids write(2).
  EXPECT_EQ(
      fallocate(memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096),
      -1);
  EXPECT_EQ(errno, EPERM);
  EXPECT_EQ(madvise(mine, 4096, MADV_REMOVE), -1);
  char byte = 1;
  EXPECT_EQ(pwrite(memfd, &byte, 1, 0), -1);
  // The client's own mapping, made before, stays writable.
  static_cast<char*>(mine)[0] = 7;
  struct stat st;
  ASSERT_EQ(fstat(memfd, &st), 0);
  EXPECT_GE(static_cast<uint64_t>(st.st_blocks) * 512, kIovSize);
  munmap(mine, kIovSize);
  close(memfd);
}

TEST_F(SessionTest, RegistrationsOverTheUsersLimitsAreRefusedByName) {
  UserLimitsConfig config;
  config.per_user = {.sessions = 4,
                     .rings = 1,
                     .ring_entries = 64,
                     .mappings = 3,
                     .bytes = 3 * kIovSize};
  config.daemon_mappings = 100;
  config.daemon_bytes = 1 << 30;
  auto limits = std::make_shared<UserLimits>(config);
  context_.user_limits = limits;
  ConnectAndHello();
  const uid_t me = getuid();
  EXPECT_EQ(limits->UsageOf(me).sessions, 1u);
  std::vector<int> memfds;
  for (int i = 0; i < 4; ++i)
    memfds.push_back(MakeMemfd(kIovSize, F_SEAL_SHRINK));
  uint32_t first = 0;
  ASSERT_EQ(RegisterIov(memfds[0], kIovSize, &first), 0);
  ASSERT_EQ(RegisterIov(memfds[1], kIovSize), 0);
  // 128 entries pass the user's 64 ring entries.
  ClientRing big_ring(128);
  Reply r;
  ASSERT_TRUE(Call(
      FGDS_MSG_IOR_REGISTER, IorParams(128),
      {big_ring.memfd(), big_ring.submit_efd(), big_ring.complete_efd()}, &r));
  EXPECT_EQ(r.body.result, -EDQUOT);
  EXPECT_EQ(r.body.reason, FGDS_LIMIT_USER_RING_ENTRIES);
  ClientRing ring(8);
  ASSERT_EQ(RegisterIor(ring, IorParams(8)), 0);
  ClientRing second_ring(8);
  ASSERT_TRUE(Call(FGDS_MSG_IOR_REGISTER, IorParams(8),
                   {second_ring.memfd(), second_ring.submit_efd(),
                    second_ring.complete_efd()},
                   &r));
  EXPECT_EQ(r.body.result, -EDQUOT);
  EXPECT_EQ(r.body.reason, FGDS_LIMIT_USER_RINGS);
  // Three mappings held (two iovs, one ring): the third iov is refused.
  fgds_msg_iov_register msg = {};
  msg.size = kIovSize;
  ASSERT_TRUE(Call(FGDS_MSG_IOV_REGISTER, msg, {memfds[2]}, &r));
  EXPECT_EQ(r.body.result, -EDQUOT);
  EXPECT_EQ(r.body.reason, FGDS_LIMIT_USER_MAPPINGS);
  EXPECT_EQ(limits->UsageOf(me).mappings, 3u);
  // Unregistering gives the room back.
  EXPECT_EQ(Unregister(FGDS_MSG_IOV_UNREGISTER, first), 0);
  EXPECT_EQ(limits->UsageOf(me).mappings, 2u);
  EXPECT_EQ(RegisterIov(memfds[2], kIovSize), 0);
  // Bytes: an iov and a ring of a few pages held; an iov of twice the
  // size passes the user's three iovs' worth.
  ASSERT_EQ(Unregister(FGDS_MSG_IOV_UNREGISTER, first + 1), 0);
  int twice = MakeMemfd(2 * kIovSize, F_SEAL_SHRINK);
  msg.size = 2 * kIovSize;
  ASSERT_TRUE(Call(FGDS_MSG_IOV_REGISTER, msg, {twice}, &r));
  EXPECT_EQ(r.body.result, -EDQUOT);
  EXPECT_EQ(r.body.reason, FGDS_LIMIT_USER_BYTES);
  // The session's end gives everything back.
  Disconnect();
  const Usage left = limits->UsageOf(me);
  EXPECT_EQ(left.sessions + left.rings + left.ring_entries + left.mappings +
                left.bytes,
            0u);
  close(twice);
  for (int fd : memfds) close(fd);
}

TEST_F(SessionTest, ASessionOverTheUsersLimitIsRefusedAtOnce) {
  UserLimitsConfig config;
  config.per_user = {.sessions = 1,
                     .rings = 1,
                     .ring_entries = 64,
                     .mappings = 1,
                     .bytes = kIovSize};
  config.daemon_mappings = 1;
  config.daemon_bytes = kIovSize;
  auto limits = std::make_shared<UserLimits>(config);
  context_.user_limits = limits;
  ConnectAndHello();
  for (bool say_hello : {false, true}) {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    Session refused(sv[1], context_);
    if (say_hello) {
      auto hello = Message(FGDS_MSG_HELLO, 1, fgds_msg_hello{});
      ASSERT_TRUE(SendPacket(sv[0], hello.data(), hello.size(), {}));
    }
    // Run returns by itself, without waiting for the client: a refused
    // connection holds no thread or slot.
    refused.Run();
    EXPECT_TRUE(refused.done());
    unsigned char buf[FGDS_WIRE_MAX_MESSAGE];
    ASSERT_EQ(
        recv(sv[0], buf, sizeof(buf), MSG_DONTWAIT),
        static_cast<ssize_t>(sizeof(fgds_msg_header) + sizeof(fgds_msg_reply)))
        << strerror(errno);
    fgds_msg_header h;
    fgds_msg_reply body;
    memcpy(&h, buf, sizeof(h));
    memcpy(&body, buf + sizeof(h), sizeof(body));
    EXPECT_EQ(h.type, FGDS_MSG_ERROR);
    EXPECT_EQ(body.result, -EDQUOT);
    EXPECT_EQ(body.reason, FGDS_LIMIT_USER_SESSIONS);
    EXPECT_EQ(recv(sv[0], buf, sizeof(buf), MSG_DONTWAIT), 0);
    close(sv[0]);
  }
  EXPECT_EQ(limits->UsageOf(getuid()).sessions, 1u);
  // The first session still works.
  int memfd = MakeMemfd(kIovSize, F_SEAL_SHRINK);
  EXPECT_EQ(RegisterIov(memfd, kIovSize), 0);
  close(memfd);
  Disconnect();
  EXPECT_EQ(limits->UsageOf(getuid()).sessions, 0u);
}

}  // namespace
}  // namespace fgds::session

namespace fgds::session {
namespace {

TEST_F(SessionTest, RunningOutOfDescriptorsFailsTheRequestNotTheSession) {
  // The issue: a daemon out of descriptors cannot take those a request
  // carries (the kernel cuts the control data), and called the message
  // malformed and closed the session.
  ConnectAndHello();
  int memfd = MakeMemfd(kIovSize, F_SEAL_SHRINK);
  ASSERT_GE(memfd, 0);
  fgds_msg_iov_register msg = {};
  msg.size = kIovSize;
  const uint32_t seq = ++seq_;
  const std::vector<unsigned char> request =
      Message(FGDS_MSG_IOV_REGISTER, seq, msg);
  const int client = client_;
  bool sent = false;
  {
    // Free functions only until the descriptors are back: the sanitizers'
    // checks of a member call need a descriptor of their own.
    testing::DescriptorExhaustion exhausted;
    sent = SendPacket(client, request.data(), request.size(), {memfd});
    pollfd fd = {client, POLLIN, 0};
    sent = sent && poll(&fd, 1, 10000) == 1;
  }
  ASSERT_TRUE(sent);
  Reply r;
  ASSERT_TRUE(Receive(&r));
  EXPECT_EQ(r.type, FGDS_MSG_REPLY);
  EXPECT_EQ(r.seq, seq);
  EXPECT_EQ(r.body.result, -EMFILE);
  // The session goes on.
  EXPECT_EQ(RegisterIov(memfd, kIovSize), 0);
  close(memfd);
}

}  // namespace
}  // namespace fgds::session
