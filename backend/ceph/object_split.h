// File: backend/ceph/object_split.h
//
// How a large read or write is cut so that its pieces go to Ceph in
// parallel: at the boundaries of the file's objects, so that each piece is
// one object's I/O (one OSD request) that no other piece waits behind.
// Pure arithmetic, unit-tested without a cluster.
//
// A CephFS layout puts stripe_unit bytes in one object, the next
// stripe_unit in the next of stripe_count objects, and so on; with
// stripe_count 1 (the default) each object holds object_size consecutive
// bytes. So a piece never crosses a multiple of the "granule":
// object_size with one stripe, stripe_unit otherwise, raised to a multiple
// of the stripe unit of at least kMinPiece so that a layout of tiny stripe
// units does not turn one request into thousands.
#ifndef FGDS_BACKEND_CEPH_OBJECT_SPLIT_H_
#define FGDS_BACKEND_CEPH_OBJECT_SPLIT_H_

#include <algorithm>
#include <cstdint>
#include <vector>

namespace fgds::backend {

inline constexpr uint64_t kMinPiece = 1 << 20;

struct Piece {
  uint64_t offset;  // in the file
  uint64_t len;
};

// The granule of a layout (see above); 0 for a layout libcephfs did not
// give (then nothing is split).
constexpr uint64_t SplitGranule(uint64_t stripe_unit, uint64_t stripe_count,
                                uint64_t object_size) {
  if (stripe_unit == 0 || object_size == 0) return 0;
  uint64_t granule = stripe_count <= 1 ? object_size : stripe_unit;
  if (granule < kMinPiece) {
    granule = (kMinPiece + stripe_unit - 1) / stripe_unit * stripe_unit;
  }
  return granule;
}

// [offset, offset + len) cut at the multiples of `granule`, in file order;
// one piece when granule is 0 or the range lies in one granule.
inline std::vector<Piece> SplitAtObjects(uint64_t offset, uint64_t len,
                                         uint64_t granule) {
  std::vector<Piece> pieces;
  if (len == 0) return pieces;
  if (granule == 0) {
    pieces.push_back({offset, len});
    return pieces;
  }
  const uint64_t end = offset + len;
  while (offset < end) {
    const uint64_t boundary = (offset / granule + 1) * granule;
    const uint64_t n = std::min(end, boundary) - offset;
    pieces.push_back({offset, n});
    offset += n;
  }
  return pieces;
}

// The result of a request from its pieces' results (bytes or -errno, in
// file order): the bytes moved before the first piece that fell short
// (end of file, an error), plus what that piece moved; its error only
// when nothing moved before it. As read(2) and write(2) report a range
// that stopped part way.
inline int64_t CombinePieces(const std::vector<Piece>& pieces,
                             const std::vector<int64_t>& results) {
  int64_t done = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const int64_t res = results[i];
    if (res < 0) return done > 0 ? done : res;
    done += res;
    if (static_cast<uint64_t>(res) < pieces[i].len) break;
  }
  return done;
}

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_CEPH_OBJECT_SPLIT_H_
