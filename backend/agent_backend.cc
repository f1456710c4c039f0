#include "backend/agent_backend.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backend/ceph/io_pool.h"
#include "backend/remote/agent_wire.h"
#include "backend/remote/inode_name.h"
#include "common/errno_status.h"

namespace fgds::backend {
namespace {

class AgentBackend : public Backend {
 public:
  AgentBackend(std::unique_ptr<Backend> inner, std::string root,
               std::unique_ptr<remote::AgentPool> agents, unsigned threads)
      : inner_(std::move(inner)),
        root_(std::move(root)),
        agents_(std::move(agents)),
        pool_(std::make_unique<IoPool>(threads)) {}
  ~AgentBackend() override {
    pool_.reset();  // runs what is queued: every request completes
  }

  NodeId root() const override { return inner_->root(); }
  std::string EngineName() const override {
    return inner_->EngineName() + "+agents";
  }
  bool WantsRequestCaller() const override {
    return inner_->WantsRequestCaller();
  }
  bool ReachesDeviceMemory() const override {
    return inner_->ReachesDeviceMemory();
  }
  // Only with a backend that reaches GPU memory itself: GPU iovs exist here
  // only as its direct mappings, and it is their fallback.
  bool TakesDmabufs() const override {
    return inner_->ReachesDeviceMemory() && agents_->TakesDmabufs();
  }
  std::string StatsText() const override {
    return absl::StrCat(inner_->StatsText(), agents_->StatsText(),
                        "# agents: not_routed=",
                        not_routed_.load(std::memory_order_relaxed), "\n");
  }
  void SetCacheEvents(CacheEvents* events) override {
    inner_->SetCacheEvents(events);
  }

  int Lookup(NodeId parent, const char* name, Entry* out) override {
    return inner_->Lookup(parent, name, out);
  }
  void Forget(NodeId node, uint64_t count) override {
    inner_->Forget(node, count);
  }
  int GetAttr(NodeId node, struct stat* out) override {
    return inner_->GetAttr(node, out);
  }
  int SetAttr(NodeId node, const SetAttrRequest& request,
              struct stat* out) override {
    return inner_->SetAttr(node, request, out);
  }
  int ReadLink(NodeId node, std::string* target) override {
    return inner_->ReadLink(node, target);
  }
  int MkNod(const Caller& caller, NodeId parent, const char* name, mode_t mode,
            dev_t rdev, Entry* out) override {
    return inner_->MkNod(caller, parent, name, mode, rdev, out);
  }
  int MkDir(const Caller& caller, NodeId parent, const char* name, mode_t mode,
            Entry* out) override {
    return inner_->MkDir(caller, parent, name, mode, out);
  }
  int SymLink(const Caller& caller, const char* target, NodeId parent,
              const char* name, Entry* out) override {
    return inner_->SymLink(caller, target, parent, name, out);
  }
  int Link(NodeId node, NodeId new_parent, const char* new_name,
           Entry* out) override {
    return inner_->Link(node, new_parent, new_name, out);
  }
  int Unlink(NodeId parent, const char* name) override {
    return inner_->Unlink(parent, name);
  }
  int RmDir(NodeId parent, const char* name) override {
    return inner_->RmDir(parent, name);
  }
  int Rename(NodeId parent, const char* name, NodeId new_parent,
             const char* new_name, unsigned flags) override {
    return inner_->Rename(parent, name, new_parent, new_name, flags);
  }
  int StatFs(NodeId node, struct statvfs* out) override {
    return inner_->StatFs(node, out);
  }
  int SetXattr(NodeId node, const char* name, const void* value, size_t size,
               int flags) override {
    return inner_->SetXattr(node, name, value, size, flags);
  }
  int GetXattr(NodeId node, const char* name, void* value,
               size_t size) override {
    return inner_->GetXattr(node, name, value, size);
  }
  int ListXattr(NodeId node, char* list, size_t size) override {
    return inner_->ListXattr(node, list, size);
  }
  int RemoveXattr(NodeId node, const char* name) override {
    return inner_->RemoveXattr(node, name);
  }
  int Open(NodeId node, int flags, File** out) override {
    return inner_->Open(node, flags, out);
  }
  int Create(const Caller& caller, NodeId parent, const char* name, mode_t mode,
             int flags, Entry* entry, File** out) override {
    return inner_->Create(caller, parent, name, mode, flags, entry, out);
  }
  int TmpFile(const Caller& caller, NodeId parent, mode_t mode, int flags,
              Entry* entry, File** out) override {
    return inner_->TmpFile(caller, parent, mode, flags, entry, out);
  }
  int Flush(File* file) override { return inner_->Flush(file); }
  bool NeedsFlush(File* file) override { return inner_->NeedsFlush(file); }
  void Release(File* file) override { inner_->Release(file); }

  void SubmitIo(std::span<const FileIoRequest> batch) override {
    std::vector<FileIoRequest> own;  // the inner backend's
    std::vector<FileIoRequest> routed;
    for (const FileIoRequest& request : batch) {
      (Routable(request) ? routed : own).push_back(request);
    }
    // The inner backend's first: it may throw only before it started any,
    // and none of ours has started yet.
    if (!own.empty()) inner_->SubmitIo(own);
    for (const FileIoRequest& request : routed) {
      pool_->Submit([this, request] {
        IoPath path = IoPath::kNone;
        const int64_t res = Move(request, &path);
        request.completion->set_path(path);
        request.completion->Complete(res);
      });
    }
  }

  int64_t RunIo(const FileIoRequest& request, IoPath* path) override {
    if (!Routable(request)) return inner_->RunIo(request, path);
    return Move(request, path);
  }

  int Fsync(File* file, bool datasync) override {
    return inner_->Fsync(file, datasync);
  }
  int Fallocate(File* file, int mode, off_t offset, off_t length) override {
    return inner_->Fallocate(file, mode, offset, length);
  }
  ssize_t CopyFileRange(File* in, off_t in_offset, File* out, off_t out_offset,
                        size_t len, unsigned flags) override {
    return inner_->CopyFileRange(in, in_offset, out, out_offset, len, flags);
  }
  off_t Lseek(File* file, off_t offset, int whence) override {
    return inner_->Lseek(file, offset, whence);
  }
  bool KeepCache(File* file) override { return inner_->KeepCache(file); }
  NodeId NodeOf(File* file) override { return inner_->NodeOf(file); }
  // No passthrough: the kernel would move the data past the agents.
  int PassthroughFd(File*) override { return -1; }
  int OpenNode(NodeId node, int flags, File** out) override {
    return inner_->OpenNode(node, flags, out);
  }
  int OpenDir(NodeId node, Dir** out) override {
    return inner_->OpenDir(node, out);
  }
  int ReadDir(Dir* dir, off_t offset,
              const std::function<bool(const DirEntry&)>& emit) override {
    return inner_->ReadDir(dir, offset, emit);
  }
  void ReleaseDir(Dir* dir) override { inner_->ReleaseDir(dir); }
  int FsyncDir(Dir* dir, bool datasync) override {
    return inner_->FsyncDir(dir, datasync);
  }
  bool HoldsEntry(NodeId dir, ino_t ino) override {
    return inner_->HoldsEntry(dir, ino);
  }

 private:
  static bool Routable(const FileIoRequest& request) {
    if (request.op != FileOp::kRead && request.op != FileOp::kWrite) {
      return false;
    }
    // Device memory only with its dma-buf (an RDMA agent registers it; any
    // other agent refuses it and the inner backend's DMA path serves it).
    if (request.region != nullptr &&
        request.region->kind() == MemoryRegion::Kind::kDevice &&
        request.region->dmabuf_fd() < 0) {
      return false;
    }
    return !(request.op == FileOp::kWrite &&
             (request.flags & kIoKillPrivileges));
  }

  // The file's name under root_ for the agents, or false (counted in
  // not_routed_).
  bool NameOf(File* file, bool write, std::string* name) {
    const int fd = inner_->PassthroughFd(file);
    if (fd >= 0) {
      if (write && (fcntl(fd, F_GETFL) & O_APPEND)) {
        not_routed_.fetch_add(1, std::memory_order_relaxed);
        return false;
      }
      char link[64];
      snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
      char target[PATH_MAX + 1];
      const ssize_t n = readlink(link, target, PATH_MAX);
      if (n > 0 && static_cast<size_t>(n) > root_.size() + 1 &&
          std::string_view(target, root_.size()) == root_ &&
          target[root_.size()] == '/') {
        name->assign(target + root_.size() + 1,
                     static_cast<size_t>(n) - root_.size() - 1);
        // An unlinked file's link ends in " (deleted)" and names nothing
        // (or another file of that name): not sent. The agent checks the
        // inode, so a path that changed under the request is refused.
        struct stat st;
        if (name->find(" (deleted)") == std::string::npos &&
            fstat(fd, &st) == 0) {
          *name = remote::CheckedPathName(st.st_ino, *name);
          if (remote::CheckRelativePath(*name) == 0) return true;
        }
      }
    }
    not_routed_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }

  // A routable request, in the calling thread: the agents first, then the
  // inner backend for what they did not move.
  int64_t Move(const FileIoRequest& request, IoPath* path) {
    const bool write = request.op == FileOp::kWrite;
    std::string name;
    if (NameOf(request.file, write, &name)) {
      const NodeId node = inner_->NodeOf(request.file);
      const int agent = agents_->Choose(nullptr, node);
      if (agent < 0) {
        agents_->Fallback(-1, request.region);
      } else {
        const int64_t n =
            write ? agents_->Write(agent, name, request.offset, request.buf,
                                   request.len, request.region)
                  : agents_->Read(agent, name, request.offset, request.buf,
                                  request.len, request.region);
        // A short write (a full disk on the agent's side) is redone here,
        // whole: the same bytes at the same offsets.
        if (n >= 0 && (!write || static_cast<uint64_t>(n) == request.len)) {
          *path = agents_->PathOf(agent);
          return n;
        }
        agents_->Fallback(agent);
      }
    }
    return inner_->RunIo(request, path);
  }

  const std::unique_ptr<Backend> inner_;
  const std::string root_;  // canonical, no trailing slash
  const std::unique_ptr<remote::AgentPool> agents_;
  // Requests of files the agents cannot take (no name, O_APPEND).
  std::atomic<uint64_t> not_routed_{0};
  std::unique_ptr<IoPool> pool_;  // last: drained first
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> RouteThroughAgents(
    std::unique_ptr<Backend> inner, const std::string& root,
    std::unique_ptr<remote::AgentPool> agents, unsigned threads) {
  char* canonical = realpath(root.c_str(), nullptr);
  if (canonical == nullptr) return PosixError("realpath " + root, errno);
  std::string dir(canonical);
  free(canonical);
  if (dir == "/") dir.clear();  // names are then "/..." minus the slash
  return std::unique_ptr<Backend>(new AgentBackend(
      std::move(inner), std::move(dir), std::move(agents), threads));
}

}  // namespace fgds::backend
