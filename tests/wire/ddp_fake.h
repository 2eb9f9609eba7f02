/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A fake engine memory for the DDP receive tests and the fuzzer: a few
 * tagged regions and posted receive buffers with real backing store, and
 * the struct swiw_ddp_mem_ops that resolves them. fake_place() writes a
 * destination into the store and aborts if it ever lies outside it: the
 * validator must make that impossible.
 */
#ifndef SWIW_DDP_FAKE_H
#define SWIW_DDP_FAKE_H

#include <stdlib.h>
#include <string.h>

#include "swiw_ddp.h"

#define FAKE_NREG 8
#define FAKE_NBUF 64

enum {
	FAKE_REGION = 1,
	FAKE_RBUF = 2
};

struct fake_region {
	int kind; /* FAKE_REGION, so a handle says what it is */
	u32 stag;
	u64 base;
	u64 len;
	u32 access;
	bool assoc;
	int opcode; /* answer only for this opcode; -1: any */
	struct swiw_ddp_progress *progress;
	u8 *mem;
};

struct fake_rbuf {
	int kind; /* FAKE_RBUF */
	u32 qn;
	u32 msn;
	u64 len;
	bool track; /* hand out the progress struct */
	struct swiw_ddp_progress progress;
	u8 *mem;
	int completions;
};

struct fake_mem {
	struct fake_region r[FAKE_NREG];
	int nr;
	struct fake_rbuf b[FAKE_NBUF];
	int nb;
	int lookups;
};

static inline int fake_tagged(void *ctx, unsigned int opcode, u32 stag,
			      struct swiw_ddp_region *out)
{
	struct fake_mem *fm = ctx;
	int i;

	fm->lookups++;
	for (i = 0; i < fm->nr; i++) {
		struct fake_region *r = &fm->r[i];

		if (r->stag != stag ||
		    (r->opcode >= 0 && (unsigned int)r->opcode != opcode))
			continue;
		out->handle = r;
		out->base = r->base;
		out->len = r->len;
		out->access = r->access;
		out->associated = r->assoc;
		out->progress = r->progress;
		return 0;
	}
	return -ENOENT;
}

static inline int fake_untagged(void *ctx, u32 qn, u32 msn,
				struct swiw_ddp_rbuf *out)
{
	struct fake_mem *fm = ctx;
	int i;

	fm->lookups++;
	for (i = 0; i < fm->nb; i++) {
		struct fake_rbuf *b = &fm->b[i];

		if (b->qn != qn || b->msn != msn)
			continue;
		out->handle = b;
		out->len = b->len;
		out->progress = b->track ? &b->progress : NULL;
		return 0;
	}
	return -ENOENT;
}

static const struct swiw_ddp_mem_ops fake_ops = {
	.tagged = fake_tagged,
	.untagged = fake_untagged,
};

static inline struct fake_region *fake_add_region(struct fake_mem *fm, u32 stag,
						  u64 base, u64 len, u32 access)
{
	struct fake_region *r = &fm->r[fm->nr++];

	memset(r, 0, sizeof(*r));
	r->kind = FAKE_REGION;
	r->stag = stag;
	r->base = base;
	r->len = len;
	r->access = access;
	r->assoc = true;
	r->opcode = -1;
	/* Backing store only for regions small enough to be real. */
	if (len && len <= (1u << 20))
		r->mem = calloc(1, (size_t)len);
	return r;
}

static inline struct fake_rbuf *fake_add_rbuf(struct fake_mem *fm, u32 qn,
					      u32 msn, u64 len, bool track)
{
	struct fake_rbuf *b = &fm->b[fm->nb++];

	memset(b, 0, sizeof(*b));
	b->kind = FAKE_RBUF;
	b->qn = qn;
	b->msn = msn;
	b->len = len;
	b->track = track;
	swiw_ddp_progress_init(&b->progress);
	b->mem = calloc(1, len ? (size_t)len : 1);
	return b;
}

static inline void fake_free(struct fake_mem *fm)
{
	int i;

	for (i = 0; i < fm->nr; i++)
		free(fm->r[i].mem);
	for (i = 0; i < fm->nb; i++)
		free(fm->b[i].mem);
	fm->nr = fm->nb = 0;
}

/* Copies a PLACE destination's payload into the store; 0 or -1. */
static inline int fake_place(const struct swiw_ddp_dest *d, const u8 *payload)
{
	const int *kind = d->handle;

	if (d->action != SWIW_DDP_PLACE || !d->handle)
		return 0;
	if (*kind == FAKE_REGION) {
		const struct fake_region *r = d->handle;

		if (d->offset > r->len || d->len > r->len - d->offset)
			abort(); /* the validator let a write escape */
		if (r->mem)
			memcpy(r->mem + d->offset, payload, (size_t)d->len);
	} else {
		struct fake_rbuf *b = d->handle;

		if (d->offset > b->len || d->len > b->len - d->offset)
			abort();
		memcpy(b->mem + d->offset, payload, (size_t)d->len);
		if (d->complete)
			b->completions++;
	}
	return 0;
}

#endif /* SWIW_DDP_FAKE_H */
