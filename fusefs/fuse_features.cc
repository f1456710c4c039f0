#include "fusefs/fuse_features.h"

#include <fuse_lowlevel.h>
#include <sys/stat.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/log.h"
#include "fusefs/filesystem.h"

namespace fgds::fusefs {

std::string LibfuseVersion() {
  return absl::StrCat(fuse_pkgversion(), " (built with ", FUSE_MAJOR_VERSION,
                      ".", FUSE_MINOR_VERSION, ")");
}

std::string PassthroughBlocker(const DaemonOptions& options, bool local_files) {
  if (options.passthrough == FeatureMode::kOff) return "--passthrough off";
#ifndef FUSE_CAP_PASSTHROUGH
  return absl::StrCat("libfuse ", FUSE_MAJOR_VERSION, ".", FUSE_MINOR_VERSION,
                      " cannot ask for it (3.17+; deploy/install-deps.sh "
                      "builds 3.18)");
#else
  if (!local_files) {
    return absl::StrCat("the ", options.backend,
                        " backend has no local files to pass through to");
  }
  // The kernel turns passthrough off when the writeback cache is on, and a
  // direct_io open (FOPEN_DIRECT_IO) overrides a passthrough one.
  if (options.writeback_cache) return "--writeback-cache excludes it";
  if (options.direct_io) return "--direct-io excludes it";
  return "";
#endif
}

std::string FuseUringBlocker(const DaemonOptions& options, bool local_backend,
                             const char* enable_uring_path) {
  if (options.fuse_uring == FeatureMode::kOff) return "--fuse-uring off";
  // libfuse serves each CPU's queue with one thread, one request at a
  // time: fine for requests that end in a local system call, not for a
  // backend whose requests wait on the network (they would queue behind
  // each other instead of running on the /dev/fuse loop's many threads).
  if (options.fuse_uring == FeatureMode::kAuto && !local_backend) {
    return absl::StrCat("auto leaves it off for the ", options.backend,
                        " backend (a ring serves its CPU's requests one at a "
                        "time; --fuse-uring on to use it anyway)");
  }
#ifndef FUSE_CAP_OVER_IO_URING
  return absl::StrCat("libfuse ", FUSE_MAJOR_VERSION, ".", FUSE_MINOR_VERSION,
                      " cannot ask for it (3.18+; deploy/install-deps.sh "
                      "builds 3.18)");
#elif !defined(FGDS_LIBFUSE_URING)
  return "libfuse was built without io_uring (its build needs liburing and "
         "libnuma)";
#else
  std::ifstream in(enable_uring_path);
  std::string value;
  if (!in || !std::getline(in, value)) {
    return "the kernel has no FUSE over io_uring (Linux 6.14+, "
           "CONFIG_FUSE_IO_URING)";
  }
  if (absl::StripAsciiWhitespace(value) != "Y") {
    return absl::StrCat(
        "the fuse module's enable_uring is off (as root: echo 1 > ",
        enable_uring_path, ")");
  }
  return "";
#endif
}

namespace {

std::string Describe(const char* name, const FeatureState& state) {
  if (state.on) return absl::StrCat(name, " on");
  return absl::StrCat(
      name, " off: ", state.why_off.empty() ? "not offered" : state.why_off);
}

}  // namespace

void NegotiateFeatures(Filesystem& fs, fuse_conn_info* conn) {
  FeatureState passthrough{false, fs.passthrough_blocker};
  FeatureState fuse_uring{false, fs.fuse_uring_blocker};
#ifdef FUSE_CAP_PASSTHROUGH
  if (passthrough.why_off.empty()) {
    if (conn->capable & FUSE_CAP_PASSTHROUGH) {
      conn->want |= FUSE_CAP_PASSTHROUGH;
      // Backing files on a stacked filesystem need depth 1 below us; else
      // leave room above, for an overlayfs over the mount.
      conn->max_backing_stack_depth = fs.backing_stacked
                                          ? FUSE_BACKING_STACKED_OVER
                                          : FUSE_BACKING_STACKED_UNDER;
      passthrough.on = true;
#ifdef FUSE_CAP_HANDLE_KILLPRIV_V2
      // Without it the kernel asks for security.capability before every
      // write (a round trip each, the cost of a small write). With it, it
      // marks the superblock SB_NOSEC and leaves set-id bits to us: our
      // writes, truncates and O_TRUNC opens (KillSuidgidAsked), and the
      // passthrough writes, which run with backing ids that lack
      // CAP_FSETID (passthrough.h).
      if (conn->capable & FUSE_CAP_HANDLE_KILLPRIV_V2) {
        conn->want |= FUSE_CAP_HANDLE_KILLPRIV_V2;
        fs.killpriv_v2.store(true, std::memory_order_release);
      }
#endif
    } else {
      passthrough.why_off =
          "the kernel does not offer it (Linux 6.9+, CONFIG_FUSE_PASSTHROUGH)";
    }
  }
#endif
#ifdef FUSE_CAP_OVER_IO_URING
  if (fuse_uring.why_off.empty()) {
    if (conn->capable & FUSE_CAP_OVER_IO_URING) {
      conn->want |= FUSE_CAP_OVER_IO_URING;
      fuse_uring.on = true;
    } else {
      fuse_uring.why_off = "the kernel does not offer it";
    }
  }
#endif
#ifdef FUSE_CAP_HANDLE_KILLPRIV_V2
  // The same without passthrough where the backend clears set-id bits
  // at the kernel's word (the ceph backend: kIoKillPrivileges on writes,
  // KillSetIdBits on truncates, chowns and O_TRUNC opens, as above) and
  // drops security.capability itself wherever Linux does: the kernel then
  // stops looking for it once it has seen none (S_NOSEC), while another
  // client may set one (ceph_backend.cc, DropCapability). The getxattr it
  // saves costs a small write as much again through the ceph gate
  // (measured: 4096 4 KiB writes, 4096 getxattrs of 62 us each).
  if (fs.killpriv_v2_without_passthrough &&
      !fs.killpriv_v2.load(std::memory_order_relaxed) &&
      (conn->capable & FUSE_CAP_HANDLE_KILLPRIV_V2)) {
    conn->want |= FUSE_CAP_HANDLE_KILLPRIV_V2;
    fs.killpriv_v2.store(true, std::memory_order_release);
  }
#endif
  if (passthrough.on) fs.passthrough.store(true, std::memory_order_release);
  std::string line = DescribeFeatures(passthrough, fuse_uring);
  {
    MutexLock lock(&fs.features_mu);
    fs.passthrough_state = passthrough;
    fs.fuse_uring_state = fuse_uring;
  }
  if ((fs.options.passthrough == FeatureMode::kOn && !passthrough.on) ||
      (fs.options.fuse_uring == FeatureMode::kOn && !fuse_uring.on)) {
    LogError("asked for but not available: %s", line);
  } else {
    LogInfo("%s", line);
  }
}

int KillSetIdBits(Filesystem& fs, backend::NodeId node) {
  struct stat st;
  if (int res = fs.backend->GetAttr(node, &st); res != 0) return res;
  mode_t mode = st.st_mode & 07777;
  mode &= ~S_ISUID;
  if (mode & S_IXGRP) mode &= ~S_ISGID;
  if (mode == (st.st_mode & 07777)) return 0;
  backend::SetAttrRequest request;
  request.valid = backend::kSetMode;
  request.attr.st_mode = mode;
  struct stat out;
  return fs.backend->SetAttr(node, request, &out);
}

bool KillSuidgidAsked(const Filesystem& fs, const fuse_file_info* fi) {
#ifdef FUSE_CAP_HANDLE_KILLPRIV_V2
  return fs.killpriv_v2.load(std::memory_order_acquire) && fi != nullptr &&
         fi->kill_suidgid;
#else
  (void)fs;
  (void)fi;
  return false;
#endif
}

void CountTransport(Filesystem& fs, fuse_req_t req) {
#if FUSE_MAJOR_VERSION > 3 || FUSE_MINOR_VERSION >= 18
  (fuse_req_is_uring(req) ? fs.uring_requests : fs.dev_requests)
      .fetch_add(1, std::memory_order_relaxed);
#else
  (void)req;
  fs.dev_requests.fetch_add(1, std::memory_order_relaxed);
#endif
}

std::string DescribeFeatures(const FeatureState& passthrough,
                             const FeatureState& fuse_uring) {
  return absl::StrCat("libfuse ", LibfuseVersion(), "; ",
                      Describe("passthrough", passthrough), "; ",
                      Describe("fuse-uring", fuse_uring));
}

}  // namespace fgds::fusefs
