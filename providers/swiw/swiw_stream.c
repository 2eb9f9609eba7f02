// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Streams: one per connected QP. MPA setup runs on the socket through
 * swiw_mpa; then the socket goes to the engine's lower half (the wire
 * core's swiw_lower*.c, in this process or in the kernel helper), which
 * frames, places and answers, while the stream keeps the QP's upper half
 * (swiw_qp_tx.c, swiw_qp_rx.c, swiw_stream_helper.c): the SQ, ORD,
 * completions and every decision on errors. Everything here runs under
 * the engine lock (swiw_engine.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "swiw.h"
#include "swiw_config.h"
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

/*
 * IRD is an RTR attribute, ORD an RTS one, and a QP connected by the
 * broker may run MPA before RTS: it offers the device's ORD, and the
 * QP's max_rd_atomic, whenever it is set, limits what is outstanding.
 */
static uint16_t ulp_ird(const struct swiw_stream *s)
{
	if (s->cm)
		return s->cm_ird;
	return __atomic_load_n(&s->qp->ird, __ATOMIC_RELAXED);
}

static uint16_t ulp_ord(const struct swiw_stream *s)
{
	if (s->cm)
		return s->cm_ord;
	if (s->bk_on)
		return SWIW_MAX_ORD;
	return __atomic_load_n(&s->qp->ord, __ATOMIC_RELAXED);
}

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

/*
 * Best effort: the TERMINATE for @v from a stream no lower half took (the
 * MPA machine refused the Reply once FPDU mode began), as its first FPDU.
 */
static void send_terminate(struct swiw_stream *s, enum swiw_violation v,
			   const void *seg, uint32_t seg_len)
{
	struct swiw_iov iov[2 + 2 * SWIW_FPDU_MAX_MARKERS];
	struct swiw_fpdu_frame f = { .iov = iov };
	uint8_t hdr[SWIW_DDP_HDR_MAX];
	struct swiw_term t;
	struct swiw_iov piece;
	struct msghdr mh = { 0 };
	int len;

	if (!s->fpdu_setup || s->mpa_phase ||
	    swiw_term_from_violation(v, seg, seg_len, &t))
		return;
	len = swiw_term_build(&t, hdr, sizeof(hdr));
	if (len < 0)
		return;
	piece.base = hdr;
	piece.len = (size_t)len;
	f.max_iov = swiw_fpdu_tx_max_iov(1, (u32)len, s->ftx.markers);
	if (f.max_iov > sizeof(iov) / sizeof(iov[0]) ||
	    swiw_fpdu_tx_build(&s->ftx, &piece, 1, &f))
		return;
	mh.msg_iov = (struct iovec *)iov;
	mh.msg_iovlen = f.n_iov;
	if (sendmsg(s->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		swiw_dbg("TERMINATE not sent: %s", strerror(errno));
}

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
	if (s->attached) {
		/* The TERMINATE as the last txd, then the socket comes
		 * back with the events that tell which receive failed. */
		if (v != SWIW_V_NONE && vi && !(vi->flags & SWIW_VI_NO_TERM))
			swiw_helper_terminate(s, v, seg, seg_len);
		swiw_helper_detach(s);
	} else if (v != SWIW_V_NONE && vi && !(vi->flags & SWIW_VI_NO_TERM)) {
		send_terminate(s, v, seg, seg_len);
	}
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

/*
 * The initiator's attempt failed in a way another attempt may fix: the
 * stream goes and the QP dials again. False if it may not.
 */
static bool bk_redial(struct swiw_stream *s, int err)
{
	struct swiw_qp *qp = s->qp;

	if (!s->bk_on || s->mpa.role != SWIW_MPA_INITIATOR ||
	    !swiw_conn_redial(qp, err))
		return false;
	swiw_dbg("QP %u: connection attempt failed (%s), trying again",
		 swiw_stream_qpn(s), strerror(err));
	swiw_stream_detach(qp);
	s->failed = true;
	return true;
}

static void peer_closed(struct swiw_stream *s)
{
	if (s->mpa_phase && swiw_mpa_state(&s->mpa) == SWIW_MPA_S_AWAIT_REPLY &&
	    bk_redial(s, ECONNRESET))
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
	struct timespec ts;

	if (s->eof_due_ns)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	s->eof_due_ns = (uint64_t)ts.tv_sec * 1000000000u +
			(uint64_t)ts.tv_nsec + EOF_GRACE_NS;
	/* Out of the epoll set: a hung-up socket would report for ever. */
	swiw_eng_epoll_ctl(EPOLL_CTL_DEL, s->fd, 0, NULL);
}

/* Streams whose grace ran out fail; returns ms until the next, or -1. */
int swiw_streams_timers(void)
{
	struct swiw_stream *s;
	struct timespec ts;
	uint64_t now, best = UINT64_MAX;

	swiw_eng_assert_held();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	for (s = streams; s; s = s->next) {
		if (s->failed || s->dead)
			continue;
		if (s->mpa_due_ns && now >= s->mpa_due_ns) {
			s->mpa_due_ns = 0;
			if (!swiw_mpa_timeout(&s->mpa))
				swiw_stream_mpa_events(s);
			continue;
		}
		if (s->mpa_due_ns && s->mpa_due_ns < best)
			best = s->mpa_due_ns;
		if (!s->eof_due_ns)
			continue;
		if (now >= s->eof_due_ns)
			peer_closed(s);
		else if (s->eof_due_ns < best)
			best = s->eof_due_ns;
	}
	if (best == UINT64_MAX)
		return -1;
	return (int)((best - now) / 1000000u) + 1;
}

/* MPA ------------------------------------------------------------------- */

/*
 * FPDU framing of our own, for a TERMINATE while no lower half has the
 * socket: the terms MPA set, from the stream's first octet.
 */
static void ftx_setup(struct swiw_stream *s)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&s->mpa);

	s->ftx.pos = 0;
	s->ftx.markers = o->markers_tx;
	s->ftx.crc = o->crc;
}

static int fpdu_setup(struct swiw_stream *s)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&s->mpa);
	int emss = 0, err;
	socklen_t sl = sizeof(emss);

	if (s->fpdu_setup)
		return 0;
	if (getsockopt(s->fd, IPPROTO_TCP, TCP_MAXSEG, &emss, &sl) || emss <= 0)
		emss = 1460;
	s->mulpdu = swiw_mpa_mulpdu((u32)emss, o->markers_tx);
	s->ird = o->ird;
	s->ord = o->ord;
	if (!o->ird_ord_negotiated) {
		s->ird = ulp_ird(s);
		s->ord = ulp_ord(s);
	}
	if (s->ird > SWIW_MAX_IRD)
		s->ird = SWIW_MAX_IRD;
	if (s->ord > SWIW_MAX_ORD)
		s->ord = SWIW_MAX_ORD;
	s->msn_send = s->msn_rreq = 1;
	/* Before any FPDU: the lower half frames from here on. */
	err = swiw_helper_attach(s);
	if (err && err != ENOTCONN)
		return -EINVAL;
	s->fpdu_setup = true;
	if (err) {
		ftx_setup(s);
		/*
		 * The peer's FIN came before the kernel helper took the
		 * socket (it takes established ones only): a peer close,
		 * the stream fails when its grace ends.
		 */
		s->mpa_phase = false;
		swiw_stream_peer_eof(s);
	}
	return 0;
}

static void mpa_fail(struct swiw_stream *s)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&s->mpa);

	/*
	 * The machine wants a TERMINATE (e.g. an initiator refusing the
	 * Reply's RTR choice): FPDU mode began with the Reply, so frame it
	 * with the terms the Reply set, as siw does in the same place.
	 */
	if (o->send_term && !s->fpdu_setup) {
		ftx_setup(s);
		s->mpa_phase = false;
		s->fpdu_setup = true;
	}
	swiw_stream_fail(s, o->send_term ? o->violation : SWIW_V_NONE, NULL, 0,
			 -1, IBV_EVENT_QP_FATAL);
}

/* Initiator: the Reply must carry the ACCEPT block for this Request. */
static bool bk_accept_ok(struct swiw_stream *s)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&s->mpa);
	struct swiw_broker_pd pd;

	if (swiw_broker_pd_decode(o->peer_pd, o->peer_pd_len, &pd) ||
	    pd.type != SWIW_BROKER_PD_ACCEPT || pd.src_qpn != s->bk.peer_qpn ||
	    pd.dst_qpn != swiw_stream_qpn(s) || pd.nonce != s->bk.nonce) {
		swiw_err("QP %u: the peer's MPA Reply does not accept this "
			 "connection to QP %u",
			 swiw_stream_qpn(s), s->bk.peer_qpn);
		return false;
	}
	return true;
}

/*
 * Initiator: the MPA exchange ended. A NOT_READY reject is tried again;
 * any other is logged with its reason. True if the stream was retried.
 */
static bool bk_rejected(struct swiw_stream *s)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&s->mpa);
	struct swiw_broker_pd pd;

	if (!s->bk_on || s->mpa.role != SWIW_MPA_INITIATOR ||
	    o->reject != SWIW_MPA_REJ_BY_PEER)
		return false;
	if (swiw_broker_pd_decode(o->peer_pd, o->peer_pd_len, &pd) ||
	    pd.type != SWIW_BROKER_PD_REJECT) {
		swiw_err("QP %u: QP %u's side rejected the connection",
			 swiw_stream_qpn(s), s->bk.peer_qpn);
		return false;
	}
	if (swiw_broker_reason_retryable(pd.reason) && bk_redial(s, EAGAIN))
		return true;
	swiw_err("QP %u: QP %u's side rejected the connection: %s",
		 swiw_stream_qpn(s), s->bk.peer_qpn,
		 swiw_broker_reason_str(pd.reason));
	return false;
}

/*
 * After MPA events: the deadline of the state MPA is in now, for every
 * stream (broker and CM alike), so that no MPA wait lasts for ever.
 */
static void mpa_deadline(struct swiw_stream *s)
{
	enum swiw_mpa_deadline dl;
	struct timespec ts;
	uint32_t ms = 0;

	dl = s->failed || !s->mpa_phase ? SWIW_MPA_DL_NONE :
					  swiw_mpa_deadline(&s->mpa, &ms);
	if (dl == s->mpa_dl)
		return;
	s->mpa_dl = (uint8_t)dl;
	if (dl == SWIW_MPA_DL_NONE) {
		s->mpa_due_ns = 0;
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	s->mpa_due_ns = (uint64_t)ts.tv_sec * 1000000000u +
			(uint64_t)ts.tv_nsec + (uint64_t)ms * 1000000u;
}

void swiw_stream_mpa_events(struct swiw_stream *s)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&s->mpa);
	u32 ev;

	while (!s->failed && (ev = swiw_mpa_events(&s->mpa))) {
		if ((ev & SWIW_MPA_EV_TX) &&
		    send(s->fd, s->mpa_tx, o->tx_len,
			 MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)o->tx_len) {
			swiw_stream_fail(s, SWIW_V_NONE, NULL, 0, -1,
					 IBV_EVENT_QP_FATAL);
			return;
		}
		if (ev & SWIW_MPA_EV_CLOSED) {
			if (s->cm)
				swiw_cm_report(s, 0, o->error);
			if (!bk_rejected(s))
				mpa_fail(s);
			return;
		}
		if (s->bk_on && !s->bk_checked &&
		    s->mpa.role == SWIW_MPA_INITIATOR &&
		    (ev & (SWIW_MPA_EV_RX_FPDU | SWIW_MPA_EV_SEND_RTR |
			   SWIW_MPA_EV_TX_FPDU))) {
			s->bk_checked = true;
			if (!bk_accept_ok(s)) {
				swiw_stream_fail(s, SWIW_V_NONE, NULL, 0, -1,
						 IBV_EVENT_QP_FATAL);
				return;
			}
		}
		if (ev & SWIW_MPA_EV_REQUEST) {
			struct swiw_mpa_ulp u = { .ird = ulp_ird(s),
						  .ord = ulp_ord(s) };

			if (s->bk_on) {
				u.pd = s->bk.pd;
				u.pd_len = s->bk.pd_len;
			} else if (s->cm) {
				u.pd = s->cm_pd;
				u.pd_len = s->cm_pd_len;
			}

			if (swiw_mpa_accept(&s->mpa, &u))
				swiw_mpa_reject(&s->mpa, NULL, 0);
			continue;
		}
		if ((ev & (SWIW_MPA_EV_RX_FPDU | SWIW_MPA_EV_SEND_RTR |
			   SWIW_MPA_EV_TX_FPDU)) &&
		    fpdu_setup(s)) {
			swiw_stream_fail(s, SWIW_V_NONE, NULL, 0, -1,
					 IBV_EVENT_QP_FATAL);
			return;
		}
		if (ev & SWIW_MPA_EV_RX_FPDU)
			s->mpa_phase = false;
		if (ev & SWIW_MPA_EV_SEND_RTR) {
			struct swiw_rdmap_msg m = { 0 };

			m.stag = SWIW_MPA_RTR_STAG;
			if (o->rtr == SWIW_MPA_RTR_READ) {
				m.opcode = RDMAP_READ_REQ;
				m.msn = s->msn_rreq++;
				m.u.rreq.sink_stag = SWIW_MPA_RTR_STAG;
				m.u.rreq.src_stag = SWIW_MPA_RTR_STAG;
			} else if (o->rtr == SWIW_MPA_RTR_SEND) {
				m.opcode = RDMAP_SEND;
				m.msn = s->msn_send++;
			} else {
				m.opcode = RDMAP_WRITE;
			}
			if (o->rtr == SWIW_MPA_RTR_READ) {
				/* Its zero-length response comes first and
				 * completes nothing (struct rd_out). */
				struct rd_out *rd =
					&s->rd[s->rd_tail++ % SWIW_MAX_ORD];

				memset(rd, 0, sizeof(*rd));
			}
			s->nsrc = 0;
			if (swiw_tx_msg_start(s, &m)) {
				swiw_stream_fail(s, SWIW_V_NONE, NULL, 0, -1,
						 IBV_EVENT_QP_FATAL);
				return;
			}
			s->kind = TX_RTR;
		}
		if (ev & SWIW_MPA_EV_TX_FPDU) {
			s->tx_ready = true;
			if (s->cm)
				swiw_cm_report(s, SWIW_CM_ESTABLISHED, 0);
		}
	}
	mpa_deadline(s);
}

static void mpa_rx(struct swiw_stream *s)
{
	uint8_t buf[SWIW_MPA_FRAME_MAX];
	size_t used = 0;
	ssize_t n;

	/* Peek, and take only what the machine took: the rest is FPDUs. */
	n = recv(s->fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		peer_closed(s);
		return;
	}
	if (n < 0)
		return;
	swiw_mpa_input(&s->mpa, buf, (size_t)n, &used);
	if (used && recv(s->fd, buf, used, MSG_DONTWAIT) != (ssize_t)used) {
		peer_closed(s);
		return;
	}
	swiw_stream_mpa_events(s);
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

bool swiw_stream_pump(struct swiw_stream *s)
{
	bool moved;

	if (s->failed || s->dead)
		return false;
	moved = swiw_tx_pump(s);
	/* A doorbell may have had the ring engine post events. */
	if (s->attached && swiw_helper_drain(s) && !s->failed) {
		moved = true;
		swiw_tx_pump(s);
	}
	overflow_check(s);
	return moved;
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

void swiw_stream_event(struct swiw_stream *s, uint32_t events)
{
	swiw_eng_assert_held();
	if (s->dead || s->failed)
		return;
	if (s->attached) {
		swiw_helper_event(s, events);
		overflow_check(s);
		return;
	}
	/* Until a lower half takes the socket, MPA frames only. */
	if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) &&
	    !s->eof_due_ns && s->mpa_phase)
		mpa_rx(s);
	if (!s->failed)
		swiw_tx_pump(s);
	overflow_check(s);
}

static void stream_free(struct swiw_stream *s)
{
	swiw_helper_fini(s);
	free(s->infl);
	free(s);
}

void swiw_streams_reap(void)
{
	struct swiw_stream *s;

	swiw_eng_assert_held();
	while ((s = graveyard)) {
		graveyard = s->next_dead;
		close(s->fd);
		stream_free(s);
	}
}

/* The helper's file is readable: events wait on some of its streams. */
void swiw_helpers_kernel_event(void)
{
	struct swiw_stream *s;

	swiw_eng_assert_held();
	for (s = streams; s; s = s->next)
		if (s->attached && !s->dead) {
			swiw_helper_event(s, 0);
			overflow_check(s);
		}
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
	swiw_helper_detach_quiet(s);
	if (!s->failed) {
		shutdown(s->fd, SHUT_RDWR);
		swiw_eng_epoll_ctl(EPOLL_CTL_DEL, s->fd, 0, NULL);
	}
	s->dead = true;
	s->next_dead = graveyard;
	graveyard = s;
	qp->stream = NULL;
	swiw_eng_doorbell();
}

_Static_assert((int)SWIW_CONFIG_RTR_SEND == (int)SWIW_MPA_RTR_SEND &&
		       (int)SWIW_CONFIG_RTR_WRITE == (int)SWIW_MPA_RTR_WRITE &&
		       (int)SWIW_CONFIG_RTR_READ == (int)SWIW_MPA_RTR_READ,
	       "swiw_config.h numbers RTR types as swiw_mpa.h");

/* mpa_p2p and mpa_rtr (swiw(7)); an unset mpa_rtr keeps the defaults. */
static void stream_cfg_p2p(struct swiw_mpa_cfg *c,
			   const struct swiw_config *cfg)
{
	static const u8 p2p[] = {
		[SWIW_MPA_P2P_CFG_ON] = SWIW_MPA_P2P_ON,
		[SWIW_MPA_P2P_CFG_OFF] = SWIW_MPA_P2P_OFF,
		[SWIW_MPA_P2P_CFG_REQUIRED] = SWIW_MPA_P2P_REQUIRED,
	};
	unsigned int i;

	c->p2p = p2p[cfg->mpa_p2p];
	if (!cfg->mpa_rtr[0])
		return;
	c->rtr_offer = 0;
	for (i = 0; i < 3; i++) {
		c->rtr_pref[i] = cfg->mpa_rtr[i];
		if (cfg->mpa_rtr[i])
			c->rtr_offer |= SWIW_MPA_RTR_F(cfg->mpa_rtr[i]);
	}
}

/* The live streams, for swiw_cm.c; under the engine lock. */
struct swiw_stream *swiw_streams_first(void)
{
	swiw_eng_assert_held();
	return streams;
}

/* The MPA knobs every stream, and the CM's Request parser, run with. */
int swiw_stream_mpa_cfg(struct swiw_mpa_cfg *c)
{
	swiw_mpa_cfg_init(c);
	c->ird_max = SWIW_MAX_IRD;
	c->rev = swiw_config()->mpa_rev == 1 ? MPA_REV_1 : MPA_REV_2;
	c->crc_required = swiw_config()->mpa_crc;
	c->markers_wanted = swiw_config()->mpa_markers;
	stream_cfg_p2p(c, swiw_config());
	return 0;
}

static struct swiw_stream *stream_new(struct swiw_qp *qp, int fd, int role,
				      int *err)
{
	struct swiw_mpa_cfg c;
	struct swiw_stream *s;
	int one = 1, fl;

	*err = EINVAL;
	if (role != SWIW_MPA_INITIATOR && role != SWIW_MPA_RESPONDER)
		return NULL;
	swiw_stream_mpa_cfg(&c);
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one))) {
		*err = errno;
		return NULL;
	}
	*err = ENOMEM;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->infl = calloc(qp->max_send_wr, sizeof(*s->infl));
	if (!s->infl)
		goto fail;
	s->infl_mask = qp->max_send_wr - 1;
	s->qp = qp;
	*err = swiw_helper_init(s);
	if (*err)
		goto fail;
	*err = ENOMEM;
	s->fd = fd;
	s->mpa_phase = true;
	if (swiw_mpa_init(&s->mpa, role, &c, s->mpa_tx, sizeof(s->mpa_tx),
			  s->mpa_pd, sizeof(s->mpa_pd))) {
		*err = EINVAL;
		goto fail;
	}
	*err = 0;
	return s;
fail:
	stream_free(s);
	return NULL;
}

/* Under the engine lock: @s starts MPA on its socket. */
static int stream_start(struct swiw_stream *s, const struct swiw_engine_bk *bk)
{
	struct swiw_qp *qp = s->qp;
	int err;

	swiw_eng_assert_held();
	if (qp->stream)
		return EBUSY;
	err = swiw_eng_start();
	if (err)
		return err;
	if (bk) {
		s->bk_on = true;
		s->bk = *bk;
		s->bk.req = NULL;
		s->bk.req_len = 0;
	}
	if (s->mpa.role == SWIW_MPA_INITIATOR) {
		struct swiw_mpa_ulp u = { .ird = ulp_ird(s),
					  .ord = ulp_ord(s) };

		if (bk) {
			u.pd = s->bk.pd;
			u.pd_len = s->bk.pd_len;
		} else if (s->cm) {
			u.pd = s->cm_pd;
			u.pd_len = s->cm_pd_len;
		}
		if (swiw_mpa_connect(&s->mpa, &u))
			return EINVAL;
	} else if ((bk && bk->req_len) || s->cm_req_len) {
		const uint8_t *req = bk ? bk->req : s->cm_req;
		size_t len = bk ? bk->req_len : s->cm_req_len, used = 0;

		/* The broker or the CM read the Request: feed it as if
		 * received. */
		swiw_mpa_input(&s->mpa, req, len, &used);
		if (used != len)
			return EPROTO;
	}
	err = swiw_eng_epoll_ctl(EPOLL_CTL_ADD, s->fd, EPOLLIN | EPOLLRDHUP, s);
	if (err)
		return err;
	s->next = streams;
	streams = s;
	qp->stream = s;
	swiw_stream_mpa_events(s);
	return 0;
}

int swiw_engine_cm_attach_locked(struct swiw_qp *qp, int fd,
				 const struct swiw_cm_params *p)
{
	struct swiw_stream *s;
	int err;

	swiw_eng_assert_held();
	if (p->pd_len > sizeof(s->cm_pd))
		return EINVAL;
	s = stream_new(qp, fd,
		       p->responder ? SWIW_MPA_RESPONDER : SWIW_MPA_INITIATOR,
		       &err);
	if (!s)
		return err;
	s->cm = true;
	s->cm_cb = p->cb;
	s->cm_arg = p->arg;
	s->cm_ird = p->ird;
	s->cm_ord = p->ord;
	s->cm_pd_len = p->pd_len;
	if (p->pd_len)
		memcpy(s->cm_pd, p->pd, p->pd_len);
	s->cm_req = p->req;
	s->cm_req_len = p->req_len;
	err = stream_start(s, NULL);
	s->cm_req = NULL;
	s->cm_req_len = 0;
	if (err) {
		stream_free(s); /* never listed: nobody heard of it */
		return err;
	}
	swiw_eng_doorbell(); /* the thread arms the MPA deadline */
	return 0;
}

int swiw_engine_attach_locked(struct swiw_qp *qp, int fd, int role,
			      const struct swiw_engine_bk *bk)
{
	struct swiw_stream *s;
	int err;

	swiw_eng_assert_held();
	s = stream_new(qp, fd, role, &err);
	if (!s)
		return err;
	err = stream_start(s, bk);
	if (err)
		stream_free(s);
	return err;
}
