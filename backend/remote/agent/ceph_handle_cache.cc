#include "backend/remote/agent/ceph_handle_cache.h"

#include <cephfs/libcephfs.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "absl/time/time.h"
#include "backend/remote/agent/ceph_inode.h"
#include "common/log.h"

namespace fgds::remote {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

CephHandleCache::CephHandleCache(ceph_mount_info* cmount, int idle_ms,
                                 size_t max_handles)
    : cmount_(cmount),
      idle_ns_(int64_t{idle_ms} * 1000000),
      max_handles_(max_handles),
      sweeper_([this] { Sweep(); }) {}

CephHandleCache::~CephHandleCache() {
  {
    fgds::MutexLock lock(&mu_);
    stopping_ = true;
    wake_.SignalAll();
  }
  sweeper_.join();
  std::vector<std::pair<Key, Handle>> all;
  {
    fgds::MutexLock lock(&mu_);
    for (auto& [key, handle] : handles_) {
      all.emplace_back(key, handle);
      if (key.second) ++closing_[key.first];
    }
    handles_.clear();
  }
  for (const auto& [key, h] : all) CloseTaken(key.first, key.second, h);
  fgds::MutexLock lock(&mu_);
  for (const auto& [ino, err] : sync_errors_) {
    LogWarning(
        "agent: inode %llu: a write-back error no daemon was told of: %s",
        static_cast<unsigned long long>(ino), strerror(-err));
  }
}

int CephHandleCache::OpenInode(uint64_t ino, bool write, Inode** in, Fh** fh) {
  int rc = fgds_ceph_lookup_inode(cmount_, ino, in);
  if (rc < 0) return rc;
  UserPerm* perms = ceph_mount_perms(cmount_);
  struct ceph_statx stx = {};
  rc = ceph_ll_getattr(cmount_, *in, &stx, CEPH_STATX_MODE, 0, perms);
  if (rc == 0 && !S_ISREG(stx.stx_mode)) {
    rc = S_ISDIR(stx.stx_mode) ? -EISDIR : -EINVAL;
  }
  if (rc == 0) {
    rc = ceph_ll_open(cmount_, *in, write ? O_WRONLY : O_RDONLY, fh, perms);
  }
  if (rc < 0) ceph_ll_put(cmount_, *in);
  return rc;
}

void CephHandleCache::Close(const Handle& handle) {
  ceph_ll_close(cmount_, handle.fh);
  ceph_ll_put(cmount_, handle.in);
}

void CephHandleCache::CloseTaken(uint64_t ino, bool write,
                                 const Handle& handle) {
  // A close starts the write-back of the buffers but neither waits for it
  // nor reports its failure: sync first, and keep a failure for Sync.
  const int rc = write ? ceph_ll_fsync(cmount_, handle.fh, 1) : 0;
  Close(handle);
  if (!write) return;
  {
    fgds::MutexLock lock(&mu_);
    if (rc < 0) sync_errors_.try_emplace(ino, rc);
    if (--closing_[ino] == 0) closing_.erase(ino);
  }
  closed_.SignalAll();
}

int CephHandleCache::Sync(uint64_t ino) {
  Fh* fh = nullptr;
  int err = 0;
  {
    fgds::MutexLock lock(&mu_);
    while (closing_.count(ino) != 0) closed_.Wait(&mu_);
    if (auto e = sync_errors_.find(ino); e != sync_errors_.end()) {
      err = e->second;
      sync_errors_.erase(e);
    }
    auto it = handles_.find(Key{ino, true});
    // No write handle: every write through one was synced when it closed.
    if (it == handles_.end()) return err;
    ++it->second.users;
    fh = it->second.fh;
  }
  const int rc = ceph_ll_fsync(cmount_, fh, /*syncdataonly=*/1);
  Release(ino, true);
  return err < 0 ? err : rc;
}

int CephHandleCache::Acquire(uint64_t ino, bool write, Fh** fh) {
  const Key key{ino, write};
  {
    fgds::MutexLock lock(&mu_);
    auto it = handles_.find(key);
    if (it != handles_.end()) {
      ++it->second.users;
      *fh = it->second.fh;
      return 0;
    }
  }
  // Opened outside the lock: it waits on the MDS.
  Inode* in = nullptr;
  Fh* opened = nullptr;
  if (int rc = OpenInode(ino, write, &in, &opened); rc < 0) return rc;
  std::vector<std::pair<Key, Handle>> idle;
  bool raced = false;
  {
    fgds::MutexLock lock(&mu_);
    auto [it, inserted] =
        handles_.try_emplace(key, Handle{in, opened, 0, NowNs()});
    raced = !inserted;  // another thread opened it meanwhile: use theirs
    ++it->second.users;
    *fh = it->second.fh;
    if (handles_.size() > max_handles_) TakeIdle(NowNs(), &idle);
  }
  if (raced) Close(Handle{in, opened, 0, 0});  // nothing went through it
  for (const auto& [k, h] : idle) CloseTaken(k.first, k.second, h);
  return 0;
}

void CephHandleCache::Release(uint64_t ino, bool write) {
  fgds::MutexLock lock(&mu_);
  auto it = handles_.find(Key{ino, write});
  if (it == handles_.end()) return;
  --it->second.users;
  it->second.last_use_ns = NowNs();
}

size_t CephHandleCache::open_handles() {
  fgds::MutexLock lock(&mu_);
  return handles_.size();
}

void CephHandleCache::TakeIdle(int64_t now_ns,
                               std::vector<std::pair<Key, Handle>>* out) {
  auto take = [&](std::map<Key, Handle>::iterator it) {
    out->emplace_back(it->first, it->second);
    if (it->first.second) ++closing_[it->first.first];
    return handles_.erase(it);
  };
  std::vector<std::pair<int64_t, Key>> unused;
  for (auto it = handles_.begin(); it != handles_.end();) {
    if (it->second.users == 0 && now_ns - it->second.last_use_ns >= idle_ns_) {
      it = take(it);
      continue;
    }
    if (it->second.users == 0) {
      unused.emplace_back(it->second.last_use_ns, it->first);
    }
    ++it;
  }
  if (handles_.size() <= max_handles_) return;
  std::sort(unused.begin(), unused.end());
  for (const auto& [last_use, key] : unused) {
    if (handles_.size() <= max_handles_) break;
    take(handles_.find(key));
  }
}

void CephHandleCache::Sweep() {
  const absl::Duration period =
      absl::Nanoseconds(std::max<int64_t>(idle_ns_ / 2, 1000000));
  for (;;) {
    std::vector<std::pair<Key, Handle>> idle;
    {
      fgds::MutexLock lock(&mu_);
      if (!stopping_) wake_.WaitWithTimeout(&mu_, period);
      if (stopping_) return;
      TakeIdle(NowNs(), &idle);
    }
    for (const auto& [k, h] : idle) CloseTaken(k.first, k.second, h);
  }
}

}  // namespace fgds::remote
