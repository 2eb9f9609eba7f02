// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * swiw's declarations of libibverbs' private ABI against the real library.
 *
 * The sizes and offsets are _Static_asserts in verbs_abi.h; this test checks
 * what those cannot: that the libibverbs installed here reads our tables
 * where we put things. It builds a throwaway device, opens it with the
 * stock ibv_open_device, installs a verbs_context_ops whose every slot we
 * call records its own index, and drives each public entry point.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "verbs_abi.h"

enum {
	S_ADVISE_MR = 0,
	S_ALLOC_MW = 2,
	S_ALLOC_PD = 5,
	S_ASYNC_EVENT = 7,
	S_CQ_EVENT = 12,
	S_CREATE_CQ = 15,
	S_CREATE_QP = 19,
	S_CREATE_SRQ = 22,
	S_DEALLOC_PD = 26,
	S_DEREG_MR = 28,
	S_DESTROY_CQ = 31,
	S_DESTROY_QP = 34,
	S_FREE_CONTEXT = 39,
	S_MODIFY_QP = 47,
	S_POLL_CQ = 53,
	S_POST_RECV = 54,
	S_POST_SEND = 55,
	S_QUERY_DEVICE_EX = 58,
	S_QUERY_PORT = 60,
	S_QUERY_QP = 61,
	S_REG_MR = 68,
	S_REQ_NOTIFY_CQ = 69,
	S_UNIMPORT_PD = 75,
	S_MAX = 76,
};

static int last_slot = -1;
static struct ibv_pd fake_pd;
static struct ibv_cq fake_cq;
static struct ibv_qp fake_qp;
static struct ibv_srq fake_srq;
static struct verbs_mr fake_mr;
static struct ibv_mw fake_mw;

static int hit(int slot)
{
	last_slot = slot;
	return 0;
}

static int t_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice a,
		       uint32_t f, struct ibv_sge *s, uint32_t n)
{
	(void)pd, (void)a, (void)f, (void)s, (void)n;
	return hit(S_ADVISE_MR);
}

static struct ibv_mw *t_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type t)
{
	(void)pd, (void)t;
	hit(S_ALLOC_MW);
	return &fake_mw;
}

static struct ibv_pd *t_alloc_pd(struct ibv_context *c)
{
	(void)c;
	hit(S_ALLOC_PD);
	return &fake_pd;
}

static void t_async_event(struct ibv_context *c, struct ibv_async_event *e)
{
	(void)c, (void)e;
	hit(S_ASYNC_EVENT);
}

static void t_cq_event(struct ibv_cq *cq)
{
	(void)cq;
	hit(S_CQ_EVENT);
}

static struct ibv_cq *t_create_cq(struct ibv_context *c, int n,
				  struct ibv_comp_channel *ch, int v)
{
	(void)c, (void)n, (void)ch, (void)v;
	hit(S_CREATE_CQ);
	return &fake_cq;
}

static struct ibv_qp *t_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	(void)pd, (void)a;
	hit(S_CREATE_QP);
	return &fake_qp;
}

static struct ibv_srq *t_create_srq(struct ibv_pd *pd,
				    struct ibv_srq_init_attr *a)
{
	(void)pd, (void)a;
	hit(S_CREATE_SRQ);
	return &fake_srq;
}

static int t_dealloc_pd(struct ibv_pd *pd)
{
	(void)pd;
	return hit(S_DEALLOC_PD);
}

static int t_dereg_mr(struct verbs_mr *mr)
{
	assert_ptr_equal(mr, &fake_mr);
	return hit(S_DEREG_MR);
}

static int t_destroy_cq(struct ibv_cq *cq)
{
	(void)cq;
	return hit(S_DESTROY_CQ);
}

static int t_destroy_qp(struct ibv_qp *qp)
{
	(void)qp;
	return hit(S_DESTROY_QP);
}

struct test_ctx {
	int before; /* the verbs_context need not be first */
	struct verbs_context vctx;
};

static void t_free_context(struct ibv_context *c)
{
	struct test_ctx *ctx =
		(void *)((char *)c - offsetof(struct test_ctx, vctx.context));

	hit(S_FREE_CONTEXT);
	close(c->async_fd + 1); /* the write end, made just after */
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

static int t_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int m)
{
	(void)qp, (void)a, (void)m;
	return hit(S_MODIFY_QP);
}

static int t_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	(void)cq, (void)n, (void)wc;
	return hit(S_POLL_CQ);
}

static int t_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *w,
		       struct ibv_recv_wr **b)
{
	(void)qp, (void)w, (void)b;
	return hit(S_POST_RECV);
}

static int t_post_send(struct ibv_qp *qp, struct ibv_send_wr *w,
		       struct ibv_send_wr **b)
{
	(void)qp, (void)w, (void)b;
	return hit(S_POST_SEND);
}

static int t_query_device_ex(struct ibv_context *c,
			     const struct ibv_query_device_ex_input *in,
			     struct ibv_device_attr_ex *a, size_t sz)
{
	(void)c, (void)in;
	assert_true(sz >= sizeof(a->orig_attr));
	memset(a, 0, sz);
	a->orig_attr.phys_port_cnt = 7;
	return hit(S_QUERY_DEVICE_EX);
}

static int t_query_port(struct ibv_context *c, uint8_t p,
			struct ibv_port_attr *a)
{
	(void)c, (void)p;
	a->max_msg_sz = 1234;
	return hit(S_QUERY_PORT);
}

static int t_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int m,
		      struct ibv_qp_init_attr *i)
{
	(void)qp, (void)a, (void)m, (void)i;
	return hit(S_QUERY_QP);
}

static struct ibv_mr *t_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
			       uint64_t iova, int access)
{
	(void)pd, (void)addr, (void)len, (void)iova, (void)access;
	hit(S_REG_MR);
	return &fake_mr.ibv_mr;
}

static int t_req_notify_cq(struct ibv_cq *cq, int so)
{
	(void)cq, (void)so;
	return hit(S_REQ_NOTIFY_CQ);
}

static void t_unimport_pd(struct ibv_pd *pd)
{
	(void)pd;
	hit(S_UNIMPORT_PD);
}

static const struct verbs_context_ops sentinel_ops = {
	.advise_mr = t_advise_mr,
	.alloc_mw = t_alloc_mw,
	.alloc_pd = t_alloc_pd,
	.async_event = t_async_event,
	.cq_event = t_cq_event,
	.create_cq = t_create_cq,
	.create_qp = t_create_qp,
	.create_srq = t_create_srq,
	.dealloc_pd = t_dealloc_pd,
	.dereg_mr = t_dereg_mr,
	.destroy_cq = t_destroy_cq,
	.destroy_qp = t_destroy_qp,
	.free_context = t_free_context,
	.modify_qp = t_modify_qp,
	.poll_cq = t_poll_cq,
	.post_recv = t_post_recv,
	.post_send = t_post_send,
	.query_device_ex = t_query_device_ex,
	.query_port = t_query_port,
	.query_qp = t_query_qp,
	.reg_mr = t_reg_mr,
	.req_notify_cq = t_req_notify_cq,
	.unimport_pd = t_unimport_pd,
};

static struct verbs_context *t_alloc_context(struct ibv_device *dev, int fd,
					     void *priv)
{
	struct test_ctx *ctx;
	int p[2];

	(void)priv;
	assert_int_equal(fd, -1); /* a sysfs-less device gets no cmd_fd */
	ctx = _verbs_init_and_alloc_context(
		dev, fd, sizeof(*ctx),
		(struct verbs_context *)offsetof(struct test_ctx, vctx), 0);
	assert_non_null(ctx);
	assert_ptr_equal(ctx->vctx.context.device, dev);
	assert_int_equal(ctx->vctx.context.async_fd, -1);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(p[1], p[0] + 1);
	ctx->vctx.context.async_fd = p[0];
	verbs_set_ops(&ctx->vctx, &sentinel_ops);
	return &ctx->vctx;
}

static int uninit_calls;

static void t_uninit_device(struct verbs_device *d)
{
	(void)d;
	uninit_calls++;
}

static const struct verbs_device_ops test_dev_ops = {
	.name = "swiwtest",
	.alloc_context = t_alloc_context,
	.uninit_device = t_uninit_device,
};

static struct verbs_device test_dev;

static void expect_slot(int slot)
{
	assert_int_equal(last_slot, slot);
	last_slot = -1;
}

static void test_ops_slots(void **state)
{
	struct ibv_context *ctx;
	struct ibv_device_attr dattr;
	struct ibv_port_attr pattr;
	struct ibv_qp_attr qattr;
	struct ibv_qp_init_attr qinit = {};
	struct ibv_srq_init_attr sinit = {};
	struct ibv_send_wr swr = {}, *bad_swr;
	struct ibv_recv_wr rwr = {}, *bad_rwr;
	struct ibv_wc wc;
	struct ibv_comp_channel ch = {};
	struct ibv_async_event aev;
	struct ibv_cq *cq, *evcq;
	void *evctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	char buf[64];
	int p[2];

	(void)state;
	test_dev.device.node_type = IBV_NODE_RNIC;
	test_dev.device.transport_type = IBV_TRANSPORT_IWARP;
	strcpy(test_dev.device.name, "swiwtest0");
	test_dev.ops = &test_dev_ops;
	atomic_init(&test_dev.refcount, 1);

	ctx = ibv_open_device(&test_dev.device);
	assert_non_null(ctx);
	/* Opening took a device reference through our refcount field. */
	assert_int_equal(atomic_load(&test_dev.refcount), 2);
	assert_ptr_equal(ctx->abi_compat, (void *)UINTPTR_MAX);

	assert_int_equal(ibv_query_device(ctx, &dattr), 0);
	expect_slot(S_QUERY_DEVICE_EX);
	assert_int_equal(dattr.phys_port_cnt, 7);
	assert_int_equal(ibv_query_port(ctx, 1, &pattr), 0);
	expect_slot(S_QUERY_PORT);
	assert_int_equal(pattr.max_msg_sz, 1234);

	pd = ibv_alloc_pd(ctx);
	expect_slot(S_ALLOC_PD);
	assert_ptr_equal(pd, &fake_pd);
	assert_ptr_equal(pd->context, ctx);

	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	expect_slot(S_REG_MR);
	assert_ptr_equal(mr, &fake_mr.ibv_mr);
	assert_ptr_equal(mr->addr, buf); /* filled in by libibverbs */
	assert_int_equal(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0,
				       NULL, 0),
			 0);
	expect_slot(S_ADVISE_MR);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	expect_slot(S_DEREG_MR);

	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	expect_slot(S_CREATE_CQ);
	assert_ptr_equal(cq, &fake_cq);
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 0);
	expect_slot(S_POLL_CQ);
	assert_int_equal(ibv_req_notify_cq(cq, 0), 0);
	expect_slot(S_REQ_NOTIFY_CQ);

	/* The completion channel record: the CQ pointer, 8 bytes. */
	assert_int_equal(pipe(p), 0);
	ch.context = ctx;
	ch.fd = p[0];
	fake_cq.cq_context = &fake_cq;
	{
		uint64_t rec = (uintptr_t)&fake_cq;

		assert_int_equal(write(p[1], &rec, sizeof(rec)), sizeof(rec));
	}
	assert_int_equal(ibv_get_cq_event(&ch, &evcq, &evctx), 0);
	expect_slot(S_CQ_EVENT);
	assert_ptr_equal(evcq, &fake_cq);
	ibv_ack_cq_events(evcq, 1);
	close(p[0]);
	close(p[1]);

	assert_int_equal(ibv_destroy_cq(cq), 0);
	expect_slot(S_DESTROY_CQ);

	/* The async event record: {u64 element; u32 type; u32 reserved}. */
	{
		struct {
			uint64_t element;
			uint32_t type, rsvd;
		} rec = { 1, IBV_EVENT_PORT_ACTIVE, 0 };

		assert_int_equal(write(ctx->async_fd + 1, &rec, sizeof(rec)),
				 16);
	}
	assert_int_equal(ibv_get_async_event(ctx, &aev), 0);
	expect_slot(S_ASYNC_EVENT);
	assert_int_equal(aev.event_type, IBV_EVENT_PORT_ACTIVE);
	assert_int_equal(aev.element.port_num, 1);
	ibv_ack_async_event(&aev);

	assert_ptr_equal(ibv_create_qp(pd, &qinit), &fake_qp);
	expect_slot(S_CREATE_QP);
	fake_qp.context = ctx;
	fake_qp.pd = pd;
	assert_int_equal(ibv_modify_qp(&fake_qp, &qattr, 0), 0);
	expect_slot(S_MODIFY_QP);
	assert_int_equal(ibv_query_qp(&fake_qp, &qattr, 0, &qinit), 0);
	expect_slot(S_QUERY_QP);
	assert_int_equal(ibv_post_send(&fake_qp, &swr, &bad_swr), 0);
	expect_slot(S_POST_SEND);
	assert_int_equal(ibv_post_recv(&fake_qp, &rwr, &bad_rwr), 0);
	expect_slot(S_POST_RECV);
	assert_int_equal(ibv_destroy_qp(&fake_qp), 0);
	expect_slot(S_DESTROY_QP);

	assert_ptr_equal(ibv_create_srq(pd, &sinit), &fake_srq);
	expect_slot(S_CREATE_SRQ);
	assert_ptr_equal(ibv_alloc_mw(pd, IBV_MW_TYPE_1), &fake_mw);
	expect_slot(S_ALLOC_MW);
	ibv_unimport_pd(pd);
	expect_slot(S_UNIMPORT_PD);

	assert_int_equal(ibv_dealloc_pd(pd), 0);
	expect_slot(S_DEALLOC_PD);

	/* An op left NULL falls back to libibverbs' stub: EOPNOTSUPP. */
	errno = 0;
	assert_null(ibv_open_xrcd(ctx, &(struct ibv_xrcd_init_attr){}));
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(ibv_resize_cq(&fake_cq, 8), EOPNOTSUPP);

	assert_int_equal(ibv_close_device(ctx), 0);
	expect_slot(S_FREE_CONTEXT);
	assert_int_equal(atomic_load(&test_dev.refcount), 1);
	assert_int_equal(uninit_calls, 0);
}

static void test_release_names(void **state)
{
	(void)state;
	assert_int_equal(
		swiw_verbs_release_from_name(
			"/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0"),
		44);
	assert_int_equal(
		swiw_verbs_release_from_name("libibverbs.so.1.14.56.1"), 56);
	assert_int_equal(swiw_verbs_release_from_name("libibverbs.so.1.11.38"),
			 38);
	assert_int_equal(swiw_verbs_release_from_name("libibverbs.so.1"), -1);
	assert_int_equal(swiw_verbs_release_from_name("libibverbs.so.2.1.44.0"),
			 -1);
	assert_int_equal(swiw_verbs_release_from_name("libmlx5.so.1.24.44.0"),
			 -1);
	assert_int_equal(swiw_verbs_release_from_name("libibverbs.so.1.x.44"),
			 -1);
	assert_int_equal(swiw_verbs_release_from_name(""), -1);
}

static void test_loaded_library(void **state)
{
	char why[512] = "";
	void *sym;

	(void)state;
	sym = dlvsym(RTLD_DEFAULT, "_verbs_init_and_alloc_context",
		     SWIW_VERBS_PABI);
	assert_non_null(sym);
	/* This machine's libibverbs (Debian 12: 44) is in the range. */
	assert_int_equal(swiw_verbs_abi_check(sym, why, sizeof(why)), 0);
	assert_int_equal(swiw_verbs_abi_check(NULL, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "IBVERBS_PRIVATE_34"));
	/* A symbol that lives outside any libibverbs file name. */
	assert_int_equal(swiw_verbs_abi_check((void *)test_loaded_library, why,
					      sizeof(why)),
			 -1);
	assert_non_null(strstr(why, "not a libibverbs release"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ops_slots),
		cmocka_unit_test(test_release_names),
		cmocka_unit_test(test_loaded_library),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
