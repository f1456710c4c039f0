// File: tests/lib/posix_acl.h
//
// POSIX ACLs in the form the kernel takes them through setxattr(2)
// (system.posix_acl_access / system.posix_acl_default, linux/
// posix_acl_xattr.h), so tests need no libacl.
//
// Example:
//   std::string acl = AclXattr({{ACL_USER_OBJ, 6}, {ACL_USER, 0, bob.uid},
//                               {ACL_GROUP_OBJ, 4}, {ACL_MASK, 4},
//                               {ACL_OTHER, 4}});
//   setxattr(path, "system.posix_acl_access", acl.data(), acl.size(), 0);
#ifndef FGDS_TESTS_LIB_POSIX_ACL_H_
#define FGDS_TESTS_LIB_POSIX_ACL_H_

#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>

namespace fgds::testing {

struct AclEntry {
  uint16_t tag;   // ACL_USER_OBJ, ACL_USER, ACL_GROUP_OBJ, ...
  uint16_t perm;  // rwx as 4|2|1
  // The uid or gid of ACL_USER and ACL_GROUP entries.
  uint32_t id = static_cast<uint32_t>(ACL_UNDEFINED_ID);
};

// The xattr value of `entries`, which must be in the kernel's order (by
// tag, then id).
inline std::string AclXattr(std::initializer_list<AclEntry> entries) {
  std::string out(sizeof(posix_acl_xattr_header), '\0');
  posix_acl_xattr_header header = {};
  header.a_version = POSIX_ACL_XATTR_VERSION;
  std::memcpy(out.data(), &header, sizeof(header));
  for (const AclEntry& e : entries) {
    posix_acl_xattr_entry x = {};
    x.e_tag = e.tag;
    x.e_perm = e.perm;
    x.e_id = e.id;
    out.append(reinterpret_cast<const char*>(&x), sizeof(x));
  }
  return out;
}

inline constexpr char kAclAccess[] = "system.posix_acl_access";
inline constexpr char kAclDefault[] = "system.posix_acl_default";

}  // namespace fgds::testing

#endif  // FGDS_TESTS_LIB_POSIX_ACL_H_
