// The client library's argument checks and ring mechanics, without a daemon:
// an fgds_ior built over local memory plays both sides.
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "fgds/usrbio.h"
#include "gtest/gtest.h"

namespace {

TEST(ApiArgsTest, NonzeroReservedFieldsAreRejected) {
  fgds_session s = {};
  s.sock = -1;
  fgds_session_params sp = {};
  sp.reserved[3] = 1;
  EXPECT_EQ(fgds_session_open(&s, "/", &sp), -EINVAL);
  sp = {};
  sp.flags = 1;
  EXPECT_EQ(fgds_session_open(&s, "/", &sp), -EINVAL);

  fgds_iov iov;
  fgds_iov_params ip = {};
  ip.size = 4096;
  ip.numa_node = -1;
  ip.reserved[2] = 7;
  EXPECT_EQ(fgds_iov_create(&s, &iov, &ip), -EINVAL);
  ip.reserved[2] = 0;
  ip.flags = 1;
  EXPECT_EQ(fgds_iov_create(&s, &iov, &ip), -EINVAL);
  ip.flags = 0;
  ip.size = 0;
  EXPECT_EQ(fgds_iov_create(&s, &iov, &ip), -EINVAL);

  fgds_ior ior;
  fgds_ior_params rp = {};
  rp.reserved[0] = 1;
  EXPECT_EQ(fgds_ior_create(&s, &ior, &rp), -EINVAL);
  rp = {};
  rp.flags = 0x80;
  EXPECT_EQ(fgds_ior_create(&s, &ior, &rp), -EINVAL);
  rp = {};
  rp.priority = 5;
  EXPECT_EQ(fgds_ior_create(&s, &ior, &rp), -EINVAL);
  rp = {};
  rp.entries = FGDS_RING_MAX_ENTRIES + 1;
  EXPECT_EQ(fgds_ior_create(&s, &ior, &rp), -EINVAL);
  EXPECT_EQ(fgds_fd_register(&s, 0, 1), -EINVAL);
  EXPECT_EQ(fgds_fd_register(&s, -1, 0), -EBADF);
}

TEST(ApiArgsTest, EveryLimitIsDescribedDistinctly) {
  std::set<std::string> seen;
  for (uint32_t limit = FGDS_LIMIT_USER_SESSIONS; limit <= FGDS_LIMIT_MAX;
       ++limit) {
    const std::string text = fgds_limit_describe(limit);
    EXPECT_NE(text, "unknown limit") << limit;
    EXPECT_TRUE(seen.insert(text).second) << text;
  }
  // The ones an administrator can change name their option.
  EXPECT_NE(std::string(fgds_limit_describe(FGDS_LIMIT_USER_BYTES))
                .find("--user-bytes"),
            std::string::npos);
  EXPECT_NE(std::string(fgds_limit_describe(FGDS_LIMIT_DAEMON_MAPPINGS))
                .find("--daemon-mappings"),
            std::string::npos);
  EXPECT_STREQ(fgds_limit_describe(FGDS_LIMIT_MAX + 1), "unknown limit");
}

TEST(ApiArgsTest, ASessionThatCannotOpenNamesNoLimit) {
  fgds_session s;
  memset(&s, 0xab, sizeof(s));  // as a caller's uninitialized struct
  EXPECT_EQ(fgds_session_open(&s, "/", nullptr), -ENOTSUP);
  EXPECT_EQ(s.last_limit, FGDS_LIMIT_NONE);
}

TEST(ApiArgsTest, ErrnoIsUntouched) {
  errno = 1234;
  EXPECT_EQ(fgds_session_open(nullptr, "/", nullptr), -EINVAL);
  fgds_session s;
  // Not an fgds mount: fails with a result, errno stays.
  EXPECT_EQ(fgds_session_open(&s, "/proc", nullptr), -ENOTSUP);
  EXPECT_LT(fgds_session_open(&s, "/nonexistent/fgds", nullptr), 0);
  EXPECT_EQ(errno, 1234);
}

// A ring in local memory, with the fields fgds_ior_create would set.
class LocalRing : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(fgds_ring_get_layout(4, &layout_), 0);
    mem_ = static_cast<char*>(aligned_alloc(4096, layout_.total_size));
    memset(mem_, 0, layout_.total_size);
    ior_.ring = reinterpret_cast<fgds_ring_header*>(mem_);
    ior_.sqes = reinterpret_cast<fgds_sqe*>(mem_ + layout_.sq_offset);
    ior_.cqes = reinterpret_cast<fgds_cqe*>(mem_ + layout_.cq_offset);
    ior_.sq_entries = layout_.sq_entries;
    ior_.cq_entries = layout_.cq_entries;
    ior_.submit_efd = eventfd(0, EFD_NONBLOCK);
    ior_.complete_efd = eventfd(0, EFD_NONBLOCK);
    ior_.session = &session_;
    iov_.base = buf_.data();
    iov_.size = buf_.size();
    iov_.id = 9;
    iov_.session = &session_;
  }
  void TearDown() override {
    close(ior_.submit_efd);
    close(ior_.complete_efd);
    free(mem_);
  }
  // Plays the daemon: consumes every submitted SQE and completes it.
  int DaemonCompleteAll() {
    fgds_ring_header* h = ior_.ring;
    int n = 0;
    while (h->sq_head.value != h->sq_tail.value) {
      const fgds_sqe& sqe = ior_.sqes[h->sq_head.value & (ior_.sq_entries - 1)];
      fgds_cqe& cqe = ior_.cqes[h->cq_tail.value & (ior_.cq_entries - 1)];
      cqe.result = static_cast<int64_t>(sqe.len);
      cqe.userdata = sqe.userdata;
      cqe.path = FGDS_PATH_PAGE_CACHE;
      ++h->sq_head.value;
      ++h->cq_tail.value;
      ++n;
    }
    return n;
  }

  fgds_ring_layout layout_;
  char* mem_ = nullptr;
  fgds_session session_ = {};
  fgds_ior ior_ = {};
  std::vector<char> buf_ = std::vector<char>(65536);
  fgds_iov iov_ = {};
};

TEST_F(LocalRing, PrepChecksTheRangeInsideTheIov) {
  char* base = buf_.data();
  EXPECT_EQ(fgds_prep_read(&ior_, &iov_, base - 1, 0, 0, 1, 0), -EINVAL);
  EXPECT_EQ(fgds_prep_read(&ior_, &iov_, base, 0, 0, 65537, 0), -EINVAL);
  EXPECT_EQ(fgds_prep_read(&ior_, &iov_, base + 65536, 0, 0, 1, 0), -EINVAL);
  EXPECT_EQ(fgds_prep_read(&ior_, &iov_, base + 1, 0, 0, UINT64_MAX, 0),
            -EINVAL);
  EXPECT_EQ(fgds_prep_read(&ior_, &iov_, base, 0, 0, 0, 0), -EINVAL);
  EXPECT_EQ(fgds_prep_read(&ior_, &iov_, base, -1, 0, 1, 0), -EINVAL);
  EXPECT_EQ(fgds_prep_io(&ior_, &iov_, 3, 0, base, 0, 0, 1, 0), -EINVAL);
  EXPECT_EQ(fgds_prep_io(&ior_, &iov_, FGDS_OP_READ, 0x40, base, 0, 0, 1, 0),
            -EINVAL);
  fgds_session other;
  fgds_iov foreign = iov_;
  foreign.session = &other;
  EXPECT_EQ(fgds_prep_read(&ior_, &foreign, base, 0, 0, 1, 0), -EINVAL);
  EXPECT_EQ(fgds_prep_read(&ior_, &iov_, base + 65535, 0, 0, 1, 0), 0);
}

TEST_F(LocalRing, FullRingSaysEagainAndReapingMakesRoom) {
  for (uint32_t i = 0; i < ior_.sq_entries; ++i) {
    ASSERT_EQ(fgds_prep_read(&ior_, &iov_, buf_.data(), 3, i, 4096, i), 0);
  }
  EXPECT_EQ(fgds_prep_read(&ior_, &iov_, buf_.data(), 3, 0, 4096, 0), -EAGAIN);
  EXPECT_EQ(fgds_ior_submit(&ior_), 4);
  const fgds_sqe& first = ior_.sqes[0];
  EXPECT_EQ(first.opcode, FGDS_OP_READ);
  EXPECT_EQ(first.iov_id, 9u);
  EXPECT_EQ(first.fd_id, 3u);
  EXPECT_EQ(DaemonCompleteAll(), 4);
  fgds_cqe cqes[8];
  EXPECT_EQ(fgds_ior_wait(&ior_, cqes, 8, 4, 0), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(cqes[i].userdata, static_cast<uint64_t>(i));
    EXPECT_EQ(cqes[i].result, 4096);
  }
  EXPECT_EQ(ior_.in_flight, 0u);
  EXPECT_EQ(fgds_prep_read(&ior_, &iov_, buf_.data(), 3, 0, 4096, 0), 0);
}

TEST_F(LocalRing, WaitForMoreThanInFlightIsRejected) {
  fgds_cqe cqe;
  EXPECT_EQ(fgds_ior_wait(&ior_, &cqe, 1, 1, -1), -EINVAL);
  ASSERT_EQ(fgds_prep_read(&ior_, &iov_, buf_.data(), 3, 0, 4096, 0), 0);
  // Prepared but not submitted: it can never complete.
  EXPECT_EQ(fgds_ior_wait(&ior_, &cqe, 1, 1, -1), -EINVAL);
  EXPECT_EQ(fgds_ior_wait(&ior_, &cqe, 0, 1, -1), -EINVAL);
}

TEST_F(LocalRing, SubmitWakesASleepingDaemonOnly) {
  uint64_t count = 0;
  ASSERT_EQ(fgds_prep_read(&ior_, &iov_, buf_.data(), 3, 0, 4096, 0), 0);
  ASSERT_EQ(fgds_ior_submit(&ior_), 1);
  EXPECT_LT(read(ior_.submit_efd, &count, sizeof(count)), 0);  // not kicked
  ior_.ring->sq_head.flags = FGDS_RING_SQ_NEED_WAKEUP;
  ASSERT_EQ(fgds_prep_read(&ior_, &iov_, buf_.data(), 3, 0, 4096, 0), 0);
  ASSERT_EQ(fgds_ior_submit(&ior_), 1);
  EXPECT_EQ(read(ior_.submit_efd, &count, sizeof(count)),
            static_cast<ssize_t>(sizeof(count)));
}

TEST_F(LocalRing, WaitTimesOutWithoutCompletions) {
  ASSERT_EQ(fgds_prep_read(&ior_, &iov_, buf_.data(), 3, 0, 4096, 0), 0);
  ASSERT_EQ(fgds_ior_submit(&ior_), 1);
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
  session_.sock = sv[0];
  fgds_cqe cqe;
  EXPECT_EQ(fgds_ior_wait(&ior_, &cqe, 1, 1, 1000), 0);
  EXPECT_EQ(ior_.ring->cq_head.flags, 0u);  // CQ_WAITING cleared again
  // The peer (the "daemon") goes away: the wait ends with -ENOTCONN.
  close(sv[1]);
  EXPECT_EQ(fgds_ior_wait(&ior_, &cqe, 1, 1, -1), -ENOTCONN);
  close(sv[0]);
}

}  // namespace
