/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One side's view of a swiw-abi.h ring: the provider's (its SQ, RQ, CQ
 * and a stream's transmit and event rings), the lower half's in the
 * process and in swiw.ko alike. The slots are in memory both sides see;
 * each side keeps its own position (see swiw-abi.h, RINGS AND OWNERSHIP).
 */
#ifndef SWIW_RING_H
#define SWIW_RING_H

#include "swiw_port.h"

struct swiw_ring {
	u8 *base;
	u32 num; /* slots, a power of two */
	u32 stride; /* octets per slot */
	u32 pos; /* this side's next slot, unmasked */
	u32 flags_off; /* offset of the flags word in a slot */
	bool flags16; /* a __u16 flags word (WQEs, txds, events), else __u8 */
};

static inline void *swiw_ring_slot(const struct swiw_ring *r, u32 pos)
{
	return r->base + (size_t)(pos & (r->num - 1)) * r->stride;
}

#endif /* SWIW_RING_H */
