// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The lower half's transmit side (swiw_lower.h): txds from the transmit
 * ring, copied out once and checked, their payload mapped from held
 * regions and framed; Read and Atomic Responses of our own cut by
 * swiw_ddp_tx between the provider's messages. Frames are built into a
 * batch of up to SWIW_LOWER_BATCH FPDUs that goes to the transport in
 * one send() (one sendmsg in user space, with several small messages in
 * it); each frame keeps its regions and its txd slot until the
 * transport took all of it. A txd is retired (its slot cleared, its
 * SENT posted) in ring order as its frame leaves.
 */
#include "swiw_lower_priv.h"

static struct swiw_lower_frame *bf_at(struct swiw_lower *l, u32 i)
{
	return &l->bf[(l->bf_head + i) % SWIW_LOWER_BATCH];
}

static void frame_put(struct swiw_lower *l, struct swiw_lower_frame *f)
{
	u32 i;

	for (i = 0; i < f->nmr; i++)
		l->ops->mr_put(l->env, f->mr[i]);
	f->nmr = 0;
}

/* Drops the batch and every response not sent. */
void swiw_lower_tx_drop(struct swiw_lower *l)
{
	struct swiw_lower_resp *r;

	while (l->bf_n) {
		frame_put(l, bf_at(l, 0));
		l->bf_head = (l->bf_head + 1) % SWIW_LOWER_BATCH;
		l->bf_n--;
	}
	l->biov_n = l->biov_pos = 0;
	l->biov_left = 0;
	l->ev_owed = 0;
	while (l->resp_head != l->resp_tail) {
		r = &l->resp[l->resp_head++ % SWIW_MAX_IRD];
		if (r->mr)
			l->ops->mr_put(l->env, r->mr);
		r->mr = NULL;
	}
	l->resp_cut = l->resp_tail;
	l->resp_busy = false;
}

/* Gives the oldest txd's slot back and posts its SENT if due. */
static void txd_retire(struct swiw_lower *l, const struct swiw_txd *t,
		       bool event, u32 status)
{
	struct swiw_ring *r = &l->cfg.tx;
	struct swiw_rxev ev;

	swiw_slot_flags_store(swiw_lower_slot_flags(swiw_lower_slot(r, r->pos)),
			      0);
	r->pos++;
	if (!event)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.id = t->id;
	ev.type = SWIW_RXEV_SENT;
	ev.status = status;
	swiw_lower_ev_post(l, &ev);
}

/* The oldest frame is all out: what it belonged to moves on. */
static void frame_done(struct swiw_lower *l)
{
	struct swiw_lower_frame *f = bf_at(l, 0);
	struct swiw_lower_resp *r;
	bool event;

	l->bf_head = (l->bf_head + 1) % SWIW_LOWER_BATCH;
	l->bf_n--;
	if (f->txd) {
		frame_put(l, f);
		event = f->t.flags & SWIW_TXD_EVENT;
		if (event)
			l->ev_owed--;
		txd_retire(l, &f->t, event, 0);
		return;
	}
	if (!f->last)
		return;
	r = &l->resp[l->resp_head++ % SWIW_MAX_IRD];
	if (r->mr)
		l->ops->mr_put(l->env, r->mr);
	r->mr = NULL;
	swiw_ddp_rx_ird_release(&l->drx);
}

/*
 * Hands the batch to the transport: 1 when all of it went, 0 when the
 * transport took no more, or its negative errno. Frames wholly taken
 * are done as they pass.
 */
static int batch_push(struct swiw_lower *l)
{
	struct swiw_iov *v;
	u64 left;
	long n;

	while (l->biov_pos < l->biov_n) {
		left = l->biov_left;
		n = l->ops->send(l->env, l->biov + l->biov_pos,
				 l->biov_n - l->biov_pos,
				 (u32)SWIW_MIN(left, (u64)0xffffffffu));
		if (n < 0)
			return (int)n;
		if ((u64)n > left)
			n = (long)left;
		l->biov_left -= (u64)n;
		/* Pieces wholly taken go; the next one starts later. */
		while (l->biov_pos < l->biov_n) {
			v = &l->biov[l->biov_pos];
			if ((u64)n < v->len) {
				v->base = (const u8 *)v->base + n;
				v->len -= (size_t)n;
				break;
			}
			n -= (long)v->len;
			l->biov_pos++;
			while (l->bf_n && bf_at(l, 0)->iov_end <= l->biov_pos)
				frame_done(l);
		}
		if (l->biov_left)
			return 0;
	}
	while (l->bf_n) /* frames of nothing but empty pieces */
		frame_done(l);
	l->biov_n = l->biov_pos = 0;
	return 1;
}

/* Frames the ULPDU in l->ulpdu[0..@np) as the batch's next frame. */
static int frame_add(struct swiw_lower *l, struct swiw_lower_frame *f, u32 np)
{
	u32 i;

	f->f.iov = l->biov + l->biov_n;
	f->f.max_iov = SWIW_LOWER_BATCH_IOV - l->biov_n;
	if (swiw_fpdu_tx_build(&l->ftx, l->ulpdu, np, &f->f))
		return -EINVAL;
	for (i = 0; i < f->f.n_iov; i++)
		l->biov_left += f->f.iov[i].len;
	l->biov_n += f->f.n_iov;
	f->iov_end = l->biov_n;
	l->bf_n++;
	return 0;
}

/* The next frame slot, once the batch has room for a frame. */
static struct swiw_lower_frame *frame_slot(struct swiw_lower *l)
{
	if (l->bf_n >= SWIW_LOWER_BATCH ||
	    l->biov_n + SWIW_LOWER_FRAME_IOV > SWIW_LOWER_BATCH_IOV)
		return NULL;
	return bf_at(l, l->bf_n);
}

/* The next segment of the response being cut; 0 or a negative errno. */
static int resp_next(struct swiw_lower *l, struct swiw_lower_frame *f)
{
	struct swiw_lower_resp *r = &l->resp[l->resp_cut % SWIW_MAX_IRD];
	struct swiw_ddp_txseg seg;
	u32 np = 1, m;

	if (!l->resp_busy) {
		if (swiw_ddp_tx_init(&l->resp_tx, &r->msg))
			return -EINVAL;
		l->resp_busy = true;
	}
	if (swiw_ddp_tx_next(&l->resp_tx, l->cfg.mulpdu, f->hdr, sizeof(f->hdr),
			     &seg) != 1)
		return -EINVAL;
	l->ulpdu[0].base = f->hdr;
	l->ulpdu[0].len = seg.hdr_len;
	if (seg.payload_len) {
		m = l->ops->mr_map(l->env, r->mr, r->src + seg.payload_off,
				   seg.payload_len, l->ulpdu + 1,
				   SWIW_LOWER_ULPDU_IOV - 1);
		if (!m || m > SWIW_LOWER_ULPDU_IOV - 1)
			return -EFAULT;
		np += m;
	}
	f->txd = false;
	f->last = seg.last;
	f->nmr = 0;
	if (frame_add(l, f, np))
		return -EINVAL;
	if (seg.last) {
		l->resp_busy = false;
		l->resp_cut++;
	}
	return 0;
}

/*
 * A Read or Atomic Request of ours is on its way: the response it asks
 * for is the next the peer may send (swiw_lower_rx.c checks it).
 */
static void rreq_note(struct swiw_lower *l, const struct swiw_txd *t)
{
	struct swiw_lower_rreq *q;
	struct swiw_ddp_seg g;
	enum swiw_violation v;
	struct iwarp_ctrl c;

	memcpy(&c, t->hdr, sizeof(c));
	if (iwarp_opcode(&c) != RDMAP_READ_REQ &&
	    iwarp_opcode(&c) != RDMAP_ATOMIC_REQ)
		return;
	if (swiw_ddp_parse(t->hdr, t->hdr_len, SWIW_DDP_RX_RFC7306, &g, &v) ||
	    l->rreq_tail - l->rreq_head >= SWIW_MAX_ORD)
		return; /* not a request the peer can answer: nothing owed */
	q = &l->rreq[l->rreq_tail++ % SWIW_MAX_ORD];
	memset(q, 0, sizeof(*q));
	q->atomic = g.opcode == RDMAP_ATOMIC_REQ;
	if (!q->atomic) {
		q->sink_stag = g.u.rreq.sink_stag;
		swiw_ddp_progress_expect(&q->prog, g.u.rreq.sink_to,
					 g.u.rreq.size);
	}
}

/* Checks the txd copied into @f, holds its regions, maps and frames its
 * segment: 0, or the positive errno it fails with. */
static u32 txd_build(struct swiw_lower *l, struct swiw_lower_frame *f)
{
	const struct swiw_txd *t = &f->t;
	u64 total = 0, off;
	u32 i, np = 1, m;
	struct swiw_lower_mr mr;

	f->nmr = 0;
	if (t->num_sge > SWIW_TXD_SGE ||
	    t->hdr_len < sizeof(struct ddp_tagged_hdr) ||
	    t->hdr_len > SWIW_DDP_HDR_MAX)
		return EINVAL;
	for (i = 0; i < t->num_sge; i++)
		total += t->sge[i].length;
	/* hdr_len covers the shortest ULPDU, a tagged header. */
	if (total != t->payload_len || total + t->hdr_len > MPA_MAX_ULPDU_LEN)
		return EINVAL;
	l->ulpdu[0].base = t->hdr;
	l->ulpdu[0].len = t->hdr_len;
	for (i = 0; i < t->num_sge; i++) {
		const struct swiw_sge *s = &t->sge[i];

		if (!s->length)
			continue;
		if (l->ops->mr_get(l->env, s->lkey, &mr))
			return ENOENT;
		f->mr[f->nmr++] = mr.handle;
		if (s->laddr < mr.base)
			return EFAULT;
		off = s->laddr - mr.base;
		if (off > mr.len || s->length > mr.len - off)
			return EFAULT;
		m = l->ops->mr_map(l->env, mr.handle, s->laddr, s->length,
				   l->ulpdu + np, SWIW_LOWER_ULPDU_IOV - np);
		if (!m || m > SWIW_LOWER_ULPDU_IOV - np)
			return EFAULT;
		np += m;
	}
	f->txd = true;
	f->last = false;
	return frame_add(l, f, np) ? EINVAL : 0;
}

/*
 * Takes the next txd into the batch: 1 when one was framed or handled,
 * 0 when none can be now (ring empty, no event room, or one that must
 * wait for the batch to go: an INVALIDATE, which acts in ring order, or
 * a txd that fails, so that the frames before it go first), -1 when
 * transmit failed.
 */
static int txd_next(struct swiw_lower *l, struct swiw_lower_frame *f)
{
	const struct swiw_ring *r = &l->cfg.tx;
	u8 *slot = swiw_lower_slot(r, l->tx_take);
	u16 fl = swiw_slot_flags_load(swiw_lower_slot_flags(slot));
	struct swiw_txd *t = &f->t;
	struct iwarp_ctrl c;
	u32 err, stag, need;
	int rc;

	if (!(fl & SWIW_SLOT_VALID))
		return 0;
	/* Copied once: only the copy is read from here on. */
	swiw_lower_slot_copy(t, slot, sizeof(*t));
	t->flags = fl;
	/* Its SENT, the batch's, and what reception may still post. */
	need = l->ev_owed + 1 + (l->rx_done ? 0 : SWIW_LOWER_RX_EVENTS);
	if ((fl & (SWIW_TXD_EVENT | SWIW_TXD_INVALIDATE)) &&
	    !swiw_lower_ev_room(l, need)) {
		l->stalled = true;
		return 0;
	}
	if (fl & ~(SWIW_SLOT_VALID | SWIW_TXD_EVENT | SWIW_TXD_INVALIDATE)) {
		err = EINVAL;
	} else if (fl & SWIW_TXD_INVALIDATE) {
		if (l->bf_n)
			return 0;
		if (t->hdr_len != sizeof(stag) || t->num_sge ||
		    t->payload_len) {
			err = EINVAL;
		} else {
			memcpy(&stag, t->hdr, sizeof(stag));
			rc = l->ops->mr_invalidate(l->env, stag);
			l->tx_take++;
			txd_retire(l, t, true, (u32)-rc);
			return 1;
		}
	} else {
		err = txd_build(l, f);
	}
	if (!err) {
		l->tx_take++;
		if (fl & SWIW_TXD_EVENT)
			l->ev_owed++;
		memcpy(&c, t->hdr, sizeof(c));
		l->in_msg = !iwarp_last(&c);
		rreq_note(l, t);
		return 1;
	}
	frame_put(l, f);
	if (l->bf_n)
		return 0; /* the frames before it go first */
	/* Not sent, nor anything after it. */
	l->tx_take++;
	l->tx_failed = true;
	txd_retire(l, t, true, err);
	return -1;
}

/* A region @f reads from was deregistered; @k: the response it is of. */
static bool frame_revoked(struct swiw_lower *l,
			  const struct swiw_lower_frame *f, u32 k)
{
	const struct swiw_lower_resp *r = &l->resp[k % SWIW_MAX_IRD];
	u32 i;

	if (!f->txd)
		return r->mr && !l->ops->mr_live(l->env, r->mr);
	for (i = 0; i < f->nmr; i++)
		if (!l->ops->mr_live(l->env, f->mr[i]))
			return true;
	return false;
}

bool swiw_lower_tx_revoke(struct swiw_lower *l)
{
	u32 i, k = l->resp_head; /* the batch's first response frame's */
	bool revoked = false;

	if (!l->ops->mr_live || l->tx_failed)
		return false;
	for (i = 0; i < l->bf_n && !revoked; i++) {
		const struct swiw_lower_frame *f = bf_at(l, i);

		revoked = frame_revoked(l, f, k);
		if (!f->txd && f->last)
			k++;
	}
	if (!revoked)
		return false;
	swiw_lower_tx_drop(l);
	l->tx_failed = true;
	swiw_lower_rx_end(l, SWIW_RXEV_VIOLATION, SWIW_V_RDMAP_CATASTROPHIC, 0,
			  NULL, 0, 0);
	swiw_lower_wake(l);
	return true;
}

/*
 * Builds the next batch: responses between the provider's messages,
 * txds in ring order. True if it holds a frame.
 */
static bool batch_build(struct swiw_lower *l)
{
	struct swiw_lower_frame *f;
	int rc;

	while (!l->tx_failed && (f = frame_slot(l))) {
		if (!l->in_msg &&
		    (l->resp_busy || l->resp_cut != l->resp_tail)) {
			if (resp_next(l, f)) {
				/* Our own response cannot go: a local
				 * failure the provider reports. */
				swiw_lower_tx_drop(l);
				l->tx_failed = true;
				swiw_lower_rx_end(l, SWIW_RXEV_VIOLATION,
						  SWIW_V_RDMAP_CATASTROPHIC, 0,
						  NULL, 0, 0);
				return false;
			}
			continue;
		}
		if (l->stalled)
			break;
		rc = txd_next(l, f);
		if (rc <= 0)
			break;
	}
	return l->bf_n;
}

int swiw_lower_tx(struct swiw_lower *l)
{
	int rc, ret = 0;

	while (!l->tx_failed) {
		if (!l->bf_n && !batch_build(l))
			break;
		rc = batch_push(l);
		if (rc < 0) {
			l->tx_failed = true;
			swiw_lower_tx_drop(l);
			swiw_lower_rx_end(l, SWIW_RXEV_CLOSED, SWIW_V_NONE,
					  (u32)-rc, NULL, 0, 0);
			break;
		}
		if (!rc) {
			ret = 1;
			break;
		}
	}
	swiw_lower_wake(l);
	return ret;
}
