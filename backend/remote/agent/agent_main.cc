#include "backend/remote/agent/agent_main.h"

#include <signal.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "backend/remote/agent/agent_server.h"
#include "backend/remote/agent/agent_store.h"
#include "backend/remote/agent_key.h"
#if FGDS_HAVE_CEPH
#include "backend/remote/agent/ceph_store.h"
#endif
#if FGDS_HAVE_RDMA
#include "backend/remote/agent/rdma_agent_server.h"
#endif

namespace fgds::remote {
namespace {

constexpr char kUsage[] =
    "usage: fgds agent --listen HOST:PORT --key FILE\n"
    "                  (--data DIR | --ceph-conf CONF [--ceph-id NAME]\n"
    "                   [--ceph-fs NAME] [--ceph-root PATH])\n"
    "                  [--transport tcp|rdma] [--max-connections N]\n"
    "  Serves reads and writes of files under DIR (or of a CephFS subtree)\n"
    "  to fgds daemons that prove the cluster key in FILE (at least 32\n"
    "  bytes, mode 600).\n"
    "  Port 0 picks a free port; the address is printed once listening.\n";

template <typename Server>
int Serve(AgentServerOptions options, std::unique_ptr<AgentStore> store,
          const sigset_t& stop_signals, const char* transport);

int Usage(const char* problem) {
  std::fprintf(stderr, "fgds agent: %s\n%s", problem, kUsage);
  return 2;
}

}  // namespace

int AgentMain(int argc, char** argv) {
  std::string listen, data, key_file, transport = "tcp";
  std::string ceph_conf, ceph_id, ceph_fs, ceph_root = "/";
  uint32_t max_connections = 64;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    std::string number;
    if (arg == "--listen") {
      if (!value(&listen)) return Usage("--listen needs HOST:PORT");
    } else if (arg == "--data") {
      if (!value(&data)) return Usage("--data needs a directory");
    } else if (arg == "--key") {
      if (!value(&key_file)) return Usage("--key needs a file");
    } else if (arg == "--transport") {
      if (!value(&transport)) return Usage("--transport needs tcp or rdma");
    } else if (arg == "--max-connections") {
      if (!value(&number)) return Usage("--max-connections needs a number");
      auto [end, ec] = std::from_chars(
          number.data(), number.data() + number.size(), max_connections);
      if (ec != std::errc() || end != number.data() + number.size() ||
          max_connections == 0 || max_connections > 65536) {
        return Usage("--max-connections: a number from 1 to 65536");
      }
    } else if (arg == "--ceph-conf") {
      if (!value(&ceph_conf)) return Usage("--ceph-conf needs a file");
    } else if (arg == "--ceph-id") {
      if (!value(&ceph_id)) return Usage("--ceph-id needs a name");
    } else if (arg == "--ceph-fs") {
      if (!value(&ceph_fs)) return Usage("--ceph-fs needs a name");
    } else if (arg == "--ceph-root") {
      if (!value(&ceph_root)) return Usage("--ceph-root needs a path");
    } else {
      return Usage(("unknown option " + std::string(arg)).c_str());
    }
  }
  if (listen.empty() || key_file.empty()) {
    return Usage("--listen and --key are required");
  }
  if (data.empty() == ceph_conf.empty()) {
    return Usage("serve one store: --data DIR or --ceph-conf CONF");
  }
#if !FGDS_HAVE_RDMA
  if (transport == "rdma") {
    return Usage(
        "this fgds was built without RDMA (install libibverbs-dev and "
        "librdmacm-dev and rebuild); use --transport tcp");
  }
#endif
  if (transport != "tcp" && transport != "rdma") {
    return Usage("--transport: tcp or rdma");
  }

  AgentServerOptions options;
  auto address = ParseHostPort(listen);
  if (!address.ok())
    return Usage(std::string(address.status().message()).c_str());
  options.listen = *address;
  options.max_connections = max_connections;
  auto key = LoadAgentKey(key_file);
  if (!key.ok()) {
    std::fprintf(stderr, "fgds agent: %s\n",
                 std::string(key.status().message()).c_str());
    return 1;
  }
  options.key = std::move(*key);
  absl::StatusOr<std::unique_ptr<AgentStore>> store;
  if (!data.empty()) {
    store = DirStore::Open(data);
  } else {
#if FGDS_HAVE_CEPH
    backend::CephOptions ceph;
    ceph.conf = ceph_conf;
    ceph.id = ceph_id;
    ceph.fs = ceph_fs;
    ceph.root = ceph_root;
    store = CephStore::Open(ceph);
#else
    store = absl::UnimplementedError(
        "this fgds was built without libcephfs (install libcephfs-dev and "
        "rebuild)");
#endif
  }
  if (!store.ok()) {
    std::fprintf(stderr, "fgds agent: %s\n",
                 std::string(store.status().message()).c_str());
    return 1;
  }

  // The signals that stop the agent are taken by sigwait below, in this
  // thread; block them first so the server's threads inherit the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // A daemon that closes mid-reply must not end the agent.
  signal(SIGPIPE, SIG_IGN);

#if FGDS_HAVE_RDMA
  if (transport == "rdma") {
    return Serve<RdmaAgentServer>(std::move(options), std::move(*store),
                                  stop_signals, "rdma");
  }
#endif
  return Serve<AgentServer>(std::move(options), std::move(*store), stop_signals,
                            "tcp");
}

namespace {

// Runs a started server (either transport: they share options, store and
// counters) until SIGINT or SIGTERM, then prints what it served.
template <typename Server>
int Serve(AgentServerOptions options, std::unique_ptr<AgentStore> store,
          const sigset_t& stop_signals, const char* transport) {
  auto server = Server::Start(std::move(options), std::move(store));
  if (!server.ok()) {
    std::fprintf(stderr, "fgds agent: %s\n",
                 std::string(server.status().message()).c_str());
    return 1;
  }
  std::printf("fgds agent: serving %s on %s (%s)\n",
              (*server)->store().Describe().c_str(),
              (*server)->address().c_str(), transport);
  std::fflush(stdout);
  int signo = 0;
  sigwait(&stop_signals, &signo);
  (*server)->Stop();
  const AgentCounters c = (*server)->counters();
  std::printf(
      "fgds agent: stopped by %s after %lu connections (%lu refused, %lu "
      "failed the key), %lu reads (%lu bytes), %lu writes (%lu bytes, %lu "
      "repeats not applied), %lu syncs (%lu failed), %lu payloads refused "
      "for their CRC\n",
      strsignal(signo), c.connections, c.refused_connections, c.auth_failures,
      c.reads, c.bytes_read, c.writes, c.bytes_written, c.writes_deduplicated,
      c.syncs, c.sync_errors, c.crc_errors);
  return 0;
}

}  // namespace
}  // namespace fgds::remote
