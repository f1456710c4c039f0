/* SPDX-License-Identifier: GPL-2.0 */
/* The module's version: the one source for modinfo, QUERY and DKMS. */
#ifndef FGDS_VERSION_H
#define FGDS_VERSION_H

#define FGDS_KMOD_VERSION "0.1.0"

#endif /* FGDS_VERSION_H */
