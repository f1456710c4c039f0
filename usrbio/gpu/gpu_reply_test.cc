// Which DIRECT a GPU iov is, as libfgds reads it from the daemon's
// GPU_IOV_REGISTER reply (fgds_msg_reply.reason with path DIRECT): 0, the
// daemon mapped the memory (entries never bounce, so they go to the ring
// without the stager); FGDS_IOV_GPU_DIRECT_NIC_ONLY, or any other nonzero
// value, the daemon keeps the dma-buf for a NIC (entries may bounce, so
// they go through the stager). The daemon is a scripted peer on a
// socketpair answering each request as a daemon of this protocol does;
// the device memory is FakeDeviceOps with a memfd for its dma-buf. Real:
// the whole of fgds_iov_wrap_gpu, fgds_ior_create and fgds_prep_io run.
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <thread>

#include "fgds/usrbio.h"
#include "fgds/usrbio_wire.h"
#include "gtest/gtest.h"
#include "usrbio/direct/fake_device_ops.h"
#include "usrbio/gpu/gpu_iov.h"
#include "usrbio/gpu/stager.h"

namespace fgds::usrbio::gpu {
namespace {

constexpr uint32_t kDirectId = 9;
constexpr uint64_t kSize = 1 << 20;

// Answers requests on `sock` until the client's end closes: every
// registration succeeds; GPU_IOV_REGISTER says DIRECT with `reason`.
class ScriptedDaemon {
 public:
  ScriptedDaemon(int sock, uint32_t reason)
      : sock_(sock), thread_([sock, reason] { Serve(sock, reason); }) {}
  // Also when a test stops early: shutting our end ends its recvmsg.
  ~ScriptedDaemon() {
    shutdown(sock_, SHUT_RDWR);
    thread_.join();
  }
  ScriptedDaemon(const ScriptedDaemon&) = delete;
  ScriptedDaemon& operator=(const ScriptedDaemon&) = delete;

 private:
  static void Serve(int sock, uint32_t reason) {
    for (;;) {
      unsigned char buf[FGDS_WIRE_MAX_MESSAGE];
      alignas(
          cmsghdr) char control[CMSG_SPACE(FGDS_WIRE_MAX_FDS * sizeof(int))];
      iovec io = {buf, sizeof(buf)};
      msghdr msg = {};
      msg.msg_iov = &io;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      const ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
      if (n <= 0) return;
      // The descriptors (memfds, eventfds, the dma-buf) are not kept.
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr;
           c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
          int fd;
          memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
          close(fd);
        }
      }
      fgds_msg_header header;
      if (static_cast<size_t>(n) < sizeof(header)) return;
      memcpy(&header, buf, sizeof(header));
      fgds_msg_reply body = {};
      switch (header.type) {
        case FGDS_MSG_HELLO:
          body.id = FGDS_WIRE_VERSION;  // no features: no staging tag
          break;
        case FGDS_MSG_IOV_REGISTER:
          body.id = 7;
          break;
        case FGDS_MSG_IOR_REGISTER:
          body.id = 5;
          break;
        case FGDS_MSG_GPU_IOV_REGISTER:
          body.id = kDirectId;
          body.path = FGDS_PATH_DIRECT;
          body.reason = reason;
          break;
        case FGDS_MSG_IOV_UNREGISTER:
        case FGDS_MSG_IOR_UNREGISTER:
          break;
        default:
          body.result = -EINVAL;
      }
      fgds_msg_header reply = {};
      reply.magic = FGDS_WIRE_MAGIC;
      reply.version = FGDS_WIRE_VERSION;
      reply.type = FGDS_MSG_REPLY;
      reply.length = sizeof(reply) + sizeof(body);
      reply.seq = header.seq;
      unsigned char out[sizeof(reply) + sizeof(body)];
      memcpy(out, &reply, sizeof(reply));
      memcpy(out + sizeof(reply), &body, sizeof(body));
      if (send(sock, out, sizeof(out), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(sizeof(out))) {
        return;
      }
    }
  }

  const int sock_;
  std::thread thread_;
};

struct ReplyCase {
  uint32_t reason;
  bool nic_only;
};

class GpuReplyTest : public ::testing::TestWithParam<ReplyCase> {};

TEST_P(GpuReplyTest, TheReasonSaysWhichDirectAndWhereEntriesGo) {
  int sock[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sock), 0);
  {
    ScriptedDaemon daemon(sock[1], GetParam().reason);
    fgds_session session = {};
    session.sock = sock[0];
    session.version = FGDS_WIRE_VERSION;
    pthread_mutex_init(&session.lock, nullptr);

    direct::FakeDeviceOps ops;
    ops.FakeDmaBufExport("0000:3b:00.0");
    const uint64_t alloc = ops.Alloc(kSize + 4096);
    const uint64_t dev = (alloc + 4095) & ~uint64_t{4095};
    fgds_iov iov = {};
    fgds_iov_gpu_params params = {};
    params.staging_bytes = 64 * 1024;
    params.chunk_bytes = 16 * 1024;
    ASSERT_EQ(WrapGpuIov(&session, &iov, dev, kSize, &params, &ops), 0);
    const GpuIov* g = GpuOf(&iov);
    EXPECT_TRUE(g->direct);
    EXPECT_EQ(g->direct_id, kDirectId);
    EXPECT_EQ(g->nic_only, GetParam().nic_only);
    // Either DIRECT looks the same to the application.
    uint32_t reason = 99;
    EXPECT_EQ(fgds_iov_gpu_path(&iov, &reason),
              static_cast<int>(FGDS_PATH_DIRECT));
    EXPECT_EQ(reason, FGDS_IOV_GPU_REASON_NONE);

    // An aligned entry: a mapped iov's needs no stager; a NIC-only one's
    // goes through it, tagged, to catch a "bounce this entry" answer.
    fgds_ior ior = {};
    ASSERT_EQ(fgds_ior_create(&session, &ior, nullptr), 0);
    ASSERT_EQ(fgds_prep_io(&ior, &iov, FGDS_OP_READ, 0,
                           reinterpret_cast<void*>(dev + 8192), 0, 4096,
                           16 * 1024, 1),
              0);
    EXPECT_EQ(StagerOf(&ior) != nullptr, GetParam().nic_only);
    ASSERT_EQ(fgds_ior_submit(&ior), 1);
    const fgds_sqe& sqe = ior.sqes[0];
    EXPECT_EQ(sqe.iov_id, kDirectId);
    EXPECT_EQ(sqe.iov_offset, 8192u);
    EXPECT_EQ(sqe.tag, GetParam().nic_only ? kDirectTag : 0u);
    // Served as the daemon would (the scripted one answers only messages),
    // so that nothing is in flight when the ior goes (fgds_ior_destroy's
    // REQUIRES): the application gets its own entry back, either way.
    fgds_ring_header* ring = ior.ring;
    const uint32_t tail = fgds_load_relaxed(&ring->cq_tail.value);
    fgds_cqe& served = ior.cqes[tail & (ior.cq_entries - 1)];
    served.result = 4096;
    served.userdata = sqe.userdata;
    served.path = FGDS_PATH_DIRECT;
    served.tag = sqe.tag;
    fgds_store_release(&ring->cq_tail.value, tail + 1);
    fgds_cqe got = {};
    ASSERT_EQ(fgds_ior_peek(&ior, &got, 1), 1);
    EXPECT_EQ(got.result, 4096);
    EXPECT_EQ(got.userdata, 1u);
    EXPECT_EQ(got.path, FGDS_PATH_DIRECT);
    EXPECT_EQ(got.tag, 0u);
    EXPECT_EQ(fgds_ior_destroy(&ior), 0);
    EXPECT_EQ(fgds_iov_destroy(&iov), 0);
  }
  close(sock[0]);
  close(sock[1]);
}

INSTANTIATE_TEST_SUITE_P(
    Reasons, GpuReplyTest,
    ::testing::Values(
        // What every daemon answers for memory it mapped (and all a daemon
        // before FGDS_IOV_GPU_DIRECT_NIC_ONLY ever answered DIRECT for).
        ReplyCase{FGDS_IOV_GPU_REASON_NONE, false},
        ReplyCase{FGDS_IOV_GPU_DIRECT_NIC_ONLY, true},
        // A kind this library does not know: the stager serves any.
        ReplyCase{0x1234u, true}));

}  // namespace
}  // namespace fgds::usrbio::gpu
