// File: backend/agent_backend.h
//
// RouteThroughAgents: a Backend whose file data goes to storage-side agents
// (`fgds mount --backend local --agents ...`, remote/agent_pool.h) first,
// around a backend whose directory the agents serve too (`fgds agent
// --data` of the same directory: one host, or a directory both hosts
// share). Everything else, and whatever no agent moved, is the inner
// backend's. For tests of the agents through a real mount where no ceph
// cluster runs (the rdma lab, tests/rdma/), and for single-host use.
//
// Naming: an agent of a directory opens files by path (agent_store.h), so a
// file is named by where its descriptor's path (/proc/self/fd) lies under
// `root`, checked against its inode number (remote/inode_name.h): a path
// that names another file by the time the agent opens it (a rename racing
// the request, or a hostile user swapping a directory on the way for a
// symlink) is refused by the agent, and the request served here. A file
// with no such name (unlinked, moved out of the tree, a name longer than
// the protocol carries) is served by the inner backend, and counted.
//
// Which requests go: reads and writes of host memory (FUSE buffers, usrbio
// host iovs, GPU iovs' host staging) and of GPU iovs whose dma-buf the
// session kept (TakesDmabufs: an RDMA agent moves them in place; one that
// cannot, and every TCP agent, leaves them to the inner backend's DMA
// path); not other device memory, not writes that must clear set-id bits
// first, nor writes of files open with O_APPEND (the inner backend's
// descriptor appends; an agent writes at the offset).
#ifndef FGDS_BACKEND_AGENT_BACKEND_H_
#define FGDS_BACKEND_AGENT_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "backend/backend.h"
#include "backend/remote/agent_pool.h"

namespace fgds::backend {

// `root`: the directory `inner` serves (made canonical here; an error if
// it cannot be). `threads`: how many requests may wait on agents at once.
absl::StatusOr<std::unique_ptr<Backend>> RouteThroughAgents(
    std::unique_ptr<Backend> inner, const std::string& root,
    std::unique_ptr<remote::AgentPool> agents, unsigned threads);

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_AGENT_BACKEND_H_
