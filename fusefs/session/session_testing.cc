#include "fusefs/session/session_testing.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace fgds::session::testing {

bool WaitUntil(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + kGuard;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    // Polling a condition the other thread will make true; yielding lets
    // it run on a loaded 2-core machine.
    sched_yield();
  }
  return true;
}

// ---- FakeBackend ----

FakeBackend::~FakeBackend() {
  fgds::MutexLock lock(&mu_);
  // A test that forgot a held worker would hang it forever.
  EXPECT_EQ(blocked_, 0) << "a SubmitIo call is still held";
}

void FakeBackend::HoldSubmits(bool hold) {
  fgds::MutexLock lock(&mu_);
  hold_ = hold;
  changed_.SignalAll();
}

bool FakeBackend::WaitForBlockedSubmit(int at_least) {
  fgds::MutexLock lock(&mu_);
  const auto deadline = std::chrono::steady_clock::now() + kGuard;
  while (blocked_ < at_least) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    changed_.WaitWithTimeout(&mu_, absl::Milliseconds(100));
  }
  return true;
}

void FakeBackend::ReleaseSubmit() {
  fgds::MutexLock lock(&mu_);
  ++releases_given_;
  changed_.SignalAll();
  // Wait for the calls held now to leave, so that a WaitForBlockedSubmit
  // right after this sees the next call, not one of these.
  const uint64_t target = held_left_ + static_cast<uint64_t>(blocked_);
  const auto deadline = std::chrono::steady_clock::now() + kGuard;
  while (held_left_ < target && std::chrono::steady_clock::now() < deadline) {
    changed_.WaitWithTimeout(&mu_, absl::Milliseconds(100));
  }
}

void FakeBackend::CompleteInline(int64_t result, backend::IoPath path) {
  fgds::MutexLock lock(&mu_);
  inline_ = true;
  inline_result_ = result;
  inline_path_ = path;
}

bool FakeBackend::WaitForRequests(size_t count) {
  fgds::MutexLock lock(&mu_);
  const auto deadline = std::chrono::steady_clock::now() + kGuard;
  while (requests_.size() < count) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    changed_.WaitWithTimeout(&mu_, absl::Milliseconds(100));
  }
  return true;
}

std::vector<backend::FileIoRequest> FakeBackend::requests() {
  fgds::MutexLock lock(&mu_);
  return requests_;
}

std::vector<size_t> FakeBackend::batch_sizes() {
  fgds::MutexLock lock(&mu_);
  return batch_sizes_;
}

void FakeBackend::SubmitIo(std::span<const backend::FileIoRequest> batch) {
  bool complete_inline = false;
  int64_t result = 0;
  backend::IoPath path = backend::IoPath::kNone;
  size_t first = 0;
  {
    fgds::MutexLock lock(&mu_);
    first = requests_.size();
    for (const backend::FileIoRequest& request : batch) {
      requests_.push_back(request);
      completed_.push_back(false);
    }
    batch_sizes_.push_back(batch.size());
    complete_inline = inline_;
    result = inline_result_;
    path = inline_path_;
    if (complete_inline) {
      for (size_t i = first; i < requests_.size(); ++i) completed_[i] = true;
    }
    changed_.SignalAll();
    if (hold_) {
      // Held until the next ReleaseSubmit (or the hold ends).
      const uint64_t seen = releases_given_;
      ++blocked_;
      changed_.SignalAll();
      while (hold_ && releases_given_ == seen) changed_.Wait(&mu_);
      --blocked_;
      ++held_left_;
      changed_.SignalAll();
    }
  }
  if (complete_inline) {
    for (const backend::FileIoRequest& request : batch) {
      request.completion->set_path(path);
      request.completion->Complete(result);
    }
  }
}

void FakeBackend::Complete(const std::vector<Done>& dones) {
  std::vector<std::pair<backend::FileIoCompletion*, Done>> todo;
  {
    fgds::MutexLock lock(&mu_);
    for (const Done& done : dones) {
      if (done.index >= requests_.size()) {
        ADD_FAILURE() << "no request " << done.index;
        continue;
      }
      if (completed_[done.index]) {
        ADD_FAILURE() << "request " << done.index << " completed twice";
        continue;
      }
      completed_[done.index] = true;
      todo.emplace_back(requests_[done.index].completion, done);
    }
  }
  // As an engine thread would: not the test's thread, not the worker's.
  std::thread engine([&todo] {
    for (auto& [completion, done] : todo) {
      completion->set_path(done.path);
      completion->Complete(done.result);
    }
  });
  engine.join();
}

void FakeBackend::CompleteRest(int64_t result) {
  std::vector<Done> dones;
  {
    fgds::MutexLock lock(&mu_);
    for (size_t i = 0; i < requests_.size(); ++i) {
      if (!completed_[i]) dones.push_back({i, result, backend::IoPath::kNone});
    }
  }
  if (!dones.empty()) Complete(dones);
}

size_t FakeBackend::uncompleted() {
  fgds::MutexLock lock(&mu_);
  size_t n = 0;
  for (bool done : completed_) n += done ? 0 : 1;
  return n;
}

void FakeBackend::FailOpens(int error) {
  fgds::MutexLock lock(&mu_);
  open_error_ = error;
}

std::vector<FakeBackend::Opened> FakeBackend::opens() {
  fgds::MutexLock lock(&mu_);
  return opens_;
}

backend::File* FakeBackend::HandleFor(size_t index) {
  return reinterpret_cast<backend::File*>(&handles_[index % sizeof(handles_)]);
}

int FakeBackend::OpenNode(backend::NodeId node, int flags,
                          backend::File** out) {
  fgds::MutexLock lock(&mu_);
  if (open_error_ != 0) return open_error_;
  backend::File* file = HandleFor(opens_.size());
  opens_.push_back({node, flags, file});
  releases_.push_back(0);
  *out = file;
  return 0;
}

backend::NodeId FakeBackend::NodeOf(backend::File* file) {
  fgds::MutexLock lock(&mu_);
  for (size_t i = 0; i < opens_.size(); ++i) {
    if (opens_[i].file == file) return 100 + i;
  }
  return 0;
}

void FakeBackend::Release(backend::File* file) {
  fgds::MutexLock lock(&mu_);
  for (size_t i = 0; i < opens_.size(); ++i) {
    if (opens_[i].file == file) {
      ++releases_[i];
      return;
    }
  }
  ADD_FAILURE() << "Release of a handle never opened";
}

int FakeBackend::releases(backend::File* file) {
  fgds::MutexLock lock(&mu_);
  for (size_t i = 0; i < opens_.size(); ++i) {
    if (opens_[i].file == file) return releases_[i];
  }
  return 0;
}

int FakeBackend::open_handles() {
  fgds::MutexLock lock(&mu_);
  int open = 0;
  for (int released : releases_) open += released == 0 ? 1 : 0;
  return open;
}

// ---- ClientRing ----

ClientRing::ClientRing(uint32_t entries) {
  EXPECT_EQ(fgds_ring_get_layout(entries, &layout_), 0);
  memfd_ = MakeMemfd(layout_.total_size, F_SEAL_SHRINK | F_SEAL_GROW);
  void* map = mmap(nullptr, layout_.total_size, PROT_READ | PROT_WRITE,
                   MAP_SHARED, memfd_, 0);
  EXPECT_NE(map, MAP_FAILED);
  header_ = static_cast<fgds_ring_header*>(map);
  // As fgds_ior_create writes it (usrbio/ior.cc, WriteHeader).
  header_->magic = FGDS_RING_MAGIC;
  header_->version = FGDS_RING_VERSION;
  header_->header_size = sizeof(fgds_ring_header);
  header_->sqe_size = sizeof(fgds_sqe);
  header_->cqe_size = sizeof(fgds_cqe);
  header_->sq_entries = layout_.sq_entries;
  header_->cq_entries = layout_.cq_entries;
  header_->sq_offset = layout_.sq_offset;
  header_->cq_offset = layout_.cq_offset;
  header_->total_size = layout_.total_size;
  sqes_ =
      reinterpret_cast<fgds_sqe*>(static_cast<char*>(map) + layout_.sq_offset);
  cqes_ =
      reinterpret_cast<fgds_cqe*>(static_cast<char*>(map) + layout_.cq_offset);
  submit_efd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  complete_efd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  EXPECT_GE(submit_efd_, 0);
  EXPECT_GE(complete_efd_, 0);
}

ClientRing::~ClientRing() {
  munmap(header_, layout_.total_size);
  for (int fd : {memfd_, submit_efd_, complete_efd_}) {
    if (fd >= 0) close(fd);
  }
}

void ClientRing::Submit(std::span<const fgds_sqe> sqes) {
  const uint32_t tail = fgds_load_relaxed(&header_->sq_tail.value);
  EXPECT_LE(tail + sqes.size() - sq_head(), layout_.sq_entries);
  for (size_t i = 0; i < sqes.size(); ++i) {
    sqes_[(tail + i) & (layout_.sq_entries - 1)] = sqes[i];
  }
  // Release: the entries are written before the worker can see the tail.
  fgds_store_release(&header_->sq_tail.value,
                     tail + static_cast<uint32_t>(sqes.size()));
  Kick();
}

bool ClientRing::Kick() {
  // Pairs with the worker's (set NEED_WAKEUP; fence; re-read sq_tail).
  fgds_full_fence();
  if ((fgds_load_relaxed(&header_->sq_head.flags) & FGDS_RING_SQ_NEED_WAKEUP) ==
      0) {
    return false;
  }
  uint64_t one = 1;
  EXPECT_EQ(write(submit_efd_, &one, sizeof(one)),
            static_cast<ssize_t>(sizeof(one)));
  return true;
}

bool ClientRing::WaitForCqes(uint32_t count) {
  const auto deadline = std::chrono::steady_clock::now() + kGuard;
  const uint32_t sticky =
      fgds_load_relaxed(&header_->cq_head.flags) & FGDS_RING_CQ_ALWAYS_NOTIFY;
  while (unreaped() < count) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    // As SleepForCompletions: announce, fence, re-check, sleep.
    fgds_store_relaxed(&header_->cq_head.flags, sticky | FGDS_RING_CQ_WAITING);
    fgds_full_fence();
    if (unreaped() < count) {
      pollfd fd = {complete_efd_, POLLIN, 0};
      if (poll(&fd, 1, 100) > 0) {
        uint64_t value;
        (void)!read(complete_efd_, &value, sizeof(value));
      }
    }
    fgds_store_relaxed(&header_->cq_head.flags, sticky);
  }
  return true;
}

std::vector<fgds_cqe> ClientRing::Reap() {
  const uint32_t head = fgds_load_relaxed(&header_->cq_head.value);
  // Acquire: the CQEs were written before the tail was published.
  const uint32_t tail = fgds_load_acquire(&header_->cq_tail.value);
  std::vector<fgds_cqe> out;
  for (uint32_t i = head; i != tail; ++i) {
    out.push_back(cqes_[i & (layout_.cq_entries - 1)]);
  }
  // Release: our reads of the slots are done before the daemon reuses them.
  fgds_store_release(&header_->cq_head.value, tail);
  return out;
}

uint32_t ClientRing::unreaped() const {
  return fgds_load_acquire(&header_->cq_tail.value) -
         fgds_load_relaxed(&header_->cq_head.value);
}

bool ClientRing::WaitForNeedWakeup() const {
  return WaitUntil([this] {
    return (fgds_load_acquire(&header_->sq_head.flags) &
            FGDS_RING_SQ_NEED_WAKEUP) != 0;
  });
}

bool ClientRing::TakeCompletionSignal() {
  uint64_t value = 0;
  return read(complete_efd_, &value, sizeof(value)) ==
             static_cast<ssize_t>(sizeof(value)) &&
         value > 0;
}

bool ClientRing::WaitForCompletionSignal() {
  pollfd fd = {complete_efd_, POLLIN, 0};
  const int timeout_ms =
      static_cast<int>(std::chrono::milliseconds(kGuard).count());
  return poll(&fd, 1, timeout_ms) == 1 && TakeCompletionSignal();
}

uint32_t ClientRing::sq_head() const {
  return fgds_load_acquire(&header_->sq_head.value);
}

uint32_t ClientRing::sq_flags() const {
  return fgds_load_acquire(&header_->sq_head.flags);
}

uint32_t ClientRing::cq_tail() const {
  return fgds_load_acquire(&header_->cq_tail.value);
}

void ClientRing::set_cq_flags(uint32_t flags) {
  fgds_store_relaxed(&header_->cq_head.flags, flags);
  fgds_full_fence();
}

void ClientRing::set_cq_head(uint32_t value) {
  fgds_store_release(&header_->cq_head.value, value);
}

void ClientRing::set_sq_tail(uint32_t value) {
  fgds_store_release(&header_->sq_tail.value, value);
}

// ---- helpers ----

namespace {

fgds_sqe Sqe(uint8_t opcode, uint32_t fd_id, uint32_t iov_id,
             uint64_t iov_offset, uint64_t file_offset, uint64_t len,
             uint64_t userdata) {
  fgds_sqe sqe = {};
  sqe.opcode = opcode;
  sqe.fd_id = fd_id;
  sqe.iov_id = iov_id;
  sqe.iov_offset = iov_offset;
  sqe.file_offset = file_offset;
  sqe.len = len;
  sqe.userdata = userdata;
  return sqe;
}

}  // namespace

fgds_sqe ReadSqe(uint32_t fd_id, uint32_t iov_id, uint64_t iov_offset,
                 uint64_t file_offset, uint64_t len, uint64_t userdata) {
  return Sqe(FGDS_OP_READ, fd_id, iov_id, iov_offset, file_offset, len,
             userdata);
}

fgds_sqe WriteSqe(uint32_t fd_id, uint32_t iov_id, uint64_t iov_offset,
                  uint64_t file_offset, uint64_t len, uint64_t userdata) {
  return Sqe(FGDS_OP_WRITE, fd_id, iov_id, iov_offset, file_offset, len,
             userdata);
}

fgds_sqe FsyncSqe(uint32_t fd_id, uint64_t userdata) {
  return Sqe(FGDS_OP_FSYNC, fd_id, 0, 0, 0, 0, userdata);
}

int MakeMemfd(uint64_t size, int seals) {
  int fd = memfd_create("fgds-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  // Every page allocated, as the client library does: the daemon maps only
  // memory its owner paid for (client_memory.h).
  if (ftruncate(fd, static_cast<off_t>(size)) != 0 ||
      (size > 0 && fallocate(fd, 0, 0, static_cast<off_t>(size)) != 0) ||
      (seals != 0 && fcntl(fd, F_ADD_SEALS, seals) != 0)) {
    close(fd);
    return -1;
  }
  return fd;
}

int OpenFdCount() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int count = 0;
  while (readdir(dir) != nullptr) ++count;
  closedir(dir);
  return count;
}

bool SomeThreadReadsAnEventfd(pid_t pid) {
  const std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(task_dir.c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.' || found) continue;
    FILE* f = fopen((task_dir + "/" + e->d_name + "/syscall").c_str(), "re");
    if (f == nullptr) continue;
    long nr = -1;
    unsigned long fd = 0;
    if (fscanf(f, "%ld %lx", &nr, &fd) == 2 && nr == SYS_read) {
      char target[64] = {};
      const std::string link =
          "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
      found = readlink(link.c_str(), target, sizeof(target) - 1) > 0 &&
              strcmp(target, "anon_inode:[eventfd]") == 0;
    }
    fclose(f);
  }
  closedir(d);
  return found;
}

DescriptorExhaustion::DescriptorExhaustion() {
  getrlimit(RLIMIT_NOFILE, &saved_);
  rlimit low = saved_;
  low.rlim_cur = std::min<rlim_t>(saved_.rlim_cur, OpenFdCount() + 64);
  setrlimit(RLIMIT_NOFILE, &low);
  for (;;) {
    int fd = dup(0);
    if (fd < 0) break;
    fillers_.push_back(fd);
  }
}

DescriptorExhaustion::~DescriptorExhaustion() {
  Release(static_cast<int>(fillers_.size()));
  setrlimit(RLIMIT_NOFILE, &saved_);
}

void DescriptorExhaustion::Release(int count) {
  for (int i = 0; i < count && !fillers_.empty(); ++i) {
    close(fillers_.back());
    fillers_.pop_back();
  }
}

}  // namespace fgds::session::testing
