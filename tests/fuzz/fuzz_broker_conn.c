// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target for what swiw-broker reads from any remote peer: the
 * daemon's own code (swiw_broker_conn.c: accept, conn_read's MPA
 * responder machine, swiw_mpa_rr_need() and swiw_broker_pd_decode(),
 * matching, rejecting, handing over) fed a hostile stream in pieces of
 * fuzzer-chosen sizes, one read of the daemon's per piece or more, with
 * the QP it names set up through the local protocol (broker_env.h).
 *
 * Input: three configuration octets, then the peer's stream.
 *   c0  bits 0-1 QP ENV_QPN0: 0 none, 1 registered only, 2 expects the
 *       peer as RESPONDER, 3 as INITIATOR; bit 2 EXPECT names another
 *       address, 3 another peer QPN (than PEER_QPN); bit 4 the owner's
 *       event socket is full until the end; 5 the EXPECT comes after the
 *       stream (Requests are held until then); 6 every deadline passes
 *       at the end; 7 the peer shuts its sending side at the end
 *   c1  bits 0-2 the largest piece (1, 2, 3, 5, 8, 20, 64, 512 octets),
 *       bits 3-7 the seed of the piece sizes
 *   c2  bits 0-1 then the owner: 1 frees the QP, 2 closes its session,
 *       3 UNEXPECTs it; bit 2 a second peer sends the same stream after
 *       the first; bit 3 one pending connection per address at most, 6
 *       in all; bit 4 the owner gives the QP's send PSN (SQ_PSN,
 *       PEER_RQ_PSN) after EXPECT; 5 EXPECT names another receive PSN
 *       (than PEER_SQ_PSN)
 *
 * Invariants, besides the harness's (abort on violation):
 * - the daemon takes the Request and not one octet more: while it holds
 *   a connection, what it read is a prefix of the stream, what it did
 *   not read is still in the socket, and what it waits for is what the
 *   header says the Request needs, never what it already has;
 * - a connection held or queued holds one whole Request;
 * - a stranger (no QP, a QP not at RTR, another address or peer QPN)
 *   whose Request is whole and well-formed is held, not refused, and is
 *   refused NOT_READY, BAD_PD or VERSION, like any other stranger;
 * - a CONN carries a whole Request that the wire core accepts, naming
 *   the QP and its expected peer QPN, with PSNs the QP's pass, and the
 *   socket with every octet the peer sent after the Request, unread;
 * - a peer hears at most one MPA Reply, with R set, and when it carries
 *   private data, a swiw Reject block that names no logged-only reason.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker_env.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The QP Requests come from, and its PSNs (the seeds'). */
#define PEER_QPN 0x00c0deu
#define PEER_SQ_PSN 0x10u
#define PEER_RQ_PSN 0x20u
#define NPEERS 2

struct peer {
	int fd; /* ours */
	int dfd; /* the daemon's end while it holds it, else -1 */
	size_t sent;
};

struct run {
	struct env e;
	const uint8_t *stream;
	size_t len;
	uint8_t c0, c1, c2;
	uint32_t rng;
	int ctl, evt; /* the QP owner's sockets, -1: none */
	unsigned int sid;
	struct peer p[NPEERS];
	unsigned int conns; /* CONN messages received */
};

static size_t piece(struct run *r)
{
	static const uint16_t max[8] = { 1, 2, 3, 5, 8, 20, 64, 512 };

	r->rng = r->rng * 1103515245u + 12345u;
	return 1 + (r->rng >> 16) % max[r->c1 & 7];
}

/* What the daemon holds of @p agrees with what @p sent. */
static void check_peer(struct run *r, struct peer *p)
{
	struct brk_conn *c = p->dfd >= 0 ? env_conn(&r->e.b, p->dfd) : NULL;
	int unread = -1;

	if (!c) {
		p->dfd = -1; /* gone, and its number may come back */
		return;
	}
	CHECK(!ioctl(c->fd, FIONREAD, &unread) && unread >= 0);
	CHECK(c->got + (size_t)unread == p->sent);
	CHECK(!memcmp(c->req, r->stream, c->got));
	if (c->state == BRK_C_READ) {
		CHECK(c->got < c->need);
		CHECK(c->need == swiw_mpa_rr_need(c->req, c->got));
		CHECK(swiw_mpa_state(&c->mpa) == SWIW_MPA_S_AWAIT_REQUEST);
		return;
	}
	CHECK(c->got >= sizeof(struct mpa_rr));
	CHECK(c->got == c->need && c->got == swiw_mpa_rr_need(c->req, c->got));
	CHECK(swiw_mpa_state(&c->mpa) == SWIW_MPA_S_ULP_DECIDE);
	CHECK(c->pd.type == SWIW_BROKER_PD_REQUEST && c->pd.psns);
}

/* Whoever sends the stream proves no QP's peer. */
static bool stranger(const struct run *r)
{
	return (r->c0 & 3) < 2 || (r->c0 & 12);
}

/*
 * Whether the stream starts with a whole Request the daemon cannot refuse
 * for its form: the wire core accepts it, with a swiw Request block of
 * the current revision.
 */
static bool well_formed(const struct run *r)
{
	uint8_t tx[SWIW_MPA_FRAME_MAX], pdb[SWIW_MPA_PD_MAX];
	union {
		uint8_t b[SWIW_MPA_FRAME_MAX];
		struct mpa_rr rr; /* rr_need() reads it as one */
	} f;
	struct swiw_broker_pd pd;
	struct swiw_mpa_cfg cfg;
	struct swiw_mpa mpa;
	size_t need, used;

	if (r->len < sizeof(f.rr))
		return false;
	memcpy(f.b, r->stream, sizeof(f.rr));
	need = swiw_mpa_rr_need(f.b, sizeof(f.rr));
	if (need > sizeof(f.b) || r->len < need)
		return false;
	memcpy(f.b, r->stream, need);
	swiw_mpa_cfg_init(&cfg);
	CHECK(!swiw_mpa_init(&mpa, SWIW_MPA_RESPONDER, &cfg, tx, sizeof(tx),
			     pdb, sizeof(pdb)));
	CHECK(!swiw_mpa_input(&mpa, f.b, need, &used));
	if (!(swiw_mpa_events(&mpa) & SWIW_MPA_EV_REQUEST))
		return false;
	return !swiw_broker_pd_decode(swiw_mpa_outcome(&mpa)->peer_pd,
				      swiw_mpa_outcome(&mpa)->peer_pd_len,
				      &pd) &&
	       pd.type == SWIW_BROKER_PD_REQUEST && pd.psns;
}

static void pump(struct run *r)
{
	unsigned int i;

	env_pump(&r->e);
	for (i = 0; i < NPEERS; i++)
		check_peer(r, &r->p[i]);
}

static void peer_stream(struct run *r, struct peer *p)
{
	struct brk_conn *c;
	size_t off = 0, n;
	bool accepted;
	unsigned int i;
	ssize_t w;

	p->fd = env_connect(&r->e, &env_tcp, SOCK_STREAM);
	/* Ours is the newest, unless it was refused (max_pending). */
	c = r->e.b.conns_tail;
	for (i = 0; c && i < NPEERS; i++)
		if (&r->p[i] != p && r->p[i].dfd == c->fd)
			c = NULL;
	p->dfd = c ? c->fd : -1;
	accepted = c;
	pump(r);
	while (off < r->len) {
		n = piece(r);
		if (n > r->len - off)
			n = r->len - off;
		w = send(p->fd, r->stream + off, n,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w <= 0)
			break; /* closed by the daemon */
		off += (size_t)w;
		p->sent += (size_t)w;
		pump(r);
	}
	/* Neither the answer nor its timing tells a stranger anything. */
	if (accepted && stranger(r) && well_formed(r)) {
		c = p->dfd >= 0 ? env_conn(&r->e.b, p->dfd) : NULL;
		CHECK(c && c->state == BRK_C_HELD);
	}
}

static int qp_msg(struct run *r, uint16_t type)
{
	struct swiw_bp_qp m = { .hdr.type = type, .hdr.seq = type };

	m.qpn = ENV_QPN0;
	return env_request(&r->e, r->ctl, &m, sizeof(m), NULL, 0, NULL,
			   sizeof(m.hdr));
}

static void expect(struct run *r)
{
	struct swiw_bp_expect m = { .hdr.type = SWIW_BP_EXPECT };
	struct swiw_bp_psn ps = { .hdr.type = SWIW_BP_SQ_PSN };
	unsigned int role = r->c0 & 3;

	if (role < 2 || r->ctl < 0)
		return;
	m.qpn = ENV_QPN0;
	m.peer_qpn = r->c0 & 8 ? PEER_QPN + 1 : PEER_QPN;
	m.peer_gid[15] = r->c0 & 4 ? 1 : 0; /* the peers are all :: */
	m.role = role == 2 ? SWIW_BROKER_RESPONDER : SWIW_BROKER_INITIATOR;
	m.rq_psn = r->c2 & 32 ? PEER_SQ_PSN + 1 : PEER_SQ_PSN;
	CHECK(env_request(&r->e, r->ctl, &m, sizeof(m), NULL, 0, NULL,
			  sizeof(m.hdr)) == 0);
	if (!(r->c2 & 16))
		return;
	ps.qpn = ENV_QPN0;
	ps.sq_psn = PEER_RQ_PSN;
	CHECK(env_request(&r->e, r->ctl, &ps, sizeof(ps), NULL, 0, NULL,
			  sizeof(ps.hdr)) == 0);
}

static void owner_setup(struct run *r)
{
	struct swiw_bp_qp m = { .hdr.type = SWIW_BP_QP_ALLOC, .hdr.seq = 2 },
			  rep;
	struct brk_session *s;
	uint8_t junk[SWIW_BP_MSG_MAX] = { 0 };

	r->ctl = r->evt = -1;
	if (!(r->c0 & 3))
		return;
	r->ctl = env_client(&r->e, &r->evt, &r->sid);
	CHECK(env_request(&r->e, r->ctl, &m, sizeof(m.hdr), NULL, 0, &rep,
			  sizeof(rep)) == 0);
	CHECK(rep.qpn == ENV_QPN0);
	if (!(r->c0 & 32))
		expect(r);
	if (r->c0 & 16) {
		/* What a client that reads no CONN leaves the daemon. */
		s = env_session(&r->e.b, r->sid);
		CHECK(s && s->evt >= 0);
		while (send(s->evt, junk, sizeof(junk),
			    MSG_DONTWAIT | MSG_NOSIGNAL) > 0)
			;
		CHECK(errno == EAGAIN);
	}
}

/* A CONN and its socket, against the stream and the QP's expectation. */
static void check_conn(struct run *r, const struct swiw_bp_conn *m, int fd)
{
	uint8_t tx[SWIW_MPA_FRAME_MAX], pdb[SWIW_MPA_PD_MAX];
	uint8_t rest[4096];
	struct swiw_broker_pd pd;
	struct swiw_mpa_cfg cfg;
	struct swiw_mpa mpa;
	uint32_t rq_psn = SWIW_BROKER_PSN_KNOWN |
			  (r->c2 & 32 ? PEER_SQ_PSN + 1 : PEER_SQ_PSN);
	uint32_t sq_psn = r->c2 & 16 ? SWIW_BROKER_PSN_KNOWN | PEER_RQ_PSN : 0;
	size_t used, tail = 0, i;
	ssize_t n;
	bool ok = false;

	CHECK((r->c0 & 3) == 2 && !(r->c0 & 12));
	CHECK(m->hdr.len == sizeof(*m) && !m->hdr.status);
	CHECK(m->qpn == ENV_QPN0 && m->peer_qpn == PEER_QPN);
	CHECK(m->req_len <= SWIW_BP_REQ_MAX && m->req_len <= r->len);
	CHECK(!memcmp(m->req, r->stream, m->req_len));
	swiw_mpa_cfg_init(&cfg);
	CHECK(!swiw_mpa_init(&mpa, SWIW_MPA_RESPONDER, &cfg, tx, sizeof(tx),
			     pdb, sizeof(pdb)));
	CHECK(!swiw_mpa_input(&mpa, m->req, m->req_len, &used));
	CHECK(used == m->req_len);
	CHECK(swiw_mpa_events(&mpa) == SWIW_MPA_EV_REQUEST);
	CHECK(!swiw_broker_pd_decode(swiw_mpa_outcome(&mpa)->peer_pd,
				     swiw_mpa_outcome(&mpa)->peer_pd_len, &pd));
	CHECK(pd.type == SWIW_BROKER_PD_REQUEST && pd.dst_qpn == m->qpn &&
	      pd.src_qpn == m->peer_qpn);
	/* The PSN rule, against the words the QP had: a late EXPECT may
	 * hand it over before SQ_PSN comes. */
	CHECK(!swiw_broker_psn_check(&pd, rq_psn, sq_psn) ||
	      ((r->c0 & 32) && !swiw_broker_psn_check(&pd, rq_psn, 0)));
	CHECK(m->nonce_hi == (uint32_t)(pd.nonce >> 32) &&
	      m->nonce_lo == (uint32_t)pd.nonce);
	while ((n = recv(fd, rest + tail, sizeof(rest) - tail, MSG_DONTWAIT)) >
	       0)
		tail += (size_t)n;
	CHECK(tail < sizeof(rest));
	CHECK(!memcmp(rest, r->stream + m->req_len, tail));
	for (i = 0; i < NPEERS; i++)
		ok |= r->p[i].sent == m->req_len + tail;
	CHECK(ok);
	r->conns++;
}

/* Reads the owner's event socket; true if anything was there. */
static bool owner_read(struct run *r)
{
	union {
		struct swiw_bp_conn conn;
		uint8_t raw[SWIW_BP_MSG_MAX];
	} m;
	bool any = false;
	ssize_t n;
	int fd;

	while (r->evt >= 0 && (n = env_recv(r->evt, &m, sizeof(m), &fd))) {
		if (n < 0)
			break;
		any = true;
		if (m.conn.hdr.type != SWIW_BP_CONN) {
			CHECK(fd < 0); /* what owner_setup() filled it with */
			continue;
		}
		CHECK(fd >= 0 && (size_t)n == sizeof(m.conn));
		check_conn(r, &m.conn, fd);
		close(fd);
	}
	return any;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct brk_opts o;
	struct run *r;
	unsigned int i, rounds;

	if (size < 3)
		return 0;
	r = calloc(1, sizeof(*r));
	CHECK(r);
	r->c0 = data[0];
	r->c1 = data[1];
	r->c2 = data[2];
	r->rng = r->c1 >> 3;
	r->stream = data + 3;
	r->len = size - 3;
	for (i = 0; i < NPEERS; i++)
		r->p[i].fd = r->p[i].dfd = -1;
	env_opts(&o);
	if (r->c2 & 8)
		o.max_per_peer = 1;
	if (r->c2 & 64)
		o.max_pending = 1;
	env_init(&r->e, &o);

	owner_setup(r);
	peer_stream(r, &r->p[0]);
	if (r->c2 & 4)
		peer_stream(r, &r->p[1]);
	if (r->c0 & 32)
		expect(r);
	switch (r->ctl >= 0 ? r->c2 & 3 : 0) {
	case 1:
		qp_msg(r, SWIW_BP_QP_FREE);
		break;
	case 2:
		env_close(&r->ctl);
		pump(r);
		break;
	case 3:
		qp_msg(r, SWIW_BP_UNEXPECT);
		break;
	}
	if (r->c0 & 128) {
		for (i = 0; i < NPEERS; i++)
			if (r->p[i].fd >= 0)
				shutdown(r->p[i].fd, SHUT_WR);
		pump(r);
	}
	if (r->c0 & 64) {
		env_expire(&r->e);
		pump(r);
	}
	/* The owner reads its event socket at last: queued CONNs follow. */
	for (rounds = 0; owner_read(r); rounds++) {
		CHECK(rounds < 100);
		pump(r);
	}
	CHECK(r->conns <= 1); /* one connection per QP */

	env_fini(&r->e);
	for (i = 0; i < NPEERS; i++) {
		if (r->p[i].fd >= 0)
			env_check_reply(r->p[i].fd, stranger(r));
		env_close(&r->p[i].fd);
	}
	env_close(&r->ctl);
	env_close(&r->evt);
	env_no_fd_left();
	free(r);
	return 0;
}
