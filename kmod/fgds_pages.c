// SPDX-License-Identifier: GPL-2.0
/*
 * Struct pages for a GPU's BAR, while registrations use it.
 *
 * O_DIRECT pins the user pages of its buffer through GUP, so the BAR range
 * behind a mapping needs struct pages. One range covers the whole BAR: 7.x's
 * iov_iter_extract_bvecs() ends a bio where the pagemap of the next page
 * differs, so a single O_DIRECT request whose buffer crossed two pagemaps
 * completed short (the lab's io_uring READV test showed it).
 *
 * With CONFIG_PCI_P2PDMA the pages are the kernel's peer-to-peer pages
 * (MEMORY_DEVICE_PCI_P2PDMA, pci_p2pdma_add_resource()): the kernel maps
 * them uncached, GUP hands them only to block I/O that asked for P2P pages
 * (so io_uring fixed buffers, vmsplice and RDMA MRs, the long-term pins
 * fgds could not take back, are refused), and the block layer checks the
 * route to the device of every bio it maps them for (a dm/md stack or a
 * filesystem's second device included). Without it, the pages are
 * MEMORY_DEVICE_GENERIC (docs/kmod.md, "Page type", says what that costs).
 *
 * Either way a page fgds hands out holds one base reference, so
 * "refcount - mapcount > 1" means "pinned by I/O" (fgds_buffer.c).
 */
#include <linux/memremap.h>
#include <linux/pci-p2pdma.h>
#include <linux/slab.h>

#include "fgds.h"
#include "fgds_compat.h"

#if IS_ENABLED(CONFIG_PCI_P2PDMA)
/*
 * The provider's pages are created once per binding of the GPU's driver
 * (the kernel ties them to it, devres) and outlive fgds: a reloaded fgds
 * finds them. Only pages covering exactly this BAR and made by the P2PDMA
 * core are taken; anything else (another module's pagemap) is -EBUSY.
 */
static int fgds_p2p_provider_add(struct fgds_dev *fdev)
{
	unsigned long pfn = PHYS_PFN(fdev->bar_start);
	struct dev_pagemap *pgmap = fgds_get_dev_pagemap(pfn);
	bool whole_bar;

	if (!pgmap)
		return pci_p2pdma_add_resource(fdev->pdev, fdev->bar,
					       fdev->bar_size, 0);
	whole_bar = pgmap->type == MEMORY_DEVICE_PCI_P2PDMA &&
		    pgmap->nr_range == 1 &&
		    pgmap->range.start == fdev->bar_start &&
		    range_len(&pgmap->range) == fdev->bar_size;
	put_dev_pagemap(pgmap);
	if (whole_bar)
		return 0;
	dev_warn(
		fdev->device,
		"BAR%d already has struct pages fgds did not make; not using it\n",
		fdev->bar);
	return -EBUSY;
}

/*
 * Takes the whole BAR out of the provider's pool, so no other P2PDMA user
 * (the pool is not published, but root can allocate through sysfs) is
 * handed memory that belongs to the GPU driver's allocations, and gives
 * every page fgds's base reference. The pool is first-fit and fgds added
 * the BAR as one chunk, so the allocation is the BAR itself when free.
 */
static int fgds_pages_create(struct fgds_dev *fdev)
{
	unsigned long pfn = PHYS_PFN(fdev->bar_start);
	unsigned long i, n = fdev->bar_size >> PAGE_SHIFT;
	void *kaddr;
	int ret;

	ret = fgds_p2p_provider_add(fdev);
	if (ret)
		return ret;
	kaddr = pci_alloc_p2pmem(fdev->pdev, fdev->bar_size);
	if (!kaddr)
		return -EBUSY;
	if (virt_to_page(kaddr) != pfn_to_page(pfn)) {
		pci_free_p2pmem(fdev->pdev, kaddr, fdev->bar_size);
		return -EBUSY;
	}
	/*
	 * An idle P2PDMA page's count is 1 before the 6.15 ZONE_DEVICE
	 * refcount rework and 0 after; it is put back on release, so the
	 * provider's own free path (at 0) never runs for fgds's use.
	 */
	fdev->idle_page_ref = page_ref_count(pfn_to_page(pfn));
	for (i = 0; i < n; i++) {
		set_page_count(pfn_to_page(pfn + i), 1);
		if (!(i & 1023))
			cond_resched();
	}
	fdev->p2p_kaddr = kaddr;
	return 0;
}

/* Every registration is released, so every page is back at one reference. */
static void fgds_pages_destroy(struct fgds_dev *fdev)
{
	unsigned long pfn = PHYS_PFN(fdev->bar_start);
	unsigned long i, n = fdev->bar_size >> PAGE_SHIFT;

	for (i = 0; i < n; i++) {
		struct page *page = pfn_to_page(pfn + i);

		WARN_ON_ONCE(page_ref_count(page) != 1);
		set_page_count(page, fdev->idle_page_ref);
		if (!(i & 1023))
			cond_resched();
	}
	pci_free_p2pmem(fdev->pdev, fdev->p2p_kaddr, fdev->bar_size);
	fdev->p2p_kaddr = NULL;
}
#else
/*
 * GENERIC pages start with a reference count of 1 on every supported kernel
 * and are never handed to an allocator, so vmf_insert_page() and plain GUP
 * work on them. They are created when the first registration arrives and
 * removed when the last one is released, so an idle module costs nothing.
 *
 * Only when the administrator asks (allow_generic_pages), and only on x86:
 * the kernel maps them write-back, which x86 makes safe for MMIO through
 * the firmware's MTRRs (the BAR's range is uncached there, and the stricter
 * type wins); arm64 has no such rule, and a cacheable mapping of MMIO is
 * unpredictable there.
 */
static int fgds_pages_create(struct fgds_dev *fdev)
{
	struct dev_pagemap *pgmap;
	void *addr;

	if (!IS_ENABLED(CONFIG_X86) || !fgds_allow_generic_pages) {
		dev_info_ratelimited(
			fdev->device,
			"this kernel has no CONFIG_PCI_P2PDMA; registrations need allow_generic_pages=1 (x86 only, docs/kmod.md)\n");
		return -EOPNOTSUPP;
	}

	pgmap = kzalloc(sizeof(*pgmap), GFP_KERNEL);
	if (!pgmap)
		return -ENOMEM;
	pgmap->type = MEMORY_DEVICE_GENERIC;
	pgmap->range.start = fdev->bar_start;
	pgmap->range.end = fdev->bar_start + fdev->bar_size - 1;
	pgmap->nr_range = 1;
	addr = memremap_pages(pgmap, dev_to_node(&fdev->pdev->dev));
	if (IS_ERR(addr)) {
		kfree(pgmap);
		return PTR_ERR(addr);
	}
	fdev->pgmap = pgmap;
	return 0;
}

static void fgds_pages_destroy(struct fgds_dev *fdev)
{
	memunmap_pages(fdev->pgmap);
	kfree(fdev->pgmap);
	fdev->pgmap = NULL;
}
#endif

/* Makes sure the BAR has struct pages; counts one more user. */
int fgds_pages_get(struct fgds_dev *fdev)
{
	int ret = 0;

	mutex_lock(&fdev->pages_lock);
	if (fdev->pages_users) {
		fdev->pages_users++;
		goto out_unlock;
	}
	ret = fgds_pages_create(fdev);
	if (ret)
		dev_warn_ratelimited(
			fdev->device,
			"cannot create struct pages for BAR%d: %d\n", fdev->bar,
			ret);
	else
		fdev->pages_users = 1;
out_unlock:
	mutex_unlock(&fdev->pages_lock);
	return ret;
}

void fgds_pages_put(struct fgds_dev *fdev)
{
	mutex_lock(&fdev->pages_lock);
	/*
	 * Safe: every registration is released, and a registration is
	 * released only after none of its pages is mapped or pinned
	 * (fgds_buffer_wait_unpinned).
	 */
	if (!WARN_ON(!fdev->pages_users) && !--fdev->pages_users)
		fgds_pages_destroy(fdev);
	mutex_unlock(&fdev->pages_lock);
}
