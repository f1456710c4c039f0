#include "backend/ceph/guarded_backend.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backend/ceph/bounce_buffers.h"
#include "backend/ceph/call_gate.h"
#include "backend/request_caller.h"
#include "common/mutex.h"

namespace fgds::backend {
namespace {

// One data call through the gate (SubmitIo, RunIo): the request as the
// caller made it, and the bounce buffer the call moves its bytes through
// instead of the caller's memory, which is gone once the gate has given
// up on the call. Shared by the call and the waiter, either of which may
// be the last to let go.
struct DataCall {
  FileIoRequest request;        // the caller's
  std::shared_ptr<char> data;   // null: nothing to bounce (no bytes)
  IoPath path = IoPath::kNone;  // written by the call before it finishes
};

class GuardedBackend : public Backend {
 public:
  GuardedBackend(std::unique_ptr<Backend> inner, unsigned threads,
                 std::chrono::milliseconds timeout, unsigned here_calls)
      : inner_(inner.release()),
        timeout_(timeout),
        here_limit_(here_calls),
        gate_(std::make_unique<CallGate>(threads, timeout,
                                         "ceph: " + inner_->EngineName())),
        buffers_(BounceBuffers::Create(threads)) {}

  ~GuardedBackend() override {
    // The inner backend's teardown (ceph_unmount) waits on the cluster
    // too: through the gate, so that a dead cluster leaks it instead of
    // hanging the exit.
    Backend* inner = inner_;
    int64_t res = gate_->Run([inner] {
      delete inner;
      return int64_t{0};
    });
    if (res < 0) {
      fprintf(stderr,
              "fgds: ceph: left the cluster's session without unmounting "
              "(the cluster did not answer within %lld ms)\n",
              static_cast<long long>(timeout_.count()));
    }
    gate_.reset();
  }

  NodeId root() const override { return inner_->root(); }
  std::string EngineName() const override { return inner_->EngineName(); }
  bool LeftThreadsBehind() const override { return gate_->dead(); }
  bool WantsRequestCaller() const override {
    return inner_->WantsRequestCaller();
  }
  bool ReachesDeviceMemory() const override {
    return inner_->ReachesDeviceMemory();
  }
  bool TakesDmabufs() const override { return inner_->TakesDmabufs(); }
  std::string StatsText() const override {
    const CallGate::Counters c = gate_->counters();
    return absl::StrCat(
        inner_->StatsText(), "# ceph-gate: timeout_ms=", timeout_.count(),
        " dead=", gate_->dead() ? 1 : 0,
        " reads_here=", reads_here_.load(std::memory_order_relaxed),
        " calls=", c.calls, " wakes=", c.wakes, " wait_ns=", c.wait_ns,
        " run_ns=", c.run_ns, "\n");
  }
  void SetCacheEvents(CacheEvents* events) override {
    inner_->SetCacheEvents(events);
  }

  int Lookup(NodeId parent, const char* name, Entry* out) override {
    auto entry = std::make_shared<Entry>();
    std::string n = name;
    return CopyEntry(Call([=, in = inner_] {
                       return in->Lookup(parent, n.c_str(), entry.get());
                     }),
                     *entry, out);
  }
  void Forget(NodeId node, uint64_t count) override {
    Call([=, in = inner_] {
      in->Forget(node, count);
      return 0;
    });
  }
  int GetAttr(NodeId node, struct stat* out) override {
    auto st = std::make_shared<struct stat>();
    int res = Call([=, in = inner_] { return in->GetAttr(node, st.get()); });
    if (res == 0) *out = *st;
    return res;
  }
  int SetAttr(NodeId node, const SetAttrRequest& request,
              struct stat* out) override {
    auto st = std::make_shared<struct stat>();
    int res =
        Call([=, in = inner_] { return in->SetAttr(node, request, st.get()); });
    if (res == 0) *out = *st;
    return res;
  }
  int ReadLink(NodeId node, std::string* target) override {
    auto t = std::make_shared<std::string>();
    int res = Call([=, in = inner_] { return in->ReadLink(node, t.get()); });
    if (res == 0) *target = *t;
    return res;
  }
  int MkNod(const Caller& caller, NodeId parent, const char* name, mode_t mode,
            dev_t rdev, Entry* out) override {
    auto entry = std::make_shared<Entry>();
    std::string n = name;
    return CopyEntry(Call([=, in = inner_] {
                       return in->MkNod(caller, parent, n.c_str(), mode, rdev,
                                        entry.get());
                     }),
                     *entry, out);
  }
  int MkDir(const Caller& caller, NodeId parent, const char* name, mode_t mode,
            Entry* out) override {
    auto entry = std::make_shared<Entry>();
    std::string n = name;
    return CopyEntry(Call([=, in = inner_] {
                       return in->MkDir(caller, parent, n.c_str(), mode,
                                        entry.get());
                     }),
                     *entry, out);
  }
  int SymLink(const Caller& caller, const char* target, NodeId parent,
              const char* name, Entry* out) override {
    auto entry = std::make_shared<Entry>();
    std::string t = target, n = name;
    return CopyEntry(Call([=, in = inner_] {
                       return in->SymLink(caller, t.c_str(), parent, n.c_str(),
                                          entry.get());
                     }),
                     *entry, out);
  }
  int Link(NodeId node, NodeId new_parent, const char* new_name,
           Entry* out) override {
    auto entry = std::make_shared<Entry>();
    std::string n = new_name;
    return CopyEntry(Call([=, in = inner_] {
                       return in->Link(node, new_parent, n.c_str(),
                                       entry.get());
                     }),
                     *entry, out);
  }
  int Unlink(NodeId parent, const char* name) override {
    std::string n = name;
    return Call([=, in = inner_] { return in->Unlink(parent, n.c_str()); });
  }
  int RmDir(NodeId parent, const char* name) override {
    std::string n = name;
    return Call([=, in = inner_] { return in->RmDir(parent, n.c_str()); });
  }
  int Rename(NodeId parent, const char* name, NodeId new_parent,
             const char* new_name, unsigned flags) override {
    std::string n = name, nn = new_name;
    return Call([=, in = inner_] {
      return in->Rename(parent, n.c_str(), new_parent, nn.c_str(), flags);
    });
  }
  int StatFs(NodeId node, struct statvfs* out) override {
    auto st = std::make_shared<struct statvfs>();
    int res = Call([=, in = inner_] { return in->StatFs(node, st.get()); });
    if (res == 0) *out = *st;
    return res;
  }

  int SetXattr(NodeId node, const char* name, const void* value, size_t size,
               int flags) override {
    std::string n = name;
    auto v = std::make_shared<std::vector<char>>(
        static_cast<const char*>(value),
        static_cast<const char*>(value) + size);
    return Call([=, in = inner_] {
      return in->SetXattr(node, n.c_str(), v->data(), v->size(), flags);
    });
  }
  int GetXattr(NodeId node, const char* name, void* value,
               size_t size) override {
    std::string n = name;
    auto v = std::make_shared<std::vector<char>>(size);
    int res = Call([=, in = inner_] {
      return in->GetXattr(node, n.c_str(), size ? v->data() : nullptr, size);
    });
    if (res > 0 && size > 0) memcpy(value, v->data(), res);
    return res;
  }
  int ListXattr(NodeId node, char* list, size_t size) override {
    auto v = std::make_shared<std::vector<char>>(size);
    int res = Call([=, in = inner_] {
      return in->ListXattr(node, size ? v->data() : nullptr, size);
    });
    if (res > 0 && size > 0) memcpy(list, v->data(), res);
    return res;
  }
  int RemoveXattr(NodeId node, const char* name) override {
    std::string n = name;
    return Call([=, in = inner_] { return in->RemoveXattr(node, n.c_str()); });
  }

  int Open(NodeId node, int flags, File** out) override {
    auto file = std::make_shared<File*>(nullptr);
    int res =
        Call([=, in = inner_] { return in->Open(node, flags, file.get()); });
    if (res == 0) *out = *file;
    return res;
  }
  int Create(const Caller& caller, NodeId parent, const char* name, mode_t mode,
             int flags, Entry* entry, File** out) override {
    auto e = std::make_shared<Entry>();
    auto file = std::make_shared<File*>(nullptr);
    std::string n = name;
    int res = Call([=, in = inner_] {
      return in->Create(caller, parent, n.c_str(), mode, flags, e.get(),
                        file.get());
    });
    if (res == 0) {
      *entry = *e;
      *out = *file;
    }
    return res;
  }
  int TmpFile(const Caller& caller, NodeId parent, mode_t mode, int flags,
              Entry* entry, File** out) override {
    auto e = std::make_shared<Entry>();
    auto file = std::make_shared<File*>(nullptr);
    int res = Call([=, in = inner_] {
      return in->TmpFile(caller, parent, mode, flags, e.get(), file.get());
    });
    if (res == 0) {
      *entry = *e;
      *out = *file;
    }
    return res;
  }
  int Flush(File* file) override {
    return Call([=, in = inner_] { return in->Flush(file); });
  }
  bool NeedsFlush(File* file) override { return inner_->NeedsFlush(file); }
  void Release(File* file) override {
    Call([=, in = inner_] {
      in->Release(file);
      return 0;
    });
  }

  // Each request is one gate job that moves the bytes itself, in the gate
  // thread (the inner backend's RunIo): one hand-off per request at most,
  // where handing the call to the inner backend's pool would add a second.
  // The small requests of a batch (a usrbio ring's) go to the gate as one
  // (SubmitBatch): it wakes one gate thread, which serves them one after
  // another while they are fast (reads of libcephfs's cache: a hand-off
  // costs more than the call), and wakes more only while requests are left
  // waiting (reads that go to the OSDs spread over several threads). Large
  // ones (kBatchedBelow and up) keep a thread each: there a hand-off is
  // cheap next to the copy, and each starts at once. Each request still
  // completes on its own, as soon as it is done, and each is watched by
  // the gate from now.
  void SubmitIo(std::span<const FileIoRequest> batch) override {
    std::vector<CallGate::Call> batched, alone;
    // Device memory: the inner backend's, once nothing else can throw
    // (SubmitIo's contract: all started, or none). It refuses it at once,
    // or (a GPU iov's dma-buf, for RDMA agents) moves it on its own
    // threads: no libcephfs call touches the bytes, so there is nothing to
    // stage here, and a ring worker must not wait for an agent.
    std::vector<FileIoRequest> device;
    for (const FileIoRequest& request : batch) {
      if (!Bounced(request)) {
        device.push_back(request);
        continue;
      }
      std::shared_ptr<DataCall> call = Prepare(request);
      auto start = [call, in = inner_](CallGate::Finish finish) {
        finish(Move(in, call.get()));
      };
      auto done = [call](int64_t result, bool gave_up) {
        // Not given up: inside the call's Finish, its data still there.
        // Given up: the call may still run; nothing of its is read.
        FileIoCompletion* completion = call->request.completion;
        completion->set_path(gave_up ? IoPath::kNone : Deliver(*call, result));
        completion->Complete(result);
      };
      if (batch.size() == 1 && RunsHere(request) && TakeHereSlot()) {
        reads_here_.fetch_add(1, std::memory_order_relaxed);
        gate_->SubmitHere(std::move(start), std::move(done));
        // Not reached while the call holds this thread: its slot stays
        // taken, which is what bounds the threads a dead cluster keeps.
        here_in_use_.fetch_sub(1, std::memory_order_acq_rel);
        continue;
      }
      (request.len < kBatchedBelow ? batched : alone)
          .push_back({CopyIn(call), std::move(start), std::move(done)});
    }
    // Nothing started yet. (A batch enters the gate whole or not at all;
    // a Submit that throws after an earlier one started leaves that one
    // running, as SubmitIo always did for large requests.)
    for (CallGate::Call& c : alone) {
      gate_->Submit(std::move(c.prologue), std::move(c.start),
                    std::move(c.done));
    }
    if (!batched.empty()) gate_->SubmitBatch(std::move(batched));
    if (!device.empty()) inner_->SubmitIo(device);
  }
  int64_t RunIo(const FileIoRequest& request, IoPath* path) override {
    if (!Bounced(request)) {
      // Device memory: the inner backend's (refused, or by an agent).
      *path = IoPath::kNone;
      return inner_->RunIo(request, path);
    }
    std::shared_ptr<DataCall> call = Prepare(request);
    std::function<void()> copy_in = CopyIn(call);
    struct Wait {
      fgds::Mutex mu;
      fgds::CondVar cv;
      bool done ABSL_GUARDED_BY(mu) = false;
      int64_t result ABSL_GUARDED_BY(mu) = 0;
      IoPath path ABSL_GUARDED_BY(mu) = IoPath::kNone;
    };
    auto wait = std::make_shared<Wait>();
    std::shared_ptr<const Caller> caller = CallerCopy();
    gate_->Submit(
        std::move(copy_in),
        [call, caller, in = inner_](CallGate::Finish finish) {
          ScopedRequestCaller scope(caller.get());
          finish(Move(in, call.get()));
        },
        [call, wait](int64_t result, bool gave_up) {
          // As in SubmitIo: the copy out happens here, before the waiter
          // may return and its buffer go.
          const IoPath taken = gave_up ? IoPath::kNone : Deliver(*call, result);
          fgds::MutexLock lock(&wait->mu);
          wait->result = result;
          wait->path = taken;
          wait->done = true;
          wait->cv.Signal();
        });
    fgds::MutexLock lock(&wait->mu);
    while (!wait->done) wait->cv.Wait(&wait->mu);
    *path = wait->path;
    return wait->result;
  }
  int Fsync(File* file, bool datasync) override {
    return Call([=, in = inner_] { return in->Fsync(file, datasync); });
  }
  int Fallocate(File* file, int mode, off_t offset, off_t length) override {
    return Call(
        [=, in = inner_] { return in->Fallocate(file, mode, offset, length); });
  }
  ssize_t CopyFileRange(File* in_file, off_t in_offset, File* out,
                        off_t out_offset, size_t len, unsigned flags) override {
    return Call([=, in = inner_] {
      return static_cast<int64_t>(
          in->CopyFileRange(in_file, in_offset, out, out_offset, len, flags));
    });
  }
  off_t Lseek(File* file, off_t offset, int whence) override {
    return Call([=, in = inner_] {
      return static_cast<int64_t>(in->Lseek(file, offset, whence));
    });
  }
  bool KeepCache(File* file) override { return inner_->KeepCache(file); }
  NodeId NodeOf(File* file) override { return inner_->NodeOf(file); }
  int PassthroughFd(File* file) override { return inner_->PassthroughFd(file); }
  int OpenNode(NodeId node, int flags, File** out) override {
    auto file = std::make_shared<File*>(nullptr);
    int res = Call(
        [=, in = inner_] { return in->OpenNode(node, flags, file.get()); });
    if (res == 0) *out = *file;
    return res;
  }

  int OpenDir(NodeId node, Dir** out) override {
    auto dir = std::make_shared<Dir*>(nullptr);
    int res = Call([=, in = inner_] { return in->OpenDir(node, dir.get()); });
    if (res == 0) *out = *dir;
    return res;
  }
  // The call collects a batch of entries (names copied); they are handed
  // to `emit` here, until it takes no more (the kernel asks again from the
  // next offset).
  int ReadDir(Dir* dir, off_t offset,
              const std::function<bool(const DirEntry&)>& emit) override {
    struct Collected {
      std::string name;
      ino_t ino;
      unsigned type;
      off_t next_offset;
    };
    constexpr size_t kBatch = 512;
    auto got = std::make_shared<std::vector<Collected>>();
    int res = Call([=, in = inner_] {
      return in->ReadDir(dir, offset, [&got = *got](const DirEntry& e) {
        if (got.size() == kBatch) return false;
        got.push_back({e.name, e.ino, e.type, e.next_offset});
        return true;
      });
    });
    if (res < 0) return res;
    for (const Collected& c : *got) {
      if (!emit({c.name.c_str(), c.ino, c.type, c.next_offset})) break;
    }
    return res;
  }
  void ReleaseDir(Dir* dir) override {
    Call([=, in = inner_] {
      in->ReleaseDir(dir);
      return 0;
    });
  }
  int FsyncDir(Dir* dir, bool datasync) override {
    return Call([=, in = inner_] { return in->FsyncDir(dir, datasync); });
  }
  bool HoldsEntry(NodeId dir, ino_t ino) override {
    return inner_->HoldsEntry(dir, ino);
  }

 private:
  // Runs `call` through the gate with this thread's request caller.
  template <typename F>
  int64_t Call(F call) {
    std::shared_ptr<const Caller> caller = CallerCopy();
    return gate_->Run([caller, call]() -> int64_t {
      ScopedRequestCaller scope(caller.get());
      return call();
    });
  }
  // This thread's request caller, for the gate thread (null: none).
  static std::shared_ptr<const Caller> CallerCopy() {
    const Caller* c = CurrentRequestCaller();
    return c != nullptr ? std::make_shared<Caller>(*c) : nullptr;
  }

  // Whether `request` may run on the submitting thread (the class
  // comment): a read into plain memory, where the caller lends its thread.
  bool RunsHere(const FileIoRequest& request) const {
    return here_limit_ != 0 && request.op == FileOp::kRead &&
           request.region == nullptr;
  }
  // Requests smaller than this go to the gate as a batch (SubmitIo).
  static constexpr uint64_t kBatchedBelow = 64 * 1024;

  bool TakeHereSlot() {
    if (here_in_use_.fetch_add(1, std::memory_order_acq_rel) < here_limit_) {
      return true;
    }
    here_in_use_.fetch_sub(1, std::memory_order_acq_rel);
    return false;
  }

  // Host memory (or none) is bounced; device memory the inner backend
  // refuses at once, with nothing to bounce.
  static bool Bounced(const FileIoRequest& request) {
    return request.region == nullptr ||
           request.region->kind() == MemoryRegion::Kind::kHost;
  }

  // A data call of `request`, with its bounce buffer.
  std::shared_ptr<DataCall> Prepare(const FileIoRequest& request) {
    auto call = std::make_shared<DataCall>();
    call->request = request;
    const bool moves_bytes =
        request.op == FileOp::kRead || request.op == FileOp::kWrite;
    if (moves_bytes && request.len > 0) {
      call->data = buffers_->Get(request.len);
    }
    return call;
  }

  // Runs first on the gate thread, while the gate may not give up on the
  // call (CallGate::Submit's prologue): a write's bytes copied in while
  // the caller's memory is surely there. Here rather than in the caller's
  // thread, so that the copies of a batch run on the gate threads at once.
  static std::function<void()> CopyIn(const std::shared_ptr<DataCall>& call) {
    if (call->request.op != FileOp::kWrite || call->data == nullptr) {
      return nullptr;
    }
    return [call] {
      memcpy(call->data.get(), call->request.buf, call->request.len);
    };
  }

  // The call itself, on a gate thread: the inner backend moves the bytes
  // to or from the call's buffer, in this thread.
  static int64_t Move(Backend* in, DataCall* call) {
    FileIoRequest bounced = call->request;
    bounced.region = nullptr;
    bounced.buf = call->data.get();
    bounced.completion = nullptr;
    IoPath path = IoPath::kNone;
    const int64_t res = in->RunIo(bounced, &path);
    call->path = path;
    return res;
  }

  // Hands a finished call's bytes read to the caller's memory; returns
  // the call's path. REQUIRES: inside the call's Finish (not given up), so
  // the caller still waits and its memory is there.
  static IoPath Deliver(const DataCall& call, int64_t result) {
    if (result > 0 && call.request.op == FileOp::kRead) {
      memcpy(call.request.buf, call.data.get(), static_cast<size_t>(result));
    }
    return call.path;
  }

  static int CopyEntry(int64_t res, const Entry& got, Entry* out) {
    if (res == 0) *out = got;
    return static_cast<int>(res);
  }

  // Owned; never deleted once the gate is dead (see the destructor).
  Backend* const inner_;
  const std::chrono::milliseconds timeout_;
  const unsigned here_limit_;  // the most reads on submitting threads
  std::unique_ptr<CallGate> gate_;
  // Shared with the calls in flight (DataCall), which may outlive us.
  const std::shared_ptr<BounceBuffers> buffers_;
  // Reads running on their submitting threads (RunsHere).
  std::atomic<unsigned> here_in_use_{0};
  std::atomic<uint64_t> reads_here_{0};  // for StatsText
};

}  // namespace

std::unique_ptr<Backend> GuardBackend(std::unique_ptr<Backend> inner,
                                      unsigned threads,
                                      std::chrono::milliseconds timeout,
                                      unsigned here_calls) {
  return std::make_unique<GuardedBackend>(std::move(inner), threads, timeout,
                                          here_calls);
}

}  // namespace fgds::backend
