// File: tests/lib/test_users.h
//
// Real unprivileged users for tests that attack the daemon as another local
// user would. Root bypasses permission checks, and uid numbers without a
// passwd entry hide bugs that look users up (supplementary groups, names),
// so the tests create real accounts: "fgds-alice" and "fgds-bob", each with
// its own primary group, no home and no login shell. Creating them is
// idempotent and safe to run from several test processes at once.
//
// Example:
//   absl::StatusOr<TestUser> bob = EnsureTestUser(kBob);
//   if (!bob.ok()) GTEST_SKIP() << bob.status();
//   pid_t pid = fork();
//   if (pid == 0) { if (BecomeUser(*bob) != 0) _exit(126); ... }
#ifndef FGDS_TESTS_LIB_TEST_USERS_H_
#define FGDS_TESTS_LIB_TEST_USERS_H_

#include <sys/types.h>

#include <string>

#include "absl/status/statusor.h"

namespace fgds::testing {

inline constexpr char kAlice[] = "fgds-alice";
inline constexpr char kBob[] = "fgds-bob";

struct TestUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
};

// Looks `name` up, creating the account (useradd --system) if missing.
// Fails (never skips by itself) when not root or useradd is missing.
absl::StatusOr<TestUser> EnsureTestUser(const std::string& name);

// Drops this process to `user`: supplementary groups, gid, then uid. For a
// forked child: async-signal-safe calls only. Returns 0 or -errno.
int BecomeUser(const TestUser& user);

}  // namespace fgds::testing

#endif  // FGDS_TESTS_LIB_TEST_USERS_H_
