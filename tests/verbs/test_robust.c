// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Robustness of the RC data path between QPs of one process over swiw_lo:
 * flush accounting when a stream ends (ERR, peer gone, access violation
 * in the middle), remote access violations checked on both sides, 100
 * connected pairs at once, and posting from several threads. Every
 * posted work request must complete exactly once: successful unsignaled
 * ones not at all, every one behind an error flushed, in order. Run
 * through swiw-run.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

#include "rc_test.h"
#include "verbs_test.h"

#define BUF (4u << 20)
#define DEPTH 1024
#define NWR 400 /* a stream: fits DEPTH, long enough to be cut */

struct fx {
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	union ibv_gid gid;
	struct ibv_cq *ascq, *arcq, *bscq, *brcq;
	uint8_t *asrc, *adst, *bsrc, *bdst;
	struct ibv_mr *asmr, *admr, *bsmr, *bdmr;
	struct ibv_qp *a, *b;
};

static uint8_t *alloc_reg(struct fx *f, struct ibv_mr **mr)
{
	uint8_t *p = calloc(1, BUF);

	*mr = p ? ibv_reg_mr(f->pd, p, BUF, RT_ACC) : NULL;
	return p;
}

/* Context, PD, CQs and buffers; @connect also makes and connects a, b. */
static int fx_open(void **state, bool connect)
{
	struct fx *f = calloc(1, sizeof(*f));

	rt_arm(60);
	*state = f;
	f->ctx = open_swiw_lo(&f->list);
	if (!f->ctx)
		return -1;
	rt_nonblock_async(f->ctx);
	f->pd = ibv_alloc_pd(f->ctx);
	if (!f->pd || ibv_query_gid(f->ctx, 1, 0, &f->gid))
		return -1;
	f->ascq = ibv_create_cq(f->ctx, 4 * DEPTH, NULL, NULL, 0);
	f->arcq = ibv_create_cq(f->ctx, 4 * DEPTH, NULL, NULL, 0);
	f->bscq = ibv_create_cq(f->ctx, 4 * DEPTH, NULL, NULL, 0);
	f->brcq = ibv_create_cq(f->ctx, 4 * DEPTH, NULL, NULL, 0);
	f->asrc = alloc_reg(f, &f->asmr);
	f->adst = alloc_reg(f, &f->admr);
	f->bsrc = alloc_reg(f, &f->bsmr);
	f->bdst = alloc_reg(f, &f->bdmr);
	if (!f->ascq || !f->arcq || !f->bscq || !f->brcq || !f->asmr ||
	    !f->admr || !f->bsmr || !f->bdmr)
		return -1;
	if (!connect)
		return 0;
	f->a = rt_make_qp(f->pd, f->ascq, f->arcq, DEPTH);
	f->b = rt_make_qp(f->pd, f->bscq, f->brcq, DEPTH);
	if (!f->a || !f->b)
		return -1;
	/* One QP all the way to RTS first, as test_data.c does. */
	if (rt_to_rts(f->a, &f->gid, f->b->qp_num) ||
	    rt_to_rts(f->b, &f->gid, f->a->qp_num))
		return -1;
	return 0;
}

static int setup(void **state)
{
	return fx_open(state, true);
}

static int setup_bare(void **state)
{
	return fx_open(state, false);
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (f->a)
		ibv_destroy_qp(f->a);
	if (f->b)
		ibv_destroy_qp(f->b);
	ibv_dereg_mr(f->asmr);
	ibv_dereg_mr(f->admr);
	ibv_dereg_mr(f->bsmr);
	ibv_dereg_mr(f->bdmr);
	ibv_destroy_cq(f->ascq);
	ibv_destroy_cq(f->arcq);
	ibv_destroy_cq(f->bscq);
	ibv_destroy_cq(f->brcq);
	ibv_dealloc_pd(f->pd);
	ibv_close_device(f->ctx);
	ibv_free_device_list(f->list);
	free(f->asrc);
	free(f->adst);
	free(f->bsrc);
	free(f->bdst);
	free(f);
	alarm(0);
	return 0;
}

static void no_more(struct ibv_cq *cq, int ms)
{
	struct ibv_wc wc;

	usleep((useconds_t)ms * 1000);
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 0);
}

static const char *st(enum ibv_wc_status s)
{
	return ibv_wc_status_str(s);
}

/* Receive completions of ids @base.. : successes, then flushes; how many
 * succeeded. All @nwr complete, each once, in order. */
static int check_recvs(struct ibv_cq *cq, uint64_t base, int nwr, uint32_t len)
{
	struct ibv_wc wc[DEPTH];
	int n = rt_expect(cq, wc, DEPTH, nwr, 10000), ok = 0, i;

	if (n != nwr)
		fprintf(stderr, "%d receive completions, %d posted\n", n, nwr);
	assert_int_equal(n, nwr);
	for (i = 0; i < n; i++) {
		assert_int_equal(wc[i].wr_id, base + (uint64_t)i);
		if (wc[i].status == IBV_WC_SUCCESS) {
			assert_int_equal(ok, i); /* none after a flush */
			assert_int_equal(wc[i].byte_len, len);
			ok++;
		} else {
			assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
		}
	}
	return ok;
}

/*
 * WRs @from..@to-1 of a stream of @NWR as WR lists of ten: 1 MiB WRITEs
 * and (every eighth) 4 KiB SENDs, two in three signaled, @sig set to
 * match. WR @bad_at, if >= 0, is replaced by @bad. Returns the number of
 * SENDs, adding those ahead of @bad_at to @nsend_before.
 */
static int post_range(struct fx *f, bool *sig, int from, int to, int bad_at,
		      const struct ibv_send_wr *bad, int *nsend_before)
{
	struct ibv_sge wsge, ssge;
	struct ibv_send_wr wr[10], *badwr;
	int i, k, nsend = 0;

	wsge = (struct ibv_sge){ (uintptr_t)f->asrc, 1u << 20, f->asmr->lkey };
	ssge = (struct ibv_sge){ (uintptr_t)f->asrc + (2u << 20), 4096,
				 f->asmr->lkey };
	for (i = from; i < to; i += 10) {
		for (k = 0; k < 10; k++) {
			int id = i + k;
			bool send = id % 8 == 7;

			sig[id] = id % 3 != 1;
			wr[k] = (struct ibv_send_wr){
				.wr_id = (uint64_t)id,
				.next = k < 9 ? &wr[k + 1] : NULL,
				.sg_list = send ? &ssge : &wsge,
				.num_sge = 1,
				.opcode = send ? IBV_WR_SEND :
						 IBV_WR_RDMA_WRITE,
				.send_flags = sig[id] ? IBV_SEND_SIGNALED : 0,
			};
			wr[k].wr.rdma.remote_addr =
				(uintptr_t)f->bdst + (2u << 20);
			wr[k].wr.rdma.rkey = f->bdmr->rkey;
			if (id == bad_at) {
				wr[k] = *bad;
				wr[k].wr_id = (uint64_t)id;
				wr[k].next = k < 9 ? &wr[k + 1] : NULL;
				sig[id] = bad->send_flags & IBV_SEND_SIGNALED;
				send = false;
			}
			if (send) {
				nsend++;
				if (bad_at < 0 || id < bad_at)
					(*nsend_before)++;
			}
		}
		assert_int_equal(ibv_post_send(f->a, wr, &badwr), 0);
	}
	return nsend;
}

/* The whole stream at once. */
static int post_stream(struct fx *f, bool *sig, int bad_at,
		       const struct ibv_send_wr *bad, int *nsend_before)
{
	*nsend_before = 0;
	return post_range(f, sig, 0, NWR, bad_at, bad, nsend_before);
}

/*
 * The stream cut by @cut once its first completion is in: only the head
 * goes before the cut, the rest after it, so that a test thread
 * descheduled past the first completion cannot let the whole stream
 * succeed before the cut (the tail always meets it). Returns the SENDs.
 */
#define NWR_AHEAD 40
static int post_cut_stream(struct fx *f, bool *sig, struct ibv_wc *wc,
			   void (*cut)(struct fx *f))
{
	int nsend, before = 0;

	nsend = post_range(f, sig, 0, NWR_AHEAD, -1, NULL, &before);
	assert_int_equal(rt_wait(f->ascq, wc, 1, 5000), 1);
	cut(f);
	return nsend + post_range(f, sig, NWR_AHEAD, NWR, -1, NULL, &before);
}

/* @nrecv 64 KiB receives on @qp, ids @base.. */
static void post_recvs(struct ibv_qp *qp, uint8_t *buf, struct ibv_mr *mr,
		       uint64_t base, int nrecv)
{
	for (int i = 0; i < nrecv; i++)
		assert_int_equal(rt_post_recv(qp, base + (uint64_t)i,
					      buf + i * 65536u, 65536,
					      mr->lkey),
				 0);
}

/* @qp is in ERR: a send and a receive posted now complete flushed, once. */
static void check_post_in_err(struct ibv_qp *qp, struct ibv_cq *scq,
			      struct ibv_cq *rcq, struct ibv_mr *mr)
{
	struct ibv_sge sge = { (uintptr_t)mr->addr, 64, mr->lkey };
	struct ibv_wc wc[4];

	assert_int_equal(rt_post(qp, 77, IBV_WR_SEND, &sge, 0, 0, 0), 0);
	assert_int_equal(rt_post_recv(qp, 78, mr->addr, 64, mr->lkey), 0);
	assert_int_equal(rt_expect(scq, wc, 4, 1, 5000), 1);
	assert_int_equal(wc[0].wr_id, 77);
	assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(rt_expect(rcq, wc, 4, 1, 5000), 1);
	assert_int_equal(wc[0].wr_id, 78);
	assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
}

#define NRECV_B 64
#define NRECV_A 32

static void cut_to_err(struct fx *f)
{
	assert_int_equal(rt_set_state(f->a, IBV_QPS_ERR), 0);
}

static void cut_destroy_peer(struct fx *f)
{
	assert_int_equal(ibv_destroy_qp(f->b), 0);
	f->b = NULL;
}

/* 1a: the application moves a QP to ERR with a stream outstanding. */
static void test_flush_on_err(void **state)
{
	struct fx *f = *state;
	static struct ibv_wc wc[2 * DEPTH];
	bool sig[NWR];
	int n, e, nsend;

	post_recvs(f->b, f->bdst, f->bdmr, 1000, NRECV_B);
	post_recvs(f->a, f->adst, f->admr, 2000, NRECV_A);
	/* Mid-stream: once the first completion is in. */
	nsend = post_cut_stream(f, sig, wc, cut_to_err);
	assert_true(nsend < NRECV_B);
	n = 1 + rt_drain(f->ascq, wc + 1, 2 * DEPTH - 1, NWR - 1, 10000);
	/* Flushed by the move to ERR: WR_FLUSH_ERR from the first on. */
	e = rt_check_stream(wc, n, NWR, sig, IBV_WC_WR_FLUSH_ERR);
	assert_true(e < NWR); /* the tail came after the cut */
	assert_int_equal(check_recvs(f->arcq, 2000, NRECV_A, 0), 0);
	assert_int_equal(rt_state(f->a), IBV_QPS_ERR);
	check_post_in_err(f->a, f->ascq, f->arcq, f->admr);
	/* The peer loses the stream: ERR, QP_FATAL, its receives complete
	 * (what arrived) or flush. */
	assert_int_equal(rt_wait_state(f->b, IBV_QPS_ERR, 3000), IBV_QPS_ERR);
	assert_int_equal(rt_event(f->ctx, f->b, 1000), IBV_EVENT_QP_FATAL);
	assert_true(check_recvs(f->brcq, 1000, NRECV_B, 4096) <= nsend);
	no_more(f->ascq, 50);
	no_more(f->arcq, 1);
	no_more(f->bscq, 1);
}

/* 1b: the peer QP is destroyed with a stream outstanding. */
static void test_flush_peer_destroyed(void **state)
{
	struct fx *f = *state;
	static struct ibv_wc wc[2 * DEPTH];
	bool sig[NWR];
	int n, e;

	post_recvs(f->b, f->bdst, f->bdmr, 1000, NRECV_B);
	post_recvs(f->a, f->adst, f->admr, 2000, NRECV_A);
	/* Mid-stream: once the first completion is in. */
	post_cut_stream(f, sig, wc, cut_destroy_peer);
	n = 1 + rt_drain(f->ascq, wc + 1, 2 * DEPTH - 1, NWR - 1, 10000);
	/* The stream is cut: the first failure may be a flush or the lost
	 * stream's own error; everything behind it flushes. */
	e = rt_check_stream(wc, n, NWR, sig, -1);
	assert_true(e < NWR);
	assert_int_equal(check_recvs(f->arcq, 2000, NRECV_A, 0), 0);
	assert_int_equal(rt_event(f->ctx, f->a, 2000), IBV_EVENT_QP_FATAL);
	assert_int_equal(rt_state(f->a), IBV_QPS_ERR);
	check_post_in_err(f->a, f->ascq, f->arcq, f->admr);
	no_more(f->ascq, 50);
}

/*
 * 1c: a READ with a bad STag in the middle of the stream. RFC 5040 §7:
 * Remote Protection Error, Invalid STag (layer 0, EType 0, code 0) ->
 * REM_ACCESS_ERR at the requester (swiw_term_peer_status()), and the
 * responder's async event is QP_ACCESS_ERR (row SWIW_V_RDMAP_INVALID_STAG).
 * A READ completes only when answered, and nothing completes before it
 * does: it is the WR that fails, and every one behind it flushes.
 */
static void test_flush_bad_read_mid_stream(void **state)
{
	struct fx *f = *state;
	static struct ibv_wc wc[2 * DEPTH];
	struct ibv_sge rs = { (uintptr_t)f->adst, 4096, f->admr->lkey };
	struct ibv_send_wr bad = { .sg_list = &rs,
				   .num_sge = 1,
				   .opcode = IBV_WR_RDMA_READ,
				   .send_flags = IBV_SEND_SIGNALED };
	bool sig[NWR];
	int n, before;

	bad.wr.rdma.remote_addr = (uintptr_t)f->bsrc;
	bad.wr.rdma.rkey = f->bsmr->rkey ^ 0x5a00; /* no such index */
	post_recvs(f->b, f->bdst, f->bdmr, 1000, NRECV_B);
	post_recvs(f->a, f->adst + (1u << 20), f->admr, 2000, NRECV_A);
	post_stream(f, sig, 200, &bad, &before);
	n = rt_drain(f->ascq, wc, 2 * DEPTH, NWR - 1, 10000);
	assert_int_equal(
		rt_check_stream(wc, n, NWR, sig, IBV_WC_REM_ACCESS_ERR), 200);
	assert_int_equal(check_recvs(f->arcq, 2000, NRECV_A, 0), 0);
	/* Every SEND ahead of the Read Request arrived, none behind it. */
	assert_int_equal(check_recvs(f->brcq, 1000, NRECV_B, 4096), before);
	assert_int_equal(rt_event(f->ctx, f->b, 1000), IBV_EVENT_QP_ACCESS_ERR);
	assert_int_equal(rt_event(f->ctx, f->a, 1000), IBV_EVENT_QP_FATAL);
	assert_int_equal(rt_state(f->a), IBV_QPS_ERR);
	assert_int_equal(rt_wait_state(f->b, IBV_QPS_ERR, 1000), IBV_QPS_ERR);
	check_post_in_err(f->a, f->ascq, f->arcq, f->admr);
	check_post_in_err(f->b, f->bscq, f->brcq, f->bdmr);
	no_more(f->ascq, 50);
}

/*
 * 1c again with a WRITE whose STag has the right index and a wrong key
 * byte (RFC 5041 §7.2: tagged buffer error, Invalid STag, layer 1 EType
 * 1 code 0 -> REM_ACCESS_ERR; responder QP_ACCESS_ERR). A WRITE completes
 * once it went to TCP, so the TERMINATE fails the oldest WR still without
 * a completion, the bad one or one behind it; no SEND behind it arrives.
 */
static void test_flush_bad_write_mid_stream(void **state)
{
	struct fx *f = *state;
	static struct ibv_wc wc[2 * DEPTH];
	struct ibv_sge ws = { (uintptr_t)f->asrc, 1u << 20, f->asmr->lkey };
	uint32_t k = f->bdmr->rkey;
	struct ibv_send_wr bad = { .sg_list = &ws,
				   .num_sge = 1,
				   .opcode = IBV_WR_RDMA_WRITE,
				   .send_flags = 0 };
	bool sig[NWR];
	int n, e, before;

	bad.wr.rdma.remote_addr = (uintptr_t)f->bdst;
	bad.wr.rdma.rkey = (k & ~0xffu) | ((k + 1) & 0xffu);
	post_recvs(f->b, f->bdst, f->bdmr, 1000, NRECV_B);
	post_recvs(f->a, f->adst, f->admr, 2000, NRECV_A);
	post_stream(f, sig, 200, &bad, &before);
	n = rt_drain(f->ascq, wc, 2 * DEPTH, NWR - 1, 10000);
	e = rt_check_stream(wc, n, NWR, sig, IBV_WC_REM_ACCESS_ERR);
	assert_true(e >= 200 && e < NWR);
	assert_int_equal(check_recvs(f->arcq, 2000, NRECV_A, 0), 0);
	assert_int_equal(check_recvs(f->brcq, 1000, NRECV_B, 4096), before);
	assert_int_equal(rt_event(f->ctx, f->b, 1000), IBV_EVENT_QP_ACCESS_ERR);
	assert_int_equal(rt_event(f->ctx, f->a, 1000), IBV_EVENT_QP_FATAL);
	assert_int_equal(rt_state(f->a), IBV_QPS_ERR);
	assert_int_equal(rt_wait_state(f->b, IBV_QPS_ERR, 1000), IBV_QPS_ERR);
	no_more(f->ascq, 50);
}

/* One violation provoked by the requester a, as the responder b sees it. */
struct viol {
	enum ibv_wr_opcode op;
	uint32_t len; /* of the bad WR's local buffer */
	uint64_t raddr;
	uint32_t rkey;
	int b_recvs; /* receives of b_recv_len octets b posts first */
	uint32_t b_recv_len;
	enum ibv_wc_status a_status; /* the requester's failed WR */
	enum ibv_wc_status b_recv_status; /* b's first receive */
	enum ibv_event_type b_event; /* the responder's async event */
};

/*
 * Posts [bad op, valid READ, SEND] as one chain and checks both sides: a
 * READ fails itself; a WRITE or SEND went to TCP whole and completed, so
 * the READ behind it is the oldest WR without a completion and takes the
 * TERMINATE's status. Then: the rest flushed once, a QP_FATAL at a, the
 * responder's event at b, both QPs in ERR, and posting to either flushes.
 */
static void violation(struct fx *f, const struct viol *v)
{
	bool rd = v->op == IBV_WR_RDMA_READ; /* a READ's sink is local */
	struct ibv_sge bs = { (uintptr_t)(rd ? f->adst : f->asrc), v->len,
			      rd ? f->admr->lkey : f->asmr->lkey };
	struct ibv_sge rs = { (uintptr_t)f->adst + 65536, 64, f->admr->lkey };
	struct ibv_sge ss = { (uintptr_t)f->asrc, 64, f->asmr->lkey };
	struct ibv_send_wr wr[3], *bad;
	struct ibv_wc wc[16];
	int i, n, t, failed = rd ? 0 : 1;

	for (i = 0; i < v->b_recvs; i++)
		assert_int_equal(rt_post_recv(f->b, 100 + (uint64_t)i,
					      f->bdst + i * 65536u,
					      v->b_recv_len, f->bdmr->lkey),
				 0);
	for (i = 0; i < 2; i++)
		assert_int_equal(rt_post_recv(f->a, 200 + (uint64_t)i, f->adst,
					      64, f->admr->lkey),
				 0);
	wr[0] = (struct ibv_send_wr){ .wr_id = 0,
				      .next = &wr[1],
				      .sg_list = v->len ? &bs : NULL,
				      .num_sge = v->len ? 1 : 0,
				      .opcode = v->op,
				      .send_flags = IBV_SEND_SIGNALED };
	wr[0].wr.rdma.remote_addr = v->raddr;
	wr[0].wr.rdma.rkey = v->rkey;
	wr[1] = (struct ibv_send_wr){ .wr_id = 1,
				      .next = &wr[2],
				      .sg_list = &rs,
				      .num_sge = 1,
				      .opcode = IBV_WR_RDMA_READ,
				      .send_flags = IBV_SEND_SIGNALED };
	wr[1].wr.rdma.remote_addr = (uintptr_t)f->bsrc;
	wr[1].wr.rdma.rkey = f->bsmr->rkey;
	wr[2] = (struct ibv_send_wr){ .wr_id = 2,
				      .sg_list = &ss,
				      .num_sge = 1,
				      .opcode = IBV_WR_SEND,
				      .send_flags = IBV_SEND_SIGNALED };
	assert_int_equal(ibv_post_send(f->a, wr, &bad), 0);

	n = rt_expect(f->ascq, wc, 16, 3, 10000);
	for (i = 0; i < n; i++)
		fprintf(stderr, "a: wr %llu %s\n",
			(unsigned long long)wc[i].wr_id, st(wc[i].status));
	assert_int_equal(n, 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(wc[i].wr_id, (uint64_t)i);
		assert_int_equal(wc[i].status,
				 i < failed  ? IBV_WC_SUCCESS :
				 i == failed ? v->a_status :
					       IBV_WC_WR_FLUSH_ERR);
	}
	n = rt_expect(f->arcq, wc, 16, 2, 5000);
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++)
		assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
	n = rt_expect(f->brcq, wc, 16, v->b_recvs, 5000);
	assert_int_equal(n, v->b_recvs);
	for (i = 0; i < n; i++) {
		assert_int_equal(wc[i].wr_id, 100 + (uint64_t)i);
		if (wc[i].status !=
		    (i ? IBV_WC_WR_FLUSH_ERR : v->b_recv_status))
			fprintf(stderr, "b: recv %d %s\n", i, st(wc[i].status));
		assert_int_equal(wc[i].status,
				 i ? IBV_WC_WR_FLUSH_ERR : v->b_recv_status);
	}
	t = rt_event(f->ctx, f->b, 1000);
	if (t != (int)v->b_event)
		fprintf(stderr, "b: event %d\n", t);
	assert_int_equal(t, v->b_event);
	assert_int_equal(rt_event(f->ctx, f->a, 1000), IBV_EVENT_QP_FATAL);
	assert_int_equal(rt_wait_state(f->a, IBV_QPS_ERR, 1000), IBV_QPS_ERR);
	assert_int_equal(rt_wait_state(f->b, IBV_QPS_ERR, 1000), IBV_QPS_ERR);
	check_post_in_err(f->a, f->ascq, f->arcq, f->admr);
	check_post_in_err(f->b, f->bscq, f->brcq, f->bdmr);
	no_more(f->ascq, 20);
	no_more(f->bscq, 1);
	no_more(f->brcq, 1);
}

/* RFC 5041 §7.2, tagged buffer (EType 1) code 0 Invalid STag: the index
 * names a region, the key byte does not match. */
static void test_write_wrong_key_byte(void **state)
{
	struct fx *f = *state;
	uint32_t k = f->bdmr->rkey;
	struct viol v = { .op = IBV_WR_RDMA_WRITE,
			  .len = 4096,
			  .raddr = (uintptr_t)f->bdst,
			  .rkey = (k & ~0xffu) | ((k + 0x80) & 0xffu),
			  .a_status = IBV_WC_REM_ACCESS_ERR,
			  .b_event = IBV_EVENT_QP_ACCESS_ERR };

	violation(f, &v);
}

/* @op through the STag of a region of @buf that was deregistered. */
static void dereg_violation(struct fx *f, enum ibv_wr_opcode op, uint8_t *buf)
{
	struct ibv_mr *mr = ibv_reg_mr(f->pd, buf, 8192, RT_ACC);
	struct viol v = { .op = op,
			  .len = 4096,
			  .raddr = (uintptr_t)buf,
			  .a_status = IBV_WC_REM_ACCESS_ERR,
			  .b_event = IBV_EVENT_QP_ACCESS_ERR };

	assert_non_null(mr);
	v.rkey = mr->rkey;
	assert_int_equal(ibv_dereg_mr(mr), 0);
	violation(f, &v);
}

/* A deregistered region's STag is invalid: RFC 5041 §7.2, 1/1/0. */
static void test_write_dereg_mr(void **state)
{
	dereg_violation(*state, IBV_WR_RDMA_WRITE, ((struct fx *)*state)->bdst);
}

/* The Read Request's source STag: RFC 5040 §7, Remote Protection Error
 * (0/0) code 0 Invalid STag -> REM_ACCESS_ERR. */
static void test_read_dereg_mr(void **state)
{
	dereg_violation(*state, IBV_WR_RDMA_READ, ((struct fx *)*state)->bsrc);
}

/* RFC 5040 §7, 0/0 code 2 Access Rights Violation -> REM_ACCESS_ERR. */
static void test_read_no_remote_read(void **state)
{
	struct fx *f = *state;
	struct ibv_mr *mr =
		ibv_reg_mr(f->pd, f->bsrc, 8192,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	struct viol v = { .op = IBV_WR_RDMA_READ,
			  .len = 4096,
			  .raddr = (uintptr_t)f->bsrc,
			  .a_status = IBV_WC_REM_ACCESS_ERR,
			  .b_event = IBV_EVENT_QP_ACCESS_ERR };

	assert_non_null(mr);
	v.rkey = mr->rkey;
	violation(f, &v);
	ibv_dereg_mr(mr);
}

/* A region of another PD: RFC 5041 §7.2, 1/1 code 2 STag not associated
 * with the RDMAP stream -> REM_ACCESS_ERR. */
static void test_write_other_pd(void **state)
{
	struct fx *f = *state;
	struct ibv_pd *pd = ibv_alloc_pd(f->ctx);
	struct ibv_mr *mr;
	struct viol v = { .op = IBV_WR_RDMA_WRITE,
			  .len = 4096,
			  .raddr = (uintptr_t)f->bdst,
			  .a_status = IBV_WC_REM_ACCESS_ERR,
			  .b_event = IBV_EVENT_QP_ACCESS_ERR };

	assert_non_null(pd);
	mr = ibv_reg_mr(pd, f->bdst, 8192, RT_ACC);
	assert_non_null(mr);
	v.rkey = mr->rkey;
	violation(f, &v);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
}

/* RFC 5041 §7.2, untagged (EType 2) code 1: Invalid MSN, no buffer ->
 * REM_OP_ERR (swiw_term_peer_status()), QP_REQ_ERR at the responder. */
static void test_send_no_recv(void **state)
{
	struct fx *f = *state;
	struct viol v = { .op = IBV_WR_SEND,
			  .len = 64,
			  .a_status = IBV_WC_REM_OP_ERR,
			  .b_event = IBV_EVENT_QP_REQ_ERR };

	violation(f, &v);
}

/* RFC 5041 §7.2, 1/2 code 5 Message too long -> REM_INV_REQ_ERR; the
 * receive it was consuming completes LOC_LEN_ERR, QP_REQ_ERR at b. */
static void test_send_too_long(void **state)
{
	struct fx *f = *state;
	struct viol v = { .op = IBV_WR_SEND,
			  .len = 4096,
			  .b_recvs = 2,
			  .b_recv_len = 64,
			  .a_status = IBV_WC_REM_INV_REQ_ERR,
			  .b_recv_status = IBV_WC_LOC_LEN_ERR,
			  .b_event = IBV_EVENT_QP_REQ_ERR };

	violation(f, &v);
}

/* RFC 5040 §7, 0/0 code 1 Base or bounds violation -> REM_ACCESS_ERR. */
static void test_read_beyond_end(void **state)
{
	struct fx *f = *state;
	struct viol v = { .op = IBV_WR_RDMA_READ,
			  .len = 4096,
			  .raddr = (uintptr_t)f->bsrc + BUF - 100,
			  .rkey = f->bsmr->rkey,
			  .a_status = IBV_WC_REM_ACCESS_ERR,
			  .b_event = IBV_EVENT_QP_ACCESS_ERR };

	violation(f, &v);
}

/* swiw_ddp.h: a zero-length tagged segment places nothing and is accepted
 * whatever its STag. The stream goes on: a WRITE and READ work after. */
static void test_zero_write_bad_stag(void **state)
{
	struct fx *f = *state;
	struct ibv_sge ws = { (uintptr_t)f->asrc, 4096, f->asmr->lkey };
	struct ibv_sge rs = { (uintptr_t)f->adst, 4096, f->admr->lkey };
	struct ibv_wc wc[4];

	rt_fill(f->asrc, 4096, 42);
	assert_int_equal(rt_post(f->a, 0, IBV_WR_RDMA_WRITE, NULL,
				 IBV_SEND_SIGNALED, 0x1234,
				 f->bdmr->rkey ^ 0x5a5a5a5a),
			 0);
	assert_int_equal(rt_post(f->a, 1, IBV_WR_RDMA_WRITE, &ws,
				 IBV_SEND_SIGNALED, (uintptr_t)f->bdst,
				 f->bdmr->rkey),
			 0);
	assert_int_equal(rt_post(f->a, 2, IBV_WR_RDMA_READ, &rs,
				 IBV_SEND_SIGNALED, (uintptr_t)f->bdst,
				 f->bdmr->rkey),
			 0);
	assert_int_equal(rt_wait(f->ascq, wc, 3, 5000), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(wc[i].wr_id, (uint64_t)i);
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
	}
	assert_memory_equal(f->adst, f->asrc, 4096);
	assert_int_equal(rt_event(f->ctx, f->b, 200), -1);
	assert_int_equal(rt_event(f->ctx, f->a, 1), -1);
	assert_int_equal(rt_state(f->a), IBV_QPS_RTS);
	assert_int_equal(rt_state(f->b), IBV_QPS_RTS);
}

#define NPAIR 100
#define SLOT 16384u

/* 3: 100 connected pairs at once, each a SEND and a WRITE, then gone. */
static void test_hundred_pairs(void **state)
{
	struct fx *f = *state;
	struct ibv_qp *a[NPAIR], *b[NPAIR];
	static struct ibv_wc wc[4 * NPAIR];
	int i, n, seen[2 * NPAIR] = { 0 };

	rt_fill(f->asrc, NPAIR * SLOT, 9);
	for (i = 0; i < NPAIR; i++) {
		a[i] = rt_make_qp(f->pd, f->ascq, f->arcq, 4);
		b[i] = rt_make_qp(f->pd, f->bscq, f->brcq, 4);
		assert_non_null(a[i]);
		assert_non_null(b[i]);
	}
	for (i = 0; i < NPAIR; i++) {
		assert_int_equal(rt_to_rts(a[i], &f->gid, b[i]->qp_num), 0);
		assert_int_equal(rt_to_rts(b[i], &f->gid, a[i]->qp_num), 0);
	}
	for (i = 0; i < NPAIR; i++) {
		struct ibv_sge ss = { (uintptr_t)f->asrc + i * SLOT, 4096,
				      f->asmr->lkey };
		struct ibv_sge ws = { (uintptr_t)f->asrc + i * SLOT + 4096,
				      4096, f->asmr->lkey };

		assert_int_equal(rt_post_recv(b[i], (uint64_t)i,
					      f->bdst + i * SLOT, 4096,
					      f->bdmr->lkey),
				 0);
		/* The WRITE first: the receive then says it was placed. */
		assert_int_equal(rt_post(a[i], 2 * (uint64_t)i + 1,
					 IBV_WR_RDMA_WRITE, &ws,
					 IBV_SEND_SIGNALED,
					 (uintptr_t)f->bdst + i * SLOT + 8192,
					 f->bdmr->rkey),
				 0);
		assert_int_equal(rt_post(a[i], 2 * (uint64_t)i, IBV_WR_SEND,
					 &ss, IBV_SEND_SIGNALED, 0, 0),
				 0);
	}
	n = rt_wait(f->ascq, wc, 2 * NPAIR, 30000);
	assert_int_equal(n, 2 * NPAIR);
	for (i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS)
			fprintf(stderr, "wr %llu: %s\n",
				(unsigned long long)wc[i].wr_id,
				st(wc[i].status));
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_true(wc[i].wr_id < 2 * NPAIR);
		seen[wc[i].wr_id]++;
	}
	for (i = 0; i < 2 * NPAIR; i++)
		assert_int_equal(seen[i], 1);
	n = rt_wait(f->brcq, wc, NPAIR, 10000);
	assert_int_equal(n, NPAIR);
	for (i = 0; i < n; i++) {
		int id = (int)wc[i].wr_id;

		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_true(id < NPAIR);
		assert_int_equal(wc[i].qp_num, b[id]->qp_num);
		assert_int_equal(wc[i].byte_len, 4096);
	}
	for (i = 0; i < NPAIR; i++) {
		assert_memory_equal(f->bdst + i * SLOT, f->asrc + i * SLOT,
				    4096);
		assert_memory_equal(f->bdst + i * SLOT + 8192,
				    f->asrc + i * SLOT + 4096, 4096);
	}
	no_more(f->ascq, 20);
	no_more(f->brcq, 1);
	for (i = 0; i < NPAIR; i++) {
		assert_int_equal(ibv_destroy_qp(a[i]), 0);
		assert_int_equal(ibv_destroy_qp(b[i]), 0);
	}
	/* Gone clean: nothing completes for them afterwards. */
	no_more(f->ascq, 200);
	no_more(f->arcq, 1);
	no_more(f->bscq, 1);
	no_more(f->brcq, 1);
}

#define NT 4
#define ITER 200
#define TSLICE (1u << 20)

struct worker {
	struct fx *f;
	int t;
	struct ibv_qp *a, *b; /* own pair, or the shared f->a */
	struct ibv_cq *scq, *rcq; /* own CQs; NULL when shared */
	unsigned int done; /* shared: completions counted by the poller */
	const char *err;
};

/* A WRITE of page seq % 8 of the thread's slice and an inline SEND of
 * (t, seq); both signaled. */
static int post_pair(struct worker *w, uint32_t seq)
{
	struct fx *f = w->f;
	uint32_t msg[2] = { (uint32_t)w->t, seq };
	struct ibv_sge is = { (uintptr_t)msg, sizeof(msg), 0 };
	uint32_t off = (uint32_t)w->t * TSLICE + (seq % 8) * 4096;
	struct ibv_sge ws = { (uintptr_t)f->asrc + off, 4096, f->asmr->lkey };
	uint64_t id = (uint64_t)w->t << 32 | (uint64_t)seq * 2;

	/* The WRITE first: the SEND's arrival then says it was placed. */
	if (rt_post(w->a, id, IBV_WR_RDMA_WRITE, &ws, IBV_SEND_SIGNALED,
		    (uintptr_t)f->bdst + off + TSLICE / 2, f->bdmr->rkey))
		return -1;
	return rt_post(w->a, id + 1, IBV_WR_SEND, &is,
		       IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0, 0);
}

/* Receives of one thread's messages, in order: (t, seq) 0.. ITER-1. */
static const char *check_msgs(struct fx *f, struct ibv_wc *wc, int n,
			      uint32_t *next)
{
	for (int i = 0; i < n; i++) {
		const uint32_t *m =
			(const uint32_t *)(f->bdst + wc[i].wr_id * 64);

		if (wc[i].status != IBV_WC_SUCCESS || wc[i].byte_len != 8)
			return "a receive failed or has the wrong length";
		if (m[0] >= NT || m[1] != next[m[0]])
			return "a message arrived out of order or twice";
		next[m[0]]++;
	}
	return NULL;
}

static void *own_qp_worker(void *arg)
{
	struct worker *w = arg;
	struct ibv_wc wc[64];
	uint32_t seq, posted = 0, done = 0, next[NT] = { 0 };
	int n, got = 0;

	for (seq = 0; seq < ITER; seq++)
		if (rt_post_recv(w->b, seq,
				 w->f->bdst + w->t * TSLICE + seq * 64, 64,
				 w->f->bdmr->lkey))
			return (void *)"post_recv failed";
	for (seq = 0; seq < ITER; seq++) {
		if (post_pair(w, seq))
			return (void *)"post_send failed";
		posted += 2;
		while (posted - done > 64 ||
		       (seq == ITER - 1 && done < posted)) {
			n = rt_wait(w->scq, wc, 1, 10000);
			if (n != 1 || wc[0].status != IBV_WC_SUCCESS)
				return (void *)"send did not complete";
			if (wc[0].wr_id != ((uint64_t)w->t << 32 | done))
				return (void *)"send completion out of order";
			done++;
		}
	}
	while (got < ITER) {
		n = rt_wait(w->rcq, wc, 1, 10000);
		if (n != 1)
			return (void *)"receive did not complete";
		/* check_msgs() indexes the buffer by wr_id from bdst */
		wc[0].wr_id += (uint64_t)w->t * TSLICE / 64;
		if (check_msgs(w->f, wc, 1, next))
			return (void *)check_msgs(w->f, wc, 1, next);
		got++;
	}
	return next[w->t] == ITER ? NULL : (void *)"messages missing";
}

/* 4a: NT threads, each with a QP pair and CQs of its own. */
static void test_threads_own_qp(void **state)
{
	struct fx *f = *state;
	struct worker w[NT];
	pthread_t th[NT];
	void *r;
	int t;

	rt_fill(f->asrc, NT * TSLICE, 5);
	for (t = 0; t < NT; t++) {
		w[t] = (struct worker){ .f = f, .t = t };
		w[t].scq = ibv_create_cq(f->ctx, 1024, NULL, NULL, 0);
		w[t].rcq = ibv_create_cq(f->ctx, 1024, NULL, NULL, 0);
		assert_non_null(w[t].scq);
		assert_non_null(w[t].rcq);
		w[t].a = rt_make_qp(f->pd, w[t].scq, f->arcq, 256);
		w[t].b = rt_make_qp(f->pd, f->bscq, w[t].rcq, 256);
		assert_non_null(w[t].a);
		assert_non_null(w[t].b);
		assert_int_equal(rt_to_rts(w[t].a, &f->gid, w[t].b->qp_num), 0);
		assert_int_equal(rt_to_rts(w[t].b, &f->gid, w[t].a->qp_num), 0);
	}
	for (t = 0; t < NT; t++)
		assert_int_equal(
			pthread_create(&th[t], NULL, own_qp_worker, &w[t]), 0);
	for (t = 0; t < NT; t++) {
		assert_int_equal(pthread_join(th[t], &r), 0);
		if (r)
			fprintf(stderr, "thread %d: %s\n", t, (const char *)r);
		assert_null(r);
	}
	for (t = 0; t < NT; t++) {
		uint32_t off = (uint32_t)t * TSLICE;

		assert_memory_equal(f->bdst + off + TSLICE / 2, f->asrc + off,
				    8 * 4096);
		assert_int_equal(ibv_destroy_qp(w[t].a), 0);
		assert_int_equal(ibv_destroy_qp(w[t].b), 0);
		assert_int_equal(ibv_destroy_cq(w[t].scq), 0);
		assert_int_equal(ibv_destroy_cq(w[t].rcq), 0);
	}
}

static void *shared_qp_worker(void *arg)
{
	struct worker *w = arg;

	for (uint32_t seq = 0; seq < ITER; seq++) {
		long end = rt_now_ms() + 10000;

		/* At most 64 of this thread's WRs in the queue. */
		while (seq * 2 - __atomic_load_n(&w->done, __ATOMIC_ACQUIRE) >
		       64)
			if (rt_now_ms() > end)
				return (void *)"completions stopped";
		if (post_pair(w, seq))
			return (void *)"post_send failed";
	}
	return NULL;
}

/* 4b: NT threads posting to one QP (post_send is thread safe), the main
 * thread polling its CQ: each thread's WRs complete once, in its order. */
static void test_threads_shared_qp(void **state)
{
	struct fx *f = *state;
	struct worker w[NT];
	pthread_t th[NT];
	static struct ibv_wc wc[NT * ITER];
	uint32_t next[NT] = { 0 };
	long end;
	void *r;
	int t, i, n, total = 0;

	rt_fill(f->asrc, NT * TSLICE, 6);
	for (i = 0; i < NT * ITER; i++)
		assert_int_equal(rt_post_recv(f->b, (uint64_t)i,
					      f->bdst + i * 64u, 64,
					      f->bdmr->lkey),
				 0);
	for (t = 0; t < NT; t++) {
		w[t] = (struct worker){ .f = f, .t = t, .a = f->a };
		assert_int_equal(pthread_create(&th[t], NULL, shared_qp_worker,
						&w[t]),
				 0);
	}
	end = rt_now_ms() + 30000;
	while (total < 2 * NT * ITER && rt_now_ms() < end) {
		n = ibv_poll_cq(f->ascq, 64, wc);
		assert_true(n >= 0);
		for (i = 0; i < n; i++) {
			struct worker *x;

			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			t = (int)(wc[i].wr_id >> 32);
			assert_true(t < NT);
			x = &w[t];
			assert_int_equal((uint32_t)wc[i].wr_id, x->done);
			__atomic_store_n(&x->done, x->done + 1,
					 __ATOMIC_RELEASE);
		}
		total += n;
	}
	for (t = 0; t < NT; t++) {
		assert_int_equal(pthread_join(th[t], &r), 0);
		if (r)
			fprintf(stderr, "thread %d: %s\n", t, (const char *)r);
		assert_null(r);
	}
	assert_int_equal(total, 2 * NT * ITER);
	n = rt_wait(f->brcq, wc, NT * ITER, 10000);
	assert_int_equal(n, NT * ITER);
	for (i = 0; i < n; i++)
		assert_int_equal(wc[i].wr_id, (uint64_t)i);
	assert_null(check_msgs(f, wc, n, next));
	for (t = 0; t < NT; t++) {
		uint32_t off = (uint32_t)t * TSLICE;

		assert_int_equal(next[t], ITER);
		assert_memory_equal(f->bdst + off + TSLICE / 2, f->asrc + off,
				    8 * 4096);
	}
	no_more(f->ascq, 20);
}

/*
 * 1b with READs: the peer QP is destroyed while 1 MiB READs are
 * outstanding. Their responses never come; each READ completes once,
 * flushed (or with the lost stream's error first), none is left behind.
 */
static void test_flush_peer_destroyed_reads(void **state)
{
	struct fx *f = *state;
	static struct ibv_wc wc[2 * DEPTH];
	bool sig[64];
	int i, n, e;

	for (i = 0; i < 64; i++) {
		struct ibv_sge rs = { (uintptr_t)f->adst + (i % 4) * (1u << 20),
				      1u << 20, f->admr->lkey };

		sig[i] = i % 3 != 1;
		assert_int_equal(rt_post(f->a, (uint64_t)i, IBV_WR_RDMA_READ,
					 &rs, sig[i] ? IBV_SEND_SIGNALED : 0,
					 (uintptr_t)f->bsrc, f->bsmr->rkey),
				 0);
	}
	assert_int_equal(rt_wait(f->ascq, wc, 1, 5000), 1);
	assert_int_equal(ibv_destroy_qp(f->b), 0);
	f->b = NULL;
	n = 1 + rt_drain(f->ascq, wc + 1, 2 * DEPTH - 1, 63, 10000);
	e = rt_check_stream(wc, n, 64, sig, -1);
	assert_true(e < 64);
	assert_int_equal(rt_event(f->ctx, f->a, 2000), IBV_EVENT_QP_FATAL);
	assert_int_equal(rt_state(f->a), IBV_QPS_ERR);
	no_more(f->ascq, 50);
}

/*
 * Threads keep posting to one QP while the main thread moves it to ERR:
 * every WR whose post returned 0 completes exactly once, successes
 * before flushes, each thread's in its order, none unaccounted for.
 * The racers hold their last quarter until the QP is in ERR, so some
 * WRs are always posted after it however the threads are scheduled.
 */
struct racer {
	struct fx *f;
	int t;
	uint32_t posted;
	const char *err;
	const bool *in_err;
};

static void *racer_main(void *arg)
{
	struct racer *r = arg;
	struct fx *f = r->f;
	struct ibv_sge ws = { (uintptr_t)f->asrc + (uint32_t)r->t * 65536u,
			      65536, f->asmr->lkey };

	for (uint32_t seq = 0; seq < 200; seq++) {
		uint64_t id = (uint64_t)r->t << 32 | seq;

		/* 4 x 200 WRs fit the queue: no post fails for space. */
		if (rt_post(f->a, id, IBV_WR_RDMA_WRITE, &ws, IBV_SEND_SIGNALED,
			    (uintptr_t)f->bdst, f->bdmr->rkey)) {
			r->err = "post_send failed";
			return NULL;
		}
		r->posted++;
		if (seq % 16 == 0)
			usleep(500);
		while (seq == 150 &&
		       !__atomic_load_n(r->in_err, __ATOMIC_ACQUIRE))
			usleep(100);
	}
	return NULL;
}

static void test_threads_post_during_err(void **state)
{
	struct fx *f = *state;
	struct racer r[NT];
	pthread_t th[NT];
	static struct ibv_wc wc[4 * DEPTH];
	uint32_t next[NT] = { 0 };
	int t, i, n, flushed = 0;
	bool in_err = false;

	for (t = 0; t < NT; t++) {
		r[t] = (struct racer){ .f = f, .t = t, .in_err = &in_err };
		assert_int_equal(
			pthread_create(&th[t], NULL, racer_main, &r[t]), 0);
	}
	n = rt_wait(f->ascq, wc, 8, 5000);
	assert_int_equal(n, 8);
	assert_int_equal(rt_set_state(f->a, IBV_QPS_ERR), 0);
	__atomic_store_n(&in_err, true, __ATOMIC_RELEASE);
	for (t = 0; t < NT; t++)
		assert_int_equal(pthread_join(th[t], NULL), 0);
	n += rt_expect(f->ascq, wc + n, 4 * DEPTH - n, NT * 200 - n, 10000);
	for (t = 0; t < NT; t++) {
		assert_null(r[t].err);
		assert_int_equal(r[t].posted, 200);
	}
	assert_int_equal(n, NT * 200);
	for (i = 0; i < n; i++) {
		t = (int)(wc[i].wr_id >> 32);
		assert_true(t < NT);
		assert_int_equal((uint32_t)wc[i].wr_id, next[t]);
		next[t]++;
		if (wc[i].status != IBV_WC_SUCCESS) {
			assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
			flushed++;
		} else {
			assert_int_equal(flushed, 0);
		}
	}
	assert_true(flushed > 0);
	no_more(f->ascq, 50);
}

/* b streams @n 64 KiB SENDs to a; a has as many receives in @buf. */
static void sends_from_b(struct fx *f, uint8_t *buf, uint32_t lkey, int n)
{
	struct ibv_sge ss = { (uintptr_t)f->bsrc, 65536, f->bsmr->lkey };

	for (int i = 0; i < n; i++) {
		assert_int_equal(rt_post_recv(f->a, 3000 + (uint64_t)i,
					      buf + (i % 16) * 65536u, 65536,
					      lkey),
				 0);
		assert_int_equal(rt_post(f->b, 4000 + (uint64_t)i, IBV_WR_SEND,
					 &ss, 0, 0, 0),
				 0);
	}
}

/*
 * Once a WR completed flushed its buffer is the application's again: a
 * READ response or a SEND still on the way must not be placed there
 * afterwards. a has READs outstanding and receives that b's SENDs fill
 * when it moves to ERR; after the last flush its buffer is cleared and
 * must stay clear.
 */
static void test_no_placement_after_flush(void **state)
{
	struct fx *f = *state;
	static struct ibv_wc wc[2 * DEPTH];
	int i, n, nr;
	size_t j;

	memset(f->bsrc, 0xab, BUF);
	for (i = 0; i < 64; i++) {
		struct ibv_sge rs = { (uintptr_t)f->adst + (i % 4) * (1u << 20),
				      1u << 20, f->admr->lkey };

		assert_int_equal(rt_post(f->a, (uint64_t)i, IBV_WR_RDMA_READ,
					 &rs, IBV_SEND_SIGNALED,
					 (uintptr_t)f->bsrc, f->bsmr->rkey),
				 0);
	}
	sends_from_b(f, f->adst, f->admr->lkey, 64);
	assert_int_equal(rt_wait(f->ascq, wc, 1, 5000), 1);
	assert_int_equal(rt_set_state(f->a, IBV_QPS_ERR), 0);
	n = 1 + rt_expect(f->ascq, wc + 1, 2 * DEPTH - 1, 63, 10000);
	assert_int_equal(n, 64);
	nr = rt_expect(f->arcq, wc, 2 * DEPTH, 64, 10000);
	assert_int_equal(nr, 64);
	memset(f->adst, 0, BUF);
	usleep(300000);
	for (j = 0; j < BUF && !f->adst[j]; j++)
		;
	if (j < BUF)
		fprintf(stderr, "octet %zu placed after the flush\n", j);
	assert_int_equal(j, BUF);
}

/*
 * The application destroys its QP in the middle of WRITEs from, READs
 * into and receives into a region, then deregisters and unmaps it: the
 * engine must not touch it any more (it would crash the test). The peer
 * sees the stream end: ERR and QP_FATAL.
 */
static void test_destroy_then_unmap(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc[4];
	uint8_t *m = mmap(NULL, BUF, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr;
	int i;

	assert_true(m != MAP_FAILED);
	mr = ibv_reg_mr(f->pd, m, BUF, RT_ACC);
	assert_non_null(mr);
	for (i = 0; i < 96; i++) {
		struct ibv_sge sge = { (uintptr_t)m + (i % 4) * (1u << 20),
				       1u << 20, mr->lkey };
		bool rd = i % 2;

		assert_int_equal(rt_post(f->a, (uint64_t)i,
					 rd ? IBV_WR_RDMA_READ :
					      IBV_WR_RDMA_WRITE,
					 &sge, IBV_SEND_SIGNALED,
					 (uintptr_t)(rd ? f->bsrc : f->bdst),
					 rd ? f->bsmr->rkey : f->bdmr->rkey),
				 0);
	}
	sends_from_b(f, m, mr->lkey, 64);
	assert_int_equal(rt_wait(f->ascq, wc, 1, 5000), 1);
	assert_int_equal(ibv_destroy_qp(f->a), 0);
	f->a = NULL;
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(munmap(m, BUF), 0);
	assert_int_equal(rt_wait_state(f->b, IBV_QPS_ERR, 3000), IBV_QPS_ERR);
	assert_int_equal(rt_event(f->ctx, f->b, 1000), IBV_EVENT_QP_FATAL);
	usleep(200000);
}

/*
 * The target deregisters and unmaps a region while Writes stream into it
 * (with the kernel helper a placement in softirq may then hold the
 * region's last reference, and its pages are let go later, from a work
 * item): nothing crashes, each Write completes once and in order, the
 * ones sent before the target's TERMINATE came back succeed, then at most
 * one fails with REM_ACCESS_ERR and the rest flush; the target goes to
 * ERR on the STag it no longer has. Unless every Write was placed before
 * the deregistration (the kernel helper places in softirq, and the first
 * completion may be reaped late): then all succeed and no error is owed.
 */
static void test_dereg_under_writes(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc[128];
	uint8_t *m = mmap(NULL, BUF, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_sge sge = { (uintptr_t)f->asrc, 1u << 20, f->asmr->lkey };
	enum ibv_wc_status want = IBV_WC_SUCCESS;
	struct ibv_mr *mr;
	int i, n;

	assert_true(m != MAP_FAILED);
	mr = ibv_reg_mr(f->pd, m, BUF, RT_ACC);
	assert_non_null(mr);
	for (i = 0; i < 96; i++)
		assert_int_equal(rt_post(f->a, (uint64_t)i, IBV_WR_RDMA_WRITE,
					 &sge, IBV_SEND_SIGNALED,
					 (uintptr_t)m + (i % 4) * (1u << 20),
					 mr->rkey),
				 0);
	assert_int_equal(rt_wait(f->ascq, wc, 1, 5000), 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(munmap(m, BUF), 0);
	n = rt_expect(f->ascq, wc + 1, 127, 95, 20000);
	assert_int_equal(n, 95);
	for (i = 1; i <= n; i++) {
		assert_int_equal(wc[i].wr_id, (uint64_t)i);
		if (wc[i].status != want && want == IBV_WC_SUCCESS &&
		    wc[i].status == IBV_WC_REM_ACCESS_ERR)
			want = IBV_WC_REM_ACCESS_ERR;
		else if (wc[i].status != want)
			want = IBV_WC_WR_FLUSH_ERR;
		if (wc[i].status != want)
			fprintf(stderr, "a: wr %d %s\n", i, st(wc[i].status));
		assert_int_equal(wc[i].status, want);
		if (want == IBV_WC_REM_ACCESS_ERR)
			want = IBV_WC_WR_FLUSH_ERR;
	}
	if (want == IBV_WC_SUCCESS) {
		fprintf(stderr, "every Write placed before the "
				"deregistration: no error owed\n");
	} else {
		assert_int_equal(rt_wait_state(f->b, IBV_QPS_ERR, 5000),
				 IBV_QPS_ERR);
		i = rt_event(f->ctx, f->b, 1000);
		if (i != IBV_EVENT_QP_ACCESS_ERR)
			fprintf(stderr, "b: event %d\n", i);
		assert_int_equal(i, IBV_EVENT_QP_ACCESS_ERR);
	}
	no_more(f->ascq, 20);
}

/*
 * A WR list with an invalid WR in the middle, on a connected QP: post
 * fails there (EINVAL, bad_wr on it); the WRs ahead of it are posted and
 * delivered, none behind it is, and the QP carries on.
 */
static void test_bad_wr_in_list(void **state)
{
	struct fx *f = *state;
	struct ibv_sge sge = { (uintptr_t)f->asrc, 64, f->asmr->lkey };
	struct ibv_send_wr wr[10], *bad = NULL;
	struct ibv_wc wc[16];
	int i;

	for (i = 0; i < 10; i++) {
		assert_int_equal(rt_post_recv(f->b, (uint64_t)i,
					      f->bdst + i * 64u, 64,
					      f->bdmr->lkey),
				 0);
		wr[i] = (struct ibv_send_wr){ .wr_id = (uint64_t)i,
					      .next = i < 9 ? &wr[i + 1] : NULL,
					      .sg_list = &sge,
					      .num_sge = 1,
					      .opcode = IBV_WR_SEND,
					      .send_flags = IBV_SEND_SIGNALED };
	}
	wr[5].num_sge = 100; /* beyond max_send_sge */
	assert_int_equal(ibv_post_send(f->a, wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr[5]);
	assert_int_equal(rt_expect(f->ascq, wc, 16, 5, 5000), 5);
	assert_int_equal(rt_expect(f->brcq, wc, 16, 5, 5000), 5);
	for (i = 0; i < 5; i++) {
		assert_int_equal(wc[i].wr_id, (uint64_t)i);
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
	}
	wr[5].num_sge = 1;
	assert_int_equal(ibv_post_send(f->a, &wr[5], &bad), 0);
	assert_int_equal(rt_expect(f->ascq, wc, 16, 5, 5000), 5);
	assert_int_equal(rt_expect(f->brcq, wc, 16, 5, 5000), 5);
	for (i = 0; i < 5; i++) {
		assert_int_equal(wc[i].wr_id, 5 + (uint64_t)i);
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
	}
	assert_int_equal(rt_state(f->a), IBV_QPS_RTS);
}

/*
 * What a thread cancelled below works with, on the heap: a frame that
 * cancellation unwinds never unpoisons AddressSanitizer's redzones, and
 * the thread's exit then trips over them.
 */
struct cancel_arg {
	void *obj; /* the CQ polled or the channel waited on */
	struct ibv_wc wc[4];
	struct ibv_cq *cq;
	void *ctx;
};

/* Polls an empty CQ until cancelled: each empty poll runs the engine. */
static void *cancel_poller(void *arg)
{
	struct cancel_arg *a = arg;

	for (;;) {
		pthread_testcancel();
		if (ibv_poll_cq(a->obj, 4, a->wc) < 0)
			return (void *)"poll failed";
	}
	return NULL;
}

/* Blocks on a completion channel until cancelled. */
static void *cancel_waiter(void *arg)
{
	struct cancel_arg *a = arg;

	if (!ibv_get_cq_event(a->obj, &a->cq, &a->ctx))
		ibv_ack_cq_events(a->cq, 1);
	return NULL;
}

/*
 * 5: threads cancelled inside verbs. ibv_poll_cq and ibv_get_cq_event run
 * the engine in the caller's thread; a cancellation point reached there
 * (epoll_wait, write, the channel's wait) must neither leave the engine's
 * lock held nor leave the engine thinking the thread still serves it:
 * after each cancel, SENDs a->b must still complete, b's receive seen
 * through its completion channel with no thread of ours running the
 * engine.
 */
static void test_cancel_in_verbs(void **state)
{
	struct fx *f = *state;
	struct ibv_comp_channel *ch = ibv_create_comp_channel(f->ctx);
	struct ibv_cq *idle = ibv_create_cq(f->ctx, 16, NULL, NULL, 0);
	struct cancel_arg *ca = calloc(1, sizeof(*ca));
	struct ibv_cq *rcq, *ecq;
	struct ibv_sge ss = { (uintptr_t)f->asrc, 4096, f->asmr->lkey };
	struct ibv_wc wc[16];
	struct ibv_qp *b;
	pthread_t th;
	void *ret, *ectx;
	int round, i;

	assert_non_null(ch);
	assert_non_null(idle);
	assert_non_null(ca);
	rcq = ibv_create_cq(f->ctx, 64, NULL, ch, 0);
	assert_non_null(rcq);
	b = rt_make_qp(f->pd, f->bscq, rcq, 64);
	assert_non_null(b);
	/* a is connected to f->b: a fresh pair a2 <-> b. */
	ibv_destroy_qp(f->a);
	f->a = rt_make_qp(f->pd, f->ascq, f->arcq, 64);
	assert_non_null(f->a);
	assert_int_equal(rt_to_rts(f->a, &f->gid, b->qp_num), 0);
	assert_int_equal(rt_to_rts(b, &f->gid, f->a->qp_num), 0);
	for (round = 0; round < 24; round++) {
		struct pollfd p = { .fd = ch->fd, .events = POLLIN };

		/* Odd rounds: a thread blocked on the channel. */
		ca->obj = round & 1 ? (void *)ch : (void *)idle;
		assert_int_equal(pthread_create(&th, NULL,
						round & 1 ? cancel_waiter :
							    cancel_poller,
						ca),
				 0);
		for (i = 0; i < 8; i++) {
			assert_int_equal(rt_post_recv(b, (uint64_t)i,
						      f->bdst + i * 4096u, 4096,
						      f->bdmr->lkey),
					 0);
			assert_int_equal(rt_post(f->a, (uint64_t)i, IBV_WR_SEND,
						 &ss, IBV_SEND_SIGNALED, 0, 0),
					 0);
		}
		usleep(500 + (unsigned int)(round % 4) * 700);
		assert_int_equal(pthread_cancel(th), 0);
		assert_int_equal(pthread_join(th, &ret), 0);
		assert_ptr_equal(ret, PTHREAD_CANCELED);
		assert_int_equal(rt_wait(f->ascq, wc, 8, 5000), 8);
		for (i = 0; i < 8; i++)
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		/* b's receives, and one more SEND, through the channel: only
		 * the engine's own thread moves it now. */
		assert_int_equal(rt_wait(rcq, wc, 8, 5000), 8);
		assert_int_equal(ibv_req_notify_cq(rcq, 0), 0);
		assert_int_equal(
			rt_post_recv(b, 99, f->bdst, 4096, f->bdmr->lkey), 0);
		assert_int_equal(rt_post(f->a, 99, IBV_WR_SEND, &ss, 0, 0, 0),
				 0);
		assert_int_equal(poll(&p, 1, 5000), 1);
		assert_int_equal(ibv_get_cq_event(ch, &ecq, &ectx), 0);
		assert_ptr_equal(ecq, rcq);
		ibv_ack_cq_events(ecq, 1);
		assert_int_equal(rt_wait(rcq, wc, 1, 5000), 1);
		assert_int_equal(wc[0].wr_id, 99);
		assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	}
	assert_int_equal(ibv_destroy_qp(b), 0);
	assert_int_equal(ibv_destroy_cq(rcq), 0);
	assert_int_equal(ibv_destroy_cq(idle), 0);
	assert_int_equal(ibv_destroy_comp_channel(ch), 0);
	free(ca);
}

static char **robust_argv;

/*
 * Tests of connection deadlines run with connect_timeout 500ms: the test
 * runs itself again alone, in a child with that setting (the provider
 * reads it once). True in that child; in the parent, asserts the child's
 * success and returns false.
 */
static bool in_short_timeout_child(const char *test)
{
	int status;
	pid_t pid;

	if (getenv("SWIW_ROBUST_CHILD"))
		return true;
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		setenv("SWIW_CONNECT_TIMEOUT", "500ms", 1);
		setenv("SWIW_TEST_FILTER", test, 1);
		setenv("SWIW_ROBUST_CHILD", "1", 1);
		execv("/proc/self/exe", robust_argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	return false;
}

/*
 * A responder whose peer program went away after the out-of-band
 * exchange: the peer's QP never reaches RTR and nothing ever dials. The
 * responder gives up after twice connect_timeout: QP_FATAL, ERR, and
 * every WR it holds flushes. Runs in a child with connect_timeout 500ms
 * (the default would take 20 s).
 */
static void test_responder_no_peer(void **state)
{
	struct fx *f = *state;
	struct ibv_qp *r, *gone;
	struct ibv_cq *scq, *rcq;
	struct ibv_wc wc[8];
	struct ibv_sge sge;
	long t0, took;
	int i, ev;

	if (!in_short_timeout_child(__func__))
		return;
	f->a = rt_make_qp(f->pd, f->ascq, f->arcq, DEPTH);
	f->b = rt_make_qp(f->pd, f->bscq, f->brcq, DEPTH);
	assert_non_null(f->a);
	assert_non_null(f->b);
	/* On one GID the higher QP number answers. */
	r = f->a->qp_num > f->b->qp_num ? f->a : f->b;
	gone = r == f->a ? f->b : f->a;
	scq = r == f->a ? f->ascq : f->bscq;
	rcq = r == f->a ? f->arcq : f->brcq;
	assert_int_equal(rt_to_rts(r, &f->gid, gone->qp_num), 0);
	t0 = rt_now_ms();
	sge = (struct ibv_sge){ (uintptr_t)f->asrc, 64, f->asmr->lkey };
	for (i = 0; i < 4; i++) {
		assert_int_equal(rt_post_recv(r, 100 + i, f->adst, 64,
					      f->admr->lkey),
				 0);
		assert_int_equal(rt_post(r, i, IBV_WR_SEND, &sge,
					 IBV_SEND_SIGNALED, 0, 0),
				 0);
	}
	ev = rt_event(f->ctx, r, 6000);
	took = rt_now_ms() - t0;
	fprintf(stderr, "QP %u alone: event %d after %ld ms\n", r->qp_num, ev,
		took);
	assert_int_equal(ev, IBV_EVENT_QP_FATAL);
	assert_true(took >= 900);
	assert_int_equal(rt_state(r), IBV_QPS_ERR);
	assert_int_equal(rt_expect(scq, wc, 8, 4, 2000), 4);
	for (i = 0; i < 4; i++) {
		assert_int_equal(wc[i].wr_id, i);
		assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
	}
	assert_int_equal(rt_expect(rcq, wc, 8, 4, 2000), 4);
	for (i = 0; i < 4; i++) {
		assert_int_equal(wc[i].wr_id, 100 + i);
		assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
	}
}

/* INIT and RTR to (@gid, @peer) expecting receive PSN @rq_psn. */
static int psn_rtr(struct ibv_qp *qp, const union ibv_gid *gid, uint32_t peer,
		   uint32_t rq_psn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
				 .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ };
	int err = ibv_modify_qp(qp, &a,
				IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					IBV_QP_ACCESS_FLAGS);

	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.dest_qp_num = peer;
	a.rq_psn = rq_psn;
	a.path_mtu = IBV_MTU_1024;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = *gid;
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				     IBV_QP_MAX_DEST_RD_ATOMIC |
				     IBV_QP_MIN_RNR_TIMER);
}

static int psn_rts(struct ibv_qp *qp, uint32_t sq_psn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS,
				 .sq_psn = sq_psn,
				 .timeout = 14,
				 .retry_cnt = 7,
				 .rnr_retry = 7,
				 .max_rd_atomic = 1 };

	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				     IBV_QP_MAX_QP_RD_ATOMIC);
}

/* One Send from @from to @to over the connection; 0 if it arrived. */
static int psn_send(struct fx *f, struct ibv_qp *from, struct ibv_cq *fscq,
		    struct ibv_qp *to, struct ibv_cq *trcq)
{
	struct ibv_sge sge = { (uintptr_t)f->asrc, 64, f->asmr->lkey };
	struct ibv_wc wc;

	if (rt_post_recv(to, 7, f->bdst, 64, f->bdmr->lkey) ||
	    rt_post(from, 8, IBV_WR_SEND, &sge, IBV_SEND_SIGNALED, 0, 0))
		return -1;
	if (rt_wait(fscq, &wc, 1, 5000) != 1 || wc.status != IBV_WC_SUCCESS)
		return -1;
	if (rt_wait(trcq, &wc, 1, 5000) != 1 || wc.status != IBV_WC_SUCCESS)
		return -1;
	return 0;
}

enum psn_case {
	PSN_BOTH_RTS, /* as ibv_rc_pingpong */
	PSN_INITIATOR_RTR, /* the initiator never moves to RTS (perftest's
			    * bandwidth server), so sends no send PSN */
	PSN_RESPONDER_RTR, /* the responder never does */
	/* One side moves to RTS only once the connection carried a Send to
	 * it in RTR: its send PSN meets the peer's word only then. */
	PSN_INITIATOR_LATE,
	PSN_RESPONDER_LATE,
};

/*
 * Threat model, item 2: a connection reaches a QP only with the PSNs the
 * application exchanged. Each side's send PSN is random, and the QPs
 * connect in every order of RTS a real program uses; then the same with
 * one receive PSN wrong, which both sides must refuse: QP_FATAL on both
 * within the deadlines, nothing delivered.
 */
enum psn_wrong {
	PSN_RIGHT,
	PSN_WRONG_AT_RESPONDER, /* its receive PSN is not the initiator's */
	PSN_WRONG_AT_INITIATOR,
};

/* QP_FATAL for both @a and @b within @ms, in either order. */
static bool psn_both_fatal(struct ibv_context *ctx, struct ibv_qp *a,
			   struct ibv_qp *b, int ms)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	long end = rt_now_ms() + ms;
	struct ibv_async_event ev;
	bool fa = false, fb = false;

	while (!(fa && fb) && rt_now_ms() < end) {
		if (poll(&p, 1, 50) <= 0 || ibv_get_async_event(ctx, &ev))
			continue;
		ibv_ack_async_event(&ev);
		if (ev.event_type != IBV_EVENT_QP_FATAL) {
			fprintf(stderr, "async event %d\n", ev.event_type);
			continue;
		}
		fprintf(stderr, "QP %u: QP_FATAL\n", ev.element.qp->qp_num);
		fa |= ev.element.qp == a;
		fb |= ev.element.qp == b;
	}
	return fa && fb;
}

static void psn_pair(struct fx *f, enum psn_case how, enum psn_wrong wrong)
{
	uint32_t psn_a = (uint32_t)rand() & 0xffffff;
	uint32_t psn_b = (uint32_t)rand() & 0xffffff;
	struct ibv_qp *ini, *res;
	struct ibv_cq *iscq, *ircq, *rscq, *rrcq;
	uint32_t ini_psn, res_psn;

	f->a = rt_make_qp(f->pd, f->ascq, f->arcq, DEPTH);
	f->b = rt_make_qp(f->pd, f->bscq, f->brcq, DEPTH);
	assert_non_null(f->a);
	assert_non_null(f->b);
	/* On one GID the smaller QP number initiates. */
	ini = f->a->qp_num < f->b->qp_num ? f->a : f->b;
	res = ini == f->a ? f->b : f->a;
	iscq = ini == f->a ? f->ascq : f->bscq;
	ircq = ini == f->a ? f->arcq : f->brcq;
	rscq = res == f->a ? f->ascq : f->bscq;
	rrcq = res == f->a ? f->arcq : f->brcq;
	ini_psn = ini == f->a ? psn_a : psn_b;
	res_psn = res == f->a ? psn_a : psn_b;
	fprintf(stderr,
		"initiator QP %u sq_psn %#x, responder QP %u sq_psn %#x%s\n",
		ini->qp_num, ini_psn, res->qp_num, res_psn,
		wrong == PSN_WRONG_AT_RESPONDER ?
			", responder told a wrong one" :
		wrong == PSN_WRONG_AT_INITIATOR ?
			", initiator told a wrong one" :
			"");
	assert_int_equal(psn_rtr(res, &f->gid, ini->qp_num,
				 wrong == PSN_WRONG_AT_RESPONDER ?
					 ini_psn ^ 0x10 :
					 ini_psn),
			 0);
	assert_int_equal(psn_rtr(ini, &f->gid, res->qp_num,
				 wrong == PSN_WRONG_AT_INITIATOR ?
					 res_psn ^ 0x800 :
					 res_psn),
			 0);
	if (how == PSN_INITIATOR_LATE) {
		assert_int_equal(psn_rts(res, res_psn), 0);
		assert_int_equal(psn_send(f, res, rscq, ini, ircq), 0);
		assert_int_equal(psn_rts(ini, ini_psn), 0);
	} else if (how == PSN_RESPONDER_LATE) {
		assert_int_equal(psn_rts(ini, ini_psn), 0);
		assert_int_equal(psn_send(f, ini, iscq, res, rrcq), 0);
		assert_int_equal(psn_rts(res, res_psn), 0);
	} else {
		if (how != PSN_INITIATOR_RTR)
			assert_int_equal(psn_rts(ini, ini_psn), 0);
		if (how != PSN_RESPONDER_RTR)
			assert_int_equal(psn_rts(res, res_psn), 0);
	}
	if (wrong == PSN_RIGHT) {
		/* Sending in RTR works as ib_send_bw's server relies on. */
		assert_int_equal(psn_send(f, ini, iscq, res, rrcq), 0);
		assert_int_equal(psn_send(f, res, rscq, ini, ircq), 0);
		return;
	}
	/* Whichever side finds it first, both QPs end in QP_FATAL. */
	assert_true(psn_both_fatal(f->ctx, ini, res, 5000));
	assert_int_equal(rt_state(ini), IBV_QPS_ERR);
	assert_int_equal(rt_state(res), IBV_QPS_ERR);
}

static void test_psn_both_rts(void **state)
{
	psn_pair(*state, PSN_BOTH_RTS, PSN_RIGHT);
}

static void test_psn_initiator_rtr(void **state)
{
	psn_pair(*state, PSN_INITIATOR_RTR, PSN_RIGHT);
}

static void test_psn_responder_rtr(void **state)
{
	psn_pair(*state, PSN_RESPONDER_RTR, PSN_RIGHT);
}

static void test_psn_wrong(void **state)
{
	if (!in_short_timeout_child(__func__))
		return;
	psn_pair(*state, PSN_BOTH_RTS, PSN_WRONG_AT_RESPONDER);
}

static void test_psn_wrong_at_initiator(void **state)
{
	if (!in_short_timeout_child(__func__))
		return;
	psn_pair(*state, PSN_BOTH_RTS, PSN_WRONG_AT_INITIATOR);
}

/* Only the initiator's receive PSN is there to check. (A responder told
 * a wrong receive PSN cannot be caught here: the initiator never has a
 * send PSN to show.) */
static void test_psn_wrong_initiator_rtr(void **state)
{
	if (!in_short_timeout_child(__func__))
		return;
	psn_pair(*state, PSN_INITIATOR_RTR, PSN_WRONG_AT_INITIATOR);
}

static void test_psn_wrong_responder_rtr(void **state)
{
	if (!in_short_timeout_child(__func__))
		return;
	psn_pair(*state, PSN_RESPONDER_RTR, PSN_WRONG_AT_RESPONDER);
}

/*
 * Connected before one side's RTS, so only that RTS can tell the PSN
 * is wrong: it must still end the connection on both sides.
 */
static void test_psn_wrong_initiator_late(void **state)
{
	if (!in_short_timeout_child(__func__))
		return;
	psn_pair(*state, PSN_INITIATOR_LATE, PSN_WRONG_AT_RESPONDER);
}

static void test_psn_wrong_responder_late(void **state)
{
	if (!in_short_timeout_child(__func__))
		return;
	psn_pair(*state, PSN_RESPONDER_LATE, PSN_WRONG_AT_INITIATOR);
}

static void test_psn_initiator_late(void **state)
{
	psn_pair(*state, PSN_INITIATOR_LATE, PSN_RIGHT);
}

static void test_psn_responder_late(void **state)
{
	psn_pair(*state, PSN_RESPONDER_LATE, PSN_RIGHT);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define TB(fn) cmocka_unit_test_setup_teardown(fn, setup_bare, teardown)

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		T(test_flush_on_err),
		T(test_flush_peer_destroyed),
		T(test_flush_peer_destroyed_reads),
		T(test_no_placement_after_flush),
		T(test_destroy_then_unmap),
		T(test_dereg_under_writes),
		T(test_flush_bad_read_mid_stream),
		T(test_flush_bad_write_mid_stream),
		T(test_write_wrong_key_byte),
		T(test_write_dereg_mr),
		T(test_read_dereg_mr),
		T(test_read_no_remote_read),
		T(test_write_other_pd),
		T(test_send_no_recv),
		T(test_send_too_long),
		T(test_read_beyond_end),
		T(test_zero_write_bad_stag),
		T(test_bad_wr_in_list),
		TB(test_hundred_pairs),
		TB(test_threads_own_qp),
		T(test_threads_shared_qp),
		T(test_threads_post_during_err),
		T(test_cancel_in_verbs),
		TB(test_responder_no_peer),
		TB(test_psn_both_rts),
		TB(test_psn_initiator_rtr),
		TB(test_psn_responder_rtr),
		TB(test_psn_wrong),
		TB(test_psn_wrong_at_initiator),
		TB(test_psn_wrong_initiator_rtr),
		TB(test_psn_wrong_responder_rtr),
		TB(test_psn_wrong_initiator_late),
		TB(test_psn_wrong_responder_late),
		TB(test_psn_initiator_late),
		TB(test_psn_responder_late),
	};

	(void)argc;
	robust_argv = argv;
	srand((unsigned int)time(NULL) ^ (unsigned int)getpid());
	/* One test by name (a cmocka pattern), for loops over a race. */
	if (getenv("SWIW_TEST_FILTER"))
		cmocka_set_test_filter(getenv("SWIW_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
