#include "backend/remote/unsynced_writes.h"

#include <utility>

namespace fgds::remote {

void UnsyncedWrites::Note(std::string_view name, int agent, uint32_t instance) {
  fgds::MutexLock lock(&mu_);
  std::vector<Pending>& pending = files_[std::string(name)].pending;
  for (Pending& p : pending) {
    if (p.agent != agent) continue;
    if (p.instance != instance) {
      p.lost = true;
      p.instance = instance;
    }
    return;
  }
  pending.push_back({agent, instance, false});
}

UnsyncedWrites::Sync UnsyncedWrites::BeginSync(std::string_view name) {
  Sync sync;
  fgds::MutexLock lock(&mu_);
  auto it = files_.find(std::string(name));
  if (it == files_.end()) return sync;  // nothing written, nothing under way
  File* file = &it->second;
  if (file->syncing) {
    ++file->waiters;
    // The entry stays while it has waiters (EndSync erases none then), so
    // `file` stays valid across the waits. A failure of that sync reaches
    // the waiter's handle through Check.
    while (file->syncing) synced_.Wait(&mu_);
    --file->waiters;
  }
  sync.pending = std::move(file->pending);
  file->pending.clear();
  file->syncing = true;
  sync.began = true;
  return sync;
}

void UnsyncedWrites::EndSync(std::string_view name, const Sync& sync,
                             int result) {
  if (!sync.began) return;
  {
    fgds::MutexLock lock(&mu_);
    auto it = files_.find(std::string(name));
    if (it == files_.end()) return;  // cannot be: the entry was syncing
    File& file = it->second;
    file.syncing = false;
    if (result < 0) {
      file.failure = result;
      file.failure_seq = ++failures_;
    }
    EraseIfIdle(it);
  }
  synced_.SignalAll();
}

uint64_t UnsyncedWrites::Opened(std::string_view name) {
  fgds::MutexLock lock(&mu_);
  ++files_[std::string(name)].opens;
  return failures_;
}

void UnsyncedWrites::Closed(std::string_view name) {
  fgds::MutexLock lock(&mu_);
  auto it = files_.find(std::string(name));
  if (it == files_.end() || it->second.opens == 0) return;
  --it->second.opens;
  EraseIfIdle(it);
}

int UnsyncedWrites::Check(std::string_view name, uint64_t* told, bool mark) {
  fgds::MutexLock lock(&mu_);
  auto it = files_.find(std::string(name));
  if (it == files_.end() || it->second.failure_seq <= *told) return 0;
  if (mark) *told = it->second.failure_seq;
  return it->second.failure;
}

void UnsyncedWrites::EraseIfIdle(
    std::unordered_map<std::string, File>::iterator it) {
  const File& file = it->second;
  if (file.pending.empty() && file.waiters == 0 && !file.syncing &&
      file.opens == 0) {
    files_.erase(it);
  }
}

size_t UnsyncedWrites::files() {
  fgds::MutexLock lock(&mu_);
  return files_.size();
}

}  // namespace fgds::remote
