// SPDX-License-Identifier: GPL-2.0
/*
 * The character device: open/close, the ioctls (copy in, validate, act,
 * copy out), mmap, and the device's sysfs attributes.
 */
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "fgds.h"
#include "fgds_version.h"

/*
 * The UAPI layouts are ABI: fixed sizes, every field naturally aligned, so
 * 32-bit callers see the same structs (hence compat_ptr_ioctl below).
 */
static_assert(sizeof(struct fgds_query) == 120);
static_assert(sizeof(struct fgds_reg_buffer) == 56);
static_assert(sizeof(struct fgds_unreg_buffer) == 16);

static int fgds_open(struct inode *inode, struct file *file)
{
	struct fgds_dev *fdev =
		container_of(inode->i_cdev, struct fgds_dev, cdev);
	struct fgds_file *ff;

	ff = kzalloc(sizeof(*ff), GFP_KERNEL);
	if (!ff)
		return -ENOMEM;
	ff->fdev = fdev;
	ff->mapping = file->f_mapping;
	mutex_init(&ff->lock);
	INIT_LIST_HEAD(&ff->buffers);
	file->private_data = ff;
	return 0;
}

/* Last reference to the file: no VMA of it is left (each holds the file). */
static int fgds_release(struct inode *inode, struct file *file)
{
	struct fgds_file *ff = file->private_data;

	fgds_buffer_unregister_all(ff);
	mutex_destroy(&ff->lock);
	kfree(ff);
	return 0;
}

static long fgds_ioctl_query(struct fgds_file *ff, void __user *uarg)
{
	struct fgds_dev *fdev = ff->fdev;
	struct fgds_query q;

	if (copy_from_user(&q, uarg, sizeof(q)))
		return -EFAULT;
	if (q.flags & ~FGDS_QUERY_VALID_FLAGS ||
	    memchr_inv(q.reserved, 0, sizeof(q.reserved)))
		return -EINVAL;
	/* An input the flags do not ask for must be zero, so it can be
	 * given a meaning later. */
	if (!(q.flags & FGDS_QUERY_STORAGE_FD) && q.storage_fd)
		return -EINVAL;

	q.abi_version = FGDS_ABI_VERSION;
	q.bar_index = fdev->bar;
	q.bar_start = fdev->bar_start;
	q.bar_size = fdev->bar_size;
	q.max_buffer_size = fgds_dev_max_buffer_size(fdev);
	q.max_buffers = fgds_max_buffers;
	mutex_lock(&ff->lock);
	q.buffers = ff->nr_buffers;
	mutex_unlock(&ff->lock);
	q.p2p_status = 0;
	q.p2p_distance = -1;
	if (q.flags & FGDS_QUERY_STORAGE_FD)
		q.p2p_status =
			fgds_p2p_check_fd(fdev, q.storage_fd, &q.p2p_distance);
	strscpy_pad(q.version, FGDS_KMOD_VERSION, sizeof(q.version));

	if (copy_to_user(uarg, &q, sizeof(q)))
		return -EFAULT;
	return 0;
}

static long fgds_ioctl_reg_buffer(struct fgds_file *ff, void __user *uarg)
{
	struct fgds_reg_buffer reg;
	int ret;

	if (copy_from_user(&reg, uarg, sizeof(reg)))
		return -EFAULT;
	if (reg.flags & ~FGDS_REG_VALID_FLAGS || reg.pad ||
	    memchr_inv(reg.reserved, 0, sizeof(reg.reserved)))
		return -EINVAL;
	if (!reg.size || !PAGE_ALIGNED(reg.size) ||
	    !PAGE_ALIGNED(reg.dmabuf_offset))
		return -EINVAL;

	ret = fgds_buffer_register(ff, &reg);
	if (ret)
		return ret;
	if (copy_to_user(uarg, &reg, sizeof(reg))) {
		/* The caller cannot know the token: do not leave it behind. */
		fgds_buffer_unregister(ff, reg.token);
		return -EFAULT;
	}
	return 0;
}

static long fgds_ioctl_unreg_buffer(struct fgds_file *ff, void __user *uarg)
{
	struct fgds_unreg_buffer unreg;

	if (copy_from_user(&unreg, uarg, sizeof(unreg)))
		return -EFAULT;
	if (unreg.flags || unreg.pad)
		return -EINVAL;
	return fgds_buffer_unregister(ff, unreg.token);
}

static long fgds_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct fgds_file *ff = file->private_data;
	void __user *uarg = (void __user *)arg;

	/* Exact matches only: a size mismatch in cmd is -ENOTTY too. */
	switch (cmd) {
	case FGDS_IOCTL_QUERY:
		return fgds_ioctl_query(ff, uarg);
	case FGDS_IOCTL_REG_BUFFER:
		return fgds_ioctl_reg_buffer(ff, uarg);
	case FGDS_IOCTL_UNREG_BUFFER:
		return fgds_ioctl_unreg_buffer(ff, uarg);
	default:
		return -ENOTTY;
	}
}

static int fgds_mmap(struct file *file, struct vm_area_struct *vma)
{
	return fgds_buffer_mmap(file->private_data, vma);
}

const struct file_operations fgds_fops = {
	.owner = THIS_MODULE,
	.open = fgds_open,
	.release = fgds_release,
	.unlocked_ioctl = fgds_ioctl,
	/* Every UAPI struct has the same layout on 32 and 64 bit. */
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = fgds_mmap,
	.llseek = noop_llseek,
};

/* ---- sysfs attributes of /sys/class/fgds/fgds_<pci address> ---------- */

static ssize_t pci_address_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	struct fgds_dev *fdev = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%s\n", pci_name(fdev->pdev));
}
static DEVICE_ATTR_RO(pci_address);

static ssize_t bar_show(struct device *dev, struct device_attribute *attr,
			char *buf)
{
	struct fgds_dev *fdev = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%d %llx %llx\n", fdev->bar,
			  (u64)fdev->bar_start, fdev->bar_size);
}
static DEVICE_ATTR_RO(bar);

/* Live registrations, including released ones whose I/O still drains. */
static ssize_t registrations_show(struct device *dev,
				  struct device_attribute *attr, char *buf)
{
	struct fgds_dev *fdev = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%d\n", atomic_read(&fdev->registrations));
}
static DEVICE_ATTR_RO(registrations);

static struct attribute *fgds_dev_attrs[] = {
	&dev_attr_pci_address.attr,
	&dev_attr_bar.attr,
	&dev_attr_registrations.attr,
	NULL,
};

static const struct attribute_group fgds_dev_group = {
	.attrs = fgds_dev_attrs,
};

const struct attribute_group *fgds_dev_groups[] = {
	&fgds_dev_group,
	NULL,
};
