// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Connecting QPs by modify_qp through the broker (swiw_broker.h): the
 * process's broker session, QP numbers, and the two ways a QP gets its
 * TCP connection once it is in RTR:
 *
 * - initiator: the engine thread dials the peer's broker port (timer
 *   driven: swiw_conn_run() from every loop of the progress thread, which
 *   sleeps at most until swiw_conn_timeout_ms()) and attaches the socket
 *   as MPA initiator with a REQUEST block; a NOT_READY reject or a close
 *   before the Reply comes back here through swiw_conn_redial();
 * - responder: the broker's event socket is in the engine's epoll set;
 *   swiw_conn_broker_event() takes the handed connections and attaches
 *   them as MPA responder, with the Request already read. A responder
 *   whose peer never dials (it died after the out-of-band exchange)
 *   fails after twice connect_timeout, so its WRs flush: the peer's own
 *   RTR may come later than ours, and its dialer then tries for
 *   connect_timeout.
 *
 * Everything here but the session's opening runs under the engine lock
 * (bk_open_lock, held while a broker is started, comes before it); the
 * QP list holds every QP of the process that has a broker QPN. expect,
 * unexpect and qp_free are one short round trip to the broker each, made
 * under the engine lock so that a hand-over cannot race with them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <unistd.h>

#include "swiw.h"
#include "swiw_broker.h"
#include "swiw_config.h"
#include "swiw_mpa.h"
#include "swiw_stream.h"

/*
 * How long an initiator in RTR waits for its RTS before it dials, so that
 * its Request carries its send PSN: programs ask for RTS right after RTR.
 * Short, because some never do (perftest's bandwidth servers), and a
 * 50 ms wait made their short runs a third as fast. A Request sent
 * without it is still checked by the receive PSN once the responder is
 * in RTS; were neither side ever in RTS, the broker refuses it after its
 * hold and the dialer tries again with the send PSN it has by then.
 */
#define SWIW_CONN_RTS_WAIT_MS 2

/* One broker session; replaced when the broker goes away. */
struct swiw_bk {
	struct swiw_broker *b;
	unsigned int refs; /* QPs whose QPN it gave */
	bool dead; /* the broker is gone: no more connections */
};

static pthread_mutex_t bk_open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct swiw_bk *bk_cur; /* under the engine lock */
static struct swiw_qp *conn_qps; /* under the engine lock */

bool swiw_conn_is_broker(const void *ptr)
{
	swiw_eng_assert_held();
	return ptr && ptr == bk_cur;
}

/* The live session, opened (and its broker started) on first use. */
static int bk_get(struct swiw_bk **out)
{
	struct swiw_bk *bk;
	int err;

	pthread_mutex_lock(&bk_open_lock);
	swiw_eng_lock();
	bk = bk_cur;
	if (bk && !bk->dead) {
		bk->refs++;
		swiw_eng_unlock();
		pthread_mutex_unlock(&bk_open_lock);
		*out = bk;
		return 0;
	}
	swiw_eng_unlock();

	bk = calloc(1, sizeof(*bk));
	if (!bk) {
		err = ENOMEM;
		goto out;
	}
	err = swiw_broker_open(NULL, &bk->b);
	if (err) {
		free(bk);
		goto out;
	}
	swiw_eng_lock();
	err = swiw_eng_start();
	if (!err)
		err = swiw_eng_epoll_ctl(EPOLL_CTL_ADD,
					 swiw_broker_event_fd(bk->b), EPOLLIN,
					 bk);
	if (err) {
		swiw_eng_unlock();
		swiw_err("cannot watch the broker session: %s", strerror(err));
		swiw_broker_close(bk->b);
		free(bk);
		goto out;
	}
	/* A dead predecessor is freed by its last QP, or here. */
	if (bk_cur && !bk_cur->refs) {
		swiw_broker_close(bk_cur->b);
		free(bk_cur);
	}
	bk_cur = bk;
	bk->refs = 1;
	swiw_eng_unlock();
	*out = bk;
out:
	pthread_mutex_unlock(&bk_open_lock);
	return err;
}

/* Drops a QP's reference; under the engine lock. */
static void bk_put_locked(struct swiw_bk *bk)
{
	if (--bk->refs || !bk->dead || bk == bk_cur)
		return;
	swiw_broker_close(bk->b);
	free(bk);
}

int swiw_conn_qp_create(struct swiw_qp *qp)
{
	struct swiw_bk *bk;
	uint32_t qpn;
	int err;

	err = bk_get(&bk);
	if (err)
		return err;
	err = swiw_broker_qp_alloc(bk->b, &qpn);
	swiw_eng_lock();
	if (err) {
		bk_put_locked(bk);
		swiw_eng_unlock();
		swiw_err("no QP number from the broker: %s", strerror(err));
		return err;
	}
	qp->bk = bk;
	qp->vqp.qp.qp_num = qpn;
	qp->conn_next = conn_qps;
	conn_qps = qp;
	swiw_eng_unlock();
	return 0;
}

/* The QP stops waiting for a connection; under the engine lock. */
static void conn_stop_locked(struct swiw_qp *qp)
{
	if (qp->dialing)
		swiw_broker_dial_cancel(&qp->dial);
	qp->dialing = false;
	qp->conn_wait = false;
}

void swiw_conn_qp_destroy(struct swiw_qp *qp)
{
	struct swiw_qp **pp;
	struct swiw_bk *bk = qp->bk;

	if (!bk)
		return;
	swiw_eng_lock();
	conn_stop_locked(qp);
	for (pp = &conn_qps; *pp; pp = &(*pp)->conn_next)
		if (*pp == qp) {
			*pp = qp->conn_next;
			break;
		}
	if (!bk->dead)
		swiw_broker_qp_free(bk->b, qp->vqp.qp.qp_num);
	bk_put_locked(bk);
	qp->bk = NULL;
	swiw_eng_unlock();
}

/* RESET or ERROR: no connection is wanted any more. */
void swiw_conn_stop(struct swiw_qp *qp)
{
	bool expected;

	if (!qp->bk)
		return;
	swiw_eng_lock();
	expected = qp->expected;
	qp->expected = false;
	conn_stop_locked(qp);
	if (expected && !qp->bk->dead)
		swiw_broker_unexpect(qp->bk->b, qp->vqp.qp.qp_num);
	swiw_eng_unlock();
}

/*
 * modify_qp(RTR): tell the broker what the QP expects and, as initiator,
 * start dialing the peer. @sgid is the device's GID the QP sends from,
 * @ifindex the interface (scope of a link-local GID).
 */
int swiw_conn_rtr(struct swiw_qp *qp, const union ibv_gid *sgid, int ifindex)
{
	struct sockaddr_storage peer, local;
	socklen_t peer_len, local_len;
	uint32_t qpn = qp->vqp.qp.qp_num;
	enum swiw_broker_role role;
	struct swiw_bk *bk = qp->bk;
	int err;

	if (!bk)
		return EINVAL;
	role = swiw_broker_role(sgid->raw, qpn, qp->dgid.raw, qp->dest_qpn);
	if (role == SWIW_BROKER_ROLE_NONE) {
		swiw_err("QP %u: cannot connect to itself", qpn);
		return EINVAL;
	}
	if (role == SWIW_BROKER_INITIATOR) {
		err = swiw_broker_gid_sockaddr(qp->dgid.raw,
					       swiw_broker_port(bk->b),
					       (uint32_t)ifindex, &peer,
					       &peer_len);
		if (!err)
			err = swiw_broker_gid_sockaddr(sgid->raw, 0,
						       (uint32_t)ifindex,
						       &local, &local_len);
		if (err) {
			swiw_err("QP %u: no address for its GIDs", qpn);
			return err;
		}
	}
	swiw_eng_lock();
	if (bk->dead) {
		swiw_eng_unlock();
		swiw_err("QP %u: the broker is gone; create a new QP", qpn);
		return ENOTCONN;
	}
	qp->bk_rq_psn = SWIW_BROKER_PSN_KNOWN |
			(qp->rq_psn & SWIW_BROKER_PSN_MASK);
	memset(&qp->bk_peer, 0, sizeof(qp->bk_peer));
	qp->bk_sq_psn = qp->sq_psn_given ?
				SWIW_BROKER_PSN_KNOWN |
					(qp->sq_psn & SWIW_BROKER_PSN_MASK) :
				0;
	err = swiw_broker_expect(bk->b, qpn, qp->dgid.raw, qp->dest_qpn,
				 qp->bk_rq_psn & SWIW_BROKER_PSN_MASK, role);
	if (!err && qp->bk_sq_psn && role == SWIW_BROKER_RESPONDER)
		err = swiw_broker_sq_psn(bk->b, qpn,
					 qp->bk_sq_psn & SWIW_BROKER_PSN_MASK);
	if (err) {
		swiw_eng_unlock();
		swiw_err("QP %u: broker refused the expectation: %s", qpn,
			 strerror(err));
		return err;
	}
	qp->expected = true;
	qp->bk_role = role;
	if (role == SWIW_BROKER_INITIATOR) {
		err = swiw_broker_dial_start(&qp->dial,
					     (struct sockaddr *)&peer, peer_len,
					     (struct sockaddr *)&local,
					     local_len,
					     swiw_config()->connect_timeout_ms,
					     swiw_broker_now_ms());
		if (err) {
			swiw_eng_unlock();
			return err;
		}
		/* The Request carries our send PSN if we have it: wait a
		 * moment for RTS, which most programs ask for at once. */
		if (!qp->bk_sq_psn)
			qp->dial.next_ms += SWIW_CONN_RTS_WAIT_MS;
		qp->dialing = true;
		swiw_eng_doorbell();
	} else {
		qp->conn_wait = true;
		qp->conn_due = swiw_broker_now_ms() +
			       2 * (uint64_t)swiw_config()->connect_timeout_ms;
		swiw_eng_doorbell(); /* the thread's sleep gets the deadline */
	}
	swiw_eng_unlock();
	return 0;
}

/*
 * modify_qp(RTR -> RTS): the QP has its send PSN. A responder's broker can
 * now check Requests that carried none; an initiator that waited for it
 * dials at once; a QP already connected checks it against the receive PSN
 * its peer was given, which nothing could compare before.
 */
void swiw_conn_rts(struct swiw_qp *qp)
{
	int err;

	if (!qp->bk)
		return;
	swiw_eng_lock();
	qp->bk_sq_psn = SWIW_BROKER_PSN_KNOWN |
			(qp->sq_psn & SWIW_BROKER_PSN_MASK);
	/* The same check the Request or Accept passed, with one pair more. */
	if (qp->stream && qp->bk_peer.type &&
	    swiw_broker_psn_check(&qp->bk_peer, qp->bk_rq_psn, qp->bk_sq_psn) ==
		    EACCES) {
		swiw_err("QP %u: send PSN %#x is not the receive PSN %#x its "
			 "peer QP %u was given: the connection ends",
			 qp->vqp.qp.qp_num, qp->sq_psn & SWIW_BROKER_PSN_MASK,
			 qp->bk_peer.rq_psn & SWIW_BROKER_PSN_MASK,
			 qp->dest_qpn);
		swiw_stream_fail(qp->stream, SWIW_V_RDMAP_CATASTROPHIC, NULL, 0,
				 -1, IBV_EVENT_QP_FATAL);
	}
	if (qp->conn_wait && !qp->stream && !qp->bk->dead) {
		err = swiw_broker_sq_psn(qp->bk->b, qp->vqp.qp.qp_num,
					 qp->bk_sq_psn & SWIW_BROKER_PSN_MASK);
		if (err)
			swiw_warn("QP %u: broker did not take its send PSN: %s",
				  qp->vqp.qp.qp_num, strerror(err));
	}
	if (qp->dialing && swiw_broker_dial_fd(&qp->dial) < 0 &&
	    !qp->dial.attempts) {
		qp->dial.next_ms = swiw_broker_now_ms();
		swiw_eng_doorbell();
	}
	swiw_eng_unlock();
}

/* The QP's connection failed for good; under the engine lock. */
static void conn_fail(struct swiw_qp *qp)
{
	conn_stop_locked(qp);
	__atomic_store_n(&qp->state, IBV_QPS_ERR, __ATOMIC_RELEASE);
	swiw_engine_flush_qp_locked(qp);
	swiw_post_async(to_swiw_ctx(qp->vqp.qp.context), IBV_EVENT_QP_FATAL,
			(uintptr_t)&qp->vqp.qp);
}

static void dial_done(struct swiw_qp *qp, int fd)
{
	struct swiw_engine_bk eb = { 0 };
	struct swiw_broker_pd pd = { 0 };
	size_t len;
	int err;

	qp->dialing = false;
	if (getrandom(&eb.nonce, sizeof(eb.nonce), GRND_NONBLOCK) !=
	    sizeof(eb.nonce))
		eb.nonce = swiw_broker_now_ms() ^ (uintptr_t)qp;
	pd.type = SWIW_BROKER_PD_REQUEST;
	pd.src_qpn = qp->vqp.qp.qp_num;
	pd.dst_qpn = qp->dest_qpn;
	pd.nonce = eb.nonce;
	pd.sq_psn = qp->bk_sq_psn;
	pd.rq_psn = qp->bk_rq_psn;
	err = swiw_broker_pd_encode(&pd, eb.pd, sizeof(eb.pd), &len);
	eb.pd_len = (uint16_t)len;
	eb.peer_qpn = qp->dest_qpn;
	if (!err)
		err = swiw_engine_attach_locked(qp, fd, SWIW_MPA_INITIATOR,
						&eb);
	if (err) {
		swiw_err("QP %u: cannot start MPA: %s", qp->vqp.qp.qp_num,
			 strerror(err));
		close(fd);
		conn_fail(qp);
	}
}

/* Progress of the dialing QPs, and waiting ones' deadlines. */
void swiw_conn_run(void)
{
	uint64_t now = swiw_broker_now_ms();
	struct swiw_qp *qp;
	int err, fd;

	swiw_eng_assert_held();
	for (qp = conn_qps; qp; qp = qp->conn_next) {
		if (qp->conn_wait && !qp->stream && qp->conn_due <= now) {
			swiw_err(
				"QP %u: no connection from QP %u in %u ms; is the peer program still there?",
				qp->vqp.qp.qp_num, qp->dest_qpn,
				2 * swiw_config()->connect_timeout_ms);
			conn_fail(qp);
			continue;
		}
		if (!qp->dialing)
			continue;
		if (swiw_broker_dial_fd(&qp->dial) < 0 &&
		    swiw_broker_dial_due(&qp->dial) > now)
			continue;
		err = swiw_broker_dial_step(&qp->dial, now, &fd);
		if (err == EINPROGRESS)
			continue;
		if (!err) {
			dial_done(qp, fd);
			continue;
		}
		qp->dialing = false;
		swiw_err("QP %u: cannot reach QP %u: %s", qp->vqp.qp.qp_num,
			 qp->dest_qpn, strerror(err));
		conn_fail(qp);
	}
}

/* How long the engine may sleep for dialers and waiters: -1 for ever. */
int swiw_conn_timeout_ms(void)
{
	uint64_t now = 0, due, best = UINT64_MAX;
	struct swiw_qp *qp;

	swiw_eng_assert_held();
	for (qp = conn_qps; qp; qp = qp->conn_next) {
		if (!qp->dialing && !(qp->conn_wait && !qp->stream))
			continue;
		if (!now) /* no clock read while nothing waits */
			now = swiw_broker_now_ms();
		if (!qp->dialing) {
			if (qp->conn_due < best)
				best = qp->conn_due;
			continue;
		}
		/* A connect in flight is polled, not waited for. */
		due = swiw_broker_dial_fd(&qp->dial) >= 0 ?
			      now + 1 :
			      swiw_broker_dial_due(&qp->dial);
		if (due < best)
			best = due;
	}
	if (best == UINT64_MAX)
		return -1;
	return best <= now ? 0 : best - now > 1000 ? 1000 : (int)(best - now);
}

/*
 * The initiator's connection failed in a way worth another attempt
 * (@err: ECONNRESET for a close before the Reply, EAGAIN for a NOT_READY
 * reject). True if the dialer runs again; the caller drops the stream.
 */
bool swiw_conn_redial(struct swiw_qp *qp, int err)
{
	swiw_eng_assert_held();
	if (!qp->expected || qp->bk_role != SWIW_BROKER_INITIATOR)
		return false;
	if (swiw_broker_dial_retry(&qp->dial, err, swiw_broker_now_ms()) !=
	    EINPROGRESS)
		return false;
	qp->dialing = true;
	return true;
}

static struct swiw_qp *qp_find(const struct swiw_bk *bk, uint32_t qpn)
{
	struct swiw_qp *qp;

	for (qp = conn_qps; qp; qp = qp->conn_next)
		if (qp->bk == bk && qp->vqp.qp.qp_num == qpn)
			return qp;
	return NULL;
}

static void take_conn(struct swiw_bk *bk, struct swiw_broker_conn *c)
{
	struct swiw_qp *qp = qp_find(bk, c->qpn);
	struct swiw_broker_pd pd = { 0 };
	struct swiw_engine_bk eb = { 0 };
	size_t len;
	int err;

	/* A hand-over can race with reset or destroy. */
	if (!qp || !qp->conn_wait || qp->stream) {
		swiw_dbg("connection for QP %u that no longer waits", c->qpn);
		close(c->fd);
		return;
	}
	if (swiw_broker_conn_verify(c, qp->dgid.raw, qp->dest_qpn,
				    qp->bk_rq_psn, qp->bk_sq_psn) ||
	    swiw_broker_conn_req(c, &pd)) {
		close(c->fd);
		return;
	}
	qp->bk_peer = pd;
	memset(&pd, 0, sizeof(pd));
	pd.type = SWIW_BROKER_PD_ACCEPT;
	pd.src_qpn = qp->vqp.qp.qp_num;
	pd.dst_qpn = c->peer_qpn;
	pd.nonce = c->nonce;
	pd.sq_psn = qp->bk_sq_psn;
	pd.rq_psn = qp->bk_rq_psn;
	err = swiw_broker_pd_encode(&pd, eb.pd, sizeof(eb.pd), &len);
	eb.pd_len = (uint16_t)len;
	eb.peer_qpn = c->peer_qpn;
	eb.nonce = c->nonce;
	eb.req = c->req;
	eb.req_len = c->req_len;
	if (!err)
		err = swiw_engine_attach_locked(qp, c->fd, SWIW_MPA_RESPONDER,
						&eb);
	if (err) {
		swiw_err("QP %u: cannot take its connection: %s", c->qpn,
			 strerror(err));
		close(c->fd);
		conn_fail(qp);
		return;
	}
	qp->conn_wait = false;
}

/* The broker's event socket is readable (or hung up). */
void swiw_conn_broker_event(void *ptr)
{
	struct swiw_bk *bk = ptr;
	struct swiw_broker_conn c;
	struct swiw_qp *qp;
	int err;

	swiw_eng_assert_held();
	if (bk != bk_cur || bk->dead)
		return;
	for (;;) {
		err = swiw_broker_recv_conn(bk->b, &c);
		if (err == EAGAIN)
			return;
		if (err == EPROTO)
			continue;
		if (!err) {
			take_conn(bk, &c);
			continue;
		}
		break;
	}
	/* The broker is gone: QPs still waiting for it fail. */
	swiw_err("the connection broker went away (%s)", strerror(err));
	swiw_eng_epoll_ctl(EPOLL_CTL_DEL, swiw_broker_event_fd(bk->b), 0, NULL);
	bk->dead = true;
	for (qp = conn_qps; qp; qp = qp->conn_next)
		if (qp->bk == bk && qp->conn_wait)
			conn_fail(qp);
}

/* The CM's QPN -> QP lookup (rdma_connect with conn_param->qp_num). */
struct ibv_qp *swiw_conn_qp_lookup(struct ibv_context *ctx, uint32_t qpn)
{
	struct ibv_qp *found = NULL;
	struct swiw_qp *qp;

	swiw_eng_lock();
	for (qp = conn_qps; qp; qp = qp->conn_next)
		if (qp->vqp.qp.qp_num == qpn && qp->vqp.qp.context == ctx) {
			found = &qp->vqp.qp;
			break;
		}
	swiw_eng_unlock();
	return found;
}
