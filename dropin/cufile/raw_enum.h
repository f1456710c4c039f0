// File: dropin/cufile/raw_enum.h
//
// RawEnum reads an enum field a C caller filled as the int it really is.
// C lets a program store any int in an enum (a forged opcode, a future
// handle type); loading such a value as the C++ enum type is undefined
// behaviour (UBSan flags it), so the drop-in validates the raw int.
#ifndef FGDS_DROPIN_CUFILE_RAW_ENUM_H_
#define FGDS_DROPIN_CUFILE_RAW_ENUM_H_

#include <cstring>
#include <type_traits>

namespace fgds::cufile {

template <typename Enum>
int RawEnum(const Enum& field) {
  static_assert(std::is_enum_v<Enum> && sizeof(Enum) == sizeof(int));
  int value;
  std::memcpy(&value, &field, sizeof(value));
  return value;
}

}  // namespace fgds::cufile

#endif  // FGDS_DROPIN_CUFILE_RAW_ENUM_H_
