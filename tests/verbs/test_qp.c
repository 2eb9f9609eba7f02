// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Queue pairs, SRQs and completion queues on swiw_lo through the stock
 * libibverbs (run under swiw-run), without a peer: creation against the
 * limits, the state machine, work request checks, and the rule that
 * every posted work request completes exactly once, here by flush.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

#include "verbs_test.h"

struct fx {
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_mr *mr;
	uint8_t buf[4096];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	f->ctx = open_swiw_lo(&f->list);
	if (!f->ctx)
		return -1;
	f->pd = ibv_alloc_pd(f->ctx);
	f->scq = ibv_create_cq(f->ctx, 256, NULL, NULL, 0);
	f->rcq = ibv_create_cq(f->ctx, 256, NULL, NULL, 0);
	f->mr = ibv_reg_mr(f->pd, f->buf, sizeof(f->buf),
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ);
	*state = f;
	return f->pd && f->scq && f->rcq && f->mr ? 0 : -1;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	ibv_dereg_mr(f->mr);
	ibv_destroy_cq(f->scq);
	ibv_destroy_cq(f->rcq);
	ibv_dealloc_pd(f->pd);
	ibv_close_device(f->ctx);
	ibv_free_device_list(f->list);
	free(f);
	return 0;
}

static struct ibv_qp *make_qp(struct fx *f, uint32_t sq, uint32_t rq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = f->scq,
		.recv_cq = f->rcq,
		.cap = { .max_send_wr = sq,
			 .max_recv_wr = rq,
			 .max_send_sge = 2,
			 .max_recv_sge = 2,
			 .max_inline_data = 64 },
		.qp_type = IBV_QPT_RC,
	};

	return ibv_create_qp(f->pd, &a);
}

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
				 .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				     IBV_QP_ACCESS_FLAGS);
}

static int to_rtr(struct ibv_qp *qp, int mask_drop)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR,
				 .path_mtu = IBV_MTU_1024,
				 .dest_qp_num = 0x1234,
				 .max_dest_rd_atomic = 4,
				 .min_rnr_timer = 12,
				 .ah_attr = { .is_global = 1, .port_num = 1 } };

	a.ah_attr.grh.dgid.raw[10] = a.ah_attr.grh.dgid.raw[11] = 0xff;
	a.ah_attr.grh.dgid.raw[12] = 127;
	a.ah_attr.grh.dgid.raw[15] = 1;
	return ibv_modify_qp(qp, &a,
			     (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			      IBV_QP_MAX_DEST_RD_ATOMIC |
			      IBV_QP_MIN_RNR_TIMER) &
				     ~mask_drop);
}

static int to_state(struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s,
				 .timeout = 14,
				 .retry_cnt = 7,
				 .rnr_retry = 7,
				 .max_rd_atomic = 4 };
	int mask = IBV_QP_STATE;

	if (s == IBV_QPS_RTS)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
	return ibv_modify_qp(qp, &a, mask);
}

/* Takes a new QP (NULL fails the test) through INIT and RTR to RTS. */
static struct ibv_qp *rts(struct ibv_qp *qp)
{
	assert_non_null(qp);
	assert_int_equal(to_init(qp), 0);
	assert_int_equal(to_rtr(qp, 0), 0);
	assert_int_equal(to_state(qp, IBV_QPS_RTS), 0);
	return qp;
}

static struct ibv_qp *make_rts(struct fx *f, uint32_t sq, uint32_t rq)
{
	return rts(make_qp(f, sq, rq));
}

static int post_send(struct fx *f, struct ibv_qp *qp, uint64_t id,
		     enum ibv_wr_opcode op, unsigned int flags)
{
	struct ibv_sge sge = { (uintptr_t)f->buf, 8, f->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = op,
				  .send_flags = flags },
			   *bad = NULL;

	wr.wr.rdma.remote_addr = 0x1000;
	wr.wr.rdma.rkey = 0x100;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	    op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = 0x1000;
		wr.wr.atomic.rkey = 0x100;
	}
	return ibv_post_send(qp, &wr, &bad);
}

static int post_recv(struct fx *f, struct ibv_qp *qp, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)f->buf, 64, f->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 },
			   *bad = NULL;

	return ibv_post_recv(qp, &wr, &bad);
}

static int drain(struct ibv_cq *cq, struct ibv_wc *wc, int max)
{
	int n = 0, got;

	while (n < max && (got = ibv_poll_cq(cq, max - n, wc + n)) > 0)
		n += got;
	return n;
}

static void test_create(void **state)
{
	struct fx *f = *state;
	struct ibv_device_attr da;
	struct ibv_qp_init_attr a = { .send_cq = f->scq,
				      .recv_cq = f->rcq,
				      .cap = { 4, 4, 1, 1, 0 },
				      .qp_type = IBV_QPT_UD };
	struct ibv_qp *qp, *qp2;

	assert_int_equal(ibv_query_device(f->ctx, &da), 0);
	errno = 0;
	assert_null(ibv_create_qp(f->pd, &a));
	assert_int_equal(errno, EOPNOTSUPP);
	a.qp_type = IBV_QPT_UC;
	errno = 0;
	assert_null(ibv_create_qp(f->pd, &a));
	assert_int_equal(errno, EOPNOTSUPP);
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_sge = (uint32_t)da.max_sge + 1;
	errno = 0;
	assert_null(ibv_create_qp(f->pd, &a));
	assert_int_equal(errno, EINVAL);
	a.cap.max_send_sge = 1;
	a.cap.max_send_wr = (uint32_t)da.max_qp_wr + 1;
	errno = 0;
	assert_null(ibv_create_qp(f->pd, &a));
	assert_int_equal(errno, EINVAL);
	a.cap.max_send_wr = 3;
	a.cap.max_inline_data = 100000;
	errno = 0;
	assert_null(ibv_create_qp(f->pd, &a));
	assert_int_equal(errno, EINVAL);
	a.cap.max_inline_data = 40;
	qp = ibv_create_qp(f->pd, &a);
	assert_non_null(qp);
	/* What it can hold, at least what was asked. */
	assert_true(a.cap.max_send_wr >= 3 && a.cap.max_inline_data >= 40);
	assert_int_equal(qp->state, IBV_QPS_RESET);
	assert_true(qp->qp_num > 1);
	qp2 = make_qp(f, 4, 4);
	assert_non_null(qp2);
	assert_int_not_equal(qp->qp_num, qp2->qp_num);
	/* Objects in use cannot go. */
	assert_int_equal(ibv_destroy_cq(f->scq), EBUSY);
	assert_int_equal(ibv_dealloc_pd(f->pd), EBUSY);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_qp(qp2), 0);
}

static void test_state_machine(void **state)
{
	struct fx *f = *state;
	struct ibv_qp_attr qa,
		bad = { .qp_state = IBV_QPS_INIT, .port_num = 2 };
	struct ibv_qp_init_attr qi;
	struct ibv_qp *qp = make_qp(f, 8, 8);

	assert_non_null(qp);
	assert_int_equal(to_state(qp, IBV_QPS_RTS), EINVAL); /* RESET->RTS */
	assert_int_equal(to_rtr(qp, 0), EINVAL); /* RESET->RTR */
	assert_int_equal(ibv_modify_qp(qp, &bad, IBV_QP_STATE | IBV_QP_PORT),
			 EINVAL);
	assert_int_equal(to_init(qp), 0);
	assert_int_equal(qp->state, IBV_QPS_INIT);
	/* Connecting needs the peer: no address or no QP number fails. */
	assert_int_equal(to_rtr(qp, IBV_QP_AV), EINVAL);
	assert_int_equal(to_rtr(qp, IBV_QP_DEST_QPN), EINVAL);
	assert_int_equal(to_rtr(qp, 0), 0);
	assert_int_equal(to_state(qp, IBV_QPS_INIT), EINVAL); /* RTR->INIT */
	assert_int_equal(to_state(qp, IBV_QPS_RTS), 0);
	assert_int_equal(ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi), 0);
	assert_int_equal(qa.qp_state, IBV_QPS_RTS);
	assert_int_equal(qa.dest_qp_num, 0x1234);
	assert_int_equal(qa.ah_attr.grh.dgid.raw[12], 127);
	assert_int_equal(qa.max_dest_rd_atomic, 4);
	assert_int_equal(qa.max_rd_atomic, 4);
	assert_int_equal(qi.qp_type, IBV_QPT_RC);
	assert_int_equal(to_state(qp, IBV_QPS_SQD), 0);
	assert_int_equal(to_state(qp, IBV_QPS_RTS), 0);
	assert_int_equal(to_state(qp, IBV_QPS_ERR), 0);
	assert_int_equal(to_state(qp, IBV_QPS_RTS), EINVAL); /* ERR->RTS */
	assert_int_equal(to_state(qp, IBV_QPS_RESET), 0);
	assert_int_equal(to_init(qp), 0);
	assert_int_equal(ibv_destroy_qp(qp), 0);
}

static void test_post_checks(void **state)
{
	struct fx *f = *state;
	struct ibv_qp *qp = make_qp(f, 4, 4);
	struct ibv_sge sges[20];
	struct ibv_send_wr w[3], *bad;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct ibv_wc wc[16];
	int i;

	assert_non_null(qp);
	for (i = 0; i < 20; i++)
		sges[i] = (struct ibv_sge){ (uintptr_t)f->buf, 8, f->mr->lkey };
	assert_int_equal(ibv_query_qp(qp, &qa, IBV_QP_CAP, &qi), 0);
	/* Not yet ready to send, or to receive. */
	assert_int_equal(post_send(f, qp, 1, IBV_WR_SEND, 0), EINVAL);
	assert_int_equal(post_recv(f, qp, 1), EINVAL);
	assert_int_equal(to_init(qp), 0);
	assert_int_equal(post_send(f, qp, 1, IBV_WR_SEND, 0), EINVAL);
	assert_int_equal(post_recv(f, qp, 1), 0); /* INIT takes receives */
	assert_int_equal(to_rtr(qp, 0), 0);
	assert_int_equal(to_state(qp, IBV_QPS_RTS), 0);

	/* A list stops at the first bad request and says which. */
	memset(w, 0, sizeof(w));
	for (i = 0; i < 3; i++) {
		w[i].wr_id = 10 + (uint64_t)i;
		w[i].sg_list = sges;
		w[i].num_sge = 1;
		w[i].opcode = IBV_WR_SEND;
		w[i].next = i < 2 ? &w[i + 1] : NULL;
	}
	w[1].opcode = IBV_WR_BIND_MW;
	assert_int_equal(ibv_post_send(qp, w, &bad), EINVAL);
	assert_ptr_equal(bad, &w[1]);
	w[1].opcode = IBV_WR_SEND;
	w[1].num_sge = (int)qa.cap.max_send_sge + 1; /* one too many */
	assert_int_equal(ibv_post_send(qp, &w[1], &bad), EINVAL);
	assert_ptr_equal(bad, &w[1]);
	w[1].num_sge = 1;
	w[1].send_flags = IBV_SEND_INLINE;
	sges[0].length = 4000; /* longer than max_inline_data */
	assert_int_equal(ibv_post_send(qp, &w[1], &bad), EINVAL);
	sges[0].length = 8;
	w[1].opcode = IBV_WR_RDMA_READ; /* READ cannot be inline */
	assert_int_equal(ibv_post_send(qp, &w[1], &bad), EINVAL);
	w[1].send_flags = 0;
	w[1].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	w[1].wr.atomic.remote_addr = 0x1004; /* not 8-aligned */
	assert_int_equal(ibv_post_send(qp, &w[1], &bad), EINVAL);
	w[1].wr.atomic.remote_addr = 0x1000;
	sges[0].length = 4; /* not 8 octets */
	assert_int_equal(ibv_post_send(qp, &w[1], &bad), EINVAL);
	sges[0].length = 8;

	/* The send queue holds max_send_wr (4), then says ENOMEM; w[0],
	 * which went in before the bad request of its list, holds one. */
	assert_int_equal(qa.cap.max_send_wr, 4);
	for (i = 0; i < 3; i++)
		assert_int_equal(post_send(f, qp, 100 + (uint64_t)i,
					   IBV_WR_SEND, IBV_SEND_INLINE),
				 0);
	assert_int_equal(post_send(f, qp, 104, IBV_WR_SEND, 0), ENOMEM);
	assert_int_equal(to_state(qp, IBV_QPS_ERR), 0);
	assert_int_equal(drain(f->scq, wc, 16), 4);
	assert_int_equal(wc[0].wr_id, 10);
	assert_int_equal(drain(f->rcq, wc, 16), 1);
	assert_int_equal(ibv_destroy_qp(qp), 0);
}

static void test_flush_exactly_once(void **state)
{
	struct fx *f = *state;
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND,
		IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_READ,
		IBV_WR_SEND_WITH_IMM,
		IBV_WR_RDMA_WRITE_WITH_IMM,
		IBV_WR_ATOMIC_FETCH_AND_ADD,
		IBV_WR_ATOMIC_CMP_AND_SWP,
		IBV_WR_SEND_WITH_INV,
		IBV_WR_LOCAL_INV,
	};
	static const enum ibv_wc_opcode wcop[] = {
		IBV_WC_SEND,	  IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ,
		IBV_WC_SEND,	  IBV_WC_RDMA_WRITE, IBV_WC_FETCH_ADD,
		IBV_WC_COMP_SWAP, IBV_WC_SEND,	     IBV_WC_LOCAL_INV,
	};
	const int n_ops = (int)(sizeof(ops) / sizeof(ops[0]));
	struct ibv_qp *qp = make_rts(f, 64, 64);
	struct ibv_wc wc[128];
	int i, n;

	for (i = 0; i < 40; i++)
		assert_int_equal(post_send(f, qp, (uint64_t)i, ops[i % n_ops],
					   i % 3 ? 0 : IBV_SEND_SIGNALED),
				 0);
	for (i = 0; i < 30; i++)
		assert_int_equal(post_recv(f, qp, 1000 + (uint64_t)i), 0);
	assert_int_equal(ibv_poll_cq(f->scq, 128, wc), 0); /* no peer yet */
	assert_int_equal(to_state(qp, IBV_QPS_ERR), 0);

	/* Signalled or not, each flushes once, in order, with its opcode. */
	n = drain(f->scq, wc, 128);
	assert_int_equal(n, 40);
	for (i = 0; i < 40; i++) {
		assert_int_equal(wc[i].wr_id, (uint64_t)i);
		assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(wc[i].opcode, wcop[i % n_ops]);
		assert_int_equal(wc[i].qp_num, qp->qp_num);
	}
	n = drain(f->rcq, wc, 128);
	assert_int_equal(n, 30);
	for (i = 0; i < 30; i++) {
		assert_int_equal(wc[i].wr_id, 1000 + (uint64_t)i);
		assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(wc[i].opcode, IBV_WC_RECV);
	}
	/* Posted in the error state: flushed at once. */
	assert_int_equal(post_send(f, qp, 77, IBV_WR_SEND, 0), 0);
	assert_int_equal(post_recv(f, qp, 78), 0);
	assert_int_equal(drain(f->scq, wc, 128), 1);
	assert_int_equal(wc[0].wr_id, 77);
	assert_int_equal(drain(f->rcq, wc, 128), 1);
	assert_int_equal(wc[0].wr_id, 78);
	assert_int_equal(drain(f->scq, wc, 128) + drain(f->rcq, wc, 128), 0);
	assert_int_equal(ibv_destroy_qp(qp), 0);
}

static void test_reset_drops(void **state)
{
	struct fx *f = *state;
	struct ibv_qp *qp = make_rts(f, 8, 8);
	struct ibv_wc wc[8];

	assert_int_equal(post_send(f, qp, 1, IBV_WR_SEND, IBV_SEND_SIGNALED),
			 0);
	assert_int_equal(post_recv(f, qp, 2), 0);
	assert_int_equal(to_state(qp, IBV_QPS_RESET), 0);
	assert_int_equal(to_state(qp, IBV_QPS_ERR), 0);
	assert_int_equal(drain(f->scq, wc, 8) + drain(f->rcq, wc, 8), 0);
	assert_int_equal(ibv_destroy_qp(qp), 0);
}

struct poster {
	struct fx *f;
	struct ibv_qp *qp;
	int base;
};

static void *post_many(void *arg)
{
	struct poster *p = arg;
	int i;

	for (i = 0; i < 500; i++)
		if (post_send(p->f, p->qp, (uint64_t)(p->base + i), IBV_WR_SEND,
			      0))
			return (void *)1;
	return NULL;
}

static void test_threads(void **state)
{
	struct fx *f = *state;
	struct ibv_cq *cq = ibv_create_cq(f->ctx, 4096, NULL, NULL, 0);
	struct ibv_qp_init_attr a = { .send_cq = cq,
				      .recv_cq = f->rcq,
				      .cap = { 2048, 1, 1, 1, 0 },
				      .qp_type = IBV_QPT_RC };
	struct ibv_qp *qp = rts(ibv_create_qp(f->pd, &a));
	struct poster p[4];
	pthread_t t[4];
	static struct ibv_wc wc[2100];
	static char seen[2000];
	int i, n;
	void *ret;

	for (i = 0; i < 4; i++) {
		p[i] = (struct poster){ f, qp, i * 500 };
		assert_int_equal(pthread_create(&t[i], NULL, post_many, &p[i]),
				 0);
	}
	for (i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(t[i], &ret), 0);
		assert_null(ret);
	}
	assert_int_equal(to_state(qp, IBV_QPS_ERR), 0);
	n = drain(cq, wc, 2100);
	assert_int_equal(n, 2000);
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < n; i++) {
		assert_true(wc[i].wr_id < 2000);
		assert_int_equal(seen[wc[i].wr_id]++, 0); /* exactly once */
	}
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
}

static void test_channel_and_overflow(void **state)
{
	struct fx *f = *state;
	struct ibv_comp_channel *ch = ibv_create_comp_channel(f->ctx);
	struct ibv_cq *cq = ibv_create_cq(f->ctx, 1, (void *)7, ch, 0);
	struct ibv_qp_init_attr a = { .send_cq = cq,
				      .recv_cq = f->rcq,
				      .cap = { 8, 1, 1, 1, 0 },
				      .qp_type = IBV_QPT_RC };
	struct ibv_qp *qp;
	struct ibv_async_event ev;
	struct pollfd pfd;
	struct ibv_cq *evcq;
	struct ibv_wc wc[8];
	void *evctx;
	int i;

	assert_non_null(cq);
	assert_int_equal(cq->cqe, 1);
	qp = rts(ibv_create_qp(f->pd, &a));
	for (i = 0; i < 3; i++)
		assert_int_equal(post_send(f, qp, (uint64_t)i, IBV_WR_SEND, 0),
				 0);
	/* Armed for solicited events only: a flush error still wakes. */
	assert_int_equal(ibv_req_notify_cq(cq, 1), 0);
	assert_int_equal(to_state(qp, IBV_QPS_ERR), 0);
	pfd = (struct pollfd){ .fd = ch->fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 2000), 1);
	assert_int_equal(ibv_get_cq_event(ch, &evcq, &evctx), 0);
	assert_ptr_equal(evcq, cq);
	assert_ptr_equal(evctx, (void *)7);
	ibv_ack_cq_events(cq, 1);
	/* One-shot: no second event without re-arming. */
	assert_int_equal(poll(&pfd, 1, 0), 0);
	/* A CQ of one entry cannot hold three: the rest are lost, and the
	 * CQ error is reported on the async fd. */
	assert_int_equal(drain(cq, wc, 8), 1);
	pfd = (struct pollfd){ .fd = f->ctx->async_fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 2000), 1);
	assert_int_equal(ibv_get_async_event(f->ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_CQ_ERR);
	assert_ptr_equal(ev.element.cq, cq);
	ibv_ack_async_event(&ev);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_destroy_comp_channel(ch), 0);
}

static void test_resize_keeps_pending(void **state)
{
	struct fx *f = *state;
	struct ibv_cq *cq = ibv_create_cq(f->ctx, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr a = { .send_cq = cq,
				      .recv_cq = f->rcq,
				      .cap = { 8, 1, 1, 1, 0 },
				      .qp_type = IBV_QPT_RC };
	struct ibv_qp *qp = rts(ibv_create_qp(f->pd, &a));
	struct ibv_wc wc[16];
	int i;

	for (i = 0; i < 3; i++)
		assert_int_equal(post_send(f, qp, (uint64_t)i, IBV_WR_SEND, 0),
				 0);
	assert_int_equal(to_state(qp, IBV_QPS_ERR), 0);
	assert_int_equal(ibv_resize_cq(cq, 2), EINVAL); /* holds 3 */
	assert_int_equal(ibv_resize_cq(cq, 64), 0);
	assert_true(cq->cqe >= 64);
	assert_int_equal(drain(cq, wc, 16), 3);
	for (i = 0; i < 3; i++)
		assert_int_equal(wc[i].wr_id, (uint64_t)i);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
}

static void test_srq(void **state)
{
	struct fx *f = *state;
	struct ibv_srq_init_attr sa = { .attr = { 16, 2, 0 } };
	struct ibv_srq_attr q;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr a = { .send_cq = f->scq,
				      .recv_cq = f->rcq,
				      .cap = { 4, 0, 1, 0, 0 },
				      .qp_type = IBV_QPT_RC };
	struct ibv_sge sge = { (uintptr_t)f->buf, 64, f->mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 5, .sg_list = &sge, .num_sge = 1 },
			   *bad;
	struct ibv_wc wc[4];

	sa.attr.max_wr = 100000000;
	errno = 0;
	assert_null(ibv_create_srq(f->pd, &sa));
	assert_int_equal(errno, EINVAL);
	sa.attr.max_wr = 16;
	srq = ibv_create_srq(f->pd, &sa);
	assert_non_null(srq);
	assert_true(sa.attr.max_wr >= 16);
	a.srq = srq;
	qp = ibv_create_qp(f->pd, &a);
	assert_non_null(qp);
	assert_int_equal(ibv_post_srq_recv(srq, &rw, &bad), 0);
	/* With an SRQ, receives go there, not to the QP. */
	assert_int_equal(post_recv(f, qp, 6), EINVAL);
	assert_int_equal(
		ibv_modify_srq(srq, &(struct ibv_srq_attr){ .srq_limit = 4 },
			       IBV_SRQ_LIMIT),
		0);
	assert_int_equal(ibv_query_srq(srq, &q), 0);
	assert_int_equal(q.srq_limit, 4);
	assert_int_equal(ibv_modify_srq(srq,
					&(struct ibv_srq_attr){ .max_wr = 64 },
					IBV_SRQ_MAX_WR),
			 EINVAL);
	assert_int_equal(ibv_destroy_srq(srq), EBUSY);
	/* The QP's error does not flush the shared queue. */
	assert_int_equal(to_init(qp), 0);
	assert_int_equal(to_state(qp, IBV_QPS_ERR), 0);
	assert_int_equal(ibv_poll_cq(f->rcq, 4, wc), 0);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_srq(srq), 0);
}

static void test_many_qps(void **state)
{
	struct fx *f = *state;
	struct ibv_qp *qp[100];
	int i, j;

	for (i = 0; i < 100; i++) {
		qp[i] = make_qp(f, 16, 16);
		assert_non_null(qp[i]);
		for (j = 0; j < i; j++)
			assert_int_not_equal(qp[i]->qp_num, qp[j]->qp_num);
	}
	for (i = 0; i < 100; i++)
		assert_int_equal(ibv_destroy_qp(qp[i]), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create),
		cmocka_unit_test(test_state_machine),
		cmocka_unit_test(test_post_checks),
		cmocka_unit_test(test_flush_exactly_once),
		cmocka_unit_test(test_reset_drops),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_channel_and_overflow),
		cmocka_unit_test(test_resize_keeps_pending),
		cmocka_unit_test(test_srq),
		cmocka_unit_test(test_many_qps),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
