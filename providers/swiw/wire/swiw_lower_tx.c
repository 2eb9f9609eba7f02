// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The lower half's transmit side (swiw_lower.h): txds from the transmit
 * ring, copied out once and checked, their payload mapped from held
 * regions and framed; Read and Atomic Responses of our own cut by
 * swiw_ddp_tx between the provider's messages. One frame is out at a
 * time, kept with its regions until the transport took all of it.
 */
#include "swiw_lower_priv.h"

/* Drops the frame under way and every response not sent. */
void swiw_lower_tx_drop(struct swiw_lower *l)
{
	struct swiw_lower_resp *r;
	u32 i;

	for (i = 0; i < l->txd_nmr; i++)
		l->ops->mr_put(l->env, l->txd_mr[i]);
	l->txd_nmr = 0;
	while (l->resp_head != l->resp_tail) {
		r = &l->resp[l->resp_head++ % SWIW_MAX_IRD];
		if (r->mr)
			l->ops->mr_put(l->env, r->mr);
		r->mr = NULL;
	}
	l->frame_busy = false;
	l->resp_busy = false;
}

/* Hands the frame to the transport: 1 when all of it went, 0 when the
 * transport took no more, or its negative errno. */
static int frame_push(struct swiw_lower *l)
{
	struct swiw_fpdu_frame *f = &l->frame;
	struct swiw_iov *v;
	u32 i, left;
	long n;

	while (l->frame_idx < f->n_iov) {
		left = 0;
		for (i = l->frame_idx; i < f->n_iov; i++)
			left += (u32)f->iov[i].len;
		n = l->ops->send(l->env, f->iov + l->frame_idx,
				 f->n_iov - l->frame_idx, left);
		if (n < 0)
			return (int)n;
		if ((u64)n > left)
			n = left;
		/* Pieces wholly taken go; the next one starts later. */
		i = (u32)n;
		while (l->frame_idx < f->n_iov) {
			v = &f->iov[l->frame_idx];
			if (i < v->len) {
				v->base = (const u8 *)v->base + i;
				v->len -= i;
				break;
			}
			i -= (u32)v->len;
			l->frame_idx++;
		}
		if ((u32)n < left)
			return 0;
	}
	return 1;
}

/* Frames the ULPDU in l->ulpdu[0..@np): 0 or -EINVAL. */
static int frame_build(struct swiw_lower *l, u32 np)
{
	l->frame.iov = l->fiov;
	l->frame.max_iov = SWIW_LOWER_FRAME_IOV;
	if (swiw_fpdu_tx_build(&l->ftx, l->ulpdu, np, &l->frame))
		return -EINVAL;
	l->frame_idx = 0;
	l->frame_busy = true;
	return 0;
}

/* The next segment of the oldest response; 0 or a negative errno. */
static int resp_next(struct swiw_lower *l)
{
	struct swiw_lower_resp *r = &l->resp[l->resp_head % SWIW_MAX_IRD];
	struct swiw_ddp_txseg seg;
	u32 np = 1, m;

	if (!l->resp_busy) {
		if (swiw_ddp_tx_init(&l->resp_tx, &r->msg))
			return -EINVAL;
		l->resp_busy = true;
	}
	if (swiw_ddp_tx_next(&l->resp_tx, l->cfg.mulpdu, l->resp_hdr,
			     sizeof(l->resp_hdr), &seg) != 1)
		return -EINVAL;
	l->ulpdu[0].base = l->resp_hdr;
	l->ulpdu[0].len = seg.hdr_len;
	if (seg.payload_len) {
		m = l->ops->mr_map(l->env, r->mr, r->src + seg.payload_off,
				   seg.payload_len, l->ulpdu + 1,
				   SWIW_LOWER_ULPDU_IOV - 1);
		if (!m || m > SWIW_LOWER_ULPDU_IOV - 1)
			return -EFAULT;
		np += m;
	}
	l->frame_txd = false;
	l->frame_last = seg.last;
	return frame_build(l, np);
}

/* Releases the txd's regions. */
static void txd_put(struct swiw_lower *l)
{
	u32 i;

	for (i = 0; i < l->txd_nmr; i++)
		l->ops->mr_put(l->env, l->txd_mr[i]);
	l->txd_nmr = 0;
}

/* Gives the current txd's slot back and posts SENT if due. */
static void txd_retire(struct swiw_lower *l, bool event, u32 status)
{
	struct swiw_lower_ring *r = &l->cfg.tx;
	struct swiw_rxev ev;

	swiw_slot_flags_store(swiw_lower_slot_flags(swiw_lower_slot(r, r->pos)),
			      0);
	r->pos++;
	if (!event)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.id = l->txd.id;
	ev.type = SWIW_RXEV_SENT;
	ev.status = status;
	swiw_lower_ev_post(l, &ev);
}

/* Checks the txd copied out, holds its regions, maps and frames its
 * segment: 0, or the positive errno it fails with. */
static u32 txd_build(struct swiw_lower *l)
{
	const struct swiw_txd *t = &l->txd;
	u64 total = 0, off;
	u32 i, np = 1, m;
	struct swiw_lower_mr mr;

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
		l->txd_mr[l->txd_nmr++] = mr.handle;
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
	if (frame_build(l, np))
		return EINVAL;
	l->frame_txd = true;
	return 0;
}

/* Takes the next txd: true when one was sent on or handled. */
static bool txd_next(struct swiw_lower *l)
{
	const struct swiw_lower_ring *r = &l->cfg.tx;
	u8 *slot = swiw_lower_slot(r, r->pos);
	u16 fl = swiw_slot_flags_load(swiw_lower_slot_flags(slot));
	struct swiw_txd *t = &l->txd;
	u32 err, stag, need;
	int rc;

	if (!(fl & SWIW_SLOT_VALID))
		return false;
	/* Copied once: only the copy is read from here on. */
	swiw_lower_slot_copy(t, slot, sizeof(*t));
	t->flags = fl;
	/* Its SENT, and what reception may still post (swiw_lower.c). */
	need = 1 + (l->rx_done ? 0 : SWIW_LOWER_RX_EVENTS);
	if ((fl & (SWIW_TXD_EVENT | SWIW_TXD_INVALIDATE)) &&
	    !swiw_lower_ev_room(l, need)) {
		l->stalled = true;
		return false;
	}
	if (fl & ~(SWIW_SLOT_VALID | SWIW_TXD_EVENT | SWIW_TXD_INVALIDATE)) {
		err = EINVAL;
	} else if (fl & SWIW_TXD_INVALIDATE) {
		if (t->hdr_len != sizeof(stag) || t->num_sge ||
		    t->payload_len) {
			err = EINVAL;
		} else {
			memcpy(&stag, t->hdr, sizeof(stag));
			rc = l->ops->mr_invalidate(l->env, stag);
			txd_retire(l, true, (u32)-rc);
			return true;
		}
	} else {
		err = txd_build(l);
	}
	if (!err)
		return true;
	/* Not sent, nor anything after it. */
	txd_put(l);
	l->tx_failed = true;
	txd_retire(l, true, err);
	return false;
}

/* The frame is all out: what it belonged to moves on. */
static void frame_done(struct swiw_lower *l)
{
	struct swiw_lower_resp *r;
	struct iwarp_ctrl c;

	l->frame_busy = false;
	if (l->frame_txd) {
		txd_put(l);
		memcpy(&c, l->txd.hdr, sizeof(c));
		l->in_msg = !iwarp_last(&c);
		txd_retire(l, l->txd.flags & SWIW_TXD_EVENT, 0);
		return;
	}
	if (!l->frame_last)
		return;
	r = &l->resp[l->resp_head++ % SWIW_MAX_IRD];
	if (r->mr)
		l->ops->mr_put(l->env, r->mr);
	r->mr = NULL;
	l->resp_busy = false;
	swiw_ddp_rx_ird_release(&l->drx);
}

int swiw_lower_tx(struct swiw_lower *l)
{
	int rc, ret = 0;

	while (!l->tx_failed) {
		if (l->frame_busy) {
			rc = frame_push(l);
			if (rc < 0) {
				l->tx_failed = true;
				swiw_lower_tx_drop(l);
				swiw_lower_rx_end(l, SWIW_RXEV_CLOSED,
						  SWIW_V_NONE, (u32)-rc, NULL,
						  0);
				break;
			}
			if (!rc) {
				ret = 1;
				break;
			}
			frame_done(l);
			continue;
		}
		if (l->stalled)
			break;
		if (!l->in_msg &&
		    (l->resp_busy || l->resp_head != l->resp_tail)) {
			if (resp_next(l)) {
				/* Our own response cannot go: a local
				 * failure the provider reports. */
				swiw_lower_tx_drop(l);
				swiw_lower_rx_end(l, SWIW_RXEV_VIOLATION,
						  SWIW_V_RDMAP_CATASTROPHIC, 0,
						  NULL, 0);
			}
			continue;
		}
		if (!txd_next(l))
			break;
	}
	swiw_lower_wake(l);
	return ret;
}
