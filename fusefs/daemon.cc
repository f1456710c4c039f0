#include "fusefs/daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backend/local/local_backend.h"
#include "common/errno_status.h"
#include "common/log.h"
#include "fusefs/filesystem.h"
#include "fusefs/mount_table.h"
#include "fusefs/session/io_stats.h"
#include "fusefs/session/session_server.h"

namespace fgds::fusefs {
namespace {

constexpr char kDefaultDataDir[] = "/var/lib/fgds/data";

absl::StatusOr<std::string> RealDir(const std::string& path,
                                    const std::string& what) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(
          absl::StrCat(what, " ", path, " does not exist"));
    }
    return PosixError(absl::StrCat(what, " ", path), errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, " is not a directory"));
  }
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) {
    return PosixError(absl::StrCat("resolve ", what, " ", path), errno);
  }
  return std::string(resolved);
}

bool IsInside(const std::string& path, const std::string& dir) {
  return path == dir || absl::StartsWith(path, dir == "/" ? dir : dir + "/");
}

// Raises the descriptor limit: every node the kernel knows costs one.
void RaiseFileLimit() {
  rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 &&
      limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// Sets the mount's read-ahead through its backing-device entry in sysfs.
// The kernel caps FUSE read-ahead at its default (128 KiB) when it handles
// our INIT reply; sequential reads of large files need a deeper window to
// keep the daemon's rings busy. So this runs after INIT: a statfs of the
// mount blocks until the kernel has processed the INIT reply.
void SetReadaheadAfterInit(const std::string& mountpoint, unsigned kb) {
  if (kb == 0) return;
  struct statfs sfs;
  if (statfs(mountpoint.c_str(), &sfs) != 0) return;  // mount already gone
  auto info = FindMount(mountpoint);
  if (!info) return;
  std::string path = absl::StrCat("/sys/class/bdi/", info->major, ":",
                                  info->minor, "/read_ahead_kb");
  std::ofstream out(path);
  out << kb;
  if (!out.good()) LogWarning("could not set %s to %u", path, kb);
}

}  // namespace

absl::Status PrepareMount(DaemonOptions& options) {
  if (geteuid() != 0) {
    return absl::PermissionDeniedError(
        "fgds mount must run as root: it serves every user (allow_other) "
        "and creates files with each caller's credentials");
  }
  if (access("/dev/fuse", F_OK) != 0) {
    return absl::FailedPreconditionError(
        "/dev/fuse does not exist: load the fuse kernel module (modprobe "
        "fuse), or give the container the fuse device");
  }
  int fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
  if (fuse_fd < 0) return PosixError("open /dev/fuse", errno);
  close(fuse_fd);

  // A daemon that died leaves its mount behind; every access then fails
  // with ENOTCONN. Detach it so a restart just works. statfs, unlike stat,
  // always asks the daemon: cached attributes cannot hide a dead one.
  struct statfs sfs;
  if (statfs(options.mountpoint.c_str(), &sfs) != 0 && errno == ENOTCONN) {
    if (umount2(options.mountpoint.c_str(), MNT_DETACH) != 0) {
      return PosixError("detach stale mount " + options.mountpoint, errno);
    }
    LogWarning("detached a stale mount at %s (its daemon had died)",
               options.mountpoint);
  }
  auto mountpoint = RealDir(options.mountpoint, "mountpoint");
  if (!mountpoint.ok()) return mountpoint.status();
  options.mountpoint = *mountpoint;
  if (auto mounted = FindMount(options.mountpoint);
      mounted && absl::StartsWith(mounted->fstype, "fuse")) {
    return absl::AlreadyExistsError(absl::StrCat(
        options.mountpoint, " is already mounted (", mounted->fstype,
        "); run fgds umount ", options.mountpoint, " first"));
  }

  if (options.data_dir == kDefaultDataDir && access(kDefaultDataDir, F_OK)) {
    std::error_code ec;
    std::filesystem::create_directories(kDefaultDataDir, ec);
    if (ec) return PosixError("create " + options.data_dir, ec.value());
  }
  auto data_dir = RealDir(options.data_dir, "backing directory");
  if (!data_dir.ok()) return data_dir.status();
  options.data_dir = *data_dir;
  // Either inside the other would make the daemon call into its own mount
  // and wait on itself.
  if (IsInside(options.data_dir, options.mountpoint) ||
      IsInside(options.mountpoint, options.data_dir)) {
    return absl::InvalidArgumentError(
        absl::StrCat("backing directory ", options.data_dir, " and mountpoint ",
                     options.mountpoint, " must not contain one another"));
  }
  return absl::OkStatus();
}

// Starts the usrbio session server (fusefs/session/) for the mount at
// `mountpoint`; without it the mount still serves POSIX, and clients get
// ENOTSUP from fgds_session_open.
static void StartSessions(const std::string& mountpoint,
                          const std::string& data_dir,
                          backend::Backend* backend,
                          session::CacheInvalidator* invalidator,
                          session::IoStats* io_stats,
                          std::unique_ptr<session::SessionServer>* out) {
  auto mounted = FindMount(mountpoint);
  if (!mounted) return;
  session::SessionServer::Options session_options;
  session_options.context.backend = backend;
  session_options.context.invalidator = invalidator;
  session_options.context.io_stats = io_stats;
  session_options.context.mount_dev = makedev(mounted->major, mounted->minor);
  session_options.context.storage_dir = data_dir;
  auto server = session::SessionServer::Start(session_options);
  if (server.ok()) {
    *out = *std::move(server);
  } else {
    LogWarning("usrbio disabled: %s", server.status().ToString());
  }
}

absl::Status ServeMount(const DaemonOptions& options,
                        const std::function<void(const absl::Status&)>& ready) {
  // Callers' modes arrive with their umask applied by the kernel; ours must
  // not take anything more away.
  umask(0);
  RaiseFileLimit();

  backend::IoEngineOptions engine_options;
  engine_options.workers = options.io_workers;
  engine_options.use_io_uring = options.io_workers != 0;
  engine_options.spin_us =
      options.io_spin_us >= 0
          ? static_cast<unsigned>(options.io_spin_us)
          : (std::thread::hardware_concurrency() >= 8 ? 20u : 0u);
  auto local = backend::LocalBackend::Create(options.data_dir, engine_options);
  if (!local.ok()) {
    ready(local.status());
    return local.status();
  }
  if (!(*local)->engine_fallback_reason().empty() && options.io_workers != 0) {
    LogWarning("io_uring unavailable, using blocking I/O: %s",
               (*local)->engine_fallback_reason());
  }
  std::string engine_name = (*local)->engine().name();
  // What usrbio entries did, for /.fgds/stats. Declared before the sessions
  // and fs: the engine's last completions (after the sessions end, while fs
  // drains it) still count here.
  session::IoStats usrbio_stats;
  // usrbio sessions; started once the mount exists (they need its device).
  std::unique_ptr<session::SessionServer> sessions;
  auto fs = std::make_unique<Filesystem>(options, *std::move(local));
  fs->stats_header = absl::StrCat("# fgds stats: data=", options.data_dir,
                                  " engine=", engine_name,
                                  options.writeback_cache ? " writeback" : "",
                                  options.direct_io ? " direct_io" : "");
  Filesystem* fs_ptr = fs.get();
  fs->control.AddFile("stats", [fs_ptr, &usrbio_stats] {
    return fs_ptr->stats.Render(fs_ptr->stats_header) + "\n" +
           usrbio_stats.Render();
  });
  fs->control.AddFile("session", [&sessions] {
    return sessions ? sessions->ControlFileContent() : std::string();
  });

  std::vector<std::string> arg_strings = {
      "fgds", "-o",
      absl::StrCat("allow_other,default_permissions,fsname=fgds,subtype=fgds,"
                   "max_read=",
                   options.max_io)};
  for (const std::string& o : options.fuse_options) {
    arg_strings.push_back("-o");
    arg_strings.push_back(o);
  }
  std::vector<char*> argv;
  for (auto& a : arg_strings) argv.push_back(a.data());
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());

  fuse_lowlevel_ops ops;
  AssignOperations(&ops);
  fuse_session* se = fuse_session_new(&args, &ops, sizeof(ops), fs.get());
  if (se == nullptr) {
    absl::Status st = absl::InvalidArgumentError(
        absl::StrCat("libfuse rejected the options: ",
                     absl::StrJoin(options.fuse_options, ",")));
    ready(st);
    return st;
  }
  if (fuse_set_signal_handlers(se) != 0) {
    fuse_session_destroy(se);
    absl::Status st = absl::InternalError("cannot install signal handlers");
    ready(st);
    return st;
  }
  if (fuse_session_mount(se, options.mountpoint.c_str()) != 0) {
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    absl::Status st = absl::PermissionDeniedError(absl::StrCat(
        "mounting ", options.mountpoint, " failed (see the message above)"));
    ready(st);
    return st;
  }
  std::thread readahead(SetReadaheadAfterInit, options.mountpoint,
                        options.readahead_kb);
  // usrbio writes bypass the mount: its page cache is kept coherent with
  // them (cache_invalidator.h), in every mode. With direct I/O, reads and
  // writes skip the page cache and shared mappings are refused (we cannot
  // ask libfuse 3.14 for FUSE_DIRECT_IO_ALLOW_MMAP), so no page is ever
  // dirty there; private mappings still cache clean pages, which must go.
  auto invalidator = std::make_unique<session::CacheInvalidator>(
      [se](uint64_t node, uint64_t offset, uint64_t len) {
        fuse_lowlevel_notify_inval_inode(se, node, static_cast<off_t>(offset),
                                         static_cast<off_t>(len));
      },
      /*may_hold_dirty_pages=*/!options.direct_io);
  StartSessions(options.mountpoint, options.data_dir, fs->backend.get(),
                invalidator.get(), &usrbio_stats, &sessions);
  LogInfo("serving %s at %s (engine %s)", options.data_dir, options.mountpoint,
          engine_name);
  ready(absl::OkStatus());

  fuse_loop_config* config = fuse_loop_cfg_create();
  fuse_loop_cfg_set_clone_fd(config, 1);
  fuse_loop_cfg_set_max_threads(config,
                                static_cast<unsigned>(options.max_threads));
  fuse_loop_cfg_set_idle_threads(
      config, static_cast<unsigned>(std::min(options.max_threads, 8)));
  // A signal ends the loop with the signal's number: that is a clean stop.
  int ret = fuse_session_loop_mt(se, config);
  if (ret == SIGTERM || ret == SIGINT || ret == SIGHUP) ret = 0;
  fuse_loop_cfg_destroy(config);
  readahead.join();

  fuse_remove_signal_handlers(se);
  fuse_session_unmount(se);
  sessions.reset();  // ends usrbio sessions before the engine goes away
  // Writes that wait for a write-back of the mount's pages go to the engine
  // from the invalidator's thread: hand them over while it exists.
  invalidator->Flush();
  // Drain the I/O engine while the session can still take (and drop)
  // replies, then tear the session down.
  fs.reset();
  invalidator.reset();  // after the engine: its completions queue here
  fuse_session_destroy(se);
  LogInfo("unmounted %s", options.mountpoint);
  if (ret != 0) return absl::InternalError("FUSE loop ended with an error");
  return absl::OkStatus();
}

absl::Status Unmount(const std::string& mountpoint, bool lazy) {
  if (umount2(mountpoint.c_str(), lazy ? MNT_DETACH : 0) == 0) {
    return absl::OkStatus();
  }
  int err = errno;
  switch (err) {
    case EBUSY:
      return absl::FailedPreconditionError(
          absl::StrCat(mountpoint,
                       " is busy (files are open or a process is inside); "
                       "close them, or use fgds umount -l to detach now and "
                       "finish when the last one closes"));
    case EINVAL:
      return absl::InvalidArgumentError(
          absl::StrCat(mountpoint, " is not a mountpoint"));
    case EPERM:
      return absl::PermissionDeniedError(absl::StrCat(
          "not permitted to unmount ", mountpoint, " (run as root)"));
    default:
      return PosixError("umount " + mountpoint, err);
  }
}

}  // namespace fgds::fusefs
