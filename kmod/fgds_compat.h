/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel API differences between the kernels fgds supports (6.1 LTS,
 * 6.12 LTS, 7.x), in one place. Every shim names the release that changed
 * the API, so it can be dropped when that release is the oldest supported.
 */
#ifndef FGDS_COMPAT_H
#define FGDS_COMPAT_H

#include <linux/device.h>
#include <linux/dma-buf.h>
#include <linux/memremap.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/version.h>

/* 6.4: class_create() lost its owner argument. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 4, 0)
#define fgds_class_create(name) class_create(THIS_MODULE, name)
#else
#define fgds_class_create(name) class_create(name)
#endif

/* 6.3: vm_flags became read-only outside the vm_flags_*() helpers. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
static inline void fgds_vm_flags_set(struct vm_area_struct *vma,
				     unsigned long flags)
{
	vma->vm_flags |= flags;
}
#else
#define fgds_vm_flags_set(vma, flags) vm_flags_set(vma, flags)
#endif

/* 6.13: MODULE_IMPORT_NS() takes a string literal. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0)
#define FGDS_IMPORT_NS_DMA_BUF() MODULE_IMPORT_NS(DMA_BUF)
#else
#define FGDS_IMPORT_NS_DMA_BUF() MODULE_IMPORT_NS("DMA_BUF")
#endif

/*
 * 6.9: folio_mapcount() became inline; before, it was out of line and not
 * exported. fgds pages are order 0, where page_mapcount() is the same.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 9, 0)
#define fgds_page_mapcount(page) page_mapcount(page)
#else
#define fgds_page_mapcount(page) folio_mapcount(page_folio(page))
#endif

/*
 * The importer's move_notify() callback was renamed invalidate_mappings()
 * by the dma-buf revoke series (7.x). Same contract: called with the
 * dma-buf's reservation lock held. Kbuild detects which name the kernel
 * has (FGDS_HAVE_INVALIDATE_MAPPINGS), because the series was backported.
 */
#ifdef FGDS_HAVE_INVALIDATE_MAPPINGS
#define FGDS_ATTACH_OPS_INVALIDATE invalidate_mappings
#else
#define FGDS_ATTACH_OPS_INVALIDATE move_notify
#endif

/*
 * get_dev_pagemap() lost its second argument (a pagemap to reuse) in 7.x;
 * Kbuild detects it (FGDS_HAVE_GET_DEV_PAGEMAP_1ARG).
 */
#ifdef FGDS_HAVE_GET_DEV_PAGEMAP_1ARG
#define fgds_get_dev_pagemap(pfn) get_dev_pagemap(pfn)
#else
#define fgds_get_dev_pagemap(pfn) get_dev_pagemap(pfn, NULL)
#endif

#endif /* FGDS_COMPAT_H */
