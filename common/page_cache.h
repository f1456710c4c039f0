// File: common/page_cache.h
//
// Whether a file range is already in the page cache, asked without side
// effects. The engine serves fully cached chunks with a buffered read
// (memory speed) and everything else with O_DIRECT. Asking by reading with
// RWF_NOWAIT is not an option: on current kernels (seen on 6.18) a
// RWF_NOWAIT read of uncached pages starts readahead, so the disk would
// read those pages twice, once for the readahead and once for O_DIRECT.
#ifndef FGDS_COMMON_PAGE_CACHE_H_
#define FGDS_COMMON_PAGE_CACHE_H_

#include <cstdint>

namespace fgds {

// FullyCached returns whether every page of [offset, offset + length),
// clipped to the end of the file, is in the page cache. Uses cachestat(2)
// (Linux 6.5+), else mincore(2) on a temporary mapping; false when neither
// can tell. REQUIRES: offset is a multiple of the page size.
bool FullyCached(int fd, uint64_t offset, uint64_t length);

}  // namespace fgds

#endif  // FGDS_COMMON_PAGE_CACHE_H_
