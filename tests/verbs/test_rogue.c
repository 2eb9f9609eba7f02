// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A misbehaving peer against a real swiw QP. The peer (rogue.c) is plain
 * TCP in this process, speaking MPA, DDP and RDMAP with the wire core;
 * the QP is swiw's, reached through librdmacm's API (rdma_listen,
 * rdma_accept) under swiw-run, on whichever engine runs it. Each test
 * breaks one rule the lower half enforces (swiw_lower.h) and checks both
 * ends: the TERMINATE the peer gets (layer, type and code from the
 * violation table, the offending header carried back, then FIN), and
 * the QP's side (the WR concerned fails, every other one is flushed
 * once, the table's async event, the error state, and memory outside
 * what the peer may touch unchanged).
 *
 * 1. A Read Response must answer the oldest Read Request outstanding
 *    (sink STag, TO range, length, order); an Atomic Response the oldest
 *    atomic.
 * 2. Incoming WRITE, READ and atomics need the QP's qp_access_flags as
 *    well as the region's rights, as modify_qp leaves them.
 * 3. A Send with Invalidate may invalidate only a region of the QP's PD
 *    with a remote right; another stays valid.
 * And a TERMINATE that breaks a rule is never answered with one.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cmocka.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rc_test.h"
#include "rogue.h"
#include "swiw_term.h"

#define BUF (64u << 10)
#define SINK_OFF 4096u /* a READ's sink within the sink buffer */
#define RLEN 4096u /* and its length */
#define SEG 1024u /* payload octets of the rogue's tagged segments */
#define MULPDU (SEG + (u32)sizeof(struct ddp_tagged_hdr))
#define UNTOUCHED 0xee
/* The rogue's memory, as the swiw side names it in its requests. */
#define R_ADDR 0x10000ull
#define R_KEY 0xabc01u

#define ACC_ALL                                             \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define CM_ACCESS -1 /* leave qp_access_flags as rdma_create_qp set them */

/* One connection: swiw's id and QP, and the rogue or a swiw client. */
struct conn {
	struct rdma_cm_id *id;
	struct rogue *r;
};

struct fx {
	struct ibv_pd *pd, *pd2;
	struct ibv_cq *scq, *rcq, *cscq, *crcq;
	uint8_t *sink, *src, *tgt;
	struct ibv_mr *sink_mr, *src_mr, *tgt_mr;
	struct conn c[2];
	/* A swiw client for the two-QP tests. */
	struct rdma_event_channel *cch;
	struct rdma_cm_id *cli;
};

static struct rdma_event_channel *ch;
static struct rdma_cm_id *lid;
static struct ibv_context *ctx;
static uint16_t port;
static uint8_t pattern[2 * BUF];

/*
 * swiw reports a violation otherwise than the table says, beside the
 * rule itself (the status of the READ a bad response ended, the
 * TERMINATE's optional parts): the test fails, saying what differs.
 */
static void deviation(const char *what, unsigned long got, unsigned long want)
{
	fprintf(stderr, "deviation from the table: %s is %lu, not %lu\n", what,
		got, want);
	fail();
}

/* Setup ------------------------------------------------------------- */

/*
 * The next CM event of @c within 5 s but DISCONNECTED ones (a failed
 * stream's, on the listener's channel); it must be @type.
 */
static struct rdma_cm_event *cm_expect(struct rdma_event_channel *c,
				       enum rdma_cm_event_type type)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	for (;;) {
		if (poll(&p, 1, 5000) != 1) {
			fprintf(stderr, "no CM event (wanted %s)\n",
				rdma_event_str(type));
			fail();
		}
		assert_int_equal(rdma_get_cm_event(c, &ev), 0);
		if (ev->event == type ||
		    ev->event != RDMA_CM_EVENT_DISCONNECTED)
			break;
		assert_int_equal(rdma_ack_cm_event(ev), 0);
	}
	if (ev->event != type)
		fprintf(stderr, "CM event %s (status %d), wanted %s\n",
			rdma_event_str(ev->event), ev->status,
			rdma_event_str(type));
	assert_int_equal(ev->event, type);
	return ev;
}

/* What a failed test left on the listener's channel: no request of it
 * may reach the next test. */
static void drain_cm(void)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	while (poll(&p, 1, 0) == 1 && !rdma_get_cm_event(ch, &ev)) {
		id = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ? ev->id : NULL;
		rdma_ack_cm_event(ev);
		if (id) {
			rdma_reject(id, NULL, 0);
			rdma_destroy_id(id);
		}
	}
}

static struct sockaddr_in lo_addr(uint16_t p)
{
	struct sockaddr_in a = { .sin_family = AF_INET };

	a.sin_port = htons(p);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* One listener on 127.0.0.1 (swiw_lo), on a port the kernel picks. */
static int group_setup(void **state)
{
	struct sockaddr_in a = lo_addr(0);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 13 + (i >> 9) + 1);
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, (struct sockaddr *)&a) || rdma_listen(lid, 8)) {
		fprintf(stderr, "no swiw listener: run through swiw-run\n");
		return -1;
	}
	port = ntohs(rdma_get_src_port(lid));
	ctx = lid->verbs;
	if (!port || !ctx) {
		fprintf(stderr, "listener: port %u, verbs %p\n", port,
			(void *)ctx);
		return -1;
	}
	rt_nonblock_async(ctx);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (lid)
		rdma_destroy_id(lid);
	if (ch)
		rdma_destroy_event_channel(ch);
	return 0;
}

static uint8_t *reg(struct ibv_pd *pd, int acc, struct ibv_mr **mr)
{
	uint8_t *p = aligned_alloc(4096, BUF);

	if (!p)
		return NULL;
	memset(p, UNTOUCHED, BUF);
	*mr = ibv_reg_mr(pd, p, BUF, acc);
	return *mr ? p : NULL;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	rt_arm(60);
	*state = f;
	if (!f)
		return -1;
	f->pd = ibv_alloc_pd(ctx);
	f->pd2 = ibv_alloc_pd(ctx);
	f->scq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	f->rcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	f->cscq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	f->crcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!f->pd || !f->pd2 || !f->scq || !f->rcq || !f->cscq || !f->crcq)
		return -1;
	/* A READ's sink needs LOCAL_WRITE only; the target has it all. */
	f->sink = reg(f->pd, IBV_ACCESS_LOCAL_WRITE, &f->sink_mr);
	f->src = reg(f->pd, IBV_ACCESS_LOCAL_WRITE, &f->src_mr);
	f->tgt = reg(f->pd, ACC_ALL, &f->tgt_mr);
	if (!f->sink || !f->src || !f->tgt)
		return -1;
	memcpy(f->tgt, pattern + 7, BUF);
	return 0;
}

/* Async events not taken: none may be blamed on a later QP. */
static void drain_async(void)
{
	struct ibv_async_event ev;

	while (!ibv_get_async_event(ctx, &ev))
		ibv_ack_async_event(&ev);
}

static void conn_free(struct conn *c)
{
	if (c->r) {
		rogue_close(c->r);
		free(c->r);
	}
	if (c->id) {
		if (c->id->qp)
			rdma_destroy_qp(c->id);
		rdma_destroy_id(c->id);
	}
	memset(c, 0, sizeof(*c));
}

static int teardown(void **state)
{
	struct fx *f = *state;

	drain_async();
	conn_free(&f->c[0]);
	conn_free(&f->c[1]);
	drain_cm();
	if (f->cli) {
		if (f->cli->qp)
			rdma_destroy_qp(f->cli);
		rdma_destroy_id(f->cli);
	}
	if (f->cch)
		rdma_destroy_event_channel(f->cch);
	drain_async();
	if (f->sink_mr)
		ibv_dereg_mr(f->sink_mr);
	if (f->src_mr)
		ibv_dereg_mr(f->src_mr);
	if (f->tgt_mr)
		ibv_dereg_mr(f->tgt_mr);
	free(f->sink);
	free(f->src);
	free(f->tgt);
	if (f->scq)
		ibv_destroy_cq(f->scq);
	if (f->rcq)
		ibv_destroy_cq(f->rcq);
	if (f->cscq)
		ibv_destroy_cq(f->cscq);
	if (f->crcq)
		ibv_destroy_cq(f->crcq);
	if (f->pd2)
		ibv_dealloc_pd(f->pd2);
	if (f->pd)
		ibv_dealloc_pd(f->pd);
	free(f);
	alarm(0);
	return 0;
}

/* The QP the listener's next connection gets, in @pd, accepted. */
static void accept_qp(struct fx *f, struct conn *c, struct ibv_pd *pd,
		      int access)
{
	struct ibv_qp_init_attr qa = { .send_cq = f->scq,
				       .recv_cq = f->rcq,
				       .cap = { .max_send_wr = 16,
						.max_recv_wr = 16,
						.max_send_sge = 2,
						.max_recv_sge = 2 },
				       .qp_type = IBV_QPT_RC };
	struct rdma_conn_param cp = { .responder_resources = ROGUE_IRD_ORD,
				      .initiator_depth = ROGUE_IRD_ORD };
	struct rdma_cm_event *ev = cm_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);

	c->id = ev->id;
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_create_qp(c->id, pd, &qa), 0);
	if (access != CM_ACCESS) {
		struct ibv_qp_attr a = { .qp_access_flags = (unsigned)access };

		assert_int_equal(
			ibv_modify_qp(c->id->qp, &a, IBV_QP_ACCESS_FLAGS), 0);
	}
	assert_int_equal(rdma_accept(c->id, &cp), 0);
}

/* The rogue connects; swiw accepts it with a QP of @access in @pd. */
static void connect_rogue(struct fx *f, struct conn *c, struct ibv_pd *pd,
			  int access)
{
	c->r = calloc(1, sizeof(*c->r));
	assert_non_null(c->r);
	c->r->fd = -1;
	assert_int_equal(rogue_connect(c->r, port), 0);
	accept_qp(f, c, pd, access);
	assert_int_equal(rogue_establish(c->r, 5000), 0);
	assert_int_equal(
		rdma_ack_cm_event(cm_expect(ch, RDMA_CM_EVENT_ESTABLISHED)), 0);
}

/* Checks ------------------------------------------------------------ */

static const char *st(int s)
{
	return ibv_wc_status_str((enum ibv_wc_status)s);
}

static int event_of(const struct swiw_violation_info *vi)
{
	switch (vi->async) {
	case SWIW_AE_QP_REQ_ERR:
		return IBV_EVENT_QP_REQ_ERR;
	case SWIW_AE_QP_ACCESS_ERR:
		return IBV_EVENT_QP_ACCESS_ERR;
	default:
		return IBV_EVENT_QP_FATAL;
	}
}

/* [@from, @to) of @buf still holds UNTOUCHED. */
static void untouched(const uint8_t *buf, uint32_t from, uint32_t to)
{
	uint32_t i;

	for (i = from; i < to; i++)
		if (buf[i] != UNTOUCHED) {
			fprintf(stderr, "octet %u of [%u, %u) was written\n", i,
				from, to);
			fail();
		}
}

/* What the rogue sends as payload, from offset @seed of the pattern. */
static const uint8_t *data(uint32_t seed)
{
	return pattern + seed;
}

/*
 * The rogue's side of a violation: Sends may come first, no response to
 * the offending request, then one TERMINATE with the table's code for
 * @v and the parts its row asks for: the length and header of segment
 * @k of the last message the rogue sent, and for a Read Request its
 * RDMAP header; then FIN, with nothing after it.
 */
static void expect_term(struct rogue *r, enum swiw_violation v, u32 k)
{
	const struct swiw_violation_info *vi = swiw_violation_info(v);
	const u8 md = SWIW_TERM_M | SWIW_TERM_D;
	const struct swiw_term *t;
	struct rogue_msg m;
	int i, rc;

	for (i = 0;; i++) {
		rc = rogue_recv(r, &m, 5000);
		if (rc)
			fprintf(stderr, "rogue: no TERMINATE (%s) for %s\n",
				strerror(-rc), vi->name);
		assert_int_equal(rc, 0);
		assert_int_equal(m.v, SWIW_V_NONE);
		if (m.seg.opcode == RDMAP_TERMINATE)
			break;
		if (m.seg.opcode == RDMAP_READ_RESP ||
		    m.seg.opcode == RDMAP_ATOMIC_RESP) {
			fprintf(stderr,
				"rogue: a response (opcode %u) came "
				"instead of the TERMINATE\n",
				m.seg.opcode);
			fail();
		}
		assert_true(i < 16);
	}
	t = &m.seg.u.term;
	fprintf(stderr,
		"rogue: TERMINATE layer %u etype %u code 0x%02x "
		"hdrct %x (%s wants %u/%u/0x%02x %x)\n",
		t->layer, t->etype, t->ecode, t->hdrct, vi->name, vi->layer,
		vi->etype, vi->ecode, vi->hdrct);
	assert_int_equal(m.seg.term_rc, 0);
	assert_int_equal(t->layer, vi->layer);
	assert_int_equal(t->etype, vi->etype);
	assert_int_equal(t->ecode, vi->ecode);
	/* What a requester's application would be told. */
	assert_int_equal(swiw_term_peer_status(t->layer, t->etype, t->ecode),
			 vi->peer_status);
	assert_true(k < r->nhdr);
	/* Parts the row does not ask for are never there; those it asks
	 * for carry what the rogue sent. */
	assert_int_equal(t->hdrct & ~vi->hdrct, 0);
	if ((t->hdrct & md) != (vi->hdrct & md))
		deviation("the TERMINATE's M and D", t->hdrct & md,
			  vi->hdrct & md);
	if ((t->hdrct & SWIW_TERM_M) && t->seg_len != r->seg_len[k])
		deviation("the TERMINATE's DDP Segment Length", t->seg_len,
			  r->seg_len[k]);
	if (t->hdrct & SWIW_TERM_D)
		assert_memory_equal(t->ddp_hdr, r->hdr[k], t->ddp_len);
	if (t->hdrct & SWIW_TERM_R)
		assert_memory_equal(t->rdmap_hdr,
				    r->hdr[k] + sizeof(struct ddp_untagged_hdr),
				    SWIW_TERM_RDMAP_HDR_SIZE);
	assert_int_equal(rogue_wait_eof(r, 5000), 0);
}

/*
 * swiw's side of a violation @v: send WRs 1..@nsend completed once each,
 * in order, the first with an error when @first_fails (the READ or
 * atomic the violation concerns), every other one flushed; receives
 * 100.. (@nrecv) likewise, the first with @recv0 (-1: flushed); the
 * table's async event and the error state.
 */
static void expect_qp_failed(struct ibv_qp *qp, enum swiw_violation v,
			     int nsend, bool first_fails, int nrecv, int recv0)
{
	const struct swiw_violation_info *vi = swiw_violation_info(v);
	struct ibv_wc wc[32];
	int i, n, want, ev;

	n = rt_expect(qp->send_cq, wc, 32, nsend, 5000);
	for (i = 0; i < n; i++)
		fprintf(stderr, "swiw: send wr %llu %s\n",
			(unsigned long long)wc[i].wr_id, st(wc[i].status));
	assert_int_equal(n, nsend);
	for (i = 0; i < n; i++) {
		assert_int_equal(wc[i].wr_id, (uint64_t)i + 1);
		if (!i && first_fails) {
			assert_int_not_equal(wc[i].status, IBV_WC_SUCCESS);
			if ((int)wc[i].status != (int)vi->local_status)
				deviation("the status of the WR it ended",
					  wc[i].status, vi->local_status);
		} else
			assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
	}
	n = rt_expect(qp->recv_cq, wc, 32, nrecv, 5000);
	assert_int_equal(n, nrecv);
	for (i = 0; i < n; i++) {
		want = i || recv0 < 0 ? IBV_WC_WR_FLUSH_ERR : recv0;
		if ((int)wc[i].status != want)
			fprintf(stderr, "swiw: recv wr %llu %s, wanted %s\n",
				(unsigned long long)wc[i].wr_id,
				st(wc[i].status), st(want));
		assert_int_equal(wc[i].wr_id, 100 + (uint64_t)i);
		assert_int_equal(wc[i].status, want);
	}
	ev = rt_event(ctx, qp, 2000);
	if (ev != event_of(vi))
		fprintf(stderr, "swiw: async event %d, wanted %d\n", ev,
			event_of(vi));
	assert_int_equal(ev, event_of(vi));
	assert_int_equal(rt_wait_state(qp, IBV_QPS_ERR, 1000), IBV_QPS_ERR);
}

static void post_recvs(struct fx *f, struct ibv_qp *qp, int n)
{
	int i;

	for (i = 0; i < n; i++)
		assert_int_equal(rt_post_recv(qp, 100 + (uint64_t)i,
					      f->src + 32768 + i * 4096u, 4096,
					      f->src_mr->lkey),
				 0);
}

/* Rule 1: responses ------------------------------------------------- */

/* The rogue's next message, which must be a @opcode. */
static void rogue_expect(struct rogue *r, u8 opcode, struct rogue_msg *m)
{
	assert_int_equal(rogue_recv(r, m, 5000), 0);
	assert_int_equal(m->v, SWIW_V_NONE);
	if (m->seg.opcode != opcode)
		fprintf(stderr, "rogue: opcode %u, wanted %u\n", m->seg.opcode,
			opcode);
	assert_int_equal(m->seg.opcode, opcode);
}

/* swiw READs @len octets into sink + @off from R_ADDR + @off (WR @id). */
static void post_read(struct fx *f, uint64_t id, uint32_t off, uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)f->sink + off, len, f->sink_mr->lkey };

	assert_int_equal(rt_post(f->c[0].id->qp, id, IBV_WR_RDMA_READ, &s,
				 IBV_SEND_SIGNALED, R_ADDR + off, R_KEY),
			 0);
}

static void post_send(struct fx *f, uint64_t id)
{
	struct ibv_sge s = { (uintptr_t)f->src, 64, f->src_mr->lkey };

	assert_int_equal(rt_post(f->c[0].id->qp, id, IBV_WR_SEND, &s,
				 IBV_SEND_SIGNALED, 0, 0),
			 0);
}

/* The rogue takes a Read Request for sink + @off, @len octets. */
static void take_read_req(struct fx *f, uint32_t off, uint32_t len,
			  struct swiw_rdmap_read_req *rq)
{
	struct rogue_msg m;

	rogue_expect(f->c[0].r, RDMAP_READ_REQ, &m);
	*rq = m.seg.u.rreq;
	assert_int_equal(rq->sink_stag, f->sink_mr->lkey);
	assert_int_equal(rq->sink_to, (uintptr_t)f->sink + off);
	assert_int_equal(rq->size, len);
	assert_int_equal(rq->src_stag, R_KEY);
	assert_int_equal(rq->src_to, R_ADDR + off);
}

/*
 * Connected; two receives posted; swiw READs RLEN octets into sink +
 * SINK_OFF (WR 1) and SENDs (WR 2); the rogue has the Read Request.
 */
static void start_read(struct fx *f, struct swiw_rdmap_read_req *rq)
{
	connect_rogue(f, &f->c[0], f->pd, CM_ACCESS);
	post_recvs(f, f->c[0].id->qp, 2);
	post_read(f, 1, SINK_OFF, RLEN);
	post_send(f, 2);
	take_read_req(f, SINK_OFF, RLEN, rq);
}

/* The rogue sends a Read Response of @len octets to (@stag, @to). */
static void read_resp(struct fx *f, u32 stag, u64 to, u32 len, u32 mulpdu,
		      u32 seed)
{
	struct swiw_rdmap_msg m = {
		.opcode = RDMAP_READ_RESP, .stag = stag, .to = to, .len = len
	};

	assert_int_equal(rogue_send(f->c[0].r, &m, data(seed), mulpdu), 0);
}

/* The READ failed with @v: WR 1 failed, WR 2 flushed, the receives too. */
static void read_failed(struct fx *f, enum swiw_violation v, u32 k)
{
	expect_term(f->c[0].r, v, k);
	expect_qp_failed(f->c[0].id->qp, v, 2, true, 2, -1);
}

/* The control: a correct response in four segments completes it all. */
static void test_read_resp_good(void **state)
{
	struct fx *f = *state;
	struct swiw_rdmap_read_req rq;
	struct rogue_msg m;
	struct ibv_wc wc[4];

	start_read(f, &rq);
	read_resp(f, rq.sink_stag, rq.sink_to, RLEN, MULPDU, 0);
	assert_int_equal(rt_expect(f->scq, wc, 4, 2, 5000), 2);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
	assert_memory_equal(f->sink + SINK_OFF, data(0), RLEN);
	untouched(f->sink, 0, SINK_OFF);
	untouched(f->sink, SINK_OFF + RLEN, BUF);
	rogue_expect(f->c[0].r, RDMAP_SEND, &m);
	assert_int_equal(m.seg.payload_len, 64);
	assert_int_equal(rogue_recv(f->c[0].r, &m, 100), -ETIMEDOUT);
	assert_int_equal(rt_state(f->c[0].id->qp), IBV_QPS_RTS);
}

/* No READ was ever posted: a Read Response to a valid sink answers
 * nothing (RFC 5041 invalid STag, as no sink is open). */
static void test_read_resp_unsolicited(void **state)
{
	struct fx *f = *state;

	connect_rogue(f, &f->c[0], f->pd, CM_ACCESS);
	post_recvs(f, f->c[0].id->qp, 2);
	read_resp(f, f->sink_mr->lkey, (uintptr_t)f->sink + SINK_OFF, 64,
		  MULPDU, 0);
	expect_term(f->c[0].r, SWIW_V_DDP_T_INVALID_STAG, 0);
	expect_qp_failed(f->c[0].id->qp, SWIW_V_DDP_T_INVALID_STAG, 0, false, 2,
			 -1);
	untouched(f->sink, 0, BUF);
}

/* The same with no payload: nothing to place, still no READ to end. */
static void test_read_resp_unsolicited_empty(void **state)
{
	struct fx *f = *state;

	connect_rogue(f, &f->c[0], f->pd, CM_ACCESS);
	post_recvs(f, f->c[0].id->qp, 2);
	read_resp(f, f->sink_mr->lkey, (uintptr_t)f->sink + SINK_OFF, 0, MULPDU,
		  0);
	expect_term(f->c[0].r, SWIW_V_DDP_T_INVALID_STAG, 0);
	expect_qp_failed(f->c[0].id->qp, SWIW_V_DDP_T_INVALID_STAG, 0, false, 2,
			 -1);
}

/* The READ was answered; the same response again answers nothing. */
static void test_read_resp_twice(void **state)
{
	struct fx *f = *state;
	struct swiw_rdmap_read_req rq;
	struct ibv_wc wc[4];

	start_read(f, &rq);
	read_resp(f, rq.sink_stag, rq.sink_to, RLEN, MULPDU, 0);
	assert_int_equal(rt_expect(f->scq, wc, 4, 2, 5000), 2);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
	read_resp(f, rq.sink_stag, rq.sink_to, RLEN, MULPDU, 5);
	expect_term(f->c[0].r, SWIW_V_DDP_T_INVALID_STAG, 0);
	expect_qp_failed(f->c[0].id->qp, SWIW_V_DDP_T_INVALID_STAG, 0, false, 2,
			 -1);
	assert_memory_equal(f->sink + SINK_OFF, data(0), RLEN);
}

/* 4096 octets are owed; an empty response with L pays none of them. */
static void test_read_resp_empty(void **state)
{
	struct fx *f = *state;
	struct swiw_rdmap_read_req rq;

	start_read(f, &rq);
	read_resp(f, rq.sink_stag, rq.sink_to, 0, MULPDU, 0);
	read_failed(f, SWIW_V_DDP_T_BASE_BOUNDS, 0);
	untouched(f->sink, 0, BUF);
}

/* L on the second of four segments: the first is placed, nothing else. */
static void test_read_resp_short(void **state)
{
	struct fx *f = *state;
	struct swiw_rdmap_read_req rq;

	start_read(f, &rq);
	read_resp(f, rq.sink_stag, rq.sink_to, 2 * SEG, MULPDU, 0);
	read_failed(f, SWIW_V_DDP_T_BASE_BOUNDS, 1);
	assert_memory_equal(f->sink + SINK_OFF, data(0), SEG);
	untouched(f->sink, 0, SINK_OFF);
	untouched(f->sink, SINK_OFF + SEG, BUF);
}

/* A fifth segment past the 4096 octets asked for, inside the region. */
static void test_read_resp_long(void **state)
{
	struct fx *f = *state;
	struct swiw_rdmap_read_req rq;

	start_read(f, &rq);
	read_resp(f, rq.sink_stag, rq.sink_to, RLEN + SEG, MULPDU, 0);
	read_failed(f, SWIW_V_DDP_T_BASE_BOUNDS, 4);
	assert_memory_equal(f->sink + SINK_OFF, data(0), RLEN);
	untouched(f->sink, 0, SINK_OFF);
	untouched(f->sink, SINK_OFF + RLEN, BUF);
}

/* One segment longer than the READ: refused whole, nothing placed. */
static void test_read_resp_long_one_segment(void **state)
{
	struct fx *f = *state;
	struct swiw_rdmap_read_req rq;

	start_read(f, &rq);
	read_resp(f, rq.sink_stag, rq.sink_to, RLEN + 64, 8192, 0);
	read_failed(f, SWIW_V_DDP_T_BASE_BOUNDS, 0);
	untouched(f->sink, 0, BUF);
}

/* Another valid region, one the peer may even WRITE to, is no sink. */
static void test_read_resp_wrong_stag(void **state)
{
	struct fx *f = *state;
	struct swiw_rdmap_read_req rq;

	start_read(f, &rq);
	read_resp(f, f->tgt_mr->rkey, (uintptr_t)f->tgt, RLEN, MULPDU, 3);
	read_failed(f, SWIW_V_DDP_T_INVALID_STAG, 0);
	assert_memory_equal(f->tgt, pattern + 7, BUF);
	untouched(f->sink, 0, BUF);
}

/* The right sink STag, at the TO just past the READ's range. */
static void test_read_resp_to_beyond(void **state)
{
	struct fx *f = *state;
	struct swiw_rdmap_read_req rq;

	start_read(f, &rq);
	read_resp(f, rq.sink_stag, rq.sink_to + RLEN, RLEN, MULPDU, 0);
	read_failed(f, SWIW_V_DDP_T_BASE_BOUNDS, 0);
	untouched(f->sink, 0, BUF);
}

/* The right sink STag, starting below the READ's range. */
static void test_read_resp_to_below(void **state)
{
	struct fx *f = *state;
	struct swiw_rdmap_read_req rq;

	start_read(f, &rq);
	read_resp(f, rq.sink_stag, rq.sink_to - SEG, RLEN, MULPDU, 0);
	read_failed(f, SWIW_V_DDP_T_BASE_BOUNDS, 0);
	untouched(f->sink, 0, BUF);
}

/* Two READs outstanding: the second's response may not come first. */
static void test_read_resp_order(void **state)
{
	struct fx *f = *state;
	struct swiw_rdmap_read_req rq1, rq2;

	connect_rogue(f, &f->c[0], f->pd, CM_ACCESS);
	post_recvs(f, f->c[0].id->qp, 2);
	post_read(f, 1, SINK_OFF, SEG);
	post_read(f, 2, 3 * SINK_OFF, SEG);
	take_read_req(f, SINK_OFF, SEG, &rq1);
	take_read_req(f, 3 * SINK_OFF, SEG, &rq2);
	read_resp(f, rq2.sink_stag, rq2.sink_to, SEG, MULPDU, 0);
	expect_term(f->c[0].r, SWIW_V_DDP_T_BASE_BOUNDS, 0);
	expect_qp_failed(f->c[0].id->qp, SWIW_V_DDP_T_BASE_BOUNDS, 2, true, 2,
			 -1);
	untouched(f->sink, 0, BUF);
}

/* swiw's atomic (WR 1) into sink + SINK_OFF, then a SEND (WR 2). */
static void start_atomic(struct fx *f, struct swiw_rdmap_atomic_req *a)
{
	struct ibv_sge s = { (uintptr_t)f->sink + SINK_OFF, 8,
			     f->sink_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1,
				  .sg_list = &s,
				  .num_sge = 1,
				  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	struct rogue_msg m;

	connect_rogue(f, &f->c[0], f->pd, CM_ACCESS);
	post_recvs(f, f->c[0].id->qp, 2);
	wr.wr.atomic.remote_addr = R_ADDR;
	wr.wr.atomic.rkey = R_KEY;
	wr.wr.atomic.compare_add = 5;
	assert_int_equal(ibv_post_send(f->c[0].id->qp, &wr, &bad), 0);
	post_send(f, 2);
	rogue_expect(f->c[0].r, RDMAP_ATOMIC_REQ, &m);
	*a = m.seg.u.areq;
	assert_int_equal(a->op, RDMAP_ATOMIC_FETCH_ADD);
	assert_int_equal(a->stag, R_KEY);
	assert_int_equal(a->to, R_ADDR);
	assert_int_equal(a->add_swap, 5);
}

static void atomic_resp(struct fx *f, u32 req_id, u64 orig)
{
	struct swiw_rdmap_msg m = { .opcode = RDMAP_ATOMIC_RESP };

	m.u.aresp.req_id = req_id;
	m.u.aresp.orig = orig;
	assert_int_equal(rogue_send(f->c[0].r, &m, NULL, MULPDU), 0);
}

/* The control: the atomic answered completes with the original value. */
static void test_atomic_resp_good(void **state)
{
	struct fx *f = *state;
	struct swiw_rdmap_atomic_req a;
	struct ibv_wc wc[4];
	uint64_t v = 0x1122334455667788ull;

	start_atomic(f, &a);
	atomic_resp(f, a.req_id, v);
	assert_int_equal(rt_expect(f->scq, wc, 4, 2, 5000), 2);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
	assert_memory_equal(f->sink + SINK_OFF, &v, 8);
	untouched(f->sink, 0, SINK_OFF);
	untouched(f->sink, SINK_OFF + 8, BUF);
}

/* An Atomic Response with no atomic outstanding: no buffer on queue 3. */
static void test_atomic_resp_unsolicited(void **state)
{
	struct fx *f = *state;

	connect_rogue(f, &f->c[0], f->pd, CM_ACCESS);
	post_recvs(f, f->c[0].id->qp, 2);
	atomic_resp(f, 1, 42);
	expect_term(f->c[0].r, SWIW_V_DDP_UT_NO_BUFFER, 0);
	expect_qp_failed(f->c[0].id->qp, SWIW_V_DDP_UT_NO_BUFFER, 0, false, 2,
			 -1);
}

/* A READ is outstanding, not an atomic: an Atomic Response answers none. */
static void test_atomic_resp_for_read(void **state)
{
	struct fx *f = *state;
	struct swiw_rdmap_read_req rq;

	start_read(f, &rq);
	atomic_resp(f, 0, 42);
	read_failed(f, SWIW_V_DDP_UT_NO_BUFFER, 0);
	untouched(f->sink, 0, BUF);
}

/* An atomic is outstanding: a Read Response into its result answers none. */
static void test_read_resp_for_atomic(void **state)
{
	struct fx *f = *state;
	struct swiw_rdmap_atomic_req a;

	start_atomic(f, &a);
	read_resp(f, f->sink_mr->lkey, (uintptr_t)f->sink + SINK_OFF, 8, MULPDU,
		  0);
	read_failed(f, SWIW_V_DDP_T_INVALID_STAG, 0);
	untouched(f->sink, 0, BUF);
}

/* Rule 2: the QP's access flags ------------------------------------- */

static void rogue_write(struct conn *c, u32 stag, u64 to, u32 len, u32 seed)
{
	struct swiw_rdmap_msg m = {
		.opcode = RDMAP_WRITE, .stag = stag, .to = to, .len = len
	};

	assert_int_equal(rogue_send(c->r, &m, data(seed), MULPDU), 0);
}

static void rogue_read(struct conn *c, u32 stag, u64 to, u32 len)
{
	struct swiw_rdmap_msg m = { .opcode = RDMAP_READ_REQ };

	m.u.rreq.sink_stag = R_KEY;
	m.u.rreq.sink_to = R_ADDR;
	m.u.rreq.size = len;
	m.u.rreq.src_stag = stag;
	m.u.rreq.src_to = to;
	assert_int_equal(rogue_send(c->r, &m, NULL, MULPDU), 0);
}

static void rogue_fetch_add(struct conn *c, u32 stag, u64 to, u64 add)
{
	struct swiw_rdmap_msg m = { .opcode = RDMAP_ATOMIC_REQ };

	m.u.areq.op = RDMAP_ATOMIC_FETCH_ADD;
	m.u.areq.req_id = 7;
	m.u.areq.stag = stag;
	m.u.areq.to = to;
	m.u.areq.add_swap = add;
	assert_int_equal(rogue_send(c->r, &m, NULL, MULPDU), 0);
}

/* The region allows WRITE; the QP does not. */
static void test_qp_no_remote_write(void **state)
{
	struct fx *f = *state;

	connect_rogue(f, &f->c[0], f->pd,
		      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			      IBV_ACCESS_REMOTE_ATOMIC);
	post_recvs(f, f->c[0].id->qp, 2);
	rogue_write(&f->c[0], f->tgt_mr->rkey, (uintptr_t)f->tgt, RLEN, 0);
	expect_term(f->c[0].r, SWIW_V_DDP_T_ACCESS, 0);
	expect_qp_failed(f->c[0].id->qp, SWIW_V_DDP_T_ACCESS, 0, false, 2, -1);
	assert_memory_equal(f->tgt, pattern + 7, BUF);
}

/* The region allows READ; the QP does not: no Read Response. */
static void test_qp_no_remote_read(void **state)
{
	struct fx *f = *state;

	connect_rogue(f, &f->c[0], f->pd,
		      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_ATOMIC);
	post_recvs(f, f->c[0].id->qp, 2);
	rogue_read(&f->c[0], f->tgt_mr->rkey, (uintptr_t)f->tgt, RLEN);
	expect_term(f->c[0].r, SWIW_V_RDMAP_ACCESS_RIGHTS, 0);
	expect_qp_failed(f->c[0].id->qp, SWIW_V_RDMAP_ACCESS_RIGHTS, 0, false,
			 2, -1);
}

/* The region allows atomics; the QP, as rdma_cm made it, does not. */
static void test_qp_no_remote_atomic(void **state)
{
	struct fx *f = *state;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	connect_rogue(f, &f->c[0], f->pd, CM_ACCESS);
	assert_int_equal(
		ibv_query_qp(f->c[0].id->qp, &a, IBV_QP_ACCESS_FLAGS, &ia), 0);
	assert_false(a.qp_access_flags & IBV_ACCESS_REMOTE_ATOMIC);
	post_recvs(f, f->c[0].id->qp, 2);
	rogue_fetch_add(&f->c[0], f->tgt_mr->rkey, (uintptr_t)f->tgt, 1);
	expect_term(f->c[0].r, SWIW_V_RDMAP_ACCESS_RIGHTS, 0);
	expect_qp_failed(f->c[0].id->qp, SWIW_V_RDMAP_ACCESS_RIGHTS, 0, false,
			 2, -1);
	assert_memory_equal(f->tgt, pattern + 7, BUF);
}

static void set_access(struct ibv_qp *qp, unsigned int acc)
{
	struct ibv_qp_attr a = { .qp_access_flags = acc };
	struct ibv_qp_init_attr ia;

	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_ACCESS_FLAGS), 0);
	assert_int_equal(ibv_query_qp(qp, &a, IBV_QP_ACCESS_FLAGS, &ia), 0);
	assert_int_equal(a.qp_access_flags, acc);
}

/* A WRITE lands; modify_qp in RTS takes the right away; the next fails. */
static void test_qp_write_revoked(void **state)
{
	struct fx *f = *state;
	struct swiw_rdmap_msg snd = { .opcode = RDMAP_SEND, .len = 8 };
	struct ibv_wc wc;

	connect_rogue(f, &f->c[0], f->pd, CM_ACCESS);
	post_recvs(f, f->c[0].id->qp, 2);
	rogue_write(&f->c[0], f->tgt_mr->rkey, (uintptr_t)f->tgt, 256, 0);
	/* The Send behind it completes only after the WRITE was placed. */
	assert_int_equal(rogue_send(f->c[0].r, &snd, data(0), MULPDU), 0);
	assert_int_equal(rt_expect(f->rcq, &wc, 1, 1, 5000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(f->tgt, data(0), 256);
	set_access(f->c[0].id->qp,
		   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	rogue_write(&f->c[0], f->tgt_mr->rkey, (uintptr_t)f->tgt + 4096, 256,
		    0);
	expect_term(f->c[0].r, SWIW_V_DDP_T_ACCESS, 0);
	/* The Send took receive 100; only 101 is left to flush. */
	assert_int_equal(rt_expect(f->rcq, &wc, 1, 1, 5000), 1);
	assert_int_equal(wc.wr_id, 101);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	expect_qp_failed(f->c[0].id->qp, SWIW_V_DDP_T_ACCESS, 0, false, 0, -1);
	assert_memory_equal(f->tgt + 4096, pattern + 7 + 4096, BUF - 4096);
}

/*
 * The region a Write lands in is deregistered between two parts of one
 * segment: the program may reuse the memory once ibv_dereg_mr returned,
 * so nothing of the rest lands (with the kernel helper too, which holds
 * the pinned pages until the segment ends); the next Write names a STag
 * that is gone. The memory stays mapped here, so a late write would show.
 */
static void test_dereg_mid_segment(void **state)
{
	struct fx *f = *state;
	const u32 len = 16384, first = 8192;
	struct swiw_rdmap_msg m = { .opcode = RDMAP_WRITE, .len = len };
	u8 hdr[SWIW_DDP_HDR_MAX], fr[2 + SWIW_DDP_HDR_MAX + 16384 + 64];
	struct swiw_ddp_txseg seg;
	struct swiw_ddp_tx tx;
	size_t flen, head;
	u32 stag = f->tgt_mr->rkey;

	connect_rogue(f, &f->c[0], f->pd, CM_ACCESS);
	post_recvs(f, f->c[0].id->qp, 2);
	m.stag = stag;
	m.to = (uintptr_t)f->tgt;
	assert_int_equal(swiw_ddp_tx_init(&tx, &m), 0);
	assert_int_equal(swiw_ddp_tx_next(&tx, len + SWIW_DDP_HDR_MAX, hdr,
					  sizeof(hdr), &seg),
			 1);
	assert_true(seg.last && seg.payload_len == len);
	assert_int_equal(rogue_frame(f->c[0].r, hdr, seg.hdr_len, data(3), len,
				     fr, sizeof(fr), &flen),
			 0);
	/* The length, the header and @first octets of payload: the rogue
	 * refuses markers, so the frame is those octets in order. */
	head = 2 + seg.hdr_len + first;
	assert_int_equal(rogue_write_raw(f->c[0].r, fr, head), 0);
	/* Time to place the first part. The region is read only once the
	 * deregistration returned, which waits for the engine's round under
	 * way: a read while the engine may write would race. */
	usleep(500000);
	assert_int_equal(ibv_dereg_mr(f->tgt_mr), 0);
	f->tgt_mr = NULL;
	assert_memory_equal(f->tgt, data(3), first);
	assert_int_equal(rogue_write_raw(f->c[0].r, fr + head, flen - head), 0);
	rogue_write(&f->c[0], stag, (uintptr_t)f->tgt + 32768, 256, 0);
	expect_term(f->c[0].r, SWIW_V_DDP_T_INVALID_STAG, 0);
	expect_qp_failed(f->c[0].id->qp, SWIW_V_DDP_T_INVALID_STAG, 0, false, 2,
			 -1);
	assert_memory_equal(f->tgt + first, pattern + 7 + first, BUF - first);
}

/* No remote right at all; modify_qp in RTS grants READ, only READ. */
/*
 * A requester Reads a region far larger than the transport holds, and
 * keeps its window shut; the responder's program deregisters the region
 * and reuses the memory. Nothing of what it writes afterwards may reach
 * the wire: the Read Response stops where the transport took it, and
 * the stream ends (a TERMINATE or the connection). Issue 16's "read 244
 * MiB after ibv_dereg_mr returned". The same when the QP is destroyed.
 */
#define SHUT_LEN (64u << 20)
#define SHUT_OLD 0x5a
#define SHUT_NEW 0xee

/*
 * @destroy: the QP is destroyed instead, with the region still registered
 * (ibv_destroy_qp, the same promise: the memory is the program's again).
 */
static void read_window_shut(struct fx *f, bool destroy)
{
	struct ibv_mr *mr;
	struct rogue_msg m;
	uint64_t got = 0, fresh = 0;
	uint8_t *big = aligned_alloc(4096, SHUT_LEN);
	int rc;

	assert_non_null(big);
	memset(big, SHUT_OLD, SHUT_LEN);
	mr = ibv_reg_mr(f->pd, big, SHUT_LEN,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	assert_non_null(mr);
	connect_rogue(f, &f->c[0], f->pd, ACC_ALL);
	/* The rogue reads nothing: the responder fills both socket buffers
	 * and stalls with most of the response still to go. */
	rogue_read(&f->c[0], mr->rkey, (uintptr_t)big, SHUT_LEN);
	usleep(500000);
	if (destroy)
		rdma_destroy_qp(f->c[0].id);
	else
		assert_int_equal(ibv_dereg_mr(mr), 0);
	memset(big, SHUT_NEW, SHUT_LEN);
	for (;;) {
		rc = rogue_recv(f->c[0].r, &m, 3000);
		if (rc)
			break;
		if (m.seg.opcode != RDMAP_READ_RESP)
			continue;
		got += m.seg.payload_len;
		for (u32 i = 0; i < m.seg.payload_len; i++)
			fresh += m.payload[i] == SHUT_NEW;
	}
	/* A frame whose payload changed after its CRC was taken breaks the
	 * framing: what it and the rest of the stream hold is counted raw. */
	if (rc == -EPROTO) {
		struct rogue *r = f->c[0].r;
		struct timeval tv = { .tv_sec = 2 };
		uint8_t raw[65536];
		ssize_t n;

		setsockopt(r->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		for (size_t i = 0; i < r->in_tail; i++)
			fresh += r->in[i] == SHUT_NEW;
		while ((n = recv(r->fd, raw, sizeof(raw), 0)) > 0)
			for (ssize_t i = 0; i < n; i++)
				fresh += raw[i] == SHUT_NEW;
	}
	fprintf(stderr,
		"# %llu of %u octets came, %llu written after the "
		"%s; the stream ended: %s\n",
		(unsigned long long)got, SHUT_LEN, (unsigned long long)fresh,
		destroy ? "QP's destruction" : "deregistration", strerror(-rc));
	assert_int_equal(fresh, 0);
	assert_true(got < SHUT_LEN);
	/* It ended, both ends: not a response left hanging for ever. */
	assert_int_not_equal(rc, -ETIMEDOUT);
	if (destroy)
		assert_int_equal(ibv_dereg_mr(mr), 0);
	else
		assert_int_equal(rt_wait_state(f->c[0].id->qp, IBV_QPS_ERR,
					       5000),
				 IBV_QPS_ERR);
	free(big);
}

static void test_dereg_read_window_shut(void **state)
{
	read_window_shut(*state, false);
}

static void test_destroy_read_window_shut(void **state)
{
	read_window_shut(*state, true);
}

static void test_qp_read_granted(void **state)
{
	struct fx *f = *state;
	struct rogue_msg m;

	connect_rogue(f, &f->c[0], f->pd, IBV_ACCESS_LOCAL_WRITE);
	post_recvs(f, f->c[0].id->qp, 2);
	set_access(f->c[0].id->qp,
		   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	rogue_read(&f->c[0], f->tgt_mr->rkey, (uintptr_t)f->tgt + 64, 512);
	rogue_expect(f->c[0].r, RDMAP_READ_RESP, &m);
	assert_int_equal(m.seg.stag, R_KEY);
	assert_int_equal(m.seg.to, R_ADDR);
	assert_true(m.seg.last);
	assert_int_equal(m.seg.payload_len, 512);
	assert_memory_equal(m.payload, pattern + 7 + 64, 512);
	rogue_write(&f->c[0], f->tgt_mr->rkey, (uintptr_t)f->tgt, 256, 0);
	expect_term(f->c[0].r, SWIW_V_DDP_T_ACCESS, 0);
	expect_qp_failed(f->c[0].id->qp, SWIW_V_DDP_T_ACCESS, 0, false, 2, -1);
	assert_memory_equal(f->tgt, pattern + 7, BUF);
}

/*
 * Two swiw QPs: a client's @op (WR 1), then a READ the server allows
 * (WR 2), to a server QP whose qp_access_flags lack the right its
 * region has. The requester sees REM_ACCESS_ERR on the oldest WR
 * waiting for the server (a WRITE completes when sent: then the READ
 * behind it), the server QP_ACCESS_ERR.
 */
static void pair_violation(struct fx *f, enum ibv_wr_opcode op, int access)
{
	struct sockaddr_in a = lo_addr(port);
	struct ibv_qp_init_attr qa = { .send_cq = f->cscq,
				       .recv_cq = f->crcq,
				       .cap = { .max_send_wr = 16,
						.max_recv_wr = 16,
						.max_send_sge = 2,
						.max_recv_sge = 2 },
				       .qp_type = IBV_QPT_RC };
	struct rdma_conn_param cp = { .responder_resources = ROGUE_IRD_ORD,
				      .initiator_depth = ROGUE_IRD_ORD };
	bool write = op == IBV_WR_RDMA_WRITE;
	bool atomic = op == IBV_WR_ATOMIC_FETCH_AND_ADD;
	struct ibv_sge s = { (uintptr_t)f->sink, atomic ? 8 : RLEN,
			     f->sink_mr->lkey };
	struct ibv_sge s2 = { (uintptr_t)f->sink + 2 * RLEN, 64,
			      f->sink_mr->lkey };
	struct ibv_send_wr rd = { .wr_id = 2,
				  .sg_list = &s2,
				  .num_sge = 1,
				  .opcode = IBV_WR_RDMA_READ,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr wr = { .wr_id = 1,
				  .next = &rd,
				  .sg_list = &s,
				  .num_sge = 1,
				  .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	struct ibv_qp *srv;
	struct ibv_wc wc[4];
	int n, i;

	f->cch = rdma_create_event_channel();
	assert_non_null(f->cch);
	assert_int_equal(rdma_create_id(f->cch, &f->cli, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(f->cli, NULL, (struct sockaddr *)&a,
					   2000),
			 0);
	assert_int_equal(rdma_ack_cm_event(cm_expect(
				 f->cch, RDMA_CM_EVENT_ADDR_RESOLVED)),
			 0);
	assert_int_equal(rdma_resolve_route(f->cli, 2000), 0);
	assert_int_equal(rdma_ack_cm_event(cm_expect(
				 f->cch, RDMA_CM_EVENT_ROUTE_RESOLVED)),
			 0);
	assert_int_equal(rdma_create_qp(f->cli, f->pd, &qa), 0);
	assert_int_equal(rdma_connect(f->cli, &cp), 0);
	accept_qp(f, &f->c[0], f->pd, access);
	assert_int_equal(
		rdma_ack_cm_event(cm_expect(f->cch, RDMA_CM_EVENT_ESTABLISHED)),
		0);
	assert_int_equal(
		rdma_ack_cm_event(cm_expect(ch, RDMA_CM_EVENT_ESTABLISHED)), 0);
	srv = f->c[0].id->qp;
	post_recvs(f, srv, 2);

	if (atomic) {
		wr.wr.atomic.remote_addr = (uintptr_t)f->tgt;
		wr.wr.atomic.rkey = f->tgt_mr->rkey;
		wr.wr.atomic.compare_add = 1;
	} else {
		wr.wr.rdma.remote_addr = (uintptr_t)f->tgt;
		wr.wr.rdma.rkey = f->tgt_mr->rkey;
	}
	if (write)
		s = (struct ibv_sge){ (uintptr_t)f->src, RLEN,
				      f->src_mr->lkey };
	rd.wr.rdma.remote_addr = (uintptr_t)f->tgt;
	rd.wr.rdma.rkey = f->tgt_mr->rkey;
	/* One chain: the TERMINATE may come back before a second post. */
	assert_int_equal(ibv_post_send(f->cli->qp, &wr, &bad), 0);

	n = rt_expect(f->cscq, wc, 4, 2, 5000);
	for (i = 0; i < n; i++)
		fprintf(stderr, "client: wr %llu %s\n",
			(unsigned long long)wc[i].wr_id, st(wc[i].status));
	assert_int_equal(n, 2);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[0].status,
			 write ? IBV_WC_SUCCESS : IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(wc[1].status,
			 write ? IBV_WC_REM_ACCESS_ERR : IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(rt_event(ctx, srv, 2000), IBV_EVENT_QP_ACCESS_ERR);
	assert_int_equal(rt_wait_state(srv, IBV_QPS_ERR, 1000), IBV_QPS_ERR);
	assert_int_equal(rt_event(ctx, f->cli->qp, 2000), IBV_EVENT_QP_FATAL);
	assert_int_equal(rt_wait_state(f->cli->qp, IBV_QPS_ERR, 1000),
			 IBV_QPS_ERR);
	n = rt_expect(f->rcq, wc, 4, 2, 5000);
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++)
		assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
	assert_memory_equal(f->tgt, pattern + 7, BUF);
	untouched(f->sink, 0, BUF);
}

static void test_pair_no_remote_write(void **state)
{
	pair_violation(*state, IBV_WR_RDMA_WRITE,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			       IBV_ACCESS_REMOTE_ATOMIC);
}

static void test_pair_no_remote_read(void **state)
{
	pair_violation(*state, IBV_WR_RDMA_READ,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			       IBV_ACCESS_REMOTE_ATOMIC);
}

static void test_pair_no_remote_atomic(void **state)
{
	pair_violation(*state, IBV_WR_ATOMIC_FETCH_AND_ADD,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			       IBV_ACCESS_REMOTE_READ);
}

/* Rule 3: remote invalidation --------------------------------------- */

static void rogue_send_inv(struct conn *c, u32 stag, u32 len)
{
	struct swiw_rdmap_msg m = { .opcode = RDMAP_SEND_INVAL,
				    .inval_stag = stag,
				    .len = len };

	assert_int_equal(rogue_send(c->r, &m, data(11), MULPDU), 0);
}

/*
 * @mr is still valid: on a new connection of its PD, a SEND gathered
 * from it reaches the rogue whole.
 */
static void still_valid(struct fx *f, struct ibv_mr *mr)
{
	struct ibv_sge s = { (uintptr_t)mr->addr, 64, mr->lkey };
	struct rogue_msg m;
	struct ibv_wc wc;

	memcpy(mr->addr, pattern + 99, 64);
	connect_rogue(f, &f->c[1], mr->pd, CM_ACCESS);
	assert_int_equal(rt_post(f->c[1].id->qp, 9, IBV_WR_SEND, &s,
				 IBV_SEND_SIGNALED, 0, 0),
			 0);
	assert_int_equal(rt_expect(f->scq, &wc, 1, 1, 5000), 1);
	if (wc.status != IBV_WC_SUCCESS)
		fprintf(stderr, "swiw: SEND from the region: %s\n",
			st(wc.status));
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	rogue_expect(f->c[1].r, RDMAP_SEND, &m);
	assert_int_equal(m.seg.payload_len, 64);
	assert_memory_equal(m.payload, pattern + 99, 64);
}

/*
 * A region with LOCAL_WRITE only, as the provider's own bounce and
 * inline regions are registered: the peer could never use its STag, so
 * it may not invalidate it either.
 */
static void test_inv_local_only(void **state)
{
	struct fx *f = *state;
	const struct swiw_violation_info *vi =
		swiw_violation_info(SWIW_V_RDMAP_CANT_INVALIDATE_OP);

	connect_rogue(f, &f->c[0], f->pd, CM_ACCESS);
	post_recvs(f, f->c[0].id->qp, 2);
	rogue_send_inv(&f->c[0], f->sink_mr->lkey, 100);
	expect_term(f->c[0].r, SWIW_V_RDMAP_CANT_INVALIDATE_OP, 0);
	expect_qp_failed(f->c[0].id->qp, SWIW_V_RDMAP_CANT_INVALIDATE_OP, 0,
			 false, 2, (int)vi->local_status);
	still_valid(f, f->sink_mr);
}

/* A region of another PD, remote rights and all: not this stream's. */
static void test_inv_other_pd(void **state)
{
	struct fx *f = *state;
	uint8_t *b = aligned_alloc(4096, 8192);
	struct ibv_mr *mr;

	assert_non_null(b);
	mr = ibv_reg_mr(f->pd2, b, 8192, ACC_ALL);
	assert_non_null(mr);
	connect_rogue(f, &f->c[0], f->pd, CM_ACCESS);
	post_recvs(f, f->c[0].id->qp, 2);
	rogue_send_inv(&f->c[0], mr->rkey, 100);
	expect_term(f->c[0].r, SWIW_V_RDMAP_STAG_NOT_ASSOC, 0);
	expect_qp_failed(f->c[0].id->qp, SWIW_V_RDMAP_STAG_NOT_ASSOC, 0, false,
			 2, -1);
	still_valid(f, mr);
	conn_free(&f->c[1]);
	ibv_dereg_mr(mr);
	free(b);
}

/* The control: a region with REMOTE_WRITE is invalidated, and is gone. */
static void test_inv_remote_ok(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc;

	connect_rogue(f, &f->c[0], f->pd, CM_ACCESS);
	post_recvs(f, f->c[0].id->qp, 2);
	rogue_send_inv(&f->c[0], f->tgt_mr->rkey, 100);
	assert_int_equal(rt_expect(f->rcq, &wc, 1, 1, 5000), 1);
	assert_int_equal(wc.wr_id, 100);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 100);
	assert_true(wc.wc_flags & IBV_WC_WITH_INV);
	assert_int_equal(wc.invalidated_rkey, f->tgt_mr->rkey);
	assert_memory_equal(f->src + 32768, data(11), 100);
	rogue_write(&f->c[0], f->tgt_mr->rkey, (uintptr_t)f->tgt, 64, 0);
	expect_term(f->c[0].r, SWIW_V_DDP_T_INVALID_STAG, 0);
	assert_int_equal(rt_expect(f->rcq, &wc, 1, 1, 5000), 1);
	assert_int_equal(wc.wr_id, 101);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	expect_qp_failed(f->c[0].id->qp, SWIW_V_DDP_T_INVALID_STAG, 0, false, 0,
			 -1);
	assert_memory_equal(f->tgt, pattern + 7, BUF);
}

/* TERMINATEs ------------------------------------------------------- */

/*
 * A TERMINATE that breaks a rule ends the stream like any violation, but
 * gets no TERMINATE back: only FIN. Here one with MSN 2 on its queue
 * (swiw_term_build always writes 1, the one due), and one too short for
 * its own control word.
 */
static void bad_terminate(struct fx *f, u32 len, u32 msn, enum swiw_violation v)
{
	struct swiw_term t = { .layer = TERM_LAYER_RDMAP, .etype = 1 };
	u8 out[SWIW_TERM_MAX_LEN];
	int n;

	connect_rogue(f, &f->c[0], f->pd, CM_ACCESS);
	post_recvs(f, f->c[0].id->qp, 2);
	n = swiw_term_build(&t, out, sizeof(out));
	assert_true(n >= (int)len);
	msn = htonl(msn);
	memcpy(out + offsetof(struct ddp_untagged_hdr, msn), &msn, 4);
	assert_int_equal(rogue_send_ulpdu(f->c[0].r, out, len, NULL, 0), 0);
	assert_int_equal(rogue_wait_eof(f->c[0].r, 5000), 0);
	expect_qp_failed(f->c[0].id->qp, v, 0, false, 2, -1);
}

static void test_terminate_bad_msn(void **state)
{
	bad_terminate(*state, SWIW_TERM_MIN_LEN, 2, SWIW_V_DDP_UT_MSN_RANGE);
}

static void test_terminate_malformed(void **state)
{
	bad_terminate(*state, SWIW_TERM_MIN_LEN - 1, 1, SWIW_V_RDMAP_MALFORMED);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

/* Usage: test_rogue [PATTERN], PATTERN selecting tests by name. */
int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		T(test_read_resp_good),
		T(test_read_resp_unsolicited),
		T(test_read_resp_unsolicited_empty),
		T(test_read_resp_twice),
		T(test_read_resp_empty),
		T(test_read_resp_short),
		T(test_read_resp_long),
		T(test_read_resp_long_one_segment),
		T(test_read_resp_wrong_stag),
		T(test_read_resp_to_beyond),
		T(test_read_resp_to_below),
		T(test_read_resp_order),
		T(test_atomic_resp_good),
		T(test_atomic_resp_unsolicited),
		T(test_atomic_resp_for_read),
		T(test_read_resp_for_atomic),
		T(test_qp_no_remote_write),
		T(test_qp_no_remote_read),
		T(test_qp_no_remote_atomic),
		T(test_qp_write_revoked),
		T(test_dereg_mid_segment),
		T(test_dereg_read_window_shut),
		T(test_destroy_read_window_shut),
		T(test_qp_read_granted),
		T(test_pair_no_remote_write),
		T(test_pair_no_remote_read),
		T(test_pair_no_remote_atomic),
		T(test_inv_local_only),
		T(test_inv_other_pd),
		T(test_inv_remote_ok),
		T(test_terminate_bad_msn),
		T(test_terminate_malformed),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
