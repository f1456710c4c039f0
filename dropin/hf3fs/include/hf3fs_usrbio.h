/* File: dropin/hf3fs/include/hf3fs_usrbio.h
 *
 * 3FS's USRBIO C API (deepseek-ai/3FS src/lib/api/hf3fs_usrbio.h, and the
 * GPU-iov calls of its GDR proposal) as FGDS's libhf3fs_api_shared.so
 * implements it on usrbio rings, so that a program written for 3FS runs on
 * an FGDS mount by relinking. Declared from 3FS's public header and docs
 * with the same names, struct layouts and signatures; the semantics FGDS
 * gives each call, and what it cannot honour, are in docs/dropin.md.
 *
 * Return conventions are 3FS's, mixed as they are there: most calls return
 * 0 (or a count / index) or -errno; hf3fs_reg_fd returns <= 0 on success
 * and a positive errno on failure, as do hf3fs_hardlink and
 * hf3fs_punchhole. A completion's result is bytes or -errno.
 */
#ifndef FGDS_DROPIN_HF3FS_USRBIO_H_
#define FGDS_DROPIN_HF3FS_USRBIO_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HF3FS_SUPER_MAGIC 0x8f3f5fff

typedef void* hf3fs_iov_handle;

/* A buffer I/O reads into and writes from (host memory shared with the
 * daemon, or GPU memory). Caller-owned; filled by the create calls. */
struct hf3fs_iov {
  uint8_t* base;
  hf3fs_iov_handle iovh;

  char id[16];
  char mount_point[256];
  size_t size;
  size_t block_size;
  int numa;
};

typedef void* hf3fs_ior_handle;

/* A submission/completion ring. Caller-owned; filled by the create calls.
 * io_depth > 0: the daemon starts I/O once io_depth entries wait (FGDS
 * also starts a partial batch after `timeout` ms, so it never stalls);
 * 0: at once; < 0: at once, at most -io_depth per batch. */
struct hf3fs_ior {
  struct hf3fs_iov iov;
  hf3fs_ior_handle iorh;

  char mount_point[256];
  bool for_read;
  int io_depth;
  int priority;
  int timeout;
  uint64_t flags;
};

struct hf3fs_cqe {
  int32_t index; /* what hf3fs_prep_io returned for the entry */
  int32_t reserved;
  int64_t result; /* bytes or -errno */
  const void* userdata;
};

/* ---- mounts ----------------------------------------------------------- */

/* true when fd is a file of an FGDS mount. */
bool hf3fs_is_hf3fs(int fd);

/* Writes the mount point holding `path` into hf3fs_mount_point (if it
 * fits) and returns its length + 1; -1 when `path` is on no FGDS mount. A
 * return above `size` means the buffer was too small (nothing written). */
int hf3fs_extract_mount_point(char* hf3fs_mount_point, int size,
                              const char* path);

/* ---- iovs ------------------------------------------------------------- */

/* numa >= 0 binds the pages to that node, < 0 binds nothing. block_size:
 * 0, or the unit I/O may not cross (an entry crossing one gets -EINVAL). */
int hf3fs_iovcreate(struct hf3fs_iov* iov, const char* hf3fs_mount_point,
                    size_t size, size_t block_size, int numa);
int hf3fs_iovopen(struct hf3fs_iov* iov, const uint8_t id[16],
                  const char* hf3fs_mount_point, size_t size, size_t block_size,
                  int numa);
int hf3fs_iovwrap(struct hf3fs_iov* iov, void* base, const uint8_t id[16],
                  const char* hf3fs_mount_point, size_t size, size_t block_size,
                  int numa);
void hf3fs_iovunlink(struct hf3fs_iov* iov);
void hf3fs_iovdestroy(struct hf3fs_iov* iov);

/* GPU iovs (3FS's GDR calls). device_id is the CUDA ordinal; block_size
 * must be 0. -ENOTSUP without a usable CUDA device. */
int hf3fs_iovcreate_device(struct hf3fs_iov* iov, const char* hf3fs_mount_point,
                           size_t size, size_t block_size, int device_id);
int hf3fs_iovopen_device(struct hf3fs_iov* iov, const uint8_t id[16],
                         const char* hf3fs_mount_point, size_t size,
                         size_t block_size, int device_id);
int hf3fs_iovwrap_device(struct hf3fs_iov* iov, void* device_ptr,
                         const uint8_t id[16], const char* hf3fs_mount_point,
                         size_t size, size_t block_size, int device_id);

enum hf3fs_mem_type {
  HF3FS_MEM_HOST = 0,
  HF3FS_MEM_DEVICE = 1,
  HF3FS_MEM_MANAGED = 2,
};

bool hf3fs_gdr_available(void);
int hf3fs_gdr_device_count(void);
enum hf3fs_mem_type hf3fs_iov_mem_type(const struct hf3fs_iov* iov);
int hf3fs_iov_device_id(const struct hf3fs_iov* iov);
/* Orders completed I/O on a GPU iov with later GPU work; 0 or -errno. */
int hf3fs_iovsync(const struct hf3fs_iov* iov, int direction);

/* ---- iors ------------------------------------------------------------- */

size_t hf3fs_ior_size(int entries);

int hf3fs_iorcreate(struct hf3fs_ior* ior, const char* hf3fs_mount_point,
                    int entries, bool for_read, int io_depth, int numa);
int hf3fs_iorcreate2(struct hf3fs_ior* ior, const char* hf3fs_mount_point,
                     int entries, bool for_read, int io_depth, int priority,
                     int numa);
int hf3fs_iorcreate3(struct hf3fs_ior* ior, const char* hf3fs_mount_point,
                     int entries, bool for_read, int io_depth, int priority,
                     int timeout, int numa);

#define HF3FS_IOR_ALLOW_READ_UNCOMMITTED 1
#define HF3FS_IOR_FORBID_READ_HOLES 2
int hf3fs_iorcreate4(struct hf3fs_ior* ior, const char* hf3fs_mount_point,
                     int entries, bool for_read, int io_depth, int timeout,
                     int numa, uint64_t flags);

void hf3fs_iordestroy(struct hf3fs_ior* ior);

/* ---- files ------------------------------------------------------------ */

/* 0 (<= 0) on success, a positive errno on failure. flags: 0. */
int hf3fs_reg_fd(int fd, uint64_t flags);
void hf3fs_dereg_fd(int fd);

/* ---- I/O -------------------------------------------------------------- */

int hf3fs_io_entries(const struct hf3fs_ior* ior);

/* Queues one I/O; returns its index (>= 0, echoed in hf3fs_cqe.index) or
 * -errno (-EAGAIN: ring full). One preparing thread per ring. */
int hf3fs_prep_io(const struct hf3fs_ior* ior, const struct hf3fs_iov* iov,
                  bool read, void* ptr, int fd, size_t off, uint64_t len,
                  const void* userdata);
int hf3fs_submit_ios(const struct hf3fs_ior* ior);
/* Waits until min_results completions are ready or abs_timeout
 * (CLOCK_REALTIME; NULL = no limit) passes; returns the number copied into
 * cqes (at most cqec) or -errno. */
int hf3fs_wait_for_ios(const struct hf3fs_ior* ior, struct hf3fs_cqe* cqes,
                       int cqec, int min_results,
                       const struct timespec* abs_timeout);

int hf3fs_hardlink(const char* target, const char* link_name);
int hf3fs_punchhole(int fd, int n, const size_t* start, const size_t* end,
                    size_t flags);

#ifdef __cplusplus
}
#endif

#endif /* FGDS_DROPIN_HF3FS_USRBIO_H_ */
