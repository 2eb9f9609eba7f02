/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The uapi types swiw-abi.h (the lower half's contract) uses, for the
 * freestanding build: what the kernel's and libc's <linux/types.h> give.
 */
#ifndef SWIW_FREESTANDING_LINUX_TYPES_H
#define SWIW_FREESTANDING_LINUX_TYPES_H

#include "swiw_freestanding.h"

typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
#define __aligned_u64 __u64 __attribute__((aligned(8)))

#endif
