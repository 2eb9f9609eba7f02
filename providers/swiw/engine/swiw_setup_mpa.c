// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Connection setup on a stream's socket, until its lower half takes it:
 * MPA through the wire core's swiw_mpa machine, with what the broker
 * (swiw_setup_broker.c) or the rdma_cm hand-off (swiw_setup_cm.c) brought,
 * then FPDU mode and the attach (swiw_stream_lower.c). What only this
 * phase needs lives in struct swiw_setup, freed once MPA has ended.
 * Under the engine lock (swiw_engine.c).
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

/*
 * IRD is an RTR attribute, ORD an RTS one, and a QP connected by the
 * broker may run MPA before RTS: it offers the device's ORD, and the
 * QP's max_rd_atomic, whenever it is set, limits what is outstanding.
 */
static uint16_t ulp_ird(const struct swiw_stream *s)
{
	if (s->cm)
		return s->setup->cm_ird;
	return __atomic_load_n(&s->qp->ird, __ATOMIC_RELAXED);
}

static uint16_t ulp_ord(const struct swiw_stream *s)
{
	if (s->cm)
		return s->setup->cm_ord;
	if (s->bk_on)
		return SWIW_MAX_ORD;
	return __atomic_load_n(&s->qp->ord, __ATOMIC_RELAXED);
}

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

	if (!s->fpdu_setup || s->setup->mpa_phase ||
	    swiw_term_from_violation(v, seg, seg_len, &t))
		return;
	len = swiw_term_build(&t, hdr, sizeof(hdr));
	if (len < 0)
		return;
	piece.base = hdr;
	piece.len = (size_t)len;
	f.max_iov = swiw_fpdu_tx_max_iov(1, (u32)len, s->setup->ftx.markers);
	if (f.max_iov > sizeof(iov) / sizeof(iov[0]) ||
	    swiw_fpdu_tx_build(&s->setup->ftx, &piece, 1, &f))
		return;
	mh.msg_iov = (struct iovec *)iov;
	mh.msg_iovlen = f.n_iov;
	if (sendmsg(s->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		swiw_dbg("TERMINATE not sent: %s", strerror(errno));
}

/*
 * The initiator's attempt failed in a way another attempt may fix: the
 * stream goes and the QP dials again. False if it may not.
 */
static bool bk_redial(struct swiw_stream *s, int err)
{
	struct swiw_qp *qp = s->qp;

	if (!s->bk_on || s->setup->mpa.role != SWIW_MPA_INITIATOR ||
	    !swiw_conn_redial(qp, err))
		return false;
	swiw_dbg("QP %u: connection attempt failed (%s), trying again",
		 swiw_stream_qpn(s), strerror(err));
	swiw_stream_detach(qp);
	s->failed = true;
	return true;
}

/* MPA ------------------------------------------------------------------- */

/*
 * FPDU framing of our own, for a TERMINATE while no lower half has the
 * socket: the terms MPA set, from the stream's first octet.
 */
static void ftx_setup(struct swiw_stream *s)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&s->setup->mpa);

	s->setup->ftx.pos = 0;
	s->setup->ftx.markers = o->markers_tx;
	s->setup->ftx.crc = o->crc;
}

static int fpdu_setup(struct swiw_stream *s)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&s->setup->mpa);
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
	err = swiw_link_attach(s);
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
		s->setup->mpa_phase = false;
		swiw_stream_peer_eof(s);
	}
	return 0;
}

/*
 * The machine wants a TERMINATE (e.g. an initiator refusing the Reply's
 * RTR choice): FPDU mode began with the Reply, so frame it with the terms
 * the Reply set, as siw does in the same place. Sent before the CM hears
 * of the failure: a program may exit on that event (rping does), and the
 * socket goes with it.
 */
static void mpa_term(struct swiw_stream *s)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&s->setup->mpa);

	if (!o->send_term || s->setup->term_sent)
		return;
	if (!s->fpdu_setup) {
		ftx_setup(s);
		s->setup->mpa_phase = false;
		s->fpdu_setup = true;
	}
	send_terminate(s, o->violation, NULL, 0);
	s->setup->term_sent = true;
}

static void mpa_fail(struct swiw_stream *s)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&s->setup->mpa);

	mpa_term(s);
	swiw_stream_fail(s, o->send_term ? o->violation : SWIW_V_NONE, NULL, 0,
			 -1, IBV_EVENT_QP_FATAL);
}

/* Initiator: the Reply must carry the ACCEPT block for this Request. */
static bool bk_accept_ok(struct swiw_stream *s)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&s->setup->mpa);
	struct swiw_broker_pd pd;

	if (swiw_broker_pd_decode(o->peer_pd, o->peer_pd_len, &pd) ||
	    pd.type != SWIW_BROKER_PD_ACCEPT ||
	    pd.src_qpn != s->setup->bk.peer_qpn ||
	    pd.dst_qpn != swiw_stream_qpn(s) ||
	    pd.nonce != s->setup->bk.nonce) {
		swiw_err("QP %u: the peer's MPA Reply does not accept this "
			 "connection to QP %u",
			 swiw_stream_qpn(s), s->setup->bk.peer_qpn);
		return false;
	}
	/* The Accept's PSNs against ours, as the responder checked the
	 * Request's: the answer comes from the QP we were told of. */
	if (swiw_broker_psn_check(&pd, s->qp->bk_rq_psn, s->qp->bk_sq_psn)) {
		swiw_err("QP %u: QP %u's Accept does not carry the PSNs this "
			 "QP was given (rq_psn, sq_psn): refused",
			 swiw_stream_qpn(s), s->setup->bk.peer_qpn);
		return false;
	}
	s->qp->bk_peer = pd;
	return true;
}

/*
 * Initiator: the MPA exchange ended. A NOT_READY reject is tried again;
 * any other is logged with its reason. True if the stream was retried.
 */
static bool bk_rejected(struct swiw_stream *s)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&s->setup->mpa);
	struct swiw_broker_pd pd;

	if (!s->bk_on || s->setup->mpa.role != SWIW_MPA_INITIATOR ||
	    o->reject != SWIW_MPA_REJ_BY_PEER)
		return false;
	if (swiw_broker_pd_decode(o->peer_pd, o->peer_pd_len, &pd) ||
	    pd.type != SWIW_BROKER_PD_REJECT) {
		swiw_err("QP %u: QP %u's side rejected the connection",
			 swiw_stream_qpn(s), s->setup->bk.peer_qpn);
		return false;
	}
	if (swiw_broker_reason_retryable(pd.reason) && bk_redial(s, EAGAIN))
		return true;
	swiw_err("QP %u: QP %u's side rejected the connection: %s",
		 swiw_stream_qpn(s), s->setup->bk.peer_qpn,
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
	uint32_t ms = 0;

	dl = s->failed || !s->setup->mpa_phase ?
		     SWIW_MPA_DL_NONE :
		     swiw_mpa_deadline(&s->setup->mpa, &ms);
	if (dl == s->setup->mpa_dl)
		return;
	/* An initiator waits for its Reply no longer than connect_timeout
	 * allows in all: the peer's broker holds what it cannot place. */
	if (dl != SWIW_MPA_DL_NONE && s->bk_on &&
	    s->setup->mpa.role == SWIW_MPA_INITIATOR) {
		uint64_t now = swiw_broker_now_ms(),
			 end = s->qp->dial.deadline_ms;
		uint32_t left = end > now ? (uint32_t)(end - now) : 1;

		if (left < ms)
			ms = left;
	}
	s->setup->mpa_dl = (uint8_t)dl;
	if (dl == SWIW_MPA_DL_NONE) {
		s->setup->mpa_due_ns = 0;
		return;
	}
	s->setup->mpa_due_ns = swiw_eng_now_ns() + (uint64_t)ms * 1000000u;
	swiw_eng_deadline(s->setup->mpa_due_ns);
}

void swiw_stream_mpa_events(struct swiw_stream *s)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&s->setup->mpa);
	u32 ev;

	while (!s->failed && (ev = swiw_mpa_events(&s->setup->mpa))) {
		if ((ev & SWIW_MPA_EV_TX) &&
		    send(s->fd, s->setup->mpa_tx, o->tx_len,
			 MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)o->tx_len) {
			swiw_stream_fail(s, SWIW_V_NONE, NULL, 0, -1,
					 IBV_EVENT_QP_FATAL);
			return;
		}
		if (ev & SWIW_MPA_EV_CLOSED) {
			mpa_term(s);
			if (s->cm)
				swiw_cm_report(s, 0, o->error);
			if (!bk_rejected(s))
				mpa_fail(s);
			return;
		}
		if (s->bk_on && !s->setup->bk_checked &&
		    s->setup->mpa.role == SWIW_MPA_INITIATOR &&
		    (ev & (SWIW_MPA_EV_RX_FPDU | SWIW_MPA_EV_SEND_RTR |
			   SWIW_MPA_EV_TX_FPDU))) {
			s->setup->bk_checked = true;
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
				u.pd = s->setup->bk.pd;
				u.pd_len = s->setup->bk.pd_len;
			} else if (s->cm) {
				u.pd = s->setup->cm_pd;
				u.pd_len = s->setup->cm_pd_len;
			}

			if (swiw_mpa_accept(&s->setup->mpa, &u))
				swiw_mpa_reject(&s->setup->mpa, NULL, 0);
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
			s->setup->mpa_phase = false;
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
	if (!s->failed && s->ops->txd &&
	    swiw_mpa_state(&s->setup->mpa) == SWIW_MPA_S_ESTABLISHED) {
		/* FPDUs both ways, the lower half has the socket: done. */
		free(s->setup);
		s->setup = NULL;
		return;
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
		swiw_stream_peer_closed(s);
		return;
	}
	if (n < 0)
		return;
	swiw_mpa_input(&s->setup->mpa, buf, (size_t)n, &used);
	if (used && recv(s->fd, buf, used, MSG_DONTWAIT) != (ssize_t)used) {
		swiw_stream_peer_closed(s);
		return;
	}
	swiw_stream_mpa_events(s);
}

/* The peer closed while MPA ran: true if the initiator dials again. */
bool swiw_setup_peer_closed(struct swiw_stream *s)
{
	return s->setup && s->setup->mpa_phase &&
	       swiw_mpa_state(&s->setup->mpa) == SWIW_MPA_S_AWAIT_REPLY &&
	       bk_redial(s, ECONNRESET);
}

bool swiw_setup_timer(struct swiw_stream *s, uint64_t now, uint64_t *best)
{
	struct swiw_setup *st = s->setup;

	if (!st->mpa_due_ns)
		return false;
	if (now < st->mpa_due_ns) {
		if (st->mpa_due_ns < *best)
			*best = st->mpa_due_ns;
		return false;
	}
	st->mpa_due_ns = 0;
	if (s->bk_on && st->mpa.role == SWIW_MPA_INITIATOR &&
	    swiw_mpa_state(&st->mpa) == SWIW_MPA_S_AWAIT_REPLY)
		swiw_err(
			"QP %u: QP %u's side did not take the connection within connect_timeout (%u ms): is that QP in RTR, and do the QP numbers, addresses and PSNs match? The peer's broker log says which",
			swiw_stream_qpn(s), st->bk.peer_qpn,
			swiw_config()->connect_timeout_ms);
	if (!swiw_mpa_timeout(&st->mpa))
		swiw_stream_mpa_events(s);
	return true;
}

/* Until a lower half takes the socket, MPA frames only. */
static void setup_event(struct swiw_stream *s, uint32_t events)
{
	if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) &&
	    !s->eof_due_ns && s->setup->mpa_phase)
		mpa_rx(s);
	if (!s->failed)
		swiw_tx_pump(s);
}

static void setup_fail(struct swiw_stream *s, enum swiw_violation v,
		       const void *seg, uint32_t seg_len)
{
	if (v != SWIW_V_NONE && !s->setup->term_sent)
		send_terminate(s, v, seg, seg_len);
}

const struct swiw_stream_ops swiw_setup_ops = {
	.event = setup_event,
	.drain = swiw_stream_no_drain,
	.doorbell = swiw_stream_nop,
	.fail = setup_fail,
	.detach = swiw_stream_nop,
};

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
	struct swiw_setup *st;
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
	s->ops = &swiw_setup_ops;
	*err = swiw_link_init(s);
	if (*err)
		goto fail;
	*err = ENOMEM;
	s->fd = fd;
	s->setup = calloc(1, sizeof(*s->setup));
	if (!s->setup)
		goto fail;
	st = s->setup;
	st->mpa_phase = true;
	if (swiw_mpa_init(&st->mpa, role, &c, st->mpa_tx, sizeof(st->mpa_tx),
			  st->mpa_pd, sizeof(st->mpa_pd))) {
		*err = EINVAL;
		goto fail;
	}
	*err = 0;
	return s;
fail:
	swiw_stream_free(s);
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
		s->setup->bk = *bk;
		s->setup->bk.req = NULL;
		s->setup->bk.req_len = 0;
	}
	if (s->setup->mpa.role == SWIW_MPA_INITIATOR) {
		struct swiw_mpa_ulp u = { .ird = ulp_ird(s),
					  .ord = ulp_ord(s) };

		if (bk) {
			u.pd = s->setup->bk.pd;
			u.pd_len = s->setup->bk.pd_len;
		} else if (s->cm) {
			u.pd = s->setup->cm_pd;
			u.pd_len = s->setup->cm_pd_len;
		}
		if (swiw_mpa_connect(&s->setup->mpa, &u))
			return EINVAL;
	} else if ((bk && bk->req_len) || s->setup->cm_req_len) {
		const uint8_t *req = bk ? bk->req : s->setup->cm_req;
		size_t len = bk ? bk->req_len : s->setup->cm_req_len, used = 0;

		/* The broker or the CM read the Request: feed it as if
		 * received. */
		swiw_mpa_input(&s->setup->mpa, req, len, &used);
		s->setup->cm_req = NULL;
		s->setup->cm_req_len = 0;
		if (used != len)
			return EPROTO;
	}
	err = swiw_eng_epoll_ctl(EPOLL_CTL_ADD, s->fd, EPOLLIN | EPOLLRDHUP, s);
	if (err)
		return err;
	swiw_stream_list(s);
	swiw_stream_mpa_events(s);
	return 0;
}

int swiw_engine_cm_attach_locked(struct swiw_qp *qp, int fd,
				 const struct swiw_cm_params *p)
{
	struct swiw_stream *s;
	int err;

	swiw_eng_assert_held();
	if (p->pd_len > SWIW_MPA_PD_MAX)
		return EINVAL;
	s = stream_new(qp, fd,
		       p->responder ? SWIW_MPA_RESPONDER : SWIW_MPA_INITIATOR,
		       &err);
	if (!s)
		return err;
	s->cm = true;
	s->cm_cb = p->cb;
	s->cm_arg = p->arg;
	s->setup->cm_ird = p->ird;
	s->setup->cm_ord = p->ord;
	s->setup->cm_pd_len = p->pd_len;
	if (p->pd_len)
		memcpy(s->setup->cm_pd, p->pd, p->pd_len);
	s->setup->cm_req = p->req;
	s->setup->cm_req_len = p->req_len;
	err = stream_start(s, NULL);
	if (err) {
		swiw_stream_free(s); /* never listed: nobody heard of it */
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
		swiw_stream_free(s);
	return err;
}
