// SPDX-License-Identifier: GPL-2.0
/*
 * fgds: GPU memory as an O_DIRECT target. Module parameters, and the
 * devices served: every NVIDIA display/3D-class PCI device with a
 * prefetchable BAR of at least 64 MiB (its BAR1 aperture), or exactly the
 * ones named in `devices`, plus any device named in `extra_devices` (other
 * vendors; the test lab's ivshmem "GPU").
 */
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "fgds.h"
#include "fgds_compat.h"
#include "fgds_version.h"

#define FGDS_MAX_DEVICES 64
#define FGDS_MIN_BAR_SIZE (64ULL << 20)

unsigned int fgds_max_buffers = 1024;
module_param_named(max_buffers, fgds_max_buffers, uint, 0444);
MODULE_PARM_DESC(max_buffers, "Registrations allowed per open file (1024)");

/*
 * A token's offset range (FGDS_MAX_REGISTRATION_SIZE, 1 TiB) is the most a
 * registration may span, so that is the default and the ceiling: the setter
 * refuses anything above it (and 0), at load time and through sysfs, so
 * the bound holds whatever the BAR size. Lowering it at run time (the
 * lab's tests do) affects registrations made afterwards.
 */
unsigned long long fgds_max_buffer_size = FGDS_MAX_REGISTRATION_SIZE;

static int fgds_max_buffer_size_set(const char *val,
				    const struct kernel_param *kp)
{
	unsigned long long size;
	int ret;

	ret = kstrtoull(val, 0, &size);
	if (ret)
		return ret;
	if (!size || size > FGDS_MAX_REGISTRATION_SIZE) {
		pr_err("fgds: max_buffer_size=%llu: must be 1 to %llu (1 TiB, a token's range)\n",
		       size, FGDS_MAX_REGISTRATION_SIZE);
		return -EINVAL;
	}
	WRITE_ONCE(*(unsigned long long *)kp->arg, size);
	return 0;
}

static const struct kernel_param_ops fgds_max_buffer_size_ops = {
	.set = fgds_max_buffer_size_set,
	.get = param_get_ullong,
};
module_param_cb(max_buffer_size, &fgds_max_buffer_size_ops,
		&fgds_max_buffer_size, 0644);
__MODULE_PARM_TYPE(max_buffer_size, "ullong");
MODULE_PARM_DESC(
	max_buffer_size,
	"Largest registration in bytes, also bounded by the BAR size (default and maximum 1 TiB)");

unsigned int fgds_invalidate_timeout_ms = 60000;
module_param_named(invalidate_timeout_ms, fgds_invalidate_timeout_ms, uint,
		   0644);
MODULE_PARM_DESC(
	invalidate_timeout_ms,
	"With CONFIG_PCI_P2PDMA: longest wait, in an exporter's revoke, for storage I/O still using the memory (60000; 0: no limit)");

bool fgds_allow_generic_pages;
module_param_named(allow_generic_pages, fgds_allow_generic_pages, bool, 0444);
MODULE_PARM_DESC(
	allow_generic_pages,
	"Without CONFIG_PCI_P2PDMA (x86 only): back the BAR with MEMORY_DEVICE_GENERIC pages (cacheable kernel mapping, long-term pins allowed, route checked only at registration; docs/kmod.md). Default off: registrations fail with EOPNOTSUPP");

bool fgds_allow_host_bridge;
module_param_named(allow_host_bridge, fgds_allow_host_bridge, bool, 0444);
MODULE_PARM_DESC(
	allow_host_bridge,
	"Without CONFIG_PCI_P2PDMA: trust the host bridge to route peer-to-peer between devices not below one PCIe switch (default off)");

static char *devices;
module_param(devices, charp, 0444);
MODULE_PARM_DESC(
	devices,
	"Serve only these GPUs: comma-separated PCI addresses, e.g. 0000:3b:00.0");

static char *extra_devices;
module_param(extra_devices, charp, 0444);
MODULE_PARM_DESC(
	extra_devices,
	"Also serve these non-NVIDIA devices (PCI addresses), e.g. a test lab's ivshmem");

struct workqueue_struct *fgds_release_wq;
static struct class *fgds_class;
static dev_t fgds_devt;
static struct fgds_dev *fgds_devs[FGDS_MAX_DEVICES];
static unsigned int fgds_nr_devs;

/*
 * Is @pdev in @list ("dddd:bb:dd.f,...", the domain optional)? -EINVAL for
 * a malformed entry, so a typo fails the load instead of serving nothing.
 */
static int fgds_listed(const char *list, struct pci_dev *pdev)
{
	const char *p = list;

	while (p && *p) {
		unsigned int domain = 0, bus, slot, fn;
		const char *end = strchrnul(p, ',');
		char entry[20];
		size_t n = end - p;

		if (n >= sizeof(entry))
			return -EINVAL;
		memcpy(entry, p, n);
		entry[n] = '\0';
		if (sscanf(entry, "%x:%x:%x.%x", &domain, &bus, &slot, &fn) !=
		    4) {
			domain = 0;
			if (sscanf(entry, "%x:%x.%x", &bus, &slot, &fn) != 3)
				return -EINVAL;
		}
		if (domain == pci_domain_nr(pdev->bus) &&
		    bus == pdev->bus->number && slot == PCI_SLOT(pdev->devfn) &&
		    fn == PCI_FUNC(pdev->devfn))
			return 1;
		p = *end ? end + 1 : end;
	}
	return 0;
}

static int fgds_selected(struct pci_dev *pdev)
{
	bool gpu = pdev->vendor == PCI_VENDOR_ID_NVIDIA &&
		   (pdev->class >> 16) == PCI_BASE_CLASS_DISPLAY;
	int ret;

	ret = fgds_listed(extra_devices, pdev);
	if (ret)
		return ret;
	if (!gpu)
		return 0;
	return devices ? fgds_listed(devices, pdev) : 1;
}

/* The largest prefetchable memory BAR of at least 64 MiB, or -1. */
static int fgds_pick_bar(struct pci_dev *pdev)
{
	resource_size_t best_size = 0;
	int bar, best = -1;

	for (bar = 0; bar < PCI_STD_NUM_BARS; bar++) {
		unsigned long flags = pci_resource_flags(pdev, bar);
		resource_size_t size = pci_resource_len(pdev, bar);

		if (!(flags & IORESOURCE_MEM) || !(flags & IORESOURCE_PREFETCH))
			continue;
		if (size >= FGDS_MIN_BAR_SIZE && size > best_size) {
			best = bar;
			best_size = size;
		}
	}
	return best;
}

static int fgds_dev_create(struct pci_dev *pdev, unsigned int minor)
{
	dev_t devt = MKDEV(MAJOR(fgds_devt), minor);
	struct fgds_dev *fdev;
	int bar, ret;

	bar = fgds_pick_bar(pdev);
	if (bar < 0) {
		pci_info(pdev, "fgds: no prefetchable BAR of 64 MiB or more\n");
		return -ENODEV;
	}
	fdev = kzalloc(sizeof(*fdev), GFP_KERNEL);
	if (!fdev)
		return -ENOMEM;
	fdev->pdev = pci_dev_get(pdev);
	fdev->bar = bar;
	fdev->bar_start = pci_resource_start(pdev, bar);
	fdev->bar_bus_start = pci_bus_address(pdev, bar);
	fdev->bar_size = pci_resource_len(pdev, bar);
	mutex_init(&fdev->pages_lock);
	xa_init_flags(&fdev->buffers, XA_FLAGS_ALLOC1);
	atomic_set(&fdev->registrations, 0);

	cdev_init(&fdev->cdev, &fgds_fops);
	fdev->cdev.owner = THIS_MODULE;
	ret = cdev_add(&fdev->cdev, devt, 1);
	if (ret)
		goto out_put_pdev;
	fdev->device = device_create_with_groups(
		fgds_class, &pdev->dev, devt, fdev, fgds_dev_groups,
		"fgds_%04x_%02x_%02x_%x", pci_domain_nr(pdev->bus),
		pdev->bus->number, PCI_SLOT(pdev->devfn),
		PCI_FUNC(pdev->devfn));
	if (IS_ERR(fdev->device)) {
		ret = PTR_ERR(fdev->device);
		goto out_cdev_del;
	}
	fgds_devs[fgds_nr_devs++] = fdev;
	pci_info(pdev, "fgds: serving BAR%d %pa+%llx as %s\n", bar,
		 &fdev->bar_start, fdev->bar_size, dev_name(fdev->device));
	return 0;

out_cdev_del:
	cdev_del(&fdev->cdev);
out_put_pdev:
	pci_dev_put(fdev->pdev);
	kfree(fdev);
	return ret;
}

/* REQUIRES: no open file and no pending release (see fgds_exit). */
static void fgds_dev_destroy(struct fgds_dev *fdev)
{
	device_destroy(fgds_class, fdev->cdev.dev);
	cdev_del(&fdev->cdev);
	WARN_ON(fdev->pages_users);
	WARN_ON(!xa_empty(&fdev->buffers));
	xa_destroy(&fdev->buffers);
	pci_dev_put(fdev->pdev);
	kfree(fdev);
}

static void fgds_destroy_all(void)
{
	while (fgds_nr_devs)
		fgds_dev_destroy(fgds_devs[--fgds_nr_devs]);
}

static int __init fgds_init(void)
{
	struct pci_dev *pdev = NULL;
	int ret;

	fgds_release_wq = alloc_workqueue("fgds_release", WQ_UNBOUND, 0);
	if (!fgds_release_wq)
		return -ENOMEM;
	ret = alloc_chrdev_region(&fgds_devt, 0, FGDS_MAX_DEVICES, "fgds");
	if (ret)
		goto out_wq;
	fgds_class = fgds_class_create("fgds");
	if (IS_ERR(fgds_class)) {
		ret = PTR_ERR(fgds_class);
		goto out_chrdev;
	}

	for_each_pci_dev(pdev) {
		ret = fgds_selected(pdev);
		if (ret < 0) {
			pr_err("fgds: malformed PCI address in devices= or extra_devices=\n");
			pci_dev_put(pdev);
			goto out_devs;
		}
		if (!ret)
			continue;
		if (fgds_nr_devs == FGDS_MAX_DEVICES) {
			pci_warn(pdev,
				 "fgds: more than %d devices, not served\n",
				 FGDS_MAX_DEVICES);
			continue;
		}
		/* A device that cannot be served is logged and skipped. */
		fgds_dev_create(pdev, fgds_nr_devs);
	}
	pr_info("fgds %s: serving %u device(s)\n", FGDS_KMOD_VERSION,
		fgds_nr_devs);
	return 0;

out_devs:
	fgds_destroy_all();
	class_destroy(fgds_class);
out_chrdev:
	unregister_chrdev_region(fgds_devt, FGDS_MAX_DEVICES);
out_wq:
	destroy_workqueue(fgds_release_wq);
	return ret;
}

static void __exit fgds_exit(void)
{
	/*
	 * No file is open (each holds the module), but released
	 * registrations may still wait for their I/O to drain: let them
	 * finish before their device goes.
	 */
	destroy_workqueue(fgds_release_wq);
	fgds_destroy_all();
	class_destroy(fgds_class);
	unregister_chrdev_region(fgds_devt, FGDS_MAX_DEVICES);
}

module_init(fgds_init);
module_exit(fgds_exit);

MODULE_DESCRIPTION("fgds: GPU memory (dma-buf) as a target for O_DIRECT I/O");
MODULE_LICENSE("GPL");
MODULE_VERSION(FGDS_KMOD_VERSION);
FGDS_IMPORT_NS_DMA_BUF();
