// Stager: the GPU bounce pipeline of one ior, on one thread and no daemon.
// The ior's ring lives in test memory; a TestDaemon serves its entries
// from a byte array standing in for the file (consume the SQE, copy to or
// from the iov, post the CQE), when and as often as the test says. Device
// memory is direct::FakeDeviceOps (host blocks, memcpy copies, events
// that can stay "not ready"), wrapped to record each copy and each event
// seen done. The test drives the stager through the public calls
// (fgds_prep_io, fgds_ior_submit, fgds_ior_peek, fgds_ior_wait), as an
// application would, and checks the order of events and the results.
#include "usrbio/gpu/stager.h"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fgds/usrbio.h"
#include "gtest/gtest.h"
#include "usrbio/direct/fake_device_ops.h"
#include "usrbio/gpu/gpu_iov.h"
#include "usrbio/internal.h"

namespace fgds::usrbio::gpu {
namespace {

constexpr uint32_t kFileId = 0;
constexpr uint32_t kStagingId = 7;
constexpr uint32_t kHostIovId = 3;
constexpr uint32_t kDirectId = 9;  // the daemon's own iov of a DIRECT GPU iov
constexpr uint64_t kChunk = 4096;
constexpr uint64_t kFileSize = 64 * 1024;

// What happened, in order: the device ops' copies ("h2d OFF+LEN" and
// "d2h OFF+LEN", device offsets) and events seen done ("event"), the
// daemon's I/O ("read OFF+LEN", "write OFF+LEN", file offsets) and the
// completions the test reaped ("done USERDATA").
using Trace = std::vector<std::string>;

std::string Range(uint64_t offset, uint64_t len) {
  return std::to_string(offset) + "+" + std::to_string(len);
}

uint8_t Pattern(uint64_t offset) {
  return static_cast<uint8_t>((offset * 131 + 7) % 251);
}

// FakeDeviceOps (final) behind a recorder.
class TracingDeviceOps final : public direct::DeviceOps {
 public:
  TracingDeviceOps(direct::FakeDeviceOps* fake, Trace* trace)
      : fake_(fake), trace_(trace) {}
  void set_base(uint64_t base) { base_ = base; }

  int BindThread() override { return fake_->BindThread(); }
  int AllocPinned(size_t bytes, void** out) override {
    return fake_->AllocPinned(bytes, out);
  }
  void FreePinned(void* ptr, size_t bytes) override {
    fake_->FreePinned(ptr, bytes);
  }
  int CreateStream(uintptr_t* stream) override {
    return fake_->CreateStream(stream);
  }
  void DestroyStream(uintptr_t stream) override {
    fake_->DestroyStream(stream);
  }
  int SyncStream(uintptr_t stream) override {
    return fake_->SyncStream(stream);
  }
  int CreateEvent(uintptr_t* event) override {
    return fake_->CreateEvent(event);
  }
  void DestroyEvent(uintptr_t event) override { fake_->DestroyEvent(event); }
  int CopyToDevice(uint64_t dst, const void* src, size_t bytes,
                   uintptr_t stream) override {
    trace_->push_back("h2d " + Range(dst - base_, bytes));
    return fake_->CopyToDevice(dst, src, bytes, stream);
  }
  int CopyToHost(void* dst, uint64_t src, size_t bytes,
                 uintptr_t stream) override {
    trace_->push_back("d2h " + Range(src - base_, bytes));
    return fake_->CopyToHost(dst, src, bytes, stream);
  }
  int RecordEvent(uintptr_t event, uintptr_t stream) override {
    return fake_->RecordEvent(event, stream);
  }
  int QueryEvent(uintptr_t event) override {
    const int ret = fake_->QueryEvent(event);
    if (ret == 0) trace_->push_back("event");
    return ret;
  }
  int WaitEvent(uintptr_t event) override { return fake_->WaitEvent(event); }
  int Resolve(uint64_t address, direct::AllocationInfo* info,
              std::string* message) override {
    return fake_->Resolve(address, info, message);
  }
  int BufferId(uint64_t address, uint64_t* buffer_id) override {
    return fake_->BufferId(address, buffer_id);
  }
  direct::DeviceDescription Describe() override { return fake_->Describe(); }

 private:
  direct::FakeDeviceOps* const fake_;
  Trace* const trace_;
  uint64_t base_ = 0;
};

// The daemon's side of the ring, served in the test thread.
class TestDaemon {
 public:
  TestDaemon(fgds_ior* ior, Trace* trace) : ior_(ior), trace_(trace) {
    file.resize(kFileSize);
    for (uint64_t i = 0; i < kFileSize; ++i) file[i] = Pattern(i);
  }

  // Serves up to `max` submitted entries; returns how many it served.
  int Serve(int max = INT_MAX) {
    fgds_ring_header* ring = ior_->ring;
    uint32_t head = fgds_load_relaxed(&ring->sq_head.value);
    const uint32_t tail = fgds_load_acquire(&ring->sq_tail.value);
    int count = 0;
    for (; head != tail && count < max; ++count) {
      const fgds_sqe sqe = ior_->sqes[head & (ior_->sq_entries - 1)];
      fgds_store_release(&ring->sq_head.value, ++head);
      served.push_back(sqe);
      // The GPU iov's own id, whoever sent the entry (the stager, tagged,
      // for a NIC-only iov; fgds_prep_io, untagged, for a mapped one).
      const bool on_direct = sqe.iov_id == kDirectId;
      if (on_direct && direct_answer != 0) {
        // "Bounce this entry": nothing moved.
        trace_->push_back("bounce " + Range(sqe.file_offset, sqe.len));
        Post(sqe, direct_answer_result, direct_answer);
        continue;
      }
      Post(sqe, Execute(sqe),
           on_direct ? FGDS_PATH_DIRECT : FGDS_PATH_PAGE_CACHE);
    }
    return count;
  }
  // Entries submitted and not served yet.
  uint32_t pending() const {
    return fgds_load_acquire(&ior_->ring->sq_tail.value) -
           fgds_load_relaxed(&ior_->ring->sq_head.value);
  }
  std::vector<fgds_sqe> PendingSqes() const {
    std::vector<fgds_sqe> out;
    const uint32_t head = fgds_load_relaxed(&ior_->ring->sq_head.value);
    for (uint32_t i = 0; i < pending(); ++i) {
      out.push_back(ior_->sqes[(head + i) & (ior_->sq_entries - 1)]);
    }
    return out;
  }

  std::vector<uint8_t> file;
  std::map<uint32_t, std::pair<char*, uint64_t>> iovs;  // id -> memory
  // The result of the entry at this file offset, instead of doing it (a
  // failing chunk); reads copy that many bytes when it is positive.
  std::map<uint64_t, int64_t> results;
  std::vector<fgds_sqe> served;
  // The answer to entries on the GPU iov's own id (kDirectId): 0 serves
  // them; FGDS_PATH_BOUNCE_ENTRY or _ALWAYS answers "bounce this entry",
  // with direct_answer_result (what a daemon that keeps to the protocol
  // sends, unless a test makes it lie).
  uint32_t direct_answer = 0;
  int64_t direct_answer_result = FGDS_RESULT_BOUNCE;

 private:
  int64_t Execute(const fgds_sqe& sqe) {
    auto iov = iovs.find(sqe.iov_id);
    if (iov == iovs.end() || sqe.iov_offset > iov->second.second ||
        sqe.len > iov->second.second - sqe.iov_offset) {
      ADD_FAILURE() << "entry outside any iov: iov " << sqe.iov_id << " offset "
                    << sqe.iov_offset << " len " << sqe.len;
      return -EINVAL;
    }
    char* mem = iov->second.first + sqe.iov_offset;
    auto forced = results.find(sqe.file_offset);
    const bool read = sqe.opcode == FGDS_OP_READ;
    trace_->push_back((read ? "read " : "write ") +
                      Range(sqe.file_offset, sqe.len));
    if (forced != results.end() && forced->second <= 0) return forced->second;
    uint64_t len = sqe.len;
    if (forced != results.end()) {
      len = std::min<uint64_t>(len, static_cast<uint64_t>(forced->second));
    }
    if (read) {
      const uint64_t size = file.size();
      len = sqe.file_offset >= size ? 0 : std::min(len, size - sqe.file_offset);
      memcpy(mem, file.data() + sqe.file_offset, len);
    } else {
      if (file.size() < sqe.file_offset + len) {
        file.resize(sqe.file_offset + len);
      }
      memcpy(file.data() + sqe.file_offset, mem, len);
    }
    return static_cast<int64_t>(len);
  }

  void Post(const fgds_sqe& sqe, int64_t result, uint32_t path) {
    fgds_ring_header* ring = ior_->ring;
    const uint32_t tail = fgds_load_relaxed(&ring->cq_tail.value);
    // The client never has more entries out than the CQ holds: posting
    // must never overwrite an unreaped completion.
    EXPECT_LT(tail - fgds_load_acquire(&ring->cq_head.value), ior_->cq_entries)
        << "CQ overflow";
    fgds_cqe& cqe = ior_->cqes[tail & (ior_->cq_entries - 1)];
    cqe.result = result;
    cqe.userdata = sqe.userdata;
    cqe.path = path;
    cqe.tag = sqe.tag;
    fgds_store_release(&ring->cq_tail.value, tail + 1);
  }

  fgds_ior* const ior_;
  Trace* const trace_;
};

// An ior over a ring in test memory, with no daemon behind its session.
class TestIor {
 public:
  TestIor(fgds_session* session, uint32_t entries) {
    fgds_ring_layout layout = {};
    EXPECT_EQ(fgds_ring_get_layout(entries, &layout), 0);
    memory_ = std::aligned_alloc(4096, layout.total_size);
    memset(memory_, 0, layout.total_size);
    ior.ring = static_cast<fgds_ring_header*>(memory_);
    ior.sqes = reinterpret_cast<fgds_sqe*>(static_cast<char*>(memory_) +
                                           layout.sq_offset);
    ior.cqes = reinterpret_cast<fgds_cqe*>(static_cast<char*>(memory_) +
                                           layout.cq_offset);
    ior.sq_entries = layout.sq_entries;
    ior.cq_entries = layout.cq_entries;
    ior.map_size = layout.total_size;
    ior.memfd = -1;
    ior.submit_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    ior.complete_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    ior.session = session;
  }
  ~TestIor() {
    // What fgds_ior_destroy does to the stager.
    delete StagerOf(&ior);
    close(ior.submit_efd);
    close(ior.complete_efd);
    std::free(memory_);
  }
  TestIor(const TestIor&) = delete;
  TestIor& operator=(const TestIor&) = delete;

  fgds_ior ior = {};

 private:
  void* memory_ = nullptr;
};

class StagerTest : public ::testing::Test {
 protected:
  // A GPU iov of `dev_size` bytes of fake device memory, with `slots`
  // staging slots of kChunk bytes, on an ior of `entries` ring entries.
  void Make(uint32_t entries, uint32_t slots, uint64_t dev_size = kFileSize) {
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sock_), 0);
    session_.sock = sock_[0];
    io_ = std::make_unique<TestIor>(&session_, entries);
    daemon_ = std::make_unique<TestDaemon>(&io_->ior, &trace_);
    slots_ = slots;

    // Page-aligned, as GPU allocations are (direct entries need it).
    dev_alloc_ = fake_.Alloc(dev_size + 4096);
    dev_ = (dev_alloc_ + 4095) & ~uint64_t{4095};
    ops_.set_base(dev_);
    direct::AllocationInfo info;
    std::string message;
    ASSERT_EQ(fake_.Resolve(dev_, &info, &message), 0);
    // What WrapGpuIov builds, minus the daemon's registrations.
    gpu_.ops = &ops_;
    gpu_.dev_base = dev_;
    gpu_.size = dev_size;
    gpu_.buffer_id = info.buffer_id;
    gpu_.reason = FGDS_IOV_GPU_REASON_NO_DMABUF;
    gpu_.chunk_bytes = kChunk;
    staging_ = static_cast<char*>(std::aligned_alloc(4096, slots * kChunk));
    gpu_.staging.base = staging_;
    gpu_.staging.size = slots * kChunk;
    gpu_.staging.id = kStagingId;
    gpu_.staging.memfd = -1;
    gpu_.staging.session = &session_;
    ASSERT_EQ(ops_.CreateStream(&gpu_.stream), 0);
    gpu_.has_stream = true;
    gpu_.slots.resize(slots);
    for (uint32_t i = 0; i < slots; ++i) {
      gpu_.slots[i].staging_offset = i * kChunk;
      ASSERT_EQ(ops_.CreateEvent(&gpu_.slots[i].event), 0);
    }
    for (uint32_t i = slots; i > 0; --i) gpu_.free_slots.push_back(i - 1);
    iov_.base = reinterpret_cast<void*>(dev_);
    iov_.size = dev_size;
    iov_.id = kStagingId;
    iov_.memfd = -1;
    iov_.session = &session_;
    iov_.gpu = &gpu_;
    daemon_->iovs[kStagingId] = {staging_, slots * kChunk};

    host_.resize(kFileSize);
    host_iov_.base = host_.data();
    host_iov_.size = host_.size();
    host_iov_.id = kHostIovId;
    host_iov_.memfd = -1;
    host_iov_.session = &session_;
    daemon_->iovs[kHostIovId] = {host_.data(), host_.size()};
  }

  // Makes the GPU iov DIRECT, as the daemon's answer to its dma-buf would
  // (kDirectId, all of it), with the test daemon reaching the device
  // memory through that id (the fake's device memory is host memory).
  // NIC-only (reply reason FGDS_IOV_GPU_DIRECT_NIC_ONLY): entries may
  // bounce and go through the stager; mapped (reason 0): they never do and
  // go straight to the ring.
  void MakeDirect(bool nic_only) {
    gpu_.direct = true;
    gpu_.nic_only = nic_only;
    gpu_.direct_id = kDirectId;
    gpu_.direct_size = gpu_.size;
    gpu_.reason = FGDS_IOV_GPU_REASON_NONE;
    daemon_->iovs[kDirectId] = {reinterpret_cast<char*>(dev_), gpu_.size};
  }
  void MakeNicOnly() { MakeDirect(true); }
  void MakeMapped() { MakeDirect(false); }
  // A TestDaemon for another ior on the same iovs and file (its own trace
  // where another thread serves it).
  std::unique_ptr<TestDaemon> DaemonFor(fgds_ior* ior, Trace* trace) {
    auto daemon = std::make_unique<TestDaemon>(ior, trace);
    daemon->file = daemon_->file;
    daemon->iovs = daemon_->iovs;
    return daemon;
  }

  // Drops the ior (and its stager) and makes a new one on the same iovs
  // and file.
  void ReplaceIor(uint32_t entries) {
    std::vector<uint8_t> file = daemon_->file;
    io_ = std::make_unique<TestIor>(&session_, entries);
    daemon_ = std::make_unique<TestDaemon>(&io_->ior, &trace_);
    daemon_->file = std::move(file);
    daemon_->iovs[kStagingId] = {staging_, slots_ * kChunk};
    daemon_->iovs[kHostIovId] = {host_.data(), host_.size()};
    done_.clear();
  }

  void TearDown() override {
    io_.reset();
    for (Slot& slot : gpu_.slots) ops_.DestroyEvent(slot.event);
    std::free(staging_);
    for (int fd : sock_) {
      if (fd >= 0) close(fd);
    }
  }

  int PrepGpu(uint32_t op, uint64_t dev_offset, uint64_t file_offset,
              uint64_t len, uint64_t userdata) {
    return fgds_prep_io(&io_->ior, &iov_, op, 0,
                        reinterpret_cast<void*>(dev_ + dev_offset), kFileId,
                        file_offset, len, userdata);
  }
  // Peeks and records each completion in the trace and in done_.
  int Peek() {
    fgds_cqe cqes[16];
    const int n = fgds_ior_peek(&io_->ior, cqes, 16);
    for (int i = 0; i < n; ++i) {
      trace_.push_back("done " + std::to_string(cqes[i].userdata));
      EXPECT_TRUE(done_.emplace(cqes[i].userdata, cqes[i]).second)
          << "second completion for " << cqes[i].userdata;
    }
    return n;
  }
  // Serves and peeks until `count` completions in all were reaped (or
  // nothing moves any more); calls `each_round` before every serve.
  void Drive(size_t count, const std::function<void()>& each_round = {}) {
    for (int round = 0; round < 10000 && done_.size() < count; ++round) {
      if (each_round) each_round();
      const int served = daemon_->Serve();
      if (Peek() == 0 && served == 0 && daemon_->pending() == 0 &&
          done_.size() < count) {
        // Only the stager can move now (copies finishing): peek again.
        continue;
      }
    }
    ASSERT_EQ(done_.size(), count) << "the pipeline stopped";
  }
  // The device bytes [offset, offset + len) equal the file's from
  // file_offset.
  void ExpectDeviceHoldsFile(uint64_t offset, uint64_t file_offset,
                             uint64_t len) {
    const auto* dev = reinterpret_cast<const uint8_t*>(dev_ + offset);
    for (uint64_t i = 0; i < len; ++i) {
      if (dev[i] != daemon_->file[file_offset + i]) {
        ADD_FAILURE() << "device byte " << offset + i << " differs";
        return;
      }
    }
  }
  void FillDevice(uint64_t offset, uint64_t len, uint8_t seed) {
    auto* dev = reinterpret_cast<uint8_t*>(dev_ + offset);
    for (uint64_t i = 0; i < len; ++i) dev[i] = static_cast<uint8_t>(seed + i);
  }
  // Once this ior has reaped everything, `other` may take the iov: its
  // entry (device offset `offset`, `len` bytes) is accepted, then dropped
  // unsubmitted with its stager, which gives the iov back.
  void ExpectFreeForAnotherIor(TestIor& other, uint64_t offset, uint64_t len) {
    EXPECT_EQ(fgds_prep_io(&other.ior, &iov_, FGDS_OP_READ, 0,
                           reinterpret_cast<void*>(dev_ + offset), kFileId, 0,
                           len, 2),
              0);
    delete StagerOf(&other.ior);
    other.ior.gpu = nullptr;
    ExpectIdle();
  }
  // Everything was given back: no request in flight, every slot free, the
  // iov owned by nobody.
  void ExpectIdle() {
    EXPECT_EQ(InFlight(&io_->ior), 0u);
    EXPECT_EQ(gpu_.free_slots.size(), gpu_.slots.size());
    std::lock_guard<std::mutex> lock(gpu_.owner_mu);
    EXPECT_EQ(gpu_.owner, nullptr);
    EXPECT_EQ(gpu_.owner_requests, 0u);
  }

  Trace trace_;
  direct::FakeDeviceOps fake_;
  TracingDeviceOps ops_{&fake_, &trace_};
  int sock_[2] = {-1, -1};
  fgds_session session_ = {};
  std::unique_ptr<TestIor> io_;
  std::unique_ptr<TestDaemon> daemon_;
  uint64_t dev_alloc_ = 0;  // the fake allocation dev_ lies in
  uint64_t dev_ = 0;
  char* staging_ = nullptr;
  uint32_t slots_ = 0;
  GpuIov gpu_;
  fgds_iov iov_ = {};
  std::vector<char> host_;
  fgds_iov host_iov_ = {};
  std::map<uint64_t, fgds_cqe> done_;
};

TEST_F(StagerTest, AReadGoesSqeThenCqeThenDeviceCopyThenDone) {
  Make(8, 2);
  // Each copy's event says "not ready" once: the test sees the copy in
  // flight before it sees the completion.
  fake_.SetPendingQueries(1);
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 0, 8192, kChunk, 1), 0);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 1);
  // Only the SQE: nothing is copied before the daemon filled the slot.
  ASSERT_EQ(daemon_->pending(), 1u);
  const fgds_sqe sqe = daemon_->PendingSqes()[0];
  EXPECT_EQ(sqe.tag, kStagerTag);
  EXPECT_EQ(sqe.iov_id, kStagingId);
  EXPECT_EQ(sqe.file_offset, 8192u);
  EXPECT_EQ(sqe.len, kChunk);
  EXPECT_TRUE(trace_.empty());

  ASSERT_EQ(daemon_->Serve(), 1);
  EXPECT_EQ(Peek(), 0);  // the CQE started the copy; its event is pending
  EXPECT_EQ(Peek(), 1);  // the event is done: so is the entry
  EXPECT_EQ(trace_, (Trace{"read " + Range(8192, kChunk),
                           "h2d " + Range(0, kChunk), "event", "done 1"}));
  EXPECT_EQ(done_[1].result, static_cast<int64_t>(kChunk));
  EXPECT_EQ(done_[1].path, FGDS_PATH_BOUNCE);
  EXPECT_EQ(done_[1].tag, 0u);
  ExpectDeviceHoldsFile(0, 8192, kChunk);
  ExpectIdle();
}

TEST_F(StagerTest, AWriteGoesDeviceCopyThenSqeThenCqeThenDone) {
  Make(8, 2);
  fake_.SetPendingQueries(1);
  FillDevice(0, kChunk, 9);
  ASSERT_EQ(PrepGpu(FGDS_OP_WRITE, 0, 8192, kChunk, 2), 0);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 1);
  // The copy out of the device first; no SQE while it is in flight.
  EXPECT_EQ(trace_, (Trace{"d2h " + Range(0, kChunk)}));
  EXPECT_EQ(daemon_->pending(), 0u);
  EXPECT_EQ(Peek(), 0);  // event not ready yet
  EXPECT_EQ(daemon_->pending(), 0u);
  EXPECT_EQ(Peek(), 0);  // ready: the SQE goes out
  ASSERT_EQ(daemon_->pending(), 1u);
  ASSERT_EQ(daemon_->Serve(), 1);
  EXPECT_EQ(Peek(), 1);
  EXPECT_EQ(trace_, (Trace{"d2h " + Range(0, kChunk), "event",
                           "write " + Range(8192, kChunk), "done 2"}));
  EXPECT_EQ(done_[2].result, static_cast<int64_t>(kChunk));
  ExpectDeviceHoldsFile(0, 8192, kChunk);
  ExpectIdle();
}

TEST_F(StagerTest, ChunksWaitForSlotsAndStagingNeverGrows) {
  Make(8, 2);  // 2 slots of 4 KiB
  // Unaligned: a short head up to the next 4 KiB boundary, whole chunks,
  // a short tail.
  constexpr uint64_t kOffset = 1000;
  constexpr uint64_t kLen = 5 * kChunk;
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 0, kOffset, kLen, 3), 0);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 1);
  // Six chunks, two slots: two go, four wait.
  EXPECT_EQ(daemon_->pending(), 2u);
  uint32_t most = 0;
  Drive(1, [&] {
    most = std::max(most, daemon_->pending());
    for (const fgds_sqe& sqe : daemon_->PendingSqes()) {
      EXPECT_EQ(sqe.iov_id, kStagingId);
      EXPECT_LE(sqe.iov_offset + sqe.len, 2 * kChunk);
      EXPECT_EQ(sqe.iov_offset % kChunk, 0u);
    }
  });
  EXPECT_EQ(most, 2u);
  // Every byte once, in chunks cut on 4 KiB file boundaries.
  const std::vector<uint64_t> lens = {kChunk - kOffset, kChunk, kChunk,
                                      kChunk,           kChunk, kOffset};
  ASSERT_EQ(daemon_->served.size(), lens.size());
  uint64_t next = kOffset;
  for (size_t i = 0; i < lens.size(); ++i) {
    EXPECT_EQ(daemon_->served[i].file_offset, next) << i;
    EXPECT_EQ(daemon_->served[i].len, lens[i]) << i;
    next += daemon_->served[i].len;
  }
  EXPECT_EQ(done_[3].result, static_cast<int64_t>(kLen));
  ExpectDeviceHoldsFile(0, kOffset, kLen);
  EXPECT_EQ(gpu_.slots.size(), 2u);
  ExpectIdle();
}

TEST_F(StagerTest, LaterRequestsWaitForSlotsBehindEarlierOnes) {
  Make(8, 2);
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 0, 0, 2 * kChunk, 1), 0);
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 4 * kChunk, 4 * kChunk, 2 * kChunk, 2), 0);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 2);
  // The first request holds both slots; the second waits its turn.
  std::vector<fgds_sqe> first = daemon_->PendingSqes();
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].file_offset, 0u);
  EXPECT_EQ(first[1].file_offset, kChunk);
  Drive(2);
  EXPECT_EQ(done_[1].result, static_cast<int64_t>(2 * kChunk));
  EXPECT_EQ(done_[2].result, static_cast<int64_t>(2 * kChunk));
  ExpectDeviceHoldsFile(0, 0, 2 * kChunk);
  ExpectDeviceHoldsFile(4 * kChunk, 4 * kChunk, 2 * kChunk);
  ExpectIdle();
}

TEST_F(StagerTest, ASmallRingIsNeverOverrunByHostAndGpuEntries) {
  Make(2, 8);  // SQ 2, CQ 4, eight staging slots
  ASSERT_EQ(fgds_prep_io(&io_->ior, &host_iov_, FGDS_OP_READ, 0, host_.data(),
                         kFileId, 0, 100, 10),
            0);
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 0, 0, 16 * kChunk, 1), 0);
  ASSERT_EQ(PrepGpu(FGDS_OP_WRITE, 32 * 1024, 48 * 1024, 4 * kChunk, 2), 0);
  FillDevice(32 * 1024, 4 * kChunk, 3);
  std::vector<uint8_t> written(4 * kChunk);
  memcpy(written.data(), reinterpret_cast<void*>(dev_ + 32 * 1024),
         written.size());
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 3);
  // TestDaemon::Serve fails the test on any CQ overflow.
  Drive(3, [&] { EXPECT_LE(daemon_->pending(), 2u); });
  EXPECT_EQ(done_[10].result, 100);
  EXPECT_EQ(done_[10].path, FGDS_PATH_PAGE_CACHE);  // a host entry's own
  EXPECT_EQ(done_[1].result, static_cast<int64_t>(16 * kChunk));
  EXPECT_EQ(done_[2].result, static_cast<int64_t>(4 * kChunk));
  ExpectDeviceHoldsFile(0, 0, 16 * kChunk);
  EXPECT_EQ(0, memcmp(written.data(), daemon_->file.data() + 48 * 1024,
                      written.size()));
  EXPECT_EQ(0, memcmp(host_.data(), daemon_->file.data(), 100));
  ExpectIdle();
}

// A request of four chunks (A) fails somewhere; a healthy one (B) shares
// the ior and the staging with it. A completes once, with the result
// pread/pwrite would give; B is unaffected.
struct FailureCase {
  const char* name;
  uint32_t op;
  int64_t want;
  // Sets up the failure (daemon results, device copy failures, file size).
  std::function<void(TestDaemon*, direct::FakeDeviceOps*)> inject;
};

class StagerFailureTest : public StagerTest,
                          public ::testing::WithParamInterface<FailureCase> {};

constexpr uint64_t kAOffset = 16 * 1024;  // A's file offset

TEST_P(StagerFailureTest, OneCompletionAndThePipelineGoesOn) {
  const FailureCase& c = GetParam();
  Make(8, 2);
  c.inject(daemon_.get(), &fake_);
  FillDevice(0, 4 * kChunk, 1);
  ASSERT_EQ(PrepGpu(c.op, 0, kAOffset, 4 * kChunk, 1), 0);
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 8 * kChunk, 0, 2 * kChunk, 2), 0);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 2);
  Drive(2);
  EXPECT_EQ(done_[1].result, c.want);
  EXPECT_EQ(done_[1].path, FGDS_PATH_BOUNCE);
  EXPECT_EQ(done_[2].result, static_cast<int64_t>(2 * kChunk));
  ExpectDeviceHoldsFile(8 * kChunk, 0, 2 * kChunk);
  // Nothing more comes, and nothing is held.
  for (int i = 0; i < 3; ++i) {
    daemon_->Serve();
    EXPECT_EQ(Peek(), 0);
  }
  ExpectIdle();
  // A later request on the same ior and iov still works.
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 0, 0, 3 * kChunk, 3), 0);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 1);
  Drive(3);
  EXPECT_EQ(done_[3].result, static_cast<int64_t>(3 * kChunk));
  ExpectDeviceHoldsFile(0, 0, 3 * kChunk);
  ExpectIdle();
}

INSTANTIATE_TEST_SUITE_P(
    Failures, StagerFailureTest,
    ::testing::Values(FailureCase{"ReadFirstChunkEio", FGDS_OP_READ, -EIO,
                                  [](TestDaemon* d, direct::FakeDeviceOps*) {
                                    d->results[kAOffset] = -EIO;
                                  }},
                      FailureCase{"ReadThirdChunkEio", FGDS_OP_READ, 2 * kChunk,
                                  [](TestDaemon* d, direct::FakeDeviceOps*) {
                                    d->results[kAOffset + 2 * kChunk] = -EIO;
                                  }},
                      FailureCase{"ReadShortAtEof", FGDS_OP_READ, kChunk + 100,
                                  [](TestDaemon* d, direct::FakeDeviceOps*) {
                                    d->file.resize(kAOffset + kChunk + 100);
                                  }},
                      FailureCase{"ReadShortChunkInTheMiddle", FGDS_OP_READ,
                                  kChunk + 100,
                                  [](TestDaemon* d, direct::FakeDeviceOps*) {
                                    d->results[kAOffset + kChunk] = 100;
                                  }},
                      FailureCase{"ReadDeviceCopyFails", FGDS_OP_READ, -EIO,
                                  [](TestDaemon*, direct::FakeDeviceOps* ops) {
                                    ops->FailCopies(1, -EIO);
                                  }},
                      FailureCase{"WriteDeviceCopyFails", FGDS_OP_WRITE, -EIO,
                                  [](TestDaemon*, direct::FakeDeviceOps* ops) {
                                    ops->FailCopies(1, -EIO);
                                  }},
                      FailureCase{"WriteSecondChunkEnospc", FGDS_OP_WRITE,
                                  kChunk,
                                  [](TestDaemon* d, direct::FakeDeviceOps*) {
                                    d->results[kAOffset + kChunk] = -ENOSPC;
                                  }}),
    [](const ::testing::TestParamInfo<FailureCase>& param) {
      return std::string(param.param.name);
    });

TEST_F(StagerTest, AFailedDeviceCopyOfAWriteSendsNothingToTheFile) {
  Make(8, 2);
  fake_.FailCopies(1, -EIO);
  ASSERT_EQ(PrepGpu(FGDS_OP_WRITE, 0, kAOffset, kChunk, 1), 0);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 1);
  Drive(1);
  EXPECT_EQ(done_[1].result, -EIO);
  EXPECT_TRUE(daemon_->served.empty());
  ExpectIdle();
}

TEST_F(StagerTest, AFreedBufferFailsItsEntryWithEfault) {
  Make(8, 2);
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 0, 0, 2 * kChunk, 1), 0);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 1);
  fake_.Free(dev_alloc_);  // the application freed it under the I/O
  Drive(1);
  EXPECT_EQ(done_[1].result, -EFAULT);
  // Nothing was copied into memory that is no longer the buffer.
  for (const std::string& event : trace_) {
    EXPECT_EQ(event.rfind("h2d", 0), std::string::npos) << event;
  }
  ExpectIdle();
}

TEST_F(StagerTest, WaitBlocksOnTheOldestCopyInsteadOfSpinning) {
  Make(8, 2);
  // Events never become ready by polling: only WaitEvent finishes them.
  fake_.SetPendingQueries(1 << 30);
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 0, 0, kChunk, 1), 0);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 1);
  ASSERT_EQ(daemon_->Serve(), 1);
  fgds_cqe cqe = {};
  ASSERT_EQ(fgds_ior_wait(&io_->ior, &cqe, 1, 1, -1), 1);
  EXPECT_EQ(cqe.userdata, 1u);
  EXPECT_EQ(cqe.result, static_cast<int64_t>(kChunk));
  ExpectDeviceHoldsFile(0, 0, kChunk);
  ExpectIdle();
}

TEST_F(StagerTest, AnotherIorCannotUseTheIovWhileThisOneHasEntriesOnIt) {
  Make(8, 2);
  TestIor other(&session_, 8);
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 0, 0, kChunk, 1), 0);
  EXPECT_EQ(fgds_prep_io(&other.ior, &iov_, FGDS_OP_READ, 0,
                         reinterpret_cast<void*>(dev_), kFileId, 0, kChunk, 2),
            -EBUSY);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 1);
  Drive(1);
  ExpectIdle();
  // Reaped: free for the other ior.
  ExpectFreeForAnotherIor(other, 0, kChunk);
}

TEST_F(StagerTest, DroppingAnIorWithAnUnreapedCompletionFreesItsIov) {
  // fgds_ior_destroy wants every completion reaped first; an application
  // that gives up on an ior anyway must not leave its GPU iov owned.
  Make(8, 2);
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 0, 0, kChunk, 1), 0);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 1);
  ASSERT_EQ(daemon_->Serve(), 1);
  // Moves the request to finished (copy done) without reaping it.
  ASSERT_EQ(fgds_ior_peek(&io_->ior, nullptr, 0), 0);
  ASSERT_EQ(fgds_ior_peek(&io_->ior, nullptr, 0), 0);
  ReplaceIor(8);
  {
    std::lock_guard<std::mutex> lock(gpu_.owner_mu);
    EXPECT_EQ(gpu_.owner, nullptr);
    EXPECT_EQ(gpu_.owner_requests, 0u);
  }
  // Two iors in turn, each reaping everything: neither may get -EBUSY.
  for (uint64_t userdata : {2, 3}) {
    ASSERT_EQ(PrepGpu(FGDS_OP_READ, 0, 0, kChunk, userdata), 0);
    ASSERT_EQ(fgds_ior_submit(&io_->ior), 1);
    Drive(1);
    EXPECT_EQ(done_[userdata].result, static_cast<int64_t>(kChunk));
    ExpectIdle();
    ReplaceIor(8);
  }
}

}  // namespace
}  // namespace fgds::usrbio::gpu

namespace fgds::usrbio::gpu {
namespace {

// A NIC-only DIRECT iov's aligned entry goes to the daemon whole, on its
// own id, through the stager (tagged, so that a "bounce" answer can be
// caught), and completes with the daemon's path.
TEST_F(StagerTest, ADirectEntryGoesWholeOnTheDirectIdWithTheDaemonsPath) {
  Make(8, 2);
  MakeNicOnly();
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 4096, 8192, 3 * kChunk, 1), 0);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 1);
  ASSERT_EQ(daemon_->pending(), 1u);
  const fgds_sqe sqe = daemon_->PendingSqes()[0];
  EXPECT_EQ(sqe.tag, kDirectTag);
  EXPECT_EQ(sqe.iov_id, kDirectId);
  EXPECT_EQ(sqe.iov_offset, 4096u);
  EXPECT_EQ(sqe.len, 3 * kChunk);
  Drive(1);
  EXPECT_EQ(done_[1].result, static_cast<int64_t>(3 * kChunk));
  EXPECT_EQ(done_[1].path, FGDS_PATH_DIRECT);
  EXPECT_EQ(done_[1].tag, 0u);
  ExpectDeviceHoldsFile(4096, 8192, 3 * kChunk);
  // No staging, no copy.
  EXPECT_EQ(trace_, (Trace{"read " + Range(8192, 3 * kChunk), "done 1"}));
  ExpectIdle();
}

// The daemon answers "bounce this entry" (a remote backend whose agents
// could not move it): the library runs the same entry through the staging,
// and the caller sees one completion, BOUNCE, with all the bytes; the iov
// stays direct for the next entry (the answer was not "for good").
TEST_F(StagerTest, ABounceAnswerReissuesTheEntryThroughTheStaging) {
  Make(8, 2);
  MakeNicOnly();
  daemon_->direct_answer = FGDS_PATH_BOUNCE_ENTRY;
  FillDevice(0, 4 * kChunk, 9);
  std::vector<uint8_t> written(reinterpret_cast<uint8_t*>(dev_),
                               reinterpret_cast<uint8_t*>(dev_) + 2 * kChunk);
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 4 * kChunk, 0, 3 * kChunk, 1), 0);
  ASSERT_EQ(PrepGpu(FGDS_OP_WRITE, 0, 12 * kChunk, 2 * kChunk, 2), 0);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 2);
  Drive(2);
  ASSERT_EQ(done_.size(), 2u);
  EXPECT_EQ(done_[1].result, static_cast<int64_t>(3 * kChunk));
  EXPECT_EQ(done_[1].path, FGDS_PATH_BOUNCE);
  EXPECT_EQ(done_[2].result, static_cast<int64_t>(2 * kChunk));
  EXPECT_EQ(done_[2].path, FGDS_PATH_BOUNCE);
  ExpectDeviceHoldsFile(4 * kChunk, 0, 3 * kChunk);
  EXPECT_EQ(0, memcmp(daemon_->file.data() + 12 * kChunk, written.data(),
                      written.size()));
  // Each went to the direct id once, then through the staging.
  int direct = 0, staged = 0;
  for (const fgds_sqe& sqe : daemon_->served) {
    (sqe.tag == kDirectTag ? direct : staged) += 1;
  }
  EXPECT_EQ(direct, 2);
  EXPECT_EQ(staged, 5);
  EXPECT_EQ(StagerOf(&io_->ior)->bounce_retries(), 2u);
  EXPECT_FALSE(gpu_.direct_failed.load());
  ExpectIdle();

  // Still direct: the daemon serves the next one itself.
  daemon_->direct_answer = 0;
  daemon_->served.clear();
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 0, 4096, kChunk, 3), 0);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 1);
  Drive(3);
  EXPECT_EQ(done_[3].path, FGDS_PATH_DIRECT);
  ASSERT_EQ(daemon_->served.size(), 1u);
  EXPECT_EQ(daemon_->served[0].tag, kDirectTag);
  ExpectIdle();
}

// "For good" (FGDS_PATH_BOUNCE_ALWAYS: the NIC refused the dma-buf): the
// entry bounces, and every later entry of the iov goes to the staging at
// once, never to the direct id again.
TEST_F(StagerTest, ABounceAlwaysAnswerSendsEveryLaterEntryToTheStaging) {
  Make(8, 2);
  MakeNicOnly();
  daemon_->direct_answer = FGDS_PATH_BOUNCE_ALWAYS;
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 0, 0, 2 * kChunk, 1), 0);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 1);
  Drive(1);
  EXPECT_EQ(done_[1].result, static_cast<int64_t>(2 * kChunk));
  EXPECT_EQ(done_[1].path, FGDS_PATH_BOUNCE);
  ExpectDeviceHoldsFile(0, 0, 2 * kChunk);
  EXPECT_TRUE(gpu_.direct_failed.load());
  uint32_t reason = 0;
  EXPECT_EQ(GpuPath(&iov_, &reason), static_cast<int>(FGDS_PATH_BOUNCE));
  EXPECT_EQ(reason, FGDS_IOV_GPU_REASON_MAP_FAILED);

  daemon_->served.clear();
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 0, 8192, 2 * kChunk, 2), 0);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 1);
  Drive(2);
  EXPECT_EQ(done_[2].result, static_cast<int64_t>(2 * kChunk));
  EXPECT_EQ(done_[2].path, FGDS_PATH_BOUNCE);
  for (const fgds_sqe& sqe : daemon_->served) EXPECT_EQ(sqe.tag, kStagerTag);
  EXPECT_EQ(daemon_->served.size(), 2u);
  EXPECT_EQ(StagerOf(&io_->ior)->bounce_retries(), 1u);
  ExpectIdle();

  // Entries prepared direct before that answer came skip the try too.
  gpu_.direct_failed.store(false);
  daemon_->served.clear();
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 0, 0, kChunk, 3), 0);
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, kChunk, 4096, kChunk, 4), 0);
  gpu_.direct_failed.store(true);  // as if answered in between
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 2);
  Drive(4);
  for (const fgds_sqe& sqe : daemon_->served) EXPECT_EQ(sqe.tag, kStagerTag);
  EXPECT_EQ(done_[3].path, FGDS_PATH_BOUNCE);
  EXPECT_EQ(done_[4].path, FGDS_PATH_BOUNCE);
  ExpectDeviceHoldsFile(0, 0, 2 * kChunk);
  ExpectIdle();
}

// Only the pair (FGDS_RESULT_BOUNCE with a bounce path) asks for a
// bounce: -EREMOTEIO from the storage on the direct path is the entry's
// error, reported once and not retried.
TEST_F(StagerTest, ARealEremoteioOnTheDirectPathIsTheEntrysError) {
  Make(8, 2);
  MakeNicOnly();
  daemon_->results[8192] = -EREMOTEIO;
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 0, 8192, kChunk, 1), 0);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 1);
  Drive(1);
  EXPECT_EQ(done_[1].result, -EREMOTEIO);
  EXPECT_EQ(done_[1].path, FGDS_PATH_DIRECT);
  EXPECT_EQ(daemon_->served.size(), 1u);
  EXPECT_EQ(StagerOf(&io_->ior)->bounce_retries(), 0u);
  ExpectIdle();
}

// The daemon goes after answering "bounce this entry" and before serving
// the staged retry: the wait says so (-ENOTCONN) and reports nothing for
// the entry, neither the library's own direct answer nor a made-up result;
// the daemon's one answer per SQE is all that ever arrives.
TEST_F(StagerTest, ADaemonGoneMidRetryCompletesNothingTwice) {
  Make(8, 2);
  MakeNicOnly();
  daemon_->direct_answer = FGDS_PATH_BOUNCE_ENTRY;
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 0, 0, 2 * kChunk, 1), 0);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 1);
  ASSERT_EQ(daemon_->Serve(), 1);  // the direct try, answered "bounce"
  EXPECT_EQ(Peek(), 0);            // re-issued on the staging, not reported
  EXPECT_EQ(daemon_->pending(), 2u);
  close(sock_[1]);  // the daemon is gone
  sock_[1] = -1;
  fgds_cqe cqe;
  EXPECT_EQ(fgds_ior_wait(&io_->ior, &cqe, 1, 1, 5000000), -ENOTCONN);
  EXPECT_TRUE(done_.empty());
  EXPECT_EQ(InFlight(&io_->ior), 1u);  // still the application's entry
  // (REQUIRES of fgds_ior_destroy: nothing in flight. The staged chunks are
  // answered here so the fixture can tear down; nothing new is reported.)
  ASSERT_EQ(daemon_->Serve(), 2);
  Drive(1);
  EXPECT_EQ(done_[1].result, static_cast<int64_t>(2 * kChunk));
  EXPECT_EQ(done_[1].path, FGDS_PATH_BOUNCE);
  ExpectIdle();
}

// A mapped DIRECT iov (the daemon mapped it with the fgds module: reply
// reason 0): its aligned entry is an ordinary one on the ring, on the
// daemon's id, untagged; no stager is made, nobody owns the iov, and it
// completes with the daemon's path and bytes.
TEST_F(StagerTest, AMappedEntryGoesToTheRingWithoutTheStager) {
  Make(8, 2);
  MakeMapped();
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 4096, 8192, 3 * kChunk, 1), 0);
  EXPECT_EQ(StagerOf(&io_->ior), nullptr);
  {
    std::lock_guard<std::mutex> lock(gpu_.owner_mu);
    EXPECT_EQ(gpu_.owner, nullptr);  // no ownership for such an entry
  }
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 1);
  ASSERT_EQ(daemon_->pending(), 1u);
  const fgds_sqe sqe = daemon_->PendingSqes()[0];
  EXPECT_EQ(sqe.tag, 0u);
  EXPECT_EQ(sqe.iov_id, kDirectId);
  EXPECT_EQ(sqe.iov_offset, 4096u);
  EXPECT_EQ(sqe.len, 3 * kChunk);
  EXPECT_EQ(sqe.userdata, 1u);  // the application's, not a Request
  Drive(1);
  EXPECT_EQ(done_[1].result, static_cast<int64_t>(3 * kChunk));
  EXPECT_EQ(done_[1].path, FGDS_PATH_DIRECT);
  ExpectDeviceHoldsFile(4096, 8192, 3 * kChunk);
  EXPECT_EQ(trace_, (Trace{"read " + Range(8192, 3 * kChunk), "done 1"}));
  EXPECT_EQ(StagerOf(&io_->ior), nullptr);
  ExpectIdle();

  // Not aligned: the staging, as on any iov (that makes the stager).
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 100, 100, kChunk, 2), 0);
  ASSERT_NE(StagerOf(&io_->ior), nullptr);
  // With a stager, aligned entries still skip it: untagged on kDirectId.
  FillDevice(8 * kChunk, 2 * kChunk, 5);
  const std::vector<uint8_t> written(
      reinterpret_cast<uint8_t*>(dev_ + 8 * kChunk),
      reinterpret_cast<uint8_t*>(dev_ + 10 * kChunk));
  ASSERT_EQ(PrepGpu(FGDS_OP_WRITE, 8 * kChunk, 12 * kChunk, 2 * kChunk, 3), 0);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 2);
  int staged = 0, mapped = 0;
  for (const fgds_sqe& pending : daemon_->PendingSqes()) {
    if (pending.iov_id == kDirectId) {
      ++mapped;
      EXPECT_EQ(pending.tag, 0u);
      EXPECT_EQ(pending.userdata, 3u);
    } else {
      ++staged;
      EXPECT_EQ(pending.tag, kStagerTag);
    }
  }
  EXPECT_EQ(mapped, 1);
  EXPECT_EQ(staged, 2);  // cut at the file's 4096 boundary: head and tail
  Drive(3);
  EXPECT_EQ(done_[2].result, static_cast<int64_t>(kChunk));
  EXPECT_EQ(done_[2].path, FGDS_PATH_BOUNCE);
  EXPECT_EQ(done_[3].result, static_cast<int64_t>(2 * kChunk));
  EXPECT_EQ(done_[3].path, FGDS_PATH_DIRECT);
  ExpectDeviceHoldsFile(100, 100, kChunk);
  EXPECT_EQ(0, memcmp(daemon_->file.data() + 12 * kChunk, written.data(),
                      written.size()));
  EXPECT_EQ(StagerOf(&io_->ior)->bounce_retries(), 0u);
  ExpectIdle();
}

// Two iors use one mapped iov at once: both accepted (before 4cbdab8's
// stager path, and again now), both complete DIRECT with their bytes.
// Only entries that need the staging still hold the iov for one ior.
TEST_F(StagerTest, TwoIorsUseAMappedIovAtOnce) {
  Make(8, 2);
  MakeMapped();
  TestIor other(&session_, 8);
  std::unique_ptr<TestDaemon> other_daemon = DaemonFor(&other.ior, &trace_);
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 0, 0, 2 * kChunk, 1), 0);
  ASSERT_EQ(fgds_prep_io(&other.ior, &iov_, FGDS_OP_READ, 0,
                         reinterpret_cast<void*>(dev_ + 4 * kChunk), kFileId,
                         8 * kChunk, 2 * kChunk, 2),
            0);
  // Both in flight at once, on both rings.
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 1);
  ASSERT_EQ(fgds_ior_submit(&other.ior), 1);
  ASSERT_EQ(daemon_->Serve(), 1);
  ASSERT_EQ(other_daemon->Serve(), 1);
  fgds_cqe cqe = {};
  ASSERT_EQ(fgds_ior_peek(&other.ior, &cqe, 1), 1);
  EXPECT_EQ(cqe.userdata, 2u);
  EXPECT_EQ(cqe.result, static_cast<int64_t>(2 * kChunk));
  EXPECT_EQ(cqe.path, FGDS_PATH_DIRECT);
  Drive(1);
  EXPECT_EQ(done_[1].result, static_cast<int64_t>(2 * kChunk));
  EXPECT_EQ(done_[1].path, FGDS_PATH_DIRECT);
  ExpectDeviceHoldsFile(0, 0, 2 * kChunk);
  ExpectDeviceHoldsFile(4 * kChunk, 8 * kChunk, 2 * kChunk);
  EXPECT_EQ(StagerOf(&other.ior), nullptr);

  // This ior stages an unaligned entry (it owns the staging now): the
  // other may still send aligned entries, but not staged ones.
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 100, 100, kChunk, 3), 0);
  ASSERT_EQ(fgds_prep_io(&other.ior, &iov_, FGDS_OP_READ, 0,
                         reinterpret_cast<void*>(dev_ + 8 * kChunk), kFileId,
                         4 * kChunk, kChunk, 4),
            0);
  EXPECT_EQ(fgds_prep_io(&other.ior, &iov_, FGDS_OP_READ, 0,
                         reinterpret_cast<void*>(dev_ + 200), kFileId, 200,
                         kChunk, 5),
            -EBUSY);
  ASSERT_EQ(fgds_ior_submit(&other.ior), 1);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 1);
  ASSERT_EQ(other_daemon->Serve(), 1);
  ASSERT_EQ(fgds_ior_wait(&other.ior, &cqe, 1, 1, 5000000), 1);
  EXPECT_EQ(cqe.userdata, 4u);
  EXPECT_EQ(cqe.path, FGDS_PATH_DIRECT);
  Drive(2);
  EXPECT_EQ(done_[3].path, FGDS_PATH_BOUNCE);
  ExpectDeviceHoldsFile(100, 100, kChunk);
  ExpectDeviceHoldsFile(8 * kChunk, 4 * kChunk, kChunk);
  ExpectIdle();
  EXPECT_EQ(InFlight(&other.ior), 0u);
}

// Two threads, each with its own ior, keep entries in flight on one mapped
// iov at once, many times over (the TSan stage runs this): the iov is
// shared read-only, nothing is owned, every entry completes DIRECT with
// its bytes.
TEST_F(StagerTest, TwoThreadsKeepEntriesOnOneMappedIov) {
  Make(8, 2);
  MakeMapped();
  constexpr int kRounds = 200;
  auto run = [this](fgds_ior* ior, TestDaemon* daemon, uint64_t dev_offset,
                    uint64_t file_offset, std::string* error) {
    for (int round = 0; round < kRounds && error->empty(); ++round) {
      for (uint64_t i = 0; i < 4; ++i) {
        const int ret = fgds_prep_io(
            ior, &iov_, FGDS_OP_READ, 0,
            reinterpret_cast<void*>(dev_ + dev_offset + i * kChunk), kFileId,
            file_offset + i * kChunk, kChunk, i);
        if (ret != 0) *error = "prep: " + std::to_string(ret);
      }
      if (!error->empty() || fgds_ior_submit(ior) != 4) {
        *error = "submit";
        break;
      }
      daemon->Serve();
      fgds_cqe cqes[4];
      if (fgds_ior_peek(ior, cqes, 4) != 4) *error = "peek";
      for (int i = 0; i < 4 && error->empty(); ++i) {
        if (cqes[i].result != static_cast<int64_t>(kChunk) ||
            cqes[i].path != FGDS_PATH_DIRECT) {
          *error = "completion " + std::to_string(cqes[i].result);
        }
      }
    }
    if (error->empty() && StagerOf(ior) != nullptr) *error = "a stager";
  };
  TestIor other(&session_, 8);
  Trace other_trace;
  std::unique_ptr<TestDaemon> other_daemon =
      DaemonFor(&other.ior, &other_trace);
  std::string mine, theirs;
  std::thread thread(run, &other.ior, other_daemon.get(), 8 * kChunk,
                     4 * kChunk, &theirs);
  run(&io_->ior, daemon_.get(), 0, 0, &mine);
  thread.join();
  EXPECT_EQ(mine, "");
  EXPECT_EQ(theirs, "");
  ExpectDeviceHoldsFile(0, 0, 4 * kChunk);
  ExpectDeviceHoldsFile(8 * kChunk, 4 * kChunk, 4 * kChunk);
  ExpectIdle();
  EXPECT_EQ(InFlight(&other.ior), 0u);
}

// A NIC-only iov keeps the stager's rule: its aligned entries hold the iov
// for one ior (a "bounce this entry" answer needs the staging), so another
// ior gets -EBUSY until they are reaped.
TEST_F(StagerTest, ANicOnlyIovServesOneIorAtATime) {
  Make(8, 2);
  MakeNicOnly();
  TestIor other(&session_, 8);
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 0, 0, 2 * kChunk, 1), 0);
  ASSERT_NE(StagerOf(&io_->ior), nullptr);
  EXPECT_EQ(fgds_prep_io(&other.ior, &iov_, FGDS_OP_READ, 0,
                         reinterpret_cast<void*>(dev_ + 4 * kChunk), kFileId, 0,
                         2 * kChunk, 2),
            -EBUSY);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 1);
  ASSERT_EQ(daemon_->PendingSqes()[0].tag, kDirectTag);
  Drive(1);
  EXPECT_EQ(done_[1].path, FGDS_PATH_DIRECT);
  ExpectIdle();
  // Reaped: free for the other ior.
  ExpectFreeForAnotherIor(other, 4 * kChunk, 2 * kChunk);
}

// A daemon that said "mapped" and then answers an entry "bounce this
// entry" is broken or lying: the caller gets the entry's error
// (-EREMOTEIO, the path as given) once, nothing is retried, and the iov
// stays as it was. Also with a positive result beside the bounce path (no
// bytes are believed), and with a stager on the ior (its peek).
TEST_F(StagerTest, AMappedIovsBounceAnswerIsAnErrorNotARetry) {
  Make(8, 2);
  MakeMapped();
  daemon_->direct_answer = FGDS_PATH_BOUNCE_ENTRY;
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 0, 0, 2 * kChunk, 1), 0);
  ASSERT_EQ(PrepGpu(FGDS_OP_WRITE, 4 * kChunk, 8 * kChunk, kChunk, 2), 0);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 2);
  Drive(2);
  EXPECT_EQ(done_[1].result, -EREMOTEIO);
  EXPECT_EQ(done_[1].path, FGDS_PATH_BOUNCE_ENTRY);
  EXPECT_EQ(done_[2].result, -EREMOTEIO);
  EXPECT_EQ(done_[2].path, FGDS_PATH_BOUNCE_ENTRY);
  EXPECT_EQ(daemon_->served.size(), 2u);  // no second try
  EXPECT_EQ(daemon_->pending(), 0u);
  EXPECT_EQ(StagerOf(&io_->ior), nullptr);
  ExpectIdle();

  // "For good", with bytes claimed: still an error; the iov stays DIRECT.
  daemon_->direct_answer = FGDS_PATH_BOUNCE_ALWAYS;
  daemon_->direct_answer_result = static_cast<int64_t>(kChunk);
  daemon_->served.clear();
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 0, 0, kChunk, 3), 0);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 1);
  Drive(3);
  EXPECT_EQ(done_[3].result, -EREMOTEIO);
  EXPECT_EQ(done_[3].path, FGDS_PATH_BOUNCE_ALWAYS);
  EXPECT_EQ(daemon_->served.size(), 1u);
  EXPECT_FALSE(gpu_.direct_failed.load());
  EXPECT_EQ(GpuPath(&iov_, nullptr), static_cast<int>(FGDS_PATH_DIRECT));
  ExpectIdle();

  // The same through a stager's peek (the ior also stages an entry).
  daemon_->direct_answer = FGDS_PATH_BOUNCE_ENTRY;
  daemon_->direct_answer_result = FGDS_RESULT_BOUNCE;
  daemon_->served.clear();
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 100, 100, kChunk, 4), 0);
  ASSERT_EQ(PrepGpu(FGDS_OP_READ, 8 * kChunk, 0, kChunk, 5), 0);
  ASSERT_NE(StagerOf(&io_->ior), nullptr);
  ASSERT_EQ(fgds_ior_submit(&io_->ior), 2);
  Drive(5);
  EXPECT_EQ(done_[4].result, static_cast<int64_t>(kChunk));
  EXPECT_EQ(done_[4].path, FGDS_PATH_BOUNCE);
  EXPECT_EQ(done_[5].result, -EREMOTEIO);
  EXPECT_EQ(done_[5].path, FGDS_PATH_BOUNCE_ENTRY);
  int direct = 0;
  for (const fgds_sqe& sqe : daemon_->served) {
    direct += sqe.iov_id == kDirectId ? 1 : 0;
  }
  EXPECT_EQ(direct, 1);
  EXPECT_EQ(StagerOf(&io_->ior)->bounce_retries(), 0u);
  ExpectIdle();
}

}  // namespace
}  // namespace fgds::usrbio::gpu
