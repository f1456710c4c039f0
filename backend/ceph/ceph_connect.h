// File: backend/ceph/ceph_connect.h
//
// ConnectCeph: a libcephfs mount of a CephFS file system (or a subtree of
// it) as CephOptions describe it, shared by the daemon's ceph backend and
// the agent's ceph store. An unreachable cluster fails after
// `mount_timeout_s` (or the conf's client_mount_timeout) with the reason,
// instead of libcephfs's default 300 s.
//
// The caller owns the mount: ceph_unmount and ceph_release it.
// Built only where libcephfs is installed (FGDS_HAVE_CEPH).
#ifndef FGDS_BACKEND_CEPH_CEPH_CONNECT_H_
#define FGDS_BACKEND_CEPH_CEPH_CONNECT_H_

#include <string>

#include "absl/status/statusor.h"
#include "backend/ceph/ceph_backend.h"

struct ceph_mount_info;

namespace fgds::backend {

absl::StatusOr<ceph_mount_info*> ConnectCeph(const CephOptions& options);

// "ceph: WHAT: strerror(-res)" as an Unavailable status.
absl::Status CephError(const std::string& what, int res);

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_CEPH_CEPH_CONNECT_H_
