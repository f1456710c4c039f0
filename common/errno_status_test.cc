#include "common/errno_status.h"

#include <cerrno>

#include "gtest/gtest.h"

namespace fgds {
namespace {

TEST(ErrnoStatusTest, OkIsZero) {
  EXPECT_EQ(StatusToErrno(absl::OkStatus()), 0);
}

// Errnos that share a canonical code must still come back exactly.
TEST(ErrnoStatusTest, PosixErrorRoundTripsExactErrno) {
  for (int err : {ENOENT, EEXIST, ENOTEMPTY, EISDIR, ENOTDIR, EXDEV, EACCES,
                  EPERM, ENAMETOOLONG, ELOOP, EBADF, ENOTCONN, ENOSPC}) {
    absl::Status st = PosixError("op", err);
    EXPECT_FALSE(st.ok());
    EXPECT_EQ(StatusToErrno(st), err) << st;
  }
}

TEST(ErrnoStatusTest, PosixErrorNamesContext) {
  absl::Status st = PosixError("open /nonexistent", ENOENT);
  EXPECT_NE(st.message().find("open /nonexistent"), std::string::npos);
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
}

struct CodeCase {
  absl::StatusCode code;
  int err;
};

TEST(ErrnoStatusTest, CanonicalCodesMapToClosestErrno) {
  const CodeCase kCases[] = {
      {absl::StatusCode::kInvalidArgument, EINVAL},
      {absl::StatusCode::kNotFound, ENOENT},
      {absl::StatusCode::kAlreadyExists, EEXIST},
      {absl::StatusCode::kPermissionDenied, EACCES},
      {absl::StatusCode::kResourceExhausted, ENOMEM},
      {absl::StatusCode::kUnimplemented, ENOTSUP},
      {absl::StatusCode::kInternal, EIO},
      {absl::StatusCode::kUnavailable, EAGAIN},
      {absl::StatusCode::kDeadlineExceeded, ETIMEDOUT},
  };
  for (const CodeCase& c : kCases) {
    EXPECT_EQ(StatusToErrno(absl::Status(c.code, "x")), c.err)
        << absl::StatusCodeToString(c.code);
  }
}

}  // namespace
}  // namespace fgds
