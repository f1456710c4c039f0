// The fgds module, its device nodes and what it says through
// FGDS_IOCTL_QUERY.
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "include/uapi/fgds_ioctl.h"
#include "tools/probe/checks.h"
#include "tools/probe/topology.h"

namespace fgds::probe {
namespace {

constexpr char kGroup[] = "fgds";

// A file descriptor closed on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// "fgds_0000_3b_00_0" -> "0000:3b:00.0"; "" when the name is odd.
std::string NodeBdf(absl::string_view node) {
  if (!absl::ConsumePrefix(&node, "fgds_") || node.size() < 12) return "";
  std::string bdf(node);
  size_t last = bdf.rfind('_');
  if (last == std::string::npos) return "";
  bdf[last] = '.';
  bdf = absl::StrReplaceAll(bdf, {{"_", ":"}});
  return IsPciAddress(bdf) ? bdf : "";
}

std::string ModuleHint(const HostFs& fs) {
  if (!fs.Exists("/proc/modules")) {
    return "this kernel has no module support (CONFIG_MODULES); boot a "
           "distribution kernel";
  }
  std::string release = fs.ReadLine("/proc/sys/kernel/osrelease");
  std::string dir = "/lib/modules/" + release + "/updates/dkms/";
  if (fs.Exists(dir + "fgds.ko") || fs.Exists(dir + "fgds.ko.xz") ||
      fs.Exists(dir + "fgds.ko.zst") || fs.Exists(dir + "fgds.ko.gz")) {
    return "installed for this kernel: sudo modprobe fgds (dmesg says why "
           "if it refuses)";
  }
  return "build and install it: sudo deploy/install-kmod.sh (DKMS, see "
         "docs/probe.md)";
}

// Owner renders "root:fgds 0660".
std::string Owner(const struct stat& st) {
  struct passwd* pw = getpwuid(st.st_uid);
  struct group* gr = getgrgid(st.st_gid);
  std::string user = pw != nullptr ? pw->pw_name : absl::StrCat(st.st_uid);
  std::string group = gr != nullptr ? gr->gr_name : absl::StrCat(st.st_gid);
  return absl::StrFormat("%s:%s %04o", user, group, st.st_mode & 07777);
}

Check AccessCheck(const HostFs& fs, const std::string& node) {
  std::string path = fs.Path("/dev/" + node);
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return MakeCheck("access " + node, Level::kFail, std::strerror(errno));
  }
  std::string owner = Owner(st);
  if (faccessat(AT_FDCWD, path.c_str(), R_OK | W_OK, AT_EACCESS) == 0) {
    return MakeCheck(
        "access " + node, Level::kOk,
        absl::StrCat("read-write as uid ", geteuid(), " (", owner, ")"));
  }
  struct group* gr = getgrgid(st.st_gid);
  bool rule_applied = gr != nullptr && std::strcmp(gr->gr_name, kGroup) == 0;
  return MakeCheck(
      "access " + node, Level::kFail,
      absl::StrCat("no read-write access as uid ", geteuid(), " (", owner, ")"),
      rule_applied
          ? absl::StrCat("only root and group ", kGroup,
                         " may use it: sudo usermod -aG ", kGroup,
                         " $USER, then log in again")
          : absl::StrCat("the udev rule (root:", kGroup,
                         " 0660) is not applied: sudo deploy/install-kmod.sh "
                         "installs it; then sudo udevadm trigger "
                         "--subsystem-match=fgds"));
}

// Query issues FGDS_IOCTL_QUERY; storage_fd < 0 asks for no route.
int Query(const QueryFn& query, int dev, int storage_fd, fgds_query* q) {
  std::memset(q, 0, sizeof(*q));
  if (storage_fd >= 0) {
    q->flags = FGDS_QUERY_STORAGE_FD;
    q->storage_fd = storage_fd;
  }
  return query(dev, q);
}

std::string Strerror(int negative_errno) {
  return std::strerror(-negative_errno);
}

// ModuleRouteCheck asks the module whether namespace `ns` can reach the
// GPU behind the open node `dev`.
Check ModuleRouteCheck(const HostFs& fs, const std::string& node,
                       const std::string& ns, int dev, const QueryFn& query) {
  Check check;
  check.name = absl::StrCat("p2p ", node, " <-> ", ns);
  check.group = "module route";
  fgds_query q;
  Fd blk(open(fs.Path("/dev/" + ns).c_str(), O_RDONLY | O_CLOEXEC));
  if (blk.get() < 0) {
    check.level = Level::kSkip;
    check.finding =
        absl::StrCat("cannot open /dev/", ns, ": ", std::strerror(errno),
                     " (run as root to ask the module)");
  } else if (int rc = Query(query, dev, blk.get(), &q); rc != 0) {
    check.level = Level::kFail;
    check.finding = absl::StrCat("FGDS_IOCTL_QUERY: ", Strerror(rc));
  } else if (q.p2p_status == 0) {
    check.level = Level::kOk;
    check.finding =
        q.p2p_distance >= 0
            ? absl::StrCat("module accepts it (distance ", q.p2p_distance, ")")
            : "module accepts it";
  } else {
    check.level = Level::kFail;
    check.finding = absl::StrCat("module refuses it: ", Strerror(q.p2p_status));
    check.hint = q.p2p_status == -EREMOTEIO
                     ? "no peer-to-peer route between them; see the route "
                       "lines above"
                     : "not a block device the module can use";
  }
  return check;
}

// QueryChecks: the node's BAR window, then one route line per namespace
// (folded into one line when `nodes` x namespaces is many).
void QueryChecks(const HostFs& fs, const std::string& node, size_t nodes,
                 const Inventory& inventory, const QueryFn& query,
                 std::vector<Check>* out) {
  std::string name = "query " + node;
  Fd dev(open(fs.Path("/dev/" + node).c_str(), O_RDWR | O_CLOEXEC));
  if (dev.get() < 0) {
    out->push_back(
        MakeCheck(name, Level::kSkip,
                  absl::StrCat("cannot open: ", std::strerror(errno))));
    return;
  }
  fgds_query q;
  if (int rc = Query(query, dev.get(), -1, &q); rc != 0) {
    out->push_back(MakeCheck(
        name, Level::kFail, absl::StrCat("FGDS_IOCTL_QUERY: ", Strerror(rc)),
        "the node does not answer like the fgds module this probe was "
        "built for; reinstall the module and fgds from one tree"));
    return;
  }
  q.version[sizeof(q.version) - 1] = '\0';
  if (q.abi_version != FGDS_ABI_VERSION) {
    out->push_back(
        MakeCheck(name, Level::kFail,
                  absl::StrCat("module ABI ", q.abi_version,
                               ", probe built for ", FGDS_ABI_VERSION),
                  "install the module and fgds from one tree"));
    return;
  }
  out->push_back(MakeCheck(
      name, Level::kOk,
      absl::StrFormat("module %s, BAR%u %s at 0x%x, max buffer %s, %u per "
                      "open file",
                      q.version, q.bar_index, FormatBytes(q.bar_size),
                      q.bar_start, FormatBytes(q.max_buffer_size),
                      q.max_buffers)));
  std::vector<Check> routes;
  std::vector<std::string> labels;
  for (const NvmeController& ctrl : inventory.nvme) {
    for (const std::string& ns : ctrl.namespaces) {
      routes.push_back(ModuleRouteCheck(fs, node, ns, dev.get(), query));
      labels.push_back(ns);
    }
  }
  if (routes.empty()) return;
  if (routes.size() * nodes > kMaxPairLines) {
    out->push_back(Fold("p2p " + node, routes, labels));
  } else {
    out->insert(out->end(), routes.begin(), routes.end());
  }
}

}  // namespace

int IoctlQuery(int dev_fd, fgds_query* q) {
  return ioctl(dev_fd, FGDS_IOCTL_QUERY, q) == 0 ? 0 : -errno;
}

void AddFgdsChecks(const HostFs& fs, const Inventory& inventory,
                   const QueryFn& query, std::vector<Check>* out) {
  bool loaded = fs.Exists("/sys/module/fgds");
  if (loaded) {
    std::string version = fs.ReadLine("/sys/module/fgds/version", "unknown");
    out->push_back(
        MakeCheck("fgds module", Level::kOk, "loaded, version " + version));
  } else {
    out->push_back(
        MakeCheck("fgds module", Level::kFail, "not loaded", ModuleHint(fs)));
  }

  std::vector<std::string> nodes;
  if (auto names = fs.List("/dev"); names.ok()) {
    for (const std::string& name : *names) {
      // Only the module's names: fgds_<domain>_<bus>_<dev>_<fn>.
      if (!NodeBdf(name).empty()) nodes.push_back(name);
    }
  }
  if (nodes.empty()) {
    if (loaded) {
      out->push_back(MakeCheck(
          "fgds nodes", Level::kFail, "none in /dev",
          "the module accepted no GPU; dmesg | grep fgds says why (BAR, "
          "IOMMU domain, PAT conflict)"));
    } else {
      out->push_back(
          MakeCheck("fgds nodes", Level::kSkip, "none (module not loaded)"));
    }
    return;
  }
  std::vector<std::string> missing;
  for (const PciDevice& gpu : inventory.gpus) {
    bool found = false;
    for (const std::string& node : nodes) found |= NodeBdf(node) == gpu.bdf;
    if (!found) missing.push_back(gpu.bdf);
  }
  std::string list = absl::StrJoin(nodes, " ");
  if (missing.empty()) {
    out->push_back(MakeCheck("fgds nodes", Level::kOk, list));
  } else {
    out->push_back(MakeCheck(
        "fgds nodes", Level::kWarn,
        absl::StrCat(list, "; none for ", absl::StrJoin(missing, " ")),
        "the module skipped those GPUs; dmesg | grep fgds says why"));
  }
  for (const std::string& node : nodes) {
    out->push_back(AccessCheck(fs, node));
    QueryChecks(fs, node, nodes.size(), inventory, query, out);
  }
}

}  // namespace fgds::probe
