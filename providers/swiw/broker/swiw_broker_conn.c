// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Incoming TCP connections: reading the MPA Request (and not one byte
 * more), checking it against the QP it names, then handing the socket to
 * the QP's owner or refusing it.
 *
 * Every connection is bounded: request_ms to deliver a whole Request,
 * counted from accept and not extended by progress (a slowloris gains
 * nothing by trickling); hold_ms for a Request that cannot be handed over
 * (yet). At most max_pending connections in all and max_per_peer from one
 * address: beyond either, the oldest one not yet matched (from that
 * address, or of all) makes room, so a flood cannot lock a peer out, it
 * can only race it.
 *
 * A Request that does not prove its peer (an unknown QP number, a QP not
 * in RTR, another address, source QP or PSN) is held to its deadline and
 * answered NOT_READY, whatever was wrong: neither the answer nor its
 * timing tells a stranger which QP numbers exist. Only the log says why.
 */
#include <errno.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "swiw_broker_daemon.h"

static unsigned int peer_slot(const struct brk *b, const uint8_t a[16])
{
	uint64_t lo, hi;

	memcpy(&lo, a, 8);
	memcpy(&hi, a + 8, 8);
	return (unsigned int)(((lo ^ b->peer_key[0]) * 0x9e3779b97f4a7c15ull +
			       (hi ^ b->peer_key[1]) * 0xc2b2ae3d27d4eb4full) >>
			      54) %
	       BRK_PEER_HASH;
}

static struct brk_peer *peer_find(struct brk *b, const uint8_t a[16])
{
	struct brk_peer *p;

	for (p = b->peer_hash[peer_slot(b, a)]; p; p = p->hnext)
		if (!memcmp(p->addr, a, 16))
			return p;
	return NULL;
}

static struct brk_peer *peer_get(struct brk *b, const uint8_t a[16])
{
	struct brk_peer *p = peer_find(b, a);
	unsigned int slot;

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	memcpy(p->addr, a, 16);
	slot = peer_slot(b, a);
	p->hnext = b->peer_hash[slot];
	b->peer_hash[slot] = p;
	return p;
}

static void peer_put(struct brk *b, struct brk_peer *p)
{
	struct brk_peer **pp;

	if (p->n)
		return;
	for (pp = &b->peer_hash[peer_slot(b, p->addr)]; *pp; pp = &(*pp)->hnext)
		if (*pp == p) {
			*pp = p->hnext;
			break;
		}
	free(p);
}

/* Oldest first: held Requests are settled in the order they came. */
static void conn_link(struct brk *b, struct brk_conn *c)
{
	struct brk_peer *p = c->pe;

	c->pnext = NULL;
	c->pprev = p->tail;
	if (p->tail)
		p->tail->pnext = c;
	else
		p->head = c;
	p->tail = c;
	p->n++;
	c->next = NULL;
	c->prev = b->conns_tail;
	if (b->conns_tail)
		b->conns_tail->next = c;
	else
		b->conns = c;
	b->conns_tail = c;
	b->nconns++;
}

static void conn_unlink(struct brk *b, struct brk_conn *c)
{
	struct brk_peer *p = c->pe;

	if (c->pprev)
		c->pprev->pnext = c->pnext;
	else
		p->head = c->pnext;
	if (c->pnext)
		c->pnext->pprev = c->pprev;
	else
		p->tail = c->pprev;
	p->n--;
	peer_put(b, p);
	c->pe = NULL;
	/* c->next stays: a walk that saved it goes on from here. */
	if (c->prev)
		c->prev->next = c->next;
	else
		b->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		b->conns_tail = c->prev;
	b->nconns--;
}

static void outq_remove(struct brk_conn *c)
{
	struct brk_session *s = c->qs;
	struct brk_conn **pp, *last = NULL;

	if (!s)
		return;
	for (pp = &s->outq; *pp; pp = &(*pp)->qnext) {
		if (*pp == c) {
			*pp = c->qnext;
			break;
		}
		last = *pp;
	}
	if (s->outq_tail == c)
		s->outq_tail = last;
	c->qs = NULL;
}

void brk_conn_close(struct brk *b, struct brk_conn *c)
{
	if (c->dead)
		return;
	c->dead = true;
	if (c->state == BRK_C_QUEUED)
		outq_remove(c);
	brk_epoll_del(b, c->fd);
	close(c->fd);
	c->fd = -1;
	conn_unlink(b, c);
	c->qnext = b->dead_conns;
	b->dead_conns = c;
}

static void conn_peer_str(const struct brk_conn *c, char *buf, size_t size)
{
	brk_addr_str(c->peer, buf, size);
}

/* Refuses @c telling it @reason; the log says @why. */
static void conn_reject_why(struct brk *b, struct brk_conn *c,
			    unsigned int reason, unsigned int why)
{
	struct swiw_broker_pd pd = {
		.type = SWIW_BROKER_PD_REJECT,
		.src_qpn = c->pd.dst_qpn,
		.dst_qpn = c->pd.src_qpn,
		.nonce = c->pd.nonce,
		.reason = (uint16_t)reason,
	};
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&c->mpa);
	uint8_t buf[SWIW_BROKER_PD_LEN];
	char peer[64];
	size_t len;

	conn_peer_str(c, peer, sizeof(peer));
	brk_log_peer(BRK_LOG_INFO, "refused %s (QP %u from QP %u): %s", peer,
		     c->pd.dst_qpn, c->pd.src_qpn, swiw_broker_reason_str(why));
	if (swiw_mpa_state(&c->mpa) == SWIW_MPA_S_ULP_DECIDE &&
	    !swiw_broker_pd_encode(&pd, buf, sizeof(buf), &len) &&
	    !swiw_mpa_reject(&c->mpa, buf, (uint16_t)len) &&
	    (swiw_mpa_events(&c->mpa) & SWIW_MPA_EV_TX)) {
		/* A fresh socket's buffer always holds one Reply. */
		if (send(c->fd, c->mpa_tx, o->tx_len,
			 MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
			brk_log(BRK_LOG_DEBUG, "reject to %s not sent: %s",
				peer, strerror(errno));
		shutdown(c->fd, SHUT_WR);
	}
	brk_conn_close(b, c);
}

void brk_conn_reject(struct brk *b, struct brk_conn *c, unsigned int reason)
{
	conn_reject_why(b, c, reason, reason);
}

/*
 * The oldest connection of a list (the address's, or all) that is not
 * matched yet: one still sending its Request first, else a held one.
 */
static struct brk_conn *oldest_unmatched(struct brk_conn *first, bool of_peer)
{
	struct brk_conn *c, *held = NULL;

	for (c = first; c; c = of_peer ? c->pnext : c->next) {
		if (c->state == BRK_C_READ)
			return c;
		if (c->state == BRK_C_HELD && !held)
			held = c;
	}
	return held;
}

/*
 * Makes room for a new connection from @p; false if every one is
 * matched. The caller holds @p (a count of one more) meanwhile.
 */
static bool conn_make_room(struct brk *b, struct brk_peer *p)
{
	bool of_peer = p->n - 1 >= b->o.max_per_peer;
	struct brk_conn *v;
	char peer[64];

	if (!of_peer && b->nconns < b->o.max_pending)
		return true;
	v = oldest_unmatched(of_peer ? p->head : b->conns, of_peer);
	if (!v)
		return false;
	brk_addr_str(v->peer, peer, sizeof(peer));
	brk_log_peer(BRK_LOG_WARN,
		     "%u pending connections (%u from %s): dropped %s's oldest",
		     b->nconns, v->pe->n, peer, peer);
	if (v->state == BRK_C_HELD)
		conn_reject_why(b, v, SWIW_BROKER_R_NOT_READY, v->why);
	else
		brk_conn_close(b, v);
	return true;
}

static void addr_get(const struct sockaddr_storage *ss, struct swiw_bp_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)ss;

		a->addr[10] = a->addr[11] = 0xff;
		memcpy(a->addr + 12, &s->sin_addr, 4);
		a->port = ntohs(s->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)ss;

		memcpy(a->addr, &s->sin6_addr, 16);
		a->port = ntohs(s->sin6_port);
		a->scope_id = s->sin6_scope_id;
	}
}

void brk_tcp_accept(struct brk *b)
{
	struct swiw_mpa_cfg cfg;
	struct sockaddr_storage ss;
	struct brk_conn *c;
	socklen_t sl;
	char peer[64];
	int fd, i, one = 1;
	bool room;

	swiw_mpa_cfg_init(&cfg);
	cfg.request_timeout_ms = b->o.request_ms;
	for (i = 0; i < 64; i++) {
		sl = sizeof(ss);
		fd = accept4(b->tcp_fd, (struct sockaddr *)&ss, &sl,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				brk_log(BRK_LOG_WARN,
					"cannot accept a connection: %s; pausing",
					strerror(errno));
				brk_pause_listeners(b);
			}
			return;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->ev.kind = BRK_CONN;
		c->fd = fd;
		addr_get(&ss, &c->peer_addr);
		memcpy(c->peer, c->peer_addr.addr, 16);
		sl = sizeof(ss);
		if (!getsockname(fd, (struct sockaddr *)&ss, &sl))
			addr_get(&ss, &c->local_addr);
		conn_peer_str(c, peer, sizeof(peer));
		c->pe = peer_get(b, c->peer);
		room = false;
		if (c->pe) {
			c->pe->n++; /* the address stays while room is made */
			room = conn_make_room(b, c->pe);
			c->pe->n--;
		}
		if (!room) {
			brk_log_peer(
				BRK_LOG_WARN,
				"%u pending connections, all matched: %s closed",
				b->nconns, peer);
			if (c->pe)
				peer_put(b, c->pe);
			close(fd);
			free(c);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		swiw_mpa_init(&c->mpa, SWIW_MPA_RESPONDER, &cfg, c->mpa_tx,
			      sizeof(c->mpa_tx), c->mpa_pd, sizeof(c->mpa_pd));
		c->state = BRK_C_READ;
		c->need = sizeof(struct mpa_rr);
		c->deadline = brk_now() + b->o.request_ms;
		if (brk_epoll_add(b, fd, EPOLLIN | EPOLLRDHUP, &c->ev)) {
			peer_put(b, c->pe);
			close(fd);
			free(c);
			continue;
		}
		conn_link(b, c);
		brk_log(BRK_LOG_DEBUG, "connection from %s port %u", peer,
			c->peer_addr.port);
	}
}

/* From here on, wait only for the initiator to give up (FIN or RST). */
static void conn_park(struct brk *b, struct brk_conn *c, uint8_t state,
		      uint64_t deadline)
{
	c->state = state;
	c->deadline = deadline;
	brk_epoll_mod(b, c->fd, EPOLLRDHUP, &c->ev);
}

static void conn_hand_over(struct brk *b, struct brk_conn *c, struct brk_qp *q)
{
	struct brk_session *s = q->s;
	char peer[64];
	int err = EAGAIN;

	q->state = BRK_QP_HANDED;
	if (!s->outq)
		err = brk_session_send_conn(b, s, c);
	if (!err) {
		conn_peer_str(c, peer, sizeof(peer));
		brk_log(BRK_LOG_DEBUG,
			"QP %u: connection from %s QP %u handed to pid %d",
			q->qpn, peer, c->pd.src_qpn, (int)s->pid);
		brk_conn_close(b, c); /* our copy: the client has its own */
		return;
	}
	/* Behind others, or the client is slow: keep the order. */
	conn_park(b, c, BRK_C_QUEUED, brk_now() + b->o.request_ms);
	c->qs = s;
	c->qnext = NULL;
	if (s->outq_tail)
		s->outq_tail->qnext = c;
	else
		s->outq = c;
	s->outq_tail = c;
	if (err == EAGAIN)
		brk_epoll_mod(b, s->evt, EPOLLRDHUP | EPOLLOUT, &s->evt_ev);
	else
		brk_session_close(b, s); /* refuses c with the rest */
}

/*
 * Decides what to do with a Request read whole (or held): hand it over,
 * or hold it. It must name a QP in RTR that expects its address and
 * source QP, and match a PSN the application gave the QP: its send PSN
 * the QP's receive PSN (from RTR), or its receive PSN the QP's send PSN
 * (from RTS). One that proves all that hears at once if the QP cannot
 * take it (ROLE, CONNECTED); anything else waits (see the top).
 */
static void conn_match(struct brk *b, struct brk_conn *c)
{
	struct brk_qp *q = brk_qp_find(b, c->pd.dst_qpn);
	unsigned int why = SWIW_BROKER_R_NONE;
	int psn;

	if (!q)
		why = SWIW_BROKER_R_UNKNOWN_QPN;
	else if (q->state == BRK_QP_REGISTERED)
		why = SWIW_BROKER_R_NOT_READY; /* its owner is not at RTR */
	else if (memcmp(c->peer, q->peer_gid, 16))
		why = SWIW_BROKER_R_WRONG_PEER_ADDR;
	else if (c->pd.src_qpn != q->peer_qpn)
		why = SWIW_BROKER_R_WRONG_PEER_QPN;
	if (!why) {
		psn = swiw_broker_psn_check(&c->pd, q->rq_psn, q->sq_psn);
		if (psn == EACCES)
			why = SWIW_BROKER_R_WRONG_PSN;
		else if (psn == EAGAIN) /* nothing to check it by until RTS */
			why = SWIW_BROKER_R_NOT_READY;
	}
	if (why) {
		c->why = (uint16_t)why;
		if (c->state == BRK_C_READ)
			conn_park(b, c, BRK_C_HELD, brk_now() + b->o.hold_ms);
		return;
	}
	if (q->state == BRK_QP_INITIATOR)
		brk_conn_reject(b, c, SWIW_BROKER_R_ROLE);
	else if (q->state == BRK_QP_HANDED)
		brk_conn_reject(b, c, SWIW_BROKER_R_CONNECTED);
	else
		conn_hand_over(b, c, q);
}

static void conn_request(struct brk *b, struct brk_conn *c)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&c->mpa);
	int err;

	err = swiw_broker_pd_decode(o->peer_pd, o->peer_pd_len, &c->pd);
	if (err || c->pd.type != SWIW_BROKER_PD_REQUEST) {
		struct swiw_broker_pd keep = c->pd;

		/* Nothing of it is trusted, but a nonce helps the peer. */
		memset(&c->pd, 0, sizeof(c->pd));
		if (err != EBADMSG)
			c->pd.nonce = keep.nonce;
		brk_conn_reject(b, c,
				err == EPROTONOSUPPORT ? SWIW_BROKER_R_VERSION :
							 SWIW_BROKER_R_BAD_PD);
		return;
	}
	/* The first revision carries no PSNs: nothing proves the peer. */
	if (!c->pd.psns) {
		brk_conn_reject(b, c, SWIW_BROKER_R_VERSION);
		return;
	}
	conn_match(b, c);
}

static void conn_read(struct brk *b, struct brk_conn *c)
{
	char peer[64];
	size_t used;
	ssize_t n;
	uint32_t ev;

	while (c->got < c->need) {
		n = recv(c->fd, c->req + c->got, (size_t)(c->need - c->got),
			 MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			conn_peer_str(c, peer, sizeof(peer));
			brk_log_peer(
				BRK_LOG_INFO,
				"%s closed before its MPA Request was complete",
				peer);
			brk_conn_close(b, c);
			return;
		}
		swiw_mpa_input(&c->mpa, c->req + c->got, (size_t)n, &used);
		c->got += (uint16_t)n;
		ev = swiw_mpa_events(&c->mpa);
		if (ev & SWIW_MPA_EV_CLOSED) {
			conn_peer_str(c, peer, sizeof(peer));
			brk_log_peer(
				BRK_LOG_INFO,
				"%s sent no valid MPA Request (violation %d): closed",
				peer,
				(int)swiw_mpa_outcome(&c->mpa)->violation);
			if (ev & SWIW_MPA_EV_TX)
				send(c->fd, c->mpa_tx,
				     swiw_mpa_outcome(&c->mpa)->tx_len,
				     MSG_DONTWAIT | MSG_NOSIGNAL);
			brk_conn_close(b, c);
			return;
		}
		/*
		 * The header says how much private data follows; the machine
		 * closed on more than MPA allows, and req holds the most.
		 */
		if (c->got == c->need) {
			size_t need = swiw_mpa_rr_need(c->req, c->got);

			if (need > sizeof(c->req)) {
				brk_conn_close(b, c);
				return;
			}
			c->need = (uint16_t)need;
		}
		if (ev & SWIW_MPA_EV_REQUEST) {
			c->need = c->got;
			conn_request(b, c);
			return;
		}
	}
}

void brk_conn_input(struct brk *b, struct brk_conn *c, uint32_t events)
{
	if (c->state == BRK_C_READ && (events & EPOLLIN)) {
		conn_read(b, c);
		return;
	}
	if (events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)) {
		char peer[64];

		conn_peer_str(c, peer, sizeof(peer));
		brk_log_peer(BRK_LOG_INFO, "%s gave up waiting for QP %u", peer,
			     c->pd.dst_qpn);
		brk_conn_close(b, c);
	}
}

void brk_conn_timeouts(struct brk *b, uint64_t now, uint64_t *next)
{
	struct brk_conn *c, *n;
	char peer[64];

	for (c = b->conns; c; c = n) {
		n = c->next;
		if (c->dead)
			continue;
		if (now < c->deadline) {
			if (c->deadline < *next)
				*next = c->deadline;
			continue;
		}
		conn_peer_str(c, peer, sizeof(peer));
		switch (c->state) {
		case BRK_C_READ:
			brk_log_peer(
				BRK_LOG_INFO,
				"%s sent no complete MPA Request in %u ms: closed",
				peer, b->o.request_ms);
			brk_conn_close(b, c);
			break;
		case BRK_C_HELD:
			conn_reject_why(b, c, SWIW_BROKER_R_NOT_READY, c->why);
			break;
		default:
			brk_log(BRK_LOG_WARN,
				"the owner of QP %u takes no connections: refused",
				c->pd.dst_qpn);
			brk_conn_reject(b, c, SWIW_BROKER_R_REFUSED);
			break;
		}
	}
}

void brk_conns_settle(struct brk *b, uint32_t qpn)
{
	struct brk_conn *c, *n;

	/*
	 * Closing a connection may close others (a session dies); unlinked
	 * ones keep their next pointer and are skipped, and nothing is
	 * linked meanwhile (no accept happens here), so the walk sees every
	 * live one.
	 */
	for (c = b->conns; c; c = n) {
		n = c->next;
		if (c->dead || c->pd.dst_qpn != qpn)
			continue;
		if (c->state == BRK_C_HELD)
			conn_match(b, c);
		else if (c->state == BRK_C_QUEUED && !brk_qp_find(b, qpn))
			brk_conn_reject(b, c, SWIW_BROKER_R_UNKNOWN_QPN);
	}
}

void brk_conns_flush(struct brk *b, struct brk_session *s)
{
	struct brk_conn *c;
	int err;

	while ((c = s->outq)) {
		err = brk_session_send_conn(b, s, c);
		if (err == EAGAIN)
			return;
		if (err) {
			brk_session_close(b, s);
			return;
		}
		outq_remove(c);
		c->state = BRK_C_HELD; /* no longer queued */
		brk_conn_close(b, c);
	}
	brk_epoll_mod(b, s->evt, EPOLLRDHUP, &s->evt_ev);
}

void brk_reap(struct brk *b)
{
	struct brk_conn *c;
	struct brk_session *s;

	while ((c = b->dead_conns)) {
		b->dead_conns = c->qnext;
		free(c);
	}
	while ((s = b->dead_sessions)) {
		b->dead_sessions = s->next;
		free(s);
	}
}

bool brk_dispatch(struct brk *b, const struct epoll_event *e)
{
	struct brk_ev *ev = e->data.ptr;
	struct brk_session *s;
	struct brk_conn *c;

	switch (ev->kind) {
	case BRK_UNIX_LISTEN:
		brk_unix_accept(b);
		return true;
	case BRK_TCP_LISTEN:
		brk_tcp_accept(b);
		return true;
	case BRK_SESSION_CTL:
		s = brk_container_of(ev, struct brk_session, ctl_ev);
		if (!s->dead)
			brk_session_ctl(b, s, e->events);
		return true;
	case BRK_SESSION_EVT:
		s = brk_container_of(ev, struct brk_session, evt_ev);
		if (!s->dead)
			brk_session_evt(b, s, e->events);
		return true;
	case BRK_CONN:
		c = brk_container_of(ev, struct brk_conn, ev);
		if (!c->dead)
			brk_conn_input(b, c, e->events);
		return true;
	case BRK_SIGNAL:
		break;
	}
	return false;
}

void brk_close_all(struct brk *b)
{
	while (b->sessions)
		brk_session_close(b, b->sessions);
	while (b->conns)
		brk_conn_close(b, b->conns);
	brk_reap(b);
	brk_qp_table_free(b);
}
