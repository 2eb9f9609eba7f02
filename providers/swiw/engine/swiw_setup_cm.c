// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The provider's side of the connection manager in libswiw-preload.so
 * (libibverbs-shim/swiw_cma*.c): the CM makes the TCP connection and
 * reads the MPA Request; from there a QP's stream runs MPA in the engine
 * like any other, with the CM's private data and IRD/ORD, and the engine
 * tells the CM how it went through a callback. Request parsing and reject
 * Replies use the same swiw_mpa machine as the streams (swiw_cm_req.c,
 * with the streams' MPA knobs).
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include "swiw.h"
#include "swiw_cm_req.h"
#include "swiw_stream.h"

/* Under the engine lock: tells the CM, at most once per outcome. */
void swiw_cm_report(struct swiw_stream *s, int type, int status)
{
	/* ESTABLISHED and failed setups come while MPA's outcome is there. */
	const struct swiw_mpa_outcome *o =
		s->setup ? swiw_mpa_outcome(&s->setup->mpa) : NULL;
	struct swiw_cm_event ev = { .status = status };
	struct swiw_qp *qp = s->qp;

	swiw_eng_assert_held();
	if (s->cm_done)
		return;
	if (type == SWIW_CM_ESTABLISHED) {
		enum ibv_qp_state st;

		if (s->cm_up)
			return;
		s->cm_up = true;
		/* The QP is connected: RTS, from wherever the CM left it. */
		st = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);
		while (st == IBV_QPS_RESET || st == IBV_QPS_INIT ||
		       st == IBV_QPS_RTR)
			if (__atomic_compare_exchange_n(
				    &qp->state, &st, IBV_QPS_RTS, false,
				    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				break;
		__atomic_store_n(&qp->ird, (uint8_t)s->ird, __ATOMIC_RELAXED);
		__atomic_store_n(&qp->ord, (uint8_t)s->ord, __ATOMIC_RELAXED);
		ev.ird = (uint16_t)s->ird;
		ev.ord = (uint16_t)s->ord;
		if (o && s->setup->mpa.role == SWIW_MPA_INITIATOR &&
		    o->peer_pd_len) {
			ev.pd_len = o->peer_pd_len;
			memcpy(ev.pd, o->peer_pd, o->peer_pd_len);
		}
		if (s->setup)
			s->setup->mpa_due_ns = 0;
	} else if (s->cm_up) {
		type = SWIW_CM_DISCONNECTED;
		s->cm_done = true;
	} else {
		/* MPA did not complete: what the kernel's iw_cm reports. */
		s->cm_done = true;
		if (!status)
			status = -ECONNRESET;
		if (status == -ECONNREFUSED || status == -ECONNRESET) {
			type = SWIW_CM_REJECTED;
			if (o && o->reject == SWIW_MPA_REJ_BY_PEER &&
			    o->peer_pd_len) {
				ev.pd_len = o->peer_pd_len;
				memcpy(ev.pd, o->peer_pd, o->peer_pd_len);
			}
		} else if (status == -ETIMEDOUT) {
			type = SWIW_CM_UNREACHABLE;
		} else {
			type = SWIW_CM_CONNECT_ERROR;
		}
	}
	ev.type = type;
	if (type != SWIW_CM_ESTABLISHED && type != SWIW_CM_DISCONNECTED)
		ev.status = status;
	if (s->cm_cb)
		s->cm_cb(s->cm_arg, &ev);
}

int swiw_cm_attach(struct ibv_qp *ibqp, int fd, const struct swiw_cm_params *p)
{
	struct swiw_qp *qp = to_swiw_qp(ibqp);
	enum ibv_qp_state st, prev = IBV_QPS_INIT;
	int err = 0;

	if (!p || !p->cb || fd < 0 || p->pd_len > SWIW_MPA_PD_MAX ||
	    (p->responder && !p->req_len))
		return EINVAL;
	pthread_mutex_lock(&qp->state_lock);
	qp->cm = true;
	st = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);
	/* An ibv_create_qp'd QP the CM was given by number starts here. */
	if (st == IBV_QPS_RESET) {
		err = qp->rq_stale ? swiw_engine_renew_rq(qp) : 0;
		if (!err)
			__atomic_store_n(&qp->state, IBV_QPS_INIT,
					 __ATOMIC_RELEASE);
	} else if (st != IBV_QPS_INIT && st != IBV_QPS_RTR &&
		   st != IBV_QPS_RTS) {
		err = EINVAL;
	}
	/*
	 * Accepting: RTS now, as siw's accept and the IB CM (RTS before the
	 * REP) have it, so that work posted once rdma_accept returns is
	 * taken; it waits for MPA (the peer's RTR) as an RTR QP's does. A
	 * passive side may post before ESTABLISHED: perftest -R's latency
	 * servers do. The initiator stays where it is until ESTABLISHED.
	 */
	if (!err && p->responder) {
		prev = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);
		__atomic_store_n(&qp->state, IBV_QPS_RTS, __ATOMIC_RELEASE);
	}
	if (!err) {
		swiw_eng_lock();
		err = swiw_engine_cm_attach_locked(qp, fd, p);
		swiw_eng_unlock();
		if (err && p->responder)
			__atomic_store_n(&qp->state, prev, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&qp->state_lock);
	return err;
}

int swiw_cm_parse_request(const void *buf, size_t len, struct swiw_cm_req *out)
{
	struct swiw_mpa_cfg c;

	swiw_stream_mpa_cfg(&c);
	return swiw_cm_req_parse(&c, buf, len, out);
}

int swiw_cm_reject(int fd, const void *req, size_t req_len, const void *pd,
		   uint16_t pd_len)
{
	uint8_t tx[SWIW_MPA_FRAME_MAX], ppd[SWIW_MPA_PD_MAX];
	const struct swiw_mpa_outcome *o;
	struct swiw_mpa_cfg c;
	struct swiw_mpa m;
	size_t used, off = 0;
	int err;

	swiw_stream_mpa_cfg(&c);
	err = swiw_cm_req_take(&m, &c, tx, ppd, req, req_len, &used);
	if (err)
		return err == EAGAIN ? EINVAL : err;
	if (swiw_mpa_reject(&m, pd, pd_len))
		return EINVAL;
	if (!(swiw_mpa_events(&m) & SWIW_MPA_EV_TX))
		return EPROTO;
	o = swiw_mpa_outcome(&m);
	/* A few hundred octets on a fresh connection: bounded wait. */
	while (off < o->tx_len) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		ssize_t n = send(fd, tx + off, o->tx_len - off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return errno;
		if (poll(&pfd, 1, 1000) <= 0)
			return ETIMEDOUT;
	}
	return 0;
}

static struct swiw_stream *stream_of(void *arg)
{
	struct swiw_stream *s;

	for (s = swiw_streams_first(); s; s = s->next)
		if (s->cm && s->cm_arg == arg && !s->dead)
			return s;
	return NULL;
}

int swiw_cm_disconnect(void *arg)
{
	struct swiw_stream *s;
	int err = 0;

	swiw_eng_lock();
	s = stream_of(arg);
	if (!s)
		err = ENOTCONN;
	else if (!s->failed)
		swiw_stream_fail(s, SWIW_V_NONE, NULL, 0, -1, 0);
	swiw_eng_unlock();
	return err;
}

void swiw_cm_forget(void *arg)
{
	struct swiw_stream *s;

	swiw_eng_lock();
	for (s = swiw_streams_first(); s; s = s->next)
		if (s->cm && s->cm_arg == arg)
			s->cm_cb = NULL;
	swiw_eng_unlock();
}

void swiw_cm_mark_ctx(struct ibv_context *ctx)
{
	to_swiw_ctx(ctx)->cm = true;
}

void swiw_cm_mark_qp(struct ibv_qp *ibqp)
{
	struct swiw_qp *qp = to_swiw_qp(ibqp);

	pthread_mutex_lock(&qp->state_lock);
	qp->cm = true;
	pthread_mutex_unlock(&qp->state_lock);
}
