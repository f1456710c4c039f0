// usrbio end to end against a mounted daemon: discovery, reads and writes
// through a ring with data verification, the data path each entry took,
// per-entry validation errors, batching deadlines, and the eventfd mode.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fgds/usrbio_wire.h"
#include "tests/integration/usrbio_harness.h"

namespace fgds::testing {
namespace {

constexpr uint64_t kFileSize = 1 << 20;

class UsrbioRwTest : public UsrbioTest {
 protected:
  // A file of kFileSize pattern bytes, written through the mount.
  std::string MakeFile(const std::string& name, uint64_t seed) {
    std::vector<char> data(kFileSize);
    FillPattern(data.data(), data.size(), seed, 0);
    std::string path = Mnt(name);
    int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(pwrite(fd, data.data(), data.size(), 0),
              static_cast<ssize_t>(data.size()));
    // In passthrough the data went to the backing file's page cache, where
    // aligned usrbio reads would find it (and rightly take the cache):
    // drop it, so that they go O_DIRECT as in every mode.
    EXPECT_EQ(fsync(fd), 0);
    close(fd);
    int backing = open(Backing(name).c_str(), O_RDONLY);
    EXPECT_GE(backing, 0);
    EXPECT_EQ(posix_fadvise(backing, 0, 0, POSIX_FADV_DONTNEED), 0);
    close(backing);
    return path;
  }
};

TEST_F(UsrbioRwTest, ControlFileNamesTheSocket) {
  std::ifstream in(Mnt(".fgds/session"));
  std::stringstream content;
  content << in.rdbuf();
  EXPECT_NE(content.str().find("socket=/run/fgds/"), std::string::npos)
      << content.str();
  EXPECT_NE(content.str().find("protocol=1"), std::string::npos);
  // Any path inside the mount finds the same daemon.
  ASSERT_EQ(mkdir(Mnt("sub").c_str(), 0755), 0);
  Session s(Mnt("sub"));
  EXPECT_EQ(s.open_result, 0);
  EXPECT_EQ(s.s.version, FGDS_WIRE_VERSION);
}

TEST_F(UsrbioRwTest, NotAnFgdsMountIsNotSupported) {
  fgds_session s;
  EXPECT_EQ(fgds_session_open(&s, fs_->backing().c_str(), nullptr), -ENOTSUP);
}

TEST_F(UsrbioRwTest, ReadsLandInTheIovWithThePathTaken) {
  const std::string path = MakeFile("r", 1);
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  Iov iov(&s.s, kFileSize);
  ASSERT_EQ(iov.result, 0);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  int fd = open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  int id = fgds_fd_register(&s.s, fd, 0);
  ASSERT_GE(id, 0);
  close(fd);  // the registration does not need it any more

  // Aligned: O_DIRECT where the backing fs allows it. Unaligned: page cache.
  ASSERT_EQ(fgds_prep_read(&ior.ior, &iov.iov, iov.at(0), id, 0, 65536, 1), 0);
  ASSERT_EQ(
      fgds_prep_read(&ior.ior, &iov.iov, iov.at(100000), id, 4097, 3333, 2), 0);
  // Past the end of the file: a short read, as pread.
  ASSERT_EQ(fgds_prep_read(&ior.ior, &iov.iov, iov.at(200704), id,
                           kFileSize - 4096, 65536, 3),
            0);
  fgds_cqe cqes[3];
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, cqes, 3), 3);
  // Over ceph every read is copied through libcephfs's client cache, which
  // the backend reports as the page cache (docs/ceph.md), or moved by a
  // storage-side agent over TCP (docs/agent.md).
  const uint32_t buffered_path =
      TestingAgents() ? FGDS_PATH_TCP : FGDS_PATH_PAGE_CACHE;
  const uint32_t aligned_path = !TestingCeph() && BackingSupportsDirect()
                                    ? FGDS_PATH_DIRECT
                                    : buffered_path;
  for (const fgds_cqe& c : cqes) {
    switch (c.userdata) {
      case 1:
        EXPECT_EQ(c.result, 65536);
        EXPECT_EQ(c.path, aligned_path);
        EXPECT_TRUE(MatchesPattern(iov.at(0), 65536, 1, 0));
        break;
      case 2:
        EXPECT_EQ(c.result, 3333);
        EXPECT_EQ(c.path, buffered_path);
        EXPECT_TRUE(MatchesPattern(iov.at(100000), 3333, 1, 4097));
        break;
      case 3:
        EXPECT_EQ(c.result, 4096);
        EXPECT_TRUE(MatchesPattern(iov.at(200704), 4096, 1, kFileSize - 4096));
        break;
      default:
        ADD_FAILURE() << "unexpected userdata " << c.userdata;
    }
  }
  // fgds stat counts each entry once, on the side of the file it took.
  int64_t direct_entries = 0;
  int64_t direct_bytes = 0;
  for (const fgds_cqe& c : cqes) {
    if (c.path != FGDS_PATH_DIRECT) continue;
    ++direct_entries;
    direct_bytes += c.result;
  }
  const std::string mnt = fs_->mountpoint();
  const UsrbioStatsRow direct =
      ReadUsrbioStats(mnt, "read", "host", "o-direct");
  const UsrbioStatsRow cached =
      ReadUsrbioStats(mnt, "read", "host", "page-cache");
  EXPECT_EQ(direct.entries, direct_entries);
  EXPECT_EQ(direct.bytes, direct_bytes);
  EXPECT_EQ(direct.entries + cached.entries, 3);
  EXPECT_EQ(direct.bytes + cached.bytes, 65536 + 3333 + 4096);
  EXPECT_EQ(direct.errors + cached.errors, 0);
  EXPECT_EQ(ReadUsrbioStats(mnt, "read", "gpu-bounce", "page-cache").entries,
            0);
  EXPECT_EQ(ReadUsrbioStats(mnt, "write", "host", "page-cache").entries, 0);
}

TEST_F(UsrbioRwTest, WritesReachTheFileAndReadBack) {
  const std::string path = Mnt("w");
  int fd = open(path.c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0);
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  int id = fgds_fd_register(&s.s, fd, 0);
  ASSERT_GE(id, 0);
  Iov iov(&s.s, 2 * kFileSize);
  ASSERT_EQ(iov.result, 0);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);

  // 16 pieces, alternately aligned and odd-sized, covering the file.
  FillPattern(iov.at(0), kFileSize, 7, 0);
  std::vector<std::pair<uint64_t, uint64_t>> pieces;
  for (uint64_t off = 0; off < kFileSize;) {
    uint64_t len = pieces.size() % 2 ? 65536 - 513 : 65536 + 513;
    len = std::min(len, kFileSize - off);
    pieces.emplace_back(off, len);
    off += len;
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    auto [off, len] = pieces[i];
    ASSERT_EQ(fgds_prep_write(&ior.ior, &iov.iov, iov.at(off), id, off, len, i),
              0);
  }
  std::vector<fgds_cqe> cqes(pieces.size());
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, cqes.data(), cqes.size()),
            static_cast<int>(cqes.size()));
  for (const fgds_cqe& c : cqes) {
    EXPECT_EQ(c.result, static_cast<int64_t>(pieces[c.userdata].second));
  }
  // The backing file and the mount both hold the data.
  std::vector<char> back(kFileSize);
  int bfd = open(Backing("w").c_str(), O_RDONLY);
  ASSERT_EQ(pread(bfd, back.data(), kFileSize, 0),
            static_cast<ssize_t>(kFileSize));
  close(bfd);
  EXPECT_TRUE(MatchesPattern(back.data(), kFileSize, 7, 0));

  // And usrbio reads it back into the other half of the iov.
  ASSERT_EQ(fgds_prep_read(&ior.ior, &iov.iov, iov.at(kFileSize), id, 0,
                           kFileSize, 99),
            0);
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, cqes.data(), 1), 1);
  EXPECT_EQ(cqes[0].result, static_cast<int64_t>(kFileSize));
  EXPECT_TRUE(MatchesPattern(iov.at(kFileSize), kFileSize, 7, 0));
  close(fd);
}

// A reader of the mount that cached the old bytes sees a usrbio write as
// soon as the writer has its completion (the daemon drops the mount's
// cached pages of the range before posting it), aligned or not.
TEST_F(UsrbioRwTest, MountReadersSeeUsrbioWritesAtOnce) {
  const std::string path = MakeFile("coherent", 11);
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  int id = RegisterPath(&s.s, path, O_WRONLY);
  ASSERT_GE(id, 0);
  // Cache the old contents in the mount's page cache (after the opens
  // above, which may drop it).
  int reader = open(path.c_str(), O_RDONLY);
  ASSERT_GE(reader, 0);
  std::vector<char> seen(kFileSize);
  ASSERT_EQ(pread(reader, seen.data(), kFileSize, 0),
            static_cast<ssize_t>(kFileSize));
  ASSERT_TRUE(MatchesPattern(seen.data(), kFileSize, 11, 0));

  Iov iov(&s.s, kFileSize);
  ASSERT_EQ(iov.result, 0);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  FillPattern(iov.at(0), kFileSize, 12, 0);
  // One aligned write (O_DIRECT where the backing takes it), one odd one.
  ASSERT_EQ(
      fgds_prep_write(&ior.ior, &iov.iov, iov.at(65536), id, 65536, 131072, 1),
      0);
  ASSERT_EQ(
      fgds_prep_write(&ior.ior, &iov.iov, iov.at(300001), id, 300001, 777, 2),
      0);
  fgds_cqe cqes[2];
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, cqes, 2), 2);
  for (const fgds_cqe& c : cqes) EXPECT_GT(c.result, 0);

  ASSERT_EQ(pread(reader, seen.data(), kFileSize, 0),
            static_cast<ssize_t>(kFileSize));
  close(reader);
  EXPECT_TRUE(MatchesPattern(seen.data(), 65536, 11, 0));
  EXPECT_TRUE(MatchesPattern(seen.data() + 65536, 131072, 12, 65536));
  EXPECT_TRUE(
      MatchesPattern(seen.data() + 196608, 300001 - 196608, 11, 196608));
  EXPECT_TRUE(MatchesPattern(seen.data() + 300001, 777, 12, 300001));
  EXPECT_TRUE(
      MatchesPattern(seen.data() + 300778, kFileSize - 300778, 11, 300778));
}

// fsync and fdatasync entries: 0 for a registered file (any access mode),
// -EBADF for an unknown id, -EINVAL for arguments an fsync does not take.
TEST_F(UsrbioRwTest, FsyncEntriesReportTheirResult) {
  const std::string path = MakeFile("sync", 8);
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  Iov iov(&s.s, 65536);
  ASSERT_EQ(iov.result, 0);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  int id = RegisterPath(&s.s, path, O_RDWR);
  ASSERT_GE(id, 0);
  FillPattern(iov.at(0), 65536, 9, 0);
  ASSERT_EQ(fgds_prep_write(&ior.ior, &iov.iov, iov.at(0), id, 0, 65536, 1), 0);
  fgds_cqe cqes[4];
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, cqes, 1), 1);
  ASSERT_EQ(cqes[0].result, 65536);

  EXPECT_EQ(fgds_prep_fsync(&ior.ior, id, 0x80, 9), -EINVAL);
  ASSERT_EQ(fgds_prep_fsync(&ior.ior, id, 0, 2), 0);
  ASSERT_EQ(fgds_prep_fsync(&ior.ior, id, FGDS_SQE_DATASYNC, 3), 0);
  ASSERT_EQ(fgds_prep_fsync(&ior.ior, id + 50, 0, 4), 0);
  fgds_sqe& forged = NextSqe(ior.ior);
  ASSERT_EQ(fgds_prep_fsync(&ior.ior, id, 0, 5), 0);
  forged.len = 4096;  // an fsync takes no range
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, cqes, 4), 4);
  for (const fgds_cqe& c : cqes) {
    EXPECT_EQ(c.path, FGDS_PATH_NONE);
    switch (c.userdata) {
      case 2:
      case 3:
        EXPECT_EQ(c.result, 0) << c.userdata;
        break;
      case 4:
        EXPECT_EQ(c.result, -EBADF);
        break;
      default:
        EXPECT_EQ(c.userdata, 5u);
        EXPECT_EQ(c.result, -EINVAL);
    }
  }
  const UsrbioStatsRow syncs =
      ReadUsrbioStats(fs_->mountpoint(), "fsync", "-", "-");
  EXPECT_EQ(syncs.entries, 2);
  EXPECT_EQ(syncs.errors, 0);
}

TEST_F(UsrbioRwTest, BadEntriesFailAloneWithTheirErrno) {
  const std::string path = MakeFile("v", 3);
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  Iov iov(&s.s, 65536);
  ASSERT_EQ(iov.result, 0);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  int ro = RegisterPath(&s.s, path, O_RDONLY);
  ASSERT_GE(ro, 0);

  fgds_iov bogus = iov.iov;
  bogus.id = 777;  // no such iov in this session
  ASSERT_EQ(fgds_prep_read(&ior.ior, &iov.iov, iov.at(0), ro, 0, 4096, 1), 0);
  ASSERT_EQ(fgds_prep_read(&ior.ior, &bogus, iov.at(0), ro, 0, 4096, 2), 0);
  ASSERT_EQ(fgds_prep_read(&ior.ior, &iov.iov, iov.at(0), ro + 50, 0, 4096, 3),
            0);
  ASSERT_EQ(fgds_prep_write(&ior.ior, &iov.iov, iov.at(0), ro, 0, 4096, 4), 0);
  ASSERT_EQ(fgds_prep_read(&ior.ior, &iov.iov, iov.at(4096), ro, 4096, 4096, 5),
            0);
  fgds_cqe cqes[5];
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, cqes, 5), 5);
  int64_t by_tag[6] = {};
  for (const fgds_cqe& c : cqes) by_tag[c.userdata] = c.result;
  EXPECT_EQ(by_tag[1], 4096);
  EXPECT_EQ(by_tag[2], -EINVAL);
  EXPECT_EQ(by_tag[3], -EBADF);
  EXPECT_EQ(by_tag[4], -EACCES);
  EXPECT_EQ(by_tag[5], 4096);
  // The three refused entries are counted apart from the two reads.
  const UsrbioStatsRow rejected =
      ReadUsrbioStats(fs_->mountpoint(), "rejected", "-", "-");
  EXPECT_EQ(rejected.entries, 3);
  EXPECT_EQ(rejected.errors, 3);
}

// The library marks its own entries with fgds_sqe.tag; the daemon hands it
// back unchanged, on successes and on entries that fail validation alike.
TEST_F(UsrbioRwTest, TagIsEchoedInTheCompletion) {
  const std::string path = MakeFile("t", 4);
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  Iov iov(&s.s, 65536);
  ASSERT_EQ(iov.result, 0);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  int id = RegisterPath(&s.s, path, O_RDONLY);
  ASSERT_GE(id, 0);
  auto prep_tagged = [&](int fd_id, uint64_t userdata, uint32_t tag) {
    fgds_sqe& sqe = NextSqe(ior.ior);
    ASSERT_EQ(
        fgds_prep_read(&ior.ior, &iov.iov, iov.at(0), fd_id, 0, 4096, userdata),
        0);
    sqe.tag = tag;
  };
  prep_tagged(id, 1, 0xabcd1234u);
  prep_tagged(id + 50, 2, 7);  // unregistered fd: fails validation
  prep_tagged(id, 3, 0);
  fgds_cqe cqes[3];
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, cqes, 3), 3);
  for (const fgds_cqe& c : cqes) {
    switch (c.userdata) {
      case 1:
        EXPECT_EQ(c.result, 4096);
        EXPECT_EQ(c.tag, 0xabcd1234u);
        break;
      case 2:
        EXPECT_EQ(c.result, -EBADF);
        EXPECT_EQ(c.tag, 7u);
        break;
      default:
        EXPECT_EQ(c.userdata, 3u);
        EXPECT_EQ(c.tag, 0u);
    }
  }
}

TEST_F(UsrbioRwTest, OnlyRegularFilesOfThisMountRegister) {
  MakeFile("f", 4);
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  int outside = open(Backing("f").c_str(), O_RDONLY);  // not via the mount
  EXPECT_EQ(fgds_fd_register(&s.s, outside, 0), -EBADF);
  close(outside);
  int dir = open(fs_->mountpoint().c_str(), O_RDONLY | O_DIRECTORY);
  EXPECT_EQ(fgds_fd_register(&s.s, dir, 0), -EINVAL);
  close(dir);
  int opath = open(Mnt("f").c_str(), O_PATH);
  EXPECT_EQ(fgds_fd_register(&s.s, opath, 0), -EBADF);
  close(opath);
  int control = open(Mnt(".fgds/stats").c_str(), O_RDONLY);
  ASSERT_GE(control, 0);
  EXPECT_LT(fgds_fd_register(&s.s, control, 0), 0);
  close(control);
  EXPECT_EQ(fgds_fd_unregister(&s.s, 12345), -ENOENT);
  // The session survived all of that.
  int fd = open(Mnt("f").c_str(), O_RDONLY);
  EXPECT_GE(fgds_fd_register(&s.s, fd, 0), 0);
  close(fd);
}

// A client that scribbles over its own ring indexes (a tail far ahead, a
// head past what was posted) harms only its own ring: the daemon takes at
// most a ring's worth of entries, fails the garbage ones, never posts into
// slots it cannot prove free, and keeps serving everyone else.
TEST_F(UsrbioRwTest, CorruptRingIndexesHarmOnlyThatRing) {
  const std::string path = MakeFile("ci", 6);
  Session bad(fs_->mountpoint());
  ASSERT_EQ(bad.open_result, 0);
  Ior bad_ior(&bad.s);
  ASSERT_EQ(bad_ior.result, 0);
  fgds_ring_header* ring = bad_ior.ior.ring;
  const uint32_t cq_entries = bad_ior.ior.cq_entries;
  // Garbage in every SQE slot, then a tail far ahead, and a kick.
  memset(bad_ior.ior.sqes, 0x5a, sizeof(fgds_sqe) * bad_ior.ior.sq_entries);
  fgds_store_release(&ring->sq_tail.value, 0x7fff0000u);
  uint64_t one = 1;
  ASSERT_EQ(write(bad_ior.ior.submit_efd, &one, sizeof(one)), 8);
  // The daemon fails garbage entries until the CQ is full, and then
  // stops: it never posts over an unreaped completion.
  for (int i = 0;
       i < 2000 && fgds_load_acquire(&ring->cq_tail.value) < cq_entries; ++i) {
    usleep(1000);
  }
  usleep(20000);
  EXPECT_EQ(fgds_load_acquire(&ring->cq_tail.value), cq_entries);
  for (uint32_t i = 0; i < cq_entries; ++i) {
    EXPECT_EQ(bad_ior.ior.cqes[i].result, -EINVAL) << i;
  }
  // A cq_head past the tail: the daemon must not take it as free room.
  fgds_store_release(&ring->cq_head.value, 0x40000000u);
  ASSERT_EQ(write(bad_ior.ior.submit_efd, &one, sizeof(one)), 8);
  usleep(50000);
  EXPECT_LE(fgds_load_acquire(&ring->cq_tail.value), cq_entries);

  // Everyone else is unharmed.
  Session good(fs_->mountpoint());
  ASSERT_EQ(good.open_result, 0);
  Iov iov(&good.s, 65536);
  ASSERT_EQ(iov.result, 0);
  Ior ior(&good.s);
  ASSERT_EQ(ior.result, 0);
  int id = RegisterPath(&good.s, path, O_RDONLY);
  ASSERT_GE(id, 0);
  ASSERT_EQ(fgds_prep_read(&ior.ior, &iov.iov, iov.at(0), id, 4096, 65536, 1),
            0);
  fgds_cqe cqe;
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, &cqe, 1), 1);
  EXPECT_EQ(cqe.result, 65536);
  EXPECT_TRUE(MatchesPattern(iov.at(0), 65536, 6, 4096));
  // The bad ring and its session still close cleanly (the owners above).
}

TEST_F(UsrbioRwTest, MalformedMessageClosesOnlyThatSession) {
  const std::string path = MakeFile("m", 5);
  Session good(fs_->mountpoint());
  Session bad(fs_->mountpoint());
  ASSERT_EQ(good.open_result, 0);
  ASSERT_EQ(bad.open_result, 0);
  const char garbage[] = "this is not a usrbio message";
  ASSERT_EQ(send(bad.s.sock, garbage, sizeof(garbage), MSG_NOSIGNAL),
            static_cast<ssize_t>(sizeof(garbage)));
  unsigned char reply[FGDS_WIRE_MAX_MESSAGE];
  ssize_t n = recv(bad.s.sock, reply, sizeof(reply), 0);
  ASSERT_EQ(n, static_cast<ssize_t>(sizeof(fgds_msg_header) +
                                    sizeof(fgds_msg_reply)));
  fgds_msg_header h;
  fgds_msg_reply r;
  memcpy(&h, reply, sizeof(h));
  memcpy(&r, reply + sizeof(h), sizeof(r));
  EXPECT_EQ(h.type, FGDS_MSG_ERROR);
  EXPECT_EQ(r.result, -EPROTO);
  EXPECT_EQ(recv(bad.s.sock, reply, sizeof(reply), 0), 0);  // closed

  // The other session is unharmed.
  Iov iov(&good.s, 65536);
  ASSERT_EQ(iov.result, 0);
  Ior ior(&good.s);
  ASSERT_EQ(ior.result, 0);
  int id = RegisterPath(&good.s, path, O_RDONLY);
  ASSERT_GE(id, 0);
  ASSERT_EQ(fgds_prep_read(&ior.ior, &iov.iov, iov.at(0), id, 0, 65536, 0), 0);
  fgds_cqe cqe;
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, &cqe, 1), 1);
  EXPECT_EQ(cqe.result, 65536);
  EXPECT_TRUE(MatchesPattern(iov.at(0), 65536, 5, 0));
}

TEST_F(UsrbioRwTest, PartialBatchRunsAtItsDeadline) {
  const std::string path = MakeFile("d", 6);
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  Iov iov(&s.s, 65536);
  fgds_ior_params p = {};
  p.entries = 64;
  p.io_depth = 32;  // never reached below
  p.timeout_us = 2000;
  Ior ior(&s.s, &p);
  ASSERT_EQ(ior.result, 0);
  int id = RegisterPath(&s.s, path, O_RDONLY);
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(fgds_prep_read(&ior.ior, &iov.iov, iov.at(0), id, 0, 4096, 0), 0);
    fgds_cqe cqe;
    ASSERT_EQ(SubmitAndWaitAll(&ior.ior, &cqe, 1), 1) << round;
    EXPECT_EQ(cqe.result, 4096);
  }
}

TEST_F(UsrbioRwTest, EventfdSignalsCompletionsForEventLoops) {
  const std::string path = MakeFile("e", 8);
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  Iov iov(&s.s, 65536);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  int id = RegisterPath(&s.s, path, O_RDONLY);
  int efd = fgds_ior_eventfd(&ior.ior);
  ASSERT_GE(efd, 0);
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(fgds_prep_read(&ior.ior, &iov.iov, iov.at(4096 * i), id, 4096 * i,
                             4096, i),
              0);
  }
  ASSERT_EQ(fgds_ior_submit(&ior.ior), 4);
  int got = 0;
  fgds_cqe cqes[4];
  while (got < 4) {
    pollfd p = {efd, POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 10000), 1) << "no wakeup";
    uint64_t count;
    ASSERT_EQ(read(efd, &count, sizeof(count)), 8);
    int n = fgds_ior_peek(&ior.ior, cqes + got, 4 - got);
    ASSERT_GE(n, 0);
    got += n;
  }
  for (const fgds_cqe& c : cqes) EXPECT_EQ(c.result, 4096);
}

TEST_F(UsrbioRwTest, ExampleProgramReadsAFile) {
  const std::string path = MakeFile("example", 9);
  std::string command = std::string(FGDS_USRBIO_EXAMPLE) + " " + path + " 2>&1";
  FILE* out = popen(command.c_str(), "r");
  ASSERT_NE(out, nullptr);
  char line[256] = {};
  ASSERT_NE(fgets(line, sizeof(line), out), nullptr);
  EXPECT_EQ(pclose(out), 0) << line;
  EXPECT_NE(std::string(line).find("read 1048576 bytes"), std::string::npos)
      << line;
}

}  // namespace
}  // namespace fgds::testing
