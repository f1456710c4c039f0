// File: tests/lib/fsx_model.h
//
// The in-memory side of the fsx exerciser (tests/lib/fsx.h): the data
// pattern every write uses, and FileModel, the bytes a file must hold after
// the operations applied so far. Nothing here does I/O, so the model can be
// trusted independently of the filesystem under test.
//
// Example:
//   FileModel model;
//   std::vector<uint8_t> buf(100);
//   FillPattern(seed, /*op=*/7, /*offset=*/4096, buf.data(), buf.size());
//   model.Write(/*op=*/7, 4096, buf.data(), buf.size());  // [0, 4096) = hole
//
// Thread safety: const methods may run concurrently; anything else needs
// exclusive access.
#ifndef FGDS_TESTS_LIB_FSX_MODEL_H_
#define FGDS_TESTS_LIB_FSX_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fgds::testing::fsx {

// PatternByte returns the byte op number `op` writes at file offset `offset`
// in a run seeded with `seed`. The offset is part of the input so that data
// landing at the wrong offset is caught, and the op number so that a bad
// byte can be traced back to the op that produced it (see MatchingOp).
uint8_t PatternByte(uint64_t seed, uint64_t op, uint64_t offset);

// FillPattern writes PatternByte(seed, op, offset + i) into buf[i] for
// i < len.
void FillPattern(uint64_t seed, uint64_t op, uint64_t offset, uint8_t* buf,
                 size_t len);

// MatchingOp returns the op number in [1, max_op] whose pattern equals all
// `len` bytes of `actual` at `offset`, or 0 if none does. Used only to
// explain a mismatch (e.g. "these are op #12's bytes: stale data"), so a
// linear scan is fine. REQUIRES: len >= 4, so that chance matches are rare.
uint64_t MatchingOp(uint64_t seed, uint64_t max_op, uint64_t offset,
                    const uint8_t* actual, size_t len);

// FileModel holds the expected contents of one file and, for each byte, the
// number of the op that last changed it (holes and truncate-extensions
// count as changes: they are zeros put there by that op).
class FileModel {
 public:
  uint64_t size() const { return data_.size(); }
  const uint8_t* data() const { return data_.data(); }
  // REQUIRES: offset < size().
  uint32_t last_op(uint64_t offset) const { return last_op_[offset]; }

  // Stores buf[0, len) at `offset`, growing the file (with zeros in any gap
  // past the old end) when the write ends beyond it. `buf` must not point
  // into this model.
  void Write(uint32_t op, uint64_t offset, const uint8_t* buf, size_t len);
  // Sets the size; new bytes are zeros.
  void Truncate(uint32_t op, uint64_t new_size);
  // Zeroes [offset, offset + len), growing the file if `extend` is set and
  // clipping the range at the current size otherwise (punch hole and
  // FALLOC_FL_KEEP_SIZE never change the size).
  void Zero(uint32_t op, uint64_t offset, uint64_t len, bool extend);

  // Returns the index of the first byte of actual[0, len) that differs from
  // the model at `offset`, or -1 if all equal. REQUIRES: offset + len <=
  // size().
  int64_t FirstMismatch(uint64_t offset, const uint8_t* actual,
                        size_t len) const;

 private:
  void Grow(uint32_t op, uint64_t new_size);

  // Invariant: data_.size() == last_op_.size() == the file's size.
  std::vector<uint8_t> data_;
  std::vector<uint32_t> last_op_;
};

}  // namespace fgds::testing::fsx

#endif  // FGDS_TESTS_LIB_FSX_MODEL_H_
