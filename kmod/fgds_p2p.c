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

#if !IS_ENABLED(CONFIG_PCI_P2PDMA)
static struct pci_dev *fgds_find_pci_parent(struct device *dev)
{
	for (; dev; dev = dev->parent)
		if (dev_is_pci(dev))
			return to_pci_dev(dev);
	return NULL;
}

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
#else
static int fgds_route_distance(struct pci_dev *gpu, struct device *client)
{
	return pci_p2pdma_distance_many(gpu, &client, 1, false);
}
#endif

/*
 * fgds_p2p_check_fd - 0 if the block device behind @storage_fd can DMA to
 * @fdev's BAR, else -EBADF, -ENOTBLK (not on a block device) or -EREMOTEIO
 * (no peer-to-peer route). *@distance gets the route's distance or -1.
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
