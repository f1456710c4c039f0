#include "common/limit_names.h"

#include "fgds/usrbio.h"

namespace fgds {

const char* LimitDescription(uint32_t limit) {
  switch (limit) {
    case FGDS_LIMIT_NONE:
      return "no limit";
    case FGDS_LIMIT_USER_SESSIONS:
      return "per-user limit on usrbio sessions (fgds mount --user-sessions)";
    case FGDS_LIMIT_USER_RINGS:
      return "per-user limit on iors (fgds mount --user-rings)";
    case FGDS_LIMIT_USER_RING_ENTRIES:
      return "per-user limit on ring entries, summed over the user's iors "
             "(fgds mount --user-ring-entries)";
    case FGDS_LIMIT_USER_MAPPINGS:
      return "per-user limit on memory regions the daemon maps, iovs and "
             "iors (fgds mount --user-mappings)";
    case FGDS_LIMIT_USER_BYTES:
      return "per-user limit on bytes of registered iovs and iors (fgds "
             "mount --user-bytes)";
    case FGDS_LIMIT_DAEMON_MAPPINGS:
      return "daemon-wide limit on mapped regions of all users, below "
             "vm.max_map_count (fgds mount --daemon-mappings)";
    case FGDS_LIMIT_DAEMON_BYTES:
      return "daemon-wide limit on mapped bytes of all users, below the "
             "daemon's address space (fgds mount --daemon-bytes)";
    case FGDS_LIMIT_SESSION_IOVS:
      return "per-session limit on iovs (1024)";
    case FGDS_LIMIT_SESSION_RINGS:
      return "per-session limit on iors (64)";
    case FGDS_LIMIT_SESSION_FILES:
      return "per-session limit on registered files (65536)";
    case FGDS_LIMIT_IOV_SIZE:
      return "limit on the size of one iov (1 TiB)";
    case FGDS_LIMIT_UNALLOCATED:
      return "memory not allocated: an iov or ior must have every page "
             "allocated by its owner before registration (fallocate), so "
             "that the owner pays for it";
    case FGDS_LIMIT_USER_FILES:
      return "per-user limit on registered files, over all the user's "
             "sessions (fgds mount --user-files)";
    case FGDS_LIMIT_DAEMON_FILES:
      return "daemon-wide limit on registered files of all users, below "
             "the daemon's descriptor limit (fgds mount --daemon-files)";
  }
  return "unknown limit";
}

}  // namespace fgds
