// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target for MPA connection setup (swiw_mpa.c).
 *
 * Input: 6 configuration bytes, then a program.
 *   c0  bit 0 role (1 responder), bits 1-2 p2p, 3 crc_required,
 *       4 crc_strict, 5 markers_wanted, 6 markers_can_send, 7 relaxed
 *   c1  bit 0 rev 1 (else 2), bits 1-3 rtr_offer, bits 4-6 preference
 *       list, bit 7 wait_first_fpdu
 *   c2  bits 0-1 v1_rtr, 2-4 IRD, 5-7 ORD (from a table, 0x3FFF too)
 *   c3  the ULP's private data length
 *   c4  bits 0-2 ird_max; bit 7: pair mode
 *   c5  pair mode: the other side's c0 (its c1/c2 are c1/c2 rotated)
 * Single mode: one machine against the peer bytes in the program; an
 * initiator connects first. Each program byte b is
 *   b < 0x80  feed the next b + 1 bytes (or what is left) as peer input
 *   b >= 0x80 a local call chosen by bits 3-6, argument in bits 0-2:
 *             accept, reject, timeout, rtr_received, rtr_sent, connect,
 *             empty input, feed the whole rest.
 * Pair mode: an initiator and a responder talk; program bytes choose
 * split points, corruption of one byte in flight, and local decisions.
 *
 * Invariants (abort on violation): input never takes more than given;
 * frames fit tx_buf and their PD_Length matches; peer private data stays
 * in pd_buf; a call that returns -EINVAL changes nothing; a terminal
 * state (ESTABLISHED, CLOSED) never changes and raises nothing; input
 * takes nothing once FPDUs flow; ESTABLISHED has no error, CLOSED has
 * one; two machines that both get established agree.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "swiw_mpa.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                 \
	do {                     \
		if (!(x))        \
			abort(); \
	} while (0)

static const u16 ird_ord_table[8] = { 0, 1, 2, 4, 8, 16, 128, 0x3fff };
static const u16 ird_max_table[8] = { 0, 1, 2, 8, 32, 128, 1024, 0x3fff };
static const u8 pref_table[8][3] = {
	{ 2, 3, 1 }, { 3, 2, 1 }, { 1, 2, 3 }, { 2, 1, 3 },
	{ 3, 0, 0 }, { 1, 0, 0 }, { 2, 0, 3 }, { 0, 0, 0 },
};

struct prog {
	const u8 *p;
	size_t n;
};

static int next(struct prog *g)
{
	if (!g->n)
		return -1;
	g->n--;
	return *g->p++;
}

/* One end, with buffers of exactly the documented size (ASan bounds). */
struct end {
	struct swiw_mpa m;
	u8 *tx;
	u8 *pd;
	u32 ev;
	bool saw_closed;
};

static void cfg_from(struct swiw_mpa_cfg *c, u8 c0, u8 c1, u8 c2, u8 c4)
{
	swiw_mpa_cfg_init(c);
	c->p2p = (c0 >> 1) & 3;
	if (c->p2p > SWIW_MPA_P2P_REQUIRED)
		c->p2p = SWIW_MPA_P2P_ON;
	c->crc_required = c0 & 0x08;
	c->crc_strict = c0 & 0x10;
	c->markers_wanted = c0 & 0x20;
	c->markers_can_send = c0 & 0x40;
	c->relaxed_ird = c0 & 0x80;
	c->rev = (c1 & 1) ? MPA_REV_1 : MPA_REV_2;
	c->rtr_offer = (u8)(((c1 >> 1) & 7) << 1);
	memcpy(c->rtr_pref, pref_table[(c1 >> 4) & 7], 3);
	c->wait_first_fpdu = c1 & 0x80;
	c->v1_rtr = c2 & 3;
	c->ird_max = ird_max_table[c4 & 7];
}

static void ulp_from(struct swiw_mpa_ulp *u, const u8 *pd, u8 c2, u8 c3)
{
	u->pd = pd;
	u->pd_len = c3;
	u->ird = ird_ord_table[(c2 >> 2) & 7];
	u->ord = ird_ord_table[(c2 >> 5) & 7];
}

static bool terminal(const struct swiw_mpa *m)
{
	return m->state == SWIW_MPA_S_ESTABLISHED ||
	       m->state == SWIW_MPA_S_CLOSED;
}

/* Checks what must hold after every call; @before is the prior copy. */
static void check(struct end *e, const struct swiw_mpa *before, int rc)
{
	const struct swiw_mpa *m = &e->m;
	const struct swiw_mpa_outcome *o = &m->out;
	u32 ev = swiw_mpa_events(&e->m);

	CHECK(rc == 0 || rc == -EINVAL);
	if (rc || terminal(before)) {
		/* Refused calls and finished machines change nothing. */
		CHECK(ev == 0);
		CHECK(!memcmp(before, m, sizeof(*m)));
		return;
	}
	CHECK(m->state <= SWIW_MPA_S_CLOSED);
	CHECK(o->peer_pd == e->pd);
	CHECK(o->peer_pd_len <= SWIW_MPA_PD_MAX);
	CHECK(o->tx_len <= SWIW_MPA_FRAME_MAX);
	if (ev & SWIW_MPA_EV_TX) {
		CHECK(o->tx_len >= sizeof(struct mpa_rr));
		CHECK(swiw_get_be16(e->tx + 18) + sizeof(struct mpa_rr) ==
		      o->tx_len);
		CHECK(!memcmp(e->tx, e->m.role ? MPA_KEY_REP : MPA_KEY_REQ,
			      MPA_KEY_LEN));
		CHECK(!(e->tx[16] & MPA_RR_FLAG_RESERVED));
	}
	if (ev & SWIW_MPA_EV_CLOSED) {
		CHECK(m->state == SWIW_MPA_S_CLOSED);
		e->saw_closed = true;
	}
	if (ev & SWIW_MPA_EV_TX_FPDU)
		CHECK(m->state == SWIW_MPA_S_ESTABLISHED);
	if (ev & SWIW_MPA_EV_SEND_RTR)
		CHECK(m->state == SWIW_MPA_S_RTR_PENDING && o->rtr);
	if (m->state == SWIW_MPA_S_ESTABLISHED) {
		CHECK(o->error == 0 && o->violation == SWIW_V_NONE);
		CHECK(o->p2p == (o->rtr != SWIW_MPA_RTR_NONE));
	}
	if (m->state == SWIW_MPA_S_CLOSED) {
		CHECK(e->saw_closed);
		CHECK(o->error == -ECONNREFUSED || o->error == -ETIMEDOUT ||
		      o->error == -EPROTO);
		CHECK(o->error != -EPROTO || o->violation != SWIW_V_NONE);
		CHECK(o->violation < SWIW_V_COUNT);
	}
	e->ev |= ev;
}

/* Feeds @n bytes copied to an exact-size buffer; returns bytes taken. */
static size_t feed(struct end *e, const u8 *p, size_t n)
{
	struct swiw_mpa before;
	size_t used = (size_t)-1;
	u8 *copy = malloc(n ? n : 1);
	bool fpdu;
	int rc;

	CHECK(copy);
	memcpy(&before, &e->m, sizeof(before));
	memcpy(copy, p, n);
	fpdu = before.state == SWIW_MPA_S_ESTABLISHED ||
	       before.state == SWIW_MPA_S_AWAIT_RTR;
	rc = swiw_mpa_input(&e->m, copy, n, &used);
	free(copy);
	CHECK(rc == 0);
	CHECK(used <= n);
	if (fpdu || terminal(&before))
		CHECK(used == 0);
	check(e, &before, rc);
	return used;
}

static void act(struct end *e, int op, const u8 *pd, const u8 *cfg)
{
	struct swiw_mpa before;
	struct swiw_mpa_ulp u;
	int rc;

	memcpy(&before, &e->m, sizeof(before));
	ulp_from(&u, pd, (u8)(cfg[2] ^ op), (u8)(cfg[3] + (op & 7) * 37));
	switch ((op >> 3) & 7) {
	case 0:
		rc = swiw_mpa_accept(&e->m, &u);
		break;
	case 1:
		rc = swiw_mpa_reject(&e->m, pd, (u16)((op & 7) * 40));
		break;
	case 2:
		rc = swiw_mpa_timeout(&e->m);
		if (!rc)
			CHECK(e->m.out.error == -ETIMEDOUT);
		break;
	case 3:
		rc = swiw_mpa_rtr_received(&e->m, (enum swiw_mpa_rtr)(op & 7));
		if ((op & 7) > SWIW_MPA_RTR_READ)
			CHECK(rc == -EINVAL);
		break;
	case 4:
		rc = swiw_mpa_rtr_sent(&e->m);
		break;
	case 5:
		rc = swiw_mpa_connect(&e->m, &u);
		break;
	default: {
		size_t used = 0;

		rc = swiw_mpa_input(&e->m, NULL, 0, &used);
		CHECK(used == 0);
		break;
	}
	}
	/* Every accepted local call moves the machine on. */
	if (rc == 0 && ((op >> 3) & 7) <= 5)
		CHECK(before.state != e->m.state);
	check(e, &before, rc);
}

static bool end_init(struct end *e, enum swiw_mpa_role role,
		     const struct swiw_mpa_cfg *c)
{
	memset(e, 0, sizeof(*e));
	e->tx = malloc(SWIW_MPA_FRAME_MAX);
	e->pd = malloc(SWIW_MPA_PD_MAX);
	CHECK(e->tx && e->pd);
	return swiw_mpa_init(&e->m, role, c, e->tx, SWIW_MPA_FRAME_MAX, e->pd,
			     SWIW_MPA_PD_MAX) == 0;
}

static void end_free(struct end *e)
{
	free(e->tx);
	free(e->pd);
}

static void run_single(const u8 *cfgb, struct prog *g, const u8 *pd)
{
	struct swiw_mpa_cfg c;
	enum swiw_mpa_role role = cfgb[0] & 1 ? SWIW_MPA_RESPONDER :
						SWIW_MPA_INITIATOR;
	struct end e;
	int op;

	cfg_from(&c, cfgb[0], cfgb[1], cfgb[2], cfgb[4]);
	if (!end_init(&e, role, &c))
		goto out;
	if (role == SWIW_MPA_INITIATOR)
		act(&e, 0x80 | (5 << 3), pd, cfgb);
	while ((op = next(g)) >= 0) {
		if (op < 0x80) {
			size_t n = SWIW_MIN((size_t)op + 1, g->n);

			feed(&e, g->p, n);
			g->p += n;
			g->n -= n;
		} else if (((op >> 3) & 15) >= 14) {
			feed(&e, g->p, g->n);
			g->p += g->n;
			g->n = 0;
		} else {
			act(&e, op, pd, cfgb);
		}
	}
out:
	end_free(&e);
}

/*
 * Moves what @from sent to @to in fuzzer-chosen pieces, maybe with one
 * byte flipped, until @to stops taking bytes.
 */
static void deliver(struct end *from, struct end *to, struct prog *g,
		    bool *corrupted)
{
	u8 frame[SWIW_MPA_FRAME_MAX];
	size_t len = from->m.out.tx_len, off = 0, n, used;
	int b = next(g);

	memcpy(frame, from->tx, len);
	if (b >= 0 && (b & 0x80) && len) {
		frame[(size_t)(b & 0x7f) * 3 % len] ^= (u8)(next(g) | 1);
		*corrupted = true;
	}
	while (off < len) {
		b = next(g);
		n = b < 0 ? len - off :
			    SWIW_MIN((size_t)(b & 0x3f) + 1, len - off);
		used = feed(to, frame + off, n);
		off += used;
		if (used < n)
			break;
	}
}

static void run_pair(const u8 *cfgb, struct prog *g, const u8 *pd)
{
	struct swiw_mpa_cfg ci, cr;
	struct end i, r;
	u8 rc1 = (u8)(cfgb[1] << 3 | cfgb[1] >> 5);
	u8 rc2 = (u8)(cfgb[2] << 2 | cfgb[2] >> 6);
	int b, op;
	bool ok, corrupted = false;

	cfg_from(&ci, cfgb[0], cfgb[1], cfgb[2], cfgb[4]);
	cfg_from(&cr, cfgb[5], rc1, rc2, cfgb[4] >> 3);
	ok = end_init(&i, SWIW_MPA_INITIATOR, &ci);
	ok &= end_init(&r, SWIW_MPA_RESPONDER, &cr);
	if (!ok)
		goto out;
	act(&i, 0x80 | (5 << 3), pd, cfgb);
	if (i.m.state != SWIW_MPA_S_AWAIT_REPLY)
		goto out;
	deliver(&i, &r, g, &corrupted);
	if (r.m.state == SWIW_MPA_S_ULP_DECIDE) {
		b = next(g);
		/* Mostly accept; sometimes reject, time out, or misuse. */
		op = 0x80 | (b < 0 ? 0 : b & 7);
		if (b >= 0 && (b & 0xe0) == 0xe0)
			op |= (b & 3) << 3;
		act(&r, op, pd, cfgb);
	}
	if (r.ev & SWIW_MPA_EV_TX && i.m.state == SWIW_MPA_S_AWAIT_REPLY)
		deliver(&r, &i, g, &corrupted);
	if (i.m.state == SWIW_MPA_S_RTR_PENDING) {
		act(&i, 0x80 | (4 << 3), pd, cfgb);
		b = next(g);
		/* The engine reports the first FPDU's kind: mostly right. */
		op = 0x80 | (3 << 3) | i.m.out.rtr;
		if (b >= 0 && b < 0x20)
			op = 0x80 | (3 << 3) | (b & 3);
		if (r.m.state == SWIW_MPA_S_AWAIT_RTR)
			act(&r, op, pd, cfgb);
	} else if (r.m.state == SWIW_MPA_S_AWAIT_RTR &&
		   i.m.state == SWIW_MPA_S_ESTABLISHED) {
		act(&r, 0x80 | (3 << 3), pd, cfgb);
	}
	/* Two ends that heard each other right agree. */
	if (!corrupted && i.m.state == SWIW_MPA_S_ESTABLISHED &&
	    r.m.state == SWIW_MPA_S_ESTABLISHED) {
		const struct swiw_mpa_outcome *a = &i.m.out, *z = &r.m.out;

		CHECK(a->rev == z->rev && a->crc == z->crc);
		/* Rev 1 has no RTR negotiation: v1_rtr is configured. */
		if (a->enhanced)
			CHECK(a->p2p == z->p2p && a->rtr == z->rtr);
		CHECK(a->markers_tx == z->markers_rx);
		CHECK(a->markers_rx == z->markers_tx);
		CHECK(a->enhanced == z->enhanced);
	}
	/* Whatever is left is played against both, terminal or not. */
	while ((b = next(g)) >= 0)
		act((b & 1) ? &r : &i, b | 0x80, pd, cfgb);
out:
	end_free(&i);
	end_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prog g = { data, size };
	u8 pd[SWIW_MPA_PD_MAX + 8];
	u8 cfgb[6];
	unsigned int k;

	if (size < sizeof(cfgb))
		return 0;
	memcpy(cfgb, data, sizeof(cfgb));
	g.p += sizeof(cfgb);
	g.n -= sizeof(cfgb);
	for (k = 0; k < sizeof(pd); k++)
		pd[k] = (u8)(k ^ 0x5c);
	if (cfgb[4] & 0x80)
		run_pair(cfgb, &g, pd);
	else
		run_single(cfgb, &g, pd);
	return 0;
}
