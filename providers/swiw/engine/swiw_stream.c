// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Streams: one per connected QP. MPA setup runs on the socket
 * (swiw_setup_mpa.c); then the socket goes to a backend's lower half (the
 * wire core's swiw_lower*.c, in this process or in the kernel helper),
 * which frames, places and answers, while the stream keeps the QP's upper
 * half (swiw_qp_tx.c, swiw_complete.c, swiw_stream_lower.c): the SQ, ORD,
 * completions and every decision on errors. This file: the streams'
 * life, failure and the entry points the engine loop calls, each reaching
 * the stream's lower half through its ops (struct swiw_stream_ops).
 * Everything here runs under the engine lock (swiw_engine.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "swiw.h"
#include "swiw_sock.h"
#include "swiw_stream.h"

_Static_assert(sizeof(struct swiw_iov) == sizeof(struct iovec) &&
		       offsetof(struct swiw_iov, len) ==
			       offsetof(struct iovec, iov_len),
	       "swiw_iov is an iovec");
_Static_assert((int)SWIW_WC_REM_ACCESS_ERR == (int)IBV_WC_REM_ACCESS_ERR &&
		       (int)SWIW_WC_GENERAL_ERR == (int)IBV_WC_GENERAL_ERR &&
		       (int)SWIW_WC_LOC_PROT_ERR == (int)IBV_WC_LOC_PROT_ERR,
	       "swiw_wc_status numbering");

static struct swiw_stream *streams, *graveyard;

/* A full CQ loses the completion and fails the QP (see overflow_check). */
void swiw_stream_push_cqe(struct swiw_stream *s, struct swiw_cq *cq,
			  struct swiw_cqe *e)
{
	if (swiw_engine_cq_push(cq, e) && !s->cq_full) {
		swiw_err("QP %u: CQ overflow: a completion was lost, the QP "
			 "goes to error",
			 s->qp->vqp.qp.qp_num);
		s->cq_full = true;
	}
}

/* SQ completions go out in the order the WRs were posted. */
void swiw_stream_sq_drain(struct swiw_stream *s)
{
	while (s->infl_head != s->infl_tail) {
		struct infl *w = &s->infl[s->infl_head & s->infl_mask];
		struct swiw_cqe e = { 0 };

		if (!w->done)
			break;
		if (w->signalled) {
			e.id = w->id;
			e.opcode = w->opcode;
			e.status = IBV_WC_SUCCESS;
			e.bytes = w->bytes;
			e.qp_num = swiw_stream_qpn(s);
			swiw_stream_push_cqe(s, s->qp->scq, &e);
		}
		s->infl_head++;
	}
}

/* Errors ---------------------------------------------------------------- */

static void async_event(struct swiw_stream *s, enum ibv_event_type ev)
{
	swiw_post_async(to_swiw_ctx(s->qp->vqp.qp.context), ev,
			(uintptr_t)&s->qp->vqp.qp);
}

/*
 * swiw_stream_fail, with @sq_status for the send WR at infl[] position
 * *@wr if given, else for the oldest one not done.
 */
static void stream_fail(struct swiw_stream *s, enum swiw_violation v,
			const void *seg, uint32_t seg_len, int sq_status,
			const uint32_t *wr, enum ibv_event_type ev)
{
	const struct swiw_violation_info *vi = swiw_violation_info(v);
	struct swiw_qp *qp = s->qp;
	int rq_status = IBV_WC_WR_FLUSH_ERR;
	bool first = true;
	uint32_t at;

	swiw_eng_assert_held();
	if (s->failed)
		return;
	s->failed = true;
	swiw_dbg("QP %u: stream fails (%s, send status %d, %u send WRs out)",
		 swiw_stream_qpn(s), vi ? vi->name : "?", sq_status,
		 s->infl_tail - s->infl_head);
	s->ops->fail(s,
		     v != SWIW_V_NONE && vi && !(vi->flags & SWIW_VI_NO_TERM) ?
			     v :
			     SWIW_V_NONE,
		     seg, seg_len);
	s->ops = &swiw_idle_ops;
	/*
	 * FIN after the TERMINATE, not RST: closing with unread input would
	 * reset the connection and could discard the TERMINATE at the peer.
	 * The socket is closed when the QP is reset or destroyed.
	 */
	shutdown(s->fd, SHUT_WR);
	swiw_eng_epoll_ctl(EPOLL_CTL_DEL, s->fd, 0, NULL);
	__atomic_store_n(&qp->state, IBV_QPS_ERR, __ATOMIC_RELEASE);
	if (v != SWIW_V_NONE && vi && s->rqe.valid &&
	    vi->local_status != SWIW_WC_SUCCESS)
		rq_status = vi->local_status;
	if (s->rqe.bad)
		rq_status = IBV_WC_LOC_PROT_ERR;

	/* Send WRs taken from the ring, in order. */
	swiw_stream_sq_drain(s);
	at = wr ? *wr : s->infl_head;
	while (s->infl_head != s->infl_tail) {
		uint32_t pos = s->infl_head++;
		struct infl *w = &s->infl[pos & s->infl_mask];
		struct swiw_cqe e = { .id = w->id,
				      .opcode = w->opcode,
				      .status = IBV_WC_WR_FLUSH_ERR,
				      .qp_num = swiw_stream_qpn(s) };

		if (pos == at && sq_status >= 0 && !w->done) {
			e.status = (uint16_t)sq_status;
			e.vendor_err = s->vendor_err;
		}
		first = false;
		swiw_stream_push_cqe(s, qp->scq, &e);
	}
	if (first && sq_status >= 0 && !wr) {
		const struct swiw_sqe *sqe = swiw_ring_cons_slot(&qp->sq_eng);

		if (sqe) {
			struct swiw_cqe e = { .id = sqe->id,
					      .opcode = sqe->opcode,
					      .status = (uint16_t)sq_status,
					      .qp_num = swiw_stream_qpn(s),
					      .vendor_err = s->vendor_err };

			swiw_ring_release(&qp->sq_eng, (void *)sqe);
			swiw_stream_push_cqe(s, qp->scq, &e);
		}
	}
	s->rd_head = s->rd_tail = 0;
	s->rd_more = false;
	s->kind = TX_NONE;
	if (s->rqe.valid) {
		struct swiw_cqe e = { .id = s->rqe.id,
				      .opcode = SWIW_OP_RECV,
				      .status = (uint16_t)rq_status,
				      .qp_num = swiw_stream_qpn(s) };

		if (rq_status != IBV_WC_WR_FLUSH_ERR)
			e.vendor_err = s->vendor_err;

		s->rqe.valid = false;
		swiw_stream_push_cqe(s, qp->rcq, &e);
	}
	swiw_engine_flush_qp_locked(qp);
	if (ev)
		async_event(s, ev);
	if (s->cm)
		swiw_cm_report(s, SWIW_CM_DISCONNECTED,
			       v == SWIW_V_LLP_LOST ? -ECONNRESET : -EPROTO);
}

/*
 * The stream ends: TERMINATE for @v (best effort), the QP to error, the
 * send WR the failure concerns with @sq_status (-1: none), the receive
 * in progress with the table's local status, everything else flushed,
 * and the async event @ev (0: none).
 */
void swiw_stream_fail(struct swiw_stream *s, enum swiw_violation v,
		      const void *seg, uint32_t seg_len, int sq_status,
		      enum ibv_event_type ev)
{
	stream_fail(s, v, seg, seg_len, sq_status, NULL, ev);
}

static enum ibv_event_type vi_event(enum swiw_violation v)
{
	const struct swiw_violation_info *vi = swiw_violation_info(v);

	switch (vi ? vi->async : SWIW_AE_QP_FATAL) {
	case SWIW_AE_QP_REQ_ERR:
		return IBV_EVENT_QP_REQ_ERR;
	case SWIW_AE_QP_ACCESS_ERR:
		return IBV_EVENT_QP_ACCESS_ERR;
	default:
		return IBV_EVENT_QP_FATAL;
	}
}

/*
 * The WR a bad Read or Atomic Response @seg ends: the READ or atomic at
 * the head of ORD, which it should have answered, as its infl[] position.
 * False when @seg is no response, nothing is outstanding, or the head is
 * the RTR's READ, whose entry is zeroed (no sink STag, which a READ WR's
 * always has) and completes nothing.
 */
static bool resp_wr(const struct swiw_stream *s, const void *seg,
		    uint32_t seg_len, uint32_t *wr)
{
	const struct rd_out *rd = &s->rd[s->rd_head % SWIW_MAX_ORD];
	struct iwarp_ctrl c;
	unsigned int op;

	if (!seg || seg_len < sizeof(c) || s->rd_head == s->rd_tail)
		return false;
	memcpy(&c, seg, sizeof(c));
	op = iwarp_opcode(&c);
	if (op != RDMAP_READ_RESP && op != RDMAP_ATOMIC_RESP)
		return false;
	if (!rd->atomic && !rd->sink_stag)
		return false;
	*wr = rd->slot;
	return true;
}

void swiw_stream_violation(struct swiw_stream *s, enum swiw_violation v,
			   const void *seg, uint32_t seg_len)
{
	const struct swiw_violation_info *vi = swiw_violation_info(v);
	uint32_t wr;
	bool resp;

	swiw_info("QP %u: %s, stream terminated", swiw_stream_qpn(s),
		  vi ? vi->name : "?");
	if (vi)
		s->vendor_err =
			SWIW_VENDOR_ERR(vi->layer, vi->etype, vi->ecode);
	/* The READ or atomic a bad response ended gets the table's status. */
	resp = vi && vi->local_status != SWIW_WC_SUCCESS &&
	       resp_wr(s, seg, seg_len, &wr);
	stream_fail(s, v, seg, seg_len, resp ? (int)vi->local_status : -1,
		    resp ? &wr : NULL, vi_event(v));
}

void swiw_stream_peer_closed(struct swiw_stream *s)
{
	if (swiw_setup_peer_closed(s))
		return;
	swiw_stream_fail(s, SWIW_V_LLP_LOST, NULL, 0, -1, IBV_EVENT_QP_FATAL);
}

/*
 * The peer closed its side once FPDUs flowed, typically because its QP
 * was destroyed after its last Send completed. What arrived before is
 * already completed; the QP fails (and its receives flush) after a short
 * grace, so that the application sees those completions alone first, as
 * it would over InfiniBand, where a destroyed peer goes unnoticed.
 */
#define EOF_GRACE_NS (100 * 1000000ull)

void swiw_stream_peer_eof(struct swiw_stream *s)
{
	if (s->eof_due_ns)
		return;
	s->eof_due_ns = swiw_eng_now_ns() + EOF_GRACE_NS;
	swiw_eng_deadline(s->eof_due_ns);
	/* Out of the epoll set: a hung-up socket would report for ever. */
	swiw_eng_epoll_ctl(EPOLL_CTL_DEL, s->fd, 0, NULL);
}

/* Streams whose grace ran out fail; returns ms until the next, or -1. */
int swiw_streams_timers(void)
{
	struct swiw_stream *s;
	uint64_t now = 0, best = UINT64_MAX;

	swiw_eng_assert_held();
	for (s = streams; s; s = s->next) {
		if (s->failed || s->dead ||
		    !((s->setup && s->setup->mpa_due_ns) || s->eof_due_ns))
			continue;
		/* The clock only for a stream with a deadline: this runs at
		 * the end of every poll that moved something. */
		if (!now)
			now = swiw_eng_now_ns();
		if (s->setup && swiw_setup_timer(s, now, &best))
			continue;
		if (!s->eof_due_ns)
			continue;
		if (now >= s->eof_due_ns)
			swiw_stream_peer_closed(s);
		else if (s->eof_due_ns < best)
			best = s->eof_due_ns;
	}
	if (best == UINT64_MAX)
		return -1;
	return (int)((best - now) / 1000000u) + 1;
}

/* Engine entry points --------------------------------------------------- */

/*
 * A completion the application's CQ had no room for is lost: the CQ is in
 * error (swiw_engine_cq_push raised IBV_EVENT_CQ_ERR) and so is the QP.
 */
static void overflow_check(struct swiw_stream *s)
{
	if (s->cq_full && !s->failed)
		swiw_stream_fail(s, SWIW_V_NONE, NULL, 0, -1,
				 IBV_EVENT_QP_FATAL);
}

/*
 * Transmits what the SQ holds and takes the lower half's events, until a
 * drain finds none: a transmit posts "sent" events (an RDMA Write's
 * completion), and the completions a drain makes may free room (ORD, the
 * ring) for more WRs, so stopping after either leaves work that no event
 * of the socket will bring back. Bounded, as a stream that keeps both
 * busy is served again at the next look.
 */
#define SWIW_PUMP_ROUNDS 8

bool swiw_stream_pump(struct swiw_stream *s)
{
	uint32_t tail = s->infl_tail;
	bool moved = false;
	unsigned int round;

	for (round = 0; round < SWIW_PUMP_ROUNDS; round++) {
		if (s->failed || s->dead)
			break;
		if (swiw_tx_pump(s))
			moved = true;
		/* A doorbell may have had the ring engine post events. */
		if (s->failed || !s->ops->drain(s))
			break;
		moved = true;
	}
	swiw_stream_pump_end(s, tail);
	return moved;
}

/* After a pump, or a look that found none due: @tail, infl_tail before. */
void swiw_stream_pump_end(struct swiw_stream *s, uint32_t tail)
{
	overflow_check(s);
	/* For the progress thread: the program feeds this QP a queue of
	 * WRs (app_streams). A dead stream's QP may be gone. */
	if (!s->dead &&
	    (s->infl_tail - tail >= 2 || s->infl_tail - s->infl_head >= 2 ||
	     swiw_ring_cons_slot(&s->qp->sq_eng)))
		swiw_eng_note_deep();
}

bool swiw_streams_pump_all(void)
{
	struct swiw_stream *s;
	bool moved = false;

	swiw_eng_assert_held();
	for (s = streams; s; s = s->next)
		if (swiw_stream_pump(s))
			moved = true;
	return moved;
}

/*
 * Poll mode, a process with one connected stream on a socket of its own
 * (the in-process backend): the stream a poller reads directly, or NULL.
 */
static struct swiw_stream *direct_stream(void)
{
	struct swiw_stream *s = streams;

	if (!s || s->next || s->dead || s->failed || s->ops != &swiw_link_ops ||
	    s->be->event_fd >= 0)
		return NULL;
	return s;
}

/*
 * Read the direct stream's socket (direct_stream). An empty read costs
 * what an empty epoll_wait() costs, and data is read at once instead of
 * after the epoll_wait() that reports it. False if the engine has more or
 * other than that; else *@moved says whether anything came, *@input
 * whether the peer's input did.
 */
bool swiw_stream_poll_direct(bool *moved, bool *input)
{
	struct swiw_stream *s = direct_stream();
	uint64_t before, in;

	swiw_eng_assert_held();
	if (!s)
		return false;
	before = s->ev_total;
	in = s->in_total;
	swiw_stream_event(s, EPOLLIN);
	*moved = s->ev_total != before;
	*input = s->in_total != in;
	return true;
}

/*
 * With @on, the direct stream's socket leaves the engine's epoll set (its
 * poller reads it anyway), unless it waits for transport room, which only
 * epoll reports (ring_interest brings it back then); every other stream
 * out comes back, as all do without @on, unless its link ended meanwhile
 * (the paths that end it take it out of the set, and find it out
 * already). True if one is out.
 */
bool swiw_streams_sock_mute(bool on)
{
	struct swiw_stream *d = on ? direct_stream() : NULL, *s;
	bool out = false;

	swiw_eng_assert_held();
	for (s = streams; s; s = s->next) {
		if (s == d && !s->sock_muted && !(s->hs_interest & EPOLLOUT)) {
			if (s->hs_interest &&
			    swiw_eng_epoll_ctl(EPOLL_CTL_DEL, s->fd, 0, NULL))
				continue;
			s->sock_muted = true;
		} else if (s != d && s->sock_muted) {
			s->sock_muted = false;
			if (s->hs_interest && s->ops == &swiw_link_ops &&
			    !s->failed && !s->dead && !s->eof_due_ns &&
			    swiw_eng_epoll_ctl(EPOLL_CTL_ADD, s->fd,
					       s->hs_interest, s))
				swiw_err("QP %u: cannot watch its socket again",
					 swiw_stream_qpn(s));
		}
		out |= s->sock_muted;
	}
	return out;
}

void swiw_stream_event(struct swiw_stream *s, uint32_t events)
{
	swiw_eng_assert_held();
	if (s->dead || s->failed)
		return;
	s->ops->event(s, events);
	overflow_check(s);
}

void swiw_stream_free(struct swiw_stream *s)
{
	swiw_link_fini(s);
	free(s->setup);
	free(s->infl);
	free(s);
}

/* Under the engine lock: @s is live, the engine loop serves it. */
void swiw_stream_list(struct swiw_stream *s)
{
	/* A stream polled directly is so no longer: its socket must be in
	 * the set that the program's polls now read. */
	swiw_streams_sock_mute(false);
	s->next = streams;
	streams = s;
	s->qp->stream = s;
}

void swiw_streams_reap(void)
{
	struct swiw_stream *s;

	swiw_eng_assert_held();
	while ((s = graveyard)) {
		graveyard = s->next_dead;
		swiw_sock_close(s->fd);
		swiw_stream_free(s);
	}
}

/* The helper's events are on the attached streams' rings, in memory. */
bool swiw_streams_kernel_event(void)
{
	struct swiw_stream *s;
	bool moved = false;

	swiw_eng_assert_held();
	for (s = streams; s; s = s->next) {
		uint64_t before = s->ev_total;

		if (s->dead || s->failed || s->ops != &swiw_link_ops ||
		    s->be->event_fd < 0)
			continue;
		s->ops->event(s, 0);
		overflow_check(s);
		moved |= s->ev_total != before;
	}
	return moved;
}

/* A CQ that a live stream completes into is armed: a program will wait on
 * its channel for what the streams bring. */
bool swiw_streams_cq_armed(void)
{
	struct swiw_stream *s;

	swiw_eng_assert_held();
	for (s = streams; s; s = s->next)
		if (!s->dead && (__atomic_load_n(&s->qp->scq->ctrl->notify,
						 __ATOMIC_SEQ_CST) ||
				 __atomic_load_n(&s->qp->rcq->ctrl->notify,
						 __ATOMIC_SEQ_CST)))
			return true;
	return false;
}

/* The QP went to error from the application's side. */
void swiw_stream_qp_error(struct swiw_qp *qp)
{
	swiw_eng_assert_held();
	if (qp->stream)
		swiw_stream_fail(qp->stream, SWIW_V_NONE, NULL, 0, -1, 0);
}

/* RESET or destroy: the stream goes, without completions. */
void swiw_stream_detach(struct swiw_qp *qp)
{
	struct swiw_stream *s = qp->stream, **pp;

	swiw_eng_assert_held();
	if (!s)
		return;
	for (pp = &streams; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	s->ops->detach(s);
	s->ops = &swiw_idle_ops;
	if (!s->failed) {
		shutdown(s->fd, SHUT_RDWR);
		swiw_eng_epoll_ctl(EPOLL_CTL_DEL, s->fd, 0, NULL);
	}
	/* Now, not at the reap only: the program may exit before that,
	 * and its exit closes the socket (swiw_sock.c says why). */
	swiw_sock_drain(s->fd);
	s->dead = true;
	s->next_dead = graveyard;
	graveyard = s;
	qp->stream = NULL;
	swiw_eng_doorbell();
}

/* The live streams, for swiw_setup_cm.c; under the engine lock. */
struct swiw_stream *swiw_streams_first(void)
{
	swiw_eng_assert_held();
	return streams;
}

/* A stream that let go of its socket: nothing reaches a lower half. */
static void idle_event(struct swiw_stream *s, uint32_t events)
{
	(void)s;
	(void)events;
}

bool swiw_stream_no_drain(struct swiw_stream *s)
{
	(void)s;
	return false;
}

void swiw_stream_nop(struct swiw_stream *s)
{
	(void)s;
}

static void idle_fail(struct swiw_stream *s, enum swiw_violation v,
		      const void *seg, uint32_t seg_len)
{
	(void)s;
	(void)v;
	(void)seg;
	(void)seg_len;
}

const struct swiw_stream_ops swiw_idle_ops = {
	.event = idle_event,
	.drain = swiw_stream_no_drain,
	.doorbell = swiw_stream_nop,
	.fail = idle_fail,
	.detach = swiw_stream_nop,
};
