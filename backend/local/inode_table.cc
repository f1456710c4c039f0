#include "backend/local/inode_table.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace fgds::backend {

static_assert(sizeof(NodeId) >= sizeof(LocalInode*),
              "NodeId must be able to hold a LocalInode pointer");

InodeTable::InodeTable(int root_fd, const struct stat& root_stat)
    : root_(root_fd, root_stat.st_dev, root_stat.st_ino,
            root_stat.st_mode & S_IFMT) {
  root_.nlookup = 1;  // never dropped
}

InodeTable::~InodeTable() {
  MutexLock lock(&mu_);
  for (auto& [key, inode] : inodes_) {
    if (inode == &root_) continue;
    close(inode->fd);
    delete inode;
  }
  close(root_.fd);
}

LocalInode& InodeTable::Get(NodeId node) {
  if (node == kRootNode) return root_;
  if (node < kFirstNodeId) {
    std::fprintf(stderr, "fgds: INTERNAL ERROR: unknown node id %llu\n",
                 static_cast<unsigned long long>(node));
    std::abort();
  }
  return *reinterpret_cast<LocalInode*>(node);
}

NodeId InodeTable::Insert(int fd, const struct stat& st) {
  Key key{st.st_dev, st.st_ino};
  MutexLock lock(&mu_);
  if (key == Key{root_.dev, root_.ino}) {
    // The root reached by another name (e.g. a bind mount loop).
    close(fd);
    return kRootNode;
  }
  auto [it, inserted] = inodes_.try_emplace(key, nullptr);
  if (!inserted) {
    close(fd);
    ++it->second->nlookup;
    return reinterpret_cast<NodeId>(it->second);
  }
  auto* inode = new LocalInode(fd, st.st_dev, st.st_ino, st.st_mode & S_IFMT);
  inode->nlookup = 1;
  it->second = inode;
  return reinterpret_cast<NodeId>(inode);
}

void InodeTable::Forget(NodeId node, uint64_t count) {
  if (node == kRootNode) return;
  LocalInode& inode = Get(node);
  MutexLock lock(&mu_);
  if (count > inode.nlookup) {
    std::fprintf(stderr, "fgds: INTERNAL ERROR: forget %llu > nlookup %llu\n",
                 static_cast<unsigned long long>(count),
                 static_cast<unsigned long long>(inode.nlookup));
    std::abort();
  }
  inode.nlookup -= count;
  if (inode.nlookup > 0) return;
  inodes_.erase(Key{inode.dev, inode.ino});
  close(inode.fd);
  delete &inode;
}

void InodeTable::Acquire(NodeId node) {
  if (node == kRootNode) return;
  LocalInode& inode = Get(node);
  MutexLock lock(&mu_);
  ++inode.nlookup;
}

size_t InodeTable::size() {
  MutexLock lock(&mu_);
  return inodes_.size();
}

}  // namespace fgds::backend
