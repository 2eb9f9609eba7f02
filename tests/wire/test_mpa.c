// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MPA connection setup: every negotiation path, initiator against
 * responder and against hand-built frames shaped like siw's, irdma's and
 * cxgb4's (PROTOCOL.md §1, §3), frames fed in every split, timeouts and
 * terminal states.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "swiw_mpa.h"

/* One end of a connection: the machine and the buffers it writes. */
struct side {
	struct swiw_mpa m;
	u8 tx[SWIW_MPA_FRAME_MAX];
	u8 pd[SWIW_MPA_PD_MAX];
	u32 ev; /* every event seen */
};

static void side_init(struct side *s, enum swiw_mpa_role role,
		      const struct swiw_mpa_cfg *cfg)
{
	memset(s, 0, sizeof(*s));
	assert_int_equal(swiw_mpa_init(&s->m, role, cfg, s->tx, sizeof(s->tx),
				       s->pd, sizeof(s->pd)),
			 0);
}

static u32 ev(struct side *s)
{
	s->ev |= swiw_mpa_events(&s->m);
	return s->ev;
}

static const struct swiw_mpa_outcome *out(struct side *s)
{
	return swiw_mpa_outcome(&s->m);
}

static enum swiw_mpa_state st(struct side *s)
{
	return swiw_mpa_state(&s->m);
}

/* Feeds @n bytes in one piece; returns how many were taken. */
static size_t feed(struct side *s, const void *b, size_t n)
{
	size_t used = 99999;

	assert_int_equal(swiw_mpa_input(&s->m, b, n, &used), 0);
	assert_true(used <= n);
	ev(s);
	return used;
}

/* Delivers the frame @from just built to @to, whole. */
static size_t pass(struct side *from, struct side *to)
{
	assert_true(ev(from) & SWIW_MPA_EV_TX);
	return feed(to, from->tx, out(from)->tx_len);
}

static const struct swiw_mpa_ulp ulp_none = { NULL, 0, 1, 1 };

/* A connection: two configurations, two ULPs, two machines. */
struct hs {
	struct swiw_mpa_cfg icfg, rcfg;
	struct swiw_mpa_ulp iulp, rulp;
	struct side i, r;
};

static void hs_init(struct hs *h)
{
	memset(h, 0, sizeof(*h));
	swiw_mpa_cfg_init(&h->icfg);
	swiw_mpa_cfg_init(&h->rcfg);
	h->iulp = ulp_none;
	h->rulp = ulp_none;
}

/*
 * Runs the handshake as far as it goes: Request, the responder's accept,
 * Reply, RTR. Stops where a side closes.
 */
static void hs_run(struct hs *h)
{
	side_init(&h->i, SWIW_MPA_INITIATOR, &h->icfg);
	side_init(&h->r, SWIW_MPA_RESPONDER, &h->rcfg);
	assert_int_equal(swiw_mpa_connect(&h->i.m, &h->iulp), 0);
	assert_int_equal(st(&h->i), SWIW_MPA_S_AWAIT_REPLY);
	assert_int_equal(pass(&h->i, &h->r), out(&h->i)->tx_len);
	if (st(&h->r) != SWIW_MPA_S_ULP_DECIDE) {
		assert_int_equal(st(&h->r), SWIW_MPA_S_CLOSED);
		if (ev(&h->r) & SWIW_MPA_EV_TX)
			pass(&h->r, &h->i);
		return;
	}
	assert_true(ev(&h->r) & SWIW_MPA_EV_REQUEST);
	assert_int_equal(swiw_mpa_accept(&h->r.m, &h->rulp), 0);
	assert_int_equal(pass(&h->r, &h->i), out(&h->r)->tx_len);
	if (st(&h->r) == SWIW_MPA_S_CLOSED)
		return;
	if (st(&h->i) == SWIW_MPA_S_RTR_PENDING) {
		assert_true(ev(&h->i) & SWIW_MPA_EV_SEND_RTR);
		assert_int_equal(st(&h->r), SWIW_MPA_S_AWAIT_RTR);
		assert_int_equal(swiw_mpa_rtr_sent(&h->i.m), 0);
		ev(&h->i);
		assert_int_equal(
			swiw_mpa_rtr_received(&h->r.m, out(&h->i)->rtr), 0);
		ev(&h->r);
	}
}

static void assert_established(struct hs *h)
{
	assert_int_equal(st(&h->i), SWIW_MPA_S_ESTABLISHED);
	assert_int_equal(st(&h->r), SWIW_MPA_S_ESTABLISHED);
	assert_true(ev(&h->i) & SWIW_MPA_EV_RX_FPDU);
	assert_true(ev(&h->i) & SWIW_MPA_EV_TX_FPDU);
	assert_true(ev(&h->r) & SWIW_MPA_EV_RX_FPDU);
	assert_true(ev(&h->r) & SWIW_MPA_EV_TX_FPDU);
	assert_false((ev(&h->i) | ev(&h->r)) & SWIW_MPA_EV_CLOSED);
	assert_int_equal(out(&h->i)->error, 0);
	assert_int_equal(out(&h->r)->error, 0);
	/* Both ends agree on what they agreed. */
	assert_int_equal(out(&h->i)->rev, out(&h->r)->rev);
	assert_int_equal(out(&h->i)->crc, out(&h->r)->crc);
	assert_int_equal(out(&h->i)->p2p, out(&h->r)->p2p);
	assert_int_equal(out(&h->i)->rtr, out(&h->r)->rtr);
	assert_int_equal(out(&h->i)->markers_tx, out(&h->r)->markers_rx);
	assert_int_equal(out(&h->i)->markers_rx, out(&h->r)->markers_tx);
}

/* Wire helpers: the frame a side sent. */
static u8 wire_flags(const struct side *s)
{
	return s->tx[16];
}

static u8 wire_rev(const struct side *s)
{
	return s->tx[17];
}

static u16 wire_pd_len(const struct side *s)
{
	return swiw_get_be16(s->tx + 18);
}

static u16 wire_w0(const struct side *s)
{
	return swiw_get_be16(s->tx + 20);
}

static u16 wire_w1(const struct side *s)
{
	return swiw_get_be16(s->tx + 22);
}

/*
 * A hand-built frame: key, flags, rev, and the v2 word (raw 16-bit
 * values, flags included) if @v2, then @pd. Returns its length.
 */
static size_t mkframe(u8 *b, bool req, u8 flags, u8 rev, bool v2, u16 w0,
		      u16 w1, const void *pd, u16 pd_len)
{
	size_t n = 20;
	u16 len = pd_len + (v2 ? 4 : 0);

	memcpy(b, req ? MPA_KEY_REQ : MPA_KEY_REP, 16);
	b[16] = flags;
	b[17] = rev;
	swiw_put_be16(b + 18, len);
	if (v2) {
		swiw_put_be16(b + 20, w0);
		swiw_put_be16(b + 22, w1);
		n += 4;
	}
	if (pd_len)
		memcpy(b + n, pd, pd_len);
	return n + pd_len;
}

#define F_M MPA_RR_FLAG_MARKERS
#define F_C MPA_RR_FLAG_CRC
#define F_R MPA_RR_FLAG_REJECT
#define F_E MPA_RR_FLAG_ENHANCED
#define W_A 0x8000 /* A, in the first word */
#define W_S 0x4000 /* B: Send RTR, first word */
#define W_W 0x8000 /* C: Write RTR, second word */
#define W_R 0x4000 /* D: Read RTR, second word */

/* A default initiator that has sent its Request. */
static void initiator_sent(struct side *s, const struct swiw_mpa_cfg *cfg,
			   const struct swiw_mpa_ulp *ulp)
{
	side_init(s, SWIW_MPA_INITIATOR, cfg);
	assert_int_equal(swiw_mpa_connect(&s->m, ulp), 0);
	ev(s);
}

static void test_defaults(void **state)
{
	struct swiw_mpa_cfg c, bad;
	struct side s;
	u8 small[16];

	(void)state;
	swiw_mpa_cfg_init(&c);
	assert_int_equal(c.rev, 2);
	assert_int_equal(c.p2p, SWIW_MPA_P2P_ON);
	assert_int_equal(c.rtr_offer,
			 SWIW_MPA_RTR_F_WRITE | SWIW_MPA_RTR_F_READ);
	assert_int_equal(c.rtr_pref[0], SWIW_MPA_RTR_WRITE);
	assert_int_equal(c.rtr_pref[1], SWIW_MPA_RTR_READ);
	assert_int_equal(c.rtr_pref[2], SWIW_MPA_RTR_SEND);
	assert_int_equal(c.v1_rtr, SWIW_MPA_RTR_NONE);
	assert_false(c.crc_required);
	assert_false(c.crc_strict);
	assert_false(c.markers_wanted);
	assert_true(c.markers_can_send);
	assert_false(c.wait_first_fpdu);
	assert_true(c.relaxed_ird);
	assert_int_equal(c.reply_timeout_ms, 10000);
	assert_int_equal(c.request_timeout_ms, 5000);
	assert_int_equal(c.rtr_timeout_ms, SWIW_MPA_RTR_TIMEOUT_MS);
	assert_int_equal(SWIW_MPA_RTR_STAG, 1);
	assert_int_equal(SWIW_MPA_FRAME_MAX, 276);

	/* Knobs and buffers are checked. */
	assert_int_equal(swiw_mpa_init(&s.m, SWIW_MPA_INITIATOR, &c, small,
				       sizeof(small), s.pd, sizeof(s.pd)),
			 -EINVAL);
	assert_int_equal(swiw_mpa_init(&s.m, SWIW_MPA_INITIATOR, &c, s.tx,
				       sizeof(s.tx), small, sizeof(small)),
			 -EINVAL);
	assert_int_equal(swiw_mpa_init(&s.m, (enum swiw_mpa_role)7, &c, s.tx,
				       sizeof(s.tx), s.pd, sizeof(s.pd)),
			 -EINVAL);
	bad = c;
	bad.rev = 0;
	assert_int_equal(swiw_mpa_init(&s.m, SWIW_MPA_RESPONDER, &bad, s.tx,
				       sizeof(s.tx), s.pd, sizeof(s.pd)),
			 -EINVAL);
	bad.rev = 3;
	assert_int_equal(swiw_mpa_init(&s.m, SWIW_MPA_RESPONDER, &bad, s.tx,
				       sizeof(s.tx), s.pd, sizeof(s.pd)),
			 -EINVAL);
	bad = c;
	bad.p2p = 3;
	assert_int_equal(swiw_mpa_init(&s.m, SWIW_MPA_RESPONDER, &bad, s.tx,
				       sizeof(s.tx), s.pd, sizeof(s.pd)),
			 -EINVAL);
	bad = c;
	bad.rtr_pref[1] = 4;
	assert_int_equal(swiw_mpa_init(&s.m, SWIW_MPA_RESPONDER, &bad, s.tx,
				       sizeof(s.tx), s.pd, sizeof(s.pd)),
			 -EINVAL);
	bad = c;
	bad.rtr_offer = 0x10;
	assert_int_equal(swiw_mpa_init(&s.m, SWIW_MPA_INITIATOR, &bad, s.tx,
				       sizeof(s.tx), s.pd, sizeof(s.pd)),
			 -EINVAL);
	bad = c;
	bad.v1_rtr = 4;
	assert_int_equal(swiw_mpa_init(&s.m, SWIW_MPA_RESPONDER, &bad, s.tx,
				       sizeof(s.tx), s.pd, sizeof(s.pd)),
			 -EINVAL);
	assert_int_equal(swiw_mpa_init(&s.m, SWIW_MPA_RESPONDER, NULL, s.tx,
				       sizeof(s.tx), s.pd, sizeof(s.pd)),
			 -EINVAL);
	assert_int_equal(swiw_mpa_init(&s.m, SWIW_MPA_RESPONDER, &c, NULL,
				       sizeof(s.tx), s.pd, sizeof(s.pd)),
			 -EINVAL);
	bad = c;
	bad.ird_max = 0x4000;
	assert_int_equal(swiw_mpa_init(&s.m, SWIW_MPA_INITIATOR, &bad, s.tx,
				       sizeof(s.tx), s.pd, sizeof(s.pd)),
			 -EINVAL);
	/* Asking for peer-to-peer with nothing to offer. */
	bad = c;
	bad.rtr_offer = 0;
	assert_int_equal(swiw_mpa_init(&s.m, SWIW_MPA_INITIATOR, &bad, s.tx,
				       sizeof(s.tx), s.pd, sizeof(s.pd)),
			 -EINVAL);
	assert_int_equal(swiw_mpa_init(&s.m, SWIW_MPA_RESPONDER, &bad, s.tx,
				       sizeof(s.tx), s.pd, sizeof(s.pd)),
			 0);
	assert_int_equal(st(&s), SWIW_MPA_S_AWAIT_REQUEST);
	bad.p2p = SWIW_MPA_P2P_OFF;
	assert_int_equal(swiw_mpa_init(&s.m, SWIW_MPA_INITIATOR, &bad, s.tx,
				       sizeof(s.tx), s.pd, sizeof(s.pd)),
			 0);
	assert_int_equal(st(&s), SWIW_MPA_S_IDLE);
}

/* Defaults on both ends: rev 2, peer-to-peer, Write RTR. */
static void test_rev2_defaults(void **state)
{
	static const char ipd[] = "initiator says hello";
	static const char rpd[] = "responder too";
	struct hs h;

	(void)state;
	hs_init(&h);
	h.iulp = (struct swiw_mpa_ulp){ ipd, sizeof(ipd), 4, 2 };
	h.rulp = (struct swiw_mpa_ulp){ rpd, sizeof(rpd), 2, 4 };
	hs_run(&h);
	assert_established(&h);

	/* The Request: rev 2, 0x10, IRD/ORD with A and Write|Read offered. */
	assert_int_equal(wire_rev(&h.i), 2);
	assert_int_equal(wire_flags(&h.i), F_E);
	assert_int_equal(wire_pd_len(&h.i), sizeof(ipd) + 4);
	assert_int_equal(wire_w0(&h.i), W_A | 4);
	assert_int_equal(wire_w1(&h.i), W_W | W_R | 2);
	assert_memory_equal(h.i.tx + 24, ipd, sizeof(ipd));
	/* The Reply echoes A and picks exactly Write. */
	assert_int_equal(wire_rev(&h.r), 2);
	assert_int_equal(wire_flags(&h.r), F_E);
	assert_int_equal(wire_w0(&h.r), W_A | 2);
	assert_int_equal(wire_w1(&h.r), W_W | 4);

	/* The v2 word never reaches the ULP. */
	assert_int_equal(out(&h.r)->peer_pd_len, sizeof(ipd));
	assert_memory_equal(out(&h.r)->peer_pd, ipd, sizeof(ipd));
	assert_int_equal(out(&h.i)->peer_pd_len, sizeof(rpd));
	assert_memory_equal(out(&h.i)->peer_pd, rpd, sizeof(rpd));

	assert_int_equal(out(&h.i)->rev, 2);
	assert_true(out(&h.i)->enhanced);
	assert_true(out(&h.i)->p2p);
	assert_int_equal(out(&h.i)->rtr, SWIW_MPA_RTR_WRITE);
	assert_false(out(&h.i)->crc);
	assert_false(out(&h.i)->markers_tx);
	assert_false(out(&h.i)->markers_rx);
	assert_true(out(&h.i)->ird_ord_negotiated);
	assert_int_equal(out(&h.r)->ird, 2);
	assert_int_equal(out(&h.r)->ord, 4);
	assert_int_equal(out(&h.i)->ird, 4);
	assert_int_equal(out(&h.i)->ord, 2);
	assert_int_equal(out(&h.r)->peer_ird, 4);
	assert_int_equal(out(&h.r)->peer_ord, 2);
	assert_true(out(&h.r)->peer_p2p);
	assert_int_equal(out(&h.r)->peer_rtr,
			 SWIW_MPA_RTR_F_WRITE | SWIW_MPA_RTR_F_READ);
	assert_int_equal(out(&h.i)->violation, SWIW_V_NONE);
	assert_false(out(&h.i)->send_term);
}

static void test_rev1_both(void **state)
{
	static const char ipd[] = "v1";
	struct hs h;

	(void)state;
	hs_init(&h);
	h.icfg.rev = 1;
	h.rcfg.rev = 1;
	h.iulp = (struct swiw_mpa_ulp){ ipd, sizeof(ipd), 3, 5 };
	h.rulp = (struct swiw_mpa_ulp){ NULL, 0, 7, 9 };
	hs_run(&h);
	assert_established(&h);
	assert_int_equal(wire_rev(&h.i), 1);
	assert_int_equal(wire_flags(&h.i), 0);
	assert_int_equal(wire_pd_len(&h.i), sizeof(ipd));
	assert_int_equal(wire_rev(&h.r), 1);
	assert_int_equal(wire_pd_len(&h.r), 0);
	assert_false(out(&h.i)->enhanced);
	assert_false(out(&h.i)->p2p);
	assert_false(out(&h.i)->ird_ord_negotiated);
	/* Nothing to negotiate with: the ULPs' values stand. */
	assert_int_equal(out(&h.i)->ird, 3);
	assert_int_equal(out(&h.i)->ord, 5);
	assert_int_equal(out(&h.r)->ird, 7);
	assert_int_equal(out(&h.r)->ord, 9);
	assert_int_equal(out(&h.r)->peer_pd_len, sizeof(ipd));
	assert_memory_equal(out(&h.r)->peer_pd, ipd, sizeof(ipd));
	/* No RTR: the responder sends right after its Reply. */
	assert_true(ev(&h.r) & SWIW_MPA_EV_TX_FPDU);
}

/* A rev-2 responder answers a rev-1 initiator in rev 1. */
static void test_rev1_to_rev2(void **state)
{
	struct hs h;

	(void)state;
	hs_init(&h);
	h.icfg.rev = 1;
	hs_run(&h);
	assert_established(&h);
	assert_int_equal(wire_rev(&h.r), 1);
	assert_int_equal(wire_flags(&h.r) & F_E, 0);
	assert_int_equal(wire_pd_len(&h.r), 0);
	assert_int_equal(out(&h.r)->rev, 1);
	assert_false(out(&h.r)->p2p);

	/* ... unless it requires peer-to-peer, which rev 1 cannot carry. */
	hs_init(&h);
	h.icfg.rev = 1;
	h.rcfg.p2p = SWIW_MPA_P2P_REQUIRED;
	hs_run(&h);
	assert_int_equal(st(&h.r), SWIW_MPA_S_CLOSED);
	assert_int_equal(out(&h.r)->violation, SWIW_V_MPA_NO_MATCHING_RTR);
	assert_int_equal(out(&h.r)->reject, SWIW_MPA_REJ_BY_US);
	assert_int_equal(wire_rev(&h.r), 1);
	assert_int_equal(wire_flags(&h.r), F_R);
	assert_int_equal(st(&h.i), SWIW_MPA_S_CLOSED);
	assert_int_equal(out(&h.i)->error, -ECONNREFUSED);
	assert_int_equal(out(&h.i)->reject, SWIW_MPA_REJ_BY_PEER);
}

/* A rev-1 responder downgrades a rev-2 initiator, which accepts. */
static void test_rev2_to_rev1(void **state)
{
	static const char ipd[] = "word hidden";
	struct hs h;

	(void)state;
	hs_init(&h);
	h.rcfg.rev = 1;
	h.iulp = (struct swiw_mpa_ulp){ ipd, sizeof(ipd), 1, 1 };
	hs_run(&h);
	assert_established(&h);
	assert_int_equal(wire_rev(&h.r), 1);
	assert_int_equal(out(&h.i)->rev, 1);
	assert_false(out(&h.i)->enhanced);
	assert_false(out(&h.i)->p2p);
	/* The request's v2 word is still not the ULP's. */
	assert_int_equal(out(&h.r)->peer_pd_len, sizeof(ipd));
	assert_memory_equal(out(&h.r)->peer_pd, ipd, sizeof(ipd));

	/* An initiator that requires peer-to-peer cannot live with it. */
	hs_init(&h);
	h.rcfg.rev = 1;
	h.icfg.p2p = SWIW_MPA_P2P_REQUIRED;
	hs_run(&h);
	assert_int_equal(st(&h.i), SWIW_MPA_S_CLOSED);
	assert_int_equal(out(&h.i)->violation, SWIW_V_MPA_NO_MATCHING_RTR);
	assert_true(out(&h.i)->send_term);
	assert_int_equal(out(&h.i)->error, -EPROTO);
}

static void run_rtr(u8 offer, u8 p0, u8 p1, u8 p2, u8 want)
{
	struct hs h;

	hs_init(&h);
	h.icfg.rtr_offer = offer;
	h.rcfg.rtr_pref[0] = p0;
	h.rcfg.rtr_pref[1] = p1;
	h.rcfg.rtr_pref[2] = p2;
	hs_run(&h);
	if (want == SWIW_MPA_RTR_NONE) {
		assert_int_equal(st(&h.r), SWIW_MPA_S_CLOSED);
		assert_int_equal(out(&h.r)->violation,
				 SWIW_V_MPA_NO_MATCHING_RTR);
		assert_int_equal(out(&h.i)->error, -ECONNREFUSED);
		return;
	}
	assert_established(&h);
	assert_int_equal(out(&h.i)->rtr, want);
	/* Exactly one type on the wire, A echoed. */
	assert_true(wire_w0(&h.r) & W_A);
	switch (want) {
	case SWIW_MPA_RTR_SEND:
		assert_int_equal(wire_w0(&h.r) & 0xc000, W_A | W_S);
		assert_int_equal(wire_w1(&h.r) & 0xc000, 0);
		break;
	case SWIW_MPA_RTR_WRITE:
		assert_int_equal(wire_w0(&h.r) & 0xc000, W_A);
		assert_int_equal(wire_w1(&h.r) & 0xc000, W_W);
		break;
	default:
		assert_int_equal(wire_w0(&h.r) & 0xc000, W_A);
		assert_int_equal(wire_w1(&h.r) & 0xc000, W_R);
		break;
	}
}

static void test_p2p_each_rtr(void **state)
{
	(void)state;
	run_rtr(SWIW_MPA_RTR_F_SEND, SWIW_MPA_RTR_WRITE, SWIW_MPA_RTR_READ,
		SWIW_MPA_RTR_SEND, SWIW_MPA_RTR_SEND);
	run_rtr(SWIW_MPA_RTR_F_WRITE, SWIW_MPA_RTR_WRITE, SWIW_MPA_RTR_READ,
		SWIW_MPA_RTR_SEND, SWIW_MPA_RTR_WRITE);
	run_rtr(SWIW_MPA_RTR_F_READ, SWIW_MPA_RTR_WRITE, SWIW_MPA_RTR_READ,
		SWIW_MPA_RTR_SEND, SWIW_MPA_RTR_READ);
}

static void test_p2p_preferences(void **state)
{
	(void)state;
	run_rtr(SWIW_MPA_RTR_F_ALL, SWIW_MPA_RTR_READ, SWIW_MPA_RTR_SEND,
		SWIW_MPA_RTR_WRITE, SWIW_MPA_RTR_READ);
	run_rtr(SWIW_MPA_RTR_F_ALL, SWIW_MPA_RTR_SEND, 0, 0, SWIW_MPA_RTR_SEND);
	run_rtr(SWIW_MPA_RTR_F_WRITE | SWIW_MPA_RTR_F_SEND, SWIW_MPA_RTR_READ,
		SWIW_MPA_RTR_SEND, SWIW_MPA_RTR_WRITE, SWIW_MPA_RTR_SEND);
	/* Preference lists end at the first NONE. */
	run_rtr(SWIW_MPA_RTR_F_READ, SWIW_MPA_RTR_WRITE, 0, SWIW_MPA_RTR_READ,
		SWIW_MPA_RTR_NONE);
	/* Nothing offered is acceptable: reject. */
	run_rtr(SWIW_MPA_RTR_F_WRITE | SWIW_MPA_RTR_F_READ, SWIW_MPA_RTR_SEND,
		0, 0, SWIW_MPA_RTR_NONE);
	run_rtr(SWIW_MPA_RTR_F_SEND, SWIW_MPA_RTR_WRITE, SWIW_MPA_RTR_READ, 0,
		SWIW_MPA_RTR_NONE);
}

/* Without peer-to-peer on one side or the other. */
static void test_no_p2p(void **state)
{
	struct hs h;

	(void)state;
	/* Client-server initiator, default responder: no A, no RTR. */
	hs_init(&h);
	h.icfg.p2p = SWIW_MPA_P2P_OFF;
	hs_run(&h);
	assert_established(&h);
	assert_int_equal(wire_w0(&h.i) & 0xc000, 0);
	assert_int_equal(wire_w1(&h.i) & 0xc000, 0);
	assert_int_equal(wire_w0(&h.r) & 0xc000, 0);
	assert_int_equal(wire_w1(&h.r) & 0xc000, 0);
	assert_false(out(&h.i)->p2p);
	assert_true(out(&h.i)->enhanced);

	/* A responder that requires it rejects. */
	hs_init(&h);
	h.icfg.p2p = SWIW_MPA_P2P_OFF;
	h.rcfg.p2p = SWIW_MPA_P2P_REQUIRED;
	hs_run(&h);
	assert_int_equal(out(&h.r)->violation, SWIW_V_MPA_NO_MATCHING_RTR);
	assert_int_equal(out(&h.i)->error, -ECONNREFUSED);

	/* A responder that never does it rejects a Request with A. */
	hs_init(&h);
	h.rcfg.p2p = SWIW_MPA_P2P_OFF;
	hs_run(&h);
	assert_int_equal(out(&h.r)->violation, SWIW_V_MPA_NO_MATCHING_RTR);
	assert_int_equal(out(&h.r)->error, -ECONNREFUSED);
	/* The reject keeps irdma talking: A, one RTR bit, 0x3FFF. */
	assert_int_equal(wire_flags(&h.r), F_R | F_E);
	assert_int_equal(wire_w0(&h.r), W_A | 0x3fff);
	assert_int_equal(wire_w1(&h.r), W_W | 0x3fff);
	assert_int_equal(out(&h.i)->error, -ECONNREFUSED);
	assert_int_equal(out(&h.i)->peer_pd_len, 0);

	/* Both off. */
	hs_init(&h);
	h.icfg.p2p = SWIW_MPA_P2P_OFF;
	h.rcfg.p2p = SWIW_MPA_P2P_OFF;
	hs_run(&h);
	assert_established(&h);
}

/* Replies that break RFC 6581's peer-to-peer rules, to our initiator. */
static void reply_check(const struct swiw_mpa_cfg *icfg, const u8 *f, size_t n,
			enum swiw_mpa_state want, enum swiw_violation v)
{
	struct side i;

	initiator_sent(&i, icfg, &ulp_none);
	assert_int_equal(feed(&i, f, n), n);
	assert_int_equal(st(&i), want);
	assert_int_equal(out(&i)->violation, v);
	if (v != SWIW_V_NONE) {
		assert_int_equal(out(&i)->error, -EPROTO);
		assert_true(ev(&i) & SWIW_MPA_EV_CLOSED);
	}
}

static void test_p2p_reply_checks(void **state)
{
	struct swiw_mpa_cfg c, off;
	u8 f[64];
	size_t n;

	(void)state;
	swiw_mpa_cfg_init(&c);
	off = c;
	off.p2p = SWIW_MPA_P2P_OFF;
	/* A not echoed (softiwarp#18): cxgb4 and irdma fail it too. */
	n = mkframe(f, false, F_E, 2, true, 1, W_W | 1, NULL, 0);
	reply_check(&c, f, n, SWIW_MPA_S_CLOSED, SWIW_V_MPA_NO_MATCHING_RTR);
	/* Two types picked (softiwarp#17). */
	n = mkframe(f, false, F_E, 2, true, W_A | 1, W_W | W_R | 1, NULL, 0);
	reply_check(&c, f, n, SWIW_MPA_S_CLOSED, SWIW_V_MPA_NO_MATCHING_RTR);
	/* A type we did not offer (softiwarp#20). */
	n = mkframe(f, false, F_E, 2, true, W_A | W_S | 1, 1, NULL, 0);
	reply_check(&c, f, n, SWIW_MPA_S_CLOSED, SWIW_V_MPA_NO_MATCHING_RTR);
	/* A with no type. */
	n = mkframe(f, false, F_E, 2, true, W_A | 1, 1, NULL, 0);
	reply_check(&c, f, n, SWIW_MPA_S_CLOSED, SWIW_V_MPA_NO_MATCHING_RTR);
	/* A we never asked for. */
	n = mkframe(f, false, F_E, 2, true, W_A | 1, W_W | 1, NULL, 0);
	reply_check(&off, f, n, SWIW_MPA_S_CLOSED, SWIW_V_MPA_NO_MATCHING_RTR);
	/* RTR bits without A mean nothing to a client-server initiator. */
	n = mkframe(f, false, F_E, 2, true, 1, W_W | 1, NULL, 0);
	reply_check(&off, f, n, SWIW_MPA_S_ESTABLISHED, SWIW_V_NONE);
	/* The good ones. */
	n = mkframe(f, false, F_E, 2, true, W_A | 1, W_R | 1, NULL, 0);
	reply_check(&c, f, n, SWIW_MPA_S_RTR_PENDING, SWIW_V_NONE);
	n = mkframe(f, false, F_E, 2, true, W_A | 1, W_W | 1, NULL, 0);
	reply_check(&c, f, n, SWIW_MPA_S_RTR_PENDING, SWIW_V_NONE);
}

/* The responder checks the first FPDU against the agreed RTR. */
static void test_rtr_mismatch(void **state)
{
	static const enum swiw_mpa_rtr wrong[] = { SWIW_MPA_RTR_NONE,
						   SWIW_MPA_RTR_SEND,
						   SWIW_MPA_RTR_READ };
	struct hs h;
	unsigned int k;

	(void)state;
	for (k = 0; k < SWIW_ARRAY_SIZE(wrong); k++) {
		hs_init(&h);
		side_init(&h.i, SWIW_MPA_INITIATOR, &h.icfg);
		side_init(&h.r, SWIW_MPA_RESPONDER, &h.rcfg);
		assert_int_equal(swiw_mpa_connect(&h.i.m, &h.iulp), 0);
		pass(&h.i, &h.r);
		assert_int_equal(swiw_mpa_accept(&h.r.m, &h.rulp), 0);
		assert_int_equal(st(&h.r), SWIW_MPA_S_AWAIT_RTR);
		/* RX is on, TX is not, before the RTR. */
		assert_true(ev(&h.r) & SWIW_MPA_EV_RX_FPDU);
		assert_false(ev(&h.r) & SWIW_MPA_EV_TX_FPDU);
		assert_int_equal(swiw_mpa_rtr_received(&h.r.m, wrong[k]), 0);
		assert_int_equal(st(&h.r), SWIW_MPA_S_CLOSED);
		assert_int_equal(out(&h.r)->violation,
				 SWIW_V_MPA_NO_MATCHING_RTR);
		assert_true(out(&h.r)->send_term);
		assert_int_equal(out(&h.r)->error, -EPROTO);
		assert_false(ev(&h.r) & SWIW_MPA_EV_TX_FPDU);
	}
	/* Unknown kinds are the caller's bug. */
	hs_init(&h);
	side_init(&h.i, SWIW_MPA_INITIATOR, &h.icfg);
	side_init(&h.r, SWIW_MPA_RESPONDER, &h.rcfg);
	assert_int_equal(swiw_mpa_connect(&h.i.m, &h.iulp), 0);
	pass(&h.i, &h.r);
	assert_int_equal(swiw_mpa_accept(&h.r.m, &h.rulp), 0);
	assert_int_equal(swiw_mpa_rtr_received(&h.r.m, (enum swiw_mpa_rtr)9),
			 -EINVAL);
	assert_int_equal(st(&h.r), SWIW_MPA_S_AWAIT_RTR);
}

/* RFC 5044 §7.1.2 rule 4, on request. */
static void test_wait_first_fpdu(void **state)
{
	struct hs h;
	u32 ms = 0;

	(void)state;
	hs_init(&h);
	h.icfg.p2p = SWIW_MPA_P2P_OFF;
	h.rcfg.wait_first_fpdu = true;
	side_init(&h.i, SWIW_MPA_INITIATOR, &h.icfg);
	side_init(&h.r, SWIW_MPA_RESPONDER, &h.rcfg);
	assert_int_equal(swiw_mpa_connect(&h.i.m, &h.iulp), 0);
	pass(&h.i, &h.r);
	assert_int_equal(swiw_mpa_accept(&h.r.m, &h.rulp), 0);
	assert_int_equal(st(&h.r), SWIW_MPA_S_AWAIT_RTR);
	assert_int_equal(swiw_mpa_deadline(&h.r.m, &ms), SWIW_MPA_DL_RTR);
	assert_int_equal(ms, SWIW_MPA_RTR_TIMEOUT_MS);
	pass(&h.r, &h.i);
	assert_int_equal(st(&h.i), SWIW_MPA_S_ESTABLISHED);
	/* Any validated FPDU will do. */
	assert_int_equal(swiw_mpa_rtr_received(&h.r.m, SWIW_MPA_RTR_NONE), 0);
	assert_established(&h);
	assert_false(out(&h.r)->p2p);
}

/* cxgb4's rev-1 peer-to-peer: an RTR without the RFC 6581 word. */
static void test_v1_rtr(void **state)
{
	struct hs h;

	(void)state;
	hs_init(&h);
	h.icfg.rev = 1;
	h.icfg.v1_rtr = SWIW_MPA_RTR_READ;
	h.rcfg.v1_rtr = SWIW_MPA_RTR_READ;
	h.iulp.ord = 0;
	h.rulp.ird = 0;
	hs_run(&h);
	assert_established(&h);
	assert_int_equal(out(&h.i)->rev, 1);
	assert_int_equal(out(&h.i)->rtr, SWIW_MPA_RTR_READ);
	assert_true(out(&h.i)->p2p);
	/* A READ RTR needs ORD 1 here and IRD 1 there. */
	assert_int_equal(out(&h.i)->ord, 1);
	assert_int_equal(out(&h.r)->ird, 1);
	/* Not with p2p off. */
	hs_init(&h);
	h.icfg.rev = 1;
	h.icfg.v1_rtr = SWIW_MPA_RTR_READ;
	h.icfg.p2p = SWIW_MPA_P2P_OFF;
	h.rcfg.v1_rtr = SWIW_MPA_RTR_READ;
	h.rcfg.p2p = SWIW_MPA_P2P_OFF;
	hs_run(&h);
	assert_established(&h);
	assert_false(out(&h.i)->p2p);
}

struct crc_case {
	bool i_req, i_strict, r_req, r_strict;
	int result; /* 1 on, 0 off, -1 responder rejects, -2 refused */
};

static void test_crc(void **state)
{
	static const struct crc_case cases[] = {
		{ false, false, false, false, 0 },
		{ true, false, false, false, 1 }, /* C only in the Request */
		{ false, false, true, false, 1 }, /* C only in the Reply */
		{ true, false, true, false, 1 },
		{ false, true, false, true, 0 },
		{ true, false, false, true, -1 }, /* siw mpa_crc_strict */
		{ true, true, false, true, -1 },
		{ false, true, true, false, -2 },
		{ true, true, true, true, 1 },
		{ true, false, true, true, 1 },
		{ false, true, true, true, -2 },
	};
	unsigned int k;
	struct hs h;

	(void)state;
	for (k = 0; k < SWIW_ARRAY_SIZE(cases); k++) {
		const struct crc_case *c = &cases[k];

		hs_init(&h);
		h.icfg.crc_required = c->i_req;
		h.icfg.crc_strict = c->i_strict;
		h.rcfg.crc_required = c->r_req;
		h.rcfg.crc_strict = c->r_strict;
		hs_run(&h);
		assert_int_equal(!!(wire_flags(&h.i) & F_C), c->i_req);
		if (c->result >= 0) {
			assert_established(&h);
			assert_int_equal(out(&h.i)->crc, c->result);
			assert_int_equal(out(&h.r)->crc, c->result);
			assert_int_equal(!!(wire_flags(&h.r) & F_C), c->result);
		} else if (c->result == -1) {
			assert_int_equal(out(&h.r)->reject, SWIW_MPA_REJ_BY_US);
			assert_int_equal(out(&h.r)->violation, SWIW_V_NONE);
			assert_int_equal(out(&h.i)->reject,
					 SWIW_MPA_REJ_BY_PEER);
			assert_int_equal(out(&h.i)->error, -ECONNREFUSED);
		} else {
			assert_int_equal(out(&h.i)->reject,
					 SWIW_MPA_REJ_REFUSED);
			assert_int_equal(out(&h.i)->error, -ECONNREFUSED);
			assert_int_equal(out(&h.i)->violation, SWIW_V_NONE);
			assert_false(out(&h.i)->send_term);
		}
	}
}

/*
 * RFC 5044: C in the Request alone turns CRC on both ways. siw with
 * mpa_crc_required refuses such a Reply; swiw follows the RFC.
 */
static void test_crc_reply_without_c(void **state)
{
	struct swiw_mpa_cfg c;
	struct side i;
	u8 f[64];
	size_t n;

	(void)state;
	swiw_mpa_cfg_init(&c);
	c.crc_required = true;
	c.crc_strict = true;
	initiator_sent(&i, &c, &ulp_none);
	n = mkframe(f, false, F_E, 2, true, W_A | 1, W_W | 1, NULL, 0);
	feed(&i, f, n);
	assert_int_equal(st(&i), SWIW_MPA_S_RTR_PENDING);
	assert_true(out(&i)->crc);
}

static void test_markers(void **state)
{
	struct hs h;

	(void)state;
	/* The initiator asks: the responder sends markers to it. */
	hs_init(&h);
	h.icfg.markers_wanted = true;
	hs_run(&h);
	assert_established(&h);
	assert_int_equal(wire_flags(&h.i), F_E | F_M);
	assert_int_equal(wire_flags(&h.r) & F_M, 0);
	assert_true(out(&h.r)->markers_tx);
	assert_false(out(&h.r)->markers_rx);
	assert_true(out(&h.i)->markers_rx);
	assert_false(out(&h.i)->markers_tx);

	/* The responder asks. */
	hs_init(&h);
	h.rcfg.markers_wanted = true;
	hs_run(&h);
	assert_established(&h);
	assert_true(wire_flags(&h.r) & F_M);
	assert_true(out(&h.i)->markers_tx);
	assert_true(out(&h.r)->markers_rx);

	/* Both. */
	hs_init(&h);
	h.icfg.markers_wanted = true;
	h.rcfg.markers_wanted = true;
	hs_run(&h);
	assert_established(&h);
	assert_true(out(&h.i)->markers_tx && out(&h.i)->markers_rx);

	/* A responder that cannot send them rejects (siw does). */
	hs_init(&h);
	h.icfg.markers_wanted = true;
	h.rcfg.markers_can_send = false;
	hs_run(&h);
	assert_int_equal(out(&h.r)->reject, SWIW_MPA_REJ_BY_US);
	assert_int_equal(wire_flags(&h.r) & F_M, 0);
	assert_int_equal(out(&h.i)->error, -ECONNREFUSED);

	/* An initiator that cannot can only refuse the Reply. */
	hs_init(&h);
	h.rcfg.markers_wanted = true;
	h.icfg.markers_can_send = false;
	hs_run(&h);
	assert_int_equal(st(&h.i), SWIW_MPA_S_CLOSED);
	assert_int_equal(out(&h.i)->reject, SWIW_MPA_REJ_REFUSED);
	assert_int_equal(out(&h.i)->error, -ECONNREFUSED);
}

static void test_reject(void **state)
{
	static const char why[] = "no such service";
	u8 big[SWIW_MPA_PD_MAX + 1];
	struct hs h;

	(void)state;
	memset(big, 'x', sizeof(big));
	/* Rev 2: the v2 word rides along, hidden from the ULP. */
	hs_init(&h);
	side_init(&h.i, SWIW_MPA_INITIATOR, &h.icfg);
	side_init(&h.r, SWIW_MPA_RESPONDER, &h.rcfg);
	assert_int_equal(swiw_mpa_connect(&h.i.m, &h.iulp), 0);
	pass(&h.i, &h.r);
	assert_int_equal(swiw_mpa_reject(&h.r.m, big, 253), -EINVAL);
	assert_int_equal(swiw_mpa_reject(&h.r.m, NULL, 3), -EINVAL);
	assert_int_equal(st(&h.r), SWIW_MPA_S_ULP_DECIDE);
	assert_int_equal(swiw_mpa_reject(&h.r.m, why, sizeof(why)), 0);
	assert_int_equal(st(&h.r), SWIW_MPA_S_CLOSED);
	assert_true(ev(&h.r) & SWIW_MPA_EV_CLOSED);
	assert_int_equal(out(&h.r)->error, -ECONNREFUSED);
	assert_int_equal(out(&h.r)->violation, SWIW_V_NONE);
	assert_int_equal(wire_flags(&h.r), F_R | F_E);
	assert_int_equal(wire_rev(&h.r), 2);
	assert_int_equal(wire_pd_len(&h.r), sizeof(why) + 4);
	assert_int_equal(wire_w0(&h.r), W_A | 0x3fff);
	assert_int_equal(wire_w1(&h.r), W_W | 0x3fff);
	pass(&h.r, &h.i);
	assert_int_equal(st(&h.i), SWIW_MPA_S_CLOSED);
	assert_int_equal(out(&h.i)->error, -ECONNREFUSED);
	assert_int_equal(out(&h.i)->reject, SWIW_MPA_REJ_BY_PEER);
	assert_int_equal(out(&h.i)->peer_pd_len, sizeof(why));
	assert_memory_equal(out(&h.i)->peer_pd, why, sizeof(why));
	assert_false(out(&h.i)->send_term);

	/* Rev 1: no word, 256 octets allowed. */
	hs_init(&h);
	h.icfg.rev = 1;
	side_init(&h.i, SWIW_MPA_INITIATOR, &h.icfg);
	side_init(&h.r, SWIW_MPA_RESPONDER, &h.rcfg);
	assert_int_equal(swiw_mpa_connect(&h.i.m, &h.iulp), 0);
	pass(&h.i, &h.r);
	assert_int_equal(swiw_mpa_reject(&h.r.m, big, 257), -EINVAL);
	assert_int_equal(swiw_mpa_reject(&h.r.m, big, 256), 0);
	assert_int_equal(wire_flags(&h.r), F_R);
	assert_int_equal(wire_rev(&h.r), 1);
	assert_int_equal(out(&h.r)->tx_len, 20 + 256);
	pass(&h.r, &h.i);
	assert_int_equal(out(&h.i)->peer_pd_len, 256);
	assert_memory_equal(out(&h.i)->peer_pd, big, 256);

	/* A client-server Request gets a reject without A. */
	hs_init(&h);
	h.icfg.p2p = SWIW_MPA_P2P_OFF;
	side_init(&h.i, SWIW_MPA_INITIATOR, &h.icfg);
	side_init(&h.r, SWIW_MPA_RESPONDER, &h.rcfg);
	assert_int_equal(swiw_mpa_connect(&h.i.m, &h.iulp), 0);
	pass(&h.i, &h.r);
	assert_int_equal(swiw_mpa_reject(&h.r.m, NULL, 0), 0);
	assert_int_equal(wire_w0(&h.r), 0x3fff);
	assert_int_equal(wire_w1(&h.r), 0x3fff);
}

/* The ULP's private data limit: 256 on the wire, v2 word included. */
static void test_local_pd_limits(void **state)
{
	u8 big[300];
	struct swiw_mpa_cfg c;
	struct swiw_mpa_ulp u = { big, 0, 1, 1 };
	struct side s, r;

	(void)state;
	memset(big, 0x5a, sizeof(big));
	swiw_mpa_cfg_init(&c);
	side_init(&s, SWIW_MPA_INITIATOR, &c);
	u.pd_len = 253;
	assert_int_equal(swiw_mpa_connect(&s.m, &u), -EINVAL);
	assert_int_equal(st(&s), SWIW_MPA_S_IDLE);
	assert_false(ev(&s) & SWIW_MPA_EV_TX);
	u.pd = NULL;
	u.pd_len = 1;
	assert_int_equal(swiw_mpa_connect(&s.m, &u), -EINVAL);
	u.pd = big;
	u.pd_len = 10;
	u.ird = 0x4000;
	assert_int_equal(swiw_mpa_connect(&s.m, &u), -EINVAL);
	u.ird = 1;
	u.ord = 0x4000;
	assert_int_equal(swiw_mpa_connect(&s.m, &u), -EINVAL);
	assert_int_equal(swiw_mpa_connect(&s.m, NULL), -EINVAL);
	u.ord = 1;
	u.pd_len = 252;
	assert_int_equal(swiw_mpa_connect(&s.m, &u), 0);
	assert_int_equal(out(&s)->tx_len, 276);
	assert_int_equal(wire_pd_len(&s), 256);
	/* Twice is a bug. */
	assert_int_equal(swiw_mpa_connect(&s.m, &u), -EINVAL);

	/* The responder to it: the same limit on accept. */
	side_init(&r, SWIW_MPA_RESPONDER, &c);
	assert_int_equal(feed(&r, s.tx, out(&s)->tx_len), 276);
	assert_int_equal(out(&r)->peer_pd_len, 252);
	assert_memory_equal(out(&r)->peer_pd, big, 252);
	u.pd_len = 253;
	assert_int_equal(swiw_mpa_accept(&r.m, &u), -EINVAL);
	assert_int_equal(st(&r), SWIW_MPA_S_ULP_DECIDE);
	u.pd_len = 252;
	assert_int_equal(swiw_mpa_accept(&r.m, &u), 0);
	assert_int_equal(out(&r)->tx_len, 276);

	/* Rev 1: all 256 octets are the ULP's. */
	c.rev = 1;
	side_init(&s, SWIW_MPA_INITIATOR, &c);
	u.pd_len = 257;
	assert_int_equal(swiw_mpa_connect(&s.m, &u), -EINVAL);
	u.pd_len = 256;
	assert_int_equal(swiw_mpa_connect(&s.m, &u), 0);
	side_init(&r, SWIW_MPA_RESPONDER, &c);
	feed(&r, s.tx, out(&s)->tx_len);
	assert_int_equal(swiw_mpa_accept(&r.m, &u), 0);
	assert_int_equal(wire_pd_len(&r), 256);
}

/* A fresh responder fed @n bytes of @f. */
static void request_check(const struct swiw_mpa_cfg *c, const u8 *f, size_t n,
			  enum swiw_mpa_state want, enum swiw_violation v,
			  bool reply)
{
	struct side r;

	side_init(&r, SWIW_MPA_RESPONDER, c);
	feed(&r, f, n);
	assert_int_equal(st(&r), want);
	assert_int_equal(out(&r)->violation, v);
	assert_int_equal(!!(ev(&r) & SWIW_MPA_EV_TX), reply);
	if (want == SWIW_MPA_S_CLOSED) {
		assert_true(ev(&r) & SWIW_MPA_EV_CLOSED);
		assert_int_equal(out(&r)->error,
				 reply ? -ECONNREFUSED : -EPROTO);
		assert_false(out(&r)->send_term);
	}
	if (reply) {
		assert_int_equal(wire_flags(&r) & F_R, F_R);
		assert_memory_equal(r.tx, MPA_KEY_REP, 16);
	}
}

static void test_peer_pd_too_long(void **state)
{
	struct swiw_mpa_cfg c;
	u8 f[20 + 600];
	u8 pd[600];
	struct side i;

	(void)state;
	memset(pd, 1, sizeof(pd));
	swiw_mpa_cfg_init(&c);
	mkframe(f, true, 0, 1, false, 0, 0, pd, 257);
	/* Decided from the header alone. */
	request_check(&c, f, 20, SWIW_MPA_S_CLOSED, SWIW_V_MPA_PD_TOO_LONG,
		      false);
	mkframe(f, true, F_E, 2, true, W_A | 1, W_W | 1, pd, 253);
	request_check(&c, f, 20, SWIW_MPA_S_CLOSED, SWIW_V_MPA_PD_TOO_LONG,
		      false);
	/* RFC 5044's 512 is more than Linux takes. */
	mkframe(f, true, 0, 1, false, 0, 0, pd, 512);
	request_check(&c, f, 20, SWIW_MPA_S_CLOSED, SWIW_V_MPA_PD_TOO_LONG,
		      false);
	mkframe(f, true, 0, 1, false, 0, 0, pd, 256);
	request_check(&c, f, 276, SWIW_MPA_S_ULP_DECIDE, SWIW_V_NONE, false);
	mkframe(f, true, F_E, 2, true, W_A | 1, W_W | 1, pd, 252);
	request_check(&c, f, 276, SWIW_MPA_S_ULP_DECIDE, SWIW_V_NONE, false);

	initiator_sent(&i, &c, &ulp_none);
	mkframe(f, false, F_E, 2, true, W_A | 1, W_W | 1, pd, 300);
	assert_int_equal(feed(&i, f, 24), 20);
	assert_int_equal(st(&i), SWIW_MPA_S_CLOSED);
	assert_int_equal(out(&i)->violation, SWIW_V_MPA_PD_TOO_LONG);
	assert_int_equal(out(&i)->error, -EPROTO);
}

static void test_malformed(void **state)
{
	struct swiw_mpa_cfg c, c1;
	u8 f[64];
	size_t n;
	struct side i, r;

	(void)state;
	swiw_mpa_cfg_init(&c);
	/* Bad key. */
	n = mkframe(f, true, F_E, 2, true, W_A | 1, W_W | 1, NULL, 0);
	f[3] ^= 0x20;
	request_check(&c, f, n, SWIW_MPA_S_CLOSED, SWIW_V_MPA_BAD_RR, false);
	/* A Reply key sent to a responder. */
	n = mkframe(f, false, F_E, 2, true, W_A | 1, W_W | 1, NULL, 0);
	request_check(&c, f, n, SWIW_MPA_S_CLOSED, SWIW_V_MPA_BAD_RR, false);
	/* R in a Request. */
	n = mkframe(f, true, F_E | F_R, 2, true, W_A | 1, W_W | 1, NULL, 0);
	request_check(&c, f, n, SWIW_MPA_S_CLOSED, SWIW_V_MPA_BAD_RR, false);
	/* Rev 0 (RDMAC): closed without a Reply, as siw does. */
	n = mkframe(f, true, 0, 0, false, 0, 0, NULL, 0);
	request_check(&c, f, n, SWIW_MPA_S_CLOSED, SWIW_V_MPA_BAD_RR, false);
	/* Rev 3: a reject Reply in our own Rev, no word. */
	n = mkframe(f, true, F_E, 3, true, W_A | 1, W_W | 1, NULL, 0);
	side_init(&r, SWIW_MPA_RESPONDER, &c);
	assert_int_equal(feed(&r, f, n), 20);
	assert_int_equal(st(&r), SWIW_MPA_S_CLOSED);
	assert_int_equal(out(&r)->violation, SWIW_V_MPA_BAD_RR);
	assert_int_equal(out(&r)->reject, SWIW_MPA_REJ_BY_US);
	assert_int_equal(wire_rev(&r), 2);
	assert_int_equal(wire_flags(&r), F_R);
	assert_int_equal(wire_pd_len(&r), 0);
	n = mkframe(f, true, 0, 255, false, 0, 0, NULL, 0);
	request_check(&c, f, n, SWIW_MPA_S_CLOSED, SWIW_V_MPA_BAD_RR, true);
	/* The enhanced flag with no room for its word. */
	n = mkframe(f, true, F_E, 2, false, 0, 0, "abc", 3);
	request_check(&c, f, n, SWIW_MPA_S_CLOSED, SWIW_V_MPA_BAD_RR, false);
	/* Reserved bits are ignored, the flag means nothing in rev 1. */
	n = mkframe(f, true, 0x0f, 2, false, 0, 0, "abc", 3);
	request_check(&c, f, n, SWIW_MPA_S_ULP_DECIDE, SWIW_V_NONE, false);
	n = mkframe(f, true, F_E | 0x0f, 1, false, 0, 0, "abc", 3);
	request_check(&c, f, n, SWIW_MPA_S_ULP_DECIDE, SWIW_V_NONE, false);
	side_init(&r, SWIW_MPA_RESPONDER, &c);
	feed(&r, f, n);
	assert_int_equal(out(&r)->peer_pd_len, 3);
	assert_int_equal(swiw_mpa_accept(&r.m, &ulp_none), 0);
	assert_int_equal(wire_flags(&r), 0);
	assert_int_equal(wire_rev(&r), 1);

	/* Initiator side. */
	initiator_sent(&i, &c, &ulp_none);
	n = mkframe(f, true, F_E, 2, true, W_A | 1, W_W | 1, NULL, 0);
	feed(&i, f, n);
	assert_int_equal(out(&i)->violation, SWIW_V_MPA_BAD_RR);
	assert_false(out(&i)->send_term);
	initiator_sent(&i, &c, &ulp_none);
	n = mkframe(f, false, F_E, 3, true, W_A | 1, W_W | 1, NULL, 0);
	feed(&i, f, n);
	assert_int_equal(out(&i)->violation, SWIW_V_MPA_BAD_RR);
	initiator_sent(&i, &c, &ulp_none);
	n = mkframe(f, false, 0, 0, false, 0, 0, NULL, 0);
	feed(&i, f, n);
	assert_int_equal(out(&i)->violation, SWIW_V_MPA_BAD_RR);
	/* A rev-2 Reply to a rev-1 Request. */
	c1 = c;
	c1.rev = 1;
	initiator_sent(&i, &c1, &ulp_none);
	n = mkframe(f, false, F_E, 2, true, W_A | 1, W_W | 1, NULL, 0);
	feed(&i, f, n);
	assert_int_equal(out(&i)->violation, SWIW_V_MPA_BAD_RR);
	assert_int_equal(out(&i)->error, -EPROTO);
	/* A rev-2 Reply without the flag: no word, lenient like cxgb4. */
	initiator_sent(&i, &c, &ulp_none);
	n = mkframe(f, false, 0, 2, false, 0, 0, "hi", 2);
	feed(&i, f, n);
	assert_int_equal(st(&i), SWIW_MPA_S_ESTABLISHED);
	assert_false(out(&i)->enhanced);
	assert_int_equal(out(&i)->peer_pd_len, 2);
}

/* PD_Length against what arrives. */
static void test_pd_len_mismatch(void **state)
{
	struct swiw_mpa_cfg c;
	struct side r;
	u8 f[64];
	size_t n;

	(void)state;
	swiw_mpa_cfg_init(&c);
	/* Announces 10, sends 14: the extra 4 are early data. */
	n = mkframe(f, true, 0, 1, false, 0, 0, "0123456789abcd", 14);
	swiw_put_be16(f + 18, 10);
	side_init(&r, SWIW_MPA_RESPONDER, &c);
	assert_int_equal(feed(&r, f, n), 30);
	assert_int_equal(out(&r)->violation, SWIW_V_MPA_EARLY_DATA);
	assert_int_equal(out(&r)->peer_pd_len, 10);
	assert_false(ev(&r) & SWIW_MPA_EV_TX);
	/* Announces 10, sends 5: waits, then times out. */
	side_init(&r, SWIW_MPA_RESPONDER, &c);
	assert_int_equal(feed(&r, f, 25), 25);
	assert_int_equal(st(&r), SWIW_MPA_S_AWAIT_REQUEST);
	assert_int_equal(swiw_mpa_timeout(&r.m), 0);
	assert_int_equal(out(&r)->error, -ETIMEDOUT);
	assert_int_equal(out(&r)->peer_pd_len, 0);
}

static void test_early_data(void **state)
{
	struct swiw_mpa_cfg c, off;
	struct side i, r;
	u8 f[64], extra[8] = { 0 };
	size_t n;

	(void)state;
	swiw_mpa_cfg_init(&c);
	off = c;
	off.p2p = SWIW_MPA_P2P_OFF;
	/* Bytes glued to the Request. */
	n = mkframe(f, true, F_E, 2, true, W_A | 1, W_W | 1, NULL, 0);
	f[n] = 0;
	side_init(&r, SWIW_MPA_RESPONDER, &c);
	assert_int_equal(feed(&r, f, n + 1), n);
	assert_int_equal(st(&r), SWIW_MPA_S_CLOSED);
	assert_int_equal(out(&r)->violation, SWIW_V_MPA_EARLY_DATA);
	assert_int_equal(ev(&r), SWIW_MPA_EV_CLOSED);
	assert_false(out(&r)->send_term);
	/* Bytes while the ULP decides. */
	side_init(&r, SWIW_MPA_RESPONDER, &c);
	assert_int_equal(feed(&r, f, n), n);
	assert_int_equal(feed(&r, f, 0), 0);
	assert_int_equal(st(&r), SWIW_MPA_S_ULP_DECIDE);
	assert_int_equal(feed(&r, extra, 1), 0);
	assert_int_equal(out(&r)->violation, SWIW_V_MPA_EARLY_DATA);
	assert_int_equal(swiw_mpa_accept(&r.m, &ulp_none), -EINVAL);
	/* Bytes before the Request went out. */
	side_init(&i, SWIW_MPA_INITIATOR, &c);
	assert_int_equal(feed(&i, extra, 4), 0);
	assert_int_equal(out(&i)->violation, SWIW_V_MPA_EARLY_DATA);
	assert_int_equal(swiw_mpa_connect(&i.m, &ulp_none), -EINVAL);
	/* Without RTR, bytes after the Reply are FPDUs: left alone. */
	initiator_sent(&i, &off, &ulp_none);
	n = mkframe(f, false, F_E, 2, true, 1, 1, NULL, 0);
	memset(f + n, 0xee, 8);
	assert_int_equal(feed(&i, f, n + 8), n);
	assert_int_equal(st(&i), SWIW_MPA_S_ESTABLISHED);
	assert_int_equal(feed(&i, f + n, 8), 0);
	assert_int_equal(st(&i), SWIW_MPA_S_ESTABLISHED);
	/* With an RTR due, the responder may not have sent anything. */
	initiator_sent(&i, &c, &ulp_none);
	n = mkframe(f, false, F_E, 2, true, W_A | 1, W_W | 1, NULL, 0);
	assert_int_equal(feed(&i, f, n + 8), n);
	assert_int_equal(st(&i), SWIW_MPA_S_CLOSED);
	assert_int_equal(out(&i)->violation, SWIW_V_MPA_EARLY_DATA);
	assert_true(out(&i)->send_term);
	/* Closing withdrew the RTR this same call had asked for. */
	assert_int_equal(ev(&i), SWIW_MPA_EV_TX | SWIW_MPA_EV_CLOSED);
	initiator_sent(&i, &c, &ulp_none);
	assert_int_equal(feed(&i, f, n), n);
	assert_int_equal(st(&i), SWIW_MPA_S_RTR_PENDING);
	assert_int_equal(feed(&i, extra, 2), 0);
	assert_int_equal(out(&i)->violation, SWIW_V_MPA_EARLY_DATA);
	/* Once the RTR is out, the stream is the engine's. */
	initiator_sent(&i, &c, &ulp_none);
	assert_int_equal(feed(&i, f, n), n);
	assert_int_equal(swiw_mpa_rtr_sent(&i.m), 0);
	assert_int_equal(feed(&i, extra, 8), 0);
	assert_int_equal(st(&i), SWIW_MPA_S_ESTABLISHED);
	/* The responder waiting for the RTR leaves FPDUs alone too. */
	side_init(&r, SWIW_MPA_RESPONDER, &c);
	n = mkframe(f, true, F_E, 2, true, W_A | 1, W_W | 1, NULL, 0);
	feed(&r, f, n);
	assert_int_equal(swiw_mpa_accept(&r.m, &ulp_none), 0);
	assert_int_equal(feed(&r, extra, 8), 0);
	assert_int_equal(st(&r), SWIW_MPA_S_AWAIT_RTR);
}

static void test_timeouts(void **state)
{
	struct swiw_mpa_cfg c;
	struct side i, r;
	u8 f[64];
	size_t n;
	u32 ms;

	(void)state;
	swiw_mpa_cfg_init(&c);
	c.reply_timeout_ms = 1234;
	/* Nothing to wait for before connect. */
	side_init(&i, SWIW_MPA_INITIATOR, &c);
	assert_int_equal(swiw_mpa_deadline(&i.m, &ms), SWIW_MPA_DL_NONE);
	assert_int_equal(ms, 0);
	assert_int_equal(swiw_mpa_timeout(&i.m), -EINVAL);
	/* The Reply. */
	assert_int_equal(swiw_mpa_connect(&i.m, &ulp_none), 0);
	assert_int_equal(swiw_mpa_deadline(&i.m, &ms), SWIW_MPA_DL_REPLY);
	assert_int_equal(ms, 1234);
	assert_int_equal(swiw_mpa_deadline(&i.m, NULL), SWIW_MPA_DL_REPLY);
	n = mkframe(f, false, F_E, 2, true, W_A | 1, W_W | 1, NULL, 0);
	feed(&i, f, 7); /* half a Reply does not stop the clock */
	assert_int_equal(swiw_mpa_timeout(&i.m), 0);
	assert_int_equal(st(&i), SWIW_MPA_S_CLOSED);
	assert_int_equal(out(&i)->error, -ETIMEDOUT);
	assert_int_equal(out(&i)->violation, SWIW_V_NONE);
	assert_true(ev(&i) & SWIW_MPA_EV_CLOSED);
	assert_int_equal(swiw_mpa_timeout(&i.m), -EINVAL);
	/* No deadline while the engine sends the RTR. */
	initiator_sent(&i, &c, &ulp_none);
	feed(&i, f, n);
	assert_int_equal(swiw_mpa_deadline(&i.m, &ms), SWIW_MPA_DL_NONE);
	assert_int_equal(swiw_mpa_timeout(&i.m), -EINVAL);

	/* The Request. */
	side_init(&r, SWIW_MPA_RESPONDER, &c);
	assert_int_equal(swiw_mpa_deadline(&r.m, &ms), SWIW_MPA_DL_REQUEST);
	assert_int_equal(ms, SWIW_MPA_REQUEST_TIMEOUT_MS);
	assert_int_equal(swiw_mpa_timeout(&r.m), 0);
	assert_int_equal(out(&r)->error, -ETIMEDOUT);
	assert_false(ev(&r) & SWIW_MPA_EV_TX);
	/* None while the ULP decides (siw has none either). */
	side_init(&r, SWIW_MPA_RESPONDER, &c);
	n = mkframe(f, true, F_E, 2, true, W_A | 1, W_W | 1, NULL, 0);
	feed(&r, f, n);
	assert_int_equal(swiw_mpa_deadline(&r.m, &ms), SWIW_MPA_DL_NONE);
	assert_int_equal(swiw_mpa_timeout(&r.m), -EINVAL);
	/* The RTR. */
	assert_int_equal(swiw_mpa_accept(&r.m, &ulp_none), 0);
	assert_int_equal(swiw_mpa_deadline(&r.m, &ms), SWIW_MPA_DL_RTR);
	assert_int_equal(ms, SWIW_MPA_RTR_TIMEOUT_MS);
	assert_int_equal(swiw_mpa_timeout(&r.m), 0);
	assert_int_equal(out(&r)->error, -ETIMEDOUT);
	assert_false(out(&r)->send_term);
	assert_int_equal(swiw_mpa_rtr_received(&r.m, SWIW_MPA_RTR_WRITE),
			 -EINVAL);
}

/*
 * Resumability: a frame fed whole, at every split point, and byte by
 * byte, ends in the same state, outcome and output. @extra bytes after
 * the frame exercise the consumed count.
 */
struct resume_case {
	bool responder;
	struct swiw_mpa_cfg cfg;
	u8 frame[300];
	size_t len;
};

static void resume_start(struct side *s, const struct resume_case *rc)
{
	if (rc->responder)
		side_init(s, SWIW_MPA_RESPONDER, &rc->cfg);
	else
		initiator_sent(s, &rc->cfg, &ulp_none);
	s->ev = 0;
}

static void resume_compare(struct side *a, struct side *b)
{
	const struct swiw_mpa_outcome *x = out(a), *y = out(b);

	assert_int_equal(st(a), st(b));
	/*
	 * A close withdraws only the events of its own call: fed in
	 * pieces, EV_REQUEST may have been fetched before bytes close it.
	 */
	if (st(a) == SWIW_MPA_S_CLOSED)
		assert_int_equal(ev(a) & (SWIW_MPA_EV_TX | SWIW_MPA_EV_CLOSED),
				 ev(b) & (SWIW_MPA_EV_TX | SWIW_MPA_EV_CLOSED));
	else
		assert_int_equal(ev(a), ev(b));
	assert_int_equal(x->error, y->error);
	assert_int_equal(x->violation, y->violation);
	assert_int_equal(x->send_term, y->send_term);
	assert_int_equal(x->reject, y->reject);
	assert_int_equal(x->rev, y->rev);
	assert_int_equal(x->crc, y->crc);
	assert_int_equal(x->p2p, y->p2p);
	assert_int_equal(x->rtr, y->rtr);
	assert_int_equal(x->ird, y->ird);
	assert_int_equal(x->ord, y->ord);
	assert_int_equal(x->peer_ird, y->peer_ird);
	assert_int_equal(x->peer_ord, y->peer_ord);
	assert_int_equal(x->peer_rtr, y->peer_rtr);
	assert_int_equal(x->peer_pd_len, y->peer_pd_len);
	assert_memory_equal(x->peer_pd, y->peer_pd, x->peer_pd_len);
	assert_int_equal(x->tx_len, y->tx_len);
	assert_memory_equal(a->tx, b->tx, x->tx_len);
}

/* Feeds [off, end) in pieces of @step (0: the whole rest at once). */
static size_t resume_feed(struct side *s, const u8 *f, size_t len, size_t step)
{
	size_t off = 0, n, used;

	while (off < len) {
		n = step ? SWIW_MIN(step, len - off) : len - off;
		used = feed(s, f + off, n);
		off += used;
		if (used < n)
			break;
	}
	return off;
}

static void resume_one(const struct resume_case *rc, size_t extra)
{
	struct side ref, s;
	size_t len = rc->len + extra, k, took, first;

	resume_start(&ref, rc);
	took = resume_feed(&ref, rc->frame, len, 0);
	assert_true(took <= len);
	/* Every split into two. */
	for (k = 1; k < len; k++) {
		resume_start(&s, rc);
		first = feed(&s, rc->frame, k);
		assert_int_equal(first, k <= took ? k : took);
		if (first == k)
			feed(&s, rc->frame + k, len - k);
		resume_compare(&ref, &s);
	}
	/* Byte by byte. */
	resume_start(&s, rc);
	assert_int_equal(resume_feed(&s, rc->frame, len, 1), took);
	resume_compare(&ref, &s);
	/* Odd strides. */
	resume_start(&s, rc);
	assert_int_equal(resume_feed(&s, rc->frame, len, 3), took);
	resume_compare(&ref, &s);
	resume_start(&s, rc);
	assert_int_equal(resume_feed(&s, rc->frame, len, 7), took);
	resume_compare(&ref, &s);
}

static void test_resumable(void **state)
{
	static struct resume_case rc[12];
	u8 pd[256];
	unsigned int k, n = 0;

	(void)state;
	for (k = 0; k < sizeof(pd); k++)
		pd[k] = (u8)(k * 7 + 1);
	for (k = 0; k < SWIW_ARRAY_SIZE(rc); k++)
		swiw_mpa_cfg_init(&rc[k].cfg);
	/* Requests. */
	rc[n].responder = true;
	rc[n].len = mkframe(rc[n].frame, true, F_E, 2, true, W_A | 3,
			    W_W | W_R | 5, pd, 40);
	n++;
	rc[n].responder = true;
	rc[n].len = mkframe(rc[n].frame, true, F_C, 1, false, 0, 0, pd, 256);
	n++;
	rc[n].responder = true;
	rc[n].len = mkframe(rc[n].frame, true, F_E, 2, true, 1, 1, NULL, 0);
	n++;
	rc[n].responder = true; /* rejected: markers */
	rc[n].cfg.markers_can_send = false;
	rc[n].len = mkframe(rc[n].frame, true, F_M | F_E, 2, true, W_A | 3,
			    W_W | 5, pd, 9);
	n++;
	rc[n].responder = true; /* bad key, found late */
	rc[n].len = mkframe(rc[n].frame, true, F_E, 2, true, W_A | 3, W_W | 5,
			    pd, 9);
	rc[n].frame[15] = 'x';
	n++;
	rc[n].responder = true; /* too long */
	rc[n].len = mkframe(rc[n].frame, true, 0, 1, false, 0, 0, pd, 200);
	swiw_put_be16(rc[n].frame + 18, 300);
	n++;
	/* Replies. */
	rc[n].len = mkframe(rc[n].frame, false, F_E, 2, true, W_A | 3, W_R | 5,
			    pd, 100);
	n++;
	rc[n].len = mkframe(rc[n].frame, false, F_E | F_R, 2, true, W_A | 3,
			    W_R | 5, pd, 30);
	n++;
	rc[n].cfg.p2p = SWIW_MPA_P2P_OFF;
	rc[n].len =
		mkframe(rc[n].frame, false, F_E | F_C, 2, true, 3, 5, pd, 17);
	n++;
	rc[n].len = mkframe(rc[n].frame, false, F_C, 1, false, 0, 0, pd, 3);
	n++;
	rc[n].len =
		mkframe(rc[n].frame, false, F_E, 2, true, 3, W_R | 5, pd, 5);
	n++;
	rc[n].len =
		mkframe(rc[n].frame, false, F_E, 2, true, W_A, W_W, NULL, 0);
	n++;
	for (k = 0; k < n; k++) {
		/* Trailing bytes beyond the frame: data or early data. */
		memset(rc[k].frame + rc[k].len, 0xa5,
		       sizeof(rc[k].frame) - rc[k].len);
		resume_one(&rc[k], 0);
		resume_one(&rc[k], SWIW_MIN((size_t)6,
					    sizeof(rc[k].frame) - rc[k].len));
	}
}

/* IRD/ORD negotiation as siw and cxgb4 do it, and irdma's 0x3FFF. */
static void test_ird_ord(void **state)
{
	struct swiw_mpa_cfg c;
	struct side i;
	struct hs h;
	u8 f[64];
	size_t n;

	(void)state;
	/* Relaxed: responder ORD down to the initiator's IRD, IRD up. */
	hs_init(&h);
	h.iulp = (struct swiw_mpa_ulp){ NULL, 0, 4, 8 };
	h.rulp = (struct swiw_mpa_ulp){ NULL, 0, 2, 16 };
	hs_run(&h);
	assert_established(&h);
	assert_int_equal(out(&h.r)->ird, 8);
	assert_int_equal(out(&h.r)->ord, 4);
	assert_int_equal(wire_w0(&h.r) & 0x3fff, 8);
	assert_int_equal(wire_w1(&h.r) & 0x3fff, 4);
	assert_int_equal(out(&h.i)->ird, 4);
	assert_int_equal(out(&h.i)->ord, 8);
	assert_true(out(&h.r)->ird_ord_negotiated);

	/* Relaxed, but beyond ird_max: the responder rejects. */
	hs_init(&h);
	h.rcfg.ird_max = 6;
	h.iulp = (struct swiw_mpa_ulp){ NULL, 0, 4, 8 };
	h.rulp = (struct swiw_mpa_ulp){ NULL, 0, 2, 2 };
	hs_run(&h);
	assert_int_equal(out(&h.r)->violation, SWIW_V_MPA_INSUFFICIENT_IRD);
	assert_int_equal(out(&h.r)->reject, SWIW_MPA_REJ_BY_US);
	assert_int_equal(out(&h.i)->error, -ECONNREFUSED);

	/* Strict responder: either mismatch rejects. */
	hs_init(&h);
	h.rcfg.relaxed_ird = false;
	h.iulp = (struct swiw_mpa_ulp){ NULL, 0, 4, 8 };
	h.rulp = (struct swiw_mpa_ulp){ NULL, 0, 8, 8 };
	hs_run(&h);
	assert_int_equal(out(&h.r)->violation, SWIW_V_MPA_INSUFFICIENT_IRD);
	hs_init(&h);
	h.rcfg.relaxed_ird = false;
	h.iulp = (struct swiw_mpa_ulp){ NULL, 0, 4, 8 };
	h.rulp = (struct swiw_mpa_ulp){ NULL, 0, 4, 4 };
	hs_run(&h);
	assert_int_equal(out(&h.r)->violation, SWIW_V_MPA_INSUFFICIENT_IRD);
	hs_init(&h);
	h.rcfg.relaxed_ird = false;
	h.icfg.relaxed_ird = false;
	h.iulp = (struct swiw_mpa_ulp){ NULL, 0, 4, 8 };
	h.rulp = (struct swiw_mpa_ulp){ NULL, 0, 8, 4 };
	hs_run(&h);
	assert_established(&h);
	assert_int_equal(out(&h.i)->ird, 4);
	assert_int_equal(out(&h.i)->ord, 8);

	/* Strict initiator: a Reply it cannot meet is TERMINATEd. */
	swiw_mpa_cfg_init(&c);
	c.relaxed_ird = false;
	initiator_sent(&i, &c, &(struct swiw_mpa_ulp){ NULL, 0, 4, 8 });
	n = mkframe(f, false, F_E, 2, true, W_A | 8, W_W | 5, NULL, 0);
	feed(&i, f, n);
	assert_int_equal(out(&i)->violation, SWIW_V_MPA_INSUFFICIENT_IRD);
	assert_true(out(&i)->send_term);
	assert_int_equal(out(&i)->error, -EPROTO);
	assert_int_equal(out(&i)->ird, 5); /* as siw: what the peer said */
	initiator_sent(&i, &c, &(struct swiw_mpa_ulp){ NULL, 0, 4, 8 });
	n = mkframe(f, false, F_E, 2, true, W_A | 7, W_W | 4, NULL, 0);
	feed(&i, f, n);
	assert_int_equal(out(&i)->violation, SWIW_V_MPA_INSUFFICIENT_IRD);
	/* Relaxed initiator: IRD follows the responder's ORD. */
	swiw_mpa_cfg_init(&c);
	initiator_sent(&i, &c, &(struct swiw_mpa_ulp){ NULL, 0, 4, 8 });
	n = mkframe(f, false, F_E, 2, true, W_A | 7, W_W | 5, NULL, 0);
	feed(&i, f, n);
	assert_int_equal(st(&i), SWIW_MPA_S_RTR_PENDING);
	assert_int_equal(out(&i)->ird, 5);
	assert_int_equal(out(&i)->ord, 7);
	c.ird_max = 4;
	initiator_sent(&i, &c, &(struct swiw_mpa_ulp){ NULL, 0, 4, 8 });
	feed(&i, f, n);
	assert_int_equal(out(&i)->violation, SWIW_V_MPA_INSUFFICIENT_IRD);

	/* A Read RTR against an IRD of 0. */
	swiw_mpa_cfg_init(&c);
	initiator_sent(&i, &c, &(struct swiw_mpa_ulp){ NULL, 0, 4, 0 });
	assert_int_equal(wire_w1(&i) & 0x3fff, 1); /* ORD 0 sent as 1 */
	n = mkframe(f, false, F_E, 2, true, W_A | 0, W_R | 4, NULL, 0);
	feed(&i, f, n);
	assert_int_equal(out(&i)->violation, SWIW_V_MPA_INSUFFICIENT_IRD);
	/* ... and the responder makes room for it. */
	hs_init(&h);
	h.icfg.rtr_offer = SWIW_MPA_RTR_F_READ;
	h.iulp = (struct swiw_mpa_ulp){ NULL, 0, 0, 0 };
	h.rulp = (struct swiw_mpa_ulp){ NULL, 0, 0, 0 };
	h.rcfg.relaxed_ird = false;
	h.icfg.relaxed_ird = false;
	hs_run(&h);
	/* Strict: the initiator's ORD 1 exceeds our IRD 0. */
	assert_int_equal(out(&h.r)->violation, SWIW_V_MPA_INSUFFICIENT_IRD);
	hs_init(&h);
	h.icfg.rtr_offer = SWIW_MPA_RTR_F_READ;
	h.iulp = (struct swiw_mpa_ulp){ NULL, 0, 0, 0 };
	h.rulp = (struct swiw_mpa_ulp){ NULL, 0, 0, 0 };
	hs_run(&h);
	assert_established(&h);
	assert_int_equal(out(&h.i)->ord, 1);
	assert_int_equal(out(&h.r)->ird, 1);

	/* irdma's 0x3FFF: no negotiation, answered with 0x3FFF. */
	hs_init(&h);
	h.iulp = (struct swiw_mpa_ulp){ NULL, 0, SWIW_MPA_IRD_ORD_NONE,
					SWIW_MPA_IRD_ORD_NONE };
	h.rulp = (struct swiw_mpa_ulp){ NULL, 0, 3, 2 };
	h.rcfg.relaxed_ird = false;
	hs_run(&h);
	assert_established(&h);
	assert_int_equal(wire_w0(&h.i), W_A | 0x3fff);
	assert_int_equal(wire_w0(&h.r), W_A | 0x3fff);
	assert_int_equal(wire_w1(&h.r), W_W | 0x3fff);
	assert_false(out(&h.r)->ird_ord_negotiated);
	assert_false(out(&h.i)->ird_ord_negotiated);
	assert_int_equal(out(&h.r)->ird, 3);
	assert_int_equal(out(&h.r)->ord, 2);
	assert_int_equal(out(&h.i)->ird, SWIW_MPA_IRD_ORD_NONE);
	/* One field is enough, either side. */
	swiw_mpa_cfg_init(&c);
	c.relaxed_ird = false;
	initiator_sent(&i, &c, &(struct swiw_mpa_ulp){ NULL, 0, 4, 8 });
	n = mkframe(f, false, F_E, 2, true, W_A | 2, W_W | 0x3fff, NULL, 0);
	feed(&i, f, n);
	assert_int_equal(st(&i), SWIW_MPA_S_RTR_PENDING);
	assert_false(out(&i)->ird_ord_negotiated);
	assert_int_equal(out(&i)->ird, 4);
	assert_int_equal(out(&i)->ord, 8);
}

/*
 * Frames as the kernel's stacks build them. siw (siw_cm.c): a default
 * rping -c Request is rev 2, flags 0x10, PD_Length 4, IRD 1, ORD 1, no
 * A; its Reply copies the Request's header bits, echoes A and picks
 * Write, then Read.
 */
static void test_siw_frames(void **state)
{
	struct swiw_mpa_cfg c;
	struct side r, i;
	u8 f[64];
	size_t n;

	(void)state;
	swiw_mpa_cfg_init(&c);
	side_init(&r, SWIW_MPA_RESPONDER, &c);
	n = mkframe(f, true, F_E, 2, true, 1, 1, NULL, 0);
	assert_int_equal(feed(&r, f, n), 24);
	assert_int_equal(st(&r), SWIW_MPA_S_ULP_DECIDE);
	assert_int_equal(out(&r)->peer_pd_len, 0);
	assert_false(out(&r)->peer_p2p);
	assert_int_equal(swiw_mpa_accept(&r.m, &ulp_none), 0);
	assert_int_equal(st(&r), SWIW_MPA_S_ESTABLISHED);
	assert_int_equal(wire_flags(&r), F_E);
	assert_int_equal(wire_rev(&r), 2);
	assert_int_equal(wire_pd_len(&r), 4);
	assert_int_equal(wire_w0(&r), 1);
	assert_int_equal(wire_w1(&r), 1);
	/* siw's peer_to_peer Request (Write|Read offered, ORD >= 1). */
	side_init(&r, SWIW_MPA_RESPONDER, &c);
	n = mkframe(f, true, F_E, 2, true, W_A | 1, W_W | W_R | 1, NULL, 0);
	feed(&r, f, n);
	assert_int_equal(swiw_mpa_accept(&r.m, &ulp_none), 0);
	assert_int_equal(out(&r)->rtr, SWIW_MPA_RTR_WRITE);
	assert_int_equal(wire_w0(&r), W_A | 1);
	assert_int_equal(wire_w1(&r), W_W | 1);
	/* siw answering our default Request. */
	initiator_sent(&i, &c, &ulp_none);
	n = mkframe(f, false, wire_flags(&i), 2, true, W_A | 1, W_W | 1, NULL,
		    0);
	feed(&i, f, n);
	assert_int_equal(st(&i), SWIW_MPA_S_RTR_PENDING);
	assert_int_equal(out(&i)->rtr, SWIW_MPA_RTR_WRITE);
	/* siw's reject (siw_reject): the Request's bits plus R. */
	initiator_sent(&i, &c, &ulp_none);
	n = mkframe(f, false, F_E | F_R, 2, true, W_A | 1, W_W | 1, "no", 2);
	feed(&i, f, n);
	assert_int_equal(out(&i)->error, -ECONNREFUSED);
	assert_int_equal(out(&i)->peer_pd_len, 2);
	/* A siw Request with markers is never built; siw rejects ours. */
	c.markers_wanted = true;
	initiator_sent(&i, &c, &ulp_none);
	n = mkframe(f, false, F_E | F_M | F_R, 2, true, W_A | 1, W_W | 1, NULL,
		    0);
	feed(&i, f, n);
	assert_int_equal(out(&i)->reject, SWIW_MPA_REJ_BY_PEER);
}

/*
 * irdma (cm.c): C always, A always, Write|Read offered; as a responder
 * it picks Read. iw_ooo would add M.
 */
static void test_irdma_frames(void **state)
{
	struct swiw_mpa_cfg c;
	struct side r, i;
	u8 f[64];
	size_t n;

	(void)state;
	swiw_mpa_cfg_init(&c);
	side_init(&r, SWIW_MPA_RESPONDER, &c);
	n = mkframe(f, true, F_C | F_E, 2, true, W_A | 64, W_W | W_R | 64, NULL,
		    0);
	feed(&r, f, n);
	assert_int_equal(swiw_mpa_accept(&r.m, &ulp_none), 0);
	assert_true(out(&r)->crc);
	assert_int_equal(out(&r)->rtr, SWIW_MPA_RTR_WRITE);
	assert_int_equal(wire_flags(&r), F_C | F_E);
	assert_int_equal(wire_w0(&r), W_A | 64);
	assert_int_equal(wire_w1(&r), W_W | 1);
	/* irdma with iw_ooo: M asked, we send markers. */
	side_init(&r, SWIW_MPA_RESPONDER, &c);
	n = mkframe(f, true, F_M | F_C | F_E, 2, true, W_A | 64, W_W | W_R | 64,
		    NULL, 0);
	feed(&r, f, n);
	assert_int_equal(swiw_mpa_accept(&r.m, &ulp_none), 0);
	assert_true(out(&r)->markers_tx);
	/* irdma's Reply to us: Read chosen, CRC on. */
	initiator_sent(&i, &c, &ulp_none);
	n = mkframe(f, false, F_C | F_E, 2, true, W_A | 1, W_R | 1, NULL, 0);
	feed(&i, f, n);
	assert_int_equal(st(&i), SWIW_MPA_S_RTR_PENDING);
	assert_int_equal(out(&i)->rtr, SWIW_MPA_RTR_READ);
	assert_true(out(&i)->crc);
	/* ... and its 0x3FFF Reply after our 0x3FFF. */
	initiator_sent(&i, &c, &ulp_none);
	n = mkframe(f, false, F_C | F_E, 2, true, W_A | 0x3fff, W_R | 0x3fff,
		    NULL, 0);
	feed(&i, f, n);
	assert_int_equal(st(&i), SWIW_MPA_S_RTR_PENDING);
	assert_false(out(&i)->ird_ord_negotiated);
}

/*
 * cxgb4 (cm.c, peer2peer=1 p2p_type=READ crc_enabled=1): a Request
 * offering only Read, IRD 32 ORD 1, 32 octets of NVMe-oF data (the
 * capture in softiwarp#18); its Reply picks its own p2p_type, Read.
 */
static void test_cxgb4_frames(void **state)
{
	struct swiw_mpa_cfg c;
	struct side r, i;
	u8 f[80], pd[32];
	size_t n;

	(void)state;
	memset(pd, 0x42, sizeof(pd));
	swiw_mpa_cfg_init(&c);
	side_init(&r, SWIW_MPA_RESPONDER, &c);
	n = mkframe(f, true, F_C | F_E, 2, true, W_A | 32, W_R | 1, pd, 32);
	assert_int_equal(swiw_get_be16(f + 18), 36);
	feed(&r, f, n);
	assert_int_equal(out(&r)->peer_pd_len, 32);
	assert_int_equal(
		swiw_mpa_accept(&r.m, &(struct swiw_mpa_ulp){ NULL, 0, 0, 32 }),
		0);
	assert_int_equal(out(&r)->rtr, SWIW_MPA_RTR_READ);
	assert_true(wire_w0(&r) & W_A);
	assert_int_equal(wire_w1(&r) & 0xc000, W_R);
	assert_int_equal(out(&r)->ird, 1);
	assert_int_equal(out(&r)->ord, 32);
	assert_int_equal(st(&r), SWIW_MPA_S_AWAIT_RTR);
	assert_int_equal(swiw_mpa_rtr_received(&r.m, SWIW_MPA_RTR_READ), 0);
	assert_int_equal(st(&r), SWIW_MPA_S_ESTABLISHED);
	/* cxgb4 answering our default Request. */
	initiator_sent(&i, &c, &ulp_none);
	n = mkframe(f, false, F_C | F_E, 2, true, W_A | 32, W_R | 1, NULL, 0);
	feed(&i, f, n);
	assert_int_equal(out(&i)->rtr, SWIW_MPA_RTR_READ);
	assert_true(out(&i)->crc);
	/* cxgb4's reject carries its own p2p_type bit. */
	initiator_sent(&i, &c, &ulp_none);
	n = mkframe(f, false, F_R | F_E, 2, true, W_A, W_R, NULL, 0);
	feed(&i, f, n);
	assert_int_equal(out(&i)->error, -ECONNREFUSED);
}

/* Terminal states stay terminal; calls in the wrong state are refused. */
static void test_terminal(void **state)
{
	struct hs h;
	struct side *s[2];
	u8 junk[32];
	unsigned int k;

	(void)state;
	memset(junk, 0, sizeof(junk));
	hs_init(&h);
	hs_run(&h);
	assert_established(&h);
	s[0] = &h.i;
	s[1] = &h.r;
	for (k = 0; k < 2; k++) {
		assert_int_equal(swiw_mpa_connect(&s[k]->m, &ulp_none),
				 -EINVAL);
		assert_int_equal(swiw_mpa_accept(&s[k]->m, &ulp_none), -EINVAL);
		assert_int_equal(swiw_mpa_reject(&s[k]->m, NULL, 0), -EINVAL);
		assert_int_equal(swiw_mpa_rtr_sent(&s[k]->m), -EINVAL);
		assert_int_equal(swiw_mpa_rtr_received(&s[k]->m,
						       SWIW_MPA_RTR_WRITE),
				 -EINVAL);
		assert_int_equal(swiw_mpa_timeout(&s[k]->m), -EINVAL);
		assert_int_equal(feed(s[k], junk, sizeof(junk)), 0);
		assert_int_equal(st(s[k]), SWIW_MPA_S_ESTABLISHED);
		assert_int_equal(swiw_mpa_events(&s[k]->m), 0);
	}
	/* Closed. */
	side_init(&h.r, SWIW_MPA_RESPONDER, &h.rcfg);
	assert_int_equal(swiw_mpa_timeout(&h.r.m), 0);
	swiw_mpa_events(&h.r.m);
	assert_int_equal(feed(&h.r, junk, sizeof(junk)), 0);
	assert_int_equal(swiw_mpa_accept(&h.r.m, &ulp_none), -EINVAL);
	assert_int_equal(swiw_mpa_rtr_received(&h.r.m, SWIW_MPA_RTR_NONE),
			 -EINVAL);
	assert_int_equal(swiw_mpa_timeout(&h.r.m), -EINVAL);
	assert_int_equal(st(&h.r), SWIW_MPA_S_CLOSED);
	assert_int_equal(out(&h.r)->error, -ETIMEDOUT);
	assert_int_equal(swiw_mpa_events(&h.r.m), 0);
	/* Role mix-ups. */
	side_init(&h.i, SWIW_MPA_INITIATOR, &h.icfg);
	assert_int_equal(swiw_mpa_accept(&h.i.m, &ulp_none), -EINVAL);
	assert_int_equal(swiw_mpa_rtr_received(&h.i.m, SWIW_MPA_RTR_NONE),
			 -EINVAL);
	side_init(&h.r, SWIW_MPA_RESPONDER, &h.rcfg);
	assert_int_equal(swiw_mpa_connect(&h.r.m, &ulp_none), -EINVAL);
	assert_int_equal(swiw_mpa_rtr_sent(&h.r.m), -EINVAL);
	/* Input argument checks. */
	assert_int_equal(swiw_mpa_input(&h.r.m, junk, 1, NULL), -EINVAL);
	{
		size_t used;

		assert_int_equal(swiw_mpa_input(&h.r.m, NULL, 1, &used),
				 -EINVAL);
		assert_int_equal(swiw_mpa_input(&h.r.m, NULL, 0, &used), 0);
		assert_int_equal(used, 0);
	}
}

/* Locating the ULP's private data in a whole frame, as the broker does. */
static void test_frame_ulp_pd(void **state)
{
	u8 f[20 + 4 + 3];
	const u8 *pd;
	u16 len;

	(void)state;
	memcpy(f, MPA_KEY_REQ, 16);
	f[16] = MPA_RR_FLAG_ENHANCED;
	f[17] = MPA_REV_2;
	f[18] = 0;
	f[19] = 7; /* the RFC 6581 word, then "abc" */
	memcpy(f + 20, (const u8[]){ 0, 1, 0, 1, 'a', 'b', 'c' }, 7);
	assert_int_equal(swiw_mpa_frame_ulp_pd(f, sizeof(f), true, &pd, &len),
			 0);
	assert_int_equal(len, 3);
	assert_memory_equal(pd, "abc", 3);
	/* Rev 1 (or no 0x10 flag): every octet is the ULP's. */
	f[17] = MPA_REV_1;
	assert_int_equal(swiw_mpa_frame_ulp_pd(f, sizeof(f), true, &pd, &len),
			 0);
	assert_int_equal(len, 7);
	assert_ptr_equal(pd, f + 20);
	f[17] = MPA_REV_2;
	f[16] = 0;
	assert_int_equal(swiw_mpa_frame_ulp_pd(f, sizeof(f), true, &pd, &len),
			 0);
	assert_int_equal(len, 7);
	/* A Reply key where a Request is expected, lengths that disagree,
	 * an enhanced frame too short for its word. */
	assert_int_equal(swiw_mpa_frame_ulp_pd(f, sizeof(f), false, &pd, &len),
			 -EBADMSG);
	assert_int_equal(swiw_mpa_frame_ulp_pd(f, sizeof(f) - 1, true, &pd,
					       &len),
			 -EBADMSG);
	assert_int_equal(swiw_mpa_frame_ulp_pd(f, 19, true, &pd, &len),
			 -EBADMSG);
	f[16] = MPA_RR_FLAG_ENHANCED;
	f[19] = 2;
	assert_int_equal(swiw_mpa_frame_ulp_pd(f, 22, true, &pd, &len),
			 -EBADMSG);
}

/*
 * swiw_mpa_rr_need() reads the frame where a stream put it: at an odd
 * address too (the sanitizer builds trap a misaligned __be16 load).
 */
static void test_rr_need_any_address(void **state)
{
	_Alignas(4) u8 buf[1 + 20];
	size_t off;

	(void)state;
	for (off = 0; off < 2; off++) {
		u8 *f = buf + off;

		memset(buf, 0, sizeof(buf));
		memcpy(f, MPA_KEY_REQ, 16);
		f[17] = MPA_REV_2;
		f[18] = 0x01;
		f[19] = 0x02;
		assert_int_equal(swiw_mpa_rr_need(f, 19), 20);
		assert_int_equal(swiw_mpa_rr_need(f, 20), 20 + 0x102);
		f[18] = 0xff;
		f[19] = 0xff;
		assert_int_equal(swiw_mpa_rr_need(f, 20), 20 + 0xffff);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_rev2_defaults),
		cmocka_unit_test(test_rev1_both),
		cmocka_unit_test(test_rev1_to_rev2),
		cmocka_unit_test(test_rev2_to_rev1),
		cmocka_unit_test(test_p2p_each_rtr),
		cmocka_unit_test(test_p2p_preferences),
		cmocka_unit_test(test_no_p2p),
		cmocka_unit_test(test_p2p_reply_checks),
		cmocka_unit_test(test_rtr_mismatch),
		cmocka_unit_test(test_wait_first_fpdu),
		cmocka_unit_test(test_v1_rtr),
		cmocka_unit_test(test_crc),
		cmocka_unit_test(test_crc_reply_without_c),
		cmocka_unit_test(test_markers),
		cmocka_unit_test(test_reject),
		cmocka_unit_test(test_local_pd_limits),
		cmocka_unit_test(test_peer_pd_too_long),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_pd_len_mismatch),
		cmocka_unit_test(test_early_data),
		cmocka_unit_test(test_timeouts),
		cmocka_unit_test(test_resumable),
		cmocka_unit_test(test_ird_ord),
		cmocka_unit_test(test_siw_frames),
		cmocka_unit_test(test_irdma_frames),
		cmocka_unit_test(test_cxgb4_frames),
		cmocka_unit_test(test_terminal),
		cmocka_unit_test(test_frame_ulp_pd),
		cmocka_unit_test(test_rr_need_any_address),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
