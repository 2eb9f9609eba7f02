// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The lower half's receive side (swiw_lower.h): octets are deframed
 * step by step, each ULPDU header goes through swiw_ddp_rx_segment with
 * the regions and the RQ ring behind its lookups, payload is copied into
 * place as it arrives, and a message's end posts its event. Push mode
 * (swiw_lower_rx, fed octets as swiw.ko's tcp_read_sock gives them) and
 * pull mode (swiw_lower_rx_pull, reading the socket itself, payload
 * straight into place) run the same steps.
 */
#include "swiw_lower_priv.h"

/* Memory lookups for swiw_ddp_rx_segment ---------------------------- */

/* The oldest Read or Atomic Request of ours not answered, or NULL. */
static struct swiw_lower_rreq *rreq_head(struct swiw_lower *l)
{
	if (l->rreq_head == l->rreq_tail)
		return NULL;
	return &l->rreq[l->rreq_head % SWIW_MAX_ORD];
}

/*
 * Holds the region @stag names for the current segment. A Read
 * Response's must be the sink of the oldest request outstanding, whose
 * progress then checks its TO range, length and order; one answering
 * no request is found nowhere, whatever its length.
 */
static int lookup_tagged(void *ctx, unsigned int opcode, u32 stag,
			 struct swiw_ddp_region *r)
{
	struct swiw_lower *l = ctx;
	struct swiw_lower_rreq *q = NULL;
	int rc;

	swiw_lower_tmr_drop(l);
	if (opcode == RDMAP_READ_RESP) {
		q = rreq_head(l);
		if (!q || q->atomic || q->sink_stag != stag)
			return -ENOENT;
		r->progress = &q->prog;
	}
	rc = l->ops->mr_get(l->env, stag, &l->tmr);
	if (rc == -EPERM) {
		/* Another PD's: found, not associated, never touched. */
		r->associated = false;
		return 0;
	}
	if (rc)
		/* A zero-length READ's sink names no region. */
		return q && !q->prog.total ? 0 : -ENOENT;
	l->tmr_held = true;
	r->handle = &l->tmr;
	r->base = l->tmr.base;
	r->len = l->tmr.len;
	/* The region's remote rights, as far as the QP allows them. */
	r->access = l->tmr.access & (SWIW_ACC_LOCAL_WRITE | l->cfg.qp_access);
	r->associated = true; /* mr_get finds the stream's own only */
	return 0;
}

/* Checks the SGEs copied out of an RQE and holds their regions. */
static bool rqe_sges(struct swiw_lower *l, u32 n)
{
	struct swiw_lower_rqe *q = &l->rqe;
	u32 i;

	for (i = 0; i < n; i++) {
		const struct swiw_sge *s = &l->rqe_sge[i];
		u64 addr = s->laddr, off;
		struct swiw_lower_mr m;

		if (!s->length)
			continue;
		if (l->ops->mr_get(l->env, s->lkey, &m))
			return false;
		q->sge[q->nsge].mr = m.handle;
		q->sge[q->nsge].addr = addr;
		q->sge[q->nsge].len = s->length;
		q->nsge++;
		if (!(m.access & SWIW_ACC_LOCAL_WRITE) || addr < m.base)
			return false;
		off = addr - m.base;
		if (off > m.len || s->length > m.len - off)
			return false;
		q->len += s->length;
	}
	return true;
}

/* Takes the next RQE from the RQ ring: 0, or -ENOENT (none, or bad). */
static int rqe_take(struct swiw_lower *l)
{
	struct swiw_lower_rq *rq = l->cfg.rq;
	struct swiw_rqe h;
	bool fits;
	u16 *fl;
	u8 *slot;

	if (!rq)
		return -ENOENT;
	l->ops->rq_lock(l->env, rq);
	slot = swiw_lower_slot(&rq->ring, rq->ring.pos);
	fl = swiw_lower_slot_flags(slot);
	if (!(swiw_slot_flags_load(fl) & SWIW_SLOT_VALID)) {
		l->ops->rq_unlock(l->env, rq);
		return -ENOENT;
	}
	swiw_lower_slot_copy(&h, slot, sizeof(h));
	/* The ring's stride holds max_sge SGEs (swiw_lower_init). */
	fits = h.num_sge <= rq->max_sge;
	if (fits)
		memcpy(l->rqe_sge, slot + SWIW_RQE_HDR_SIZE,
		       h.num_sge * sizeof(struct swiw_sge));
	swiw_slot_flags_store(fl, 0);
	rq->ring.pos++;
	l->ops->rq_unlock(l->env, rq);

	swiw_lower_rqe_clear(&l->rqe);
	l->rqe.valid = true;
	l->rqe.id = h.id;
	if (!fits || !rqe_sges(l, h.num_sge)) {
		l->rqe.bad = true;
		return -ENOENT;
	}
	return 0;
}

/* The RQE of the message under way (queue 0), or a result buffer for
 * an Atomic Response (queue 3), whose value the event carries. */
static int lookup_untagged(void *ctx, u32 qn, u32 msn, struct swiw_ddp_rbuf *b)
{
	struct swiw_lower *l = ctx;

	struct swiw_lower_rreq *q = rreq_head(l);

	(void)msn; /* ordered: one message at a time per queue */
	b->progress = NULL;
	if (qn == RDMAP_QN_ATOMIC_RESP) {
		/* It must answer the oldest request outstanding. */
		if (!q || !q->atomic)
			return -ENOENT;
		b->handle = &l->seg.u.aresp;
		b->len = RDMAP_ATOMIC_DATA_SIZE;
		return 0;
	}
	if (qn != RDMAP_QN_SEND)
		return -ENOENT;
	if (!l->rqe.valid && rqe_take(l))
		return -ENOENT;
	b->handle = &l->rqe;
	b->len = l->rqe.len;
	return 0;
}

const struct swiw_ddp_mem_ops swiw_lower_mem_ops = {
	.tagged = lookup_tagged,
	.untagged = lookup_untagged,
};

/* Placement --------------------------------------------------------- */

/* Copies @n octets at ULPDU offset @uoff of the segment into place. */
static void place(struct swiw_lower *l, u32 uoff, const u8 *p, u32 n)
{
	const struct swiw_ddp_dest *d = &l->dst;
	u64 k, off;
	u32 i, c;

	if (!l->seg_ok || d->action != SWIW_DDP_PLACE || !d->handle)
		return;
	if (uoff < l->seg.hdr_len) {
		u32 skip = l->seg.hdr_len - uoff;

		if (skip >= n)
			return;
		p += skip;
		n -= skip;
		uoff += skip;
	}
	k = uoff - l->seg.hdr_len;
	if (k >= d->len)
		return;
	n = (u32)SWIW_MIN((u64)n, d->len - k);
	off = d->offset + k;
	if (d->handle == &l->tmr) {
		l->ops->mr_write(l->env, l->tmr.handle, l->tmr.base + off, p,
				 n);
		return;
	}
	/* The RQE: MO + length lie within its octets (UT_TOO_LONG). */
	for (i = 0; i < l->rqe.nsge && n; i++) {
		if (off >= l->rqe.sge[i].len) {
			off -= l->rqe.sge[i].len;
			continue;
		}
		c = (u32)SWIW_MIN((u64)n, l->rqe.sge[i].len - off);
		l->ops->mr_write(l->env, l->rqe.sge[i].mr,
				 l->rqe.sge[i].addr + off, p, c);
		p += c;
		n -= c;
		off = 0;
	}
}

/* Events ------------------------------------------------------------ */

/* A SEGMENT event with the current segment's header. */
static void post_seg(struct swiw_lower *l, u64 id, u16 flags, u64 len)
{
	struct swiw_rxev ev;

	memset(&ev, 0, sizeof(ev));
	ev.id = id;
	ev.flags = flags;
	ev.type = SWIW_RXEV_SEGMENT;
	ev.len = (u32)len;
	ev.hdr_len = (u8)l->seg_hdr_len;
	memcpy(ev.hdr, l->seg_hdr, l->seg_hdr_len);
	swiw_lower_ev_post(l, &ev);
}

/* An untagged message on queue 0 completed its RQE. */
static void post_rqe(struct swiw_lower *l, u16 flags, u64 len)
{
	post_seg(l, l->rqe.id, (u16)(SWIW_RXEV_RQE | flags), len);
	swiw_lower_rqe_drop(l);
}

/* Receive ----------------------------------------------------------- */

/*
 * Pull mode: large FPDUs come in runs (bulk transfers), with a short one
 * ending each message MULPDU split; only this many short ones in a row
 * mean small messages, which reads of the whole stage serve best.
 */
#define RX_SMALL_RUN 4

/* @defer: the head's payload octets go with the payload step's (rx_feed). */
static void on_hdr(struct swiw_lower *l, bool defer)
{
	enum swiw_violation v = SWIW_V_NONE;
	u32 hl, ulen = swiw_fpdu_rx_ulpdu_len(&l->frx);
	const u8 *h = swiw_fpdu_rx_hdr(&l->frx, &hl);
	int rc;

	if (ulen >= l->cfg.direct_min)
		l->rx_small_run = 0;
	else if (l->rx_small_run < RX_SMALL_RUN)
		l->rx_small_run++;
	swiw_lower_tmr_drop(l);
	l->seg_ok = false;
	rc = swiw_ddp_rx_segment(&l->drx, h, ulen, &l->seg, &l->dst, &v);
	if (rc) {
		/* A TERMINATE that fails its checks shows in hdr: the
		 * provider never answers one. */
		if (l->rqe.bad || rc != -EPROTO)
			v = SWIW_V_DDP_CATASTROPHIC;
		swiw_lower_rx_end(l, SWIW_RXEV_VIOLATION, v, 0, h, hl, ulen);
		return;
	}
	l->seg_ok = true;
	l->seg_hdr_len = SWIW_MIN(hl, l->seg.hdr_len);
	memcpy(l->seg_hdr, h, l->seg_hdr_len);
	/* The RTR's zero-length Write is no Write of the ULP's. */
	l->rtr_write = l->cfg.rtr_event && !l->first_seen &&
		       l->seg.opcode == RDMAP_WRITE && !l->seg.payload_len;
	if (hl > l->seg.hdr_len && !defer)
		place(l, 0, h, hl);
}

/*
 * The segment just received whole broke a rule its header alone could
 * not: reception ends with @v, and the TERMINATE gets the segment's head
 * and length as for one refused at its header (the deframer keeps both
 * until the next FPDU starts).
 */
static void seg_violation(struct swiw_lower *l, enum swiw_violation v)
{
	u32 hl;
	const u8 *h = swiw_fpdu_rx_hdr(&l->frx, &hl);

	swiw_lower_rx_end(l, SWIW_RXEV_VIOLATION, v, 0, h, hl,
			  swiw_fpdu_rx_ulpdu_len(&l->frx));
}

/* A Read or Atomic Request passed every check: queue its response. */
static void queue_resp(struct swiw_lower *l)
{
	const struct swiw_ddp_seg *g = &l->seg;
	struct swiw_lower_resp *r = &l->resp[l->resp_tail % SWIW_MAX_IRD];
	u64 orig;

	memset(r, 0, sizeof(*r));
	if (l->dst.action == SWIW_DDP_ATOMIC_REQ) {
		if (l->ops->mr_atomic(l->env, l->tmr.handle,
				      l->tmr.base + l->dst.offset, &g->u.areq,
				      &orig)) {
			/* Aligned TO, memory no atomic can reach. */
			seg_violation(l, SWIW_V_RDMAP_ATOMIC_ALIGN);
			return;
		}
		r->atomic = true;
		r->msg.opcode = RDMAP_ATOMIC_RESP;
		r->msg.msn = l->msn_aresp++;
		r->msg.u.aresp.req_id = g->u.areq.req_id;
		r->msg.u.aresp.orig = orig;
	} else {
		r->msg.opcode = RDMAP_READ_RESP;
		r->msg.stag = g->u.rreq.sink_stag;
		r->msg.to = g->u.rreq.sink_to;
		if (l->dst.handle) {
			/* The source stays held until the response is out. */
			r->mr = l->tmr.handle;
			r->src = g->u.rreq.src_to;
			r->msg.len = g->u.rreq.size;
			l->tmr_held = false;
		}
	}
	l->resp_tail++;
}

/*
 * A Send with Invalidate arrived whole: its STag goes first. The peer
 * may invalidate only what it could use itself: a region of this PD
 * with a remote right, never one the provider keeps for its own use.
 */
static bool remote_inv(struct swiw_lower *l, u32 stag)
{
	struct swiw_lower_mr m;
	int rc = l->ops->mr_get(l->env, stag, &m);

	if (!rc) {
		l->ops->mr_put(l->env, m.handle);
		rc = m.access & (SWIW_ACC_REMOTE_WRITE | SWIW_ACC_REMOTE_READ |
				 SWIW_ACC_REMOTE_ATOMIC) ?
			     l->ops->mr_invalidate(l->env, stag) :
			     -EACCES;
	}
	if (!rc)
		return true;
	seg_violation(l, rc == -EACCES ? SWIW_V_RDMAP_CANT_INVALIDATE_OP :
			 rc == -EPERM  ? SWIW_V_RDMAP_STAG_NOT_ASSOC :
					 SWIW_V_RDMAP_CANT_INVALIDATE);
	return false;
}

/* The oldest request outstanding got its whole response. */
static void rreq_done(struct swiw_lower *l)
{
	if (l->rreq_head != l->rreq_tail)
		l->rreq_head++;
}

static void on_end(struct swiw_lower *l)
{
	const struct swiw_ddp_seg *g = &l->seg;
	const struct swiw_ddp_dest *d = &l->dst;
	u16 fl;

	if (!l->seg_ok)
		return;
	l->seg_ok = false;
	if (l->cfg.rtr_event && !l->first_seen)
		post_seg(l, 0, 0, g->payload_len);
	l->first_seen = true;
	if (l->rtr_write)
		goto out;
	if (g->tagged)
		l->t_acc += g->payload_len;
	switch (d->action) {
	case SWIW_DDP_PLACE:
		if (!d->complete)
			break;
		if (g->tagged && g->opcode == RDMAP_READ_RESP) {
			rreq_done(l);
			post_seg(l, 0, 0, l->t_acc);
			l->t_acc = 0;
		} else if (g->tagged) {
			l->after_write = true;
			l->last_write_len = l->t_acc;
			l->t_acc = 0;
		} else {
			if ((g->op->flags & SWIW_OPF_INVAL) &&
			    !remote_inv(l, g->rsvd_ulp))
				return;
			post_rqe(l, 0, d->offset + d->len);
			l->after_write = false;
		}
		break;
	case SWIW_DDP_IMMEDIATE:
		fl = l->after_write ? SWIW_RXEV_AFTER_WRITE : 0;
		post_rqe(l, fl, l->after_write ? l->last_write_len : 0);
		l->after_write = false;
		break;
	case SWIW_DDP_READ_REQ:
	case SWIW_DDP_ATOMIC_REQ:
		queue_resp(l);
		break;
	case SWIW_DDP_ATOMIC_RESP:
		rreq_done(l);
		post_seg(l, 0, 0, 0);
		break;
	case SWIW_DDP_TERMINATE:
		/* The peer ended the stream: an RQE under way goes too. */
		if (l->rqe.valid)
			post_rqe(l, 0, 0);
		else
			post_seg(l, 0, 0, 0);
		l->rx_done = true;
		break;
	}
out:
	swiw_lower_tmr_drop(l);
}

/*
 * An FPDU may start: room for every event it may post, beside the SENT
 * events the transmit batch owes.
 */
static bool rx_reserve(struct swiw_lower *l)
{
	if (l->rx_mid)
		return true;
	if (!swiw_lower_ev_room(l, SWIW_LOWER_RX_EVENTS + l->ev_owed)) {
		l->stalled = true;
		return false;
	}
	l->rx_mid = true;
	return true;
}

/* The deframer failed: reception ends with its reason. */
static void rx_broken(struct swiw_lower *l)
{
	enum swiw_violation v = swiw_fpdu_rx_violation(&l->frx);

	swiw_lower_rx_end(l, SWIW_RXEV_VIOLATION,
			  v ? v : SWIW_V_DDP_CATASTROPHIC, 0, NULL, 0, 0);
}

/* The deframer's events @ev (@defer: see on_hdr); false once reception
 * ended. */
static bool rx_events(struct swiw_lower *l, unsigned int ev, bool defer)
{
	if (ev & SWIW_FPDU_EV_HDR)
		on_hdr(l, defer);
	if (!l->rx_done && (ev & SWIW_FPDU_EV_END)) {
		on_end(l);
		l->rx_mid = false;
	}
	return !l->rx_done;
}

/*
 * Takes @n octets at @p of the step @st wants (@n <= its length);
 * @placed: payload already in its destination. False once reception
 * ended.
 */
static bool rx_take(struct swiw_lower *l, const struct swiw_fpdu_rx_step *st,
		    const u8 *p, u32 n, bool placed)
{
	unsigned int ev = 0;

	if (st->kind == SWIW_FPDU_RX_PAYLOAD && !placed)
		place(l, st->off, p, n);
	if (swiw_fpdu_rx_advance(&l->frx, p, n, &ev)) {
		rx_broken(l);
		return false;
	}
	return rx_events(l, ev, false);
}

/*
 * Feeds @len octets; returns those taken. An FPDU's length and head come
 * in one step where the buffer holds them (swiw_fpdu_rx_head); when its
 * payload follows in the same buffer, the head's payload octets are
 * placed with the payload step's, in one copy from the buffer.
 */
static size_t rx_feed(struct swiw_lower *l, const u8 *p, size_t len)
{
	struct swiw_fpdu_rx_step st;
	size_t left = len;
	unsigned int ev;
	u32 n, hl;
	bool placed;

	while (left && !l->rx_done && !l->stalled && rx_reserve(l)) {
		if (swiw_fpdu_rx_next(&l->frx, &st)) {
			rx_broken(l);
			break;
		}
		placed = false;
		n = st.kind == SWIW_FPDU_RX_BUFFERED ?
			    swiw_fpdu_rx_head(&l->frx, p,
					      (u32)SWIW_MIN(left, (size_t)~0u),
					      &ev) :
			    0;
		if (n) {
			hl = n - MPA_HDR_SIZE;
			p += n;
			left -= n;
			/* No markers: a longer ULPDU's payload step is next. */
			placed = left && swiw_fpdu_rx_ulpdu_len(&l->frx) > hl;
			if (!rx_events(l, ev, placed))
				break;
			if (!placed)
				continue;
			if (swiw_fpdu_rx_next(&l->frx, &st)) {
				rx_broken(l);
				break;
			}
			n = (u32)SWIW_MIN((size_t)st.len, left);
			place(l, 0, p - hl, hl + n);
		} else {
			n = (u32)SWIW_MIN((size_t)st.len, left);
		}
		if (!rx_take(l, &st, p, n, placed)) {
			left -= n;
			break;
		}
		p += n;
		left -= n;
	}
	return len - left;
}

int swiw_lower_rx(struct swiw_lower *l, const void *data, size_t len,
		  size_t *used)
{
	*used = rx_feed(l, data, len);
	swiw_lower_wake(l);
	return 0;
}

/*
 * Pull mode: the destination of the payload run @st, as pieces, if it is
 * long enough to be read straight into place; returns the pieces (0: not
 * worth it) and their octets in *@len.
 */
static u32 direct_map(struct swiw_lower *l, const struct swiw_fpdu_rx_step *st,
		      struct swiw_iov *iov, u32 max, u32 *len)
{
	const struct swiw_ddp_dest *d = &l->dst;
	u64 k, off, want;
	u32 n = 0, i, c, m;

	*len = 0;
	if (st->kind != SWIW_FPDU_RX_PAYLOAD || st->len < l->cfg.direct_min ||
	    !l->seg_ok || d->action != SWIW_DDP_PLACE || !d->handle ||
	    st->off < l->seg.hdr_len)
		return 0;
	k = st->off - l->seg.hdr_len;
	if (k >= d->len)
		return 0;
	want = SWIW_MIN((u64)st->len, d->len - k);
	off = d->offset + k;
	if (d->handle == &l->tmr) {
		n = l->ops->mr_map(l->env, l->tmr.handle, l->tmr.base + off,
				   (u32)want, iov, max);
		if (n)
			*len = (u32)want;
		return n;
	}
	for (i = 0; i < l->rqe.nsge && want && n < max; i++) {
		if (off >= l->rqe.sge[i].len) {
			off -= l->rqe.sge[i].len;
			continue;
		}
		c = (u32)SWIW_MIN(want, l->rqe.sge[i].len - off);
		m = l->ops->mr_map(l->env, l->rqe.sge[i].mr,
				   l->rqe.sge[i].addr + off, c, iov + n,
				   max - n);
		if (!m)
			break;
		n += m;
		*len += c;
		want -= c;
		off = 0;
	}
	return *len >= l->cfg.direct_min ? n : 0;
}

int swiw_lower_rx_pull(struct swiw_lower *l, u32 reads)
{
	struct swiw_iov *iov = l->rx_iov;
	struct swiw_fpdu_rx_step st;
	u32 np, dlen, want, i, c;
	long n;
	int ret = 0;
	bool drained = false;

	if (!l->cfg.stage || !l->ops->recv)
		return -EINVAL;
	while (!l->rx_done && !l->stalled) {
		if (l->st_head < l->st_tail) {
			l->st_head += (u32)rx_feed(l, l->cfg.stage + l->st_head,
						   l->st_tail - l->st_head);
			if (l->st_head < l->st_tail)
				break; /* stalled, or reception ended */
			continue;
		}
		if (!reads) {
			ret = !drained;
			break;
		}
		reads--;
		if (!rx_reserve(l))
			break;
		if (swiw_fpdu_rx_next(&l->frx, &st)) {
			rx_broken(l);
			break;
		}
		np = direct_map(l, &st, iov, SWIW_LOWER_RX_IOV - 1, &dlen);
		if (np) {
			/* The payload into place, and in the same read the
			 * trailer and the next head into the stage. */
			iov[np].base = l->cfg.stage;
			iov[np].len = SWIW_LOWER_RX_TAIL;
			want = dlen + SWIW_LOWER_RX_TAIL;
			n = l->ops->recv(l->env, iov, np + 1);
		} else {
			/*
			 * After a large FPDU, read just this step and the
			 * next head, so that the next payload can go
			 * straight into place; a run of small ones reads
			 * all the stage holds.
			 */
			want = l->cfg.stage_len;
			if (l->rx_small_run < RX_SMALL_RUN &&
			    st.len + SWIW_LOWER_RX_TAIL < want)
				want = st.len + SWIW_LOWER_RX_TAIL;
			iov[0].base = l->cfg.stage;
			iov[0].len = want;
			n = l->ops->recv(l->env, iov, 1);
		}
		if (n == -EAGAIN)
			break;
		if (n <= 0) {
			swiw_lower_rx_end(l, SWIW_RXEV_CLOSED, SWIW_V_NONE,
					  (u32)-n, NULL, 0, 0);
			break;
		}
		/* Less than asked: the transport had no more. */
		if ((u32)n < want) {
			reads = 0;
			drained = true;
		}
		if (!np) {
			l->st_head = 0;
			l->st_tail = (u32)n;
			continue;
		}
		for (i = 0; i < np && n > 0; i++) {
			c = (u32)SWIW_MIN((u64)n, (u64)iov[i].len);
			n -= c;
			if (swiw_fpdu_rx_next(&l->frx, &st)) {
				rx_broken(l);
				break;
			}
			if (!rx_take(l, &st, iov[i].base, c, true))
				break;
		}
		l->st_head = 0;
		l->st_tail = n > 0 ? (u32)n : 0;
	}
	swiw_lower_wake(l);
	return ret;
}

void swiw_lower_rx_closed(struct swiw_lower *l, int err)
{
	swiw_lower_rx_end(l, SWIW_RXEV_CLOSED, SWIW_V_NONE, (u32)err, NULL, 0,
			  0);
	swiw_lower_wake(l);
}
