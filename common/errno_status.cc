#include "common/errno_status.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace fgds {
namespace {

constexpr absl::string_view kErrnoPayloadUrl = "fgds/errno";

struct CodeErrno {
  absl::StatusCode code;
  int err;
};

// Closest errno for each canonical code, for statuses built without an errno.
constexpr CodeErrno kCodeToErrno[] = {
    {absl::StatusCode::kCancelled, ECANCELED},
    {absl::StatusCode::kUnknown, EIO},
    {absl::StatusCode::kInvalidArgument, EINVAL},
    {absl::StatusCode::kDeadlineExceeded, ETIMEDOUT},
    {absl::StatusCode::kNotFound, ENOENT},
    {absl::StatusCode::kAlreadyExists, EEXIST},
    {absl::StatusCode::kPermissionDenied, EACCES},
    {absl::StatusCode::kResourceExhausted, ENOMEM},
    {absl::StatusCode::kFailedPrecondition, EINVAL},
    {absl::StatusCode::kAborted, EINTR},
    {absl::StatusCode::kOutOfRange, ERANGE},
    {absl::StatusCode::kUnimplemented, ENOTSUP},
    {absl::StatusCode::kInternal, EIO},
    {absl::StatusCode::kUnavailable, EAGAIN},
    {absl::StatusCode::kDataLoss, EIO},
    {absl::StatusCode::kUnauthenticated, EPERM},
};

}  // namespace

absl::Status PosixError(absl::string_view context, int err) {
  absl::Status status = absl::ErrnoToStatus(err, context);
  status.SetPayload(kErrnoPayloadUrl, absl::Cord(absl::StrCat(err)));
  return status;
}

int StatusToErrno(const absl::Status& status) {
  if (status.ok()) return 0;
  if (auto payload = status.GetPayload(kErrnoPayloadUrl)) {
    int err = 0;
    if (absl::SimpleAtoi(std::string(*payload), &err) && err > 0) return err;
  }
  for (const CodeErrno& entry : kCodeToErrno) {
    if (entry.code == status.code()) return entry.err;
  }
  return EIO;
}

}  // namespace fgds
