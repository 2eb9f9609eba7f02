// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The wire core's lower half (wire/swiw_lower*.c, the code swiw.ko runs)
 * run in this process on the engine thread, over the same rings the
 * helper would map: what the in-process backend (swiw_be_inproc.c) and
 * engine = ring (swiw_be_ring.c) share. Regions stay in the provider's
 * STag table, which the lower half reads through its ops; rings are
 * anonymous memory named by an id, as /dev/swiw names its own; each
 * attached socket stays in the engine's epoll set, and the backend's
 * receive mode feeds it to the lower half.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "swiw.h"
#include "swiw_backend.h"
#include "swiw_be_proc.h"
#include "swiw_stream.h"

/* Octets r_send copies into one buffer rather than pass as pieces. */
#define SWIW_PROC_FLAT_MAX 4096

struct ring_queue {
	uint32_t kind;
	uint32_t num, stride;
	void *mem;
	size_t len;
	uint32_t users; /* attached streams, under the engine lock */
	struct swiw_lower_rq lrq; /* RQ: the consumer's view, shared */
};

static pthread_mutex_t rq_table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ring_queue **queues; /* index = id - 1 */
static uint32_t nqueues;

int swiw_proc_queue_alloc(uint32_t kind, uint32_t num, uint32_t stride,
			  struct swiw_bqueue *q)
{
	struct ring_queue *e;
	uint32_t i;

	if (!num || (num & (num - 1)) || !stride || (stride & 15))
		return EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return ENOMEM;
	e->mem = swiw_ring_alloc(num, stride, 0, &e->len);
	if (!e->mem) {
		free(e);
		return ENOMEM;
	}
	e->kind = kind;
	e->num = num;
	e->stride = stride;
	e->lrq.ring.base = e->mem;
	e->lrq.ring.num = num;
	e->lrq.ring.stride = stride;
	e->lrq.ring.flags_off = offsetof(struct swiw_rqe, flags);
	e->lrq.ring.flags16 = true;
	e->lrq.max_sge = (stride - SWIW_RQE_HDR_SIZE) / sizeof(struct swiw_sge);
	pthread_mutex_lock(&rq_table_lock);
	for (i = 0; i < nqueues; i++)
		if (!queues[i])
			break;
	if (i == nqueues) {
		uint32_t n = nqueues ? nqueues * 2 : 64;
		struct ring_queue **t = realloc(queues, n * sizeof(*t));

		if (!t) {
			pthread_mutex_unlock(&rq_table_lock);
			swiw_ring_free(e->mem, e->len);
			free(e);
			return ENOMEM;
		}
		memset(t + nqueues, 0, (n - nqueues) * sizeof(*t));
		queues = t;
		nqueues = n;
	}
	queues[i] = e;
	pthread_mutex_unlock(&rq_table_lock);
	q->id = i + 1;
	q->mem = e->mem;
	q->len = e->len;
	return 0;
}

void swiw_proc_queue_free(struct swiw_bqueue *q)
{
	struct ring_queue *e = NULL;

	pthread_mutex_lock(&rq_table_lock);
	if (q->id && q->id <= nqueues && queues[q->id - 1] &&
	    queues[q->id - 1]->mem == q->mem) {
		e = queues[q->id - 1];
		queues[q->id - 1] = NULL;
	}
	pthread_mutex_unlock(&rq_table_lock);
	if (e) {
		swiw_ring_free(e->mem, e->len);
		free(e);
	}
	q->mem = NULL;
}

/* Streams: the lower half on the engine thread ---------------------------- */

/* A region the lower half holds: the table's answer, kept for reuse. */
struct ring_ref {
	struct swiw_mem_ref ref;
	struct ring_ref *next;
};

/* Under the engine lock (swiw_engine.c), like every lower-half call. */
static struct swiw_proc_stream **rstreams; /* index = id - 1 */
static uint32_t nrstreams;

static struct swiw_proc_stream *rs_find(uint32_t id)
{
	return id && id <= nrstreams ? rstreams[id - 1] : NULL;
}

static int r_mr_get(void *env, u32 stag, struct swiw_lower_mr *mr)
{
	struct swiw_proc_stream *rs = env;
	struct ring_ref *r = rs->free_refs;
	int rc;

	if (r)
		rs->free_refs = r->next;
	else if (!(r = malloc(sizeof(*r))))
		return -ENOMEM;
	rc = swiw_mem_lookup_cached(&rs->mcache, stag, rs->pd, 0, 0, 0,
				    &r->ref);
	if (rc) {
		r->next = rs->free_refs;
		rs->free_refs = r;
		return rc == SWIW_MEM_NOT_ASSOC ? -EPERM : -ENOENT;
	}
	mr->handle = &r->ref;
	mr->base = r->ref.iova;
	mr->len = r->ref.len;
	mr->access = (u32)swiw_acc_bits(r->ref.access);
	return 0;
}

static void r_mr_put(void *env, void *handle)
{
	struct swiw_proc_stream *rs = env;
	struct ring_ref *r = swiw_container_of(handle, struct ring_ref, ref);

	r->next = rs->free_refs;
	rs->free_refs = r;
}

static int r_mr_invalidate(void *env, u32 stag)
{
	struct swiw_proc_stream *rs = env;

	switch (swiw_mem_invalidate(stag, rs->pd)) {
	case 0:
		return 0;
	case SWIW_MEM_INVALID:
		return -ENOENT;
	case SWIW_MEM_NOT_ASSOC:
		return -EPERM;
	default:
		return -EACCES;
	}
}

static uint8_t *r_addr(void *handle, u64 addr)
{
	struct swiw_mem_ref *ref = handle;

	return ref->addr + (addr - ref->iova);
}

/* A region deregistered meanwhile takes nothing (swiw_mem_ref_live). */
static void r_mr_write(void *env, void *handle, u64 addr, const void *src,
		       u32 len)
{
	(void)env;
	if (swiw_mem_ref_live(handle))
		memcpy(r_addr(handle, addr), src, len);
}

static u32 r_mr_map(void *env, void *handle, u64 addr, u32 len,
		    struct swiw_iov *iov, u32 max)
{
	(void)env;
	if (!max || !swiw_mem_ref_live(handle))
		return 0;
	iov->base = r_addr(handle, addr);
	iov->len = len;
	return 1;
}

/* A compare-and-swap loop: atomic against every other access. */
static int r_mr_atomic(void *env, void *handle, u64 addr,
		       const struct swiw_rdmap_atomic_req *a, u64 *orig)
{
	uint64_t *t = (uint64_t *)(void *)r_addr(handle, addr);
	uint64_t o, next;

	(void)env;
	if ((uintptr_t)t & 7 || !swiw_mem_ref_live(handle))
		return -EFAULT;
	o = __atomic_load_n(t, __ATOMIC_ACQUIRE);
	do {
		next = swiw_rdmap_atomic_apply(a, o);
	} while (next != o && !__atomic_compare_exchange_n(t, &o, next, false,
							   __ATOMIC_ACQ_REL,
							   __ATOMIC_ACQUIRE));
	*orig = o;
	return 0;
}

/* Every stream runs under the engine lock: nothing more to hold. */
static void r_rq_lock(void *env, struct swiw_lower_rq *rq)
{
	(void)env;
	(void)rq;
}

/*
 * Copies @n pieces into @buf if their octets fit in @max: their total, or
 * 0 when they do not fit.
 */
static size_t flatten(uint8_t *buf, size_t max, const struct swiw_iov *iov,
		      u32 n)
{
	size_t tot = 0;
	u32 i;

	for (i = 0; i < n; i++) {
		if (iov[i].len > max - tot)
			return 0;
		memcpy(buf + tot, iov[i].base, iov[i].len);
		tot += iov[i].len;
	}
	return tot;
}

/*
 * One buffer goes by send(), and pieces of up to SWIW_PROC_FLAT_MAX
 * octets in all (a batch of small FPDUs, a small FPDU whose payload is
 * the program's) are copied into one first: a msghdr costs the kernel
 * the copy and check of the header and its iovec array, about 130 ns a
 * call here, more than the copy.
 */
static long r_send(void *env, const struct swiw_iov *iov, u32 n, u32 len)
{
	struct swiw_proc_stream *rs = env;
	struct msghdr mh = { .msg_iov = (struct iovec *)(uintptr_t)iov,
			     .msg_iovlen = n };
	uint8_t flat[SWIW_PROC_FLAT_MAX];
	const void *buf = NULL;
	size_t tot = 0;
	ssize_t r;

	if (n == 1) {
		buf = iov[0].base;
		tot = iov[0].len;
	} else if (n > 1 && len <= sizeof(flat)) {
		tot = flatten(flat, sizeof(flat), iov, n);
		buf = tot ? flat : NULL;
	}
	do
		r = buf ? send(rs->fd, buf, tot, MSG_DONTWAIT | MSG_NOSIGNAL) :
			  sendmsg(rs->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	if (r >= 0)
		return (long)r;
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return 0;
	return -errno;
}

/* One piece (a run of small FPDUs into the stage) by recv(), as above. */
static long r_recv(void *env, const struct swiw_iov *iov, u32 n)
{
	struct swiw_proc_stream *rs = env;
	struct msghdr mh = { .msg_iov = (struct iovec *)(uintptr_t)iov,
			     .msg_iovlen = n };
	ssize_t r;

	do
		r = n == 1 ? recv(rs->fd, (void *)(uintptr_t)iov[0].base,
				  iov[0].len, MSG_DONTWAIT) :
			     recvmsg(rs->fd, &mh, MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	if (r >= 0)
		return (long)r;
	return errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

/* The upper half drains the event ring right after every call. */
static void r_wake(void *env)
{
	(void)env;
}

static bool r_mr_live(void *env, void *handle)
{
	(void)env;
	return swiw_mem_ref_live(handle);
}

static const struct swiw_lower_ops proc_ops = {
	.mr_get = r_mr_get,
	.mr_put = r_mr_put,
	.mr_invalidate = r_mr_invalidate,
	.mr_write = r_mr_write,
	.mr_map = r_mr_map,
	.mr_atomic = r_mr_atomic,
	.mr_live = r_mr_live,
	.rq_lock = r_rq_lock,
	.rq_unlock = r_rq_lock,
	.send = r_send,
	.recv = r_recv,
	.wake = r_wake,
};

/*
 * Frames that found no transport room wait for EPOLLOUT (@room: it came,
 * or the caller knows nothing of the socket): a send before that only
 * finds the socket full again, an EAGAIN that takes the socket's lock
 * from the very ACKs that make room; EPOLLOUT sends what was added since
 * in fewer calls.
 */
static void proc_tx(struct swiw_proc_stream *rs, bool room)
{
	if (rs->want_out && !room)
		return;
	rs->want_out = swiw_lower_tx(&rs->l) == 1;
}

uint32_t swiw_proc_stream_io(uint32_t id, uint32_t events, bool *more)
{
	struct swiw_proc_stream *rs = rs_find(id);

	*more = false;
	if (!rs)
		return 0;
	/* 0: not from epoll, the socket may hold anything. Input alone
	 * brings nothing to send first: the upper half's doorbell pushed
	 * every txd it published (swiw_proc_doorbell), and only transport
	 * room or that doorbell lets one wait (want_out, a stall). */
	if (!events || (events & (EPOLLOUT | EPOLLHUP | EPOLLERR)))
		proc_tx(rs, true);
	if (!events ||
	    (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
		*more = rs->mode->rx(rs);
		/* Responses to Read and Atomic Requests just received, as
		 * the helper's receive hands on (swiw_lower_tx_due). */
		if (swiw_lower_tx_due(&rs->l))
			proc_tx(rs, false);
	}
	return swiw_proc_stream_interest(id);
}

uint32_t swiw_proc_stream_interest(uint32_t id)
{
	struct swiw_proc_stream *rs = rs_find(id);
	uint32_t ev = 0;

	if (!rs)
		return 0;
	if (!rs->ended && !swiw_lower_rx_done(&rs->l) &&
	    !swiw_lower_stalled(&rs->l))
		ev |= EPOLLIN | EPOLLRDHUP;
	if (rs->want_out)
		ev |= EPOLLOUT;
	return ev;
}

static struct ring_queue *queue_get(uint32_t id, uint32_t kind)
{
	struct ring_queue *q = NULL;

	pthread_mutex_lock(&rq_table_lock);
	if (id && id <= nqueues && queues[id - 1] &&
	    queues[id - 1]->kind == kind)
		q = queues[id - 1];
	pthread_mutex_unlock(&rq_table_lock);
	return q;
}

static void lring(struct swiw_ring *lr, const struct ring_queue *q)
{
	lr->base = q->mem;
	lr->num = q->num;
	lr->stride = q->stride;
	lr->pos = 0;
	/* Every slot kind of a stream starts with its id, then the flags. */
	lr->flags_off = offsetof(struct swiw_txd, flags);
	lr->flags16 = true;
}

/* Attaches a socket to a new lower half that @mode feeds. */
int swiw_proc_attach(struct swiw_ioc_attach *a,
		     const struct swiw_proc_mode *mode)
{
	struct swiw_lower_cfg cfg = { 0 };
	struct ring_queue *tx, *ev, *rq;
	struct swiw_proc_stream *rs;
	uint32_t i;
	int emss = 0;
	socklen_t sl = sizeof(emss);

	swiw_eng_assert_held();
	tx = queue_get(a->tx_id, SWIW_QUEUE_TX);
	ev = queue_get(a->rxev_id, SWIW_QUEUE_RXEV);
	rq = queue_get(a->rq_id, SWIW_QUEUE_RQ);
	if (!tx || !ev || !rq || a->sq_id || a->cq_id || tx->users || ev->users)
		return EINVAL;
	/* The lower half takes receive WRs from where the last stream on
	 * this ring left off (0 for a fresh one), as the kernel helper does:
	 * nothing else consumes them before, and the program may be posting
	 * right now, so the ring's contents say nothing about where to start
	 * (a look for the first WR there skipped the one being published). */
	for (i = 0; i < nrstreams; i++)
		if (!rstreams[i])
			break;
	if (i == nrstreams) {
		uint32_t n = nrstreams ? nrstreams * 2 : 64;
		struct swiw_proc_stream **t = realloc(rstreams, n * sizeof(*t));

		if (!t)
			return ENOMEM;
		memset(t + nrstreams, 0, (n - nrstreams) * sizeof(*t));
		rstreams = t;
		nrstreams = n;
	}
	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return ENOMEM;
	rs->stage = malloc(SWIW_PROC_STAGE);
	if (!rs->stage) {
		free(rs);
		return ENOMEM;
	}
	if (getsockopt(a->sock_fd, IPPROTO_TCP, TCP_MAXSEG, &emss, &sl) ||
	    emss <= 0)
		emss = 1460;
	cfg.crc = a->flags & SWIW_ATTACH_CRC;
	cfg.markers_tx = a->flags & SWIW_ATTACH_MARKERS_TX;
	cfg.markers_rx = a->flags & SWIW_ATTACH_MARKERS_RX;
	cfg.rtr_event = a->flags & SWIW_ATTACH_RTR_EVENT;
	cfg.ird = a->ird;
	cfg.mulpdu = swiw_mpa_mulpdu((u32)emss, cfg.markers_tx);
	lring(&cfg.tx, tx);
	lring(&cfg.rxev, ev);
	cfg.rq = &rq->lrq;
	cfg.qp_access = a->access;
	if (mode->lower_stage) {
		cfg.stage = rs->stage;
		cfg.stage_len = SWIW_PROC_STAGE;
	}
	rs->mode = mode;
	if (swiw_lower_init(&rs->l, &cfg, &proc_ops, rs)) {
		free(rs->stage);
		free(rs);
		return EINVAL;
	}
	rs->fd = a->sock_fd;
	rs->id = i + 1;
	rs->q[0] = tx;
	rs->q[1] = ev;
	rs->q[2] = rq;
	tx->users++;
	ev->users++;
	rq->users++;
	rstreams[i] = rs;
	a->stream_id = rs->id;
	return 0;
}

/*
 * ATTACH's pd is a number; the provider's table knows regions by their
 * struct ibv_pd, so the stream is given that instead.
 */
void swiw_proc_stream_pd(uint32_t id, const void *pd)
{
	struct swiw_proc_stream *rs = rs_find(id);

	if (rs)
		rs->pd = pd;
}

int swiw_proc_doorbell(uint32_t id)
{
	struct swiw_proc_stream *rs = rs_find(id);
	bool stalled;

	swiw_eng_assert_held();
	if (!rs)
		return EINVAL;
	stalled = swiw_lower_stalled(&rs->l);
	swiw_lower_doorbell(&rs->l);
	proc_tx(rs, false);
	if (stalled) {
		/* Reception waited for room: what it left, first. */
		rs->mode->rx(rs);
		proc_tx(rs, false);
	}
	return 0;
}

/*
 * A region left the provider's table: a frame still waiting for the
 * transport does not read it any more (swiw_lower_tx_revoke). True if a
 * stream ended so; its events are in its ring.
 */
bool swiw_proc_mr_gone(void)
{
	bool any = false;
	uint32_t i;

	swiw_eng_assert_held();
	for (i = 0; i < nrstreams; i++)
		if (rstreams[i] && swiw_lower_tx_revoke(&rstreams[i]->l))
			any = true;
	return any;
}

int swiw_proc_set_access(uint32_t id, uint32_t access)
{
	struct swiw_proc_stream *rs = rs_find(id);

	swiw_eng_assert_held();
	if (!rs)
		return EINVAL;
	swiw_lower_set_access(&rs->l, access);
	return 0;
}

int swiw_proc_detach(uint32_t id)
{
	struct swiw_proc_stream *rs = rs_find(id);
	int i;

	swiw_eng_assert_held();
	if (!rs)
		return EINVAL;
	swiw_lower_fini(&rs->l);
	for (i = 0; i < 3; i++)
		rs->q[i]->users--;
	rstreams[id - 1] = NULL;
	while (rs->free_refs) {
		struct ring_ref *r = rs->free_refs;

		rs->free_refs = r->next;
		free(r);
	}
	free(rs->stage);
	free(rs);
	return 0;
}
