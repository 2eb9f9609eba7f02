/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the wire core (this directory) may use, and nothing else.
 *
 * The framing, negotiation and placement code in providers/swiw/wire is
 * written once and compiled three ways: into the in-process engine (user
 * space), into the kernel helper (__KERNEL__), and, as a check that it
 * uses nothing beyond this header, freestanding (SWIW_FREESTANDING, with
 * -ffreestanding -nostdinc against tests/wire/freestanding/). Files here
 * include only this header and the wire headers.
 *
 * It maps memory functions (memcpy, memmove, memset, memcmp), byte order,
 * CRC32c and debug logging to each environment.
 *
 * Conventions: fixed-width types u8..u64 and s32; wire fields are __be16/
 * __be32/__be64 (bitwise types under sparse), converted only through the
 * swiw_*_to_* helpers below; functions return 0 or a negative errno.
 */
#ifndef SWIW_PORT_H
#define SWIW_PORT_H

#if defined(__KERNEL__)

#include <linux/types.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/crc32c.h>
#include <asm/barrier.h>

/* The kernel's crc32c() is the raw update: no pre- or post-inversion. */
static inline u32 swiw_crc32c(u32 crc, const void *buf, size_t len)
{
	return crc32c(crc, buf, len);
}

#elif defined(SWIW_FREESTANDING)

#include "swiw_freestanding.h"

#else /* user space */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <linux/types.h>

typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;

#endif

#ifndef __force
#ifdef __CHECKER__
#define __force __attribute__((force))
#else
#define __force
#endif
#endif

#ifndef __packed
#define __packed __attribute__((packed))
#endif

#ifndef __always_inline
#define __always_inline inline __attribute__((__always_inline__))
#endif

#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif

#define SWIW_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define SWIW_MIN(a, b) ((a) < (b) ? (a) : (b))
#define SWIW_MAX(a, b) ((a) > (b) ? (a) : (b))

/*
 * CRC32c (Castagnoli, reflected polynomial 0x82F63B78), the raw update:
 * start from SWIW_CRC32C_INIT, feed any number of pieces, and invert the
 * result (swiw_crc32c_final) for the value MPA puts on the wire.
 */
#define SWIW_CRC32C_INIT 0xffffffffu

/* The portable, table-driven update; available everywhere. */
u32 swiw_crc32c_table(u32 crc, const void *buf, size_t len);

#ifndef __KERNEL__
/* The fastest update this CPU has (see user/swiw_port_user.c); user space. */
u32 swiw_crc32c(u32 crc, const void *buf, size_t len);
#endif

/*
 * Debug log lines from the wire core, for reasons a connection failed:
 * pr_debug in the kernel; in user space the provider's log at debug
 * level (silent in programs that provide none). Anything a peer can
 * trigger repeatedly is logged once per connection, not per segment.
 */
#ifdef __KERNEL__
#define swiw_wire_dbg(fmt, ...) pr_debug("swiw: " fmt "\n", ##__VA_ARGS__)
#else
void swiw_wire_dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#endif

static inline u32 swiw_crc32c_final(u32 crc)
{
	return ~crc;
}

/* Byte order, without libc: the same code in every build. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SWIW_BSWAP16_LE(x) __builtin_bswap16(x)
#define SWIW_BSWAP32_LE(x) __builtin_bswap32(x)
#define SWIW_BSWAP64_LE(x) __builtin_bswap64(x)
#define SWIW_BSWAP32_BE(x) (x)
/* Constant forms, usable in initialisers and case labels. */
#define SWIW_CONST_SWAB16(x) \
	((u16)((((u16)(x)&0x00ffU) << 8) | (((u16)(x)&0xff00U) >> 8)))
#define SWIW_CONST_SWAB32(x)                     \
	((u32)((((u32)(x)&0x000000ffUL) << 24) | \
	       (((u32)(x)&0x0000ff00UL) << 8) |  \
	       (((u32)(x)&0x00ff0000UL) >> 8) |  \
	       (((u32)(x)&0xff000000UL) >> 24)))
#else
#define SWIW_BSWAP16_LE(x) (x)
#define SWIW_BSWAP32_LE(x) (x)
#define SWIW_BSWAP64_LE(x) (x)
#define SWIW_BSWAP32_BE(x) __builtin_bswap32(x)
#define SWIW_CONST_SWAB16(x) ((u16)(x))
#define SWIW_CONST_SWAB32(x) ((u32)(x))
#endif

/* Network-order constants: masks are written in wire order, once. */
#define SWIW_BE16(x) ((__force __be16)SWIW_CONST_SWAB16(x))
#define SWIW_BE32(x) ((__force __be32)SWIW_CONST_SWAB32(x))

static inline __be16 swiw_cpu_to_be16(u16 v)
{
	return (__force __be16)SWIW_BSWAP16_LE(v);
}

static inline u16 swiw_be16_to_cpu(__be16 v)
{
	return SWIW_BSWAP16_LE((__force u16)v);
}

static inline __be32 swiw_cpu_to_be32(u32 v)
{
	return (__force __be32)SWIW_BSWAP32_LE(v);
}

static inline u32 swiw_be32_to_cpu(__be32 v)
{
	return SWIW_BSWAP32_LE((__force u32)v);
}

static inline __be64 swiw_cpu_to_be64(u64 v)
{
	return (__force __be64)SWIW_BSWAP64_LE(v);
}

static inline u64 swiw_be64_to_cpu(__be64 v)
{
	return SWIW_BSWAP64_LE((__force u64)v);
}

/* MPA sends the CRC least significant byte first. */
static inline __le32 swiw_cpu_to_le32(u32 v)
{
	return (__force __le32)SWIW_BSWAP32_BE(v);
}

static inline u32 swiw_le32_to_cpu(__le32 v)
{
	return SWIW_BSWAP32_BE((__force u32)v);
}

/* Unaligned big-endian access to byte buffers (headers in a stream). */
static inline u16 swiw_get_be16(const void *p)
{
	const u8 *b = p;

	return (u16)(b[0] << 8 | b[1]);
}

static inline u32 swiw_get_be32(const void *p)
{
	const u8 *b = p;

	return (u32)b[0] << 24 | (u32)b[1] << 16 | (u32)b[2] << 8 | b[3];
}

static inline u64 swiw_get_be64(const void *p)
{
	return (u64)swiw_get_be32(p) << 32 | swiw_get_be32((const u8 *)p + 4);
}

static inline void swiw_put_be16(void *p, u16 v)
{
	u8 *b = p;

	b[0] = (u8)(v >> 8);
	b[1] = (u8)v;
}

static inline void swiw_put_be32(void *p, u32 v)
{
	u8 *b = p;

	b[0] = (u8)(v >> 24);
	b[1] = (u8)(v >> 16);
	b[2] = (u8)(v >> 8);
	b[3] = (u8)v;
}

static inline void swiw_put_be64(void *p, u64 v)
{
	swiw_put_be32(p, (u32)(v >> 32));
	swiw_put_be32((u8 *)p + 4, (u32)v);
}

/*
 * The flags word of a ring slot shared with another party (swiw-abi.h,
 * RINGS AND OWNERSHIP): loaded with acquire ordering before the slot's
 * contents are read, stored with release ordering after they are written.
 */
#ifdef __KERNEL__
static inline u16 swiw_slot_flags_load(const u16 *flags)
{
	return smp_load_acquire(flags);
}

static inline void swiw_slot_flags_store(u16 *flags, u16 v)
{
	smp_store_release(flags, v);
}
#else
static inline u16 swiw_slot_flags_load(const u16 *flags)
{
	return __atomic_load_n(flags, __ATOMIC_ACQUIRE);
}

static inline void swiw_slot_flags_store(u16 *flags, u16 v)
{
	__atomic_store_n(flags, v, __ATOMIC_RELEASE);
}
#endif

#endif /* SWIW_PORT_H */
