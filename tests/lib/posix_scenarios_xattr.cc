// Scenarios for extended attributes in the user.* namespace.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "tests/lib/posix_scenarios.h"

namespace fgds::testing {
namespace {

// Records getxattr's value (escaped) and returns it; "" on failure.
std::string Value(Trace& t, const char* path, const char* name) {
  char buf[8192];
  SysResult r = t.Call(absl::StrCat("getxattr(", path, ", ", name, ")"),
                       [&] { return getxattr(path, name, buf, sizeof(buf)); });
  if (!r.ok()) return "";
  std::string value(buf, r.rc);
  t.Note("  value", absl::StrCat("\"", absl::CEscape(value.substr(0, 64)),
                                 value.size() > 64 ? "...\"" : "\""));
  return value;
}

void XattrBasics(Trace& t) {
  char buf[64];
  t.ExpectOk(t.CreateFile("f", "data"));
  t.UserXattrs("f");
  t.ExpectOk(FGDS_SYS(t, setxattr("f", "user.a", "va", 2, 0)));
  t.ExpectRc(FGDS_SYS(t, getxattr("f", "user.a", nullptr, 0)), 2);
  t.Expect(Value(t, "f", "user.a") == "va", "user.a reads back");
  t.ExpectErrno(FGDS_SYS(t, setxattr("f", "user.a", "x", 1, XATTR_CREATE)),
                EEXIST);
  t.ExpectErrno(FGDS_SYS(t, setxattr("f", "user.b", "x", 1, XATTR_REPLACE)),
                ENODATA);
  t.ExpectOk(FGDS_SYS(t, setxattr("f", "user.a", "vvv", 3, XATTR_REPLACE)));
  t.Expect(Value(t, "f", "user.a") == "vvv", "XATTR_REPLACE replaced");
  t.ExpectOk(FGDS_SYS(t, setxattr("f", "user.b", "new", 3, XATTR_CREATE)));
  t.ExpectErrno(FGDS_SYS(t, getxattr("f", "user.nope", buf, sizeof(buf))),
                ENODATA);
  t.ExpectErrno(FGDS_SYS(t, getxattr("f", "user.a", buf, 1)), ERANGE);
  // Empty and binary values.
  t.ExpectOk(FGDS_SYS(t, setxattr("f", "user.empty", "", 0, 0)));
  t.ExpectRc(FGDS_SYS(t, getxattr("f", "user.empty", buf, sizeof(buf))), 0);
  t.ExpectOk(FGDS_SYS(t, setxattr("f", "user.bin", "x\0y\0", 4, 0)));
  t.Expect(Value(t, "f", "user.bin") == std::string("x\0y\0", 4),
           "binary value with NULs round-trips");
  std::string big = Pattern(3000, 4);
  t.ExpectOk(FGDS_SYS(t, setxattr("f", "user.big", big.data(), big.size(), 0)));
  t.Expect(Value(t, "f", "user.big") == big, "3000-byte value round-trips");
  t.UserXattrs("f");
  // listxattr: the size query covers the whole list, a short buffer fails.
  ssize_t need = FGDS_SYS(t, listxattr("f", nullptr, 0)).rc;
  t.Expect(need > 0, "listxattr size query");
  t.ExpectErrno(FGDS_SYS(t, listxattr("f", buf, 1)), ERANGE);
  // removexattr.
  t.ExpectOk(FGDS_SYS(t, removexattr("f", "user.a")));
  t.ExpectErrno(FGDS_SYS(t, removexattr("f", "user.a")), ENODATA);
  t.ExpectErrno(FGDS_SYS(t, getxattr("f", "user.a", buf, sizeof(buf))),
                ENODATA);
  t.UserXattrs("f");
  // Through a file descriptor.
  int fd = FGDS_SYS(t, open("f", O_RDONLY)).fd();
  t.ExpectOk(FGDS_SYS(t, fsetxattr(fd, "user.fd", "F", 1, 0)));
  t.ExpectRc(FGDS_SYS(t, fgetxattr(fd, "user.fd", buf, sizeof(buf))), 1);
  t.Expect(FGDS_SYS(t, flistxattr(fd, nullptr, 0)).rc > 0, "flistxattr");
  t.ExpectOk(FGDS_SYS(t, fremovexattr(fd, "user.b")));
  FGDS_SYS(t, close(fd));
  t.UserXattrs("f");
  // Attributes survive a rename and are shared by hard links.
  t.ExpectOk(FGDS_SYS(t, rename("f", "g")));
  t.ExpectOk(FGDS_SYS(t, link("g", "h")));
  t.UserXattrs("h");
  t.Expect(Value(t, "h", "user.fd") == "F", "xattr visible through a link");
  t.Content("g");  // and the data is untouched
}

void XattrErrors(Trace& t) {
  char buf[64];
  t.ExpectOk(t.CreateFile("f", "data"));
  t.ExpectOk(FGDS_SYS(t, mkdir("d", 0755)));
  t.ExpectOk(FGDS_SYS(t, setxattr("d", "user.dir", "D", 1, 0)));
  t.Expect(Value(t, "d", "user.dir") == "D", "xattr on a directory");
  t.UserXattrs("d");
  // user.* is refused on symlinks themselves; the plain calls follow them.
  t.ExpectOk(FGDS_SYS(t, symlink("f", "l")));
  t.ExpectErrno(FGDS_SYS(t, lsetxattr("l", "user.x", "x", 1, 0)), EPERM);
  t.ExpectErrno(FGDS_SYS(t, lgetxattr("l", "user.x", buf, sizeof(buf))),
                ENODATA);
  t.ExpectOk(FGDS_SYS(t, setxattr("l", "user.via", "L", 1, 0)));
  t.Expect(Value(t, "f", "user.via") == "L", "setxattr follows the symlink");
  // ... and on special files.
  t.ExpectOk(FGDS_SYS(t, mkfifo("p", 0644)));
  t.ExpectErrno(FGDS_SYS(t, setxattr("p", "user.x", "x", 1, 0)), EPERM);
  // Bad names and sizes.
  t.ExpectErrno(FGDS_SYS(t, setxattr("f", "foo.bar", "x", 1, 0)), EOPNOTSUPP);
  t.ExpectErrno(FGDS_SYS(t, getxattr("f", "foo.bar", buf, sizeof(buf))),
                EOPNOTSUPP);
  std::string long_name = "user." + std::string(251, 'n');  // 256 bytes
  t.ExpectErrno(FGDS_SYS(t, setxattr("f", long_name.c_str(), "x", 1, 0)),
                ERANGE);
  t.ExpectErrno(FGDS_SYS(t, setxattr("f", "", "x", 1, 0)), ERANGE);
  std::string max_name = "user." + std::string(250, 'm');  // 255 bytes
  t.ExpectOk(FGDS_SYS(t, setxattr("f", max_name.c_str(), "x", 1, 0)));
  std::string huge(65537, 'h');
  t.ExpectErrno(
      FGDS_SYS(t, setxattr("f", "user.huge", huge.data(), huge.size(), 0)),
      E2BIG);
  // Both flags: unspecified, recorded for comparison only.
  FGDS_SYS(t, setxattr("f", "user.x", "x", 1, XATTR_CREATE | XATTR_REPLACE));
  t.ExpectErrno(FGDS_SYS(t, setxattr("missing", "user.x", "x", 1, 0)), ENOENT);
  t.ExpectErrno(FGDS_SYS(t, getxattr("missing", "user.x", buf, sizeof(buf))),
                ENOENT);
  t.ExpectErrno(FGDS_SYS(t, listxattr("missing", buf, sizeof(buf))), ENOENT);
  t.ExpectErrno(FGDS_SYS(t, removexattr("f", "user.never")), ENODATA);
  t.UserXattrs("f");
}

}  // namespace

std::vector<Scenario> XattrScenarios() {
  return {
      {"XattrBasics", XattrBasics},
      {"XattrErrors", XattrErrors},
  };
}

}  // namespace fgds::testing
