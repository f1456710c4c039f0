// File: fusefs/session/client_memory.h
//
// Who pays for a client's shared memory. A page of a memfd is charged to
// the memory cgroup of the task that first allocates it: if the daemon's
// write (a read I/O landing in an iov, a completion posted into a ring) were
// the first touch, the page would be charged to the daemon and a user
// capped at 256 MiB could have the daemon fill gigabytes on his behalf.
// So the daemon maps only memory the client has already allocated in full,
// and keeps it that way: after mapping, it seals the memfd with
// F_SEAL_FUTURE_WRITE, which forbids punching holes (fallocate
// PUNCH_HOLE, MADV_REMOVE), write(2) and new writable mappings, while the
// mappings made before (the client's and the daemon's) stay writable; the
// shrink seal the daemon already requires forbids truncation. Pages that
// are swapped out stay allocated and charged to the client's cgroup.
// docs/limits.md has the whole story.
//
// Thread safety: thread-safe.
#ifndef FGDS_FUSEFS_SESSION_CLIENT_MEMORY_H_
#define FGDS_FUSEFS_SESSION_CLIENT_MEMORY_H_

namespace fgds::session {

// Seals `memfd` (a client's memfd the daemon has mapped, passed over the
// session socket) against holes, then checks that every page of it is
// allocated. Returns 0; -EPERM when it cannot be sealed (the client set
// F_SEAL_SEAL without F_SEAL_FUTURE_WRITE); -EINVAL when pages are missing
// (a sparse memfd) or it cannot be inspected.
int SealAllocatedMemfd(int memfd);

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_CLIENT_MEMORY_H_
