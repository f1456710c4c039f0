#include "fusefs/session/client_eventfd.h"

#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace fgds::session {

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u +
         static_cast<uint64_t>(ts.tv_nsec);
}

int CheckClientEventfd(int fd) {
  char target[64] = {};
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  if (readlink(link.c_str(), target, sizeof(target) - 1) < 0 ||
      strcmp(target, "anon_inode:[eventfd]") != 0) {
    return -EINVAL;
  }
  const std::string info = "/proc/self/fdinfo/" + std::to_string(fd);
  FILE* f = fopen(info.c_str(), "re");
  if (f == nullptr) return -EINVAL;
  char line[128];
  int ret = 0;
  while (fgets(line, sizeof(line), f) != nullptr) {
    int semaphore = 0;
    if (sscanf(line, "eventfd-semaphore: %d", &semaphore) == 1 &&
        semaphore != 0) {
      ret = -EINVAL;
    }
  }
  fclose(f);
  return ret;
}

bool EventfdWriteWouldBlock(int efd) {
  const std::string info = "/proc/self/fdinfo/" + std::to_string(efd);
  FILE* f = fopen(info.c_str(), "re");
  if (f == nullptr) return true;
  char line[128];
  bool known = false;
  unsigned long long count = 0;
  while (fgets(line, sizeof(line), f) != nullptr) {
    if (sscanf(line, "eventfd-count: %llx", &count) == 1) known = true;
  }
  fclose(f);
  // A write of 1 blocks only while the counter is at its maximum,
  // 0xfffffffffffffffe (eventfd(2)).
  return !known || count >= 0xfffffffffffffffeull;
}

uint64_t ReadEventfdNoWait(int efd) {
  uint64_t count = 0;
  iovec iov = {&count, sizeof(count)};
  ssize_t n;
  do {
    n = preadv2(efd, &iov, 1, -1, RWF_NOWAIT);
  } while (n < 0 && errno == EINTR);
  return n == sizeof(count) ? count : 0;
}

void SignalOwnEventfd(int efd) {
  uint64_t one = 1;
  // EAGAIN means the counter is already nonzero: the reader wakes anyway.
  (void)!write(efd, &one, sizeof(one));
}

bool EventfdWriteWatch::Signal(int efd) {
  {
    fgds::SpinLockHolder lock(&mu_);
    fd_ = efd;
    since_ns_ = MonotonicNs();
    rescued_ = false;
  }
  uint64_t one = 1;
  // Returns at once for every client but one that cleared O_NONBLOCK and
  // filled the counter; that one is read back by RescueIfStalled.
  (void)!write(efd, &one, sizeof(one));
  fgds::SpinLockHolder lock(&mu_);
  fd_ = -1;
  return !rescued_;
}

void EventfdWriteWatch::RescueIfStalled(uint64_t now_ns, uint64_t bound_ns) {
  fgds::SpinLockHolder lock(&mu_);
  if (fd_ < 0 || now_ns - since_ns_ < bound_ns) return;
  // A write that is only slow (its thread preempted on a loaded machine)
  // is left alone: reading the counter back would take the client's
  // wakeup, and the ring would stop signalling it for good, a client then
  // asleep forever (seen with 8 clients on a busy 2-CPU machine and on the
  // 16-CPU device). Only a counter the client filled blocks a write.
  if (!EventfdWriteWouldBlock(fd_)) return;
  rescued_ = true;
  // The client may fill the counter again before the writer runs; each
  // read gives the writer another chance, and the watchdog comes back.
  for (int i = 0; i < 64; ++i) ReadEventfdNoWait(fd_);
}

}  // namespace fgds::session
