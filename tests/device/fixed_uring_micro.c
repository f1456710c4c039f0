// tests/device/fixed_uring_micro.c: what io_uring fixed files and fixed
// buffers save per cached 4 KiB read, the way a usrbio ring worker reads
// (backend/local/nowait_reader.cc): 16 reads with RWF_NOWAIT per
// io_uring_enter into a shared-memory (memfd) buffer, each thread its own
// single-issuer ring, all threads reading one open file (as an owner and
// its helpers read one client's file). Four ways, interleaved in rounds so
// that drift hits all alike: by descriptor and address ("plain"), fixed
// file, fixed buffer, both. Prints CPU ns per read for each.
//
// Usage: fixed_uring_micro [THREADS [BATCHES_PER_ROUND]]   (defaults 1, 20000)
// Build: cc -O2 -o fixed_uring_micro fixed_uring_micro.c -luring -lpthread
#define _GNU_SOURCE
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum { kModes = 4, kRounds = 8, kBatch = 16 };
static const size_t kFileSize = 64u << 20;
static int g_fd;
static int g_batches;
static unsigned long long g_ns[kModes];
static unsigned long long g_eagain;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

// The thread's CPU time, not the wall clock: on a shared machine the
// thread's turns off the CPU would swamp a difference of tens of ns.
static unsigned long long Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1000000000ull + t.tv_nsec;
}

static void* Reader(void* arg) {
  struct io_uring ring;
  struct io_uring_params p;
  memset(&p, 0, sizeof(p));
  p.flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN |
            IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  if (io_uring_queue_init_params(64, &ring, &p) != 0 ||
      io_uring_register_files(&ring, &g_fd, 1) != 0) {
    fprintf(stderr, "io_uring setup failed\n");
    exit(1);
  }
  int m = memfd_create("micro", 0);
  if (m < 0 || ftruncate(m, kBatch * 4096) != 0) exit(1);
  char* buf =
      mmap(NULL, kBatch * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0);
  if (buf == MAP_FAILED) exit(1);
  memset(buf, 0, kBatch * 4096);  // faulted in, as a client's iov is
  struct iovec iov = {buf, kBatch * 4096};
  if (io_uring_register_buffers(&ring, &iov, 1) != 0) exit(1);
  unsigned seed = (unsigned)(uintptr_t)arg * 7919u + 1;
  unsigned long long ns[kModes] = {0}, eagain = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (int mode = 0; mode < kModes; ++mode) {
      const int fixed_file = mode & 1, fixed_buf = mode & 2;
      const unsigned long long t0 = Now();
      for (int b = 0; b < g_batches; ++b) {
        for (int i = 0; i < kBatch; ++i) {
          struct io_uring_sqe* sqe = io_uring_get_sqe(&ring);
          seed = seed * 1103515245u + 12345u;
          const off_t off = (off_t)((seed >> 8) % (kFileSize / 4096)) * 4096;
          const int fd = fixed_file ? 0 : g_fd;
          if (fixed_buf) {
            io_uring_prep_read_fixed(sqe, fd, buf + i * 4096, 4096, off, 0);
          } else {
            io_uring_prep_read(sqe, fd, buf + i * 4096, 4096, off);
          }
          if (fixed_file) sqe->flags |= IOSQE_FIXED_FILE;
          sqe->rw_flags = RWF_NOWAIT;
        }
        io_uring_submit(&ring);
        for (int i = 0; i < kBatch; ++i) {
          struct io_uring_cqe* cqe;
          if (io_uring_wait_cqe(&ring, &cqe) != 0) exit(1);
          if (cqe->res != 4096) {
            if (cqe->res != -EAGAIN) {
              fprintf(stderr, "read: %d\n", cqe->res);
              exit(1);
            }
            ++eagain;
          }
          io_uring_cqe_seen(&ring, cqe);
        }
      }
      ns[mode] += Now() - t0;
    }
  }
  pthread_mutex_lock(&g_mu);
  for (int k = 0; k < kModes; ++k) g_ns[k] += ns[k];
  g_eagain += eagain;
  pthread_mutex_unlock(&g_mu);
  return NULL;
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 1;
  g_batches = argc > 2 ? atoi(argv[2]) : 20000;
  char path[] = "/var/tmp/fixed_uring_micro.XXXXXX";
  g_fd = mkstemp(path);
  if (g_fd < 0) return 1;
  unlink(path);
  char* data = malloc(kFileSize);
  for (size_t i = 0; i < kFileSize; ++i) data[i] = (char)i;
  if (pwrite(g_fd, data, kFileSize, 0) != (ssize_t)kFileSize) return 1;
  free(data);
  // A second thread exists either way: in a multithreaded process each
  // read by descriptor takes and drops a reference on the open file.
  pthread_t t[256];
  const int n = threads < 1 ? 1 : threads > 256 ? 256 : threads;
  for (int i = 0; i < n; ++i)
    pthread_create(&t[i], NULL, Reader, (void*)(uintptr_t)i);
  for (int i = 0; i < n; ++i) pthread_join(t[i], NULL);
  static const char* names[kModes] = {"plain", "fixed-file", "fixed-buffer",
                                      "both"};
  const double reads = (double)n * kRounds * g_batches * kBatch;
  printf("threads %d, CPU ns per read:", n);
  for (int k = 0; k < kModes; ++k)
    printf(" %s %.0f", names[k], g_ns[k] / reads);
  printf(" (EAGAIN %llu of %.0f)\n", g_eagain, reads * kModes);
  return 0;
}
