/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the lower half's files (swiw_lower.c, swiw_lower_rx.c,
 * swiw_lower_tx.c) share: ring slot access and event posting.
 */
#ifndef SWIW_LOWER_PRIV_H
#define SWIW_LOWER_PRIV_H

#include "swiw_lower.h"

/* Every slot kind starts with its id, then the flags word. */
#define SWIW_SLOT_FLAGS_OFF 8
_Static_assert(offsetof(struct swiw_txd, flags) == SWIW_SLOT_FLAGS_OFF,
	       "txd flags");
_Static_assert(offsetof(struct swiw_rqe, flags) == SWIW_SLOT_FLAGS_OFF,
	       "rqe flags");
_Static_assert(offsetof(struct swiw_rxev, flags) == SWIW_SLOT_FLAGS_OFF,
	       "rxev flags");

static inline u8 *swiw_lower_slot(const struct swiw_ring *r, u32 pos)
{
	return (u8 *)swiw_ring_slot(r, pos);
}

static inline u16 *swiw_lower_slot_flags(u8 *slot)
{
	return (u16 *)(void *)(slot + SWIW_SLOT_FLAGS_OFF);
}

/* Copies a slot's element out, all but the flags word the caller has
 * loaded already (the producer does not touch it until we clear it). */
static inline void swiw_lower_slot_copy(void *dst, const u8 *slot, size_t len)
{
	memcpy(dst, slot, SWIW_SLOT_FLAGS_OFF);
	memcpy((u8 *)dst + SWIW_SLOT_FLAGS_OFF + 2,
	       slot + SWIW_SLOT_FLAGS_OFF + 2, len - SWIW_SLOT_FLAGS_OFF - 2);
}

/* An RQE slot emptied: the SGEs past nsge are never read, and not
 * cleared (a memset of all SWIW_MAX_SGE of them cost every message). */
static inline void swiw_lower_rqe_clear(struct swiw_lower_rqe *q)
{
	q->valid = false;
	q->bad = false;
	q->id = 0;
	q->nsge = 0;
	q->len = 0;
}

/* swiw_lower.c */
bool swiw_lower_ev_room(struct swiw_lower *l, u32 n);
void swiw_lower_ev_post(struct swiw_lower *l, const struct swiw_rxev *ev);
void swiw_lower_rx_end(struct swiw_lower *l, u8 type, u32 violation, u32 status,
		       const u8 *hdr, u32 hdr_len, u32 seg_len);
void swiw_lower_rqe_drop(struct swiw_lower *l);
void swiw_lower_tmr_drop(struct swiw_lower *l);
void swiw_lower_wake(struct swiw_lower *l);

/* swiw_lower_rx.c */
extern const struct swiw_ddp_mem_ops swiw_lower_mem_ops;

/* swiw_lower_tx.c */
void swiw_lower_tx_drop(struct swiw_lower *l);

#endif /* SWIW_LOWER_PRIV_H */
