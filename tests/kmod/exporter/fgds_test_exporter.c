// SPDX-License-Identifier: GPL-2.0
/*
 * File: tests/kmod/exporter/fgds_test_exporter.c
 *
 * The fgds QEMU lab's stand-in for a GPU driver: binds the ivshmem-plain
 * device and exports ranges of its RAM-backed BAR2 as dma-bufs of bus
 * addresses without struct pages, as the NVIDIA driver (and amdgpu for
 * VRAM) exports GPU memory. The BAR is deliberately not mapped here: fgds
 * memremaps it write-back, which a conflicting mapping would make fail
 * (x86 PAT). Test hooks: TEXP_OUTSIDE_BAR, TEXP_REVERSE, and REVOKE, which
 * invalidates a dma-buf under its importers as a driver freeing the memory.
 */
#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/version.h>

#include "fgds_test_exporter.h"

#define TEXP_BAR 2
/* sg_dma_len() is an unsigned int: the largest page-aligned segment. */
#define TEXP_MAX_SEG ((u64)round_down(UINT_MAX, PAGE_SIZE))

static unsigned int max_segments = 65536;
module_param(max_segments, uint, 0644);
MODULE_PARM_DESC(max_segments, "Max sg entries per dma-buf. Default is 65536.");

static unsigned int max_exports = 1024;
module_param(max_exports, uint, 0644);
MODULE_PARM_DESC(max_exports, "Max live dma-bufs. Default is 1024.");

static bool dynamic;
module_param(dynamic, bool, 0644);
MODULE_PARM_DESC(
	dynamic,
	"Export with pin/unpin ops (like amdgpu) instead of static ones (like NVIDIA). Default is N.");

/* One exported dma-buf; freed by its release op. */
struct texp_buf {
	struct list_head node; /* in texp_bufs, under texp_lock */
	struct dma_buf *dmabuf;
	u64 dma_start; /* bus address of the first byte */
	u64 size;
	u64 seg; /* bytes per sg entry (the last may be short) */
	unsigned int nsegs;
	u32 flags;
	bool revoked; /* under dmabuf->resv */
	unsigned int attachments; /* under dmabuf->resv */
	unsigned int mappings; /* under dmabuf->resv */
};

static DEFINE_MUTEX(texp_lock);
static struct pci_dev *texp_pdev; /* the bound device, under texp_lock */
static LIST_HEAD(texp_bufs); /* live dma-bufs, under texp_lock */
static unsigned int texp_nbufs;

/* Tells importers that the memory is gone; renamed in the 7.x cycle. */
static void texp_invalidate(struct dma_buf *dmabuf)
{
#ifdef TEXP_HAVE_INVALIDATE_MAPPINGS
	dma_buf_invalidate_mappings(dmabuf);
#else
	dma_buf_move_notify(dmabuf);
#endif
}

static int texp_attach(struct dma_buf *dmabuf,
		       struct dma_buf_attachment *attach)
{
	struct texp_buf *buf = dmabuf->priv;

	/* Bus addresses without pages are only usable by P2P importers. */
	if (!attach->peer2peer)
		return -EOPNOTSUPP;
	dma_resv_lock(dmabuf->resv, NULL);
	buf->attachments++;
	dma_resv_unlock(dmabuf->resv);
	return 0;
}

static void texp_detach(struct dma_buf *dmabuf,
			struct dma_buf_attachment *attach)
{
	struct texp_buf *buf = dmabuf->priv;

	dma_resv_lock(dmabuf->resv, NULL);
	buf->attachments--;
	dma_resv_unlock(dmabuf->resv);
}

static int texp_pin(struct dma_buf_attachment *attach)
{
	struct texp_buf *buf = attach->dmabuf->priv;

	return buf->revoked ? -ENODEV : 0;
}

static void texp_unpin(struct dma_buf_attachment *attach)
{
}

static struct sg_table *texp_map(struct dma_buf_attachment *attach,
				 enum dma_data_direction dir)
{
	struct texp_buf *buf = attach->dmabuf->priv;
	struct scatterlist *sg;
	struct sg_table *sgt;
	unsigned int i;
	int ret;

	/* The core holds the reservation lock; it guards buf->revoked. */
	dma_resv_assert_held(attach->dmabuf->resv);
	if (buf->revoked)
		return ERR_PTR(-ENODEV);

	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table(sgt, buf->nsegs, GFP_KERNEL);
	if (ret)
		goto err_free_sgt;

	for_each_sgtable_sg(sgt, sg, i) {
		u64 idx = buf->flags & TEXP_REVERSE ? buf->nsegs - 1 - i : i;
		u64 off = idx * buf->seg;
		unsigned int len = min(buf->seg, buf->size - off);

		/* No struct page: importers must use the DMA address only. */
		sg_set_page(sg, NULL, len, 0);
		sg_dma_address(sg) = buf->dma_start + off;
		sg_dma_len(sg) = len;
	}
	buf->mappings++;
	return sgt;

err_free_sgt:
	kfree(sgt);
	return ERR_PTR(ret);
}

static void texp_unmap(struct dma_buf_attachment *attach, struct sg_table *sgt,
		       enum dma_data_direction dir)
{
	struct texp_buf *buf = attach->dmabuf->priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	buf->mappings--;
	sg_free_table(sgt);
	kfree(sgt);
}

static void texp_release(struct dma_buf *dmabuf)
{
	struct texp_buf *buf = dmabuf->priv;

	mutex_lock(&texp_lock);
	list_del(&buf->node);
	texp_nbufs--;
	mutex_unlock(&texp_lock);
	kfree(buf);
}

/* Like the NVIDIA driver: no pin/unpin, so the core sees a static exporter. */
static const struct dma_buf_ops texp_static_ops = {
	.attach = texp_attach,
	.detach = texp_detach,
	.map_dma_buf = texp_map,
	.unmap_dma_buf = texp_unmap,
	.release = texp_release,
};

/* Like amdgpu: pin/unpin make the exporter dynamic. */
static const struct dma_buf_ops texp_dynamic_ops = {
	.attach = texp_attach,
	.detach = texp_detach,
	.pin = texp_pin,
	.unpin = texp_unpin,
	.map_dma_buf = texp_map,
	.unmap_dma_buf = texp_unmap,
	.release = texp_release,
};

/* The dma-buf behind @fd if this module exported it (put it after use). */
static struct dma_buf *texp_get_ours(int fd)
{
	struct dma_buf *dmabuf = dma_buf_get(fd);

	if (IS_ERR(dmabuf))
		return dmabuf;
	if (dmabuf->ops != &texp_static_ops &&
	    dmabuf->ops != &texp_dynamic_ops) {
		dma_buf_put(dmabuf);
		return ERR_PTR(-EINVAL);
	}
	return dmabuf;
}

static void texp_revoke_buf(struct texp_buf *buf)
{
	dma_resv_lock(buf->dmabuf->resv, NULL);
	buf->revoked = true;
	texp_invalidate(buf->dmabuf);
	dma_resv_unlock(buf->dmabuf->resv);
}

static long texp_ioctl_info(struct texp_info __user *uarg)
{
	struct texp_info info = {};

	mutex_lock(&texp_lock);
	if (!texp_pdev) {
		mutex_unlock(&texp_lock);
		return -ENODEV;
	}
	info.bar_bus_addr = pci_bus_address(texp_pdev, TEXP_BAR);
	info.bar_phys_start = pci_resource_start(texp_pdev, TEXP_BAR);
	info.bar_size = pci_resource_len(texp_pdev, TEXP_BAR);
	strscpy(info.pci_name, pci_name(texp_pdev), sizeof(info.pci_name));
	mutex_unlock(&texp_lock);

	return copy_to_user(uarg, &info, sizeof(info)) ? -EFAULT : 0;
}

static long texp_ioctl_export(struct texp_export __user *uarg)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp_info);
	struct texp_export arg;
	struct dma_buf *dmabuf;
	struct texp_buf *buf;
	u64 bar_size, seg, nsegs;
	int fd, ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags & ~TEXP_VALID_FLAGS)
		return -EINVAL;
	if (!arg.size || !PAGE_ALIGNED(arg.offset) || !PAGE_ALIGNED(arg.size) ||
	    !PAGE_ALIGNED(arg.segment_size))
		return -EINVAL;
	seg = min(arg.segment_size ?: arg.size, TEXP_MAX_SEG);
	nsegs = div64_u64(arg.size + seg - 1, seg);
	if (nsegs > max_segments)
		return -E2BIG;

	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;

	mutex_lock(&texp_lock);
	if (!texp_pdev) {
		ret = -ENODEV;
		goto err_unlock;
	}
	bar_size = pci_resource_len(texp_pdev, TEXP_BAR);
	if (arg.offset >= bar_size || arg.size > bar_size - arg.offset) {
		ret = -EINVAL;
		goto err_unlock;
	}
	if (texp_nbufs >= max_exports) {
		ret = -ENOSPC;
		goto err_unlock;
	}
	buf->dma_start = pci_bus_address(texp_pdev, TEXP_BAR) + arg.offset;
	if (arg.flags & TEXP_OUTSIDE_BAR)
		buf->dma_start += bar_size;
	buf->size = arg.size;
	buf->seg = seg;
	buf->nsegs = nsegs;
	buf->flags = arg.flags;

	/* exp_info.owner pins this module for as long as the dma-buf lives. */
	exp_info.ops = dynamic ? &texp_dynamic_ops : &texp_static_ops;
	exp_info.size = arg.size;
	exp_info.flags = O_RDWR;
	exp_info.priv = buf;
	dmabuf = dma_buf_export(&exp_info);
	if (IS_ERR(dmabuf)) {
		ret = PTR_ERR(dmabuf);
		goto err_unlock;
	}
	buf->dmabuf = dmabuf;
	list_add(&buf->node, &texp_bufs);
	texp_nbufs++;
	mutex_unlock(&texp_lock);

	/*
	 * From here the dma-buf's release op frees buf. The fd is installed
	 * only once the copy to user space has succeeded, since an installed
	 * fd cannot be taken back.
	 */
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto err_put_dmabuf;
	}
	arg.fd = fd;
	if (copy_to_user(uarg, &arg, sizeof(arg))) {
		ret = -EFAULT;
		goto err_put_fd;
	}
	fd_install(fd, dmabuf->file);
	return 0;

err_put_fd:
	put_unused_fd(fd);
err_put_dmabuf:
	dma_buf_put(dmabuf);
	return ret;

err_unlock:
	mutex_unlock(&texp_lock);
	kfree(buf);
	return ret;
}

static long texp_ioctl_revoke(struct texp_revoke __user *uarg)
{
	struct texp_revoke arg;
	struct dma_buf *dmabuf;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.pad)
		return -EINVAL;

	dmabuf = texp_get_ours(arg.fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	texp_revoke_buf(dmabuf->priv);
	dma_buf_put(dmabuf);
	return 0;
}

static long texp_ioctl_status(struct texp_status __user *uarg)
{
	struct texp_status arg;
	struct dma_buf *dmabuf;
	struct texp_buf *buf;
	long ret = 0;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.pad)
		return -EINVAL;
	dmabuf = texp_get_ours(arg.fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	buf = dmabuf->priv;
	dma_resv_lock(dmabuf->resv, NULL);
	arg.attachments = buf->attachments;
	arg.mappings = buf->mappings;
	arg.revoked = buf->revoked;
	dma_resv_unlock(dmabuf->resv);
	arg.pad2 = 0;
	if (copy_to_user(uarg, &arg, sizeof(arg)))
		ret = -EFAULT;
	dma_buf_put(dmabuf);
	return ret;
}

static long texp_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case TEXP_IOCTL_INFO:
		return texp_ioctl_info(uarg);
	case TEXP_IOCTL_EXPORT:
		return texp_ioctl_export(uarg);
	case TEXP_IOCTL_REVOKE:
		return texp_ioctl_revoke(uarg);
	case TEXP_IOCTL_STATUS:
		return texp_ioctl_status(uarg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations texp_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = texp_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice texp_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "fgds_test_exporter",
	.fops = &texp_fops,
	.mode = 0600,
};

static int texp_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	int ret;

	if (!(pci_resource_flags(pdev, TEXP_BAR) & IORESOURCE_MEM) ||
	    !pci_resource_len(pdev, TEXP_BAR))
		return -ENODEV;

	/* Memory decoding must be on for DMA into the BAR to reach it. */
	ret = pci_enable_device_mem(pdev);
	if (ret)
		return ret;
	ret = pci_request_region(pdev, TEXP_BAR, KBUILD_MODNAME);
	if (ret)
		goto err_disable;

	mutex_lock(&texp_lock);
	if (texp_pdev) {
		/* One misc device, so one ivshmem device. */
		mutex_unlock(&texp_lock);
		ret = -EBUSY;
		goto err_release_region;
	}
	texp_pdev = pdev;
	mutex_unlock(&texp_lock);

	ret = misc_register(&texp_misc);
	if (ret)
		goto err_unbind;
	dev_info(&pdev->dev, "exporting BAR%d %pR\n", TEXP_BAR,
		 &pdev->resource[TEXP_BAR]);
	return 0;

err_unbind:
	mutex_lock(&texp_lock);
	texp_pdev = NULL;
	mutex_unlock(&texp_lock);
err_release_region:
	pci_release_region(pdev, TEXP_BAR);
err_disable:
	pci_disable_device(pdev);
	return ret;
}

static void texp_remove(struct pci_dev *pdev)
{
	struct texp_buf *buf;

	/* Only the bound device gets here: a second one failed its probe. */
	misc_deregister(&texp_misc);

	/*
	 * Only an unbind through sysfs gets here with dma-bufs alive (each
	 * one holds a module reference): revoke them so that nobody maps the
	 * BAR once we have given it up.
	 */
	mutex_lock(&texp_lock);
	list_for_each_entry(buf, &texp_bufs, node)
		texp_revoke_buf(buf);
	texp_pdev = NULL;
	mutex_unlock(&texp_lock);

	pci_release_region(pdev, TEXP_BAR);
	pci_disable_device(pdev);
}

static const struct pci_device_id texp_ids[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT_QUMRANET, 0x1110) }, /* ivshmem */
	{}
};
MODULE_DEVICE_TABLE(pci, texp_ids);

static struct pci_driver texp_driver = {
	.name = "fgds_test_exporter",
	.id_table = texp_ids,
	.probe = texp_probe,
	.remove = texp_remove,
};
module_pci_driver(texp_driver);

MODULE_DESCRIPTION("fgds lab: ivshmem BAR2 exported as GPU-like dma-bufs");
MODULE_LICENSE("GPL");
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
MODULE_IMPORT_NS("DMA_BUF");
#else
MODULE_IMPORT_NS(DMA_BUF);
#endif
