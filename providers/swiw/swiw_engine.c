// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The in-process engine's side of the swiw-abi.h rings: it consumes work
 * requests from send and receive queues and produces completions, exactly
 * as the kernel helper does from the other side of /dev/swiw.
 *
 * ENGINE LOCK
 * One mutex, eng_lock, serialises the whole engine: the progress thread
 * holds it while it handles the events of one epoll_wait() (MPA, TX, RX,
 * completions, errors) and drops it only to wait; the provider takes it
 * in the few engine entry points it calls (attach, flush, reset, detach),
 * never on the post or poll path. Everything engine-owned is under it:
 * every stream, the consumer views of SQ/RQ/SRQ rings (sq_eng, rq->eng),
 * the stream list and the graveyard. Lock order: a QP's state_lock, then
 * eng_lock, then a CQ's eng_lock and the STag table's lock; the engine
 * never takes a state_lock (it moves a QP to error with an atomic store).
 * Functions that need it call swiw_eng_assert_held() on entry.
 *
 * PROGRESS THREAD
 * Started with the first stream or broker session, one per process: epoll
 * over the stream sockets, the broker's event socket and an eventfd
 * doorbell; it sleeps no longer than the next dial attempt is due
 * (swiw_connect.c). After any work it keeps polling
 * (epoll_wait with no timeout, and the send queues) for SWIW_ENG_SPIN_NS
 * before it sleeps, since a blocking wake-up costs 25-30 us here. A
 * stream is freed only by this thread, after the epoll_wait() that could
 * still name it has been handled (the graveyard), so an event never
 * points at freed memory.
 *
 * A CQ, fed by many QPs and also reached by resize_cq, is produced into
 * under its own eng_lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "swiw.h"
#include "swiw_stream.h"

#define SWIW_ENG_SPIN_NS 50000

static pthread_mutex_t eng_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long eng_owner; /* pthread_self() of the holder, or 0 */
static bool eng_started;
static int eng_epfd = -1, eng_evfd = -1;
static pthread_t eng_thread;
static char doorbell_tag;

void swiw_eng_lock(void)
{
	pthread_mutex_lock(&eng_lock);
	__atomic_store_n(&eng_owner, (unsigned long)pthread_self(),
			 __ATOMIC_RELAXED);
}

void swiw_eng_unlock(void)
{
	__atomic_store_n(&eng_owner, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&eng_lock);
}

void swiw_eng_assert_held(void)
{
	if (__atomic_load_n(&eng_owner, __ATOMIC_RELAXED) !=
	    (unsigned long)pthread_self()) {
		swiw_err("engine lock not held");
		abort();
	}
}

void swiw_eng_doorbell(void)
{
	uint64_t one = 1;
	int fd = __atomic_load_n(&eng_evfd, __ATOMIC_ACQUIRE);

	if (fd >= 0 && write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		swiw_warn("engine doorbell: %s", strerror(errno));
}

/* post_send published work: ring if the engine may have gone idle. */
void swiw_engine_sq_posted(struct swiw_qp *qp)
{
	if (__atomic_exchange_n(&qp->sq_armed, 0, __ATOMIC_SEQ_CST))
		swiw_eng_doorbell();
}

int swiw_eng_epoll_ctl(int op, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = { .events = events, .data.ptr = ptr };

	swiw_eng_assert_held();
	return epoll_ctl(eng_epfd, op, fd, &ev) ? errno : 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *eng_main(void *arg)
{
	struct epoll_event evs[64];
	uint64_t spin_until = 0;
	int i, n, t, wait_ms = -1;

	(void)arg;
	for (;;) {
		bool work;

		n = epoll_wait(eng_epfd, evs, 64,
			       now_ns() < spin_until ? 0 : wait_ms);
		swiw_eng_lock();
		work = n > 0;
		for (i = 0; i < n; i++) {
			if (evs[i].data.ptr == &doorbell_tag) {
				uint64_t v;

				if (read(eng_evfd, &v, sizeof(v)) < 0)
					(void)0; /* EAGAIN: already drained */
				continue;
			}
			if (swiw_conn_is_broker(evs[i].data.ptr)) {
				swiw_conn_broker_event(evs[i].data.ptr);
				continue;
			}
			swiw_stream_event(evs[i].data.ptr, evs[i].events);
		}
		swiw_conn_run();
		if (swiw_streams_pump_all())
			work = true;
		swiw_streams_reap();
		wait_ms = swiw_conn_timeout_ms();
		t = swiw_streams_timers();
		if (t >= 0 && (wait_ms < 0 || t < wait_ms))
			wait_ms = t;
		swiw_eng_unlock();
		if (work)
			spin_until = now_ns() + SWIW_ENG_SPIN_NS;
	}
	return NULL;
}

/* Starts the progress thread once; under the engine lock. */
int swiw_eng_start(void)
{
	struct epoll_event ev = { .events = EPOLLIN,
				  .data.ptr = &doorbell_tag };
	int err;

	swiw_eng_assert_held();
	if (eng_started)
		return 0;
	eng_epfd = epoll_create1(EPOLL_CLOEXEC);
	if (eng_epfd < 0)
		return errno;
	eng_evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (eng_evfd < 0 || epoll_ctl(eng_epfd, EPOLL_CTL_ADD, eng_evfd, &ev))
		goto fail;
	err = pthread_create(&eng_thread, NULL, eng_main, NULL);
	if (err) {
		errno = err;
		goto fail;
	}
	pthread_detach(eng_thread);
	eng_started = true;
	return 0;
fail:
	err = errno;
	if (eng_evfd >= 0)
		close(eng_evfd);
	close(eng_epfd);
	eng_evfd = eng_epfd = -1;
	return err;
}

/*
 * Completion-channel event, when the CQ was armed for this completion:
 * the arm word is one-shot, so exactly one waiter is woken per arming.
 */
static void cq_notify(struct swiw_cq *cq, const struct swiw_cqe *e)
{
	struct ibv_comp_channel *ch = cq->vcq.cq.channel;
	uint32_t armed = __atomic_load_n(&cq->ctrl->notify, __ATOMIC_ACQUIRE);
	uint64_t rec = (uintptr_t)&cq->vcq.cq;

	if (!ch || armed == SWIW_NOTIFY_NOT)
		return;
	if (armed == SWIW_NOTIFY_SOLICITED &&
	    !(e->flags & SWIW_CQE_SOLICITED) && e->status == IBV_WC_SUCCESS)
		return; /* errors always wake, as verbs documents */
	if (!__atomic_compare_exchange_n(&cq->ctrl->notify, &armed,
					 SWIW_NOTIFY_NOT, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	if (write(swiw_container_of(ch, struct swiw_comp_channel, ibv_ch)->wfd,
		  &rec, sizeof(rec)) != sizeof(rec))
		swiw_warn("completion channel full: a CQ event was lost");
}

/*
 * Adds one completion. A full CQ is an error of the CQ (the application
 * sized it too small): the completion is lost, IBV_EVENT_CQ_ERR is
 * raised once, and -ENOSPC tells the caller to fail its QP.
 */
int swiw_engine_cq_push(struct swiw_cq *cq, const struct swiw_cqe *cqe)
{
	struct swiw_cqe *slot;

	pthread_mutex_lock(&cq->eng_lock);
	slot = swiw_ring_prod_slot(&cq->eng);
	if (!slot) {
		if (!cq->overflow) {
			cq->overflow = true;
			swiw_post_async(to_swiw_ctx(cq->vcq.cq.context),
					IBV_EVENT_CQ_ERR,
					(uintptr_t)&cq->vcq.cq);
		}
		pthread_mutex_unlock(&cq->eng_lock);
		return -ENOSPC;
	}
	/* All but the flags byte, which poll_cq may be reading: only
	 * swiw_ring_publish() writes it, atomically. */
	_Static_assert(offsetof(struct swiw_cqe, flags) == 8,
		       "CQE flags follow the id");
	memcpy(slot, cqe, offsetof(struct swiw_cqe, flags));
	memcpy((uint8_t *)slot + offsetof(struct swiw_cqe, flags) + 1,
	       (const uint8_t *)cqe + offsetof(struct swiw_cqe, flags) + 1,
	       sizeof(*slot) - offsetof(struct swiw_cqe, flags) - 1);
	swiw_ring_publish(&cq->eng, slot, cqe->flags & ~SWIW_CQE_VALID);
	cq_notify(cq, cqe);
	pthread_mutex_unlock(&cq->eng_lock);
	return 0;
}

/* Every SQE and (own) RQE still queued completes with WR_FLUSH_ERR. */
void swiw_engine_flush_qp_locked(struct swiw_qp *qp)
{
	uint32_t qpn = qp->vqp.qp.qp_num;
	struct swiw_cqe e;
	void *slot;

	swiw_eng_assert_held();
	while ((slot = swiw_ring_cons_slot(&qp->sq_eng))) {
		const struct swiw_sqe *sqe = slot;

		memset(&e, 0, sizeof(e));
		e.id = sqe->id;
		e.opcode = sqe->opcode < SWIW_OP_MAX ? sqe->opcode :
						       SWIW_OP_SEND;
		e.status = IBV_WC_WR_FLUSH_ERR;
		e.qp_num = qpn;
		swiw_ring_release(&qp->sq_eng, slot);
		swiw_engine_cq_push(qp->scq, &e);
	}
	if (qp->srq)
		return; /* a shared queue outlives this QP's error */
	while ((slot = swiw_ring_cons_slot(&qp->rq->eng))) {
		const struct swiw_rqe *rqe = slot;

		memset(&e, 0, sizeof(e));
		e.id = rqe->id;
		e.opcode = SWIW_OP_RECV;
		e.status = IBV_WC_WR_FLUSH_ERR;
		e.qp_num = qpn;
		swiw_ring_release(&qp->rq->eng, slot);
		swiw_engine_cq_push(qp->rcq, &e);
	}
}

/*
 * The QP went to error (modify_qp, or a post to a QP in error): the
 * stream stops, and everything outstanding completes flushed, once.
 */
void swiw_engine_flush_qp(struct swiw_qp *qp)
{
	swiw_eng_lock();
	swiw_stream_qp_error(qp);
	swiw_engine_flush_qp_locked(qp);
	swiw_eng_unlock();
}

/* RESET and destroy: queued work requests are dropped, not completed. */
void swiw_engine_reset_qp(struct swiw_qp *qp)
{
	void *slot;

	swiw_eng_lock();
	swiw_stream_detach(qp);

	while ((slot = swiw_ring_cons_slot(&qp->sq_eng)))
		swiw_ring_release(&qp->sq_eng, slot);
	if (!qp->srq)
		while ((slot = swiw_ring_cons_slot(&qp->rq->eng)))
			swiw_ring_release(&qp->rq->eng, slot);
	swiw_eng_unlock();
}
