#include "fusefs/abort_on_death.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <new>

#include "common/errno_status.h"

namespace fgds::fusefs {

// One page set up before the fork, read by the guard. The guard allocates
// nothing (the daemon forks it while other threads run, so malloc's state
// in the child may be mid-change): everything it needs is formatted here.
struct AbortOnDeath::Shared {
  // Locked by the serving thread for the daemon's life: robust, so the
  // kernel releases it (FUTEX_OWNER_DIED) as that thread exits.
  pthread_mutex_t mutex;
  int disarmed;  // set before a clean unlock
  // The mount as /proc/self/mountinfo shows it: "major:minor" (field 3)
  // and the mountpoint with space, tab, newline and backslash as \ooo
  // (field 5).
  char dev_field[32];
  char mount_field[PATH_MAX * 4 + 1];
  char abort_path[96];  // /sys/fs/fuse/connections/<dev>/abort
  char message[PATH_MAX + 160];
};

namespace {

constexpr char kFusectl[] = "/sys/fs/fuse/connections";

// mountinfo's escaping of a path (fs/proc_namespace.c: mangle " \t\n\\").
void Escape(const char* in, char* out, size_t size) {
  size_t o = 0;
  for (; *in != '\0' && o + 5 < size; ++in) {
    const unsigned char c = static_cast<unsigned char>(*in);
    if (c == ' ' || c == '\t' || c == '\n' || c == '\\') {
      o += static_cast<size_t>(snprintf(out + o, size - o, "\\%03o", c));
    } else {
      out[o++] = static_cast<char>(c);
    }
  }
  out[o] = '\0';
}

bool FieldIs(const char* start, size_t len, const char* want) {
  return strlen(want) == len && memcmp(start, want, len) == 0;
}

using Shared = AbortOnDeath::Shared;

// Whether one mountinfo line (no newline) is the guarded mount.
bool LineIsMount(const char* line, size_t len, const Shared* s) {
  // id parent major:minor root mountpoint ...
  const char* fields[5];
  size_t lens[5];
  size_t f = 0;
  size_t i = 0;
  while (f < 5 && i < len) {
    fields[f] = line + i;
    size_t start = i;
    while (i < len && line[i] != ' ') ++i;
    lens[f++] = i - start;
    ++i;  // the space
  }
  return f == 5 && FieldIs(fields[2], lens[2], s->dev_field) &&
         FieldIs(fields[4], lens[4], s->mount_field);
}

// Whether the guarded mount is still in our mount table. Reads with fixed
// buffers (no allocation in the guard).
bool MountStillThere(const Shared* s) {
  int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  static char chunk[8192];
  static char line[sizeof(Shared::mount_field) + 512];
  size_t len = 0;
  bool overlong = false;
  bool found = false;
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (chunk[i] == '\n') {
        if (!overlong && LineIsMount(line, len, s)) found = true;
        len = 0;
        overlong = false;
      } else if (len < sizeof(line)) {
        line[len++] = chunk[i];
      } else {
        overlong = true;
      }
    }
  }
  close(fd);
  return found;
}

void WriteAll(int fd, const char* text) {
  size_t left = strlen(text);
  while (left > 0) {
    ssize_t n = write(fd, text, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text += n;
    left -= static_cast<size_t>(n);
  }
}

// The guard process. Only system calls from here on.
[[noreturn]] void GuardMain(Shared* s) {
  prctl(PR_SET_NAME, "fgds-guard");
  // Nothing of the daemon's: above all not /dev/fuse, whose last holder
  // must be the daemon, nothing on the mount, and not its stdio either
  // (`fgds mount` in the background hands its caller's pipe to the daemon
  // until the mount is ready; held here, the caller would wait for its
  // end for as long as the daemon lives).
  int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int std_fd = 0; null_fd >= 0 && std_fd < 3; ++std_fd) {
    dup2(null_fd, std_fd);
  }
  syscall(SYS_close_range, 3u, ~0u, 0u);
  if (chdir("/") != 0) _exit(1);
  // Signals meant for the daemon's group (a terminal's ^C, a service
  // stop) must not end the guard before the daemon is gone.
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  // glibc's robust mutex word is the kernel's robust futex ABI (futex(2)):
  // the owner's tid, FUTEX_WAITERS, FUTEX_OWNER_DIED. Wait until no thread
  // owns it: a clean unlock or the owner's death.
  int* word = &s->mutex.__data.__lock;
  for (;;) {
    int v = __atomic_load_n(word, __ATOMIC_ACQUIRE);
    if ((v & FUTEX_TID_MASK) == 0) break;
    if ((v & FUTEX_WAITERS) == 0) {
      if (!__atomic_compare_exchange_n(word, &v, v | FUTEX_WAITERS, false,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        continue;
      }
      v |= FUTEX_WAITERS;
    }
    // Not FUTEX_PRIVATE: the word is in a page shared with the daemon.
    syscall(SYS_futex, word, FUTEX_WAIT, v, nullptr, nullptr, 0);
  }
  if (__atomic_load_n(&s->disarmed, __ATOMIC_ACQUIRE) != 0) _exit(0);
  // The daemon is dying. Unmounted meanwhile, the connection's number may
  // already name another mount: abort only ours.
  if (!MountStillThere(s)) _exit(0);
  int fd = open(s->abort_path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    mount("fusectl", kFusectl, "fusectl", 0, nullptr);
    fd = open(s->abort_path, O_WRONLY | O_CLOEXEC);
  }
  if (fd >= 0) {
    WriteAll(fd, "1");
    close(fd);
    // The daemon's log is gone with it: the kernel's log says what
    // happened to the mount (where there is one to write to).
    int kmsg = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
    if (kmsg >= 0) {
      WriteAll(kmsg, s->message);
      close(kmsg);
    }
  }
  _exit(fd >= 0 ? 0 : 1);
}

}  // namespace

absl::StatusOr<std::unique_ptr<AbortOnDeath>> AbortOnDeath::Start(
    const std::string& mountpoint, dev_t mount_dev) {
  void* page = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return PosixError("mmap the guard's page", errno);
  auto* s = new (page) Shared;
  s->disarmed = 0;
  snprintf(s->dev_field, sizeof(s->dev_field), "%u:%u", major(mount_dev),
           minor(mount_dev));
  Escape(mountpoint.c_str(), s->mount_field, sizeof(s->mount_field));
  // fusectl names a connection by the kernel's dev_t of its superblock.
  snprintf(s->abort_path, sizeof(s->abort_path), "%s/%u/abort", kFusectl,
           (major(mount_dev) << 20) | minor(mount_dev));
  snprintf(s->message, sizeof(s->message),
           "<4>fgds: the daemon of %s died; aborted its FUSE connection "
           "(%s) so that its exit can finish\n",
           mountpoint.c_str(), s->abort_path);
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  int err = pthread_mutex_init(&s->mutex, &attr);
  pthread_mutexattr_destroy(&attr);
  if (err == 0) err = pthread_mutex_lock(&s->mutex);
  if (err != 0) {
    munmap(page, sizeof(Shared));
    return PosixError("lock the guard's mutex", err);
  }
  pid_t pid = fork();
  if (pid == 0) GuardMain(s);
  if (pid < 0) {
    err = errno;
    pthread_mutex_unlock(&s->mutex);
    munmap(page, sizeof(Shared));
    return PosixError("fork the guard", err);
  }
  return std::unique_ptr<AbortOnDeath>(new AbortOnDeath(s, pid));
}

void AbortOnDeath::Disarm() {
  if (shared_ == nullptr) return;
  __atomic_store_n(&shared_->disarmed, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&shared_->mutex);
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  munmap(shared_, sizeof(Shared));
  shared_ = nullptr;
}

}  // namespace fgds::fusefs
