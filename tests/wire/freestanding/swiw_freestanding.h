/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The whole environment the wire core gets when it is compiled with
 * -ffreestanding -nostdinc: the types, errno values and four memory
 * functions that both libc and the kernel provide. If a wire file needs
 * more, this build fails, and so would the kernel helper's.
 */
#ifndef SWIW_FREESTANDING_H
#define SWIW_FREESTANDING_H

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef int s32;
typedef long long s64;
typedef u8 __u8;
typedef u16 __u16;
typedef u32 __u32;
typedef u64 __u64;
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
typedef __UINTPTR_TYPE__ uintptr_t;
typedef _Bool bool;
#define true 1
#define false 0
#define NULL ((void *)0)
#define offsetof(t, m) __builtin_offsetof(t, m)

#ifdef __CHECKER__
#define __bitwise __attribute__((bitwise))
#else
#define __bitwise
#endif
typedef u16 __bitwise __be16;
typedef u32 __bitwise __be32;
typedef u64 __bitwise __be64;
typedef u16 __bitwise __le16;
typedef u32 __bitwise __le32;
typedef u64 __bitwise __le64;

/* Linux's values, which user space and the kernel share. */
#define EPERM 1
#define ENOENT 2
#define EIO 5
#define E2BIG 7
#define EAGAIN 11
#define ENOMEM 12
#define EACCES 13
#define EFAULT 14
#define EBUSY 16
#define EINVAL 22
#define ENOSPC 28
#define ERANGE 34
#define ENODATA 61
#define EPROTO 71
#define EBADMSG 74
#define EOVERFLOW 75
#define EMSGSIZE 90
#define EPROTONOSUPPORT 93
#define EOPNOTSUPP 95
#define ENOBUFS 105
#define ECONNRESET 104
#define ETIMEDOUT 110
#define ECONNREFUSED 111
#define EALREADY 114
#define EINPROGRESS 115
#define ECANCELED 125

void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);

#endif /* SWIW_FREESTANDING_H */
