// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target for what swiw-broker reads from any local user: the
 * SOCK_SEQPACKET protocol of swiw_broker_proto.h part 2, through the
 * daemon's own code (swiw_broker_session.c: brk_session_ctl() and what it
 * calls, with QP numbers, hand-overs and timers), from one or two clients
 * over real sockets, messages and descriptors as the input says
 * (broker_env.h).
 *
 * Input: two configuration octets, then records.
 *   c0  bits 0-1 max_session_qps (1, 2, 4, 8); bit 2 max_qps 3 (else
 *       16); 3 getrandom fails; 4 QP numbers are drawn twice, after a 0;
 *       5 two clients (else one); 6 every deadline passes at the end;
 *       7 the first client's event socket is full from its HELLO on
 *   c1  bit 0 the clients close their event sockets at the end, 1 their
 *       control sockets; 2 one session at most; 3 the clients are root
 *       (if the fuzzer is; else the users ENV_UID_A and, with bit 4, the
 *       second ENV_UID_B); 5 max_user_qps 2; 6 max_user_sessions 1
 * A record: an octet c, an octet L, then the message (L octets, L + 256
 * with c bit 6; zeros where the input ends; none if 0).
 *   c   bit 0 set hdr.len to the message's length and, in a HELLO, the
 *       version to SWIW_BP_VERSION; bits 1-3 the descriptors sent with
 *       it: none, an end of a new SOCK_SEQPACKET pair (an event socket),
 *       of a SOCK_STREAM pair, of a SOCK_DGRAM pair, an unconnected
 *       SOCK_SEQPACKET socket, the control socket itself, five event
 *       sockets, a pipe; bit 4 from the second client; 5 the broker runs
 *       after it; 7 first, a peer sends a valid Request (the first two
 *       peers to ENV_QPN0, the next two to ENV_QPN0 + 1, from PEER_QPN
 *       with the PSNs PEER_SQ_PSN and PEER_RQ_PSN)
 *
 * Invariants, besides the harness's (abort on violation):
 * - replies come in order, one for each request that does not end the
 *   session, echoing its type and seq, of the size the type says, with
 *   a status the request can have; none for a message that is not whole
 *   or not one message, short for its type, with descriptors (HELLO:
 *   other than one), or before HELLO was answered 0;
 * - the QP numbers the clients hold, as their replies tell, are those
 *   the daemon holds for them: ALLOC gives a number nobody has (ENOSPC
 *   only past a limit, never to root), FREE takes the client's own,
 *   ENOENT means nobody's, EPERM another's;
 * - a client is refused only past a limit, never root;
 * - the daemon keeps a session exactly until the client reads the end of
 *   its control socket (or closes it, unless it gave it as its event
 *   socket);
 * - a CONN names the QP a peer dialed and carries its Request;
 * - a peer hears at most one MPA Reply, and it refuses.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker_env.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PEER_QPN 0x00c0deu
#define PEER_SQ_PSN 0x10u
#define PEER_RQ_PSN 0x20u
#define NCLIENTS 2
#define NPEERS 4
#define MAX_MSGS 1024
#define MAX_QPNS MAX_MSGS /* a root client has no limit */
#define MSG_BUF 512

enum fd_kind {
	FD_NONE,
	FD_EVT, /* a good event socket */
	FD_STREAM,
	FD_DGRAM,
	FD_UNCONNECTED,
	FD_CTL, /* the client's own control socket */
	FD_EVT5, /* five event sockets: one message cannot hold them */
	FD_PIPE,
};

struct sent {
	uint16_t type;
	uint32_t seq;
	uint32_t qpn; /* the message's, at the QP offset */
	uint32_t version; /* HELLO's */
	uint8_t kind; /* enum fd_kind */
	bool ends; /* the daemon must end the session, not answer */
	int mine; /* FD_EVT: our end of it */
};

struct client {
	uid_t uid; /* as the daemon sees it */
	int ctl; /* ours; -1 once we closed it */
	int evt; /* our end of the event socket HELLO gave, -1: none */
	unsigned int id; /* the daemon's session, 0: refused */
	bool gone; /* we read the end of ctl */
	bool hello; /* HELLO answered 0 */
	struct sent *q;
	unsigned int qh, qt;
	uint32_t qpns[MAX_QPNS];
	unsigned int nqpns;
};

struct run {
	struct env e;
	uint8_t c0, c1;
	unsigned int nclients;
	struct client cl[NCLIENTS];
	int peers[NPEERS];
	unsigned int npeers;
	uint8_t req[2][SWIW_MPA_FRAME_MAX]; /* for ENV_QPN0 and the next */
	size_t req_len[2];
	int last; /* the client the unanswered messages went to, -1: none */
};

/* Who holds @qpn: a client's index, or -1. */
static int owner(const struct run *r, uint32_t qpn)
{
	unsigned int i, k;

	for (i = 0; i < r->nclients; i++)
		for (k = 0; k < r->cl[i].nqpns; k++)
			if (r->cl[i].qpns[k] == qpn)
				return (int)i;
	return -1;
}

/* QP numbers held by the clients of @uid. */
static unsigned int qpns_of(const struct run *r, uid_t uid)
{
	unsigned int i, n = 0;

	for (i = 0; i < r->nclients; i++)
		if (r->cl[i].uid == uid)
			n += r->cl[i].nqpns;
	return n;
}

static unsigned int total_qpns(const struct run *r)
{
	unsigned int i, n = 0;

	for (i = 0; i < r->nclients; i++)
		n += r->cl[i].nqpns;
	return n;
}

static void forget_qpn(struct client *c, uint32_t qpn)
{
	unsigned int k;

	for (k = 0; k < c->nqpns; k++) {
		if (c->qpns[k] == qpn) {
			c->qpns[k] = c->qpns[--c->nqpns];
			return;
		}
	}
	CHECK(0);
}

/* A QP request's status, against who holds the QP. */
static void check_qp_status(struct run *r, struct client *c,
			    const struct sent *m, int status)
{
	int who = owner(r, m->qpn), me = (int)(c - r->cl);

	switch (status) {
	case 0:
		CHECK(who == me);
		if (m->type == SWIW_BP_QP_FREE)
			forget_qpn(c, m->qpn);
		break;
	case ENOENT:
		CHECK(who < 0);
		break;
	case EPERM:
		CHECK(who >= 0 && who != me);
		break;
	case EINVAL:
		CHECK((m->type == SWIW_BP_EXPECT ||
		       m->type == SWIW_BP_SQ_PSN) &&
		      who == me);
		break;
	default:
		CHECK(0);
	}
}

static void fill_evt(struct run *r, struct client *c)
{
	struct brk_session *s = env_session(&r->e.b, c->id);
	uint8_t junk[SWIW_BP_MSG_MAX] = { 0 };

	/* What a client that reads no CONN leaves the daemon. */
	if (!s || s->evt < 0)
		return;
	while (send(s->evt, junk, sizeof(junk), MSG_DONTWAIT | MSG_NOSIGNAL) >
	       0)
		;
}

static void answered(struct run *r, struct client *c, const uint8_t *buf,
		     ssize_t n)
{
	const struct swiw_bp_hdr *h = (const void *)buf;
	const struct swiw_bp_hello *hello = (const void *)buf;
	const struct swiw_bp_qp *qp = (const void *)buf;
	struct sent *m;

	CHECK(c->qh < c->qt);
	m = &c->q[c->qh++];
	CHECK(!m->ends);
	CHECK((size_t)n >= sizeof(*h) && h->len == n);
	CHECK(h->type == m->type && h->seq == m->seq && !h->rsvd);
	if (m->type != SWIW_BP_HELLO)
		CHECK(c->hello);
	switch (m->type) {
	case SWIW_BP_HELLO:
		CHECK(!c->hello && n == sizeof(*hello));
		CHECK(hello->version == SWIW_BP_VERSION &&
		      hello->pid == (uint32_t)getpid() &&
		      hello->port == r->e.b.o.port);
		/* An AF_UNIX SOCK_SEQPACKET socket, and only that. */
		CHECK(m->kind == FD_EVT || m->kind == FD_UNCONNECTED ||
		      m->kind == FD_CTL);
		if (h->status == EPROTONOSUPPORT) {
			CHECK(m->version != SWIW_BP_VERSION);
			break;
		}
		CHECK(h->status == 0 && m->version == SWIW_BP_VERSION);
		c->hello = true;
		c->evt = m->mine;
		m->mine = -1;
		if (c == &r->cl[0] && (r->c0 & 128))
			fill_evt(r, c);
		break;
	case SWIW_BP_QP_ALLOC:
		CHECK(n == sizeof(*qp));
		if (h->status == ENOSPC) {
			CHECK(c->uid);
			CHECK(c->nqpns >= r->e.b.o.max_session_qps ||
			      total_qpns(r) >= r->e.b.o.max_qps ||
			      qpns_of(r, c->uid) >= r->e.b.o.max_user_qps);
			break;
		}
		if (h->status == EAGAIN) {
			CHECK(env_rnd.fail);
			break;
		}
		CHECK(h->status == 0 && !env_rnd.fail);
		CHECK(qp->qpn >= SWIW_BROKER_QPN_MIN &&
		      qp->qpn <= SWIW_BROKER_QPN_MAX);
		CHECK(owner(r, qp->qpn) < 0);
		/* Within every limit, unless root. */
		CHECK(!c->uid || (c->nqpns < r->e.b.o.max_session_qps &&
				  total_qpns(r) < r->e.b.o.max_qps &&
				  qpns_of(r, c->uid) < r->e.b.o.max_user_qps));
		CHECK(c->nqpns < MAX_QPNS);
		c->qpns[c->nqpns++] = qp->qpn;
		break;
	case SWIW_BP_QP_FREE:
	case SWIW_BP_UNEXPECT:
	case SWIW_BP_EXPECT:
	case SWIW_BP_SQ_PSN:
		CHECK(n == sizeof(*h));
		check_qp_status(r, c, m, h->status);
		break;
	default:
		/* A type added later: a reply of its own, or the header. */
		break;
	}
	env_close(&m->mine);
}

/* A CONN on a client's event socket (or what fill_evt() put there). */
static void conn_msg(struct run *r, const uint8_t *buf, ssize_t n, int fd)
{
	const struct swiw_bp_conn *m = (const void *)buf;
	uint32_t k;

	if (fd < 0) {
		CHECK(n == SWIW_BP_MSG_MAX && !m->hdr.type);
		return;
	}
	CHECK(n == sizeof(*m) && m->hdr.type == SWIW_BP_CONN &&
	      m->hdr.len == n);
	CHECK(m->qpn - ENV_QPN0 < 2 && m->peer_qpn == PEER_QPN);
	k = m->qpn - ENV_QPN0;
	CHECK(m->req_len == r->req_len[k] &&
	      !memcmp(m->req, r->req[k], r->req_len[k]));
	close(fd);
}

static void drain_evt(struct run *r, struct client *c)
{
	uint8_t buf[MSG_BUF];
	ssize_t n;
	int fd;

	while (c->evt >= 0 && (n = env_recv(c->evt, buf, sizeof(buf), &fd)) > 0)
		conn_msg(r, buf, n, fd);
}

/* Reads what the daemon said to @c, then compares it with the daemon. */
static void drain(struct run *r, struct client *c)
{
	struct brk_session *s;
	uint8_t buf[MSG_BUF];
	unsigned int k;
	ssize_t n;
	int fd;

	while (c->ctl >= 0 && !c->gone) {
		n = env_recv(c->ctl, buf, sizeof(buf), &fd);
		CHECK(fd < 0);
		if (n < 0)
			break;
		if (n == 0) {
			c->gone = true;
			c->nqpns = 0;
			break;
		}
		answered(r, c, buf, n);
	}
	if (!(r->c0 & 128) || c != &r->cl[0])
		drain_evt(r, c);
	if (!c->id)
		return;
	s = env_session(&r->e.b, c->id);
	/* Our closed socket ends it, unless the daemon holds it as evt. */
	CHECK(!s == c->gone || (c->ctl < 0 && !c->gone));
	if (!s || c->ctl < 0)
		return;
	CHECK(s->nqps == c->nqpns);
	for (k = 0; k < c->nqpns; k++)
		CHECK(brk_qp_find(&r->e.b, c->qpns[k])->s == s);
}

static void pump(struct run *r)
{
	unsigned int i;

	env_pump(&r->e);
	for (i = 0; i < r->nclients; i++)
		drain(r, &r->cl[i]);
	r->last = -1;
}

/* The descriptors of @kind; *@mine: our end of a good event socket. */
static int make_fds(enum fd_kind kind, int ctl, int *fds, int *mine)
{
	static const int pair_type[] = { [FD_EVT] = SOCK_SEQPACKET,
					 [FD_STREAM] = SOCK_STREAM,
					 [FD_DGRAM] = SOCK_DGRAM };
	int p[2], i;

	*mine = -1;
	switch (kind) {
	case FD_NONE:
		return 0;
	case FD_EVT:
	case FD_STREAM:
	case FD_DGRAM:
		CHECK(!socketpair(AF_UNIX, pair_type[kind] | SOCK_CLOEXEC, 0,
				  p));
		fds[0] = p[1];
		*mine = p[0];
		if (kind != FD_EVT)
			env_close(mine);
		return 1;
	case FD_UNCONNECTED:
		fds[0] = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		CHECK(fds[0] >= 0);
		return 1;
	case FD_CTL:
		fds[0] = dup(ctl);
		CHECK(fds[0] >= 0);
		return 1;
	case FD_EVT5:
		for (i = 0; i < 5; i++) {
			CHECK(!socketpair(AF_UNIX,
					  SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p));
			fds[i] = p[1];
			close(p[0]);
		}
		return 5;
	case FD_PIPE:
		CHECK(!pipe2(p, O_CLOEXEC));
		fds[0] = p[0];
		close(p[1]);
		return 1;
	}
	return 0;
}

/* Client @i connects: refused only past a limit, and never root. */
static void add_client(struct run *r, unsigned int i)
{
	struct client *c = &r->cl[i];
	uid_t uid = r->c1 & 8 ? 0 : i && (r->c1 & 16) ? ENV_UID_B : ENV_UID_A;
	unsigned int k, before = r->e.b.nsessions, mine = 0;
	int sndbuf = 1 << 20;
	bool room;

	c->evt = -1;
	c->q = calloc(MAX_MSGS, sizeof(*c->q));
	CHECK(c->q);
	c->uid = env_uid(uid);
	for (k = 0; k < i; k++)
		mine += r->cl[k].id && r->cl[k].uid == c->uid;
	room = !c->uid || (before < r->e.b.o.max_sessions &&
			   mine < r->e.b.o.max_user_sessions);
	c->ctl = env_connect_as(&r->e, &env_unix, SOCK_SEQPACKET, uid);
	/* Room for more requests than the daemon has for replies: a client
	 * that does not read them can be seen. */
	setsockopt(c->ctl, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	CHECK(room == (r->e.b.nsessions == before + 1));
	if (room) {
		c->id = r->e.b.sessions->id; /* the newest */
		CHECK(r->e.b.sessions->uid == c->uid);
	}
	drain(r, c);
}

/* Peers 0 and 1 dial ENV_QPN0, 2 and 3 the next. */
static void peer_request(struct run *r)
{
	unsigned int k = r->npeers / 2;

	if (r->npeers == NPEERS)
		return;
	r->peers[r->npeers] = env_connect(&r->e, &env_tcp, SOCK_STREAM);
	CHECK(send(r->peers[r->npeers], r->req[k], r->req_len[k],
		   MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)r->req_len[k]);
	r->npeers++;
	pump(r);
}

/* Sends one record's message; false once the input is used up. */
static bool record(struct run *r, const uint8_t **data, size_t *size)
{
	uint8_t msg[MSG_BUF] = { 0 }, ctl;
	struct swiw_bp_hdr *h = (void *)msg;
	struct client *c;
	struct sent *m;
	size_t len, take;
	int fds[5], nfds, k, ci;
	ssize_t w;

	if (*size < 2)
		return false;
	ctl = (*data)[0];
	len = (*data)[1] | (ctl & 64 ? 256u : 0);
	*data += 2;
	*size -= 2;
	take = len < *size ? len : *size;
	memcpy(msg, *data, take);
	*data += take;
	*size -= take;

	if (ctl & 128)
		peer_request(r);
	ci = (ctl & 16) && r->nclients > 1 ? 1 : 0;
	c = &r->cl[ci];
	/* No message (the daemon reads an empty one as the end). */
	if (!len || c->ctl < 0 || c->gone || c->qt == MAX_MSGS) {
		if (ctl & 32)
			pump(r);
		return true;
	}
	/* One client's messages at a time: the daemon's order is ours. */
	if (r->last >= 0 && r->last != ci)
		pump(r);
	if (ctl & 1) {
		if (len >= sizeof(*h))
			h->len = (uint16_t)len;
		if (len >= offsetof(struct swiw_bp_hello, pid) &&
		    h->type == SWIW_BP_HELLO)
			((struct swiw_bp_hello *)msg)->version =
				SWIW_BP_VERSION;
	}
	m = &c->q[c->qt];
	memset(m, 0, sizeof(*m));
	m->kind = (ctl >> 1) & 7;
	nfds = make_fds(m->kind, c->ctl, fds, &m->mine);
	if (len >= sizeof(*h)) {
		m->type = h->type;
		m->seq = h->seq;
	}
	if (len >= offsetof(struct swiw_bp_qp, rsvd))
		m->qpn = ((struct swiw_bp_qp *)msg)->qpn;
	if (len >= offsetof(struct swiw_bp_hello, pid))
		m->version = ((struct swiw_bp_hello *)msg)->version;
	/* What ends a session without a reply, whatever the daemon knows. */
	m->ends = len < sizeof(*h) || h->len != len || len > SWIW_BP_MSG_MAX ||
		  m->kind == FD_EVT5 || (m->type != SWIW_BP_HELLO && nfds) ||
		  (m->type == SWIW_BP_HELLO && nfds != 1) ||
		  (m->type == SWIW_BP_HELLO &&
		   len < sizeof(struct swiw_bp_hello));
	if ((m->type == SWIW_BP_QP_FREE || m->type == SWIW_BP_UNEXPECT) &&
	    len < sizeof(struct swiw_bp_qp))
		m->ends = true;
	if (m->type == SWIW_BP_EXPECT && len < sizeof(struct swiw_bp_expect))
		m->ends = true;
	if (m->type == SWIW_BP_SQ_PSN && len < sizeof(struct swiw_bp_psn))
		m->ends = true;
	w = env_send(c->ctl, msg, len, fds, nfds);
	if (w < 0 && errno == EAGAIN) {
		pump(r);
		w = env_send(c->ctl, msg, len, fds, nfds);
	}
	for (k = 0; k < nfds; k++)
		close(fds[k]);
	if (w == (ssize_t)len) {
		c->qt++;
		r->last = ci;
	} else {
		env_close(&m->mine);
	}
	if (ctl & 32)
		pump(r);
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned int session_qps[4] = { 1, 2, 4, 8 };
	struct brk_opts o;
	struct client *c;
	struct run *r;
	unsigned int i, k;

	if (size < 2)
		return 0;
	r = calloc(1, sizeof(*r));
	CHECK(r);
	r->c0 = data[0];
	r->c1 = data[1];
	data += 2;
	size -= 2;
	r->last = -1;
	env_opts(&o);
	o.max_session_qps = session_qps[r->c0 & 3];
	if (r->c0 & 4)
		o.max_qps = 3;
	if (r->c1 & 4)
		o.max_sessions = 1;
	if (r->c1 & 32)
		o.max_user_qps = 2;
	if (r->c1 & 64)
		o.max_user_sessions = 1;
	env_init(&r->e, &o);
	env_rnd.fail = r->c0 & 8;
	env_rnd.again = r->c0 & 16;
	for (i = 0; i < 2; i++)
		r->req_len[i] = env_request_frame(
			r->req[i], PEER_QPN, ENV_QPN0 + i, 0x0123456789ull + i,
			SWIW_BROKER_PSN_KNOWN | PEER_SQ_PSN,
			SWIW_BROKER_PSN_KNOWN | PEER_RQ_PSN);

	r->nclients = r->c0 & 32 ? 2 : 1;
	for (i = 0; i < r->nclients; i++)
		add_client(r, i);
	while (record(r, &data, &size))
		;
	pump(r);

	if (r->c1 & 1) {
		for (i = 0; i < r->nclients; i++)
			env_close(&r->cl[i].evt);
		pump(r);
	}
	if (r->c1 & 2) {
		for (i = 0; i < r->nclients; i++) {
			env_close(&r->cl[i].ctl);
			r->cl[i].nqpns = 0;
		}
		pump(r);
	}
	if (r->c0 & 64)
		env_expire(&r->e);
	/* The full event socket is read at last: queued CONNs follow. */
	r->c0 &= (uint8_t)~128;
	for (i = 0; i < 3; i++)
		pump(r);

	env_fini(&r->e);
	for (i = 0; i < r->npeers; i++) {
		env_check_reply(r->peers[i], false);
		close(r->peers[i]);
	}
	for (i = 0; i < r->nclients; i++) {
		c = &r->cl[i];
		for (k = c->qh; k < c->qt; k++)
			env_close(&c->q[k].mine);
		env_close(&c->ctl);
		env_close(&c->evt);
		free(c->q);
	}
	env_no_fd_left();
	free(r);
	return 0;
}
