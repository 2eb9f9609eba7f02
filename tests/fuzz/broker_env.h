/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The broker fuzz targets' harness: a whole swiw-broker (struct brk, the
 * daemon's own code) per input, reached through real sockets only, as
 * its clients and peers reach it. Shared by fuzz_broker_conn.c and
 * fuzz_broker_session.c.
 *
 * - The daemon's two listeners are process-wide unix sockets with
 *   abstract names of the kernel's choosing: the "TCP" one is a
 *   SOCK_STREAM socket, which the daemon accepts, reads and hands over as
 *   it does TCP (its peers all have the address ::, which EXPECT can
 *   name);
 * - env_pump() is the daemon's loop without its clocks: the events of
 *   its epoll set, each to brk_dispatch() as the daemon's loop does,
 *   then brk_reap(), until nothing is ready; a set that stays ready for ever
 *   (a level-triggered spin) aborts; after every pump env_check() walks
 *   the daemon's lists and counts;
 * - QP numbers come from __wrap_getrandom (the targets link with
 *   --wrap=getrandom): the run's k-th number is ENV_QPN0 + k, so that
 *   seeds can name them;
 * - a fuzzer run as root connects its clients as another user (seteuid
 *   around connect(), which SO_PEERCRED reports), or as root, whose
 *   sessions the daemon does not count against its limits;
 * - env_fini() shuts the daemon down as it does at exit; then
 *   env_no_fd_left() checks that the run left no descriptor open (leaked
 *   memory is LeakSanitizer's).
 *
 * The daemon's log goes to /dev/null (SWIW_FUZZ_LOG=1 keeps it on stderr);
 * failed checks are printed on the real stderr.
 */
#ifndef SWIW_BROKER_ENV_H
#define SWIW_BROKER_ENV_H

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "swiw_broker_daemon.h"

static FILE *env_stderr;

#define CHECK(x)                                                       \
	do {                                                           \
		if (!(x)) {                                            \
			fprintf(env_stderr ? env_stderr : stderr,      \
				"%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #x);                         \
			abort();                                       \
		}                                                      \
	} while (0)

/* --- QP numbers --------------------------------------------------------- */

#define ENV_QPN0 0x5a0102u /* the first QP number of a run */

static struct {
	unsigned int draws;
	bool fail; /* getrandom fails: the broker has no entropy */
	bool again; /* a 0 first, then each number twice */
} env_rnd;

ssize_t __wrap_getrandom(void *buf, size_t len, unsigned int flags);

static inline uint32_t env_draw(void)
{
	unsigned int k = env_rnd.draws++;

	if (!env_rnd.again)
		return ENV_QPN0 + k;
	return k ? ENV_QPN0 + (k - 1) / 2 : 0;
}

/* qpn_random() takes three octets at a time from the end of the block. */
ssize_t __wrap_getrandom(void *buf, size_t len, unsigned int flags)
{
	uint8_t *p = buf;
	uint32_t v;
	size_t i;

	(void)flags;
	if (env_rnd.fail) {
		errno = EAGAIN;
		return -1;
	}
	memset(buf, 0, len);
	for (i = len; i >= 3; i -= 3) {
		v = env_draw();
		p[i - 3] = (uint8_t)(v >> 16);
		p[i - 2] = (uint8_t)(v >> 8);
		p[i - 1] = (uint8_t)v;
	}
	return (ssize_t)len;
}

/* --- the process's listeners -------------------------------------------- */

struct env_listener {
	int fd;
	struct sockaddr_un sa;
	socklen_t len;
};

static struct env_listener env_unix, env_tcp;

/* Descriptors 0 to ENV_FD_SPAN - 1 open before any run (inherited too). */
#define ENV_FD_SPAN 256
static bool env_fds[ENV_FD_SPAN];

static inline void env_fds_open(bool *open)
{
	struct pollfd p[ENV_FD_SPAN];
	int i;

	for (i = 0; i < ENV_FD_SPAN; i++)
		p[i] = (struct pollfd){ .fd = i };
	CHECK(poll(p, ENV_FD_SPAN, 0) >= 0);
	for (i = 0; i < ENV_FD_SPAN; i++)
		open[i] = !(p[i].revents & POLLNVAL);
}

static inline void env_listen(struct env_listener *l, int type)
{
	struct sockaddr_un any = { .sun_family = AF_UNIX };

	l->fd = socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	CHECK(l->fd >= 0);
	/* The family alone: the kernel picks an abstract name. */
	CHECK(!bind(l->fd, (struct sockaddr *)&any, sizeof(sa_family_t)));
	CHECK(!listen(l->fd, 64));
	l->len = sizeof(l->sa);
	CHECK(!getsockname(l->fd, (struct sockaddr *)&l->sa, &l->len));
}

static inline void env_once(void)
{
	FILE *null;

	if (env_stderr)
		return;
	env_stderr = stderr;
	if (!getenv("SWIW_FUZZ_LOG")) {
		null = fopen("/dev/null", "we");
		CHECK(null);
		stderr = null;
	}
	signal(SIGPIPE, SIG_IGN); /* as the daemon does (signals_open) */
	env_listen(&env_unix, SOCK_SEQPACKET);
	env_listen(&env_tcp, SOCK_STREAM);
	env_fds_open(env_fds);
}

/* --- the daemon --------------------------------------------------------- */

struct env {
	struct brk b;
};

static inline void env_init(struct env *e, const struct brk_opts *o)
{
	struct brk *b = &e->b;

	env_once();
	memset(e, 0, sizeof(*e));
	memset(&env_rnd, 0, sizeof(env_rnd));
	b->o = *o;
	b->unix_fd = env_unix.fd;
	b->tcp_fd = env_tcp.fd;
	b->sig_fd = -1;
	CHECK(!brk_setup(b));
	/* The peer hash's key took draws: QP numbers start at ENV_QPN0. */
	memset(&env_rnd, 0, sizeof(env_rnd));
}

/* Options small enough for an input to reach every limit. */
static inline void env_opts(struct brk_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->port = SWIW_BROKER_PORT_DEFAULT;
	o->request_ms = 5000;
	o->hold_ms = 5000;
	o->hello_ms = 5000;
	o->max_pending = 8;
	o->max_per_peer = 8;
	o->max_qps = 16;
	o->max_session_qps = 8;
	o->max_sessions = 4;
	o->max_user_qps = 16;
	o->max_user_sessions = 4;
}

static inline bool env_conn_queued(const struct brk_conn *c)
{
	const struct brk_conn *q;

	for (q = c->qs->outq; q; q = q->qnext)
		if (q == c)
			return true;
	return false;
}

/* A uid's share agrees with its sessions. */
static inline void env_check_user(struct brk *b, const struct brk_user *u)
{
	const struct brk_session *s;
	unsigned int n = 0, nqps = 0;

	CHECK(u->uid && (u->nsessions || u->nqps));
	for (s = b->sessions; s; s = s->next) {
		if (s->u != u)
			continue;
		CHECK(s->uid == u->uid);
		n++;
		nqps += s->nqps;
	}
	CHECK(n == u->nsessions && n <= b->o.max_user_sessions);
	CHECK(nqps == u->nqps && nqps <= b->o.max_user_qps);
}

/* An address's connections agree with the daemon's list. */
static inline unsigned int env_check_peer(const struct brk_peer *p)
{
	const struct brk_conn *c, *cp = NULL;
	unsigned int n = 0;

	for (c = p->head; c; cp = c, c = c->pnext, n++) {
		CHECK(c->pe == p && c->pprev == cp && !c->dead);
		CHECK(!memcmp(c->peer, p->addr, 16));
	}
	CHECK(cp == p->tail && n == p->n && n);
	return n;
}

/* The daemon's lists agree with each other and with its counts. */
static inline void env_check(struct brk *b)
{
	unsigned int n = 0, nqps = 0, hashed = 0, i, k, users = 0, uqps = 0;
	struct brk_session *s, *sp = NULL;
	struct brk_conn *c, *cp = NULL;
	const struct brk_peer *pe;
	const struct brk_user *u;
	struct brk_qp *q, *qp;

	CHECK(!b->dead_conns && !b->dead_sessions);
	for (s = b->sessions; s; sp = s, s = s->next) {
		CHECK(!s->dead && s->prev == sp && s->ctl >= 0);
		k = 0;
		for (q = s->qps, qp = NULL; q; qp = q, q = q->snext, k++) {
			CHECK(q->s == s && q->sprev == qp);
			CHECK(q->qpn >= SWIW_BROKER_QPN_MIN &&
			      q->qpn <= SWIW_BROKER_QPN_MAX);
			CHECK(q->state <= BRK_QP_HANDED);
			CHECK(brk_qp_find(b, q->qpn) == q);
		}
		CHECK(k == s->nqps && (!s->u || k <= b->o.max_session_qps));
		CHECK(s->evt >= 0 || (!k && !s->outq));
		nqps += k;
		for (c = s->outq; c; c = c->qnext) {
			CHECK(!c->dead && c->state == BRK_C_QUEUED);
			CHECK(c->qs == s && (c->qnext || s->outq_tail == c));
		}
		CHECK(!s->outq == !s->outq_tail);
		/* Root is not counted, everybody else is. */
		CHECK(!s->u == !s->uid);
		if (s->u) {
			users++;
			uqps += k;
		}
		n++;
	}
	CHECK(n == b->nsessions && users <= b->o.max_sessions);
	CHECK(nqps == b->nqps && uqps <= b->o.max_qps);
	for (u = b->users; u; u = u->next)
		env_check_user(b, u);
	for (i = 0; i < b->qp_hash_size; i++)
		for (q = b->qp_hash[i]; q; q = q->hnext)
			hashed++;
	CHECK(hashed == b->nqps);
	n = 0;
	for (c = b->conns; c; cp = c, c = c->next) {
		CHECK(!c->dead && c->prev == cp && c->fd >= 0);
		CHECK(c->state <= BRK_C_QUEUED);
		CHECK(c->got <= sizeof(c->req) && c->need <= sizeof(c->req));
		if (c->state == BRK_C_QUEUED)
			CHECK(c->qs && env_conn_queued(c));
		else
			CHECK(!c->qs);
		CHECK(c->pe);
		n++;
	}
	CHECK(cp == b->conns_tail);
	CHECK(n == b->nconns && n <= b->o.max_pending);
	for (k = 0, i = 0; i < BRK_PEER_HASH; i++)
		for (pe = b->peer_hash[i]; pe; pe = pe->hnext)
			k += env_check_peer(pe);
	CHECK(k == b->nconns);
}

/* Runs the daemon until it has nothing to do (no signals here). */
static inline void env_pump(struct env *e)
{
	struct epoll_event evs[16];
	int n, i, rounds = 0;

	for (;;) {
		n = epoll_wait(e->b.ep, evs, 16, 0);
		CHECK(n >= 0);
		if (!n)
			break;
		/* Inputs are small: this many wake-ups is a spin. */
		CHECK(++rounds < 1000);
		for (i = 0; i < n; i++)
			CHECK(brk_dispatch(&e->b, &evs[i]));
		brk_reap(&e->b);
	}
	env_check(&e->b);
}

/* Every deadline passes: the daemon's timers, as its loop runs them. */
static inline void env_expire(struct env *e)
{
	uint64_t now = brk_now() + 3600 * 1000ull, next = UINT64_MAX;

	brk_timeouts(&e->b, now, &next);
	brk_reap(&e->b);
	env_pump(e);
}

static inline struct brk_session *env_session(struct brk *b, unsigned int id)
{
	struct brk_session *s;

	for (s = b->sessions; s; s = s->next)
		if (s->id == id)
			return s;
	return NULL;
}

static inline struct brk_conn *env_conn(struct brk *b, int fd)
{
	struct brk_conn *c;

	for (c = b->conns; c; c = c->next)
		if (c->fd == fd)
			return c;
	return NULL;
}

/* As shutdown_all() at the daemon's exit; then no descriptor is left. */
static inline void env_fini(struct env *e)
{
	struct brk *b = &e->b;

	brk_close_all(b);
	close(b->ep);
}

/* Call once the harness has closed its own descriptors too. */
static inline void env_no_fd_left(void)
{
	bool open[ENV_FD_SPAN];

	env_fds_open(open);
	CHECK(!memcmp(open, env_fds, sizeof(open)));
}

/* --- clients and peers -------------------------------------------------- */

static inline void env_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Local users of the clients, when the fuzzer runs as root. */
#define ENV_UID_A 65534 /* nobody */
#define ENV_UID_B 65533

/*
 * A connected socket of ours to @l, the daemon run once (it has accepted
 * it, or not). @uid: the user SO_PEERCRED tells the daemon when we are
 * root (effective for the connect() alone), 0 to stay root.
 */
static inline int env_connect_as(struct env *e, const struct env_listener *l,
				 int type, uid_t uid)
{
	int fd = socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	bool as = uid && !geteuid();

	CHECK(fd >= 0);
	CHECK(!as || !seteuid(uid));
	CHECK(!connect(fd, (const struct sockaddr *)&l->sa, l->len));
	CHECK(!as || !seteuid(0));
	env_pump(e);
	return fd;
}

static inline int env_connect(struct env *e, const struct env_listener *l,
			      int type)
{
	return env_connect_as(e, l, type, ENV_UID_A);
}

/* The uid a client connected as (with env_connect_as(@uid)) has. */
static inline uid_t env_uid(uid_t uid)
{
	return geteuid() ? geteuid() : uid;
}

/* sendmsg() with @nfds descriptors; what it returns. */
static inline ssize_t env_send(int fd, const void *buf, size_t len,
			       const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} ctrl;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	CHECK(nfds >= 0 && nfds <= 8);
	if (nfds) {
		memset(&ctrl, 0, sizeof(ctrl));
		mh.msg_control = ctrl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	return sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/*
 * Receives one message and at most one descriptor (*@fd, else -1; more
 * are closed and fail the check). Returns its length, 0 at the end, -1
 * when there is nothing.
 */
static inline ssize_t env_recv(int sock, void *buf, size_t size, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} ctrl;
	struct iovec iov = { .iov_base = buf, .iov_len = size };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctrl.buf,
			     .msg_controllen = sizeof(ctrl.buf) };
	struct cmsghdr *cm;
	int n = 0, k, got[8];
	ssize_t r;

	*fd = -1;
	r = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (r < 0) {
		CHECK(errno == EAGAIN || errno == ECONNRESET);
		return errno == EAGAIN ? -1 : 0;
	}
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		CHECK(cm->cmsg_level == SOL_SOCKET &&
		      cm->cmsg_type == SCM_RIGHTS);
		k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		CHECK(k > 0 && n + k <= 8);
		memcpy(got + n, CMSG_DATA(cm), sizeof(int) * (size_t)k);
		n += k;
	}
	CHECK(!(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)));
	CHECK(n <= 1);
	if (n)
		*fd = got[0];
	return r;
}

/* A request and its reply (the daemon runs in between); the status or -1. */
static inline int env_request(struct env *e, int ctl, void *msg, size_t len,
			      const int *fds, int nfds, void *rep,
			      size_t rep_len)
{
	struct swiw_bp_hdr *h = msg;
	uint8_t buf[SWIW_BP_MSG_MAX];
	int fd;
	ssize_t n;

	h->len = (uint16_t)len;
	if (env_send(ctl, msg, len, fds, nfds) != (ssize_t)len)
		return -1;
	env_pump(e);
	n = env_recv(ctl, buf, sizeof(buf), &fd);
	CHECK(fd < 0);
	if (n <= 0)
		return -1;
	CHECK((size_t)n == rep_len && ((struct swiw_bp_hdr *)buf)->len == n);
	CHECK(((struct swiw_bp_hdr *)buf)->type == h->type &&
	      ((struct swiw_bp_hdr *)buf)->seq == h->seq);
	if (rep)
		memcpy(rep, buf, rep_len);
	return ((struct swiw_bp_hdr *)buf)->status;
}

/* A client that said HELLO; *@evt: our end of its event socket. */
static inline int env_client(struct env *e, int *evt, unsigned int *id)
{
	struct swiw_bp_hello m = { .hdr.type = SWIW_BP_HELLO, .hdr.seq = 1 };
	int ctl, pair[2];

	ctl = env_connect(e, &env_unix, SOCK_SEQPACKET);
	CHECK(e->b.sessions);
	*id = e->b.sessions->id; /* the newest */
	CHECK(!socketpair(AF_UNIX,
			  SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
			  pair));
	m.version = SWIW_BP_VERSION;
	m.pid = (uint32_t)getpid();
	CHECK(!env_request(e, ctl, &m, sizeof(m), &pair[1], 1, NULL,
			   sizeof(m)));
	close(pair[1]);
	*evt = pair[0];
	return ctl;
}

/*
 * A Request such as swiw's initiator sends, its block made by the encoder
 * (whatever its length), with the PSN words @sq_psn and @rq_psn.
 */
static inline size_t env_request_frame(uint8_t *frame, uint32_t src,
				       uint32_t dst, uint64_t nonce,
				       uint32_t sq_psn, uint32_t rq_psn)
{
	struct swiw_broker_pd pd = { .type = SWIW_BROKER_PD_REQUEST,
				     .src_qpn = src,
				     .dst_qpn = dst,
				     .nonce = nonce,
				     .sq_psn = sq_psn,
				     .rq_psn = rq_psn };
	uint8_t tx[SWIW_MPA_FRAME_MAX], pdb[SWIW_MPA_PD_MAX],
		block[SWIW_MPA_PD_MAX];
	struct swiw_mpa_ulp ulp = { .pd = block, .ird = 8, .ord = 8 };
	struct swiw_mpa_cfg cfg;
	struct swiw_mpa m;
	size_t len;

	CHECK(!swiw_broker_pd_encode(&pd, block, sizeof(block), &len));
	ulp.pd_len = (uint16_t)len;
	swiw_mpa_cfg_init(&cfg);
	CHECK(!swiw_mpa_init(&m, SWIW_MPA_INITIATOR, &cfg, tx, sizeof(tx), pdb,
			     sizeof(pdb)));
	CHECK(!swiw_mpa_connect(&m, &ulp));
	CHECK(swiw_mpa_events(&m) & SWIW_MPA_EV_TX);
	memcpy(frame, tx, swiw_mpa_outcome(&m)->tx_len);
	return swiw_mpa_outcome(&m)->tx_len;
}

/*
 * What the daemon sent a peer (@fd): nothing, or one Reply that refuses.
 * A @stranger (whose Request proves no QP's peer) hears what every
 * stranger hears, or what was wrong with the Request itself.
 */
static inline void env_check_reply(int fd, bool stranger)
{
	uint8_t buf[SWIW_MPA_FRAME_MAX + 1];
	const struct mpa_rr *rr = (const struct mpa_rr *)buf;
	struct swiw_broker_pd pd;
	size_t len = 0;
	const u8 *ulp;
	u16 ulp_len;
	ssize_t n;

	while ((n = recv(fd, buf + len, sizeof(buf) - len, MSG_DONTWAIT)) > 0)
		len += (size_t)n;
	if (!len)
		return;
	CHECK(len <= SWIW_MPA_FRAME_MAX);
	CHECK(!swiw_mpa_frame_ulp_pd(buf, len, false, &ulp, &ulp_len));
	CHECK(rr->flags & MPA_RR_FLAG_REJECT);
	if (ulp_len) {
		CHECK(!swiw_broker_pd_decode(ulp, ulp_len, &pd));
		CHECK(pd.type == SWIW_BROKER_PD_REJECT &&
		      pd.reason <= SWIW_BROKER_R_MAX);
		/* Only the log says what a stranger got wrong. */
		CHECK(pd.reason != SWIW_BROKER_R_WRONG_PEER_ADDR &&
		      pd.reason != SWIW_BROKER_R_WRONG_PEER_QPN &&
		      pd.reason != SWIW_BROKER_R_WRONG_PSN);
		if (stranger)
			CHECK(pd.reason == SWIW_BROKER_R_NOT_READY ||
			      pd.reason == SWIW_BROKER_R_BAD_PD ||
			      pd.reason == SWIW_BROKER_R_VERSION);
	}
}

#endif /* SWIW_BROKER_ENV_H */
