// SPDX-License-Identifier: GPL-2.0
/*
 * Registrations: import a dma-buf of GPU memory, map it into user space
 * with struct pages so that O_DIRECT can target it, and take it down
 * safely (revoke on UNREG, on close and on exporter invalidation; release
 * only after I/O in flight has drained).
 */
#include <linux/delay.h>
#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "fgds.h"
#include "fgds_compat.h"

#define FGDS_TOKEN_INNER_MASK ((1ULL << FGDS_TOKEN_SHIFT) - 1)

/* ---- pages ---------------------------------------------------------- */

static struct page *fgds_buffer_page(struct fgds_buffer *buf, u64 offset)
{
	unsigned int lo = 0, hi = buf->nr_extents;

	/* Extents are in buffer order and cover [0, size) without gaps. */
	while (hi - lo > 1) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (buf->extents[mid].offset <= offset)
			lo = mid;
		else
			hi = mid;
	}
	return pfn_to_page(PHYS_PFN(buf->extents[lo].phys + offset -
				    buf->extents[lo].offset));
}

/*
 * A page fgds hands out holds one base reference plus one per mapping, so
 * anything above that is a GUP pin or get: I/O that may still DMA into it.
 */
static bool fgds_page_pinned(struct page *page)
{
	return page_ref_count(page) - fgds_page_mapcount(page) > 1;
}

/*
 * fgds_buffer_wait_unpinned - wait until no page of @buf is pinned, or
 * @timeout_ms (0: no limit) has passed; false on timeout. Called once the
 * buffer can no longer be faulted in (revoked and zapped), so new pins
 * cannot appear. An O_DIRECT request's pin goes when it completes; a
 * long-term pin (possible only on GENERIC pages, see fgds_pages.c) when its
 * owner drops it.
 */
static bool fgds_buffer_wait_unpinned(struct fgds_buffer *buf,
				      unsigned int timeout_ms)
{
	/*
	 * Deadlines in jiffies, not a sum of the sleeps: msleep(2) sleeps
	 * two jiffies or more (8 ms at HZ=250), which made a 500 ms limit
	 * last over 2 s in the lab (invalidate_timeout) and 60 s about 4.
	 */
	unsigned long start = jiffies;
	unsigned long deadline = start + msecs_to_jiffies(timeout_ms);
	bool warned = false;
	unsigned int i;

	/* No struct pages yet (invalidated while registering): no pins. */
	if (!smp_load_acquire(&buf->has_pages))
		return true;
	for (i = 0; i < buf->nr_extents; i++) {
		struct fgds_extent *e = &buf->extents[i];
		unsigned long pfn = PHYS_PFN(e->phys);
		unsigned long end = PHYS_PFN(e->phys + e->len);

		while (pfn < end) {
			if (!fgds_page_pinned(pfn_to_page(pfn))) {
				pfn++;
				if (!(pfn & 1023))
					cond_resched();
				continue;
			}
			if (timeout_ms && time_after_eq(jiffies, deadline))
				return false;
			msleep(2);
			if (!warned && time_after(jiffies, start + 10 * HZ)) {
				warned = true;
				dev_warn(
					&buf->fdev->pdev->dev,
					"registration %llx: I/O still pinning its pages after 10 s; waiting\n",
					buf->token);
			}
		}
	}
	return true;
}

/* ---- revoke and release --------------------------------------------- */

/*
 * Make every user mapping of @buf fault with SIGBUS from now on, and zap
 * the pages already mapped. REQUIRES: buf->lock held exclusive, which
 * orders this against a fault that is inserting a page.
 */
static void fgds_buffer_revoke_locked(struct fgds_buffer *buf)
{
	lockdep_assert_held_write(&buf->lock);
	if (buf->revoked)
		return;
	buf->revoked = true;
	if (buf->mapping)
		unmap_mapping_range(buf->mapping, buf->token, buf->size, 1);
}

/* Undoes whatever part of fgds_buffer_register succeeded. */
static void fgds_buffer_free(struct fgds_buffer *buf)
{
	struct fgds_dev *fdev = buf->fdev;

	/*
	 * Detach first: detaching waits for a running invalidation (both
	 * hold the reservation lock) and ends further ones, which look at
	 * the pages; only then may the pages go.
	 */
	if (buf->attach) {
		/* An invalidation may have unmapped it already. */
		dma_resv_lock(buf->dmabuf->resv, NULL);
		if (buf->sgt)
			dma_buf_unmap_attachment(buf->attach, buf->sgt,
						 DMA_BIDIRECTIONAL);
		buf->sgt = NULL;
		dma_resv_unlock(buf->dmabuf->resv);
		dma_buf_detach(buf->dmabuf, buf->attach);
	}
	if (buf->dmabuf)
		dma_buf_put(buf->dmabuf);
	if (buf->has_pages)
		fgds_pages_put(fdev);
	if (buf->id) {
		xa_erase(&fdev->buffers, buf->id);
		atomic_dec(&fdev->registrations);
	}
	kvfree(buf->extents);
	kfree(buf);
}

static void fgds_buffer_release_work(struct work_struct *work)
{
	struct fgds_buffer *buf =
		container_of(work, struct fgds_buffer, release_work);

	fgds_buffer_wait_unpinned(buf, 0);
	fgds_buffer_free(buf);
}

/*
 * The last reference went (unregistered and no VMA left). Releasing waits
 * for pinned pages, which can take as long as the I/O, and this can run in
 * munmap, so it is deferred to a worker.
 */
static void fgds_buffer_kref_release(struct kref *ref)
{
	struct fgds_buffer *buf = container_of(ref, struct fgds_buffer, ref);

	queue_work(fgds_release_wq, &buf->release_work);
}

/* Unregister: no more faults, no more zapping via the owner's mapping. */
static void fgds_buffer_retire(struct fgds_buffer *buf)
{
	down_write(&buf->lock);
	fgds_buffer_revoke_locked(buf);
	buf->mapping = NULL;
	up_write(&buf->lock);
	kref_put(&buf->ref, fgds_buffer_kref_release);
}

/*
 * The exporter is moving or freeing the memory (reservation lock held).
 * Zap the mappings and wait until no storage DMA targets the pages any
 * more: once this returns, the exporter may reuse the memory, and fgds
 * cannot stop an O_DIRECT request already issued. Then give the exporter
 * its mapping back, as the dma-buf rules ask of importers; the
 * registration stays (revoked) until UNREG_BUFFER or close.
 *
 * The exporter's free path waits here, so the wait is bounded where it can
 * be: P2PDMA pages cannot be pinned long-term (GUP refuses them to
 * io_uring fixed buffers, vmsplice and RDMA MRs), so every pin is a block
 * request, which the block layer completes or times out; fgds waits up to
 * invalidate_timeout_ms for it and then lets the exporter go, loudly.
 * GENERIC pages (allow_generic_pages=1) can carry a long-term pin that only
 * its owner can drop; returning early would let that pin write into memory
 * the exporter has given to someone else, so there the wait has no bound
 * (docs/kmod.md, "Page type").
 */
static void fgds_invalidate(struct dma_buf_attachment *attach)
{
	struct fgds_buffer *buf = attach->importer_priv;
	unsigned int timeout_ms =
		IS_ENABLED(CONFIG_PCI_P2PDMA) ?
			READ_ONCE(fgds_invalidate_timeout_ms) :
			0;

	dma_resv_assert_held(attach->dmabuf->resv);
	down_write(&buf->lock);
	fgds_buffer_revoke_locked(buf);
	up_write(&buf->lock);
	if (!fgds_buffer_wait_unpinned(buf, timeout_ms))
		dev_err(&buf->fdev->pdev->dev,
			"registration %llx: storage I/O still pins its pages %u ms after the exporter revoked them; returning the memory to the exporter anyway\n",
			buf->token, timeout_ms);
	/* NULL while fgds_buffer_register has not mapped it yet. */
	if (buf->sgt) {
		dma_buf_unmap_attachment(attach, buf->sgt, DMA_BIDIRECTIONAL);
		buf->sgt = NULL;
	}
}

static const struct dma_buf_attach_ops fgds_attach_ops = {
	.allow_peer2peer = true,
	.FGDS_ATTACH_OPS_INVALIDATE = fgds_invalidate,
};

/* ---- register ------------------------------------------------------- */

/*
 * Turns the exporter's DMA addresses for [offset, offset + size) of the
 * dma-buf into BAR extents. Every segment must lie inside this device's
 * BAR: anything else (system memory, another device, IOMMU addresses) is
 * not memory fgds can back with pages, and is refused.
 */
static int fgds_buffer_build_extents(struct fgds_buffer *buf, u64 offset)
{
	struct fgds_dev *fdev = buf->fdev;
	u64 skip = offset, want = buf->size, at = 0;
	struct fgds_extent *ext;
	struct scatterlist *sg;
	unsigned int i, n = 0;

	ext = kvcalloc(buf->sgt->nents ? buf->sgt->nents : 1, sizeof(*ext),
		       GFP_KERNEL);
	if (!ext)
		return -ENOMEM;
	buf->extents = ext;
	for_each_sgtable_dma_sg(buf->sgt, sg, i) {
		u64 bus = sg_dma_address(sg), len = sg_dma_len(sg);
		phys_addr_t phys;

		if (!want)
			break;
		if (skip >= len) {
			skip -= len;
			continue;
		}
		bus += skip;
		len = min(len - skip, want);
		skip = 0;
		if (!PAGE_ALIGNED(bus) || !PAGE_ALIGNED(len) ||
		    bus < fdev->bar_bus_start ||
		    bus - fdev->bar_bus_start >= fdev->bar_size ||
		    len > fdev->bar_size - (bus - fdev->bar_bus_start)) {
			dev_info_ratelimited(
				fdev->device,
				"dma-buf segment %llx+%llx is not inside BAR%d (bus %llx+%llx)\n",
				bus, len, fdev->bar, fdev->bar_bus_start,
				fdev->bar_size);
			return -EREMOTEIO;
		}
		phys = fdev->bar_start + (bus - fdev->bar_bus_start);
		if (n && ext[n - 1].phys + ext[n - 1].len == phys) {
			ext[n - 1].len += len;
		} else {
			ext[n].offset = at;
			ext[n].len = len;
			ext[n].phys = phys;
			n++;
		}
		at += len;
		want -= len;
	}
	buf->nr_extents = n;
	/* The exporter mapped less than the dma-buf's size claims. */
	return want ? -EINVAL : 0;
}

int fgds_buffer_register(struct fgds_file *ff, struct fgds_reg_buffer *args)
{
	struct fgds_dev *fdev = ff->fdev;
	struct fgds_buffer *buf;
	struct sg_table *sgt;
	struct dma_buf *dmabuf;
	int distance, ret;
	u32 id;

	if (args->size > fgds_dev_max_buffer_size(fdev))
		return -E2BIG;
	ret = fgds_p2p_check_fd(fdev, args->storage_fd, &distance);
	if (ret)
		return ret;

	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	kref_init(&buf->ref);
	init_rwsem(&buf->lock);
	INIT_WORK(&buf->release_work, fgds_buffer_release_work);
	INIT_LIST_HEAD(&buf->file_node);
	buf->fdev = fdev;
	buf->size = args->size;

	dmabuf = dma_buf_get(args->dmabuf_fd);
	if (IS_ERR(dmabuf)) {
		ret = PTR_ERR(dmabuf);
		goto out_free;
	}
	buf->dmabuf = dmabuf;
	if (args->dmabuf_offset > dmabuf->size ||
	    args->size > dmabuf->size - args->dmabuf_offset) {
		ret = -ERANGE;
		goto out_free;
	}

	/* Peer-to-peer: the exporter hands out bus addresses, no pages. */
	buf->attach = dma_buf_dynamic_attach(dmabuf, &fdev->pdev->dev,
					     &fgds_attach_ops, buf);
	if (IS_ERR(buf->attach)) {
		ret = PTR_ERR(buf->attach);
		buf->attach = NULL;
		goto out_free;
	}
	/*
	 * Mapped and turned into extents under the reservation lock, so an
	 * invalidation sees either no mapping or all of it.
	 */
	dma_resv_lock(dmabuf->resv, NULL);
	sgt = dma_buf_map_attachment(buf->attach, DMA_BIDIRECTIONAL);
	if (IS_ERR(sgt)) {
		ret = PTR_ERR(sgt);
	} else {
		buf->sgt = sgt;
		ret = fgds_buffer_build_extents(buf, args->dmabuf_offset);
	}
	dma_resv_unlock(dmabuf->resv);
	if (ret)
		goto out_free;

	ret = fgds_pages_get(fdev);
	if (ret)
		goto out_free;
	/* Publishes "the pages exist" to a concurrent invalidation. */
	smp_store_release(&buf->has_pages, true);

	ret = xa_alloc(&fdev->buffers, &id, buf, XA_LIMIT(1, FGDS_TOKEN_MAX_ID),
		       GFP_KERNEL);
	if (ret)
		goto out_free;
	buf->id = id;
	buf->token = (u64)id << FGDS_TOKEN_SHIFT;
	atomic_inc(&fdev->registrations);

	mutex_lock(&ff->lock);
	if (ff->nr_buffers >= fgds_max_buffers) {
		mutex_unlock(&ff->lock);
		ret = -ENOSPC;
		goto out_free;
	}
	down_write(&buf->lock);
	buf->mapping = ff->mapping;
	up_write(&buf->lock);
	buf->owner = ff;
	list_add_tail(&buf->file_node, &ff->buffers);
	ff->nr_buffers++;
	mutex_unlock(&ff->lock);

	args->token = buf->token;
	return 0;

out_free:
	fgds_buffer_free(buf);
	return ret;
}

/* ---- unregister ----------------------------------------------------- */

static struct fgds_buffer *fgds_file_find_locked(struct fgds_file *ff,
						 u64 token)
{
	struct fgds_buffer *buf;

	lockdep_assert_held(&ff->lock);
	list_for_each_entry(buf, &ff->buffers, file_node)
		if (buf->token == token)
			return buf;
	return NULL;
}

/* Takes @buf out of its owner's registrations (UNREG_BUFFER or close). */
static void fgds_file_remove_locked(struct fgds_file *ff,
				    struct fgds_buffer *buf)
{
	lockdep_assert_held(&ff->lock);
	list_del_init(&buf->file_node);
	buf->owner = NULL;
	ff->nr_buffers--;
}

int fgds_buffer_unregister(struct fgds_file *ff, u64 token)
{
	struct fgds_buffer *buf;

	mutex_lock(&ff->lock);
	buf = fgds_file_find_locked(ff, token);
	if (!buf) {
		mutex_unlock(&ff->lock);
		return -EINVAL;
	}
	fgds_file_remove_locked(ff, buf);
	mutex_unlock(&ff->lock);

	fgds_buffer_retire(buf);
	return 0;
}

void fgds_buffer_unregister_all(struct fgds_file *ff)
{
	struct fgds_buffer *buf;

	for (;;) {
		mutex_lock(&ff->lock);
		buf = list_first_entry_or_null(&ff->buffers, struct fgds_buffer,
					       file_node);
		if (buf)
			fgds_file_remove_locked(ff, buf);
		mutex_unlock(&ff->lock);
		if (!buf)
			return;
		fgds_buffer_retire(buf);
	}
}

/* ---- mmap ----------------------------------------------------------- */

static void fgds_vm_open(struct vm_area_struct *vma)
{
	struct fgds_buffer *buf = vma->vm_private_data;

	kref_get(&buf->ref);
}

static void fgds_vm_close(struct vm_area_struct *vma)
{
	struct fgds_buffer *buf = vma->vm_private_data;

	kref_put(&buf->ref, fgds_buffer_kref_release);
}

static vm_fault_t fgds_vm_fault(struct vm_fault *vmf)
{
	struct fgds_buffer *buf = vmf->vma->vm_private_data;
	u64 offset = ((u64)vmf->pgoff << PAGE_SHIFT) & FGDS_TOKEN_INNER_MASK;
	vm_fault_t ret;

	down_read(&buf->lock);
	if (buf->revoked || offset >= buf->size)
		ret = VM_FAULT_SIGBUS;
	else
		ret = vmf_insert_page(vmf->vma, vmf->address,
				      fgds_buffer_page(buf, offset));
	up_read(&buf->lock);
	return ret;
}

static const struct vm_operations_struct fgds_vm_ops = {
	.open = fgds_vm_open,
	.close = fgds_vm_close,
	.fault = fgds_vm_fault,
};

int fgds_buffer_mmap(struct fgds_file *ff, struct vm_area_struct *vma)
{
	u64 offset = (u64)vma->vm_pgoff << PAGE_SHIFT;
	u64 inner = offset & FGDS_TOKEN_INNER_MASK;
	u64 len = vma->vm_end - vma->vm_start;
	struct fgds_buffer *buf;
	int ret = 0;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	mutex_lock(&ff->lock);
	buf = fgds_file_find_locked(ff, offset - inner);
	if (!buf) {
		/* Registered by another open file? Do not touch it: it
		 * belongs to that file and may be going away. */
		ret = xa_load(&ff->fdev->buffers, offset >> FGDS_TOKEN_SHIFT) ?
			      -EACCES :
			      -EINVAL;
	} else if (inner >= buf->size || len > buf->size - inner) {
		ret = -EINVAL;
	} else {
		down_read(&buf->lock);
		if (buf->revoked)
			ret = -ENODEV;
		up_read(&buf->lock);
	}
	if (!ret)
		kref_get(&buf->ref);
	mutex_unlock(&ff->lock);
	if (ret)
		return ret;

	/*
	 * MIXEDMAP: pages with struct pages, inserted at fault time (not
	 * PFNMAP or IO, which GUP refuses, nvidia-fs issue #53). DONTCOPY: a
	 * forked child must not keep GPU memory mapped behind the owner's
	 * back. DONTEXPAND: the mapping never outgrows the registration.
	 */
	fgds_vm_flags_set(vma, VM_MIXEDMAP | VM_DONTCOPY | VM_DONTEXPAND |
				       VM_DONTDUMP);
	/*
	 * The pages are MMIO: never a cacheable user mapping (the kernel's
	 * own mapping of P2PDMA pages is uncached too).
	 */
	vma->vm_page_prot = pgprot_noncached(vma->vm_page_prot);
	vma->vm_ops = &fgds_vm_ops;
	vma->vm_private_data = buf;
	return 0;
}
