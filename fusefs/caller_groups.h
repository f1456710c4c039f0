// File: fusefs/caller_groups.h
//
// The supplementary groups of the thread that sent a FUSE request, read
// from /proc/TID/task/TID/status (the kernel does not send them: its
// FUSE_CREATE_SUPP_GROUP extension carries at most the parent directory's
// group, for set-group-ID directories, and libfuse does not pass even that
// on).
//
// libfuse's fuse_req_getgroups opens, reads and closes that file twice per
// call (its first 1 KiB buffer is always too small for a status file of
// about 1.4 KiB): 6 system calls of every create, mkdir, mknod and symlink
// by a user other than root. Here each daemon thread keeps the status files
// of the last few callers it served open, and reads one again with a single
// pread at offset 0, which makes the kernel write the file afresh: what it
// returns is the thread's groups at this moment, so a process that dropped
// a group is denied at once; nothing about groups is cached, only the open
// file.
//
// Why an open file cannot name another thread: a /proc file stays bound to
// the task it was opened for (its struct pid), not to the number. Once that
// task is gone and reaped, reads fail with ESRCH, even after the number
// went to a new thread; the reader then opens the number again, which now
// names the thread whose request is in hand (a thread waiting for the
// daemon's answer has not exited; one killed meanwhile, its number reused
// before the daemon reads the request, is the race libfuse's reader had
// too, and the kernel then discards the answer).
//
// Example:
//   std::vector<gid_t> groups;
//   if (ThreadGroups(ctx->pid, &groups) == 0) caller.groups = groups;
//
// Thread safety: thread-safe; each calling thread has its own open files
// (at most kMaxOpenPerThread, closed when the thread exits).
#ifndef FGDS_FUSEFS_CALLER_GROUPS_H_
#define FGDS_FUSEFS_CALLER_GROUPS_H_

#include <sys/types.h>

#include <string_view>
#include <vector>

namespace fgds::fusefs {

// Status files a daemon thread keeps open. A few callers at a time is the
// common case (a build, a copy); a busier mix reopens, which costs what
// one status read cost before.
inline constexpr int kMaxOpenPerThread = 8;

// Replaces *groups with the supplementary groups of thread `tid` (a thread
// id in the daemon's pid namespace, as FUSE reports the caller's). Returns
// 0, or -errno: -ESRCH when no such thread exists (tid 0: the caller is in
// a pid namespace the daemon cannot see), -EIO when the file does not
// parse. On error *groups is left empty.
int ThreadGroups(pid_t tid, std::vector<gid_t>* groups);

// Parses the "Groups:" line of a /proc status file's text into *groups
// (emptied first). False when there is no complete such line or a number
// does not parse.
bool ParseStatusGroups(std::string_view status, std::vector<gid_t>* groups);

}  // namespace fgds::fusefs

#endif  // FGDS_FUSEFS_CALLER_GROUPS_H_
