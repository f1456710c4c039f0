/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fgds: makes GPU memory exported as a dma-buf a target for O_DIRECT I/O.
 *
 * Objects and lifetimes:
 *   fgds_dev     one per served PCI device (GPU), from module load to
 *                unload; owns the char device and, while registrations
 *                exist, the struct pages backing its BAR (fgds_pages.c).
 *   fgds_file    one per open of /dev/fgds_*; owns its registrations.
 *   fgds_buffer  one registration: a dma-buf attachment, the BAR extents it
 *                maps to, and the mmap token. Referenced by its open file
 *                (until UNREG_BUFFER or close) and by each VMA mapping it.
 *                When the last reference goes, a worker waits until no page
 *                of it is pinned by I/O any more, then releases the
 *                attachment and the pages (fgds_buffer.c).
 *
 * Lock order (lockdep-checked in the lab's lockdep guest kernel):
 *   mm's mmap_lock -> fgds_file.lock -> fgds_buffer.lock
 *	(mmap looks the registration up in its file, then checks revoked;
 *	 REG_BUFFER publishes buffer.mapping under both)
 *   mm's mmap_lock -> fgds_buffer.lock -> page-table locks
 *	(a fault inserts a page under the buffer lock, shared)
 *   dma-buf reservation lock -> fgds_buffer.lock -> i_mmap_rwsem
 *	(an exporter invalidation revokes and zaps under the buffer lock)
 * fgds_dev.pages_lock and the reservation lock are taken with no other
 * fgds lock held, and fgds never takes the reservation lock under mmap_lock.
 */
#ifndef FGDS_H
#define FGDS_H

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/rwsem.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "fgds_ioctl.h"

/*
 * A token is id << FGDS_TOKEN_SHIFT, so the mmap offset ranges of two
 * registrations never overlap and unmap_mapping_range() on one token never
 * touches another's mappings. That is only true while a registration fits
 * in 1 << FGDS_TOKEN_SHIFT bytes: fgds_dev_max_buffer_size() enforces it.
 */
#define FGDS_TOKEN_SHIFT 40
#define FGDS_MAX_REGISTRATION_SIZE (1ULL << FGDS_TOKEN_SHIFT)
#define FGDS_TOKEN_MAX_ID ((1U << (63 - FGDS_TOKEN_SHIFT)) - 1)

/* Module parameters (fgds_main.c). */
extern unsigned int fgds_max_buffers;
extern unsigned long long fgds_max_buffer_size;
extern bool fgds_allow_host_bridge;
extern unsigned int fgds_invalidate_timeout_ms;
extern bool fgds_allow_generic_pages;

struct fgds_dev {
	struct pci_dev *pdev; /* reference held for the device's life */
	int bar;
	phys_addr_t bar_start; /* CPU physical address */
	u64 bar_bus_start; /* the same BAR as the PCI bus sees it */
	u64 bar_size;
	struct cdev cdev;
	struct device *device;

	struct mutex pages_lock;
	unsigned int pages_users; /* registrations holding the pages */
#if IS_ENABLED(CONFIG_PCI_P2PDMA)
	void *p2p_kaddr; /* the BAR, allocated from its P2PDMA pool */
	int idle_page_ref; /* a free P2PDMA page's count, put back */
#else
	struct dev_pagemap *pgmap; /* the BAR's struct pages, while used */
#endif

	/*
	 * Every live registration, by id, from REG_BUFFER until its release
	 * has finished (so a token is not reused while pages of the old one
	 * may still be pinned).
	 */
	struct xarray buffers;
	atomic_t registrations;
};

struct fgds_file {
	struct fgds_dev *fdev;
	struct address_space *mapping; /* where this file's VMAs live */
	struct mutex lock;
	struct list_head buffers; /* registered fgds_buffers, under lock */
	unsigned int nr_buffers;
};

/* A physically contiguous piece of a registration, in buffer order. */
struct fgds_extent {
	u64 offset; /* in the registration */
	u64 len;
	phys_addr_t phys; /* CPU physical address inside the BAR */
};

struct fgds_buffer {
	struct kref ref; /* the registration + one per VMA */
	struct fgds_dev *fdev;
	u32 id;
	u64 token;
	u64 size;

	struct dma_buf *dmabuf;
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;
	struct fgds_extent *extents;
	unsigned int nr_extents;
	/* The extents' struct pages exist (store-release). */
	bool has_pages;

	/*
	 * Faults take it shared and insert pages only while !revoked;
	 * revoking takes it exclusive, so after revoke no new page can be
	 * inserted and the zap that follows catches every inserted one.
	 */
	struct rw_semaphore lock;
	bool revoked;
	/* Owner's mapping while registered (NULL after), for zapping. */
	struct address_space *mapping;

	struct fgds_file *owner; /* under owner->lock; NULL once unregistered */
	struct list_head file_node;
	struct work_struct release_work;
};

/* fgds_main.c */
extern struct workqueue_struct *fgds_release_wq;

/*
 * The largest registration on @fdev: the max_buffer_size parameter (at
 * most a token's offset range, 1 TiB: its setter refuses more, and BARs
 * above 1 TiB exist), or the BAR size when that is smaller.
 */
static inline u64 fgds_dev_max_buffer_size(const struct fgds_dev *fdev)
{
	return min_t(u64, READ_ONCE(fgds_max_buffer_size), fdev->bar_size);
}

/* fgds_file.c */
extern const struct file_operations fgds_fops;
extern const struct attribute_group *fgds_dev_groups[];

/* fgds_buffer.c */
int fgds_buffer_register(struct fgds_file *ff, struct fgds_reg_buffer *args);
int fgds_buffer_unregister(struct fgds_file *ff, u64 token);
void fgds_buffer_unregister_all(struct fgds_file *ff);
int fgds_buffer_mmap(struct fgds_file *ff, struct vm_area_struct *vma);

/* fgds_pages.c */
int fgds_pages_get(struct fgds_dev *fdev);
void fgds_pages_put(struct fgds_dev *fdev);

/* fgds_p2p.c */
int fgds_p2p_check_fd(struct fgds_dev *fdev, int storage_fd, int *distance);

#endif /* FGDS_H */
