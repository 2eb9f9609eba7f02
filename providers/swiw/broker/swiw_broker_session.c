// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The broker's clients: one session per process (a control socket and an
 * event socket), the QPs each registers, and the table of QP numbers.
 *
 * QP numbers: 24 bits, never 0 or 1, unique in the namespace, drawn at
 * random (getrandom) among those not handed out in this epoch. Nobody
 * can tell another program's next number from the ones they were given,
 * so knowing a QP number proves the application exchanged it. An epoch
 * ends after half the space (8M numbers) has been handed out, so a
 * number comes back only after millions of others: a peer that still
 * remembers a released QP cannot reach its successor by accident.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "swiw_broker_daemon.h"

/* Control messages a session may send per wake-up: fairness. */
#define SESSION_BATCH 32

/* --- the QP table ------------------------------------------------------- */

#define QPN_SPACE (SWIW_BROKER_QPN_MAX + 1u)
#define QPN_EPOCH (QPN_SPACE / 2)

int brk_qp_table_init(struct brk *b)
{
	b->qp_hash_size = 1024;
	b->qp_hash = calloc(b->qp_hash_size, sizeof(*b->qp_hash));
	b->qpn_used = calloc(QPN_SPACE / 8, 1);
	if (!b->qp_hash || !b->qpn_used)
		return ENOMEM;
	b->rnd_left = 0;
	return 0;
}

void brk_qp_table_free(struct brk *b)
{
	free(b->qp_hash);
	b->qp_hash = NULL;
	free(b->qpn_used);
	b->qpn_used = NULL;
}

/* 24 random bits, from getrandom in blocks. */
static int qpn_random(struct brk *b, uint32_t *n)
{
	const uint8_t *p;

	if (b->rnd_left < 3) {
		ssize_t got = getrandom(b->rnd, sizeof(b->rnd), 0);

		if (got < 3)
			return EAGAIN; /* no entropy: no guessable number */
		b->rnd_left = (unsigned int)got;
	}
	p = b->rnd + b->rnd_left - 3;
	b->rnd_left -= 3;
	*n = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
	return 0;
}

static bool qpn_taken(const struct brk *b, uint32_t n)
{
	return b->qpn_used[n >> 3] & (1u << (n & 7));
}

static void qpn_take(struct brk *b, uint32_t n)
{
	b->qpn_used[n >> 3] |= (uint8_t)(1u << (n & 7));
	b->qpn_epoch++;
}

/* A new epoch: only the numbers in use stay taken. */
static void qpn_new_epoch(struct brk *b)
{
	struct brk_qp *q;
	unsigned int i;

	memset(b->qpn_used, 0, QPN_SPACE / 8);
	b->qpn_epoch = 0;
	for (i = 0; i < b->qp_hash_size; i++)
		for (q = b->qp_hash[i]; q; q = q->hnext)
			qpn_take(b, q->qpn);
}

static unsigned int qp_slot(const struct brk *b, uint32_t qpn)
{
	return qpn & (b->qp_hash_size - 1);
}

struct brk_qp *brk_qp_find(struct brk *b, uint32_t qpn)
{
	struct brk_qp *q;

	for (q = b->qp_hash[qp_slot(b, qpn)]; q; q = q->hnext)
		if (q->qpn == qpn)
			return q;
	return NULL;
}

/* Doubles the table when it is fuller than one QP a slot. */
static void qp_table_grow(struct brk *b)
{
	unsigned int old = b->qp_hash_size, i;
	struct brk_qp **from = b->qp_hash, *q, *n;

	if (b->nqps < old || old >= (1u << 22))
		return;
	b->qp_hash = calloc(old * 2, sizeof(*b->qp_hash));
	if (!b->qp_hash) {
		b->qp_hash = from; /* longer chains, still correct */
		return;
	}
	b->qp_hash_size = old * 2;
	for (i = 0; i < old; i++) {
		for (q = from[i]; q; q = n) {
			n = q->hnext;
			q->hnext = b->qp_hash[qp_slot(b, q->qpn)];
			b->qp_hash[qp_slot(b, q->qpn)] = q;
		}
	}
	free(from);
}

static int qp_alloc(struct brk *b, struct brk_session *s, uint32_t *qpn)
{
	struct brk_qp *q;
	uint32_t n;

	/* Root is trusted: the limits are for everybody else. */
	if (s->u &&
	    (s->nqps >= b->o.max_session_qps || b->nqps >= b->o.max_qps ||
	     s->u->nqps >= b->o.max_user_qps))
		return ENOSPC;
	if (b->qpn_epoch >= QPN_EPOCH)
		qpn_new_epoch(b);
	/* At most half the space is taken: two draws a number, on average. */
	do {
		int err = qpn_random(b, &n);

		if (err)
			return err;
	} while (n < SWIW_BROKER_QPN_MIN || qpn_taken(b, n));
	q = calloc(1, sizeof(*q));
	if (!q)
		return ENOMEM;
	qpn_take(b, n);
	q->qpn = n;
	q->state = BRK_QP_REGISTERED;
	q->s = s;
	if (s->u)
		s->u->nqps++;
	q->hnext = b->qp_hash[qp_slot(b, n)];
	b->qp_hash[qp_slot(b, n)] = q;
	q->snext = s->qps;
	if (s->qps)
		s->qps->sprev = q;
	s->qps = q;
	s->nqps++;
	b->nqps++;
	qp_table_grow(b);
	*qpn = n;
	return 0;
}

/* Unlinks and frees @q; the caller settles connections held for it. */
static void qp_remove(struct brk *b, struct brk_qp *q)
{
	struct brk_qp **pp = &b->qp_hash[qp_slot(b, q->qpn)];
	struct brk_session *s = q->s;

	while (*pp != q)
		pp = &(*pp)->hnext;
	*pp = q->hnext;
	if (q->sprev)
		q->sprev->snext = q->snext;
	else
		s->qps = q->snext;
	if (q->snext)
		q->snext->sprev = q->sprev;
	s->nqps--;
	b->nqps--;
	if (s->u)
		s->u->nqps--;
	free(q);
}

/*
 * Every uid but root has a share of sessions and QP numbers, so that one
 * local user cannot take them all from the others.
 */
static struct brk_user *user_get(struct brk *b, uid_t uid)
{
	struct brk_user *u;

	for (u = b->users; u; u = u->next)
		if (u->uid == uid)
			return u;
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->uid = uid;
	u->next = b->users;
	b->users = u;
	return u;
}

static void user_put(struct brk *b, struct brk_user *u)
{
	struct brk_user **pp;

	if (u->nsessions || u->nqps)
		return;
	for (pp = &b->users; *pp; pp = &(*pp)->next)
		if (*pp == u) {
			*pp = u->next;
			break;
		}
	free(u);
}

/* --- sessions ----------------------------------------------------------- */

void brk_unix_accept(struct brk *b)
{
	struct brk_session *s;
	struct ucred cred;
	socklen_t cl;
	int fd, i;

	for (i = 0; i < 64; i++) {
		fd = accept4(b->unix_fd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				brk_log(BRK_LOG_WARN,
					"cannot accept a client: %s; pausing",
					strerror(errno));
				brk_pause_listeners(b);
			}
			return;
		}
		s = calloc(1, sizeof(*s));
		if (!s) {
			close(fd);
			continue;
		}
		s->ctl_ev.kind = BRK_SESSION_CTL;
		s->evt_ev.kind = BRK_SESSION_EVT;
		s->ctl = fd;
		s->evt = -1;
		s->id = ++b->next_session_id;
		cl = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl)) {
			close(fd);
			free(s);
			continue;
		}
		s->pid = cred.pid;
		s->uid = cred.uid;
		/* Root is trusted: the limits are for everybody else. */
		if (cred.uid && b->nsessions >= b->o.max_sessions) {
			brk_log(BRK_LOG_WARN,
				"%u clients already; refusing another",
				b->nsessions);
			close(fd);
			free(s);
			continue;
		}
		if (cred.uid) {
			s->u = user_get(b, cred.uid);
			if (!s->u ||
			    s->u->nsessions >= b->o.max_user_sessions) {
				brk_log(BRK_LOG_WARN,
					"uid %u has %u clients already; refusing another",
					(unsigned int)cred.uid,
					s->u ? s->u->nsessions : 0);
				if (s->u)
					user_put(b, s->u);
				close(fd);
				free(s);
				continue;
			}
			s->u->nsessions++;
		}
		s->hello_deadline = brk_now() + b->o.hello_ms;
		if (brk_epoll_add(b, fd, EPOLLIN, &s->ctl_ev)) {
			if (s->u) {
				s->u->nsessions--;
				user_put(b, s->u);
			}
			close(fd);
			free(s);
			continue;
		}
		s->next = b->sessions;
		if (b->sessions)
			b->sessions->prev = s;
		b->sessions = s;
		b->nsessions++;
	}
}

void brk_session_close(struct brk *b, struct brk_session *s)
{
	struct brk_conn *c;
	uint32_t qpn;

	if (s->dead)
		return;
	s->dead = true;
	brk_epoll_del(b, s->ctl);
	close(s->ctl);
	if (s->evt >= 0) {
		brk_epoll_del(b, s->evt);
		close(s->evt);
	}
	if (s->prev)
		s->prev->next = s->next;
	else
		b->sessions = s->next;
	if (s->next)
		s->next->prev = s->prev;
	b->nsessions--;
	s->next = b->dead_sessions;
	b->dead_sessions = s;
	if (s->nqps || s->outq)
		brk_log(BRK_LOG_INFO,
			"client %u (pid %d) gone: dropping its %u QPs", s->id,
			(int)s->pid, s->nqps);
	else
		brk_log(BRK_LOG_DEBUG, "client %u (pid %d) gone", s->id,
			(int)s->pid);
	/* Its QPs are gone: what waited for them is refused. */
	while ((c = s->outq)) {
		s->outq = c->qnext;
		c->qs = NULL;
		c->state = BRK_C_HELD;
		brk_conn_reject(b, c, SWIW_BROKER_R_UNKNOWN_QPN);
	}
	s->outq_tail = NULL;
	while (s->qps) {
		qpn = s->qps->qpn;
		qp_remove(b, s->qps);
		brk_conns_settle(b, qpn);
	}
	if (s->u) {
		s->u->nsessions--;
		user_put(b, s->u);
		s->u = NULL;
	}
}

void brk_session_timeouts(struct brk *b, uint64_t now, uint64_t *next)
{
	struct brk_session *s, *n;

	for (s = b->sessions; s; s = n) {
		n = s->next;
		if (s->evt >= 0)
			continue;
		if (now >= s->hello_deadline) {
			brk_log(BRK_LOG_WARN,
				"client pid %d sent no HELLO; closed",
				(int)s->pid);
			brk_session_close(b, s);
		} else if (s->hello_deadline < *next) {
			*next = s->hello_deadline;
		}
	}
}

static void bp_addr_put(struct swiw_bp_addr *a, const struct swiw_bp_addr *from)
{
	memcpy(a, from, sizeof(*a));
}

int brk_session_send_conn(struct brk *b, struct brk_session *s,
			  struct brk_conn *c)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctrl;
	struct swiw_bp_conn m;
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctrl.buf,
			     .msg_controllen = sizeof(ctrl.buf) };
	struct cmsghdr *cm;

	(void)b;
	memset(&m, 0, sizeof(m));
	m.hdr.type = SWIW_BP_CONN;
	m.hdr.len = sizeof(m);
	m.qpn = c->pd.dst_qpn;
	m.peer_qpn = c->pd.src_qpn;
	m.nonce_hi = (uint32_t)(c->pd.nonce >> 32);
	m.nonce_lo = (uint32_t)c->pd.nonce;
	bp_addr_put(&m.peer, &c->peer_addr);
	bp_addr_put(&m.local, &c->local_addr);
	m.req_len = c->got;
	memcpy(m.req, c->req, c->got);
	memset(&ctrl, 0, sizeof(ctrl));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &c->fd, sizeof(int));
	if (sendmsg(s->evt, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) ==
	    (ssize_t)sizeof(m))
		return 0;
	if (errno == EAGAIN || errno == ENOBUFS || errno == ETOOMANYREFS)
		return EAGAIN;
	return errno ? errno : EIO;
}

/* Sends a reply; a client that cannot take one is dropped. */
static void reply(struct brk *b, struct brk_session *s, void *msg, size_t len,
		  const struct swiw_bp_hdr *req, int status)
{
	struct swiw_bp_hdr *h = msg;

	h->type = req->type;
	h->len = (uint16_t)len;
	h->seq = req->seq;
	h->status = status;
	if (send(s->ctl, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL) !=
	    (ssize_t)len) {
		brk_log(BRK_LOG_WARN, "client %u (pid %d) takes no reply: %s",
			s->id, (int)s->pid, strerror(errno));
		brk_session_close(b, s);
	}
}

static void protocol_error(struct brk *b, struct brk_session *s,
			   const char *what)
{
	brk_log(BRK_LOG_WARN, "client %u (pid %d): %s; closed", s->id,
		(int)s->pid, what);
	brk_session_close(b, s);
}

static bool evt_socket_ok(int fd)
{
	int v = 0;
	socklen_t l = sizeof(v);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &l) || v != AF_UNIX)
		return false;
	l = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &l) || v != SOCK_SEQPACKET)
		return false;
	return true;
}

static void do_hello(struct brk *b, struct brk_session *s,
		     const struct swiw_bp_hello *req, size_t len, int *fds,
		     int nfds)
{
	struct swiw_bp_hello rep;

	if (s->evt >= 0 || len < sizeof(*req) || nfds != 1 ||
	    !evt_socket_ok(fds[0])) {
		protocol_error(b, s, "bad HELLO");
		return;
	}
	memset(&rep, 0, sizeof(rep));
	rep.version = SWIW_BP_VERSION;
	rep.pid = (uint32_t)getpid();
	rep.port = b->o.port;
	if (req->version != SWIW_BP_VERSION) {
		brk_log(BRK_LOG_WARN,
			"client pid %d speaks protocol version %u, not %u; closed",
			(int)s->pid, req->version, SWIW_BP_VERSION);
		reply(b, s, &rep, sizeof(rep), &req->hdr, EPROTONOSUPPORT);
		brk_session_close(b, s);
		return;
	}
	s->evt = fds[0];
	fds[0] = -1;
	fcntl(s->evt, F_SETFL, fcntl(s->evt, F_GETFL) | O_NONBLOCK);
	if (brk_epoll_add(b, s->evt, EPOLLRDHUP, &s->evt_ev)) {
		close(s->evt);
		s->evt = -1;
		brk_session_close(b, s);
		return;
	}
	brk_log(BRK_LOG_DEBUG, "client %u: pid %d uid %u", s->id, (int)s->pid,
		(unsigned int)s->uid);
	reply(b, s, &rep, sizeof(rep), &req->hdr, 0);
}

/* The QP @qpn if @s owns it; else NULL and *@err ENOENT or EPERM. */
static struct brk_qp *owned_qp(struct brk *b, struct brk_session *s,
			       uint32_t qpn, int *err)
{
	struct brk_qp *q = brk_qp_find(b, qpn);

	if (!q) {
		*err = ENOENT;
		return NULL;
	}
	if (q->s != s) {
		*err = EPERM;
		return NULL;
	}
	return q;
}

static void do_qp(struct brk *b, struct brk_session *s, const void *msg,
		  size_t len)
{
	const struct swiw_bp_hdr *h = msg;
	const struct swiw_bp_qp *rq = msg;
	const struct swiw_bp_expect *ex = msg;
	const struct swiw_bp_psn *ps = msg;
	struct swiw_bp_qp rep;
	struct brk_qp *q;
	int err = 0;

	memset(&rep, 0, sizeof(rep));
	switch (h->type) {
	case SWIW_BP_QP_ALLOC:
		err = qp_alloc(b, s, &rep.qpn);
		if (!err)
			brk_log(BRK_LOG_DEBUG, "client %u: QP %u", s->id,
				rep.qpn);
		reply(b, s, &rep, sizeof(rep), h, err);
		return;
	case SWIW_BP_QP_FREE:
		if (len < sizeof(*rq))
			break;
		q = owned_qp(b, s, rq->qpn, &err);
		if (q) {
			qp_remove(b, q);
			brk_conns_settle(b, rq->qpn);
		}
		reply(b, s, &rep, sizeof(rep.hdr), h, err);
		return;
	case SWIW_BP_UNEXPECT:
		if (len < sizeof(*rq))
			break;
		q = owned_qp(b, s, rq->qpn, &err);
		if (q) {
			q->state = BRK_QP_REGISTERED;
			q->rq_psn = q->sq_psn = 0;
		}
		reply(b, s, &rep, sizeof(rep.hdr), h, err);
		return;
	case SWIW_BP_EXPECT:
		if (len < sizeof(*ex))
			break;
		q = owned_qp(b, s, ex->qpn, &err);
		if (q && (ex->peer_qpn > SWIW_BROKER_QPN_MAX ||
			  ex->rq_psn > SWIW_BROKER_PSN_MASK ||
			  (ex->role != SWIW_BROKER_INITIATOR &&
			   ex->role != SWIW_BROKER_RESPONDER)))
			err = EINVAL;
		if (!err) {
			memcpy(q->peer_gid, ex->peer_gid, 16);
			q->peer_qpn = ex->peer_qpn;
			q->rq_psn = SWIW_BROKER_PSN_KNOWN | ex->rq_psn;
			q->sq_psn = 0;
			q->state = ex->role == SWIW_BROKER_INITIATOR ?
					   BRK_QP_INITIATOR :
					   BRK_QP_RESPONDER;
		}
		reply(b, s, &rep, sizeof(rep.hdr), h, err);
		/* Connections held for it can be settled now. */
		if (!err && !s->dead)
			brk_conns_settle(b, ex->qpn);
		return;
	case SWIW_BP_SQ_PSN:
		if (len < sizeof(*ps))
			break;
		q = owned_qp(b, s, ps->qpn, &err);
		if (q && (ps->sq_psn > SWIW_BROKER_PSN_MASK ||
			  q->state == BRK_QP_REGISTERED))
			err = EINVAL;
		if (!err)
			q->sq_psn = SWIW_BROKER_PSN_KNOWN | ps->sq_psn;
		reply(b, s, &rep, sizeof(rep.hdr), h, err);
		/* A Request that could not be checked yet can be now. */
		if (!err && !s->dead)
			brk_conns_settle(b, ps->qpn);
		return;
	}
	protocol_error(b, s, "short request");
}

static void session_msg(struct brk *b, struct brk_session *s, const void *msg,
			size_t len, int *fds, int nfds)
{
	const struct swiw_bp_hdr *h = msg;

	if (h->type == SWIW_BP_HELLO) {
		do_hello(b, s, msg, len, fds, nfds);
		return;
	}
	if (nfds || s->evt < 0) {
		protocol_error(b, s,
			       nfds ? "descriptor with a request" :
				      "request before HELLO");
		return;
	}
	switch (h->type) {
	case SWIW_BP_QP_ALLOC:
	case SWIW_BP_QP_FREE:
	case SWIW_BP_EXPECT:
	case SWIW_BP_UNEXPECT:
	case SWIW_BP_SQ_PSN:
		do_qp(b, s, msg, len);
		return;
	default:
		protocol_error(b, s, "unknown request");
	}
}

void brk_session_ctl(struct brk *b, struct brk_session *s, uint32_t events)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} ctrl;
	union {
		struct swiw_bp_hdr hdr;
		uint8_t raw[SWIW_BP_MSG_MAX];
	} m;
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr mh;
	struct cmsghdr *cm;
	int fds[4], nfds, i, k, n_in;
	ssize_t n;

	(void)events;
	for (i = 0; i < SESSION_BATCH && !s->dead; i++) {
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = ctrl.buf;
		mh.msg_controllen = sizeof(ctrl.buf);
		n = recvmsg(s->ctl, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			brk_session_close(b, s);
			return;
		}
		nfds = 0;
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level != SOL_SOCKET ||
			    cm->cmsg_type != SCM_RIGHTS)
				continue;
			n_in = (int)((cm->cmsg_len - CMSG_LEN(0)) /
				     sizeof(int));
			for (k = 0; k < n_in; k++) {
				int fd;

				memcpy(&fd, CMSG_DATA(cm) + k * sizeof(int),
				       sizeof(int));
				if (nfds < 4)
					fds[nfds++] = fd;
				else
					close(fd);
			}
		}
		if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
		    (size_t)n < sizeof(m.hdr) || m.hdr.len != n)
			protocol_error(b, s, "malformed message");
		else
			session_msg(b, s, &m, (size_t)n, fds, nfds);
		for (k = 0; k < nfds; k++)
			if (fds[k] >= 0)
				close(fds[k]);
	}
}

void brk_session_evt(struct brk *b, struct brk_session *s, uint32_t events)
{
	if (events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)) {
		brk_session_close(b, s);
		return;
	}
	if (events & EPOLLOUT)
		brk_conns_flush(b, s);
}
