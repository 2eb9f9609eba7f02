/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One side's view of a swiw-abi.h ring: where its slots are and which one
 * this side touches next. The producer and the consumer each keep their
 * own view of the same memory; ownership passes through each slot's
 * flags word with release/acquire ordering (see swiw-abi.h), which is
 * all the synchronisation between the two sides. Callers on one side
 * serialise among themselves (the QP's queue locks).
 */
#ifndef SWIW_QUEUE_H
#define SWIW_QUEUE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <rdma/swiw-abi.h>

#include "swiw_ring.h" /* the one ring view, the wire core's */

static inline unsigned int swiw_ring_load_flags(const struct swiw_ring *r,
						const void *slot)
{
	const uint8_t *f = (const uint8_t *)slot + r->flags_off;

	if (r->flags16)
		return __atomic_load_n((const uint16_t *)f, __ATOMIC_ACQUIRE);
	return __atomic_load_n(f, __ATOMIC_ACQUIRE);
}

static inline void swiw_ring_store_flags(const struct swiw_ring *r, void *slot,
					 unsigned int v)
{
	uint8_t *f = (uint8_t *)slot + r->flags_off;

	if (r->flags16)
		__atomic_store_n((uint16_t *)f, (uint16_t)v, __ATOMIC_RELEASE);
	else
		__atomic_store_n(f, (uint8_t)v, __ATOMIC_RELEASE);
}

/* Producer: the slot to fill next, or NULL while the consumer holds it. */
static inline void *swiw_ring_prod_slot(const struct swiw_ring *r)
{
	void *s = swiw_ring_slot(r, r->pos);

	return swiw_ring_load_flags(r, s) & SWIW_SLOT_VALID ? NULL : s;
}

/* Producer: hands the filled slot over (flags without VALID given). */
static inline void swiw_ring_publish(struct swiw_ring *r, void *slot,
				     unsigned int flags)
{
	swiw_ring_store_flags(r, slot, flags | SWIW_SLOT_VALID);
	r->pos++;
}

/* Consumer: the next filled slot, or NULL when there is none. */
static inline void *swiw_ring_cons_slot(const struct swiw_ring *r)
{
	void *s = swiw_ring_slot(r, r->pos);

	return swiw_ring_load_flags(r, s) & SWIW_SLOT_VALID ? s : NULL;
}

/* Consumer: gives the slot back once its contents are copied out. */
static inline void swiw_ring_release(struct swiw_ring *r, void *slot)
{
	swiw_ring_store_flags(r, slot, 0);
	r->pos++;
}

/* Ring memory: zeroed (every slot free), page-aligned, plus @extra. */
void *swiw_ring_alloc(uint32_t num, uint32_t stride, size_t extra, size_t *len);
void swiw_ring_free(void *base, size_t len);

static inline uint32_t swiw_roundup_pow2(uint32_t v)
{
	return v <= 1 ? 1 : 1u << (32 - __builtin_clz(v - 1));
}

#endif /* SWIW_QUEUE_H */
