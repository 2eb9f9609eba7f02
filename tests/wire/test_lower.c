// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The lower half of helper streams (swiw_lower.h): two instances over a
 * real TCP loopback connection, each in the small environment of
 * lower_env.h, with txds, RQEs and events through ring memory laid out
 * as swiw-abi.h says. The test plays both providers (upper halves): it
 * cuts messages into txds with swiw_ddp_tx, posts RQEs and reads events.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

#include "lower_env.h"
#include "swiw_mpa.h"
#include "wire_test.h"
#include "../lib/swiw_tcp_pair.h"

#define RW (SWIW_ACC_LOCAL_WRITE | SWIW_ACC_REMOTE_WRITE)

struct side {
	struct env e;
	u32 msn_send, msn_rreq;
	bool stop_tx, stop_rx;
	bool pull; /* the lower half reads the socket itself */
	bool eof, closed_fed;
	size_t rhead, rtail;
	u8 rbuf[1 << 17];
};

struct opts {
	bool crc, markers_ab, markers_ba, rtr_b;
	u32 ev_num_b, pos_ab;
};

static struct side *A, *B;

static void tcp_pair(int *a, int *b)
{
	assert_int_equal(swiw_tcp_pair(a, b, 0, true), 0);
	assert_int_equal(fcntl(*a, F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(fcntl(*b, F_SETFL, O_NONBLOCK), 0);
}

static struct side *side_new(int fd, u32 ev_num)
{
	struct side *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->e.fd = fd;
	s->msn_send = s->msn_rreq = 1;
	env_rings(&s->e, ev_num);
	s->e.l = malloc(sizeof(*s->e.l));
	assert_non_null(s->e.l);
	return s;
}

static void pair_new(const struct opts *o)
{
	int fa, fb;

	tcp_pair(&fa, &fb);
	A = side_new(fa, 16);
	B = side_new(fb, o->ev_num_b ? o->ev_num_b : 16);
	A->e.cfg.crc = B->e.cfg.crc = o->crc;
	A->e.cfg.markers_tx = B->e.cfg.markers_rx = o->markers_ab;
	B->e.cfg.markers_tx = A->e.cfg.markers_rx = o->markers_ba;
	A->e.cfg.tx_pos = B->e.cfg.rx_pos = o->pos_ab;
	B->e.cfg.rtr_event = o->rtr_b;
	A->e.cfg.qp_access = B->e.cfg.qp_access = SWIW_ACC_REMOTE_WRITE |
						  SWIW_ACC_REMOTE_READ |
						  SWIW_ACC_REMOTE_ATOMIC;
	assert_int_equal(swiw_lower_init(A->e.l, &A->e.cfg, &env_ops, &A->e),
			 0);
	assert_int_equal(swiw_lower_init(B->e.l, &B->e.cfg, &env_ops, &B->e),
			 0);
}

/* Both sides detach; nothing may stay held. */
static void side_free(struct side *s)
{
	int i;

	swiw_lower_fini(s->e.l);
	for (i = 0; i < ENV_NREG; i++)
		assert_int_equal(s->e.reg[i].holds, 0);
	assert_int_equal(s->e.locked, 0);
	if (s->e.fd >= 0)
		close(s->e.fd);
	env_free(&s->e);
	free(s);
}

static int teardown(void **state)
{
	(void)state;
	if (A)
		side_free(A);
	if (B)
		side_free(B);
	A = B = NULL;
	return 0;
}

/* One round for one side: transmit, receive, feed. True if it moved. */
static bool side_step(struct side *s)
{
	struct swiw_lower *l = s->e.l;
	u64 sent = s->e.sent;
	bool moved = false;
	size_t used;
	ssize_t r;

	if (!s->stop_tx)
		swiw_lower_tx(l);
	moved = s->e.sent != sent;
	if (s->pull) {
		u32 pos = swiw_fpdu_rx_pos(&l->frx);

		assert_true(swiw_lower_rx_pull(l, 4) >= 0);
		return moved || pos != swiw_fpdu_rx_pos(&l->frx);
	}
	if (!s->eof && s->rtail < sizeof(s->rbuf)) {
		r = recv(s->e.fd, s->rbuf + s->rtail,
			 sizeof(s->rbuf) - s->rtail, MSG_DONTWAIT);
		if (r > 0) {
			s->rtail += (size_t)r;
			moved = true;
		} else if (r == 0) {
			s->eof = true;
		} else {
			assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
		}
	}
	if (!s->stop_rx && s->rhead < s->rtail) {
		assert_int_equal(swiw_lower_rx(l, s->rbuf + s->rhead,
					       s->rtail - s->rhead, &used),
				 0);
		assert_true(used <= s->rtail - s->rhead);
		if (used)
			moved = true;
		/* Only a stall or the end of reception leaves octets. */
		if (used < s->rtail - s->rhead)
			assert_true(swiw_lower_stalled(l) ||
				    swiw_lower_rx_done(l));
		s->rhead += used;
		if (s->rhead == s->rtail) {
			s->rhead = s->rtail = 0;
		} else if (s->rhead > sizeof(s->rbuf) / 2) {
			memmove(s->rbuf, s->rbuf + s->rhead,
				s->rtail - s->rhead);
			s->rtail -= s->rhead;
			s->rhead = 0;
		}
	}
	if (!s->stop_rx && s->eof && s->rhead == s->rtail && !s->closed_fed) {
		swiw_lower_rx_closed(l, 0);
		s->closed_fed = true;
		moved = true;
	}
	return moved;
}

/* Runs both sides until nothing moves for a few rounds. */
static void pump(void)
{
	struct pollfd pf[2];
	int idle = 0, guard = 0;
	bool m;

	while (idle < 3) {
		assert_true(guard++ < 2000000);
		m = side_step(A);
		m |= side_step(B);
		if (m) {
			idle = 0;
			continue;
		}
		pf[0] = (struct pollfd){ .fd = A->e.fd, .events = POLLIN };
		pf[1] = (struct pollfd){ .fd = B->e.fd, .events = POLLIN };
		poll(pf, 2, 5);
		idle++;
	}
}

/* Upper half: txds, RQEs, events ------------------------------------- */

static void post_txd(struct side *s, u64 id, u16 flags, const void *hdr,
		     u32 hdr_len, const struct swiw_sge *sge, u32 nsge)
{
	struct swiw_txd t;
	u32 i;

	if (env_slot_valid(env_tx_slot(&s->e)))
		pump();
	assert_false(env_slot_valid(env_tx_slot(&s->e)));
	memset(&t, 0, sizeof(t));
	t.id = id;
	t.num_sge = (u8)nsge;
	t.hdr_len = (u8)hdr_len;
	memcpy(t.hdr, hdr, hdr_len);
	for (i = 0; i < nsge; i++) {
		t.sge[i] = sge[i];
		t.payload_len += sge[i].length;
	}
	env_slot_put(env_tx_slot(&s->e), &t, sizeof(t), flags);
	s->e.tx_put++;
}

/*
 * Posts @m as a provider would: cut into segments of at most @mulpdu
 * octets, each segment's payload from @lkey at @laddr spread over up to
 * three SGEs, with a zero-length SGE of no region between (skipped).
 * The last segment asks for SENT when @event.
 */
static void send_msg(struct side *s, const struct swiw_rdmap_msg *m, u32 lkey,
		     u64 laddr, u32 mulpdu, u64 id, bool event)
{
	struct swiw_ddp_txseg seg;
	struct swiw_ddp_tx tx;
	u8 hdr[SWIW_TXD_HDR_MAX];

	assert_int_equal(swiw_ddp_tx_init(&tx, m), 0);
	while (swiw_ddp_tx_next(&tx, mulpdu, hdr, sizeof(hdr), &seg) == 1) {
		struct swiw_sge sge[4];
		u64 a = laddr + seg.payload_off;
		u32 left = seg.payload_len, third = left / 3, n = 0, i;

		for (i = 0; i < 3 && left; i++) {
			u32 c = i == 2 || !third ? left : third;

			sge[n++] = (struct swiw_sge){ a, c, lkey };
			a += c;
			left -= c;
			if (n == 1)
				sge[n++] = (struct swiw_sge){ 0, 0, 0xdead };
		}
		post_txd(s, id, seg.last && event ? SWIW_TXD_EVENT : 0, hdr,
			 seg.hdr_len, sge, n);
	}
}

static void do_send(struct side *s, u8 opcode, u32 len, u32 lkey, u64 laddr,
		    u32 inval, u64 id)
{
	struct swiw_rdmap_msg m = { .opcode = opcode, .len = len };

	m.msn = s->msn_send++;
	m.inval_stag = inval;
	send_msg(s, &m, lkey, laddr, 1000, id, true);
}

static void do_write(struct side *s, u32 stag, u64 to, u32 len, u32 lkey,
		     u64 laddr, u32 mulpdu, u64 id)
{
	struct swiw_rdmap_msg m = { .opcode = RDMAP_WRITE, .len = len };

	m.stag = stag;
	m.to = to;
	send_msg(s, &m, lkey, laddr, mulpdu, id, true);
}

static void do_read(struct side *s, u32 sink, u64 sink_to, u32 size, u32 src,
		    u64 src_to)
{
	struct swiw_rdmap_msg m = { .opcode = RDMAP_READ_REQ };

	m.msn = s->msn_rreq++;
	m.u.rreq = (struct swiw_rdmap_read_req){ sink, sink_to, size, src,
						 src_to };
	send_msg(s, &m, 0, 0, 1000, 0, false);
}

static void do_imm(struct side *s, u32 imm)
{
	struct swiw_rdmap_msg m = { .opcode = RDMAP_IMM_DATA };

	m.msn = s->msn_send++;
	memcpy(m.u.imm, &imm, sizeof(imm));
	send_msg(s, &m, 0, 0, 1000, 0, false);
}

static void post_rqe(struct side *s, u64 id, const struct swiw_sge *sge, u32 n)
{
	u8 el[ENV_RQ_STRIDE];
	struct swiw_rqe h = { .id = id, .num_sge = (u8)n };

	assert_false(env_slot_valid(env_rq_slot(&s->e)));
	memcpy(el, &h, sizeof(h));
	if (n)
		memcpy(el + sizeof(h), sge, n * sizeof(*sge));
	env_slot_put(env_rq_slot(&s->e), el, sizeof(h) + n * sizeof(*sge), 0);
	s->e.rq_put++;
}

static void post_rqe1(struct side *s, u64 id, u32 lkey, u64 addr, u32 len)
{
	struct swiw_sge g = { addr, len, lkey };

	post_rqe(s, id, &g, 1);
}

/* The next event of @s, pumping once if there is none yet. */
static void ev_expect(struct side *s, u8 type, struct swiw_rxev *ev)
{
	if (!env_ev_take(&s->e, ev)) {
		pump();
		assert_true(env_ev_take(&s->e, ev));
	}
	assert_int_equal(ev->type, type);
}

static void ev_none(struct side *s)
{
	struct swiw_rxev ev;

	pump();
	assert_false(env_ev_take(&s->e, &ev));
}

/* Decodes an event's header as the provider would. */
static void ev_seg(const struct swiw_rxev *ev, struct swiw_ddp_seg *g)
{
	enum swiw_violation v;

	assert_true(ev->hdr_len >= 14 && ev->hdr_len <= SWIW_DDP_HDR_MAX);
	assert_int_equal(swiw_ddp_parse(ev->hdr, ev->hdr_len,
					SWIW_DDP_RX_RFC7306, g, &v),
			 0);
}

/*
 * The TERMINATE a provider sends for the VIOLATION @ev, as the peer reads
 * it: built from the head the event carries (as much of the offending
 * ULPDU as the deframer keeps) and the segment's length.
 */
static void ev_term(const struct swiw_rxev *ev, struct swiw_term *t)
{
	struct swiw_term built;
	u8 buf[SWIW_TERM_MAX_LEN];
	int n;

	assert_int_equal(ev->hdr_len, SWIW_MIN(ev->len, (u32)SWIW_DDP_HDR_MAX));
	assert_int_equal(
		swiw_term_from_violation((enum swiw_violation)ev->violation,
					 ev->hdr, ev->len, &built),
		0);
	n = swiw_term_build(&built, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(swiw_term_parse(buf, (u32)n, t), 0);
}

/* The TERMINATE carries back the length and DDP header of a segment of
 * @len octets, which decodes into @g. */
static void term_seg(const struct swiw_term *t, u32 len, struct swiw_ddp_seg *g)
{
	enum swiw_violation v;

	assert_int_equal(t->hdrct & (SWIW_TERM_M | SWIW_TERM_D),
			 SWIW_TERM_M | SWIW_TERM_D);
	assert_int_equal(t->seg_len, len);
	assert_int_equal(swiw_ddp_parse(t->ddp_hdr, t->ddp_len,
					SWIW_DDP_RX_RFC7306, g, &v),
			 0);
}

static void expect_sent(struct side *s, u64 id, u32 status)
{
	struct swiw_rxev ev;

	ev_expect(s, SWIW_RXEV_SENT, &ev);
	assert_int_equal(ev.id, id);
	assert_int_equal(ev.status, status);
}

static u8 *mem(struct side *s, u32 stag)
{
	return env_find(&s->e, stag)->mem;
}

/* Tests -------------------------------------------------------------- */

static void test_init_checks(void **state)
{
	struct env e;
	struct swiw_lower *l = malloc(sizeof(*l));

	(void)state;
	memset(&e, 0, sizeof(e));
	e.fd = -1;
	env_rings(&e, 4);
	assert_int_equal(swiw_lower_init(l, &e.cfg, &env_ops, &e), -EINVAL);
	e.cfg.rxev.num = 8;
	assert_int_equal(swiw_lower_init(l, &e.cfg, &env_ops, &e), 0);
	e.cfg.tx.num = 12;
	assert_int_equal(swiw_lower_init(l, &e.cfg, &env_ops, &e), -EINVAL);
	e.cfg.tx.num = 16;
	e.cfg.mulpdu = 40;
	assert_int_equal(swiw_lower_init(l, &e.cfg, &env_ops, &e), -EINVAL);
	e.cfg.mulpdu = 1024;
	e.rq.max_sge = SWIW_MAX_SGE + 1;
	assert_int_equal(swiw_lower_init(l, &e.cfg, &env_ops, &e), -EINVAL);
	free(l);
	env_free(&e);
}

static void test_send_multi_sge(void **state)
{
	struct swiw_rxev ev;
	struct swiw_ddp_seg g;
	u32 dst, src;
	u8 *d, *sp;

	(void)state;
	pair_new(&(struct opts){ 0 });
	dst = env_reg(&B->e, 0x10000, 8192, SWIW_ACC_LOCAL_WRITE);
	src = env_reg(&A->e, 0x20000, 8192, 0);
	sp = mem(A, src);
	fill(sp, 8192);
	post_rqe(B, 77,
		 (struct swiw_sge[]){ { 0x10000, 1000, dst },
				      { 0x10000 + 3000, 2000, dst },
				      { 0x10000 + 6000, 1500, dst } },
		 3);
	/* 1000-octet segments: five of them. */
	do_send(A, RDMAP_SEND, 4000, src, 0x20000 + 100, 0, 5);
	pump();
	ev_expect(B, SWIW_RXEV_SEGMENT, &ev);
	assert_int_equal(ev.id, 77);
	assert_int_equal(ev.flags & ~SWIW_SLOT_VALID, SWIW_RXEV_RQE);
	assert_int_equal(ev.len, 4000);
	ev_seg(&ev, &g);
	assert_int_equal(g.opcode, RDMAP_SEND);
	assert_true(g.last);
	assert_int_equal(g.msn, 1);
	assert_int_equal(g.mo, 4 * (1000 - 18));
	d = mem(B, dst);
	assert_memory_equal(d, sp + 100, 1000);
	assert_memory_equal(d + 3000, sp + 1100, 2000);
	assert_memory_equal(d + 6000, sp + 3100, 1000);
	assert_int_equal(d[7000], 0);
	assert_int_equal(d[1000], 0);
	expect_sent(A, 5, 0);
	ev_none(A);
	ev_none(B);
	assert_true(B->e.wakes > 0);
}

static void test_write(void **state)
{
	u32 dst, src;

	(void)state;
	pair_new(&(struct opts){ 0 });
	dst = env_reg(&B->e, 0x7000, 16384, RW);
	src = env_reg(&A->e, 0x1000, 16384, 0);
	fill(mem(A, src), 16384);
	do_write(A, dst, 0x7000 + 100, 5000, src, 0x1000 + 7, 1400, 9);
	expect_sent(A, 9, 0);
	assert_memory_equal(mem(B, dst) + 100, mem(A, src) + 7, 5000);
	assert_int_equal(mem(B, dst)[99], 0);
	assert_int_equal(mem(B, dst)[5100], 0);
	ev_none(B); /* a whole Write posts nothing */
}

static void test_read(void **state)
{
	struct swiw_rxev ev;
	struct swiw_ddp_seg g;
	u32 sink, src;

	(void)state;
	pair_new(&(struct opts){ 0 });
	sink = env_reg(&A->e, 0x40000, 20000, SWIW_ACC_LOCAL_WRITE);
	src = env_reg(&B->e, 0x90000, 20000, SWIW_ACC_REMOTE_READ);
	fill(mem(B, src), 20000);
	/* B's responses are cut at its MULPDU, 1024. */
	do_read(A, sink, 0x40000 + 10, 9000, src, 0x90000 + 333);
	ev_expect(A, SWIW_RXEV_SEGMENT, &ev);
	assert_int_equal(ev.len, 9000);
	assert_int_equal(ev.flags & ~SWIW_SLOT_VALID, 0);
	ev_seg(&ev, &g);
	assert_int_equal(g.opcode, RDMAP_READ_RESP);
	assert_int_equal(g.stag, sink);
	assert_true(g.last);
	assert_memory_equal(mem(A, sink) + 10, mem(B, src) + 333, 9000);
	assert_int_equal(mem(A, sink)[9010], 0);
	ev_none(B);
	ev_none(A);
	/* IRD is released: more Reads than IRD, ORD at a time, complete. */
	for (int i = 0; i < 40; i++) {
		do_read(A, sink, 0x40000, 100, src, 0x90000 + (u64)i);
		if (i % 8 == 7)
			for (int j = 0; j < 8; j++)
				ev_expect(A, SWIW_RXEV_SEGMENT, &ev);
	}
	assert_memory_equal(mem(A, sink), mem(B, src) + 39, 100);
	ev_none(A);
	ev_none(B);
}

/* A sends an Atomic Request. */
static void atomic_req(u8 op, u32 stag, u64 to, u64 add_swap, u64 compare,
		       u32 req_id)
{
	struct swiw_rdmap_msg m = { .opcode = RDMAP_ATOMIC_REQ };

	m.msn = A->msn_rreq++;
	m.u.areq.op = op;
	m.u.areq.req_id = req_id;
	m.u.areq.stag = stag;
	m.u.areq.to = to;
	m.u.areq.add_swap = add_swap;
	m.u.areq.compare = compare;
	if (op == RDMAP_ATOMIC_CMP_SWAP)
		m.u.areq.add_swap_mask = m.u.areq.compare_mask = ~0ull;
	send_msg(A, &m, 0, 0, 1000, 0, false);
}

/* ... and gets its response: the target's original value. */
static u64 atomic(u8 op, u32 stag, u64 to, u64 add_swap, u64 compare,
		  u32 req_id)
{
	struct swiw_rxev ev;
	struct swiw_ddp_seg g;

	atomic_req(op, stag, to, add_swap, compare, req_id);
	ev_expect(A, SWIW_RXEV_SEGMENT, &ev);
	ev_seg(&ev, &g);
	assert_int_equal(g.opcode, RDMAP_ATOMIC_RESP);
	assert_int_equal(g.u.aresp.req_id, req_id);
	return g.u.aresp.orig;
}

/*
 * B's Read Response waits for transport room (A reads nothing) when its
 * source region is deregistered: none of the rest goes, and B's stream
 * ends in a local catastrophic error. While the region lives, nothing
 * is revoked.
 */
static void test_tx_revoke(void **state)
{
	const u32 len = 8u << 20;
	struct swiw_rxev ev;
	struct env_region *r;
	u32 sink, src;
	u64 sent;

	(void)state;
	pair_new(&(struct opts){ 0 });
	sink = env_reg(&A->e, 0x400000, len, SWIW_ACC_LOCAL_WRITE);
	src = env_reg(&B->e, 0x900000, len, SWIW_ACC_REMOTE_READ);
	A->stop_rx = true;
	do_read(A, sink, 0x400000, len, src, 0x900000);
	pump();
	assert_int_equal(swiw_lower_tx(B->e.l), 1);
	assert_false(swiw_lower_tx_revoke(B->e.l));
	r = env_find(&B->e, src);
	r->dead = true;
	assert_true(swiw_lower_tx_revoke(B->e.l));
	assert_false(swiw_lower_tx_revoke(B->e.l));
	sent = B->e.sent;
	assert_true(sent < len);
	A->stop_rx = false;
	ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, SWIW_V_RDMAP_CATASTROPHIC);
	pump();
	assert_int_equal(B->e.sent, sent);
	assert_int_equal(swiw_lower_tx(B->e.l), 0);
}

static void test_atomics(void **state)
{
	u32 t;
	u64 *v;

	(void)state;
	pair_new(&(struct opts){ 0 });
	t = env_reg(&B->e, 0x3000, 64,
		    SWIW_ACC_LOCAL_WRITE | SWIW_ACC_REMOTE_ATOMIC);
	v = (u64 *)(void *)(mem(B, t) + 8);
	*v = 100;
	assert_int_equal(atomic(RDMAP_ATOMIC_FETCH_ADD, t, 0x3008, 5, 0, 1),
			 100);
	assert_int_equal(*v, 105);
	assert_int_equal(atomic(RDMAP_ATOMIC_CMP_SWAP, t, 0x3008, 7, 105, 2),
			 105);
	assert_int_equal(*v, 7);
	assert_int_equal(atomic(RDMAP_ATOMIC_CMP_SWAP, t, 0x3008, 9, 1, 3), 7);
	assert_int_equal(*v, 7);
	ev_none(B);
}

static void test_write_imm(void **state)
{
	struct swiw_rxev ev;
	struct swiw_ddp_seg g;
	u32 dst, src, imm = 0x11223344;

	(void)state;
	pair_new(&(struct opts){ 0 });
	dst = env_reg(&B->e, 0x7000, 8192, RW);
	src = env_reg(&A->e, 0x1000, 8192, 0);
	fill(mem(A, src), 8192);
	post_rqe(B, 41, NULL, 0);
	post_rqe(B, 42, NULL, 0);
	do_write(A, dst, 0x7000, 3000, src, 0x1000, 1000, 1);
	do_imm(A, imm);
	ev_expect(B, SWIW_RXEV_SEGMENT, &ev);
	assert_int_equal(ev.id, 41);
	assert_int_equal(ev.flags & ~SWIW_SLOT_VALID,
			 SWIW_RXEV_RQE | SWIW_RXEV_AFTER_WRITE);
	assert_int_equal(ev.len, 3000);
	ev_seg(&ev, &g);
	assert_int_equal(g.opcode, RDMAP_IMM_DATA);
	assert_memory_equal(g.u.imm, &imm, 4);
	/* Immediate Data after anything but a Write: no length. */
	do_imm(A, imm);
	ev_expect(B, SWIW_RXEV_SEGMENT, &ev);
	assert_int_equal(ev.id, 42);
	assert_int_equal(ev.flags & ~SWIW_SLOT_VALID, SWIW_RXEV_RQE);
	assert_int_equal(ev.len, 0);
}

static void test_send_inval(void **state)
{
	struct swiw_rxev ev;
	struct swiw_ddp_seg g;
	u32 dst, x, src;

	(void)state;
	pair_new(&(struct opts){ 0 });
	dst = env_reg(&B->e, 0x10000, 4096, SWIW_ACC_LOCAL_WRITE);
	x = env_reg(&B->e, 0x20000, 4096, RW);
	src = env_reg(&A->e, 0x1000, 4096, 0);
	post_rqe1(B, 3, dst, 0x10000, 4096);
	do_write(A, x, 0x20000, 100, src, 0x1000, 1000, 1);
	do_send(A, RDMAP_SEND_INVAL, 100, src, 0x1000, x, 2);
	ev_expect(B, SWIW_RXEV_SEGMENT, &ev);
	assert_int_equal(ev.id, 3);
	ev_seg(&ev, &g);
	assert_int_equal(g.opcode, RDMAP_SEND_INVAL);
	assert_int_equal(g.rsvd_ulp, x);
	assert_null(env_find(&B->e, x));
	/* The region is refused from now on. */
	do_write(A, x, 0x20000, 100, src, 0x1000, 1000, 4);
	ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, SWIW_V_DDP_T_INVALID_STAG);
	assert_int_equal(ev.flags & ~SWIW_SLOT_VALID, 0);
	ev_seg(&ev, &g);
	assert_int_equal(g.stag, x);
	assert_true(swiw_lower_rx_done(B->e.l));
}

/* A Send with Invalidate of @stag fails with @v, its RQE going back. */
static void send_inval_fails(bool no_inval, u32 v)
{
	struct swiw_rxev ev;
	struct swiw_ddp_seg g;
	struct swiw_term t;
	u32 dst, x, src;

	pair_new(&(struct opts){ 0 });
	dst = env_reg(&B->e, 0x10000, 4096, SWIW_ACC_LOCAL_WRITE);
	x = env_reg(&B->e, 0x20000, 4096, RW);
	env_find(&B->e, x)->no_inval = no_inval;
	src = env_reg(&A->e, 0x1000, 4096, 0);
	post_rqe1(B, 8, dst, 0x10000, 4096);
	do_send(A, RDMAP_SEND_INVAL, 10, src, 0x1000, no_inval ? x : x + 1, 2);
	ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, v);
	assert_int_equal(ev.id, 8);
	assert_int_equal(ev.flags & ~SWIW_SLOT_VALID, SWIW_RXEV_RQE);
	/* Found when the message is whole, its header still goes back. */
	ev_term(&ev, &t);
	term_seg(&t, 18 + 10, &g);
	assert_int_equal(g.opcode, RDMAP_SEND_INVAL);
	assert_int_equal(g.rsvd_ulp, no_inval ? x : x + 1);
	ev_none(B);
	teardown(NULL);
}

static void test_send_inval_fails(void **state)
{
	(void)state;
	send_inval_fails(false, SWIW_V_RDMAP_CANT_INVALIDATE);
	send_inval_fails(true, SWIW_V_RDMAP_CANT_INVALIDATE_OP);
}

static void post_inval(struct side *s, u64 id, u32 stag)
{
	post_txd(s, id, SWIW_TXD_INVALIDATE, &stag, sizeof(stag), NULL, 0);
}

static void test_invalidate_txd(void **state)
{
	u32 r, k, src, dst;

	(void)state;
	pair_new(&(struct opts){ 0 });
	r = env_reg(&A->e, 0x1000, 4096, RW);
	k = env_reg(&A->e, 0x8000, 4096, RW);
	env_find(&A->e, k)->no_inval = true;
	src = env_reg(&A->e, 0x9000, 4096, 0);
	dst = env_reg(&B->e, 0x1000, 4096, RW);
	/* In ring order: the Write before it still reads the region. */
	do_write(A, dst, 0x1000, 10, r, 0x1000, 1000, 1);
	post_inval(A, 2, r);
	post_inval(A, 3, r);
	post_inval(A, 4, k);
	do_write(A, dst, 0x1000, 10, src, 0x9000, 1000, 5);
	pump();
	expect_sent(A, 1, 0);
	expect_sent(A, 2, 0);
	expect_sent(A, 3, ENOENT);
	expect_sent(A, 4, EACCES);
	expect_sent(A, 5, 0);
	assert_null(env_find(&A->e, r));
	assert_non_null(env_find(&A->e, k));
}

/* Send, Write and Read both ways; positions make payloads cross markers. */
/* Takes every event of @s, sorted into SEGMENTs and SENTs. */
static void ev_split(struct side *s, struct swiw_rxev *seg, u32 *nseg,
		     struct swiw_rxev *sent, u32 *nsent)
{
	struct swiw_rxev ev;

	*nseg = *nsent = 0;
	while (env_ev_take(&s->e, &ev)) {
		if (ev.type == SWIW_RXEV_SEGMENT && *nseg < 16)
			seg[(*nseg)++] = ev;
		else if (ev.type == SWIW_RXEV_SENT && *nsent < 16)
			sent[(*nsent)++] = ev;
		else
			fail_msg("event type %u", ev.type);
	}
}

static void traffic_both_ways(void)
{
	struct swiw_rxev sega[16], segb[16], senta[16], sentb[16];
	u32 sa, sb, da, db, nsa, nsb, nta, ntb;
	int i;

	sa = env_reg(&A->e, 0x10000, 65536, RW | SWIW_ACC_REMOTE_READ);
	sb = env_reg(&B->e, 0x10000, 65536, RW | SWIW_ACC_REMOTE_READ);
	da = env_reg(&A->e, 0x40000, 65536, RW);
	db = env_reg(&B->e, 0x40000, 65536, RW);
	fill(mem(A, sa), 65536);
	fill(mem(B, sb), 65536);
	for (i = 0; i < 4; i++) {
		post_rqe1(A, 100 + (u64)i, da, 0x40000 + 4096 * (u64)i, 4096);
		post_rqe1(B, 200 + (u64)i, db, 0x40000 + 4096 * (u64)i, 4096);
	}
	for (i = 0; i < 4; i++) {
		do_send(A, RDMAP_SEND, 1000 + 777 * (u32)i, sa,
			0x10000 + 3 * (u64)i, 0, 1);
		do_send(B, RDMAP_SEND_SE, 3001 - 555 * (u32)i, sb,
			0x10000 + 5 * (u64)i, 0, 2);
	}
	do_write(A, db, 0x40000 + 20000, 9999, sa, 0x10000 + 1, 1111, 3);
	do_write(B, da, 0x40000 + 20000, 7777, sb, 0x10000 + 2, 777, 4);
	do_read(A, da, 0x40000 + 40000, 5000, sb, 0x10000 + 11);
	do_read(B, db, 0x40000 + 40000, 6000, sa, 0x10000 + 13);
	pump();
	/* Each side: its SEGMENTs in order, its SENTs in order. */
	ev_split(A, sega, &nsa, senta, &nta);
	ev_split(B, segb, &nsb, sentb, &ntb);
	assert_int_equal(nsa, 5);
	assert_int_equal(nsb, 5);
	assert_int_equal(nta, 5);
	assert_int_equal(ntb, 5);
	for (i = 0; i < 4; i++) {
		assert_int_equal(segb[i].id, 200 + i);
		assert_int_equal(segb[i].len, 1000 + 777 * i);
		assert_memory_equal(mem(B, db) + 4096 * i, mem(A, sa) + 3 * i,
				    segb[i].len);
		assert_int_equal(sega[i].id, 100 + i);
		assert_int_equal(sega[i].len, 3001 - 555 * i);
		assert_memory_equal(mem(A, da) + 4096 * i, mem(B, sb) + 5 * i,
				    sega[i].len);
		assert_int_equal(senta[i].id, 1);
		assert_int_equal(sentb[i].id, 2);
	}
	assert_int_equal(sega[4].len, 5000);
	assert_int_equal(segb[4].len, 6000);
	assert_int_equal(senta[4].id, 3);
	assert_int_equal(sentb[4].id, 4);
	assert_memory_equal(mem(B, db) + 20000, mem(A, sa) + 1, 9999);
	assert_memory_equal(mem(A, da) + 20000, mem(B, sb) + 2, 7777);
	assert_memory_equal(mem(A, da) + 40000, mem(B, sb) + 11, 5000);
	assert_memory_equal(mem(B, db) + 40000, mem(A, sa) + 13, 6000);
}

static void test_crc_markers(void **state)
{
	(void)state;
	pair_new(&(struct opts){ .crc = true,
				 .markers_ab = true,
				 .markers_ba = true,
				 .pos_ab = 256 });
	traffic_both_ways();
	teardown(NULL);
	pair_new(&(struct opts){ .crc = true, .markers_ba = true });
	traffic_both_ways();
	teardown(NULL);
	pair_new(&(struct opts){ 0 });
	traffic_both_ways();
}

/* The ends disagree about markers or the CRC: the receiver notices. */
static void test_framing_mismatch(void **state)
{
	struct swiw_rxev ev;
	u32 src;

	(void)state;
	pair_new(&(struct opts){ 0 });
	B->e.l->frx.markers = true; /* as if B had negotiated markers */
	src = env_reg(&A->e, 0x1000, 4096, 0);
	post_rqe(B, 1, NULL, 0);
	do_send(A, RDMAP_SEND, 2000, src, 0x1000, 0, 1);
	ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, SWIW_V_MPA_MARKER);
	teardown(NULL);

	pair_new(&(struct opts){ .crc = true });
	src = env_reg(&A->e, 0x1000, 4096, 0);
	A->e.l->ftx.crc = false; /* A sends a zero CRC */
	post_rqe1(B, 1, env_reg(&B->e, 0x1000, 4096, SWIW_ACC_LOCAL_WRITE),
		  0x1000, 4096);
	do_send(A, RDMAP_SEND, 20, src, 0x1000, 0, 1);
	ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, SWIW_V_MPA_CRC);
	assert_int_equal(ev.hdr_len, 0);
	/* The RQE it had taken goes back with it. */
	assert_int_equal(ev.flags & ~SWIW_SLOT_VALID, SWIW_RXEV_RQE);
	assert_int_equal(ev.id, 1);
}

static void test_rtr(void **state)
{
	struct swiw_rxev ev;
	struct swiw_ddp_seg g;
	u32 src, dst;

	(void)state;
	/* RFC 6581's zero-length Write: reported, but no Write of the ULP. */
	pair_new(&(struct opts){ .rtr_b = true });
	post_rqe(B, 6, NULL, 0);
	do_write(A, SWIW_MPA_RTR_STAG, 0, 0, 0, 0, 1000, 1);
	ev_expect(B, SWIW_RXEV_SEGMENT, &ev);
	assert_int_equal(ev.id, 0);
	assert_int_equal(ev.flags & ~SWIW_SLOT_VALID, 0);
	ev_seg(&ev, &g);
	assert_int_equal(g.opcode, RDMAP_WRITE);
	assert_int_equal(g.stag, SWIW_MPA_RTR_STAG);
	do_imm(A, 5);
	ev_expect(B, SWIW_RXEV_SEGMENT, &ev);
	assert_int_equal(ev.id, 6);
	assert_int_equal(ev.flags & ~SWIW_SLOT_VALID, SWIW_RXEV_RQE);
	ev_none(B);
	teardown(NULL);

	/* A zero-length Read: B reports it and answers it. */
	pair_new(&(struct opts){ .rtr_b = true });
	do_read(A, SWIW_MPA_RTR_STAG, 0, 0, 0, 0);
	ev_expect(B, SWIW_RXEV_SEGMENT, &ev);
	ev_seg(&ev, &g);
	assert_int_equal(g.opcode, RDMAP_READ_REQ);
	assert_int_equal(g.u.rreq.size, 0);
	ev_expect(A, SWIW_RXEV_SEGMENT, &ev);
	ev_seg(&ev, &g);
	assert_int_equal(g.opcode, RDMAP_READ_RESP);
	assert_int_equal(ev.len, 0);
	teardown(NULL);

	/* A Send first: its RTR event, then its own. */
	pair_new(&(struct opts){ .rtr_b = true });
	src = env_reg(&A->e, 0x1000, 4096, 0);
	dst = env_reg(&B->e, 0x1000, 4096, SWIW_ACC_LOCAL_WRITE);
	post_rqe1(B, 9, dst, 0x1000, 4096);
	do_send(A, RDMAP_SEND, 0, src, 0x1000, 0, 1);
	ev_expect(B, SWIW_RXEV_SEGMENT, &ev);
	assert_int_equal(ev.id, 0);
	assert_int_equal(ev.flags & ~SWIW_SLOT_VALID, 0);
	ev_expect(B, SWIW_RXEV_SEGMENT, &ev);
	assert_int_equal(ev.id, 9);
	assert_int_equal(ev.flags & ~SWIW_SLOT_VALID, SWIW_RXEV_RQE);
	assert_int_equal(ev.len, 0);
}

/* A txd the lower half must refuse: SENT with @status, and TX stops. */
static void bad_txd(u32 status, const struct swiw_txd *t)
{
	u8 hdr[SWIW_TXD_HDR_MAX];
	struct swiw_ddp_txseg seg;
	struct swiw_ddp_tx tx;
	struct swiw_rdmap_msg m = { .opcode = RDMAP_WRITE, .len = 100 };
	struct swiw_rxev ev;
	u32 src, dst;

	pair_new(&(struct opts){ 0 });
	src = env_reg(&A->e, 0x1000, 4096, 0);
	dst = env_reg(&B->e, 0x1000, 4096, RW);
	m.stag = dst;
	m.to = 0x1000;
	assert_int_equal(swiw_ddp_tx_init(&tx, &m), 0);
	assert_int_equal(swiw_ddp_tx_next(&tx, 1000, hdr, sizeof(hdr), &seg),
			 1);
	/* Its header, the test's SGEs and lengths. */
	post_txd(A, 7, 0, hdr, t->hdr_len ? t->hdr_len : seg.hdr_len, t->sge,
		 SWIW_MIN(t->num_sge, (u8)SWIW_TXD_SGE));
	{
		/* What post_txd() cannot write: a process may. */
		u8 *slot = A->e.txmem +
			   ((A->e.tx_put - 1) % ENV_TX_NUM) * ENV_TX_STRIDE;

		if (t->payload_len)
			memcpy(slot + offsetof(struct swiw_txd, payload_len),
			       &t->payload_len, 4);
		slot[offsetof(struct swiw_txd, num_sge)] = t->num_sge;
	}
	fill(mem(A, src), 4096);
	do_write(A, dst, 0x1000, 100, src, 0x1000, 1000, 8);
	ev_expect(A, SWIW_RXEV_SENT, &ev);
	assert_int_equal(ev.id, 7);
	assert_int_equal(ev.status, status);
	ev_none(A);
	ev_none(B);
	/* Nothing after it went: the next txd is still the provider's. */
	assert_true(env_slot_valid(A->e.txmem + ENV_TX_STRIDE));
	assert_false(env_slot_valid(A->e.txmem));
	assert_int_equal(mem(B, dst)[0], 0);
	teardown(NULL);
}

static void test_bad_txd(void **state)
{
	struct swiw_txd t;
	u32 k = (1 << 8) | 0x5a; /* the first region's STag */

	(void)state;
	memset(&t, 0, sizeof(t));
	t.num_sge = 1;
	t.sge[0] = (struct swiw_sge){ 0x1000, 100, 0xbad };
	bad_txd(ENOENT, &t);
	t.sge[0] = (struct swiw_sge){ 0x1000 + 4000, 100, k };
	bad_txd(EFAULT, &t);
	t.sge[0] = (struct swiw_sge){ 0x800, 100, k };
	bad_txd(EFAULT, &t);
	t.sge[0] = (struct swiw_sge){ 0x1000, 100, k };
	t.payload_len = 99;
	bad_txd(EINVAL, &t);
	t.payload_len = 0;
	t.num_sge = SWIW_TXD_SGE + 1;
	bad_txd(EINVAL, &t);
	t.num_sge = 1;
	t.hdr_len = 13;
	bad_txd(EINVAL, &t);
	t.hdr_len = SWIW_DDP_HDR_MAX + 1;
	bad_txd(EINVAL, &t);
}

/* The peer breaks the rules: VIOLATION with the code and its header. */
static void test_peer_violations(void **state)
{
	struct swiw_rxev ev;
	struct swiw_ddp_seg g;
	u32 src, dst, ro;

	(void)state;
	pair_new(&(struct opts){ 0 });
	src = env_reg(&A->e, 0x1000, 4096, 0);
	do_write(A, 0x4242, 0x1000, 100, src, 0x1000, 1000, 1);
	ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, SWIW_V_DDP_T_INVALID_STAG);
	ev_seg(&ev, &g);
	assert_int_equal(g.opcode, RDMAP_WRITE);
	assert_int_equal(g.stag, 0x4242);
	assert_int_equal(g.to, 0x1000);
	/* Nothing more is received. */
	do_write(A, 0x4242, 0x1000, 100, src, 0x1000, 1000, 1);
	ev_none(B);
	teardown(NULL);

	/* A Write to a region without REMOTE_WRITE. */
	pair_new(&(struct opts){ 0 });
	src = env_reg(&A->e, 0x1000, 4096, 0);
	ro = env_reg(&B->e, 0x1000, 4096, SWIW_ACC_LOCAL_WRITE);
	do_write(A, ro, 0x1000, 100, src, 0x1000, 1000, 1);
	ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, SWIW_V_DDP_T_ACCESS);
	teardown(NULL);

	/* A Read of a bad source. */
	pair_new(&(struct opts){ 0 });
	do_read(A, 0x100, 0, 10, 0x777, 0);
	ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, SWIW_V_RDMAP_INVALID_STAG);
	ev_seg(&ev, &g);
	assert_int_equal(g.opcode, RDMAP_READ_REQ);
	teardown(NULL);

	/* A Send with no RQE posted. */
	pair_new(&(struct opts){ 0 });
	src = env_reg(&A->e, 0x1000, 4096, 0);
	do_send(A, RDMAP_SEND, 10, src, 0x1000, 0, 1);
	ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, SWIW_V_DDP_UT_NO_BUFFER);
	assert_int_equal(ev.flags & ~SWIW_SLOT_VALID, 0);
	teardown(NULL);

	/* An RQE too short, and one with a bad SGE: each goes back. */
	pair_new(&(struct opts){ 0 });
	src = env_reg(&A->e, 0x1000, 4096, 0);
	dst = env_reg(&B->e, 0x1000, 4096, SWIW_ACC_LOCAL_WRITE);
	post_rqe1(B, 11, dst, 0x1000, 100);
	do_send(A, RDMAP_SEND, 101, src, 0x1000, 0, 1);
	ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, SWIW_V_DDP_UT_TOO_LONG);
	assert_int_equal(ev.id, 11);
	assert_int_equal(ev.flags & ~SWIW_SLOT_VALID, SWIW_RXEV_RQE);
	teardown(NULL);

	pair_new(&(struct opts){ 0 });
	src = env_reg(&A->e, 0x1000, 4096, 0);
	dst = env_reg(&B->e, 0x1000, 4096, SWIW_ACC_REMOTE_READ);
	post_rqe1(B, 12, dst, 0x1000, 100);
	do_send(A, RDMAP_SEND, 10, src, 0x1000, 0, 1);
	ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, SWIW_V_DDP_CATASTROPHIC);
	assert_int_equal(ev.id, 12);
	assert_int_equal(ev.flags & ~SWIW_SLOT_VALID, SWIW_RXEV_RQE);
}

/*
 * The TERMINATE's DDP Segment Length is the refused segment's, header and
 * payload, not the part of it the deframer kept for the event.
 */
static void test_term_seg_len(void **state)
{
	struct swiw_rxev ev;
	struct swiw_ddp_seg g;
	struct swiw_term t;
	u32 src, dst;

	(void)state;
	/* One segment of 14 + 100 octets; 70 of them come back. */
	pair_new(&(struct opts){ 0 });
	src = env_reg(&A->e, 0x1000, 8192, 0);
	do_write(A, 0x4242, 0x1000, 100, src, 0x1000, 1000, 1);
	ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, SWIW_V_DDP_T_INVALID_STAG);
	assert_int_equal(ev.hdr_len, SWIW_DDP_HDR_MAX);
	assert_int_equal(ev.len, 14 + 100);
	ev_term(&ev, &t);
	assert_int_equal(t.hdrct, SWIW_TERM_M | SWIW_TERM_D);
	term_seg(&t, 14 + 100, &g);
	assert_int_equal(g.opcode, RDMAP_WRITE);
	assert_int_equal(g.stag, 0x4242);
	teardown(NULL);

	/* The second of three full segments crosses the region's end. */
	pair_new(&(struct opts){ 0 });
	src = env_reg(&A->e, 0x1000, 8192, 0);
	dst = env_reg(&B->e, 0x1000, 1500, RW);
	do_write(A, dst, 0x1000, 3000, src, 0x1000, 1000, 1);
	ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, SWIW_V_DDP_T_BASE_BOUNDS);
	ev_term(&ev, &t);
	term_seg(&t, 1000, &g);
	assert_int_equal(g.to, 0x1000 + 986);
	teardown(NULL);

	/* A Read Request is whole in the head: M, D and R. */
	pair_new(&(struct opts){ 0 });
	do_read(A, 0x100, 0, 10, 0x777, 0);
	ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, SWIW_V_RDMAP_INVALID_STAG);
	assert_int_equal(ev.len, sizeof(struct rdmap_read_req));
	ev_term(&ev, &t);
	assert_int_equal(t.hdrct, SWIW_TERM_M | SWIW_TERM_D | SWIW_TERM_R);
	assert_int_equal(t.seg_len, sizeof(struct rdmap_read_req));
	assert_memory_equal(t.rdmap_hdr,
			    ev.hdr + sizeof(struct ddp_untagged_hdr),
			    SWIW_TERM_RDMAP_HDR_SIZE);
}

static void send_terminate(struct side *s)
{
	struct swiw_rdmap_msg m = { .opcode = RDMAP_TERMINATE };
	u8 body[18] = { 0x41, 0x43 };

	m.msn = 1;
	assert_int_equal(swiw_term_from_violation(SWIW_V_DDP_T_INVALID_STAG,
						  body, 14, &m.u.term),
			 0);
	send_msg(s, &m, 0, 0, 1000, 0, false);
}

static void test_terminate(void **state)
{
	struct swiw_rxev ev;
	struct swiw_ddp_seg g;
	struct swiw_ddp_tx tx;
	struct swiw_ddp_txseg seg;
	struct swiw_rdmap_msg m = { .opcode = RDMAP_SEND, .len = 3000 };
	u8 hdr[SWIW_TXD_HDR_MAX];
	u32 src, dst;

	(void)state;
	pair_new(&(struct opts){ 0 });
	send_terminate(A);
	ev_expect(B, SWIW_RXEV_SEGMENT, &ev);
	ev_seg(&ev, &g);
	assert_int_equal(g.opcode, RDMAP_TERMINATE);
	assert_int_equal(g.u.term.layer, TERM_LAYER_DDP);
	assert_true(swiw_lower_rx_done(B->e.l));
	ev_none(B);
	teardown(NULL);

	/* In the middle of a Send: its RQE comes back with it. */
	pair_new(&(struct opts){ 0 });
	src = env_reg(&A->e, 0x1000, 4096, 0);
	dst = env_reg(&B->e, 0x1000, 4096, SWIW_ACC_LOCAL_WRITE);
	post_rqe1(B, 21, dst, 0x1000, 4096);
	m.msn = 1;
	assert_int_equal(swiw_ddp_tx_init(&tx, &m), 0);
	assert_int_equal(swiw_ddp_tx_next(&tx, 1000, hdr, sizeof(hdr), &seg),
			 1);
	post_txd(A, 1, 0, hdr, seg.hdr_len,
		 &(struct swiw_sge){ 0x1000, seg.payload_len, src }, 1);
	send_terminate(A);
	ev_expect(B, SWIW_RXEV_SEGMENT, &ev);
	assert_int_equal(ev.id, 21);
	assert_int_equal(ev.flags & ~SWIW_SLOT_VALID, SWIW_RXEV_RQE);
	ev_seg(&ev, &g);
	assert_int_equal(g.opcode, RDMAP_TERMINATE);
	ev_none(B);
}

/* The first segment of a Send, no more. */
static void half_send(struct side *s, u32 lkey, u64 addr)
{
	struct swiw_rdmap_msg m = { .opcode = RDMAP_SEND, .len = 3000 };
	struct swiw_ddp_txseg seg;
	struct swiw_ddp_tx tx;
	u8 hdr[SWIW_TXD_HDR_MAX];

	m.msn = s->msn_send++;
	assert_int_equal(swiw_ddp_tx_init(&tx, &m), 0);
	assert_int_equal(swiw_ddp_tx_next(&tx, 1000, hdr, sizeof(hdr), &seg),
			 1);
	post_txd(s, 1, 0, hdr, seg.hdr_len,
		 &(struct swiw_sge){ addr, seg.payload_len, lkey }, 1);
}

static void test_closed(void **state)
{
	struct swiw_rxev ev;
	u32 src, dst;

	(void)state;
	pair_new(&(struct opts){ 0 });
	shutdown(A->e.fd, SHUT_WR);
	ev_expect(B, SWIW_RXEV_CLOSED, &ev);
	assert_int_equal(ev.status, 0);
	assert_int_equal(ev.flags & ~SWIW_SLOT_VALID, 0);
	teardown(NULL);

	/* With an RQE taken for a message not complete. */
	pair_new(&(struct opts){ 0 });
	src = env_reg(&A->e, 0x1000, 4096, 0);
	dst = env_reg(&B->e, 0x1000, 4096, SWIW_ACC_LOCAL_WRITE);
	post_rqe1(B, 31, dst, 0x1000, 4096);
	half_send(A, src, 0x1000);
	pump();
	ev_none(B);
	shutdown(A->e.fd, SHUT_WR);
	ev_expect(B, SWIW_RXEV_CLOSED, &ev);
	assert_int_equal(ev.status, 0);
	assert_int_equal(ev.id, 31);
	assert_int_equal(ev.flags & ~SWIW_SLOT_VALID, SWIW_RXEV_RQE);
	/* Reported once: not again at detach. */
	swiw_lower_fini(B->e.l);
	ev_none(B);
	teardown(NULL);

	/* The transport fails under the sender: CLOSED with its errno. */
	pair_new(&(struct opts){ 0 });
	src = env_reg(&A->e, 0x1000, 4096, 0);
	close(B->e.fd);
	B->e.fd = -1;
	B->stop_rx = B->stop_tx = true;
	B->eof = true;
	{
		int i;
		u64 sent = 0;

		for (i = 0; i < 200 && !swiw_lower_rx_done(A->e.l); i++) {
			do_write(A, 1, 0, 4000, src, 0x1000, 60000, 1);
			swiw_lower_tx(A->e.l);
			usleep(1000);
			while (env_ev_take(&A->e, &ev) &&
			       ev.type == SWIW_RXEV_SENT)
				sent++;
		}
		assert_true(swiw_lower_rx_done(A->e.l));
		assert_int_equal(ev.type, SWIW_RXEV_CLOSED);
		assert_true(ev.status == EPIPE || ev.status == ECONNRESET);
	}
}

static void test_fini_rqe(void **state)
{
	struct swiw_rxev ev;
	u32 src, dst, rsrc;

	(void)state;
	pair_new(&(struct opts){ 0 });
	src = env_reg(&A->e, 0x1000, 4096, 0);
	dst = env_reg(&B->e, 0x1000, 4096, SWIW_ACC_LOCAL_WRITE);
	rsrc = env_reg(&B->e, 0x8000, 4096, SWIW_ACC_REMOTE_READ);
	post_rqe1(B, 51, dst, 0x1000, 4096);
	half_send(A, src, 0x1000);
	/* A Read B takes in but does not answer: its source stays held. */
	B->stop_tx = true;
	do_read(A, 1, 0, 100, rsrc, 0x8000);
	pump();
	ev_none(B);
	assert_true(env_find(&B->e, rsrc)->holds > 0);
	assert_true(env_find(&B->e, dst)->holds > 0);
	swiw_lower_fini(B->e.l);
	ev_expect(B, SWIW_RXEV_CLOSED, &ev);
	assert_int_equal(ev.status, ECANCELED);
	assert_int_equal(ev.id, 51);
	assert_int_equal(ev.flags & ~SWIW_SLOT_VALID, SWIW_RXEV_RQE);
	assert_int_equal(env_find(&B->e, rsrc)->holds, 0);
	assert_int_equal(env_find(&B->e, dst)->holds, 0);
}

/* Our responses go only between the provider's messages. */
static void test_resp_between_messages(void **state)
{
	struct swiw_rdmap_msg m = { .opcode = RDMAP_SEND, .len = 3000 };
	struct swiw_ddp_txseg seg;
	struct swiw_ddp_tx tx;
	struct swiw_rxev ev;
	u8 hdr[SWIW_TXD_HDR_MAX];
	u32 src, dst, sink;
	bool more;

	(void)state;
	pair_new(&(struct opts){ 0 });
	src = env_reg(&A->e, 0x1000, 4096, SWIW_ACC_REMOTE_READ);
	dst = env_reg(&B->e, 0x1000, 4096, SWIW_ACC_LOCAL_WRITE);
	sink = env_reg(&B->e, 0x8000, 4096, SWIW_ACC_LOCAL_WRITE);
	fill(mem(A, src), 4096);
	post_rqe1(B, 1, dst, 0x1000, 4096);
	m.msn = A->msn_send++;
	assert_int_equal(swiw_ddp_tx_init(&tx, &m), 0);
	assert_int_equal(swiw_ddp_tx_next(&tx, 1000, hdr, sizeof(hdr), &seg),
			 1);
	post_txd(A, 1, 0, hdr, seg.hdr_len,
		 &(struct swiw_sge){ 0x1000, seg.payload_len, src }, 1);
	pump();
	/* B reads from A while A's Send is half out: no response yet. */
	do_read(B, sink, 0x8000, 500, src, 0x1000);
	ev_none(B);
	assert_int_equal(A->e.l->resp_tail - A->e.l->resp_head, 1);
	do {
		u64 a = 0x1000 + tx.sent;

		more = swiw_ddp_tx_next(&tx, 1000, hdr, sizeof(hdr), &seg) == 1;
		if (more)
			post_txd(A, 2, seg.last ? SWIW_TXD_EVENT : 0, hdr,
				 seg.hdr_len,
				 &(struct swiw_sge){ a, seg.payload_len, src },
				 1);
	} while (more);
	/* The Send ends first on the wire, then the Read Response. */
	ev_expect(B, SWIW_RXEV_SEGMENT, &ev);
	assert_int_equal(ev.id, 1);
	assert_int_equal(ev.len, 3000);
	ev_expect(B, SWIW_RXEV_SEGMENT, &ev);
	assert_int_equal(ev.len, 500);
	assert_memory_equal(mem(B, sink), mem(A, src), 500);
	assert_memory_equal(mem(B, dst), mem(A, src), 3000);
	expect_sent(A, 2, 0);
}

/* More Read Requests than IRD, and an atomic at an unaligned TO. */
static void test_ird_and_align(void **state)
{
	struct swiw_rdmap_msg m = { .opcode = RDMAP_ATOMIC_REQ };
	struct swiw_rxev ev;
	struct swiw_term tm;
	u32 src, t;
	int i;

	(void)state;
	pair_new(&(struct opts){ 0 });
	src = env_reg(&B->e, 0x1000, 4096, SWIW_ACC_REMOTE_READ);
	B->stop_tx = true; /* nothing answered: IRD stays used */
	for (i = 0; i < 16; i++)
		do_read(A, 1, 0, 8, src, 0x1000);
	ev_none(B);
	do_read(A, 1, 0, 8, src, 0x1000);
	ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, SWIW_V_RDMAP_IRD_EXCEEDED);
	teardown(NULL);

	pair_new(&(struct opts){ 0 });
	t = env_reg(&B->e, 0x3000, 64,
		    SWIW_ACC_LOCAL_WRITE | SWIW_ACC_REMOTE_ATOMIC);
	m.msn = A->msn_rreq++;
	m.u.areq.op = RDMAP_ATOMIC_FETCH_ADD;
	m.u.areq.stag = t;
	m.u.areq.to = 0x3004;
	send_msg(A, &m, 0, 0, 1000, 0, false);
	ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, SWIW_V_RDMAP_ATOMIC_ALIGN);
	ev_none(A);
	teardown(NULL);

	/* An aligned TO whose memory is not: the atomic itself fails, the
	 * request's header still goes back. */
	pair_new(&(struct opts){ 0 });
	t = env_reg(&B->e, 0x3004, 64,
		    SWIW_ACC_LOCAL_WRITE | SWIW_ACC_REMOTE_ATOMIC);
	m.msn = A->msn_rreq++;
	m.u.areq.stag = t;
	m.u.areq.to = 0x3008;
	send_msg(A, &m, 0, 0, 1000, 0, false);
	ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, SWIW_V_RDMAP_ATOMIC_ALIGN);
	ev_term(&ev, &tm);
	assert_int_equal(tm.hdrct, SWIW_TERM_M | SWIW_TERM_D);
	assert_int_equal(tm.seg_len, sizeof(struct rdmap_atomic_req));
	assert_memory_equal(tm.ddp_hdr, ev.hdr,
			    sizeof(struct ddp_untagged_hdr));
	assert_int_equal(ev.hdr[1] & 0x0f, RDMAP_ATOMIC_REQ);
	ev_none(A);
}

/* Counts the slots of @s's event ring the consumer has not taken. */
static u32 ev_unread(struct side *s)
{
	u32 i, n = 0;

	for (i = 0; i < s->e.ev_num; i++)
		n += env_slot_valid(s->e.evmem + i * ENV_EV_STRIDE);
	return n;
}

static void test_stall(void **state)
{
	struct swiw_rxev ev;
	u32 src, dst, wdst, bsrc;
	u64 next_rqe = 0, next_sent = 100;
	int i, rounds = 0;

	(void)state;
	pair_new(&(struct opts){ .ev_num_b = 8 });
	src = env_reg(&A->e, 0x1000, 65536, 0);
	dst = env_reg(&B->e, 0x1000, 65536, SWIW_ACC_LOCAL_WRITE);
	bsrc = env_reg(&B->e, 0x20000, 4096, 0);
	wdst = env_reg(&A->e, 0x40000, 4096, RW);
	fill(mem(A, src), 65536);
	for (i = 0; i < 24; i++)
		post_rqe1(B, (u64)i, dst, 0x1000 + 2048 * (u64)i, 2048);
	for (i = 0; i < 24; i++)
		do_send(A, RDMAP_SEND, 100 + 50 * (u32)i, src,
			0x1000 + 2048 * (u64)i, 0, 1);
	/* B's own txds with SENT, while its ring is full. */
	for (i = 0; i < 10; i++)
		do_write(B, wdst, 0x40000, 10, bsrc, 0x20000, 1000,
			 100 + (u64)i);
	pump();
	assert_true(swiw_lower_stalled(B->e.l));
	assert_true(ev_unread(B) >= 8 - SWIW_LOWER_RX_EVENTS);
	assert_true(swiw_lower_events_pending(B->e.l));
	/* Drain, ring the doorbell, go on: every event arrives once. */
	while (next_rqe < 24 || next_sent < 110) {
		assert_true(rounds++ < 100);
		while (env_ev_take(&B->e, &ev)) {
			if (ev.type == SWIW_RXEV_SENT) {
				assert_int_equal(ev.id, next_sent++);
				continue;
			}
			assert_int_equal(ev.type, SWIW_RXEV_SEGMENT);
			assert_int_equal(ev.id, next_rqe);
			assert_int_equal(ev.len, 100 + 50 * next_rqe);
			assert_memory_equal(mem(B, dst) + 2048 * next_rqe,
					    mem(A, src) + 2048 * next_rqe,
					    ev.len);
			next_rqe++;
		}
		assert_false(swiw_lower_events_pending(B->e.l));
		swiw_lower_doorbell(B->e.l);
		/* A's SENTs, so that A goes on sending. */
		while (env_ev_take(&A->e, &ev))
			assert_int_equal(ev.type, SWIW_RXEV_SENT);
		swiw_lower_doorbell(A->e.l);
		pump();
	}
	assert_false(swiw_lower_stalled(B->e.l));
	ev_none(B);

	/*
	 * A nearly full ring: B's frame with SENT goes out an octet at a
	 * time while reception fills all it may: it starts an FPDU only
	 * with room for its own events and the SENT the frame owes, so the
	 * SENT finds its slot, and CLOSED the one left.
	 */
	B->e.send_cap = 1;
	B->stop_tx = true;
	do_write(B, wdst, 0x40000, 10, bsrc, 0x20000, 1000, 77);
	assert_int_equal(swiw_lower_tx(B->e.l), 1);
	for (i = 0; i < 8; i++) {
		post_rqe(B, 1000 + (u64)i, NULL, 0);
		do_imm(A, 0);
	}
	while (env_ev_take(&A->e, &ev))
		assert_int_equal(ev.type, SWIW_RXEV_SENT);
	swiw_lower_doorbell(A->e.l);
	pump();
	assert_true(swiw_lower_stalled(B->e.l));
	assert_int_equal(ev_unread(B), 8 - SWIW_LOWER_RX_EVENTS);
	for (i = 0; i < 100 && swiw_lower_tx(B->e.l); i++)
		;
	assert_int_equal(ev_unread(B), 8 - 1);
	B->stop_rx = true;
	swiw_lower_rx_closed(B->e.l, ECONNRESET);
	assert_true(swiw_lower_rx_done(B->e.l));
	for (i = 0; i < 8 - SWIW_LOWER_RX_EVENTS; i++) {
		assert_true(env_ev_take(&B->e, &ev));
		assert_int_equal(ev.type, SWIW_RXEV_SEGMENT);
		assert_int_equal(ev.id, 1000 + i);
	}
	expect_sent(B, 77, 0);
	assert_true(env_ev_take(&B->e, &ev));
	assert_int_equal(ev.type, SWIW_RXEV_CLOSED);
	assert_int_equal(ev.status, ECONNRESET);
	/* Reception stopped between FPDUs: it had taken no RQE. */
	assert_int_equal(ev.flags & ~SWIW_SLOT_VALID, 0);
	assert_false(env_ev_take(&B->e, &ev));
}

/* B answers A's Read Request, or none, with a Read Response of its own. */
static void rogue_resp(u32 sink, u64 to, u32 len, u32 src)
{
	struct swiw_rdmap_msg m = { .opcode = RDMAP_READ_RESP, .len = len };

	m.stag = sink;
	m.to = to;
	send_msg(B, &m, src, 0x1000, 1000, 0, false);
}

/* A's lower half must refuse @len octets at @to of sink STag @sink. */
static void resp_refused(bool outstanding, u32 sink, u64 to, u32 len,
			 u32 violation)
{
	struct swiw_rxev ev;
	struct swiw_ddp_seg g;
	struct swiw_term t;
	u32 a_sink, b_src;

	pair_new(&(struct opts){ 0 });
	a_sink = env_reg(&A->e, 0x40000, 8192, SWIW_ACC_LOCAL_WRITE);
	b_src = env_reg(&B->e, 0x1000, 8192, 0);
	if (outstanding) {
		/* A READ B cannot serve (bad source): B answers nothing
		 * itself, its own reception ends. */
		do_read(A, a_sink, 0x40000 + 1000, 4096, 0x777, 0);
		ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	}
	rogue_resp(sink ? sink : a_sink, to, len, b_src);
	ev_expect(A, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, violation);
	/* The head says a response failed (the provider then fails the
	 * READ it answered): the segment refused, as sent. */
	ev_term(&ev, &t);
	/* Each case fails on a segment of 14 + 986 octets at most. */
	term_seg(&t, 14 + SWIW_MIN(len, 986u), &g);
	assert_int_equal(g.opcode, RDMAP_READ_RESP);
	assert_int_equal(g.stag, sink ? sink : a_sink);
	/* Nothing of it landed outside what a match would allow. */
	assert_int_equal(mem(A, a_sink)[999], 0);
	assert_int_equal(mem(A, a_sink)[1000 + 4096], 0);
	teardown(NULL);
}

/*
 * A Read Response must answer the oldest Read Request outstanding: its
 * sink STag, TO range and length. Anything else is refused, never
 * reported as the READ's completion.
 */
static void test_read_resp_rules(void **state)
{
	(void)state;
	/* Unsolicited, with data and without. */
	resp_refused(false, 0, 0x40000 + 1000, 100, SWIW_V_DDP_T_INVALID_STAG);
	resp_refused(false, 0, 0x40000 + 1000, 0, SWIW_V_DDP_T_INVALID_STAG);
	/* Zero-length where 4096 octets are owed. */
	resp_refused(true, 0, 0x40000 + 1000, 0, SWIW_V_DDP_T_BASE_BOUNDS);
	/* Short, long, before the sink, and another STag. */
	resp_refused(true, 0, 0x40000 + 1000, 100, SWIW_V_DDP_T_BASE_BOUNDS);
	resp_refused(true, 0, 0x40000 + 1000, 5000, SWIW_V_DDP_T_BASE_BOUNDS);
	resp_refused(true, 0, 0x40000, 4096, SWIW_V_DDP_T_BASE_BOUNDS);
	resp_refused(true, 0x4242, 0x40000 + 1000, 4096,
		     SWIW_V_DDP_T_INVALID_STAG);
}

/* The QP's remote rights bound the region's, and may change. */
static void test_qp_access(void **state)
{
	struct swiw_rxev ev;
	u32 src, t;

	(void)state;
	pair_new(&(struct opts){ 0 });
	src = env_reg(&A->e, 0x1000, 4096, 0);
	t = env_reg(&B->e, 0x1000, 4096,
		    SWIW_ACC_LOCAL_WRITE | SWIW_ACC_REMOTE_WRITE |
			    SWIW_ACC_REMOTE_READ | SWIW_ACC_REMOTE_ATOMIC);
	swiw_lower_set_access(B->e.l, SWIW_ACC_REMOTE_READ);
	/* A Read goes, a Write does not. */
	do_read(A, env_reg(&A->e, 0x40000, 4096, SWIW_ACC_LOCAL_WRITE), 0x40000,
		100, t, 0x1000);
	ev_expect(A, SWIW_RXEV_SEGMENT, &ev);
	do_write(A, t, 0x1000, 100, src, 0x1000, 1000, 1);
	ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, SWIW_V_DDP_T_ACCESS);
	teardown(NULL);

	pair_new(&(struct opts){ 0 });
	t = env_reg(&B->e, 0x3000, 64,
		    SWIW_ACC_LOCAL_WRITE | SWIW_ACC_REMOTE_ATOMIC |
			    SWIW_ACC_REMOTE_READ);
	swiw_lower_set_access(B->e.l, SWIW_ACC_REMOTE_WRITE);
	do_read(A, 0x100, 0, 10, t, 0x3000);
	ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, SWIW_V_RDMAP_ACCESS_RIGHTS);
	teardown(NULL);

	pair_new(&(struct opts){ 0 });
	t = env_reg(&B->e, 0x3000, 64,
		    SWIW_ACC_LOCAL_WRITE | SWIW_ACC_REMOTE_ATOMIC);
	swiw_lower_set_access(B->e.l, SWIW_ACC_REMOTE_READ);
	atomic_req(RDMAP_ATOMIC_FETCH_ADD, t, 0x3008, 1, 0, 1);
	ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, SWIW_V_RDMAP_ACCESS_RIGHTS);
}

/* A Send with Invalidate may not reach a region without remote rights. */
static void test_send_inval_local(void **state)
{
	struct swiw_rxev ev;
	struct swiw_lower_mr m = { 0 };
	struct swiw_ddp_seg g;
	struct swiw_term t;
	u32 src, dst, local;

	(void)state;
	pair_new(&(struct opts){ 0 });
	src = env_reg(&A->e, 0x1000, 4096, 0);
	dst = env_reg(&B->e, 0x1000, 4096, SWIW_ACC_LOCAL_WRITE);
	local = env_reg(&B->e, 0x9000, 4096, SWIW_ACC_LOCAL_WRITE);
	post_rqe1(B, 5, dst, 0x1000, 100);
	do_send(A, RDMAP_SEND_INVAL, 10, src, 0x1000, local, 1);
	ev_expect(B, SWIW_RXEV_VIOLATION, &ev);
	assert_int_equal(ev.violation, SWIW_V_RDMAP_CANT_INVALIDATE_OP);
	assert_int_equal(ev.id, 5);
	ev_term(&ev, &t);
	term_seg(&t, 18 + 10, &g);
	assert_int_equal(g.rsvd_ulp, local);
	/* Still valid. */
	assert_int_equal(env_mr_get(&B->e, local, &m), 0);
	env_mr_put(&B->e, m.handle);
}

/*
 * A new pair whose B reads its socket in pull mode into @stage (64 KiB),
 * payload runs of @direct_min octets straight into place (0: the
 * default), @len octets registered at 0x100000 on each side: A's source
 * *@src, filled, and B's remotely writable *@dst.
 */
static void pull_pair(bool crc, u8 *stage, u32 direct_min, u32 len, u32 *src,
		      u32 *dst)
{
	assert_non_null(stage);
	pair_new(&(struct opts){ .crc = crc });
	swiw_lower_fini(B->e.l);
	B->e.cfg.stage = stage;
	B->e.cfg.stage_len = 65536;
	B->e.cfg.direct_min = direct_min;
	assert_int_equal(swiw_lower_init(B->e.l, &B->e.cfg, &env_ops, &B->e),
			 0);
	B->pull = true;
	*src = env_reg(&A->e, 0x100000, len, 0);
	*dst = env_reg(&B->e, 0x100000, len,
		       SWIW_ACC_LOCAL_WRITE | SWIW_ACC_REMOTE_WRITE);
	fill(mem(A, *src), len);
}

/* Pull mode over a socket: large runs land in place, small ones staged. */
static void test_pull(void **state)
{
	enum {
		LEN = 300000
	};
	struct swiw_rxev ev;
	u32 src, dst, rq;
	u8 *stage = malloc(65536);
	int i, rounds;

	(void)state;
	/* Runs of 2 KiB in place: the 16000-octet segments go both ways,
	 * straight in and (their short ends) through the stage. */
	pull_pair(true, stage, 2048, LEN, &src, &dst);
	rq = env_reg(&B->e, 0x900000, 65536, SWIW_ACC_LOCAL_WRITE);
	for (i = 0; i < 30; i++)
		post_rqe1(B, (u64)i, rq, 0x900000 + 1000 * (u64)i, 1000);
	do_write(A, dst, 0x100000, LEN, src, 0x100000, 16000, 1);
	/* A's events unread: no SENT asked. */
	expect_sent(A, 1, 0);
	for (i = 0; i < 30; i++) {
		struct swiw_rdmap_msg m = { .opcode = RDMAP_SEND,
					    .len = 10 + (u32)i };

		m.msn = A->msn_send++;
		send_msg(A, &m, src, 0x100000 + (u64)i, 1000, 0, false);
	}
	for (i = 0, rounds = 0; i < 30; rounds++) {
		assert_true(rounds < 20000);
		pump();
		while (env_ev_take(&B->e, &ev)) {
			assert_int_equal(ev.type, SWIW_RXEV_SEGMENT);
			assert_int_equal(ev.id, (u64)i);
			assert_int_equal(ev.len, 10 + (u32)i);
			assert_memory_equal(mem(B, rq) + 1000 * i,
					    mem(A, src) + i, ev.len);
			i++;
		}
		swiw_lower_doorbell(B->e.l);
	}
	assert_memory_equal(mem(B, dst), mem(A, src), LEN);
	assert_true(B->e.rx_direct > 0);
	free(stage);
}

/* Drives A's Write of @len in @seg-octet segments into B, pull mode. */
static void pull_write(u32 src, u32 dst, u32 len, u32 seg)
{
	int i;

	do_write(A, dst, 0x100000, len, src, 0x100000, seg, 1);
	for (i = 0; i < 20000; i++) {
		pump();
		if (!memcmp(mem(B, dst), mem(A, src), len))
			break;
	}
	assert_memory_equal(mem(B, dst), mem(A, src), len);
}

/*
 * The default: a segment under SWIW_LOWER_DIRECT_MIN is copied out of the
 * stage (one read for it and what follows beats two), one above it read
 * straight into place.
 */
static void test_pull_direct_min(void **state)
{
	enum {
		LEN = 200000
	};
	u8 *stage = malloc(65536);
	u32 src, dst;

	(void)state;
	pull_pair(false, stage, 0, LEN, &src, &dst);
	pull_write(src, dst, LEN, SWIW_LOWER_DIRECT_MIN / 2);
	assert_int_equal(B->e.rx_direct, 0);
	memset(mem(B, dst), 0, LEN);
	pull_write(src, dst, LEN, 60000);
	assert_true(B->e.rx_direct > 0);
	free(stage);
}

/* Loopback delivers within the sender's call; wait a little anyway. */
static void readable(struct side *s)
{
	struct pollfd p = { .fd = s->e.fd, .events = POLLIN };

	assert_int_equal(poll(&p, 1, 5000), 1);
}

/*
 * Pull mode's answer tells the engine whether to read again at once: 1
 * only when the read bound stopped it with octets perhaps waiting, 0 once
 * the transport had no more (a short read), so no round is wasted.
 */
static void test_pull_bound(void **state)
{
	enum {
		LEN = 200000
	};
	u8 *stage = malloc(65536);
	u32 src, dst;
	int i;

	(void)state;
	pull_pair(false, stage, 2048, LEN, &src, &dst);
	/* One small Write: the first reads take it all, the next is short. */
	do_write(A, dst, 0x100000, 100, src, 0x100000, 16000, 1);
	swiw_lower_tx(A->e.l);
	readable(B);
	assert_int_equal(swiw_lower_rx_pull(B->e.l, 8), 0);
	assert_memory_equal(mem(B, dst), mem(A, src), 100);
	/* Many FPDUs waiting: one read is not all of them. */
	do_write(A, dst, 0x100000, LEN, src, 0x100000, 16000, 2);
	for (i = 0; i < 100 && swiw_lower_tx(A->e.l) == 1; i++)
		;
	readable(B);
	assert_int_equal(swiw_lower_rx_pull(B->e.l, 1), 1);
	for (i = 0; i < 20000 && !swiw_lower_rx_done(B->e.l); i++) {
		pump();
		if (!memcmp(mem(B, dst), mem(A, src), LEN))
			break;
	}
	assert_memory_equal(mem(B, dst), mem(A, src), LEN);
	free(stage);
}

/* A full 1 MiB each way and back: Write, Read and Send. */
static void test_mib(void **state)
{
	enum {
		MIB = 1 << 20
	};
	struct swiw_sge sg[SWIW_MAX_SGE];
	struct swiw_rxev ev;
	u32 a, b, back, rq;
	int i;

	(void)state;
	pair_new(&(struct opts){
		.crc = true, .markers_ab = true, .markers_ba = true });
	a = env_reg(&A->e, 0x100000, MIB, RW);
	b = env_reg(&B->e, 0x300000, MIB, RW | SWIW_ACC_REMOTE_READ);
	back = env_reg(&A->e, 0x700000, MIB, RW);
	rq = env_reg(&B->e, 0x900000, MIB, SWIW_ACC_LOCAL_WRITE);
	fill(mem(A, a), MIB);
	/* Partial sends everywhere: at most 7777 octets per call. */
	A->e.send_cap = 7777;
	B->e.send_cap = 7777;
	do_write(A, b, 0x300000, MIB, a, 0x100000, 16000, 1);
	expect_sent(A, 1, 0);
	assert_memory_equal(mem(B, b), mem(A, a), MIB);
	B->e.l->cfg.mulpdu = 9000;
	do_read(A, back, 0x700000, MIB, b, 0x300000);
	ev_expect(A, SWIW_RXEV_SEGMENT, &ev);
	assert_int_equal(ev.len, MIB);
	assert_memory_equal(mem(A, back), mem(A, a), MIB);
	for (i = 0; i < SWIW_MAX_SGE; i++)
		sg[i] = (struct swiw_sge){ 0x900000 + (u64)i * (MIB / 16),
					   MIB / 16, rq };
	post_rqe(B, 99, sg, SWIW_MAX_SGE);
	{
		struct swiw_rdmap_msg m = { .opcode = RDMAP_SEND, .len = MIB };

		m.msn = A->msn_send++;
		/* With markers, the last one's FPDUPTR must fit 16 bits. */
		send_msg(A, &m, a, 0x100000, 60000, 2, true);
	}
	ev_expect(B, SWIW_RXEV_SEGMENT, &ev);
	assert_int_equal(ev.id, 99);
	assert_int_equal(ev.len, MIB);
	assert_memory_equal(mem(B, rq), mem(A, a), MIB);
	expect_sent(A, 2, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_checks),
		cmocka_unit_test_teardown(test_send_multi_sge, teardown),
		cmocka_unit_test_teardown(test_write, teardown),
		cmocka_unit_test_teardown(test_read, teardown),
		cmocka_unit_test_teardown(test_tx_revoke, teardown),
		cmocka_unit_test_teardown(test_atomics, teardown),
		cmocka_unit_test_teardown(test_write_imm, teardown),
		cmocka_unit_test_teardown(test_send_inval, teardown),
		cmocka_unit_test_teardown(test_send_inval_fails, teardown),
		cmocka_unit_test_teardown(test_invalidate_txd, teardown),
		cmocka_unit_test_teardown(test_crc_markers, teardown),
		cmocka_unit_test_teardown(test_framing_mismatch, teardown),
		cmocka_unit_test_teardown(test_rtr, teardown),
		cmocka_unit_test_teardown(test_bad_txd, teardown),
		cmocka_unit_test_teardown(test_peer_violations, teardown),
		cmocka_unit_test_teardown(test_term_seg_len, teardown),
		cmocka_unit_test_teardown(test_terminate, teardown),
		cmocka_unit_test_teardown(test_closed, teardown),
		cmocka_unit_test_teardown(test_fini_rqe, teardown),
		cmocka_unit_test_teardown(test_resp_between_messages, teardown),
		cmocka_unit_test_teardown(test_ird_and_align, teardown),
		cmocka_unit_test_teardown(test_stall, teardown),
		cmocka_unit_test_teardown(test_mib, teardown),
		cmocka_unit_test(test_read_resp_rules),
		cmocka_unit_test_teardown(test_qp_access, teardown),
		cmocka_unit_test_teardown(test_send_inval_local, teardown),
		cmocka_unit_test_teardown(test_pull, teardown),
		cmocka_unit_test_teardown(test_pull_bound, teardown),
		cmocka_unit_test_teardown(test_pull_direct_min, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
