/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* swiw-abi.h defines its commands with these; the wire core never uses
 * them, so their encoding does not matter here. */
#ifndef SWIW_FREESTANDING_LINUX_IOCTL_H
#define SWIW_FREESTANDING_LINUX_IOCTL_H

#define _IOR(t, n, s) ((t) << 8 | (n))
#define _IOW(t, n, s) ((t) << 8 | (n))
#define _IOWR(t, n, s) ((t) << 8 | (n))

#endif
