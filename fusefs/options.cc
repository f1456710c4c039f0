#include "fusefs/options.h"

#include <optional>
#include <string_view>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/gpu/gpu_subset.h"

namespace fgds::fusefs {

const char* MountUsage() {
  return "usage: fgds mount [--data DIR] [-f|--foreground] [options] "
         "MOUNTPOINT\n"
         "  --backend NAME        what serves the namespace (default local: "
         "a directory)\n"
         "  --data DIR            backing directory of the local backend "
         "(default /var/lib/fgds/data)\n"
         "  --ceph-conf FILE      ceph backend: the cluster's ceph.conf\n"
         "  --ceph-id NAME        ceph backend: cephx client id (default "
         "admin)\n"
         "  --ceph-fs NAME        ceph backend: file system (default: the "
         "cluster's)\n"
         "  --ceph-root PATH      ceph backend: directory served as the root "
         "(default /)\n"
         "  --ceph-timeout SECS   ceph backend: give up on a call the "
         "cluster has not answered in SECS (default 120; 0: wait forever): "
         "it and every later call fail with ENOTCONN\n"
         "  --agents [rdma://]HOST:PORT[,...]  `fgds agent`s that move file "
         "data (docs/remote.md): ceph backend, each object by one agent "
         "that answers, libcephfs serving what none does; local backend "
         "(tests, single host), agents serving the same directory by path, "
         "the backend serving what none does. rdma:// for an agent of "
         "--transport rdma (usrbio host iovs are registered with the NIC, "
         "direct GPU iovs by their dma-buf on the local backend, other I/O "
         "goes through registered staging), else TCP\n"
         "  --agent-key FILE      the agents' cluster key (mode 600, at "
         "least 32 bytes); required with --agents\n"
         "  --agent-crc           CRC-32C of every agent transfer's data, "
         "checked at both ends (a mismatch is retried once, then EBADMSG; "
         "counted in fgds stat)\n"
         "  -f, --foreground      do not daemonize; log to stderr\n"
         "  --writeback-cache     let the kernel cache writes\n"
         "  --direct-io           bypass the kernel page cache for data\n"
         "  --no-keep-cache       drop cached pages on every open\n"
         "  --passthrough MODE    off, auto (default) or on: the kernel reads "
         "and writes local files itself (FUSE passthrough)\n"
         "  --fuse-uring MODE     off, auto (default) or on: requests reach "
         "the daemon through io_uring where the kernel offers it (FUSE over "
         "io_uring; auto: local backend only)\n"
         "  --cache MODE          default: the backing store changes only "
         "through the mount (local backend: names and attributes cached for "
         "10 minutes; others: 1 s); strict: something else changes it too, "
         "nothing is cached (docs/fgdsd.md)\n"
         "  --attr-timeout SEC    attribute cache time (default: by --cache)\n"
         "  --entry-timeout SEC   name cache time (default: by --cache)\n"
         "  --negative-timeout SEC  time a missing name is remembered "
         "(default: by --cache)\n"
         "  --readahead-kb N      kernel read-ahead (default 4096; 0: "
         "kernel's)\n"
         "  --max-io BYTES        largest read/write request (default "
         "1048576)\n"
         "  --io-workers N        io_uring worker threads, a ring each "
         "(default: one per CPU, at most 8; 0: no io_uring)\n"
         "  --io-spin-us N        microseconds an idle io_uring worker polls "
         "for work before sleeping (default 20 with 8 or more CPUs, else "
         "0)\n"
         "  --threads N           most FUSE worker threads (default 16)\n"
         "  --usrbio-ring-workers N  threads serving every usrbio ring "
         "(default: one per CPU, at most 64)\n"
         "  --usrbio-max-spin-us N   most microseconds a ring worker polls "
         "a ring after serving it, whatever the client asks (default 50)\n"
         "  --usrbio-max-batch N     most entries a ring worker takes from "
         "one ring per turn (default 16)\n"
         "  --usrbio-helpers N       most idle ring workers helping one busy "
         "ring at once (default 3 with 8 or more CPUs, else 0; 0: each ring "
         "only by its own worker)\n"
         "  --usrbio-inline-uring 0|1  a ring worker's cached reads go to "
         "the kernel in one io_uring_enter per turn (default 1; 0: one "
         "preadv2 each)\n"
         "  --usrbio-fixed 0|1    those reads use io_uring registered files "
         "and buffers on each worker's ring (default 1)\n"
         "  --usrbio-inline-reads 0|1  ring workers copy cached reads "
         "themselves (default 1; 0: every entry goes to the io_uring "
         "workers)\n"
         "  --gpus LIST           GPUs whose memory the direct path maps: "
         "indexes in PCI order, PCI addresses or GPU UUIDs, comma-separated "
         "(default all; GPU iovs of others bounce)\n"
         "  -o OPT[,OPT...]       extra libfuse options\n"
         "usrbio limits (docs/limits.md); 0 or absent: sized from the "
         "machine; SIZE takes K, M, G, T:\n"
         "  --user-sessions N     sessions of one user (default 8 per CPU, "
         "16 to 256)\n"
         "  --user-rings N        iors of one user (default 32 per CPU, 64 "
         "to 1024)\n"
         "  --user-ring-entries N ring entries of one user, over all his "
         "iors (default 32768 per CPU, 65536 to 4194304)\n"
         "  --user-mappings N     iovs + iors of one user (default "
         "--daemon-mappings / 8, at least 64)\n"
         "  --user-bytes SIZE     bytes of those (default the RAM, at most "
         "--daemon-bytes / 8)\n"
         "  --daemon-mappings N   mapped iovs + iors of all users (default "
         "vm.max_map_count / 2)\n"
         "  --daemon-bytes SIZE   bytes of those (default half the daemon's "
         "address space)\n"
         "  --user-files N        registered files of one user (default "
         "--daemon-files / 8, at least 16)\n"
         "  --daemon-files N      registered files of all users (default a "
         "quarter of the daemon's descriptor limit)\n";
}

namespace {

absl::Status BadValue(absl::string_view flag, absl::string_view value) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid value '", value, "' for ", flag));
}

// A byte count with an optional binary suffix (K, M, G, T); false on
// anything else or overflow.
bool ParseSize(absl::string_view text, uint64_t* out) {
  int shift = 0;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K':
      case 'k':
        shift = 10;
        break;
      case 'M':
      case 'm':
        shift = 20;
        break;
      case 'G':
      case 'g':
        shift = 30;
        break;
      case 'T':
      case 't':
        shift = 40;
        break;
    }
    if (shift != 0) text.remove_suffix(1);
  }
  uint64_t n = 0;
  if (!absl::SimpleAtoi(text, &n) || n > (UINT64_MAX >> shift)) return false;
  *out = n << shift;
  return true;
}

// Where each usrbio limit option goes.
uint64_t* LimitField(absl::string_view flag, DaemonOptions* options) {
  if (flag == "--user-sessions") return &options->user_sessions;
  if (flag == "--user-rings") return &options->user_rings;
  if (flag == "--user-ring-entries") return &options->user_ring_entries;
  if (flag == "--user-mappings") return &options->user_mappings;
  if (flag == "--user-bytes") return &options->user_bytes;
  if (flag == "--daemon-mappings") return &options->daemon_mappings;
  if (flag == "--daemon-bytes") return &options->daemon_bytes;
  if (flag == "--user-files") return &options->user_files;
  if (flag == "--daemon-files") return &options->daemon_files;
  return nullptr;
}

// The cache times of `options.cache` for its backend, for each timeout not
// given on the command line.
void ApplyCacheMode(bool attr_set, bool entry_set, bool negative_set,
                    DaemonOptions* options) {
  double attr = 600, entry = 600, negative = 600;
  if (options->cache == CacheMode::kStrict) {
    attr = entry = negative = 0;
  } else if (options->backend != "local") {
    // Other clients change a shared store: as before, a second, and a
    // missing name is asked again every time.
    attr = entry = 1;
    negative = 0;
  }
  if (!attr_set) options->attr_timeout = attr;
  if (!entry_set) options->entry_timeout = entry;
  if (!negative_set) options->negative_timeout = negative;
}

}  // namespace

absl::StatusOr<DaemonOptions> ParseMountArgs(int argc, char** argv) {
  DaemonOptions options;
  std::vector<std::string> positional;
  bool attr_set = false, entry_set = false, negative_set = false;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    // Flags with a value take it from the next argument.
    auto value = [&](absl::string_view* out) -> absl::Status {
      if (i + 1 >= argc) {
        return absl::InvalidArgumentError(absl::StrCat(arg, " needs a value"));
      }
      *out = argv[++i];
      return absl::OkStatus();
    };
    absl::string_view v;
    // --passthrough=MODE and --fuse-uring=MODE are also spelled that way.
    std::optional<absl::string_view> inline_value;
    if (size_t eq = arg.find('='); eq != absl::string_view::npos &&
                                   absl::StartsWith(arg, "--") &&
                                   (absl::StartsWith(arg, "--passthrough=") ||
                                    absl::StartsWith(arg, "--fuse-uring="))) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    if (arg == "--passthrough" || arg == "--fuse-uring") {
      if (inline_value) {
        v = *inline_value;
      } else if (auto st = value(&v); !st.ok()) {
        return st;
      }
      FeatureMode mode;
      if (v == "off") {
        mode = FeatureMode::kOff;
      } else if (v == "auto") {
        mode = FeatureMode::kAuto;
      } else if (v == "on") {
        mode = FeatureMode::kOn;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat(arg, " takes off, auto or on, not '", v, "'"));
      }
      (arg == "--passthrough" ? options.passthrough : options.fuse_uring) =
          mode;
    } else if (arg == "-f" || arg == "--foreground") {
      options.foreground = true;
    } else if (arg == "--writeback-cache") {
      options.writeback_cache = true;
    } else if (arg == "--direct-io") {
      options.direct_io = true;
    } else if (arg == "--no-keep-cache") {
      options.keep_cache = false;
    } else if (arg == "--backend") {
      if (auto st = value(&v); !st.ok()) return st;
      options.backend = std::string(v);
    } else if (arg == "--ceph-conf" || arg == "--ceph-id" ||
               arg == "--ceph-fs" || arg == "--ceph-root") {
      if (auto st = value(&v); !st.ok()) return st;
      std::string* field = arg == "--ceph-conf" ? &options.ceph_conf
                           : arg == "--ceph-id" ? &options.ceph_id
                           : arg == "--ceph-fs" ? &options.ceph_fs
                                                : &options.ceph_root;
      *field = std::string(v);
    } else if (arg == "--ceph-timeout") {
      if (auto st = value(&v); !st.ok()) return st;
      double seconds;
      if (!absl::SimpleAtod(v, &seconds) || !(seconds >= 0) ||
          seconds > 86400) {
        return BadValue(arg, v);
      }
      options.ceph_timeout_ms = static_cast<unsigned>(seconds * 1000);
    } else if (arg == "--agents") {
      if (auto st = value(&v); !st.ok()) return st;
      auto agents = remote::ParseAgentList(std::string(v));
      if (!agents.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--agents: ", agents.status().message()));
      }
      options.agents = *std::move(agents);
    } else if (arg == "--agent-key") {
      if (auto st = value(&v); !st.ok()) return st;
      options.agent_key = std::string(v);
    } else if (arg == "--agent-crc") {
      options.agent_crc = true;
    } else if (arg == "--gpus") {
      if (auto st = value(&v); !st.ok()) return st;
      gpu::GpuSubset subset;
      std::string why;
      if (gpu::ParseGpuSubset(std::string_view(v.data(), v.size()), &subset,
                              &why) != 0) {
        return absl::InvalidArgumentError(absl::StrCat("--gpus: ", why));
      }
      options.gpus = std::string(v);
    } else if (arg == "--data") {
      if (auto st = value(&v); !st.ok()) return st;
      options.data_dir = std::string(v);
    } else if (arg == "--cache") {
      if (auto st = value(&v); !st.ok()) return st;
      if (v == "default") {
        options.cache = CacheMode::kDefault;
      } else if (v == "strict") {
        options.cache = CacheMode::kStrict;
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            "invalid value '", v, "' for --cache (default or strict)"));
      }
    } else if (arg == "--attr-timeout" || arg == "--entry-timeout" ||
               arg == "--negative-timeout") {
      if (auto st = value(&v); !st.ok()) return st;
      double seconds;
      // NaN and negative times make no sense; a year is plenty.
      if (!absl::SimpleAtod(v, &seconds) || !(seconds >= 0) ||
          seconds > 86400 * 365) {
        return BadValue(arg, v);
      }
      if (arg == "--attr-timeout") {
        options.attr_timeout = seconds;
        attr_set = true;
      } else if (arg == "--entry-timeout") {
        options.entry_timeout = seconds;
        entry_set = true;
      } else {
        options.negative_timeout = seconds;
        negative_set = true;
      }
    } else if (arg == "--readahead-kb" || arg == "--max-io" ||
               arg == "--io-workers" || arg == "--io-spin-us" ||
               arg == "--threads" || arg == "--usrbio-ring-workers" ||
               arg == "--usrbio-max-spin-us" || arg == "--usrbio-max-batch" ||
               arg == "--usrbio-inline-reads" || arg == "--usrbio-helpers" ||
               arg == "--usrbio-inline-uring" || arg == "--usrbio-fixed") {
      if (auto st = value(&v); !st.ok()) return st;
      int n;
      if (!absl::SimpleAtoi(v, &n) || n < 0) return BadValue(arg, v);
      if (arg == "--readahead-kb") {
        options.readahead_kb = static_cast<unsigned>(n);
      } else if (arg == "--max-io") {
        if (n < 4096 || n > (1 << 20)) {
          return absl::InvalidArgumentError(
              "--max-io must be between 4096 and 1048576");
        }
        options.max_io = static_cast<unsigned>(n);
      } else if (arg == "--io-workers") {
        options.io_workers = n;
      } else if (arg == "--io-spin-us") {
        if (n > 1000000) return BadValue(arg, v);
        options.io_spin_us = n;
      } else if (arg == "--usrbio-ring-workers") {
        if (n > 1024) return BadValue(arg, v);
        options.usrbio_ring_workers = n;
      } else if (arg == "--usrbio-max-spin-us") {
        if (n > 1000000) return BadValue(arg, v);
        options.usrbio_max_spin_us = n;
      } else if (arg == "--usrbio-max-batch") {
        if (n < 1 || n > 65536) return BadValue(arg, v);
        options.usrbio_max_batch = n;
      } else if (arg == "--usrbio-helpers") {
        if (n > 64) return BadValue(arg, v);
        options.usrbio_helpers = n;
      } else if (arg == "--usrbio-inline-uring") {
        if (n > 1) return BadValue(arg, v);
        options.usrbio_inline_uring = n == 1;
      } else if (arg == "--usrbio-fixed") {
        if (n > 1) return BadValue(arg, v);
        options.usrbio_fixed = n == 1;
      } else if (arg == "--usrbio-inline-reads") {
        if (n > 1) return BadValue(arg, v);
        options.usrbio_inline_reads = n == 1;
      } else {
        if (n < 1) return BadValue(arg, v);
        options.max_threads = n;
      }
    } else if (uint64_t* limit = LimitField(arg, &options)) {
      if (auto st = value(&v); !st.ok()) return st;
      // Counts are plain numbers; byte limits may carry a suffix.
      const bool bytes = absl::EndsWith(arg, "-bytes");
      if (bytes ? !ParseSize(v, limit) : !absl::SimpleAtoi(v, limit)) {
        return BadValue(arg, v);
      }
    } else if (arg == "-o") {
      if (auto st = value(&v); !st.ok()) return st;
      options.fuse_options.emplace_back(v);
    } else if (!arg.empty() && arg[0] == '-') {
      return absl::InvalidArgumentError(absl::StrCat("unknown option ", arg));
    } else {
      positional.emplace_back(arg);
    }
  }
  if (positional.size() != 1) {
    return absl::InvalidArgumentError(
        positional.empty() ? "missing MOUNTPOINT" : "more than one MOUNTPOINT");
  }
  options.mountpoint = positional[0];
  if (options.passthrough == FeatureMode::kOn &&
      (options.writeback_cache || options.direct_io)) {
    // The kernel refuses passthrough with a writeback cache, and a
    // direct_io open overrides it.
    return absl::InvalidArgumentError(absl::StrCat(
        "--passthrough on excludes ",
        options.writeback_cache ? "--writeback-cache" : "--direct-io"));
  }
  if (!options.agents.empty() && options.agent_key.empty()) {
    return absl::InvalidArgumentError("--agents needs --agent-key FILE");
  }
  if (options.agents.empty() && !options.agent_key.empty()) {
    return absl::InvalidArgumentError("--agent-key is only used with --agents");
  }
  if (options.agents.empty() && options.agent_crc) {
    return absl::InvalidArgumentError("--agent-crc is only used with --agents");
  }
  ApplyCacheMode(attr_set, entry_set, negative_set, &options);
  return options;
}

}  // namespace fgds::fusefs
