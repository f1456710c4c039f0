// SPDX-License-Identifier: GPL-2.0
/*
 * Can this storage device DMA into this GPU's BAR? A wrong answer can hang
 * a machine (a root complex that does not forward peer-to-peer writes), so
 * registrations are refused unless the route is known to work.
 *
 * With CONFIG_PCI_P2PDMA the kernel's own check decides
 * (pci_p2pdma_distance_many: a common upstream switch without ACS
 * redirection, or a host bridge the kernel knows forwards P2P traffic).
 * Without it (Debian's stock kernels), fgds accepts only devices below a
 * common PCIe switch, or any pair on one host bridge when the administrator
 * says that bridge forwards P2P (module parameter allow_host_bridge).
 *
 * This is the early answer, for the device the registration names. With
 * P2PDMA pages the kernel checks again for every request, against the
 * device the bio really goes to (a filesystem's other device, each member
 * of a stack), so I/O from elsewhere cannot reach the BAR without a route.
 * With GENERIC pages (allow_generic_pages) this check is the only one
 * (docs/kmod.md, "Page type").
 *
 * A stacked device (dm, md) has no PCI parent to measure. With P2PDMA
 * pages it is accepted when its queue takes P2PDMA pages at all
 * (BLK_FEAT_PCI_P2PDMA, which the kernel keeps on a stack only where the
 * stacking driver passes such pages through and every member takes them):
 * the members' drivers then check the route of each request they get, so
 * a member without one fails its requests (EREMOTEIO on 6.12, EINVAL on
 * 7.x, as for a drive named directly). A stack whose
 * queue does not take them (dm; md before 7.x) would have every request
 * refused by GUP, so it is refused here, as is any stack without P2PDMA
 * pages.
 */
#include <linux/blkdev.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/pci-p2pdma.h>

#include "fgds.h"

/* The block device behind a file, or the device node itself. */
static struct block_device *fgds_file_bdev(struct file *file)
{
	struct inode *inode = file_inode(file);

	if (S_ISBLK(inode->i_mode))
		return I_BDEV(file->f_mapping->host);
	return inode->i_sb->s_bdev;
}

static struct pci_dev *__maybe_unused fgds_find_pci_parent(struct device *dev)
{
	for (; dev; dev = dev->parent)
		if (dev_is_pci(dev))
			return to_pci_dev(dev);
	return NULL;
}

#if !IS_ENABLED(CONFIG_PCI_P2PDMA)

/* Steps from a device up to a bridge, or -1 if the bridge is not above. */
static int fgds_bridge_distance(struct pci_dev *dev, struct pci_dev *bridge)
{
	int dist = 0;

	for (; dev; dev = pci_upstream_bridge(dev), dist++)
		if (dev == bridge)
			return dist;
	return -1;
}

static int fgds_route_distance(struct pci_dev *gpu, struct device *client)
{
	struct pci_dev *storage = fgds_find_pci_parent(client);
	struct pci_dev *up;
	int da, db;

	if (!storage)
		return -1;
	/* The nearest bridge above the GPU that is also above the storage. */
	for (up = pci_upstream_bridge(gpu), da = 1; up;
	     up = pci_upstream_bridge(up), da++) {
		db = fgds_bridge_distance(storage, up);
		if (db < 0)
			continue;
		/* A root port alone means the root complex routes it. */
		if (pci_pcie_type(up) != PCI_EXP_TYPE_ROOT_PORT)
			return da + db;
		break;
	}
	if (fgds_allow_host_bridge &&
	    pci_find_host_bridge(gpu->bus) ==
		    pci_find_host_bridge(storage->bus))
		return 1024; /* as the kernel counts a trip via the host */
	return -1;
}

/* Without P2PDMA pages nothing checks a stack's requests: never a stack. */
static bool fgds_stack_checks_route(struct block_device *bdev)
{
	return false;
}
#else
static int fgds_route_distance(struct pci_dev *gpu, struct device *client)
{
	return pci_p2pdma_distance_many(gpu, &client, 1, false);
}

/* See the top of this file. */
static bool fgds_stack_checks_route(struct block_device *bdev)
{
#ifdef blk_queue_pci_p2pdma
	return !fgds_find_pci_parent(disk_to_dev(bdev->bd_disk)) &&
	       blk_queue_pci_p2pdma(bdev_get_queue(bdev));
#else
	return false;
#endif
}
#endif

/*
 * fgds_p2p_check_fd - 0 if the block device behind @storage_fd can DMA to
 * @fdev's BAR, else -EBADF, -ENOTBLK (not on a block device) or -EREMOTEIO
 * (no peer-to-peer route). *@distance gets the route's distance, or -1
 * (refused, or a stack whose members' routes are checked per request).
 */
int fgds_p2p_check_fd(struct fgds_dev *fdev, int storage_fd, int *distance)
{
	struct block_device *bdev;
	struct file *file;
	int dist;

	*distance = -1;
	file = fget(storage_fd);
	if (!file)
		return -EBADF;
	bdev = fgds_file_bdev(file);
	if (!bdev || !bdev->bd_disk) {
		fput(file);
		return -ENOTBLK;
	}
	if (fgds_stack_checks_route(bdev)) {
		fput(file);
		return 0;
	}
	dist = fgds_route_distance(fdev->pdev, disk_to_dev(bdev->bd_disk));
	if (dist < 0)
		dev_info_ratelimited(fdev->device,
				     "no peer-to-peer route to %pg\n", bdev);
	fput(file);
	if (dist < 0)
		return -EREMOTEIO;
	*distance = dist;
	return 0;
}
