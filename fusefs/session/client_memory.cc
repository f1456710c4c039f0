#include "fusefs/session/client_memory.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace fgds::session {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kStatBlock = 512;  // st_blocks counts 512-byte units

}  // namespace

int SealAllocatedMemfd(int memfd) {
  // Seal first, then look: once sealed, allocated pages can no longer be
  // taken away, so what the check sees stays true.
  if (fcntl(memfd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE) != 0) {
    const int seals = fcntl(memfd, F_GET_SEALS);
    if (seals < 0) return -EINVAL;
    if ((seals & F_SEAL_FUTURE_WRITE) == 0) return -EPERM;
  }
  // The whole file, not only the range we map: st_blocks cannot say where
  // the pages are, and a file with every page allocated has none missing
  // in ours. (It may grow afterwards: pages past our mapping are never
  // touched by the daemon.)
  struct stat st;
  if (fstat(memfd, &st) != 0 || st.st_size < 0) return -EINVAL;
  const uint64_t needed =
      (static_cast<uint64_t>(st.st_size) + kPage - 1) / kPage * kPage;
  if (static_cast<uint64_t>(st.st_blocks) * kStatBlock < needed) {
    return -EINVAL;
  }
  return 0;
}

}  // namespace fgds::session
