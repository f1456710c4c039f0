#include "backend/ceph/ceph_connect.h"

#include <cephfs/libcephfs.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace fgds::backend {

absl::Status CephError(const std::string& what, int res) {
  return absl::UnavailableError(
      absl::StrCat("ceph: ", what, ": ", std::strerror(-res)));
}

absl::StatusOr<ceph_mount_info*> ConnectCeph(const CephOptions& options) {
  if (options.conf.empty()) {
    return absl::InvalidArgumentError(
        "ceph: a conf file is needed (--ceph-conf FILE)");
  }
  ceph_mount_info* cmount = nullptr;
  int res =
      ceph_create(&cmount, options.id.empty() ? nullptr : options.id.c_str());
  if (res < 0) return CephError("create", res);
  auto fail = [&](const std::string& what, int err) {
    ceph_release(cmount);
    return CephError(what, err);
  };
  if ((res = ceph_conf_read_file(cmount, options.conf.c_str())) < 0) {
    return fail("read " + options.conf, res);
  }
  // libcephfs waits 300 s by default for an unreachable cluster; a
  // client_mount_timeout the conf sets (other than that default) wins.
  char conf_timeout[32] = {};
  unsigned timeout_s = options.mount_timeout_s;
  if (ceph_conf_get(cmount, "client_mount_timeout", conf_timeout,
                    sizeof(conf_timeout)) == 0) {
    double seconds = std::atof(conf_timeout);
    if (seconds > 0 && seconds != 300) {
      timeout_s = static_cast<unsigned>(std::ceil(seconds));
    }
  }
  // libcephfs gathers its client's debug messages in memory (the "/5"),
  // to dump them should the process crash: a message built and queued
  // for every read and write (ll_read logs at level 3), and a log thread
  // woken for them. For 4 KiB reads from its cache that cost more than
  // the read (docs/ceph.md, "Batches through the gate"): off, unless the
  // conf asks for a level of its own (anything but the default).
  for (const char* option : {"debug_client", "debug_objectcacher"}) {
    char level[32] = {};
    if (ceph_conf_get(cmount, option, level, sizeof(level)) == 0 &&
        std::strcmp(level, "0/5") == 0) {
      ceph_conf_set(cmount, option, "0/0");
    }
  }
  const std::string timeout = std::to_string(timeout_s);
  if ((res = ceph_conf_set(cmount, "client_mount_timeout", timeout.c_str())) <
      0) {
    return fail("set client_mount_timeout", res);
  }
  // Both wait for the monitors at most timeout_s.
  const std::string within = absl::StrCat(" (cluster of ", options.conf,
                                          ", within ", timeout_s, " s)");
  if ((res = ceph_init(cmount)) < 0) return fail("connect" + within, res);
  if (!options.fs.empty() &&
      (res = ceph_select_filesystem(cmount, options.fs.c_str())) < 0) {
    return fail("select file system " + options.fs, res);
  }
  if (!options.client_uuid.empty()) {
    // Reclaim (evict) the session a dead predecessor left under our uuid,
    // then take the uuid over. -ENOENT: there was none; another error
    // (an MDS without reclaim, a key without the cap) leaves the old
    // session to time out, as without a uuid.
    res = ceph_start_reclaim(cmount, options.client_uuid.c_str(),
                             CEPH_RECLAIM_RESET);
    if (res == 0) {
      ceph_finish_reclaim(cmount);
    } else if (res != -ENOENT) {
      fprintf(stderr,
              "fgds: warning: ceph: reclaiming the session of %s: %s (a "
              "session left by a dead daemon then times out by itself)\n",
              options.client_uuid.c_str(), std::strerror(-res));
    }
    ceph_set_uuid(cmount, options.client_uuid.c_str());
  }
  if ((res = ceph_mount(cmount, options.root.c_str())) < 0) {
    return fail(absl::StrCat("mount ", options.root, within), res);
  }
  return cmount;
}

}  // namespace fgds::backend
