// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RC QPs of two processes over swiw_lo. Each test fork()s before anything
 * verbs-related is open (the child inherits swiw-run's LD_PRELOAD); the
 * two exchange GID, QP numbers, rkey and address over a socketpair and
 * connect by ibv_modify_qp. The child's registered memory is a
 * MAP_SHARED anonymous region, so the parent can check what its WRITEs
 * placed there. One test per run (argv[1] is a cmocka filter), so a fork
 * never happens after an earlier test's verbs threads existed.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

#include "rc_test.h"
#include "verbs_test.h"

#define REGION (4u << 20)
#define NQP 100

/* What one side tells the other. */
struct info {
	union ibv_gid gid;
	uint32_t qpn[NQP];
	uint32_t rkey;
	uint64_t addr;
};

struct fx {
	int sock;
	pid_t child;
	uint8_t *shared; /* the child's registered region, seen by both */
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	uint8_t *buf;
	struct ibv_mr *mr;
	struct ibv_qp *qp[NQP];
	int nqp;
};

/* Whole transfers on the socketpair, 20 s at most; 0 or -1. */
static int xfer(int fd, void *p, size_t n, bool out)
{
	struct pollfd pf = { .fd = fd, .events = out ? POLLOUT : POLLIN };
	uint8_t *b = p;
	ssize_t r;

	while (n) {
		if (poll(&pf, 1, 20000) != 1)
			return -1;
		r = out ? write(fd, b, n) : read(fd, b, n);
		if (r <= 0)
			return -1;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Opens swiw_lo, a PD, CQs, a buffer (@region if given) and @nqp QPs. */
static int open_side(struct fx *f, uint8_t *region, int nqp, uint32_t depth)
{
	f->ctx = open_swiw_lo(&f->list);
	if (!f->ctx)
		return -1;
	rt_nonblock_async(f->ctx);
	f->pd = ibv_alloc_pd(f->ctx);
	f->scq = ibv_create_cq(f->ctx, 4096, NULL, NULL, 0);
	f->rcq = ibv_create_cq(f->ctx, 4096, NULL, NULL, 0);
	f->buf = region ? region : calloc(1, REGION);
	if (!f->pd || !f->scq || !f->rcq || !f->buf)
		return -1;
	f->mr = ibv_reg_mr(f->pd, f->buf, REGION, RT_ACC);
	if (!f->mr)
		return -1;
	for (f->nqp = 0; f->nqp < nqp; f->nqp++) {
		f->qp[f->nqp] = rt_make_qp(f->pd, f->scq, f->rcq, depth);
		if (!f->qp[f->nqp])
			return -1;
	}
	return 0;
}

static void close_side(struct fx *f, bool own_buf)
{
	for (int i = 0; i < f->nqp; i++)
		if (f->qp[i])
			ibv_destroy_qp(f->qp[i]);
	if (f->mr)
		ibv_dereg_mr(f->mr);
	if (f->scq)
		ibv_destroy_cq(f->scq);
	if (f->rcq)
		ibv_destroy_cq(f->rcq);
	if (f->pd)
		ibv_dealloc_pd(f->pd);
	if (f->ctx)
		ibv_close_device(f->ctx);
	if (f->list)
		ibv_free_device_list(f->list);
	if (own_buf)
		free(f->buf);
}

/* Sends our info, reads the peer's, connects all QPs pairwise. */
static int exchange_connect(struct fx *f, struct info *peer)
{
	struct info me = { .rkey = f->mr->rkey, .addr = (uintptr_t)f->buf };
	int i;

	if (ibv_query_gid(f->ctx, 1, 0, &me.gid))
		return -1;
	for (i = 0; i < f->nqp; i++)
		me.qpn[i] = f->qp[i]->qp_num;
	if (xfer(f->sock, &me, sizeof(me), true) ||
	    xfer(f->sock, peer, sizeof(*peer), false))
		return -1;
	for (i = 0; i < f->nqp; i++)
		if (rt_to_rts(f->qp[i], &peer->gid, peer->qpn[i]))
			return -1;
	return 0;
}

enum child_mode {
	CH_PAUSE,
	CH_SENDER,
	CH_STREAM,
	CH_MANY,
	CH_PINGER,
	CH_BOTHWAYS
};

#define CH_RECVS 64
#define CH_SENDS 200
#define CH_STOP (REGION / 4) /* the parent's stop flag, in the child's region */
#define BW_SENDS 512 /* SENDs in test_polled_both_ways, each of... */
#define BW_LEN (64u << 10)
#define BW_RECVS 250 /* CH_BOTHWAYS: its receives of 1 MiB posted */
#define BW_ID (1ull << 40) /* their wr_id, above any ping's */
#define BW_MARK 65 /* the length of the SEND that announces them */
#define BW_GAP_US 50 /* the child's small SENDs meanwhile, this far apart */

/* Busy-polls @cq for one good completion, 5 s at most; 0 or -1. */
static int spin_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	long end = rt_now_ms() + 5000;
	int r;

	while (!(r = ibv_poll_cq(cq, 1, wc)) && rt_now_ms() < end)
		;
	return r == 1 && wc->status == IBV_WC_SUCCESS ? 0 : -1;
}

/*
 * CH_BOTHWAYS: pings the parent as CH_PINGER does, into receives of
 * 1 MiB, until a SEND of BW_MARK octets says the parent's big SENDs
 * follow; from then on it sends a small SEND every BW_GAP_US, unanswered,
 * so that the parent's input goes on while they come (answers would wait
 * behind them), until it has BW_SENDS of them; then says so and waits.
 */
static int both_ways(struct fx *f)
{
	struct ibv_sge sge = { (uintptr_t)f->shared, 64, f->mr->lkey };
	struct ibv_wc wc[16];
	int i, n, got = 0, out = 0;
	long end = rt_now_ms() + 60000;
	bool ping_out = false, streaming = false;
	long next = 0;
	uint8_t ok;

	for (i = 0; i < BW_RECVS; i++)
		if (rt_post_recv(f->qp[0], 0, f->shared + REGION / 2, 1u << 20,
				 f->mr->lkey))
			return 11;
	/* The parent's go. */
	if (xfer(f->sock, &ok, 1, false))
		return 15;
	while (got < BW_SENDS && rt_now_ms() < end) {
		/* Paced by the clock, polling meanwhile: a sleep would let
		 * this side's own engine take over its socket. */
		if (streaming ? out < 8 && rt_now_us() >= next : !ping_out) {
			if (rt_post(f->qp[0], 0, IBV_WR_SEND, &sge,
				    IBV_SEND_SIGNALED, 0, 0))
				return 16;
			ping_out = true;
			out++;
			next = rt_now_us() + BW_GAP_US;
		}
		n = ibv_poll_cq(f->scq, 16, wc);
		for (i = 0; i < n; i++, out--)
			if (wc[i].status)
				return 17;
		n = ibv_poll_cq(f->rcq, 16, wc);
		if (n < 0)
			return 17;
		for (i = 0; i < n; i++) {
			if (wc[i].status)
				return 17;
			if (wc[i].byte_len == BW_LEN)
				got++;
			else if (wc[i].byte_len == BW_MARK)
				streaming = true;
			else
				ping_out = false; /* answered */
			if (rt_post_recv(f->qp[0], 0, f->shared + REGION / 2,
					 1u << 20, f->mr->lkey))
				return 11;
		}
	}
	if (got < BW_SENDS) {
		fprintf(stderr, "child: %d of %d big SENDs\n", got, BW_SENDS);
		return 18;
	}
	ok = 1;
	if (xfer(f->sock, &ok, 1, true))
		return 19;
	for (;;)
		pause();
}

/*
 * The child: opens its side on the shared region, fills its upper half
 * with a pattern, connects, reports ready (one octet), then either sits
 * in pause() until killed (CH_PAUSE, CH_STREAM; CH_SENDER first posts
 * CH_SENDS SENDs of 1 MiB once the parent says go) or checks its
 * receives (CH_MANY) and reports the result. Exit codes say where it failed.
 */
static int child_main(struct fx *f, enum child_mode mode)
{
	struct info peer;
	struct ibv_wc wc[NQP];
	uint8_t ok = 1;
	int i, n;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(60);
	if (open_side(f, f->shared, mode == CH_MANY ? NQP : 1, 256))
		return 10;
	rt_fill(f->shared + REGION / 2, REGION / 2, 77);
	if (exchange_connect(f, &peer))
		return 12;
	/* Receives once the QPs are past RESET, before the parent sends. */
	for (i = 0; mode == CH_STREAM && i < CH_RECVS; i++)
		if (rt_post_recv(f->qp[0], (uint64_t)i, f->shared, 1u << 20,
				 f->mr->lkey))
			return 11;
	for (i = 0; mode == CH_MANY && i < NQP; i++)
		if (rt_post_recv(f->qp[i], (uint64_t)i, f->shared + i * 16384u,
				 4096, f->mr->lkey))
			return 11;
	if (xfer(f->sock, &ok, 1, true))
		return 13;
	if (mode == CH_SENDER) {
		struct ibv_sge sge = { (uintptr_t)f->shared, 1u << 20,
				       f->mr->lkey };

		if (xfer(f->sock, &ok, 1, false))
			return 15;
		/*
		 * In bursts of 10 MiB, 20 ms apart: the whole stream takes
		 * 400 ms at least, however fast the engines are, so the kill
		 * the parent sends at its first completion lands in it.
		 */
		for (i = 0; i < CH_SENDS; i++) {
			if (rt_post(f->qp[0], (uint64_t)i, IBV_WR_SEND, &sge,
				    IBV_SEND_SIGNALED, 0, 0))
				return 16;
			if (i % 10 == 9)
				usleep(20000);
		}
	}
	if (mode == CH_BOTHWAYS)
		return both_ways(f);
	if (mode == CH_PINGER) {
		struct ibv_sge sge = { (uintptr_t)f->shared, 64, f->mr->lkey };

		/* A ping-pong of small SENDs, which the parent polls for,
		 * until it sets the flag. */
		if (xfer(f->sock, &ok, 1, false))
			return 15;
		for (i = 0;
		     !__atomic_load_n(&f->shared[CH_STOP], __ATOMIC_ACQUIRE);
		     i++) {
			if (rt_post_recv(f->qp[0], (uint64_t)i,
					 f->shared + 65536, 64, f->mr->lkey) ||
			    rt_post(f->qp[0], (uint64_t)i, IBV_WR_SEND, &sge,
				    IBV_SEND_SIGNALED, 0, 0))
				return 16;
			if (spin_one(f->rcq, wc) || spin_one(f->scq, wc))
				return 17;
		}
		/* The parent stopped polling: its thread places this. */
		if (xfer(f->sock, &ok, 1, false))
			return 15;
		rt_fill(f->shared, 4096, 91);
		sge.length = 4096;
		if (rt_post(f->qp[0], 1u << 20, IBV_WR_RDMA_WRITE, &sge,
			    IBV_SEND_SIGNALED, peer.addr + 8192, peer.rkey))
			return 16;
		if (rt_wait(f->scq, wc, 1, 5000) != 1 || wc[0].status)
			return 17;
	}
	if (mode != CH_MANY) {
		for (;;)
			pause();
	}
	n = rt_wait(f->rcq, wc, NQP, 20000);
	ok = n == NQP;
	for (i = 0; i < n; i++)
		ok &= wc[i].status == IBV_WC_SUCCESS &&
		      wc[i].byte_len == 4096 && wc[i].wr_id < NQP &&
		      wc[i].qp_num == f->qp[wc[i].wr_id]->qp_num;
	if (!ok)
		fprintf(stderr, "child: %d of %d receives, or a bad one\n", n,
			NQP);
	if (xfer(f->sock, &ok, 1, true) || xfer(f->sock, &ok, 1, false))
		return 14;
	close_side(f, false);
	return 0;
}

/* The child's exit status, waiting up to @ms; -1 if it did not exit. */
static int reap(pid_t pid, int ms)
{
	long end = rt_now_ms() + ms;
	int status;

	do {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		usleep(5000);
	} while (rt_now_ms() < end);
	return -1;
}

/* Forks the child (nothing verbs-related is open yet), then opens the
 * parent's side with @nqp QPs and connects them to the child's. */
static void start(struct fx *f, enum child_mode mode, int nqp,
		  struct info *peer)
{
	int sv[2];
	uint8_t ok = 0;

	rt_arm(90);
	f->shared = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(f->shared != MAP_FAILED);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fflush(NULL);
	f->child = fork();
	assert_true(f->child >= 0);
	if (!f->child) {
		close(sv[0]);
		f->sock = sv[1];
		_exit(child_main(f, mode));
	}
	close(sv[1]);
	f->sock = sv[0];
	assert_int_equal(open_side(f, NULL, nqp, 1024), 0);
	if (exchange_connect(f, peer) || xfer(f->sock, &ok, 1, false)) {
		int status = reap(f->child, 2000);

		fprintf(stderr, "no connection; child status %#x\n", status);
		f->child = 0;
		fail();
	}
	assert_int_equal(ok, 1);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	*state = f;
	return f ? 0 : -1;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (f->child > 0 && reap(f->child, 0) == -1) {
		kill(f->child, SIGKILL);
		reap(f->child, 5000);
	}
	close_side(f, true);
	if (f->shared && f->shared != MAP_FAILED)
		munmap(f->shared, REGION);
	close(f->sock);
	free(f);
	alarm(0);
	return 0;
}

/*
 * A one-sided WRITE and READ complete while the target process sits in
 * pause(): its engine serves them, the application does nothing.
 */
static void test_write_read_paused(void **state)
{
	struct fx *f = *state;
	struct info peer;
	struct ibv_sge ws, rs;
	struct ibv_wc wc[2];
	uint8_t want[4096];
	int status;

	start(f, CH_PAUSE, 1, &peer);
	ws = (struct ibv_sge){ (uintptr_t)f->buf, 1u << 20, f->mr->lkey };
	rs = (struct ibv_sge){ (uintptr_t)f->buf + (2u << 20), 1u << 20,
			       f->mr->lkey };
	rt_fill(f->buf, 1u << 20, 31);
	assert_int_equal(rt_post(f->qp[0], 1, IBV_WR_RDMA_WRITE, &ws,
				 IBV_SEND_SIGNALED, peer.addr + 4096,
				 peer.rkey),
			 0);
	assert_int_equal(rt_post(f->qp[0], 2, IBV_WR_RDMA_READ, &rs,
				 IBV_SEND_SIGNALED, peer.addr + REGION / 2,
				 peer.rkey),
			 0);
	assert_int_equal(rt_wait(f->scq, wc, 2, 10000), 2);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[0].opcode, IBV_WC_RDMA_WRITE);
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[1].opcode, IBV_WC_RDMA_READ);
	/* The WRITE landed in the child's region, and nothing around it. */
	assert_memory_equal(f->shared + 4096, f->buf, 1u << 20);
	assert_int_equal(f->shared[4095], 0);
	assert_int_equal(f->shared[4096 + (1u << 20)], 0);
	/* The READ brought the child's pattern. */
	rt_fill(want, sizeof(want), 77);
	assert_memory_equal(f->buf + (2u << 20), want, sizeof(want));
	assert_memory_equal(f->buf + (2u << 20), f->shared + REGION / 2,
			    1u << 20);
	/* Still paused, not dead. */
	assert_int_equal(reap(f->child, 0), -1);
	kill(f->child, SIGKILL);
	status = reap(f->child, 5000);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	f->child = 0;
}

/*
 * RDMA WRITEs posted back to back by a program that then makes no call:
 * in poll mode all but the first wait in the SQ for the next pump (post
 * coalescing, swiw(7)), which such a program never runs, and nothing
 * comes back from the target to wake its engine. Its progress thread,
 * asleep since the program went quiet, must be rung and send them: all
 * three land in the paused child's region with no poll at all.
 */
static void test_burst_quiet(void **state)
{
	struct fx *f = *state;
	struct info peer;
	struct ibv_wc wc[3];
	uint8_t want[3][4096];
	int i, status;

	start(f, CH_PAUSE, 1, &peer);
	for (i = 0; i < 3; i++) {
		rt_fill(f->buf + i * 4096u, 4096, 40 + i);
		memcpy(want[i], f->buf + i * 4096u, 4096);
	}
	/* Quiet first: the engine's thread goes to sleep on the sockets. */
	usleep(50000);
	for (i = 0; i < 3; i++) {
		struct ibv_sge sge = { (uintptr_t)f->buf + i * 4096u, 4096,
				       f->mr->lkey };

		assert_int_equal(
			rt_post(f->qp[0], (uint64_t)i, IBV_WR_RDMA_WRITE, &sge,
				IBV_SEND_SIGNALED, peer.addr + 4096 + i * 8192u,
				peer.rkey),
			0);
	}
	for (i = 0; i < 500; i++) {
		if (!memcmp((const void *)(f->shared + 4096 + 2 * 8192u),
			    want[2], 4096))
			break;
		usleep(10000);
	}
	for (i = 0; i < 3; i++)
		assert_memory_equal(f->shared + 4096 + i * 8192u, want[i],
				    4096);
	assert_int_equal(rt_wait(f->scq, wc, 3, 10000), 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(wc[i].wr_id, i);
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
	}
	kill(f->child, SIGKILL);
	status = reap(f->child, 5000);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	f->child = 0;
}

/*
 * A WRITE completes once all of it is with TCP, never before: the
 * program may then reuse the buffer. The target is stopped, so that
 * most of a 4 MiB WRITE waits behind its closed window; the buffer is
 * overwritten the moment the completion comes; what lands must be what
 * was posted. (A txd in the middle of the message asks for an event now
 * and then; one of those completed the WR early, and perftest's
 * ib_write_lat lost its last WRITE when the program exited on it.)
 */
static void test_write_complete_at_end(void **state)
{
	struct fx *f = *state;
	struct info peer;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint8_t *want;
	long t0;
	int n = 0, status, stopped = 1;

	start(f, CH_PAUSE, 1, &peer);
	rt_fill(f->buf, REGION, 19);
	assert_int_equal(kill(f->child, SIGSTOP), 0);
	usleep(20000);
	sge = (struct ibv_sge){ (uintptr_t)f->buf, REGION, f->mr->lkey };
	assert_int_equal(rt_post(f->qp[0], 7, IBV_WR_RDMA_WRITE, &sge,
				 IBV_SEND_SIGNALED, peer.addr, peer.rkey),
			 0);
	/* A second in which the target reads nothing, then on. */
	for (t0 = rt_now_ms(); n == 0;) {
		n = ibv_poll_cq(f->scq, 1, &wc);
		if (n == 0 && stopped && rt_now_ms() - t0 > 1000) {
			assert_int_equal(kill(f->child, SIGCONT), 0);
			stopped = 0;
		}
		assert_true(n >= 0 && rt_now_ms() - t0 < 20000);
	}
	memset(f->buf, 0xee, REGION);
	fprintf(stderr, "completed %s the target went on\n",
		stopped ? "before" : "after");
	if (stopped)
		assert_int_equal(kill(f->child, SIGCONT), 0);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	/* Everything posted, then nothing more, lands: the last octets
	 * come last. */
	want = malloc(REGION);
	assert_non_null(want);
	rt_fill(want, REGION, 19);
	for (t0 = rt_now_ms(); rt_now_ms() - t0 < 10000; usleep(10000))
		if (!memcmp(f->shared + REGION - 4096, want + REGION - 4096,
			    4096))
			break;
	n = memcmp(f->shared, want, REGION);
	free(want);
	assert_int_equal(n, 0);
	kill(f->child, SIGKILL);
	status = reap(f->child, 5000);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	f->child = 0;
}

#define NWR 200
#define NWR_AHEAD 30

/* Posts WRs @from..@to-1 of the stream, in chains of 10. */
static void post_stream(struct fx *f, const struct info *peer,
			struct ibv_sge *sge, bool *sig, int *nsend, int from,
			int to)
{
	struct ibv_send_wr wr[10], *bad;
	int i, k;

	for (i = from; i < to; i += 10) {
		for (k = 0; k < 10; k++) {
			int id = i + k;
			bool send = id % 4 == 3 && *nsend < CH_RECVS;

			sig[id] = id % 3 != 1;
			*nsend += send;
			wr[k] = (struct ibv_send_wr){
				.wr_id = (uint64_t)id,
				.next = k < 9 ? &wr[k + 1] : NULL,
				.sg_list = sge,
				.num_sge = 1,
				.opcode = send ? IBV_WR_SEND :
						 IBV_WR_RDMA_WRITE,
				.send_flags = sig[id] ? IBV_SEND_SIGNALED : 0,
			};
			wr[k].wr.rdma.remote_addr = peer->addr;
			wr[k].wr.rdma.rkey = peer->rkey;
		}
		assert_int_equal(ibv_post_send(f->qp[0], wr, &bad), 0);
	}
}

/*
 * The peer process is SIGKILLed with a long stream of 1 MiB WRITEs and
 * SENDs outstanding: every WR completes exactly once (successes, then a
 * failure, then flushes), QP_FATAL arrives and the QP is in ERR, all
 * within a bound (the kernel resets the connection; swiw(7) gives EOF a
 * 100 ms grace).
 *
 * The first NWR_AHEAD WRs go before the kill, the rest once the child is
 * gone: a descheduled test thread must not let the live child take the
 * whole stream before the kill lands (CI saw that once), so at least the
 * tail of the stream cannot succeed.
 */
static void test_peer_sigkill(void **state)
{
	struct fx *f = *state;
	struct info peer;
	struct ibv_sge sge;
	static struct ibv_wc wc[2 * NWR];
	bool sig[NWR];
	int i, n, e, nsend = 0, status;
	long t0;

	start(f, CH_STREAM, 1, &peer);
	sge = (struct ibv_sge){ (uintptr_t)f->buf, 1u << 20, f->mr->lkey };
	for (i = 0; i < 16; i++)
		assert_int_equal(rt_post_recv(f->qp[0], 1000 + (uint64_t)i,
					      f->buf + (2u << 20), 4096,
					      f->mr->lkey),
				 0);
	post_stream(f, &peer, &sge, sig, &nsend, 0, NWR_AHEAD);
	/* Mid-transfer: once the first completion is in. */
	assert_int_equal(rt_wait(f->scq, wc, 1, 10000), 1);
	assert_int_equal(kill(f->child, SIGKILL), 0);
	t0 = rt_now_ms();
	status = reap(f->child, 5000);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	f->child = 0;
	post_stream(f, &peer, &sge, sig, &nsend, NWR_AHEAD, NWR);
	n = 1 + rt_drain(f->scq, wc + 1, 2 * NWR - 1, NWR - 1, 10000);
	e = rt_check_stream(wc, n, NWR, sig, -1);
	assert_true(e < NWR); /* the tail came after the kill */
	assert_int_equal(rt_event(f->ctx, f->qp[0], 2000), IBV_EVENT_QP_FATAL);
	fprintf(stderr, "all done %ld ms after the kill\n", rt_now_ms() - t0);
	assert_true(rt_now_ms() - t0 < 5000);
	assert_int_equal(rt_state(f->qp[0]), IBV_QPS_ERR);
	n = rt_expect(f->rcq, wc, 2 * NWR, 16, 5000);
	assert_int_equal(n, 16);
	for (i = 0; i < n; i++) {
		assert_int_equal(wc[i].wr_id, 1000 + (uint64_t)i);
		assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
	}
	assert_int_equal(rt_post(f->qp[0], 5000, IBV_WR_SEND, &sge,
				 IBV_SEND_SIGNALED, 0, 0),
			 0);
	assert_int_equal(rt_expect(f->scq, wc, 4, 1, 5000), 1);
	assert_int_equal(wc[0].wr_id, 5000);
	assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
}

/*
 * The peer process is SIGKILLed while it SENDs 1 MiB messages into our
 * receives: those that arrived whole complete successfully, in order;
 * the one cut in the middle fails, all behind it flush, none completes
 * as a success; QP_FATAL arrives.
 */
static void test_peer_sigkill_sender(void **state)
{
	struct fx *f = *state;
	struct info peer;
	static struct ibv_wc wc[2 * CH_SENDS];
	uint8_t go = 1;
	int i, n, ok = 0, status;

	start(f, CH_SENDER, 1, &peer);
	for (i = 0; i < CH_SENDS; i++)
		assert_int_equal(rt_post_recv(f->qp[0], (uint64_t)i, f->buf,
					      1u << 20, f->mr->lkey),
				 0);
	assert_int_equal(xfer(f->sock, &go, 1, true), 0);
	assert_int_equal(rt_wait(f->rcq, wc, 1, 10000), 1);
	assert_int_equal(kill(f->child, SIGKILL), 0);
	status = reap(f->child, 5000);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	f->child = 0;
	n = 1 + rt_drain(f->rcq, wc + 1, 2 * CH_SENDS - 1, CH_SENDS - 1, 10000);
	assert_int_equal(n, CH_SENDS);
	for (i = 0; i < n; i++) {
		assert_int_equal(wc[i].wr_id, (uint64_t)i);
		if (wc[i].status == IBV_WC_SUCCESS) {
			assert_int_equal(ok, i);
			assert_int_equal(wc[i].byte_len, 1u << 20);
			ok++;
		} else if (i == ok) {
			/* The receive the cut message was filling: FATAL_ERR
			 * (row SWIW_V_LLP_LOST), or a flush if the cut fell
			 * between messages. */
			fprintf(stderr, "receive %d: %s\n", i,
				ibv_wc_status_str(wc[i].status));
			assert_true(wc[i].status == IBV_WC_FATAL_ERR ||
				    wc[i].status == IBV_WC_WR_FLUSH_ERR);
		} else {
			assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
		}
	}
	fprintf(stderr, "%d of %d arrived before the kill\n", ok, CH_SENDS);
	assert_true(ok < CH_SENDS);
	assert_int_equal(rt_event(f->ctx, f->qp[0], 2000), IBV_EVENT_QP_FATAL);
	assert_int_equal(rt_state(f->qp[0]), IBV_QPS_ERR);
	assert_int_equal(rt_collect(f->scq, wc, 4, 50), 0);
}

/* 100 QPs in each process, pairwise connected, each a SEND and a WRITE;
 * then both destroy theirs cleanly. */
static void test_hundred_qps(void **state)
{
	struct fx *f = *state;
	struct info peer;
	static struct ibv_wc wc[4 * NQP];
	int i, n, status, seen[2 * NQP] = { 0 };
	uint8_t ok;

	start(f, CH_MANY, NQP, &peer);
	rt_fill(f->buf, NQP * 16384u, 3);
	for (i = 0; i < NQP; i++) {
		struct ibv_sge ss = { (uintptr_t)f->buf + i * 16384u, 4096,
				      f->mr->lkey };
		struct ibv_sge ws = { (uintptr_t)f->buf + i * 16384u + 4096,
				      4096, f->mr->lkey };

		/* The WRITE first: the receive then says it was placed. */
		assert_int_equal(
			rt_post(f->qp[i], 2 * (uint64_t)i + 1,
				IBV_WR_RDMA_WRITE, &ws, IBV_SEND_SIGNALED,
				peer.addr + i * 16384u + 8192, peer.rkey),
			0);
		assert_int_equal(rt_post(f->qp[i], 2 * (uint64_t)i, IBV_WR_SEND,
					 &ss, IBV_SEND_SIGNALED, 0, 0),
				 0);
	}
	n = rt_wait(f->scq, wc, 2 * NQP, 30000);
	assert_int_equal(n, 2 * NQP);
	for (i = 0; i < n; i++) {
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_true(wc[i].wr_id < 2 * NQP);
		seen[wc[i].wr_id]++;
	}
	for (i = 0; i < 2 * NQP; i++)
		assert_int_equal(seen[i], 1);
	/* The child saw every receive right; then it is all in place. */
	assert_int_equal(xfer(f->sock, &ok, 1, false), 0);
	assert_int_equal(ok, 1);
	for (i = 0; i < NQP; i++) {
		assert_memory_equal(f->shared + i * 16384u, f->buf + i * 16384u,
				    4096);
		assert_memory_equal(f->shared + i * 16384u + 8192,
				    f->buf + i * 16384u + 4096, 4096);
	}
	for (i = 0; i < NQP; i++) {
		assert_int_equal(ibv_destroy_qp(f->qp[i]), 0);
		f->qp[i] = NULL;
	}
	assert_int_equal(xfer(f->sock, &ok, 1, true), 0);
	status = reap(f->child, 10000);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	f->child = 0;
	assert_int_equal(rt_collect(f->scq, wc, 4, 100), 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

/* The inodes of the host's TCP sockets, up to @max; how many. */
static int tcp_inodes(unsigned long *ino, int max)
{
	static const char *const tabs[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	char line[512];
	int nino = 0;
	FILE *fp;

	for (size_t t = 0; t < 2; t++) {
		fp = fopen(tabs[t], "r");
		if (!fp)
			continue;
		while (fgets(line, sizeof(line), fp) && nino < max) {
			unsigned long i;

			/* sl local rem st txq:rxq tr:when retr uid timeout inode */
			if (sscanf(line,
				   "%*s %*s %*s %*s %*s %*s %*s %*s %*s %lu",
				   &i) == 1 &&
			    i)
				ino[nino++] = i;
		}
		fclose(fp);
	}
	return nino;
}

/* This process's first TCP socket (its one stream's), or -1. */
static int stream_fd(void)
{
	unsigned long ino[256];
	int nino = tcp_inodes(ino, 256), fd;
	char path[64];
	struct stat st;

	for (fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (stat(path, &st) || !S_ISSOCK(st.st_mode))
			continue;
		for (int i = 0; i < nino; i++)
			if (ino[i] == (unsigned long)st.st_ino)
				return fd;
	}
	return -1;
}

/* The engine's epoll set and its one stream's socket, found once. */
struct watch {
	int epfd, sfd;
};

/* Finds them, once connected: false if that cannot be done. */
static bool watch_find(struct watch *w)
{
	char path[64], link[64];
	int fd;

	w->epfd = -1;
	for (fd = 0; fd < 1024 && w->epfd < 0; fd++) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = 0;
		if (!strcmp(link, "anon_inode:[eventpoll]"))
			w->epfd = fd;
	}
	w->sfd = stream_fd();
	return w->epfd >= 0 && w->sfd >= 0;
}

/*
 * Is the stream's socket in the engine's epoll set (/proc/self/fdinfo)?
 * One small read: a slow look would itself keep the program from its
 * input long enough for the engine to take the socket back. -1 if it
 * cannot be read.
 */
static int watched(const struct watch *w)
{
	char path[64], line[256];
	int in = 0, tfd;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", w->epfd);
	fp = fopen(path, "r");
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "tfd: %d", &tfd) == 1 && tfd == w->sfd)
			in = 1;
	fclose(fp);
	return in;
}

/*
 * Else the test proves nothing of the path it is for. The engine mutes
 * only a program that takes (nearly) all its input itself: on a host so
 * loaded that its progress thread keeps taking it while the program is
 * descheduled, it may not in time.
 */
static void skip_unmuted(struct fx *f, const char *when)
{
	kill(f->child, SIGKILL);
	reap(f->child, 5000);
	printf("SKIP (optional): the engine did not have the polled socket "
	       "out of its epoll set %s: the host is too loaded for the "
	       "path this test is for\n",
	       when);
	fflush(stdout);
	_exit(77);
}

/*
 * Starts a child in @mode (CH_PINGER or CH_BOTHWAYS) and answers its
 * pings, polling, until the engine has taken the socket out of its epoll
 * set (sock_mute, swiw_engine.c) and 2000 went by. CH_PINGER's ping-pong
 * then stops with no receive left posted on either side; CH_BOTHWAYS's
 * goes on, the socket out of the set at the last look. If that never
 * comes within 30 s (a host so loaded that the progress thread keeps
 * taking the input while the program is descheduled), the test cannot
 * see the path it is for: it says so and exits 77 (optional). Returns
 * the stream's socket.
 */
static int ping_until_muted(struct fx *f, enum child_mode mode,
			    struct info *peer)
{
	/* CH_BOTHWAYS: the ping-pong goes on, and the latest look must
	 * have found the socket out of the set. */
	bool keep = mode == CH_BOTHWAYS, now_out = false;
	struct ibv_wc wc[16];
	struct watch wt;
	uint8_t ok = 1;
	int n = 0, w, out_of_set = 0, i;
	long end;

	start(f, mode, 1, peer);
	/* CH_BOTHWAYS: room for the child's SENDs once they go unanswered,
	 * posted now, while nothing is waited for. */
	for (i = 0; i < (keep ? 1000 : 1); i++)
		assert_int_equal(rt_post_recv(f->qp[0], 0, f->buf + (1u << 20),
					      64, f->mr->lkey),
				 0);
	assert_int_equal(xfer(f->sock, &ok, 1, true), 0);
	end = rt_now_ms() + 30000;
	for (;;) {
		struct ibv_sge sge = { (uintptr_t)f->buf, 64, f->mr->lkey };
		int got = ibv_poll_cq(f->rcq, 1, wc);
		bool stop;

		assert_true(got >= 0);
		/* The send CQ's completions, taken as they come. */
		assert_true(ibv_poll_cq(f->scq, 16, wc + 1) >= 0);
		if (!got) {
			if (rt_now_ms() < end)
				continue;
			out_of_set = 0; /* the time is up between two pings */
			break;
		}
		assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
		if (n == 0)
			assert_true(watch_find(&wt));
		if (++n % 25 == 0) {
			w = watched(&wt);
			assert_true(w >= 0);
			out_of_set += !w;
			now_out = !w;
		}
		/* Seen out of the set, or never: the last ping answered. */
		stop = ((keep ? now_out : out_of_set) && n >= 2000) ||
		       rt_now_ms() >= end;
		if (stop && !keep)
			__atomic_store_n(&f->shared[CH_STOP], 1,
					 __ATOMIC_RELEASE);
		if (!stop || keep)
			assert_int_equal(rt_post_recv(f->qp[0], 0,
						      f->buf + (1u << 20), 64,
						      f->mr->lkey),
					 0);
		assert_int_equal(rt_post(f->qp[0], (uint64_t)n, IBV_WR_SEND,
					 &sge, IBV_SEND_SIGNALED, 0, 0),
				 0);
		if (stop)
			break;
	}
	if (!(keep ? now_out : out_of_set))
		skip_unmuted(f, "in 2000 pings");
	return wt.sfd;
}

/*
 * A program that takes its messages by polling has its stream's socket
 * out of the engine's epoll set; once it stops polling, the progress
 * thread must hear the socket again: an RDMA WRITE that comes while the
 * program makes no verbs call at all (it spins on memory) is placed all
 * the same.
 */
static void test_polled_then_quiet(void **state)
{
	struct fx *f = *state;
	struct info peer;
	uint8_t want[4096], seen[4096], ok = 1;
	int status;
	long end;

	ping_until_muted(f, CH_PINGER, &peer);
	/* No verbs call from here on. */
	assert_int_equal(xfer(f->sock, &ok, 1, true), 0);
	rt_fill(want, sizeof(want), 91);
	/* Memory read as the kernel sees it: the progress thread places
	 * there, and a plain read of ours would be a data race to TSan. */
	end = rt_now_ms() + 3000;
	do {
		struct iovec l = { seen, sizeof(seen) },
			     r = { f->buf + 8192, sizeof(seen) };

		usleep(100);
		assert_int_equal(process_vm_readv(getpid(), &l, 1, &r, 1, 0),
				 (ssize_t)sizeof(seen));
	} while (memcmp(seen, want, sizeof(want)) && rt_now_ms() < end);
	assert_memory_equal(seen, want, sizeof(want));
	assert_int_equal(reap(f->child, 0), -1);
	kill(f->child, SIGKILL);
	status = reap(f->child, 5000);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	f->child = 0;
}

/*
 * A muted socket whose sends back up comes back into the epoll set, which
 * alone reports transport room (the program's direct reads ask for input
 * only): 32 MiB go out in SENDs of BW_LEN through a 16 KiB send buffer,
 * from a program that took the socket out of the set by polling, while
 * the child's small SENDs keep its input coming. Every WR completes, each
 * side sees all of the other's. Without that return the transfer still
 * ends: a lower half whose transmission waits soon stops reading too
 * (its events owed), the input stops, and the mute lapses within
 * SWIW_ENG_MUTE_HOLD_NS and a nap; the test covers the path, the time
 * it saves is not asserted.
 */
static void test_polled_both_ways(void **state)
{
	struct fx *f = *state;
	struct info peer;
	struct ibv_wc wc[16];
	struct ibv_sge big, sge;
	int i, n, done = 0, posted = 0, status, fd, sndbuf = 16384;
	uint8_t ok = 0;
	long end;

	fd = ping_until_muted(f, CH_BOTHWAYS, &peer);
	/* A send buffer that fills at once, however fast the child reads:
	 * the lower half waits for room from here on, muted. */
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf,
				    sizeof(sndbuf)),
			 0);
	big = (struct ibv_sge){ (uintptr_t)f->buf + (2u << 20), BW_LEN,
				f->mr->lkey };
	sge = (struct ibv_sge){ (uintptr_t)f->buf, BW_MARK, f->mr->lkey };
	assert_int_equal(rt_post(f->qp[0], 0, IBV_WR_SEND, &sge,
				 IBV_SEND_SIGNALED, 0, 0),
			 0);
	/* The child's SENDs taken as they come, unanswered. */
	end = rt_now_ms() + 20000;
	while (done < BW_SENDS && rt_now_ms() < end) {
		/* A few at a time: a post's own pump of many would keep the
		 * program from its input, and the engine would take the
		 * socket back for that alone. */
		if (posted < BW_SENDS && posted - done < 4)
			assert_int_equal(rt_post(f->qp[0],
						 BW_ID + (uint64_t)posted++,
						 IBV_WR_SEND, &big,
						 IBV_SEND_SIGNALED, 0, 0),
					 0);
		n = ibv_poll_cq(f->rcq, 16, wc);
		assert_true(n >= 0);
		for (i = 0; i < n; i++) {
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			assert_int_equal(rt_post_recv(f->qp[0], 0,
						      f->buf + (1u << 20), 64,
						      f->mr->lkey),
					 0);
		}
		n = ibv_poll_cq(f->scq, 16, wc);
		assert_true(n >= 0);
		for (i = 0; i < n; i++) {
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			done += wc[i].wr_id >= BW_ID;
		}
	}
	if (done < BW_SENDS)
		fprintf(stderr, "%d of %d big SENDs completed in 20 s\n", done,
			BW_SENDS);
	assert_int_equal(done, BW_SENDS);
	assert_int_equal(xfer(f->sock, &ok, 1, false), 0);
	assert_int_equal(ok, 1);
	assert_int_equal(reap(f->child, 0), -1);
	kill(f->child, SIGKILL);
	status = reap(f->child, 5000);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	f->child = 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		T(test_write_read_paused),     T(test_burst_quiet),
		T(test_write_complete_at_end), T(test_peer_sigkill),
		T(test_peer_sigkill_sender),   T(test_hundred_qps),
		T(test_polled_then_quiet),     T(test_polled_both_ways),
	};

	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
