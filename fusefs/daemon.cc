#include "fusefs/daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backend/backend_factory.h"
#include "backend/local/nowait_reader.h"
#include "common/errno_status.h"
#include "common/gpu/gpu_subset.h"
#include "common/gpu/gpu_sysfs.h"
#include "common/log.h"
#include "fusefs/abort_on_death.h"
#include "fusefs/fd_limit.h"
#include "fusefs/filesystem.h"
#include "fusefs/fuse_connection.h"
#include "fusefs/fuse_features.h"
#include "fusefs/mount_table.h"
#include "fusefs/session/io_stats.h"
#include "fusefs/session/session_server.h"
#include "fusefs/stuck_threads_exit.h"
#include "fusefs/usrbio_limits.h"

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

// Raises the mount's read-ahead to `kb` KiB (0: leaves the kernel's):
// sequential reads of large files need a deeper window than the kernel's
// 128 KiB to keep the daemon's rings busy. Makes no call on the mount: from
// the daemon, a call on its own mount waits for its own FUSE loop, forever
// if the loop has not started yet or a signal has stopped it.
//
// The kernel sends INIT while mounting, offering its default read-ahead (the
// mount's bdi ra_pages, 128 KiB), and when it handles our reply it sets
// ra_pages = min(bdi ra_pages, the reply's max_readahead). So the bdi's
// read_ahead_kb is raised here, in sysfs, before the reply exists, and
// DoInit (ops_table.cc) answers max_readahead = readahead_kb: libfuse lets
// init() raise it above the offer, and the min keeps our value.
// REQUIRES: mounted, and the FUSE loop not started (INIT unanswered).
void RaiseReadahead(const std::string& mountpoint, unsigned kb) {
  if (kb == 0) return;
  auto info = FindMount(mountpoint);
  if (!info || !absl::StartsWith(info->fstype, "fuse")) {
    LogWarning("read-ahead left as is: %s is not in the mount table",
               mountpoint);
    return;
  }
  std::string path = absl::StrCat("/sys/class/bdi/", info->major, ":",
                                  info->minor, "/read_ahead_kb");
  std::string value = absl::StrCat(kb);
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, value.data(), value.size()) !=
                    static_cast<ssize_t>(value.size())) {
    LogWarning("could not set %s to %u: %s", path, kb, strerror(errno));
  }
  if (fd >= 0) close(fd);
}

// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread while it lives, so
// that the threads started meanwhile (they inherit the mask) never take
// them. libfuse's handler only sets a flag, which the FUSE loop sees when
// the signal interrupts the loop's own wait in fuse_session_loop_mt (its
// workers block these signals). Taken by a helper thread instead (the
// kernel picks any thread that does not block it, e.g. while the loop's
// thread blocks them to start a worker), the signal would leave the loop
// serving until the next request: no bounded stop.
class StopSignalsBlocked {
 public:
  StopSignalsBlocked() {
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, &saved_);
  }
  ~StopSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }
  StopSignalsBlocked(const StopSignalsBlocked&) = delete;
  StopSignalsBlocked& operator=(const StopSignalsBlocked&) = delete;

 private:
  sigset_t saved_;
};

// Test hook, for tests/integration/startup_signal_test.cc: with
// FGDS_TEST_STOP_AT=N in its environment the daemon stops itself (SIGSTOP)
// at start-up point N of ServeMount, so that a test can signal it in exactly
// that state and then continue it. The variable is read once, when
// ServeMount starts; unset or not a point: no stop. The points, in order
// (the test knows their count and which ones have the mount):
enum StartupPoint : int {
  kBeforeBackend = 1,  // nothing started; no signal handlers yet
  kBeforeMount,        // backend and signal handlers in place
  kBeforeReadahead,    // mounted; INIT sent by the kernel, unanswered
  kBeforeSessions,     // read-ahead raised
  kBeforeReady,        // usrbio sessions started
  kBeforeLoop,         // ready() called; the FUSE loop not yet running
};

// True when `dir` is on a stacked filesystem (overlayfs, FUSE), whose
// files passthrough must declare (max_backing_stack_depth).
bool OnStackedFilesystem(const std::string& dir) {
  constexpr long kOverlayfsMagic = 0x794c7630;
  constexpr long kFuseMagic = 0x65735546;
  struct statfs sfs;
  if (statfs(dir.c_str(), &sfs) != 0) return false;
  return sfs.f_type == kOverlayfsMagic || sfs.f_type == kFuseMagic;
}

// The lines /.fgds/stats shows about passthrough and FUSE over io_uring:
// what is on, and how much went which way.
std::string FeatureStats(const Filesystem& fs) {
  return absl::StrCat(
      "# features: ", fs.Features(), "\n", "passthrough_opens ",
      fs.passthrough_files.passthrough_opens(), " daemon_opens ",
      fs.passthrough_files.daemon_opens(), "\n", "requests_fuse_uring ",
      fs.uring_requests.load(), " requests_dev_fuse ", fs.dev_requests.load(),
      " uring_replies_off_thread ", fs.uring_replies_off_thread.load(), "\n");
}

int TestStopPoint() {
  const char* env = getenv("FGDS_TEST_STOP_AT");
  return env != nullptr ? atoi(env) : 0;
}

// Test hook, for tests/integration/usrbio_daemon_death_test.cc: with
// FGDS_TEST_DIE_IN_REGISTRATION set, the daemon dies in the middle of a
// usrbio file registration, holding the client's descriptor of a file on
// its own mount: "abort" (SIGABRT, as a failed assertion), "exit"
// (exit_group, as a sanitizer halting it) or "kill" (SIGKILL). Unset or
// anything else: no hook.
std::function<void()> TestDeathInRegistration() {
  const char* env = getenv("FGDS_TEST_DIE_IN_REGISTRATION");
  const std::string how = env != nullptr ? env : "";
  if (how == "abort") return [] { abort(); };
  if (how == "exit") return [] { _exit(66); };
  if (how == "kill") return [] { raise(SIGKILL); };
  return nullptr;
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
// ResolveGpus: the daemon's GPU subset (--gpus) over this host's NVIDIA
// GPUs in PCI order (sysfs; no CUDA here). An entry that names no GPU fails
// the mount: a typo must not leave a GPU out unnoticed.
static absl::Status ResolveGpus(const std::string& spec,
                                std::vector<gpu::GpuIdentity>* gpus,
                                gpu::GpuAllowList* out) {
  gpu::GpuSubset subset;
  std::string why;
  if (gpu::ParseGpuSubset(spec, &subset, &why) != 0) {
    return absl::InvalidArgumentError("--gpus: " + why);
  }
  *gpus = gpu::ListNvidiaGpus("/sys", "/proc");
  if (gpu::CheckSubsetNamesGpus(subset, *gpus, "--gpus", &why) != 0) {
    return absl::InvalidArgumentError(why);
  }
  *out = gpu::ResolveGpuSubset(subset, *gpus);
  if (!out->all) {
    LogInfo("GPU subset --gpus %s: the direct path maps memory of %s only",
            spec, absl::StrJoin(out->pci_bus_ids, ", "));
  }
  return absl::OkStatus();
}

static void StartSessions(const DaemonOptions& options,
                          const gpu::GpuAllowList& gpus,
                          backend::Backend* backend,
                          session::CacheInvalidator* invalidator,
                          session::IoStats* io_stats,
                          std::unique_ptr<session::SessionServer>* out) {
  auto mounted = FindMount(options.mountpoint);
  if (!mounted) return;
  session::SessionServer::Options session_options;
  session_options.rings.workers =
      static_cast<unsigned>(options.usrbio_ring_workers);
  session_options.rings.max_spin_us =
      static_cast<uint32_t>(options.usrbio_max_spin_us);
  session_options.rings.max_batch =
      static_cast<uint32_t>(options.usrbio_max_batch);
  session_options.rings.inline_reads = options.usrbio_inline_reads;
  backend::SetNowaitUring(options.usrbio_inline_uring);
  backend::SetNowaitFixed(options.usrbio_fixed);
  session_options.rings.max_helpers =
      options.usrbio_helpers >= 0
          ? static_cast<uint32_t>(options.usrbio_helpers)
          : (std::thread::hardware_concurrency() >= 8 ? 3u : 0u);
  session_options.context.backend = backend;
  session_options.context.invalidator = invalidator;
  session_options.context.io_stats = io_stats;
  session_options.context.mount_dev = makedev(mounted->major, mounted->minor);
  // The block device GPU iovs are mapped for (their direct path); none
  // where the backend's storage is not there (GPU iovs then bounce).
  if (backend->ReachesDeviceMemory()) {
    session_options.context.storage_dir = options.data_dir;
  }
  // Direct GPU iovs keep their dma-buf for a backend whose RDMA agents
  // register it with the NIC (docs/agent.md, "GPU iovs directly").
  session_options.context.keep_dmabufs = backend->TakesDmabufs();
  // A backend that reaches no GPU memory but takes dma-bufs (ceph with
  // rdma:// agents): GPU iovs go to the NIC only, unmapped.
  session_options.context.nic_only_gpu_iovs =
      !backend->ReachesDeviceMemory() && backend->TakesDmabufs();
  session_options.context.gpus = gpus;
  const session::UserLimitsConfig limits =
      UsrbioLimits(options, session::ReadMachineFacts());
  session_options.context.user_limits =
      std::make_shared<session::UserLimits>(limits);
  session_options.context.refusal_log = std::make_shared<session::RefusalLog>();
  session_options.context.while_holding_client_fd = TestDeathInRegistration();
  LogInfo("usrbio limits: %s", DescribeUsrbioLimits(limits));
  auto server = session::SessionServer::Start(session_options);
  if (server.ok()) {
    *out = *std::move(server);
  } else {
    LogWarning("usrbio disabled: %s", server.status().ToString());
  }
}

namespace {

// Cache events of the backend (another client of its storage changed a
// file's data or a name: backend.h) become the kernel's invalidations of
// this mount. They come on the backend's threads, which no FUSE request
// waits for, so the kernel may block them on page locks of reads in
// flight.
class KernelCacheEvents : public backend::CacheEvents {
 public:
  explicit KernelCacheEvents(fuse_session* se) : se_(se) {}
  void InvalidateNode(backend::NodeId node, int64_t offset,
                      int64_t len) override {
    // ENOENT (the kernel does not hold the node) means nothing to drop.
    fuse_lowlevel_notify_inval_inode(se_, node, offset, len);
  }
  void InvalidateEntry(backend::NodeId parent, std::string_view name) override {
    fuse_lowlevel_notify_inval_entry(se_, parent, name.data(), name.size());
  }

 private:
  fuse_session* const se_;
};

}  // namespace

absl::Status ServeMount(const DaemonOptions& options,
                        const std::function<void(const absl::Status&)>& ready) {
  // Callers' modes arrive with their umask applied by the kernel; ours must
  // not take anything more away.
  umask(0);
  const rlim_t fd_limit = RaiseFdLimit();
  if (fd_limit < 65536) {
    LogWarning("descriptor limit is %llu: open files are capped by it",
               static_cast<unsigned long long>(fd_limit));
  }
  const int stop_at = TestStopPoint();
  auto point = [stop_at](StartupPoint here) {
    if (here == stop_at) raise(SIGSTOP);
  };

  std::vector<gpu::GpuIdentity> host_gpus;
  gpu::GpuAllowList gpus;
  if (absl::Status st = ResolveGpus(options.gpus, &host_gpus, &gpus);
      !st.ok()) {
    ready(st);
    return st;
  }
  point(kBeforeBackend);

  backend::BackendConfig backend_config;
  backend_config.name = options.backend;
  backend_config.data_dir = options.data_dir;
  backend_config.ceph_conf = options.ceph_conf;
  backend_config.ceph_id = options.ceph_id;
  backend_config.ceph_fs = options.ceph_fs;
  backend_config.ceph_root = options.ceph_root;
  backend_config.ceph_timeout_ms = options.ceph_timeout_ms;
  // Reads may run on the FUSE thread that took them, as long as a dead
  // cluster could hold at most half of those threads (guarded_backend.h).
  backend_config.ceph_here_reads =
      static_cast<unsigned>(std::max(options.max_threads / 2, 0));
  // One Ceph client identity per host and mount point: a daemon restarted
  // on the same mount point reclaims the session its dead predecessor left
  // (a live one cannot be there: the mount point was checked above).
  if (options.backend == "ceph") {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    backend_config.ceph_client_uuid =
        absl::StrCat("fgds:", host, ":", options.mountpoint);
  }
  backend_config.agents = options.agents;
  backend_config.agent_key = options.agent_key;
  backend_config.agent_crc = options.agent_crc;
  backend_config.engine.workers = options.io_workers;
  backend_config.engine.use_io_uring = options.io_workers != 0;
  backend_config.engine.spin_us =
      options.io_spin_us >= 0
          ? static_cast<unsigned>(options.io_spin_us)
          : (std::thread::hardware_concurrency() >= 8 ? 20u : 0u);
  std::string warning;
  auto backend = [&] {
    StopSignalsBlocked blocked;  // for the engine's threads
    return backend::CreateBackend(backend_config, &warning);
  }();
  if (!backend.ok()) {
    ready(backend.status());
    return backend.status();
  }
  if (!warning.empty()) LogWarning("%s", warning);
  std::string engine_name = (*backend)->EngineName();
  // What usrbio entries did, for /.fgds/stats. Declared before the sessions
  // and fs: the engine's last completions (after the sessions end, while fs
  // drains it) still count here.
  session::IoStats usrbio_stats;
  // Every GPU of the host gets its row in `fgds stat`, numbered as --gpus
  // numbers them (PCI order), before any I/O.
  for (const gpu::GpuIdentity& g : host_gpus)
    usrbio_stats.GpuSlot(g.pci_bus_id);
  // usrbio sessions; started once the mount exists (they need its device).
  std::unique_ptr<session::SessionServer> sessions;
  auto fs = std::make_unique<Filesystem>(options, *std::move(backend));
  fs->stats_header = absl::StrCat(
      "# fgds stats: backend=", options.backend, " data=", options.data_dir,
      " engine=", engine_name, options.writeback_cache ? " writeback" : "",
      options.direct_io ? " direct_io" : "");
  // Passthrough and FUSE over io_uring: what rules them out before the
  // kernel is asked (fuse_features.h); "on" fails the mount here.
  fs->passthrough_blocker =
      PassthroughBlocker(options, options.backend == "local");
  fs->fuse_uring_blocker =
      FuseUringBlocker(options, options.backend == "local");
  fs->backing_stacked = OnStackedFilesystem(options.data_dir);
  // The ceph backend clears set-id bits on the kernel's word
  // (fuse_features.cc) and drops file capabilities itself
  // (DropCapability); the local one keeps the kernel's own clearing
  // without passthrough. Not with the writeback cache: a write's bytes
  // then reach the daemon only at writeback, and an S_NOSEC inode would
  // keep a capability another client set until then, while the new bytes
  // are already in this mount's page cache (to exec).
  fs->killpriv_v2_without_passthrough =
      options.backend == "ceph" && !options.writeback_cache;
  for (const auto& [mode, blocker, name] :
       {std::tuple{options.passthrough, fs->passthrough_blocker, "passthrough"},
        std::tuple{options.fuse_uring, fs->fuse_uring_blocker, "fuse-uring"}}) {
    if (mode == FeatureMode::kOn && !blocker.empty()) {
      absl::Status st = absl::FailedPreconditionError(
          absl::StrCat("--", name, " on: not available: ", blocker));
      ready(st);
      return st;
    }
  }
  LogInfo("libfuse %s", LibfuseVersion());
  Filesystem* fs_ptr = fs.get();
  fs->control.AddFile("stats", [fs_ptr, &usrbio_stats] {
    return fs_ptr->stats.Render(fs_ptr->stats_header) + "\n" +
           FeatureStats(*fs_ptr) + fs_ptr->backend->StatsText() +
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
  if (fs->fuse_uring_blocker.empty()) {
    // libfuse starts its rings only when asked by option (and the kernel
    // offers them at INIT); it falls back to /dev/fuse if they fail.
    arg_strings.push_back("-o");
    arg_strings.push_back("io_uring");
  }
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
  // The session keeps copies of what it needs; parsing may have left heap
  // copies of the arguments in `args`, ours to free.
  fuse_opt_free_args(&args);
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
  point(kBeforeMount);
  if (fuse_session_mount(se, options.mountpoint.c_str()) != 0) {
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    absl::Status st = absl::PermissionDeniedError(absl::StrCat(
        "mounting ", options.mountpoint, " failed (see the message above)"));
    ready(st);
    return st;
  }
  point(kBeforeReadahead);
  // Before the loop starts: the kernel caps read-ahead when it gets the
  // loop's INIT reply.
  RaiseReadahead(options.mountpoint, options.readahead_kb);
  point(kBeforeSessions);
  // Our mount's device: its FUSE connection, should a signal stop us.
  const std::optional<MountInfo> own_mount = FindMount(options.mountpoint);
  // Before any session can hand us a descriptor of our own mount: should
  // the daemon die holding one, its exit would wait on itself
  // (abort_on_death.h).
  std::unique_ptr<AbortOnDeath> guard;
  if (auto mounted = FindMount(options.mountpoint); mounted) {
    auto started = AbortOnDeath::Start(options.mountpoint,
                                       makedev(mounted->major, mounted->minor));
    if (started.ok()) {
      guard = *std::move(started);
    } else {
      LogWarning("no guard against dying with descriptors of the mount: %s",
                 started.status().ToString());
    }
  }
  // usrbio writes bypass the mount: its page cache is kept coherent with
  // them (cache_invalidator.h), in every mode. With direct I/O, reads and
  // writes skip the page cache and shared mappings are refused (we cannot
  // ask libfuse 3.14 for FUSE_DIRECT_IO_ALLOW_MMAP), so no page is ever
  // dirty there; private mappings still cache clean pages, which must go.
  std::unique_ptr<session::CacheInvalidator> invalidator;
  {
    StopSignalsBlocked blocked;  // for the invalidator's and usrbio's threads
    invalidator = std::make_unique<session::CacheInvalidator>(
        [se](uint64_t node, uint64_t offset, uint64_t len) {
          fuse_lowlevel_notify_inval_inode(se, node, static_cast<off_t>(offset),
                                           static_cast<off_t>(len));
        },
        /*may_hold_dirty_pages=*/!options.direct_io,
        [fs_ptr](uint64_t node) {
          return fs_ptr->passthrough_files.HasPassthroughFiles(node);
        });
    StartSessions(options, gpus, fs->backend.get(), invalidator.get(),
                  &usrbio_stats, &sessions);
  }
  // From here until the loop ends, other clients' changes reach the
  // kernel's caches of this mount (a ceph backend's capability revocations).
  KernelCacheEvents kernel_events(se);
  fs->backend->SetCacheEvents(&kernel_events);
  LogInfo("serving %s at %s (engine %s)", options.data_dir, options.mountpoint,
          engine_name);
  point(kBeforeReady);
  ready(absl::OkStatus());
  point(kBeforeLoop);

  fuse_loop_config* config = fuse_loop_cfg_create();
  fuse_loop_cfg_set_clone_fd(config, 1);
  fuse_loop_cfg_set_max_threads(config,
                                static_cast<unsigned>(options.max_threads));
  fuse_loop_cfg_set_idle_threads(
      config, static_cast<unsigned>(std::min(options.max_threads, 8)));
  // Watches the loop's end and the teardown below for threads a dead
  // backend keeps (stuck_threads_exit.h).
  // A signal ends the loop with the signal's number: that is a clean stop.
  auto stuck_exit = std::make_unique<StuckThreadsExit>(
      se, fs->backend.get(), options.mountpoint, own_mount,
      std::chrono::seconds(1));
  int ret = fuse_session_loop_mt(se, config);
  stuck_exit->LoopReturned();
  const bool stopped_by_signal =
      ret == SIGTERM || ret == SIGINT || ret == SIGHUP;
  if (stopped_by_signal) ret = 0;
  fuse_loop_cfg_destroy(config);
  // Before the unmount closes the session's descriptor (whose number a
  // later open may reuse); returns once no event is being delivered.
  fs->backend->SetCacheEvents(nullptr);

  // Stopped by a signal, the loop answers nothing more, but the kernel may
  // still wait on it: a usrbio write's invalidation waiting for a page's
  // write-back (a FUSE WRITE nobody will take now) would hold its ring
  // worker asleep, uninterruptibly, and sessions.reset() below and the
  // daemon's exit with it (UsrbioCoherenceStopTest). Every such wait ends
  // once the connection is aborted, as it would at our exit; only while
  // our mount is still there, so that its number names our connection.
  if (stopped_by_signal) {
    if (auto now = StillOurMount(options.mountpoint, own_mount); now) {
      if (int err = AbortFuseConnection(now->major, now->minor); err != 0) {
        LogWarning("could not abort the FUSE connection (%s): %s",
                   FuseConnectionDir(now->major, now->minor), strerror(-err));
      } else if (umount2(options.mountpoint.c_str(), MNT_DETACH) != 0) {
        // Ourselves: libfuse's unmount takes an aborted connection for an
        // unmounted one and leaves the mount.
        LogWarning("umount %s: %s", options.mountpoint, strerror(errno));
      }
    }
  }
  // Unmount while the handlers still catch a second signal: its default
  // action now would kill us and leave a dead mount behind.
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  sessions.reset();  // ends usrbio sessions before the engine goes away
  // No client's descriptor can reach us any more.
  guard.reset();
  // Writes that wait for a write-back of the mount's pages go to the engine
  // from the invalidator's thread: hand them over while it exists.
  invalidator->Flush();
  // Drain the I/O engine while the session can still take (and drop)
  // replies, then tear the session down.
  fs.reset();
  invalidator.reset();  // after the engine: its completions queue here
  stuck_exit.reset();   // the teardown got through
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
