/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note OR MIT */
/*
 * File: include/uapi/fgds_ioctl.h
 *
 * The fgds kernel module's user interface. One character device per GPU,
 * /dev/fgds_<domain>_<bus>_<dev>_<fn> (hex, as in the PCI address), makes a
 * range of GPU memory exported as a dma-buf a valid target for O_DIRECT and
 * io_uring I/O: REG_BUFFER imports the dma-buf and returns a token, mmap of
 * the token maps the range with struct pages backing the GPU's BAR, and a
 * read(2)/pread(2)/io_uring read with O_DIRECT into that mapping makes the
 * storage device DMA straight into GPU memory.
 *
 *   int dev = open("/dev/fgds_0000_3b_00_0", O_RDWR | O_CLOEXEC);
 *   struct fgds_reg_buffer reg = {
 *     .dmabuf_fd = dmabuf, .storage_fd = file_fd, .size = bytes };
 *   ioctl(dev, FGDS_IOCTL_REG_BUFFER, &reg);
 *   void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
 *                  dev, reg.token);
 *   pread(file_fd_opened_with_O_DIRECT, p, bytes, 0);  // NVMe -> GPU
 *   munmap(p, bytes);
 *   struct fgds_unreg_buffer unreg = { .token = reg.token };
 *   ioctl(dev, FGDS_IOCTL_UNREG_BUFFER, &unreg);
 *
 * Rules (all rejections are tested):
 *   - every struct is fixed size with explicit padding; flags outside the
 *     defined set, and nonzero pad or reserved fields, fail with -EINVAL;
 *   - an unknown ioctl number fails with -ENOTTY;
 *   - registrations belong to the open file: only that file can mmap or
 *     unregister a token, and closing the file unregisters them all;
 *   - the dma-buf fd may be closed after REG_BUFFER (the module keeps its
 *     own reference until the registration is gone and its I/O drained).
 * Errors of REG_BUFFER beyond -EINVAL: -EBADF (dmabuf_fd or storage_fd not
 * an open file), -ENOTBLK (storage_fd not on a block device), -EREMOTEIO
 * (no peer-to-peer route between this GPU and that storage device, or a
 * dma-buf segment outside this GPU's BAR), -EOPNOTSUPP (the exporter
 * refused a peer-to-peer attachment), -ENOSPC (too many registrations on
 * this file), -E2BIG (size above max_buffer_size), -ERANGE (offset + size
 * beyond the dma-buf).
 */
#ifndef _UAPI_FGDS_IOCTL_H
#define _UAPI_FGDS_IOCTL_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* Bumped on any incompatible change of this header. */
#define FGDS_ABI_VERSION 1

#define FGDS_IOCTL_MAGIC 0xF6

/* fgds_query.flags */
/* Also report whether storage_fd's block device can reach this GPU. */
#define FGDS_QUERY_STORAGE_FD (1u << 0)
#define FGDS_QUERY_VALID_FLAGS (FGDS_QUERY_STORAGE_FD)

struct fgds_query {
	__u32 flags; /* in: FGDS_QUERY_* */
	/* in: with FGDS_QUERY_STORAGE_FD, a file on, or the node of, a
	 * block device; 0 without it */
	__s32 storage_fd;
	__u32 abi_version; /* out: FGDS_ABI_VERSION of the module */
	__u32 bar_index; /* out: which BAR of the GPU is mapped */
	__u64 bar_start; /* out: CPU physical address of that BAR */
	__u64 bar_size; /* out: its size in bytes */
	__u64 max_buffer_size; /* out: largest registration (bytes) */
	__u32 max_buffers; /* out: registrations allowed per open file */
	__u32 buffers; /* out: registrations on this open file now */
	/* out, with FGDS_QUERY_STORAGE_FD: 0 when REG_BUFFER with this
	 * storage_fd would pass the route check, else the -errno it would
	 * fail with (-ENOTBLK, -EREMOTEIO). */
	__s32 p2p_status;
	/* out: the kernel's P2P distance (lower is closer) when known, else
	 * -1. */
	__s32 p2p_distance;
	char version[32]; /* out: module version string, NUL-terminated */
	__u64 reserved[4]; /* must be 0 */
};

/* fgds_reg_buffer.flags: none defined yet; must be 0. */
#define FGDS_REG_VALID_FLAGS 0u

struct fgds_reg_buffer {
	__s32 dmabuf_fd; /* in: the GPU memory, as a dma-buf */
	/* in: a file on, or the node of, the block device this buffer's I/O
	 * will target; registration fails with -EREMOTEIO unless that device
	 * has a peer-to-peer route to the GPU. Register the same memory again
	 * for another device. */
	__s32 storage_fd;
	__u32 flags; /* in: FGDS_REG_*, must be 0 today */
	__u32 pad; /* must be 0 */
	__u64 dmabuf_offset; /* in: start inside the dma-buf; page aligned */
	__u64 size; /* in: bytes; page aligned, nonzero */
	__u64 token; /* out: the mmap offset of this registration */
	__u64 reserved[2]; /* must be 0 */
};

struct fgds_unreg_buffer {
	__u64 token; /* in: from REG_BUFFER on this open file */
	__u32 flags; /* in: must be 0 */
	__u32 pad; /* must be 0 */
};

#define FGDS_IOCTL_QUERY _IOWR(FGDS_IOCTL_MAGIC, 0, struct fgds_query)
#define FGDS_IOCTL_REG_BUFFER _IOWR(FGDS_IOCTL_MAGIC, 1, struct fgds_reg_buffer)
#define FGDS_IOCTL_UNREG_BUFFER \
	_IOW(FGDS_IOCTL_MAGIC, 2, struct fgds_unreg_buffer)

#endif /* _UAPI_FGDS_IOCTL_H */
