/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A tiny environment for the lower half (swiw_lower.h) in user space, as
 * the provider's ring engine and swiw.ko give it: regions in malloc'd
 * memory behind a table, rings laid out as swiw-abi.h says, a
 * non-blocking socket for the transport. Shared by test_lower.c and the
 * fuzz target.
 */
#ifndef SWIW_LOWER_ENV_H
#define SWIW_LOWER_ENV_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "swiw_lower.h"

_Static_assert(sizeof(struct swiw_iov) == sizeof(struct iovec) &&
		       offsetof(struct swiw_iov, len) ==
			       offsetof(struct iovec, iov_len),
	       "struct swiw_iov is laid out as struct iovec");

#define ENV_NREG 16
#define ENV_TX_NUM 16
#define ENV_TX_STRIDE 160
#define ENV_RQ_NUM 32
#define ENV_RQ_STRIDE (SWIW_RQE_HDR_SIZE + 16 * SWIW_MAX_SGE)
#define ENV_EV_STRIDE 96
#define ENV_PAGE 4096

struct env_region {
	bool used, valid, no_inval;
	bool dead; /* deregistered while held: mr_live says so */
	u32 stag, access;
	u64 base, len;
	u8 *mem;
	int holds;
};

struct env {
	int fd;
	struct swiw_lower *l;
	struct swiw_lower_cfg cfg;
	struct swiw_lower_rq rq;
	struct env_region reg[ENV_NREG];
	u8 *txmem, *evmem, *rqmem;
	u32 ev_num;
	u32 tx_put, ev_get, rq_put;
	int wakes, locked;
	size_t send_cap; /* octets one send() takes at most; 0: all */
	u64 sent;
	/* Pull mode without a socket (fd < 0): recv() serves these. */
	const u8 *rx_data;
	size_t rx_len, rx_off;
	u32 rx_seed, rx_calls;
	u32 rx_direct; /* reads into place: a destination's pieces, then the stage */
};

static inline struct env_region *env_find(struct env *e, u32 stag)
{
	int i;

	for (i = 0; i < ENV_NREG; i++)
		if (e->reg[i].used && e->reg[i].valid && e->reg[i].stag == stag)
			return &e->reg[i];
	return NULL;
}

static int env_mr_get(void *ctx, u32 stag, struct swiw_lower_mr *mr)
{
	struct env_region *r = env_find(ctx, stag);

	if (!r)
		return -ENOENT;
	r->holds++;
	mr->handle = r;
	mr->base = r->base;
	mr->len = r->len;
	mr->access = r->access;
	return 0;
}

static void env_mr_put(void *ctx, void *handle)
{
	struct env_region *r = handle;

	(void)ctx;
	if (r->holds <= 0)
		abort(); /* a put without a get */
	r->holds--;
}

static int env_mr_invalidate(void *ctx, u32 stag)
{
	struct env_region *r = env_find(ctx, stag);

	if (!r)
		return -ENOENT;
	if (r->no_inval)
		return -EACCES;
	r->valid = false;
	return 0;
}

/* The lower half promised the range lies in the held region. */
static u8 *env_at(struct env_region *r, u64 addr, u64 len)
{
	if (r->holds <= 0 || addr < r->base || addr - r->base > r->len ||
	    len > r->len - (addr - r->base))
		abort();
	return r->mem + (addr - r->base);
}

static void env_mr_write(void *ctx, void *handle, u64 addr, const void *src,
			 u32 len)
{
	(void)ctx;
	memcpy(env_at(handle, addr, len), src, len);
}

/* Pieces end at page boundaries of the address, as pinned pages do. */
static u32 env_mr_map(void *ctx, void *handle, u64 addr, u32 len,
		      struct swiw_iov *iov, u32 max)
{
	u8 *p = env_at(handle, addr, len);
	u32 n = 0, c;

	(void)ctx;
	while (len) {
		if (n == max)
			return 0;
		c = ENV_PAGE - (u32)(addr & (ENV_PAGE - 1));
		if (c > len)
			c = len;
		iov[n].base = p;
		iov[n].len = c;
		n++;
		p += c;
		addr += c;
		len -= c;
	}
	return n;
}

static int env_mr_atomic(void *ctx, void *handle, u64 addr,
			 const struct swiw_rdmap_atomic_req *a, u64 *orig)
{
	u64 *t = (u64 *)(void *)env_at(handle, addr, 8);

	(void)ctx;
	if ((uintptr_t)t & 7)
		return -EFAULT;
	*orig = *t;
	*t = swiw_rdmap_atomic_apply(a, *orig);
	return 0;
}

static void env_rq_lock(void *ctx, struct swiw_lower_rq *rq)
{
	struct env *e = ctx;

	if (rq != &e->rq || e->locked)
		abort();
	e->locked++;
}

static void env_rq_unlock(void *ctx, struct swiw_lower_rq *rq)
{
	struct env *e = ctx;

	if (rq != &e->rq || e->locked != 1)
		abort();
	e->locked--;
}

static bool env_mr_live(void *ctx, void *handle)
{
	(void)ctx;
	return !((struct env_region *)handle)->dead;
}

static long env_send(void *ctx, const struct swiw_iov *iov, u32 n, u32 len)
{
	struct env *e = ctx;
	struct iovec v[SWIW_LOWER_BATCH_IOV];
	struct msghdr mh = { .msg_iov = v };
	size_t cap = e->send_cap ? e->send_cap : len, sum = 0;
	ssize_t r;
	u32 i;

	if (n > SWIW_LOWER_BATCH_IOV || !n)
		abort();
	for (i = 0; i < n; i++)
		sum += iov[i].len;
	if (sum != len)
		abort(); /* the interface: @len is what @iov holds */
	for (i = 0; i < n && cap; i++) {
		v[i].iov_base = (void *)iov[i].base;
		v[i].iov_len = iov[i].len < cap ? iov[i].len : cap;
		cap -= v[i].iov_len;
	}
	mh.msg_iovlen = i;
	if (e->fd < 0)
		return (long)len; /* the fuzz target's sink */
	r = sendmsg(e->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (r < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	e->sent += (u64)r;
	return r;
}

/*
 * Pull-mode reads: from the socket, or from rx_data in pieces whose
 * sizes the seed varies (short reads included); 0 at its end.
 */
static long env_recv(void *ctx, const struct swiw_iov *iov, u32 n)
{
	struct env *e = ctx;
	struct iovec v[SWIW_LOWER_RX_IOV];
	struct msghdr mh = { .msg_iov = v, .msg_iovlen = n };
	size_t piece, got = 0, c;
	ssize_t r;
	u32 i;

	if (!n || n > sizeof(v) / sizeof(v[0]))
		abort();
	for (i = 0; i < n; i++) {
		if (!iov[i].len)
			abort(); /* the interface: no empty pieces */
		v[i].iov_base = (void *)iov[i].base;
		v[i].iov_len = iov[i].len;
	}
	if (n > 1)
		e->rx_direct++;
	if (e->fd >= 0) {
		r = recvmsg(e->fd, &mh, MSG_DONTWAIT);
		if (r < 0)
			return errno == EWOULDBLOCK ? -EAGAIN : -errno;
		return r;
	}
	if (e->rx_off == e->rx_len)
		return 0;
	piece = 1 + (e->rx_seed * 131u + e->rx_calls++ * 17u) % 9000;
	for (i = 0; i < n && piece && e->rx_off < e->rx_len; i++) {
		c = v[i].iov_len;
		if (c > piece)
			c = piece;
		if (c > e->rx_len - e->rx_off)
			c = e->rx_len - e->rx_off;
		memcpy(v[i].iov_base, e->rx_data + e->rx_off, c);
		e->rx_off += c;
		got += c;
		piece -= c;
	}
	return (long)got;
}

static void env_wake(void *ctx)
{
	((struct env *)ctx)->wakes++;
}

static const struct swiw_lower_ops env_ops = {
	.mr_get = env_mr_get,
	.mr_put = env_mr_put,
	.mr_invalidate = env_mr_invalidate,
	.mr_write = env_mr_write,
	.mr_map = env_mr_map,
	.mr_atomic = env_mr_atomic,
	.mr_live = env_mr_live,
	.rq_lock = env_rq_lock,
	.rq_unlock = env_rq_unlock,
	.send = env_send,
	.recv = env_recv,
	.wake = env_wake,
};

static inline void *env_zalloc(size_t n)
{
	void *p = aligned_alloc(ENV_PAGE,
				(n + ENV_PAGE - 1) & ~(size_t)(ENV_PAGE - 1));

	if (!p)
		abort();
	memset(p, 0, n);
	return p;
}

/* Rings and the stream's config; the caller sets the negotiated parts. */
static inline void env_rings(struct env *e, u32 ev_num)
{
	e->ev_num = ev_num;
	e->txmem = env_zalloc(ENV_TX_NUM * ENV_TX_STRIDE);
	e->evmem = env_zalloc(ev_num * ENV_EV_STRIDE);
	e->rqmem = env_zalloc(ENV_RQ_NUM * ENV_RQ_STRIDE);
	e->cfg.tx =
		(struct swiw_ring){ e->txmem, ENV_TX_NUM, ENV_TX_STRIDE, 0 };
	e->cfg.rxev = (struct swiw_ring){ e->evmem, ev_num, ENV_EV_STRIDE, 0 };
	e->rq.ring =
		(struct swiw_ring){ e->rqmem, ENV_RQ_NUM, ENV_RQ_STRIDE, 0 };
	e->rq.max_sge = SWIW_MAX_SGE;
	e->cfg.rq = &e->rq;
	e->cfg.ird = 16;
	e->cfg.mulpdu = 1024;
}

static inline void env_free(struct env *e)
{
	int i;

	for (i = 0; i < ENV_NREG; i++)
		free(e->reg[i].mem);
	free(e->txmem);
	free(e->evmem);
	free(e->rqmem);
	free(e->l);
}

/* A region of @len octets at iova @base; returns its STag. */
static inline u32 env_reg(struct env *e, u64 base, u64 len, u32 access)
{
	int i;

	for (i = 0; i < ENV_NREG; i++) {
		struct env_region *r = &e->reg[i];

		if (r->used)
			continue;
		r->used = r->valid = true;
		r->stag = (u32)(i + 1) << 8 | 0x5a;
		r->base = base;
		r->len = len;
		r->access = access;
		r->mem = env_zalloc(len ? len : 1);
		return r->stag;
	}
	abort();
}

/* Writes an element into a ring slot and hands it over (producer). */
static inline void env_slot_put(u8 *slot, const void *el, size_t len, u16 flags)
{
	memcpy(slot, el, 8);
	memcpy(slot + 10, (const u8 *)el + 10, len - 10);
	__atomic_store_n((u16 *)(void *)(slot + 8),
			 (u16)(flags | SWIW_SLOT_VALID), __ATOMIC_RELEASE);
}

static inline bool env_slot_valid(u8 *slot)
{
	return __atomic_load_n((u16 *)(void *)(slot + 8), __ATOMIC_ACQUIRE) &
	       SWIW_SLOT_VALID;
}

static inline u8 *env_tx_slot(struct env *e)
{
	return e->txmem + (e->tx_put % ENV_TX_NUM) * ENV_TX_STRIDE;
}

static inline u8 *env_rq_slot(struct env *e)
{
	return e->rqmem + (e->rq_put % ENV_RQ_NUM) * ENV_RQ_STRIDE;
}

/* Takes the next event (consumer); false when there is none. */
static inline bool env_ev_take(struct env *e, struct swiw_rxev *ev)
{
	u8 *slot = e->evmem + (e->ev_get % e->ev_num) * ENV_EV_STRIDE;

	if (!env_slot_valid(slot))
		return false;
	memcpy(ev, slot, sizeof(*ev));
	__atomic_store_n((u16 *)(void *)(slot + 8), 0, __ATOMIC_RELEASE);
	e->ev_get++;
	return true;
}

/*
 * Fuzz targets: takes every event, checking its shape, counting those
 * that return an RQE, and handing each to @each (may be NULL).
 */
static inline void env_fuzz_drain(struct env *e, u32 *rqe_events,
				  void (*each)(const struct swiw_rxev *ev))
{
	struct swiw_rxev ev;

	while (env_ev_take(e, &ev)) {
		if (ev.hdr_len > SWIW_DDP_HDR_MAX || !ev.type ||
		    ev.type > SWIW_RXEV_CLOSED)
			abort();
		if (ev.flags & SWIW_RXEV_RQE)
			(*rqe_events)++;
		if (each)
			each(&ev);
	}
}

/*
 * Fuzz targets: the run is over, the stream detaches. Nothing may stay
 * held, and every RQE taken must have been reported once.
 */
static inline void env_fuzz_end(struct env *e, u32 *rqe_events,
				void (*each)(const struct swiw_rxev *ev))
{
	int i;

	swiw_lower_tx(e->l);
	env_fuzz_drain(e, rqe_events, each);
	swiw_lower_doorbell(e->l);
	env_fuzz_drain(e, rqe_events, each);
	swiw_lower_fini(e->l);
	env_fuzz_drain(e, rqe_events, each);
	for (i = 0; i < ENV_NREG; i++)
		if (e->reg[i].holds)
			abort(); /* a region still held after detach */
	if (e->locked || *rqe_events != e->rq.ring.pos)
		abort(); /* an RQE taken and not reported once */
	env_free(e);
}

#endif /* SWIW_LOWER_ENV_H */
