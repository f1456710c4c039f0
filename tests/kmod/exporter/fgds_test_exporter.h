/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * File: tests/kmod/exporter/fgds_test_exporter.h
 *
 * User interface of fgds_test_exporter.ko, the lab's stand-in for a GPU
 * driver: it binds the QEMU ivshmem-plain device and exports ranges of its
 * RAM-backed BAR2 as dma-bufs of bus addresses without struct pages, the
 * way the NVIDIA driver exports GPU memory. /dev/fgds_test_exporter.
 *
 * All structs are fixed size with explicit padding; unknown flags and
 * nonzero pad fields fail with -EINVAL, unknown ioctls with -ENOTTY.
 */
#ifndef _UAPI_FGDS_TEST_EXPORTER_H
#define _UAPI_FGDS_TEST_EXPORTER_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define TEXP_IOCTL_MAGIC 0xF7

struct texp_info {
	__u64 bar_bus_addr; /* out: pci_bus_address() of BAR2 */
	__u64 bar_phys_start; /* out: pci_resource_start() of BAR2 */
	__u64 bar_size; /* out: bytes */
	char pci_name[32]; /* out: "0000:00:03.0", NUL-terminated */
};

/* texp_export.flags */
/* sg addresses deliberately point past the end of the BAR */
#define TEXP_OUTSIDE_BAR (1u << 0)
/* segments listed in reverse physical order */
#define TEXP_REVERSE (1u << 1)
#define TEXP_VALID_FLAGS (TEXP_OUTSIDE_BAR | TEXP_REVERSE)

struct texp_export {
	__u64 offset; /* in: start inside BAR2, page aligned */
	__u64 size; /* in: bytes, page aligned, nonzero */
	__u64 segment_size; /* in: sg entry size, page aligned; 0 = one */
	__u32 flags; /* in: TEXP_* */
	__s32 fd; /* out: the dma-buf, O_RDWR | O_CLOEXEC */
};

/* What importers hold of a dma-buf of ours right now. */
struct texp_status {
	__s32 fd; /* in: a dma-buf exported by this module */
	__u32 pad; /* must be 0 */
	__u32 attachments; /* out: attached importers */
	__u32 mappings; /* out: sg_tables handed out, not unmapped */
	__u32 revoked; /* out: 1 after REVOKE */
	__u32 pad2; /* out: 0 */
};

struct texp_revoke {
	__s32 fd; /* in: a dma-buf exported by this module */
	__u32 pad; /* must be 0 */
};

#define TEXP_IOCTL_INFO _IOR(TEXP_IOCTL_MAGIC, 0, struct texp_info)
#define TEXP_IOCTL_EXPORT _IOWR(TEXP_IOCTL_MAGIC, 1, struct texp_export)
#define TEXP_IOCTL_REVOKE _IOW(TEXP_IOCTL_MAGIC, 2, struct texp_revoke)
#define TEXP_IOCTL_STATUS _IOWR(TEXP_IOCTL_MAGIC, 3, struct texp_status)

#endif /* _UAPI_FGDS_TEST_EXPORTER_H */
