// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A stream's link to its lower half (swiw-abi.h, HELPER STREAMS): once
 * MPA is done the backend's lower half (swiw_backend.h: the kernel
 * helper, or the same wire-core code in this process) has the socket.
 * The stream keeps the SQ, ORD, completions and every decision on
 * errors; this file is the stream's transmit and event rings, ATTACH,
 * the events turned into completions (swiw_complete.c), DETACH, and the
 * stream ops of an attached stream (swiw_link_ops). Under the engine
 * lock, like the rest of the stream code.
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>

#include "swiw.h"
#include "swiw_stream.h"

#define HS_TX_NUM 256
/* Events: one per message received and per WR sent, at most. */
#define HS_EV_NUM 1024
/* Receive rounds of SWIW_PROC_RX_READS reads per socket event. */
#define LINK_RX_ROUNDS 16

#define STRIDE16(t) ((uint32_t)((sizeof(t) + 15) & ~(size_t)15))

int swiw_link_init(struct swiw_stream *s)
{
	const struct swiw_backend *be = swiw_backend();
	struct swiw_qp *qp = s->qp;
	int err;

	if (!be)
		return ENODEV; /* no engine: devices do not open */
	err = be->queue_alloc(SWIW_QUEUE_TX, HS_TX_NUM,
			      STRIDE16(struct swiw_txd), &s->txq);
	if (err)
		return err;
	err = be->queue_alloc(SWIW_QUEUE_RXEV, HS_EV_NUM,
			      STRIDE16(struct swiw_rxev), &s->evq);
	if (err)
		goto fail;
	s->bounce_len = (size_t)HS_TX_NUM * SWIW_MAX_INLINE;
	s->bounce = mmap(NULL, s->bounce_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->bounce == MAP_FAILED) {
		s->bounce = NULL;
		err = ENOMEM;
		goto fail;
	}
	madvise(s->bounce, s->bounce_len, MADV_DONTFORK);
	s->bounce_mr =
		swiw_mr_internal(qp->vqp.qp.pd, s->bounce, s->bounce_len, &err);
	if (!s->bounce_mr)
		goto fail;
	s->txr = (struct swiw_ring){ .base = s->txq.mem,
				     .num = HS_TX_NUM,
				     .stride = STRIDE16(struct swiw_txd),
				     .flags_off =
					     offsetof(struct swiw_txd, flags),
				     .flags16 = true };
	s->evr = (struct swiw_ring){ .base = s->evq.mem,
				     .num = HS_EV_NUM,
				     .stride = STRIDE16(struct swiw_rxev),
				     .flags_off =
					     offsetof(struct swiw_rxev, flags),
				     .flags16 = true };
	s->be = be;
	return 0;
fail:
	s->be = be;
	swiw_link_fini(s);
	s->be = NULL;
	return err;
}

/* The stream is freed: its rings and bounce area go (never attached). */
void swiw_link_fini(struct swiw_stream *s)
{
	if (!s->be)
		return;
	if (s->bounce_mr)
		swiw_mr_internal_free(s->bounce_mr);
	s->bounce_mr = NULL;
	if (s->bounce)
		munmap(s->bounce, s->bounce_len);
	s->bounce = NULL;
	if (s->txq.mem)
		s->be->queue_free(&s->txq);
	if (s->evq.mem)
		s->be->queue_free(&s->evq);
}

/* In the process: the socket's interest follows what its lower half needs. */
static void ring_interest(struct swiw_stream *s, uint32_t want)
{
	if (s->be->event_fd >= 0 || s->eof_due_ns || s->failed ||
	    want == s->hs_interest)
		return;
	if (s->sock_muted) {
		s->hs_interest = want; /* for swiw_streams_sock_mute */
		/* Transport room is reported by epoll alone (the poller's
		 * direct reads ask for input): the socket comes back. */
		if (!(want & EPOLLOUT))
			return;
		s->sock_muted = false;
		swiw_eng_epoll_ctl(EPOLL_CTL_ADD, s->fd, want, s);
		return;
	}
	/* Out of the set while it wants nothing: a hung-up socket
	 * would report for ever. */
	swiw_eng_epoll_ctl(!want	  ? EPOLL_CTL_DEL :
			   s->hs_interest ? EPOLL_CTL_MOD :
					    EPOLL_CTL_ADD,
			   s->fd, want, s);
	s->hs_interest = want;
}

_Static_assert(SWIW_ACCESS_REMOTE_WRITE == SWIW_ACC_REMOTE_WRITE &&
		       SWIW_ACCESS_REMOTE_READ == SWIW_ACC_REMOTE_READ &&
		       SWIW_ACCESS_REMOTE_ATOMIC == SWIW_ACC_REMOTE_ATOMIC,
	       "swiw-abi.h numbers remote rights as swiw_ddp.h");

/* The QP's qp_access_flags, as the lower half checks them. */
static uint32_t stream_access(const struct swiw_stream *s)
{
	return (uint32_t)swiw_acc_bits(
		       __atomic_load_n(&s->qp->access, __ATOMIC_RELAXED)) &
	       ~(uint32_t)SWIW_ACC_LOCAL_WRITE;
}

/* modify_qp changed qp_access_flags: the lower half follows. */
void swiw_engine_qp_access(struct swiw_qp *qp)
{
	struct swiw_stream *s;
	int err;

	swiw_eng_lock();
	s = qp->stream;
	if (s && s->ops == &swiw_link_ops && !s->failed) {
		err = s->be->set_access(s->hs_id, stream_access(s));
		if (err)
			swiw_warn("QP %u: access flags: %s", swiw_stream_qpn(s),
				  strerror(err));
	}
	swiw_eng_unlock();
}

/*
 * MPA Request/Reply done, no FPDU either way yet: the socket goes to the
 * lower half. A responder that awaits the RTR has it reported as an
 * event; an initiator's RTR is its first txd.
 */
int swiw_link_attach(struct swiw_stream *s)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&s->setup->mpa);
	struct swiw_ioc_attach a = { .sock_fd = s->fd };
	int err;

	if (o->crc)
		a.flags |= SWIW_ATTACH_CRC;
	if (o->markers_tx)
		a.flags |= SWIW_ATTACH_MARKERS_TX;
	if (o->markers_rx)
		a.flags |= SWIW_ATTACH_MARKERS_RX;
	if (swiw_mpa_state(&s->setup->mpa) == SWIW_MPA_S_AWAIT_RTR) {
		a.flags |= SWIW_ATTACH_RTR_EVENT;
		s->rtr_event = true;
	}
	a.rq_id = s->qp->rq->bq.id;
	a.tx_id = s->txq.id;
	a.rxev_id = s->evq.id;
	a.ird = s->ird;
	a.ord = s->ord;
	a.pd = to_swiw_pd(s->qp->vqp.qp.pd)->pdn;
	a.access = stream_access(s);
	err = s->be->attach(&a);
	if (err == ENOTCONN) {
		swiw_info(
			"QP %u: the peer closed before the %s took the stream",
			swiw_stream_qpn(s), s->be->name);
		return err;
	}
	if (err) {
		swiw_err("QP %u: %s refused the stream: %s", swiw_stream_qpn(s),
			 s->be->name, strerror(err));
		return err;
	}
	swiw_dbg("QP %u: stream attached to the %s", swiw_stream_qpn(s),
		 s->be->name);
	s->hs_id = a.stream_id;
	s->ops = &swiw_link_ops;
	s->setup->mpa_phase = false;
	if (s->be->event_fd >= 0) {
		/* The helper has the socket: its file reports instead. */
		swiw_eng_epoll_ctl(EPOLL_CTL_DEL, s->fd, 0, NULL);
		swiw_eng_watch_helper(s->be->event_fd);
	} else {
		bool more; /* the socket's next event reads on */

		swiw_proc_stream_pd(s->hs_id, s->qp->vqp.qp.pd);
		s->hs_interest = EPOLLIN | EPOLLRDHUP;
		ring_interest(s, swiw_proc_stream_io(s->hs_id, 0, &more));
	}
	return 0;
}

static void link_doorbell(struct swiw_stream *s)
{
	int err;

	if (s->ops != &swiw_link_ops)
		return;
	s->tx_rung = false;
	s->ev_taken = 0;
	err = s->be->doorbell(s->hs_id);
	if (err)
		swiw_warn("QP %u: doorbell: %s", swiw_stream_qpn(s),
			  strerror(err));
	if (s->be->event_fd < 0)
		ring_interest(s, swiw_proc_stream_interest(s->hs_id));
}

/* An SRQ's limit, counted back from the producer (the lower half's
 * position is its own): the VALID slots are the WRs not yet taken. */
static void srq_limit(struct swiw_stream *s)
{
	struct swiw_srq *srq = s->qp->srq;
	uint32_t limit = __atomic_load_n(&srq->limit, __ATOMIC_ACQUIRE), n;
	struct swiw_ring *r = &srq->rq.ring;

	if (!limit)
		return;
	pthread_spin_lock(&srq->rq.lock);
	for (n = 0; n < limit; n++)
		if (!(swiw_ring_load_flags(r,
					   swiw_ring_slot(r, r->pos - 1 - n)) &
		      SWIW_SLOT_VALID))
			break;
	pthread_spin_unlock(&srq->rq.lock);
	swiw_srq_limit_fire(s, limit, n);
}

static void ev_sent(struct swiw_stream *s, const struct swiw_rxev *e)
{
	struct infl *w;

	if (!(e->id & SWIW_TXD_ID_WR)) {
		if (e->status && !s->failed)
			swiw_stream_fail(s, SWIW_V_NONE, NULL, 0, -1,
					 IBV_EVENT_QP_FATAL);
		return;
	}
	w = &s->infl[(uint32_t)e->id & s->infl_mask];
	if (e->status) {
		/* A region went away under a txd, or the STag of a
		 * LOCAL_INV did: the WR fails, the stream with it. */
		swiw_info("QP %u: the %s refused a transmit: %s",
			  swiw_stream_qpn(s), s->be->name, strerror(e->status));
		swiw_stream_fail(s, SWIW_V_NONE, NULL, 0, IBV_WC_LOC_PROT_ERR,
				 IBV_EVENT_QP_FATAL);
		return;
	}
	/* A periodic event (a Read's, an atomic's, one in the middle of a
	 * message): what completes the WR is still to come. */
	if (!(e->id & SWIW_TXD_ID_LAST))
		return;
	if (w->opcode == SWIW_OP_LOCAL_INV && s->be->mirror_invalidate)
		swiw_mem_invalidate(w->inv_stag, s->qp->vqp.qp.pd);
	w->done = true;
	swiw_stream_sq_drain(s);
}

static void ev_segment(struct swiw_stream *s, const struct swiw_rxev *e)
{
	enum swiw_violation v;
	struct swiw_ddp_seg g;
	uint32_t hl = e->hdr_len < sizeof(e->hdr) ? e->hdr_len : sizeof(e->hdr);

	if (swiw_ddp_parse(e->hdr, hl, SWIW_DDP_RX_RFC7306, &g, &v)) {
		swiw_stream_violation(s, SWIW_V_DDP_CATASTROPHIC, NULL, 0);
		return;
	}
	g.payload_len = e->len;
	if (s->rtr_event) {
		enum swiw_mpa_rtr k = swiw_rx_rtr_kind(&g);

		s->rtr_event = false;
		swiw_mpa_rtr_received(&s->setup->mpa, k);
		swiw_stream_mpa_events(s);
		if (s->failed || !(e->flags & SWIW_RXEV_RQE))
			return; /* the RTR is no message of the ULP's */
	}
	swiw_rx_complete(s, &g, e->id, e->len, e->flags & SWIW_RXEV_AFTER_WRITE,
			 s->be->mirror_invalidate);
	if ((e->flags & SWIW_RXEV_RQE) && s->qp->srq)
		srq_limit(s);
}

/* Reception ended with a receive WR taken: it fails with the stream. */
static void ev_rqe(struct swiw_stream *s, const struct swiw_rxev *e)
{
	if (!(e->flags & SWIW_RXEV_RQE))
		return;
	memset(&s->rqe, 0, sizeof(s->rqe));
	s->rqe.valid = true;
	s->rqe.id = e->id;
	if (e->type == SWIW_RXEV_VIOLATION &&
	    e->violation == SWIW_V_DDP_CATASTROPHIC)
		s->rqe.bad = true; /* an SGE failed the lower half's checks */
}

/*
 * A VIOLATION's segment length, for the TERMINATE: len, when hdr holds as
 * much of the segment as swiw_term_from_violation() reads (a helper that
 * reports no length leaves the header's own).
 */
static uint32_t ev_seg_len(const struct swiw_rxev *e)
{
	uint32_t hl = e->hdr_len < sizeof(e->hdr) ? e->hdr_len : sizeof(e->hdr);
	uint32_t need = e->len < SWIW_TERM_SEG_HEAD ? e->len :
						      SWIW_TERM_SEG_HEAD;

	return e->len && hl >= need ? e->len : hl;
}

static void ev_handle(struct swiw_stream *s, const struct swiw_rxev *e)
{
	swiw_dbg("QP %u: event %u flags 0x%x id 0x%llx len %u status %u "
		 "violation %u",
		 swiw_stream_qpn(s), e->type, e->flags,
		 (unsigned long long)e->id, e->len, e->status, e->violation);
	switch (e->type) {
	case SWIW_RXEV_SENT:
		ev_sent(s, e);
		break;
	case SWIW_RXEV_SEGMENT:
		ev_segment(s, e);
		break;
	case SWIW_RXEV_VIOLATION:
		ev_rqe(s, e);
		swiw_stream_violation(s, (enum swiw_violation)e->violation,
				      e->hdr, ev_seg_len(e));
		break;
	case SWIW_RXEV_CLOSED:
		ev_rqe(s, e);
		if (s->failed)
			break;
		if (!e->status)
			swiw_stream_peer_eof(s);
		else
			swiw_stream_fail(s, SWIW_V_LLP_LOST, NULL, 0, -1,
					 IBV_EVENT_QP_FATAL);
		break;
	default:
		swiw_warn("QP %u: unknown event %u from the %s",
			  swiw_stream_qpn(s), e->type, s->be->name);
		break;
	}
}

/*
 * Takes every event waiting, ringing when half the ring was drained;
 * true if there was any.
 */
static bool link_drain(struct swiw_stream *s)
{
	struct swiw_rxev e;
	bool any = false;
	void *slot;

	for (;;) {
		while ((slot = swiw_ring_cons_slot(&s->evr))) {
			memcpy(&e, slot, sizeof(e));
			e.flags = (uint16_t)swiw_ring_load_flags(&s->evr, slot);
			swiw_ring_release(&s->evr, slot);
			s->ev_taken++;
			s->ev_total++;
			s->in_total += e.type != SWIW_RXEV_SENT;
			any = true;
			ev_handle(s, &e);
		}
		if (s->ops != &swiw_link_ops || s->ev_taken < s->evr.num / 2)
			return any;
		link_doorbell(s);
	}
}

/*
 * In the process, the socket has @events for the lower half; with the
 * kernel helper (@events 0), its file has events. A steady stream is
 * read in rounds, its completions drained between them, up to
 * LINK_RX_ROUNDS before the engine turns to its other work: a trip back
 * through epoll_wait() and the lock for every few reads would cost more
 * than the reads.
 */
static void link_event(struct swiw_stream *s, uint32_t events)
{
	unsigned int round = 0;
	bool more = false, sent;

	do {
		if (s->be->event_fd < 0)
			ring_interest(s, swiw_proc_stream_io(s->hs_id, events,
							     &more));
		link_drain(s);
		if (s->failed || s->dead || s->ops != &swiw_link_ops)
			return;
		sent = swiw_tx_pump(s);
		events = EPOLLIN;
	} while (more && ++round < LINK_RX_ROUNDS && !swiw_eng_poller_waits());
	/*
	 * The last transmit posted its sent events after the last drain: a
	 * WR they complete (an RDMA Write) would wait for the next event on
	 * this stream, which may be the peer's answer to that very
	 * completion (d2a0730's hang). swiw_stream_pump quiesces. One that
	 * published nothing and left no event has nothing for it to find
	 * (a poll's empty read, most of all).
	 */
	if (sent || swiw_ring_cons_slot(&s->evr))
		swiw_stream_pump(s);
	else
		swiw_stream_pump_end(s, s->infl_tail);
}

/* Best effort, before DETACH: the TERMINATE for @v as the last txd. */
static void link_terminate(struct swiw_stream *s, enum swiw_violation v,
			   const void *seg, uint32_t seg_len)
{
	struct swiw_txd *t = swiw_ring_prod_slot(&s->txr);
	struct swiw_term term;
	uint8_t buf[SWIW_TXD_HDR_MAX + SWIW_MAX_INLINE];
	uint8_t *b;
	int len;

	if (!t || s->kind != TX_NONE ||
	    swiw_term_from_violation(v, seg, seg_len, &term))
		return; /* a message is half out: no FPDU may go between */
	len = swiw_term_build(&term, buf, sizeof(buf));
	if (len < 0)
		return;
	memset(t, 0, offsetof(struct swiw_txd, flags));
	t->hdr_len = (uint8_t)(len < SWIW_TXD_HDR_MAX ? len : SWIW_TXD_HDR_MAX);
	memcpy(t->hdr, buf, t->hdr_len);
	t->num_sge = 0;
	t->payload_len = (uint32_t)len - t->hdr_len;
	if (t->payload_len) {
		b = s->bounce +
		    (size_t)(s->txr.pos & (s->txr.num - 1)) * SWIW_MAX_INLINE;
		memcpy(b, buf + t->hdr_len, t->payload_len);
		t->num_sge = 1;
		t->sge[0].laddr = (uintptr_t)b;
		t->sge[0].length = t->payload_len;
		t->sge[0].lkey = s->bounce_mr->stag;
	}
	swiw_ring_publish(&s->txr, t, 0);
	link_doorbell(s);
}

/*
 * The socket comes back: the lower half drops what it had not sent. With
 * @drain (the stream failed), the events still waiting are handled, so
 * that a receive WR the lower half held is known and fails once.
 */
static void link_detach(struct swiw_stream *s, bool drain)
{
	int err;

	if (s->ops != &swiw_link_ops)
		return;
	err = s->be->detach(s->hs_id);
	if (err)
		swiw_warn("QP %u: detach: %s", swiw_stream_qpn(s),
			  strerror(err));
	s->ops = &swiw_idle_ops;
	if (s->be->event_fd < 0 && s->hs_interest) {
		swiw_eng_epoll_ctl(EPOLL_CTL_DEL, s->fd, 0, NULL);
		s->hs_interest = 0;
	}
	if (drain)
		link_drain(s);
}

/* The TERMINATE as the last txd, then the socket comes back with the
 * events that tell which receive failed. */
static void link_fail(struct swiw_stream *s, enum swiw_violation v,
		      const void *seg, uint32_t seg_len)
{
	if (v != SWIW_V_NONE)
		link_terminate(s, v, seg, seg_len);
	link_detach(s, true);
}

/* RESET or destroy: no completions. */
static void link_detach_quiet(struct swiw_stream *s)
{
	link_detach(s, false);
}

const struct swiw_stream_ops swiw_link_ops = {
	.txd = true,
	.event = link_event,
	.drain = link_drain,
	.doorbell = link_doorbell,
	.fail = link_fail,
	.detach = link_detach_quiet,
};
