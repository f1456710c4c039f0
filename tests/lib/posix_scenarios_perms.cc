// Scenarios for permission checks and ownership of new files, run in
// children that dropped from root to nobody (65534:65534, no supplementary
// groups), or to the test user fgds-bob where an ACL names him. The mount
// runs with default_permissions, so the kernel checks the attributes the
// daemon reports, and the POSIX ACLs it reads from the daemon; creation
// must happen with the caller's uid and gid.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "tests/lib/posix_acl.h"
#include "tests/lib/posix_child.h"
#include "tests/lib/posix_scenarios.h"
#include "tests/lib/test_users.h"

namespace fgds::testing {
namespace {

bool OwnedBy(const std::optional<struct stat>& st, uid_t uid, gid_t gid) {
  return st && st->st_uid == uid && st->st_gid == gid;
}

// Expects each result to be the matching errno (0 = success).
void ExpectAll(Trace& t, const std::vector<SysResult>& results,
               std::initializer_list<int> errs) {
  t.Expect(results.size() == errs.size(),
           absl::StrCat("child made ", results.size(), " calls, expected ",
                        errs.size()));
  size_t i = 0;
  for (int err : errs) {
    if (i >= results.size()) break;
    if (err == 0) {
      t.ExpectOk(results[i]);
    } else {
      t.ExpectErrno(results[i], err);
    }
    ++i;
  }
}

void OtherUserDenied(Trace& t) {
  // Root's files, as an unprivileged user sees them.
  t.ExpectOk(FGDS_SYS(t, mkdir("ro", 0755)));
  t.ExpectOk(t.CreateFile("ro/f", "root file"));
  t.ExpectOk(t.CreateFile("secret", "s", 0600));
  t.ExpectOk(t.CreateFile("pub", "p", 0644));
  const struct timespec pub_times[2] = {{1000000000, 1}, {1000000000, 2}};
  t.ExpectOk(FGDS_SYS(t, utimensat(AT_FDCWD, "pub", pub_times, 0)));
  t.ExpectOk(FGDS_SYS(t, mkdir("closed", 0700)));
  t.ExpectOk(t.CreateFile("closed/in", "i"));
  t.ExpectOk(t.CreateFile("grp", "g", 0640));
  t.ExpectOk(FGDS_SYS(t, chown("grp", 0, 65534)));
  t.ExpectOk(t.CreateFile("pubw", "writable"));
  t.ExpectOk(FGDS_SYS(t, chmod("pubw", 0666)));
  std::vector<SysResult> r = RunAs(t, kNobody, [](ChildLog& log) {
    static const struct timespec times[2] = {{1, 0}, {2, 0}};
    FGDS_CHILD_SYS(log, open("ro/new", O_CREAT | O_WRONLY, 0644));
    FGDS_CHILD_SYS(log, mkdir("ro/newdir", 0755));
    FGDS_CHILD_SYS(log, mknod("ro/fifo", S_IFIFO | 0644, 0));
    FGDS_CHILD_SYS(log, symlink("x", "ro/l"));
    FGDS_CHILD_SYS(log, unlink("ro/f"));
    FGDS_CHILD_SYS(log, rename("ro/f", "ro/g"));
    FGDS_CHILD_SYS(log, open("secret", O_RDONLY));
    FGDS_CHILD_SYS(log, open("pub", O_WRONLY));
    FGDS_CHILD_SYS(log, open("pub", O_RDONLY | O_TRUNC));
    FGDS_CHILD_SYS(log, truncate("pub", 0));
    FGDS_CHILD_SYS(log, chmod("pub", 0666));
    FGDS_CHILD_SYS(log, chown("pub", 65534, 65534));
    FGDS_CHILD_SYS(log, chown("pub", -1, 65534));
    FGDS_CHILD_SYS(log, utimensat(AT_FDCWD, "pub", times, 0));
    FGDS_CHILD_SYS(log, utimensat(AT_FDCWD, "pub", nullptr, 0));
    FGDS_CHILD_SYS(log, setxattr("pub", "user.x", "x", 1, 0));
    FGDS_CHILD_SYS(log, getxattr("secret", "user.x", nullptr, 0));
    FGDS_CHILD_SYS(log, open("closed", O_RDONLY | O_DIRECTORY));
    FGDS_CHILD_SYS(log, access("closed/in", F_OK));
    FGDS_CHILD_SYS(log, access("secret", R_OK));
    FGDS_CHILD_SYS(log, access("pub", W_OK));
    FGDS_CHILD_SYS(log, open("ro/f", O_WRONLY | O_APPEND));
    // Allowed: read a world-readable file, read through the group.
    long fd = FGDS_CHILD_SYS(log, open("pub", O_RDONLY));
    FGDS_CHILD_SYS(log, close(fd));
    fd = FGDS_CHILD_SYS(log, open("grp", O_RDONLY));
    FGDS_CHILD_SYS(log, close(fd));
    FGDS_CHILD_SYS(log, open("grp", O_WRONLY));
    // Write permission without ownership: data and "now" times only.
    FGDS_CHILD_SYS(log, truncate("pubw", 3));
    fd = FGDS_CHILD_SYS(log, open("pubw", O_WRONLY | O_TRUNC));
    FGDS_CHILD_SYS(log, write(static_cast<int>(fd), "xy", 2));
    FGDS_CHILD_SYS(log, close(fd));
    FGDS_CHILD_SYS(log, utimensat(AT_FDCWD, "pubw", nullptr, 0));
    FGDS_CHILD_SYS(log, utimensat(AT_FDCWD, "pubw", times, 0));
    FGDS_CHILD_SYS(log, chmod("pubw", 0600));
  });
  ExpectAll(t, r, {EACCES, EACCES, EACCES, EACCES, EACCES, EACCES, EACCES,
                   EACCES, EACCES, EACCES, EPERM,  EPERM,  EPERM,  EPERM,
                   EACCES, EACCES, EACCES, EACCES, EACCES, EACCES, EACCES,
                   EACCES, 0,      0,      0,      0,      EACCES, 0,
                   0,      0,      0,      0,      EPERM,  EPERM});
  // Nothing changed.
  t.ReadDir("ro");
  t.Expect(IsA(t.Lstat("pub"), S_IFREG, 0644) && OwnedBy(t.Lstat("pub"), 0, 0),
           "pub untouched");
  t.Expect(t.Content("pub") == "p", "pub content untouched");
  t.Expect(
      IsA(t.Lstat("pubw"), S_IFREG, 0666) && OwnedBy(t.Lstat("pubw"), 0, 0),
      "pubw keeps mode and owner");
  t.Expect(t.Content("pubw") == "xy", "pubw rewritten by the other user");
  // Reading may move atime; mtime must still be the explicit one.
  struct stat st;
  t.Expect(lstat("pub", &st) == 0 && st.st_mtim.tv_sec == 1000000000 &&
               st.st_mtim.tv_nsec == 2,
           "pub mtime untouched");
  t.Note("pub mtime", absl::StrCat(st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec));
  t.UserXattrs("pub");
}

void StickyDir(Trace& t) {
  // A sticky world-writable directory owned by someone else, holding a file
  // and a directory of a third user.
  t.ExpectOk(FGDS_SYS(t, mkdir("sticky", 0755)));
  t.ExpectOk(FGDS_SYS(t, chmod("sticky", 01777)));
  t.ExpectOk(FGDS_SYS(t, chown("sticky", 1234, 1234)));
  t.ExpectOk(t.CreateFile("sticky/other", "o"));
  t.ExpectOk(FGDS_SYS(t, chmod("sticky/other", 0666)));
  t.ExpectOk(FGDS_SYS(t, chown("sticky/other", 1235, 1235)));
  t.ExpectOk(FGDS_SYS(t, mkdir("sticky/odir", 0777)));
  t.ExpectOk(FGDS_SYS(t, chown("sticky/odir", 1235, 1235)));
  std::vector<SysResult> r = RunAs(t, kNobody, [](ChildLog& log) {
    FGDS_CHILD_SYS(log, unlink("sticky/other"));
    FGDS_CHILD_SYS(log, rename("sticky/other", "sticky/mine"));
    FGDS_CHILD_SYS(log, rmdir("sticky/odir"));
    // Writing the 0666 file is fine; only the name is protected.
    long fd = FGDS_CHILD_SYS(log, open("sticky/other", O_WRONLY | O_APPEND));
    FGDS_CHILD_SYS(log, write(static_cast<int>(fd), "+", 1));
    FGDS_CHILD_SYS(log, close(fd));
    // Its own entries it may remove.
    fd = FGDS_CHILD_SYS(log, open("sticky/mine", O_CREAT | O_WRONLY, 0644));
    FGDS_CHILD_SYS(log, close(fd));
    FGDS_CHILD_SYS(log, rename("sticky/mine", "sticky/mine2"));
    FGDS_CHILD_SYS(log, mkdir("sticky/mydir", 0755));
    FGDS_CHILD_SYS(log, rmdir("sticky/mydir"));
    // Replacing someone else's entry by rename is refused too.
    FGDS_CHILD_SYS(log, rename("sticky/mine2", "sticky/other"));
    FGDS_CHILD_SYS(log, unlink("sticky/mine2"));
  });
  ExpectAll(t, r, {EPERM, EPERM, EPERM, 0, 0, 0, 0, 0, 0, 0, 0, EPERM, 0});
  t.ReadDir("sticky");
  t.Content("sticky/other");
  t.Lstat("sticky/other");
}

void NewFileOwnership(Trace& t) {
  t.ExpectOk(FGDS_SYS(t, mkdir("shared", 0755)));
  t.ExpectOk(FGDS_SYS(t, chmod("shared", 0777)));
  std::vector<SysResult> r = RunAs(t, kNobody, [](ChildLog& log) {
    long fd = FGDS_CHILD_SYS(
        log, open("shared/f", O_CREAT | O_EXCL | O_WRONLY, 0644));
    FGDS_CHILD_SYS(log, write(static_cast<int>(fd), "mine", 4));
    FGDS_CHILD_SYS(log, close(fd));
    FGDS_CHILD_SYS(log, mkdir("shared/d", 0755));
    FGDS_CHILD_SYS(log, symlink("f", "shared/l"));
    FGDS_CHILD_SYS(log, mknod("shared/p", S_IFIFO | 0644, 0));
    FGDS_CHILD_SYS(log, link("shared/f", "shared/f2"));
    // A creator may write through the descriptor of a file it created
    // read-only, but may not reopen it for writing.
    fd = FGDS_CHILD_SYS(log, open("shared/ro", O_CREAT | O_RDWR, 0444));
    FGDS_CHILD_SYS(log, write(static_cast<int>(fd), "w", 1));
    FGDS_CHILD_SYS(log, close(fd));
    FGDS_CHILD_SYS(log, open("shared/ro", O_RDWR));
    // What an owner may and may not do.
    FGDS_CHILD_SYS(log, chmod("shared/f", 0600));
    FGDS_CHILD_SYS(log, chown("shared/f", 0, -1));
    FGDS_CHILD_SYS(log, chown("shared/f", -1, 0));
    FGDS_CHILD_SYS(log, chown("shared/f", -1, 65534));
    FGDS_CHILD_SYS(log, truncate("shared/f", 2));
    static const struct timespec times[2] = {{1000, 1}, {2000, 2}};
    FGDS_CHILD_SYS(log, utimensat(AT_FDCWD, "shared/f", times, 0));
    FGDS_CHILD_SYS(log, setxattr("shared/f", "user.own", "y", 1, 0));
    // An unprivileged write clears set-user-ID.
    fd = FGDS_CHILD_SYS(log, open("shared/suid", O_CREAT | O_WRONLY, 0755));
    FGDS_CHILD_SYS(log, fchmod(static_cast<int>(fd), 04755));
    FGDS_CHILD_SYS(log, write(static_cast<int>(fd), "x", 1));
    FGDS_CHILD_SYS(log, close(fd));
  });
  ExpectAll(t, r, {0, 0,     0,     0, 0, 0, 0, 0, 0, 0, EACCES,
                   0, EPERM, EPERM, 0, 0, 0, 0, 0, 0, 0, 0});
  for (const char* name : {"shared/f", "shared/d", "shared/l", "shared/p",
                           "shared/ro", "shared/suid"}) {
    t.Expect(OwnedBy(t.Lstat(name), 65534, 65534),
             absl::StrCat(name, " is owned by 65534:65534"));
  }
  auto f = t.Lstat("shared/f");
  t.Expect(f && f->st_nlink == 2, "link by the owner");
  t.Expect(IsA(t.Lstat("shared/ro"), S_IFREG, 0444), "read-only file");
  t.Times("shared/f");  // before reading, which may move atime
  t.Content("shared/ro");
  t.Content("shared/f");
  t.UserXattrs("shared/f");
  t.Expect(IsA(t.Lstat("shared/suid"), S_IFREG, 0755),
           "write by an unprivileged owner clears S_ISUID");
  t.ReadDir("shared");
}

void SetgidDirOwnership(Trace& t) {
  // New entries in a set-group-ID directory take the directory's group;
  // new subdirectories inherit the bit.
  t.ExpectOk(FGDS_SYS(t, mkdir("sg", 0755)));
  t.ExpectOk(FGDS_SYS(t, chown("sg", 0, 1234)));
  t.ExpectOk(FGDS_SYS(t, chmod("sg", 02777)));
  std::vector<SysResult> r = RunAs(t, kNobody, [](ChildLog& log) {
    long fd = FGDS_CHILD_SYS(log, open("sg/f", O_CREAT | O_WRONLY, 0644));
    FGDS_CHILD_SYS(log, close(fd));
    FGDS_CHILD_SYS(log, mkdir("sg/d", 0755));
    // Not a member of group 1234: S_ISGID is stripped from a new file.
    fd = FGDS_CHILD_SYS(log, open("sg/x", O_CREAT | O_WRONLY, 02755));
    FGDS_CHILD_SYS(log, close(fd));
    FGDS_CHILD_SYS(log, mknod("sg/p", S_IFIFO | 0644, 0));
    FGDS_CHILD_SYS(log, symlink("f", "sg/l"));
    // The owner may chmod, but S_ISGID for a foreign group is dropped.
    FGDS_CHILD_SYS(log, chmod("sg/f", 02755));
  });
  ExpectAll(t, r, {0, 0, 0, 0, 0, 0, 0, 0});
  auto f = t.Lstat("sg/f");
  t.Expect(OwnedBy(f, 65534, 1234), "sg/f group 1234");
  t.Expect(IsA(f, S_IFREG, 0755), "chmod by a non-member drops S_ISGID");
  auto d = t.Lstat("sg/d");
  t.Expect(OwnedBy(d, 65534, 1234) && IsA(d, S_IFDIR, 02755),
           "sg/d inherits group and S_ISGID");
  t.Expect(IsA(t.Lstat("sg/x"), S_IFREG, 0755), "S_ISGID stripped");
  t.Lstat("sg/p");
  t.Lstat("sg/l");
  // Root creating there gets the group too.
  t.ExpectOk(t.CreateFile("sg/root", "r"));
  t.Expect(OwnedBy(t.Lstat("sg/root"), 0, 1234), "root's file group 1234");
}

// Records the ACL `name` of `path` (hex, or the errno).
void NoteAcl(Trace& t, const char* path, const char* name) {
  char buf[512];
  ssize_t n = getxattr(path, name, buf, sizeof(buf));
  t.Note(absl::StrCat(name, " of ", path),
         n >= 0 ? absl::BytesToHexString(
                      absl::string_view(buf, static_cast<size_t>(n)))
                : absl::StrCat("errno ", errno));
}

// The real unprivileged user the ACL scenarios name (a uid with a passwd
// entry, as ACL tools and the kernel's group lookups expect).
std::optional<Credentials> Bob(Trace& t) {
  absl::StatusOr<TestUser> bob = EnsureTestUser(kBob);
  t.Expect(bob.ok(), absl::StrCat("test user: ", bob.status().ToString()));
  if (!bob.ok()) return std::nullopt;
  return Credentials{bob->uid, bob->gid};
}

void AclNamedUsers(Trace& t) {
  // Named-user entries deny and grant beyond the mode bits; the mask
  // limits them, and chmod rewrites the mask.
  std::optional<Credentials> bob = Bob(t);
  if (!bob) return;
  const std::string deny = AclXattr({{ACL_USER_OBJ, 6},
                                     {ACL_USER, 0, bob->uid},
                                     {ACL_GROUP_OBJ, 4},
                                     {ACL_MASK, 4},
                                     {ACL_OTHER, 4}});
  const std::string grant = AclXattr({{ACL_USER_OBJ, 6},
                                      {ACL_USER, 4, bob->uid},
                                      {ACL_GROUP_OBJ, 0},
                                      {ACL_MASK, 4},
                                      {ACL_OTHER, 0}});
  t.ExpectOk(t.CreateFile("deny", "d", 0644));
  t.ExpectOk(
      FGDS_SYS(t, setxattr("deny", kAclAccess, deny.data(), deny.size(), 0)));
  t.ExpectOk(t.CreateFile("grant", "g", 0600));
  t.ExpectOk(FGDS_SYS(
      t, setxattr("grant", kAclAccess, grant.data(), grant.size(), 0)));
  t.Expect(IsA(t.Lstat("grant"), S_IFREG, 0640), "mode shows the mask");
  NoteAcl(t, "deny", kAclAccess);
  NoteAcl(t, "grant", kAclAccess);
  std::vector<SysResult> r = RunAs(t, *bob, [](ChildLog& log) {
    FGDS_CHILD_SYS(log, open("deny", O_RDONLY));
    FGDS_CHILD_SYS(log, access("deny", R_OK));
    long fd = FGDS_CHILD_SYS(log, open("grant", O_RDONLY));
    FGDS_CHILD_SYS(log, close(static_cast<int>(fd)));
    FGDS_CHILD_SYS(log, open("grant", O_WRONLY));
  });
  ExpectAll(t, r, {EACCES, EACCES, 0, 0, EACCES});
  // Another user gets the "other" class: the reverse.
  r = RunAs(t, kNobody, [](ChildLog& log) {
    long fd = FGDS_CHILD_SYS(log, open("deny", O_RDONLY));
    FGDS_CHILD_SYS(log, close(static_cast<int>(fd)));
    FGDS_CHILD_SYS(log, open("grant", O_RDONLY));
  });
  ExpectAll(t, r, {0, 0, EACCES});
  // chmod sets the mask: group bits 0 take bob's read away.
  t.ExpectOk(FGDS_SYS(t, chmod("grant", 0600)));
  NoteAcl(t, "grant", kAclAccess);
  r = RunAs(t, *bob, [](ChildLog& log) {
    FGDS_CHILD_SYS(log, open("grant", O_RDONLY));
  });
  ExpectAll(t, r, {EACCES});
  // Removing the ACL leaves the mode alone.
  t.ExpectOk(FGDS_SYS(t, removexattr("deny", kAclAccess)));
  NoteAcl(t, "deny", kAclAccess);
  r = RunAs(t, *bob, [](ChildLog& log) {
    long fd = FGDS_CHILD_SYS(log, open("deny", O_RDONLY));
    FGDS_CHILD_SYS(log, close(static_cast<int>(fd)));
  });
  ExpectAll(t, r, {0, 0});
  // An owner outside the file's group who sets an access ACL loses
  // S_ISGID, as with chmod.
  t.ExpectOk(t.CreateFile("sgid", "s", 0755));
  t.ExpectOk(FGDS_SYS(t, chown("sgid", bob->uid, 0)));
  t.ExpectOk(FGDS_SYS(t, chmod("sgid", 02755)));
  const std::string own = AclXattr({{ACL_USER_OBJ, 7},
                                    {ACL_USER, 5, bob->uid},
                                    {ACL_GROUP_OBJ, 5},
                                    {ACL_MASK, 5},
                                    {ACL_OTHER, 5}});
  r = RunAs(t, *bob, [&own](ChildLog& log) {
    FGDS_CHILD_SYS(log,
                   setxattr("sgid", kAclAccess, own.data(), own.size(), 0));
  });
  ExpectAll(t, r, {0});
  t.Expect(IsA(t.Lstat("sgid"), S_IFREG, 0755), "S_ISGID dropped");
  // Root keeps it.
  t.ExpectOk(FGDS_SYS(t, chmod("sgid", 02755)));
  t.ExpectOk(
      FGDS_SYS(t, setxattr("sgid", kAclAccess, own.data(), own.size(), 0)));
  t.Expect(IsA(t.Lstat("sgid"), S_IFREG, 02755), "root keeps S_ISGID");
}

void AclDefaultInheritance(Trace& t) {
  // A directory's default ACL is inherited by what is created in it, and
  // replaces the creator's umask (022 here); elsewhere the umask applies.
  std::optional<Credentials> bob = Bob(t);
  if (!bob) return;
  const std::string acl = AclXattr({{ACL_USER_OBJ, 7},
                                    {ACL_USER, 7, bob->uid},
                                    {ACL_GROUP_OBJ, 5},
                                    {ACL_MASK, 7},
                                    {ACL_OTHER, 5}});
  t.ExpectOk(FGDS_SYS(t, mkdir("inherit", 0755)));
  t.ExpectOk(
      FGDS_SYS(t, setxattr("inherit", kAclAccess, acl.data(), acl.size(), 0)));
  t.ExpectOk(
      FGDS_SYS(t, setxattr("inherit", kAclDefault, acl.data(), acl.size(), 0)));
  t.ExpectOk(FGDS_SYS(t, mkdir("plain", 0777)));
  t.ExpectOk(FGDS_SYS(t, chmod("plain", 0777)));
  std::vector<SysResult> r = RunAs(t, *bob, [](ChildLog& log) {
    long fd = FGDS_CHILD_SYS(
        log, open("inherit/f", O_CREAT | O_EXCL | O_WRONLY, 0666));
    FGDS_CHILD_SYS(log, close(static_cast<int>(fd)));
    FGDS_CHILD_SYS(log, mkdir("inherit/d", 0777));
    FGDS_CHILD_SYS(log, mknod("inherit/p", S_IFIFO | 0666, 0));
    fd =
        FGDS_CHILD_SYS(log, open("plain/f", O_CREAT | O_EXCL | O_WRONLY, 0666));
    FGDS_CHILD_SYS(log, close(static_cast<int>(fd)));
    FGDS_CHILD_SYS(log, mkdir("plain/d", 0777));
  });
  ExpectAll(t, r, {0, 0, 0, 0, 0, 0, 0});
  t.Expect(IsA(t.Lstat("inherit/f"), S_IFREG, 0664),
           "default ACL, not the umask");
  t.Expect(IsA(t.Lstat("inherit/d"), S_IFDIR, 0775),
           "default ACL, not the umask");
  t.Lstat("inherit/p");
  t.Expect(IsA(t.Lstat("plain/f"), S_IFREG, 0644), "umask");
  t.Expect(IsA(t.Lstat("plain/d"), S_IFDIR, 0755), "umask");
  for (const char* path : {"inherit/f", "inherit/d", "inherit/p"}) {
    NoteAcl(t, path, kAclAccess);
  }
  NoteAcl(t, "inherit/d", kAclDefault);
  NoteAcl(t, "plain/f", kAclAccess);
}

}  // namespace

std::vector<Scenario> PermissionScenarios() {
  return {
      {"OtherUserDenied", OtherUserDenied},
      {"StickyDir", StickyDir},
      {"NewFileOwnership", NewFileOwnership},
      {"SetgidDirOwnership", SetgidDirOwnership},
      {"AclNamedUsers", AclNamedUsers},
      {"AclDefaultInheritance", AclDefaultInheritance},
  };
}

}  // namespace fgds::testing
