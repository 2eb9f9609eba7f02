/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the RC robustness tests share (test_robust.c, test_procs.c):
 * connecting a QP to a peer by GID and QP number, and waits for
 * completions, async events and QP states that give up after a bound
 * instead of hanging. Include after <cmocka.h>.
 */
#ifndef SWIW_RC_TEST_H
#define SWIW_RC_TEST_H

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_test.h"

#define RT_ACC                                              \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
	 IBV_ACCESS_REMOTE_READ)

static inline long rt_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static inline long rt_now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static void rt_alarm(int sig)
{
	static const char m[] = "test timed out (alarm)\n";

	(void)sig;
	if (write(2, m, sizeof(m) - 1) < 0)
		_exit(3);
	_exit(3);
}

/* A test that hangs anyway ends the program with a message, not a hang. */
static inline void rt_arm(unsigned int seconds)
{
	signal(SIGALRM, rt_alarm);
	alarm(seconds);
}

static inline struct ibv_qp *rt_make_qp(struct ibv_pd *pd, struct ibv_cq *scq,
					struct ibv_cq *rcq, uint32_t depth)
{
	struct ibv_qp_init_attr a = {
		.send_cq = scq,
		.recv_cq = rcq,
		.cap = { .max_send_wr = depth,
			 .max_recv_wr = depth,
			 .max_send_sge = 4,
			 .max_recv_sge = 4,
			 .max_inline_data = 128 },
		.qp_type = IBV_QPT_RC,
	};

	return ibv_create_qp(pd, &a);
}

/* INIT, RTR to (@gid, @peer), RTS: as any verbs program connects. */
static inline int rt_to_rts(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint32_t peer)
{
	return verbs_to_rts_gid(qp, gid, peer);
}

static inline int rt_set_state(struct ibv_qp *qp, enum ibv_qp_state st)
{
	struct ibv_qp_attr a = { .qp_state = st };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

static inline int rt_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return -1;
	return (int)a.qp_state;
}

/* Waits up to @ms for @qp to report @st; returns the last state seen. */
static inline int rt_wait_state(struct ibv_qp *qp, enum ibv_qp_state st, int ms)
{
	long end = rt_now_ms() + ms;
	int s;

	while ((s = rt_state(qp)) != (int)st && rt_now_ms() < end)
		usleep(2000);
	return s;
}

/* Polls until @n completions arrived or @ms passed; returns how many. */
static inline int rt_wait(struct ibv_cq *cq, struct ibv_wc *wc, int n, int ms)
{
	long end = rt_now_ms() + ms;
	int got = 0, r;

	while (got < n) {
		r = ibv_poll_cq(cq, n - got, wc + got);
		if (r < 0)
			return -1;
		got += r;
		if (!r) {
			if (rt_now_ms() > end)
				break;
			usleep(200);
		}
	}
	return got;
}

/* Completions until @quiet_ms pass without one (or @max); how many. */
static inline int rt_collect(struct ibv_cq *cq, struct ibv_wc *wc, int max,
			     int quiet_ms)
{
	long last = rt_now_ms();
	int n = 0, r;

	while (n < max) {
		r = ibv_poll_cq(cq, max - n, wc + n);
		if (r < 0)
			return -1;
		if (r > 0) {
			n += r;
			last = rt_now_ms();
		} else if (rt_now_ms() - last > quiet_ms) {
			break;
		} else {
			usleep(1000);
		}
	}
	return n;
}

/* Exactly @n expected: waits up to @ms for them, then 50 ms for any
 * extra one; returns how many came. */
static inline int rt_expect(struct ibv_cq *cq, struct ibv_wc *wc, int max,
			    int n, int ms)
{
	int got = rt_wait(cq, wc, n, ms);

	if (got < 0 || got < n)
		return got;
	return got + rt_collect(cq, wc + got, max - got, 50);
}

/* Completions until the one of @last_id (which ends a stream that was
 * cut) or @ms passed, then 50 ms for any extra one; how many. */
static inline int rt_drain(struct ibv_cq *cq, struct ibv_wc *wc, int max,
			   uint64_t last_id, int ms)
{
	long end = rt_now_ms() + ms;
	int n = 0, r;

	while (n < max && (!n || wc[n - 1].wr_id != last_id)) {
		r = ibv_poll_cq(cq, 1, wc + n);
		if (r < 0)
			return -1;
		n += r;
		if (!r) {
			if (rt_now_ms() > end)
				return n;
			usleep(200);
		}
	}
	return n + rt_collect(cq, wc + n, max - n, 50);
}

/*
 * The type of the first async event of @ctx for @qp within @ms (others
 * are dropped), -1 if none. The async fd is expected to be non-blocking.
 */
static inline int rt_event(struct ibv_context *ctx, struct ibv_qp *qp, int ms)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	long end = rt_now_ms() + ms;

	while (rt_now_ms() < end) {
		if (poll(&p, 1, 50) <= 0)
			continue;
		if (ibv_get_async_event(ctx, &ev))
			continue;
		ibv_ack_async_event(&ev);
		if (ev.element.qp == qp)
			return (int)ev.event_type;
	}
	return -1;
}

static inline void rt_nonblock_async(struct ibv_context *ctx)
{
	int fl = fcntl(ctx->async_fd, F_GETFL);

	fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
}

static inline void rt_fill(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + seed + (i >> 8));
}

static inline int rt_post_recv(struct ibv_qp *qp, uint64_t id, void *addr,
			       uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 },
			   *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

/* One WR; @sge may be NULL for a zero-length one. */
static inline int rt_post(struct ibv_qp *qp, uint64_t id, enum ibv_wr_opcode op,
			  struct ibv_sge *sge, unsigned int flags,
			  uint64_t raddr, uint32_t rkey)
{
	struct ibv_send_wr wr = { .wr_id = id,
				  .sg_list = sge,
				  .num_sge = sge ? 1 : 0,
				  .opcode = op,
				  .send_flags = flags },
			   *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

/*
 * Send completions of WRs 0..@nwr-1 (signaled as @sig says) in @wc: ids
 * in order, each at most once; before the first failure only signaled
 * successes; the first failure has @first_err (or any status but success
 * if @first_err is -1); every WR after it completes flushed. Returns the
 * id of the first failure, @nwr if none.
 */
static inline int rt_check_stream(const struct ibv_wc *wc, int n, int nwr,
				  const bool *sig, int first_err)
{
	int i, e = nwr, next = 0;

	for (i = 0; i < n; i++) {
		int id = (int)wc[i].wr_id;

		if (id < next || id >= nwr) {
			fprintf(stderr,
				"completion %d: wr_id %d out of order\n", i,
				id);
			fail();
		}
		if (e == nwr && wc[i].status == IBV_WC_SUCCESS) {
			assert_true(sig[id]);
			next = id + 1;
			continue;
		}
		if (e == nwr) {
			e = id;
			fprintf(stderr, "first failure: wr %d %s\n", id,
				ibv_wc_status_str(wc[i].status));
			if (first_err >= 0)
				assert_int_equal(wc[i].status, first_err);
			else
				assert_int_not_equal(wc[i].status,
						     IBV_WC_SUCCESS);
			/* Nothing signaled before it may be missing. */
			for (int j = next; j < id; j++)
				assert_false(sig[j]);
		} else {
			if (id != next)
				fprintf(stderr, "wr %d missing after failure\n",
					next);
			assert_int_equal(id, next);
			if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
				fprintf(stderr, "wr %d: %s after failure\n", id,
					ibv_wc_status_str(wc[i].status));
			assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
		}
		next = id + 1;
	}
	if (e < nwr) {
		if (next != nwr)
			fprintf(stderr, "wrs %d..%d never completed\n", next,
				nwr - 1);
		assert_int_equal(next, nwr);
	} else {
		/* No failure: every signaled WR completed. */
		for (int j = next; j < nwr; j++) {
			if (sig[j])
				fprintf(stderr,
					"wr %d (signaled) never completed: %d completions, all successes\n",
					j, n);
			assert_false(sig[j]);
		}
	}
	return e;
}

#endif /* SWIW_RC_TEST_H */
