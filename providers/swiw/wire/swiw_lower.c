// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The lower half of a helper stream (swiw_lower.h): set-up, the event
 * ring, doorbells and detach. Receive and transmit are in
 * swiw_lower_rx.c and swiw_lower_tx.c.
 *
 * Event reservation, so that no event is ever lost or overwritten:
 * reception starts an FPDU only with SWIW_LOWER_RX_EVENTS free slots
 * (an FPDU posts at most the RTR event and one SEGMENT or VIOLATION),
 * and transmit takes a txd that posts SENT only with one more than
 * that free while reception goes on. An RQE taken for a message not
 * complete thus always leaves a slot for the event that returns it. An
 * event that still finds no room (CLOSED, a failed txd's SENT) is kept
 * and posted at the next doorbell; either way the stream stalls until
 * then, with at least half the ring unread (SWIW_LOWER_RXEV_MIN).
 */
#include "swiw_lower_priv.h"

static bool ring_ok(const struct swiw_ring *r, u32 min_stride)
{
	return r->base && r->num && !(r->num & (r->num - 1)) &&
	       r->stride >= min_stride && !(r->stride & 7);
}

/* An RQE with @n SGEs. */
static u32 rqe_size(u32 n)
{
	return SWIW_RQE_HDR_SIZE + n * (u32)sizeof(struct swiw_sge);
}

int swiw_lower_init(struct swiw_lower *l, const struct swiw_lower_cfg *cfg,
		    const struct swiw_lower_ops *ops, void *env)
{
	struct swiw_fpdu_rx_cfg rc = { 0 };
	const struct swiw_lower_rq *rq = cfg->rq;

	if (!ops->mr_get || !ops->mr_put || !ops->mr_invalidate ||
	    !ops->mr_write || !ops->mr_map || !ops->mr_atomic ||
	    !ops->rq_lock || !ops->rq_unlock || !ops->send || !ops->wake)
		return -EINVAL;
	if (!ring_ok(&cfg->tx, sizeof(struct swiw_txd)) ||
	    !ring_ok(&cfg->rxev, sizeof(struct swiw_rxev)) ||
	    cfg->rxev.num < SWIW_LOWER_RXEV_MIN)
		return -EINVAL;
	if (rq && (rq->max_sge > SWIW_MAX_SGE ||
		   !ring_ok(&rq->ring, rqe_size(rq->max_sge))))
		return -EINVAL;
	if (cfg->mulpdu <= SWIW_DDP_HDR_MAX ||
	    (cfg->markers_tx && (cfg->tx_pos & 3)) ||
	    (cfg->stage && cfg->stage_len < SWIW_LOWER_STAGE_MIN))
		return -EINVAL;

	memset(l, 0, sizeof(*l));
	l->ops = ops;
	l->env = env;
	l->cfg = *cfg;
	l->cfg.ird = SWIW_MIN(cfg->ird, (u32)SWIW_MAX_IRD);
	l->cfg.mulpdu = SWIW_MIN(cfg->mulpdu, (u32)MPA_MAX_ULPDU_LEN);
	if (!cfg->direct_min)
		l->cfg.direct_min = SWIW_LOWER_DIRECT_MIN;
	l->cfg.qp_access &= SWIW_ACC_REMOTE_WRITE | SWIW_ACC_REMOTE_READ |
			    SWIW_ACC_REMOTE_ATOMIC;
	l->tx_take = cfg->tx.pos;
	l->ev_free_to = cfg->rxev.pos;
	l->ftx.pos = cfg->tx_pos;
	l->ftx.markers = cfg->markers_tx;
	l->ftx.crc = cfg->crc;
	l->msn_aresp = 1;

	rc.pos = cfg->rx_pos;
	rc.markers = cfg->markers_rx;
	rc.crc = cfg->crc;
	rc.min_ulpdu = SWIW_FPDU_MIN_ULPDU;
	rc.peek = SWIW_FPDU_PEEK_MAX;
	if (swiw_fpdu_rx_init(&l->frx, &rc) ||
	    swiw_ddp_rx_init(&l->drx, &swiw_lower_mem_ops, l,
			     SWIW_DDP_RX_ORDERED | SWIW_DDP_RX_RFC7306,
			     l->cfg.ird))
		return -EINVAL;
	return 0;
}

/*
 * True when the next @n event slots are free. Each slot is looked at once
 * between two fillings of it (ev_free_to), not at every check: the checks
 * come for every FPDU and txd, and each flag word is a cache line of its
 * own that the consumer last wrote.
 */
static bool ring_room(struct swiw_lower *l, u32 n)
{
	const struct swiw_ring *r = &l->cfg.rxev;
	u32 end = r->pos + n, i = l->ev_free_to;

	if (n > r->num)
		return false;
	if ((s32)(i - r->pos) < 0)
		i = r->pos;
	for (; (s32)(end - i) > 0; i++)
		if (swiw_slot_flags_load(
			    swiw_lower_slot_flags(swiw_lower_slot(r, i))) &
		    SWIW_SLOT_VALID)
			break;
	l->ev_free_to = i;
	return (s32)(i - end) >= 0;
}

/* True when @n events can be posted now, after those kept. */
bool swiw_lower_ev_room(struct swiw_lower *l, u32 n)
{
	return !l->npend && ring_room(l, n);
}

void swiw_lower_set_access(struct swiw_lower *l, u32 qp_access)
{
	l->cfg.qp_access = qp_access &
			   (SWIW_ACC_REMOTE_WRITE | SWIW_ACC_REMOTE_READ |
			    SWIW_ACC_REMOTE_ATOMIC);
}

/* Writes @ev into the next slot: false when it is not free. */
static bool ev_write(struct swiw_lower *l, const struct swiw_rxev *ev)
{
	struct swiw_ring *r = &l->cfg.rxev;
	u8 *slot = swiw_lower_slot(r, r->pos);
	u16 *fl = swiw_lower_slot_flags(slot);

	if (swiw_slot_flags_load(fl) & SWIW_SLOT_VALID)
		return false;
	/* Not the flags word: the consumer may be loading it. */
	memcpy(slot, ev, SWIW_SLOT_FLAGS_OFF);
	memcpy(slot + SWIW_SLOT_FLAGS_OFF + 2,
	       (const u8 *)ev + SWIW_SLOT_FLAGS_OFF + 2,
	       sizeof(*ev) - SWIW_SLOT_FLAGS_OFF - 2);
	swiw_slot_flags_store(fl, (u16)(ev->flags | SWIW_SLOT_VALID));
	r->pos++;
	l->wake_due = true;
	return true;
}

/* Posts what was kept, in order; true when nothing is left. */
static bool ev_flush(struct swiw_lower *l)
{
	u32 i, n = 0;

	while (n < l->npend && ev_write(l, &l->pend[n]))
		n++;
	for (i = n; i < l->npend; i++)
		l->pend[i - n] = l->pend[i];
	l->npend -= n;
	return !l->npend;
}

/* Posts @ev, or keeps it for the next doorbell and stalls. */
void swiw_lower_ev_post(struct swiw_lower *l, const struct swiw_rxev *ev)
{
	if (!l->npend && ev_write(l, ev))
		return;
	l->stalled = true;
	if (l->npend < SWIW_LOWER_PEND)
		l->pend[l->npend++] = *ev;
	else /* only a consumer that broke the ring protocol gets here */
		swiw_wire_dbg("lower: event ring overrun, event %u lost",
			      ev->type);
}

void swiw_lower_tmr_drop(struct swiw_lower *l)
{
	if (l->tmr_held)
		l->ops->mr_put(l->env, l->tmr.handle);
	l->tmr_held = false;
}

void swiw_lower_rqe_drop(struct swiw_lower *l)
{
	u32 i;

	for (i = 0; i < l->rqe.nsge; i++)
		if (l->rqe.sge[i].mr)
			l->ops->mr_put(l->env, l->rqe.sge[i].mr);
	swiw_lower_rqe_clear(&l->rqe);
}

/*
 * Reception ends with @type (VIOLATION or CLOSED), once: the RQE taken
 * for a message not complete goes back with it. A VIOLATION names the
 * offending segment for the TERMINATE: @hdr, its first @hdr_len octets
 * (min(@seg_len, SWIW_FPDU_PEEK_MAX), as the deframer keeps them), and
 * @seg_len, its length, which the DDP Segment Length field reports.
 */
void swiw_lower_rx_end(struct swiw_lower *l, u8 type, u32 violation, u32 status,
		       const u8 *hdr, u32 hdr_len, u32 seg_len)
{
	struct swiw_rxev ev;

	if (l->rx_done)
		return;
	l->rx_done = true;
	l->seg_ok = false;
	memset(&ev, 0, sizeof(ev));
	ev.type = type;
	ev.violation = violation;
	ev.status = status;
	ev.hdr_len = (u8)SWIW_MIN(hdr_len, (u32)SWIW_DDP_HDR_MAX);
	if (ev.hdr_len) {
		memcpy(ev.hdr, hdr, ev.hdr_len);
		ev.len = seg_len;
	}
	if (l->rqe.valid) {
		ev.id = l->rqe.id;
		ev.flags = SWIW_RXEV_RQE;
	}
	swiw_lower_rqe_drop(l);
	swiw_lower_tmr_drop(l);
	swiw_lower_ev_post(l, &ev);
}

void swiw_lower_wake(struct swiw_lower *l)
{
	if (l->wake_due) {
		l->wake_due = false;
		l->ops->wake(l->env);
	}
}

void swiw_lower_doorbell(struct swiw_lower *l)
{
	l->stalled = !ev_flush(l);
	swiw_lower_wake(l);
}

bool swiw_lower_events_pending(const struct swiw_lower *l)
{
	const struct swiw_ring *r = &l->cfg.rxev;

	/* The consumer takes events in order: the last one tells. */
	return swiw_slot_flags_load(
		       swiw_lower_slot_flags(swiw_lower_slot(r, r->pos - 1))) &
	       SWIW_SLOT_VALID;
}

void swiw_lower_fini(struct swiw_lower *l)
{
	ev_flush(l);
	swiw_lower_tx_drop(l);
	swiw_lower_tmr_drop(l);
	if (l->rqe.valid && !l->rx_done)
		swiw_lower_rx_end(l, SWIW_RXEV_CLOSED, SWIW_V_NONE, ECANCELED,
				  NULL, 0, 0);
	swiw_lower_rqe_drop(l);
	l->rx_done = true;
	l->tx_failed = true;
	swiw_lower_wake(l);
}
