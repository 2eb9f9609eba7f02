// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * engine = ring: the backend (swiw_backend.h) of the helper's lower half
 * (providers/swiw/wire/swiw_lower*.c, the code swiw.ko runs) run in this
 * process on the engine thread, over the same rings the helper would
 * map, so that the whole ring path is tested where there is no module.
 * Regions stay in the provider's STag table, which the lower half reads
 * through its ops; rings are anonymous memory named by an id, as
 * /dev/swiw names its own; each attached socket stays in the engine's
 * epoll set, its octets received into a stage and fed to the lower half.
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
#include "swiw_stream.h"
#include "swiw_lower.h"

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

static int r_queue_alloc(uint32_t kind, uint32_t num, uint32_t stride,
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

static void r_queue_free(struct swiw_bqueue *q)
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
#define RING_RX_READS 4 /* per call of ring_rx() */
#define RING_STAGE (256 * 1024)

/* A region the lower half holds: the table's answer, kept for reuse. */
struct ring_ref {
	struct swiw_mem_ref ref;
	struct ring_ref *next;
};

struct ring_stream {
	struct swiw_lower l;
	uint32_t id;
	int fd;
	bool pull; /* the in-process engine: swiw_lower_rx_pull() */
	struct ring_ref *free_refs;
	struct ring_queue *q[3]; /* tx, rxev, rq: busy while attached */
	uint8_t *stage; /* received octets the lower half has not taken */
	uint32_t st_head, st_tail;
	bool ended; /* the transport ended and the lower half knows */
	const void *pd; /* its QP's: regions of other PDs are not found */
	bool want_out;
};

/* Under the engine lock (swiw_engine.c), like every lower-half call. */
static struct ring_stream **rstreams; /* index = id - 1 */
static uint32_t nrstreams;

static struct ring_stream *rs_find(uint32_t id)
{
	return id && id <= nrstreams ? rstreams[id - 1] : NULL;
}

static int r_mr_get(void *env, u32 stag, struct swiw_lower_mr *mr)
{
	struct ring_stream *rs = env;
	struct ring_ref *r = rs->free_refs;
	int rc;

	if (r)
		rs->free_refs = r->next;
	else if (!(r = malloc(sizeof(*r))))
		return -ENOMEM;
	rc = swiw_mem_lookup(stag, rs->pd, 0, 0, 0, &r->ref);
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
	struct ring_stream *rs = env;
	struct ring_ref *r = swiw_container_of(handle, struct ring_ref, ref);

	r->next = rs->free_refs;
	rs->free_refs = r;
}

static int r_mr_invalidate(void *env, u32 stag)
{
	struct ring_stream *rs = env;

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

static void r_mr_write(void *env, void *handle, u64 addr, const void *src,
		       u32 len)
{
	(void)env;
	memcpy(r_addr(handle, addr), src, len);
}

static u32 r_mr_map(void *env, void *handle, u64 addr, u32 len,
		    struct swiw_iov *iov, u32 max)
{
	(void)env;
	if (!max)
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
	if ((uintptr_t)t & 7)
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

static long r_send(void *env, const struct swiw_iov *iov, u32 n, u32 len)
{
	struct ring_stream *rs = env;
	struct msghdr mh = { .msg_iov = (struct iovec *)(uintptr_t)iov,
			     .msg_iovlen = n };
	ssize_t r;

	(void)len;
	do
		r = sendmsg(rs->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	if (r >= 0)
		return (long)r;
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return 0;
	return -errno;
}

static long r_recv(void *env, const struct swiw_iov *iov, u32 n)
{
	struct ring_stream *rs = env;
	struct msghdr mh = { .msg_iov = (struct iovec *)(uintptr_t)iov,
			     .msg_iovlen = n };
	ssize_t r;

	do
		r = recvmsg(rs->fd, &mh, MSG_DONTWAIT);
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

static const struct swiw_lower_ops ring_ops = {
	.mr_get = r_mr_get,
	.mr_put = r_mr_put,
	.mr_invalidate = r_mr_invalidate,
	.mr_write = r_mr_write,
	.mr_map = r_mr_map,
	.mr_atomic = r_mr_atomic,
	.rq_lock = r_rq_lock,
	.rq_unlock = r_rq_lock,
	.send = r_send,
	.recv = r_recv,
	.wake = r_wake,
};

/*
 * Feeds what the socket holds, keeping what a stalled lower half left;
 * at most RING_RX_READS stage-fulls a call, so that under a steady
 * stream the upper half drains the events (completions) in between: the
 * socket stays readable, and level-triggered epoll comes back at once.
 */
static void ring_rx(struct ring_stream *rs)
{
	unsigned int reads = 0;

	if (rs->pull) {
		swiw_lower_rx_pull(&rs->l, RING_RX_READS);
		return;
	}
	for (;;) {
		size_t used = 0;
		ssize_t n;

		if (rs->ended || swiw_lower_rx_done(&rs->l))
			return;
		if (rs->st_head < rs->st_tail) {
			swiw_lower_rx(&rs->l, rs->stage + rs->st_head,
				      rs->st_tail - rs->st_head, &used);
			rs->st_head += (uint32_t)used;
			if (rs->st_head < rs->st_tail)
				return; /* stalled or ended */
			continue;
		}
		if (swiw_lower_stalled(&rs->l) || reads++ == RING_RX_READS)
			return;
		n = recv(rs->fd, rs->stage, RING_STAGE, MSG_DONTWAIT);
		if (n > 0) {
			rs->st_head = 0;
			rs->st_tail = (uint32_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		rs->ended = true;
		swiw_lower_rx_closed(&rs->l, n ? errno : 0);
		return;
	}
}

static void ring_tx(struct ring_stream *rs)
{
	rs->want_out = swiw_lower_tx(&rs->l) == 1;
}

uint32_t swiw_ring_stream_io(uint32_t id, uint32_t events)
{
	struct ring_stream *rs = rs_find(id);

	if (!rs)
		return 0;
	ring_tx(rs);
	/* 0: not from epoll, the socket may hold anything. */
	if (!events ||
	    (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
		ring_rx(rs);
		/* Responses to Read and Atomic Requests just received. */
		ring_tx(rs);
	}
	return swiw_ring_stream_interest(id);
}

uint32_t swiw_ring_stream_interest(uint32_t id)
{
	struct ring_stream *rs = rs_find(id);
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

static void lring(struct swiw_lower_ring *lr, const struct ring_queue *q)
{
	lr->base = q->mem;
	lr->num = q->num;
	lr->stride = q->stride;
	lr->pos = 0;
}

static int r_attach(struct swiw_ioc_attach *a, bool pull)
{
	struct swiw_lower_cfg cfg = { 0 };
	struct ring_queue *tx, *ev, *rq;
	struct ring_stream *rs;
	uint32_t i;
	int emss = 0;
	socklen_t sl = sizeof(emss);

	swiw_eng_assert_held();
	tx = queue_get(a->tx_id, SWIW_QUEUE_TX);
	ev = queue_get(a->rxev_id, SWIW_QUEUE_RXEV);
	rq = queue_get(a->rq_id, SWIW_QUEUE_RQ);
	if (!tx || !ev || !rq || a->sq_id || a->cq_id || tx->users || ev->users)
		return EINVAL;
	if (!rq->users) {
		/* Nobody consumed it before: start at the oldest WR. */
		uint32_t n;

		for (n = 0; n < rq->num; n++) {
			uint8_t *p = (uint8_t *)rq->mem +
				     (size_t)((rq->lrq.ring.pos + n) &
					      (rq->num - 1)) *
					     rq->stride;
			uint16_t f = __atomic_load_n(
				(uint16_t *)(p +
					     offsetof(struct swiw_rqe, flags)),
				__ATOMIC_ACQUIRE);

			if (f & SWIW_SLOT_VALID)
				break;
		}
		if (n < rq->num)
			rq->lrq.ring.pos += n;
	}
	for (i = 0; i < nrstreams; i++)
		if (!rstreams[i])
			break;
	if (i == nrstreams) {
		uint32_t n = nrstreams ? nrstreams * 2 : 64;
		struct ring_stream **t = realloc(rstreams, n * sizeof(*t));

		if (!t)
			return ENOMEM;
		memset(t + nrstreams, 0, (n - nrstreams) * sizeof(*t));
		rstreams = t;
		nrstreams = n;
	}
	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return ENOMEM;
	rs->stage = malloc(RING_STAGE);
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
	if (pull) {
		cfg.stage = rs->stage;
		cfg.stage_len = RING_STAGE;
	}
	rs->pull = pull;
	if (swiw_lower_init(&rs->l, &cfg, &ring_ops, rs)) {
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
void swiw_ring_stream_pd(uint32_t id, const void *pd)
{
	struct ring_stream *rs = rs_find(id);

	if (rs)
		rs->pd = pd;
}

static int r_attach_push(struct swiw_ioc_attach *a)
{
	return r_attach(a, false);
}

static int r_attach_pull(struct swiw_ioc_attach *a)
{
	return r_attach(a, true);
}

static int r_doorbell(uint32_t id)
{
	struct ring_stream *rs = rs_find(id);
	bool stalled;

	swiw_eng_assert_held();
	if (!rs)
		return EINVAL;
	stalled = swiw_lower_stalled(&rs->l);
	swiw_lower_doorbell(&rs->l);
	ring_tx(rs);
	if (stalled) {
		/* Reception waited for room: what it left, first. */
		ring_rx(rs);
		ring_tx(rs);
	}
	return 0;
}

static int r_set_access(uint32_t id, uint32_t access)
{
	struct ring_stream *rs = rs_find(id);

	swiw_eng_assert_held();
	if (!rs)
		return EINVAL;
	swiw_lower_set_access(&rs->l, access);
	return 0;
}

static int r_detach(uint32_t id)
{
	struct ring_stream *rs = rs_find(id);
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

struct swiw_backend swiw_ring_backend = {
	.name = "ring engine",
	.queue_alloc = r_queue_alloc,
	.queue_free = r_queue_free,
	.attach = r_attach_push,
	.doorbell = r_doorbell,
	.set_access = r_set_access,
	.detach = r_detach,
	.event_fd = -1,
};

struct swiw_backend swiw_inproc_backend = {
	.name = "in-process engine",
	.queue_alloc = r_queue_alloc,
	.queue_free = r_queue_free,
	.attach = r_attach_pull,
	.doorbell = r_doorbell,
	.set_access = r_set_access,
	.detach = r_detach,
	.event_fd = -1,
};
