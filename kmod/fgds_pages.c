// SPDX-License-Identifier: GPL-2.0
/*
 * Struct pages for a GPU's BAR, while registrations use it.
 *
 * O_DIRECT pins the user pages of its buffer through GUP, so the BAR range
 * behind a mapping needs struct pages. They are created for the whole BAR
 * with one memremap_pages() when the first registration arrives and
 * removed when the last one is released, so an idle module costs nothing.
 *
 * One pagemap for the whole BAR, not one per registered range: 7.x's
 * iov_iter_extract_bvecs() ends a bio where the pagemap of the next page
 * differs, so a single O_DIRECT request whose buffer crossed two pagemaps
 * completed short (the lab's io_uring READV test showed it). The price is
 * 64 bytes of struct page per 4 KiB of BAR while in use: 1.6%, 4 GiB for a
 * 256 GiB BAR1.
 *
 * Page type: MEMORY_DEVICE_GENERIC (docs/kmod.md says why not P2PDMA):
 * such pages start with a reference count of 1 on every supported kernel
 * and are never handed to an allocator, so vmf_insert_page() and plain GUP
 * work on them, and "refcount - mapcount == 1" means "not pinned".
 */
#include <linux/memremap.h>
#include <linux/slab.h>

#include "fgds.h"

/* Makes sure the BAR has struct pages; counts one more user. */
int fgds_pages_get(struct fgds_dev *fdev)
{
	struct dev_pagemap *pgmap;
	void *addr;
	int ret = 0;

	mutex_lock(&fdev->pages_lock);
	if (fdev->pages_users) {
		fdev->pages_users++;
		goto out_unlock;
	}
	pgmap = kzalloc(sizeof(*pgmap), GFP_KERNEL);
	if (!pgmap) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	pgmap->type = MEMORY_DEVICE_GENERIC;
	pgmap->range.start = fdev->bar_start;
	pgmap->range.end = fdev->bar_start + fdev->bar_size - 1;
	pgmap->nr_range = 1;
	addr = memremap_pages(pgmap, dev_to_node(&fdev->pdev->dev));
	if (IS_ERR(addr)) {
		ret = PTR_ERR(addr);
		dev_warn(fdev->device,
			 "cannot create struct pages for BAR%d: %d\n",
			 fdev->bar, ret);
		kfree(pgmap);
		goto out_unlock;
	}
	fdev->pgmap = pgmap;
	fdev->pages_users = 1;
out_unlock:
	mutex_unlock(&fdev->pages_lock);
	return ret;
}

void fgds_pages_put(struct fgds_dev *fdev)
{
	mutex_lock(&fdev->pages_lock);
	if (!WARN_ON(!fdev->pages_users) && !--fdev->pages_users) {
		/*
		 * Safe: every registration is released, and a registration
		 * is released only after none of its pages is mapped or
		 * pinned (fgds_buffer_wait_unpinned).
		 */
		memunmap_pages(fdev->pgmap);
		kfree(fdev->pgmap);
		fdev->pgmap = NULL;
	}
	mutex_unlock(&fdev->pages_lock);
}
