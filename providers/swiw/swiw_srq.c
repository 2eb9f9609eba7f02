// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Receive queues: a QP's own RQ and shared receive queues are the same
 * ring (struct swiw_rq), posted to by one function.
 */
#include <errno.h>
#include <string.h>

#include "swiw.h"
#include "swiw_backend.h"

int swiw_rq_init(struct swiw_rq *rq, uint32_t num, uint32_t max_sge)
{
	uint32_t stride = SWIW_RQE_HDR_SIZE +
			  (max_sge ? max_sge : 1) * sizeof(struct swiw_sge);
	struct swiw_ring r = { .num = num,
			       .stride = stride,
			       .flags_off = offsetof(struct swiw_rqe, flags),
			       .flags16 = true };

	const struct swiw_backend *be = swiw_backend();
	int err;

	/* Every engine's lower half takes receive WRs from this ring. */
	if (!be)
		return ENODEV;
	err = be->queue_alloc(SWIW_QUEUE_RQ, num, stride, &rq->bq);
	if (err)
		return err;
	rq->mem = rq->bq.mem;
	rq->mem_len = rq->bq.len;
	r.base = rq->mem;
	rq->ring = r;
	rq->eng = r;
	rq->max_sge = max_sge;
	pthread_spin_init(&rq->lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

void swiw_rq_destroy(struct swiw_rq *rq)
{
	if (!rq->mem)
		return;
	swiw_backend()->queue_free(&rq->bq);
	pthread_spin_destroy(&rq->lock);
	rq->mem = NULL;
}

/*
 * A lower half took WRs from the ring at a position of its own: our
 * consumer view restarts at the oldest WR still VALID. Those are
 * contiguous and end just before the producer's position.
 */
void swiw_rq_resync(struct swiw_rq *rq)
{
	struct swiw_ring *r = &rq->ring;
	uint32_t n = 0;

	if (!rq->bq.mem)
		return;
	pthread_spin_lock(&rq->lock);
	while (n < r->num &&
	       (swiw_ring_load_flags(r, swiw_ring_slot(r, r->pos - 1 - n)) &
		SWIW_SLOT_VALID))
		n++;
	rq->eng.pos = r->pos - n;
	pthread_spin_unlock(&rq->lock);
}

/*
 * A fresh ring from the backend in place of the old one, both views at
 * 0: the lower half's consumer position is its own, so after a RESET
 * (which dropped the WRs posted) it would be stale for the next
 * connection. 0, or a positive errno with the old ring kept.
 */
int swiw_rq_renew(struct swiw_rq *rq)
{
	const struct swiw_backend *be = swiw_backend();
	struct swiw_bqueue nq, old;
	int err;

	if (!rq->bq.mem)
		return 0;
	err = be->queue_alloc(SWIW_QUEUE_RQ, rq->ring.num, rq->ring.stride,
			      &nq);
	if (err)
		return err;
	pthread_spin_lock(&rq->lock);
	old = rq->bq;
	rq->bq = nq;
	rq->mem = nq.mem;
	rq->mem_len = nq.len;
	rq->ring.base = nq.mem;
	rq->ring.pos = 0;
	rq->eng = rq->ring;
	pthread_spin_unlock(&rq->lock);
	be->queue_free(&old);
	return 0;
}

/* 0, or a positive errno with *bad_wr at the first WR not posted. */
int swiw_rq_post(struct swiw_rq *rq, struct ibv_recv_wr *wr,
		 struct ibv_recv_wr **bad_wr)
{
	int err = 0;

	pthread_spin_lock(&rq->lock);
	for (; wr; wr = wr->next) {
		struct swiw_rqe *rqe;
		uint64_t total = 0;
		int i;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_sge) {
			err = EINVAL;
			break;
		}
		for (i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		if (total > SWIW_MAX_MSG_SIZE) {
			err = EINVAL;
			break;
		}
		rqe = swiw_ring_prod_slot(&rq->ring);
		if (!rqe) {
			err = ENOMEM; /* the queue is full */
			break;
		}
		rqe->id = wr->wr_id;
		rqe->num_sge = (uint8_t)wr->num_sge;
		memcpy(rqe + 1, wr->sg_list,
		       (size_t)wr->num_sge * sizeof(struct swiw_sge));
		swiw_ring_publish(&rq->ring, rqe, 0);
	}
	pthread_spin_unlock(&rq->lock);
	if (err)
		*bad_wr = wr;
	return err;
}

struct ibv_srq *swiw_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr)
{
	struct swiw_context *sctx = to_swiw_ctx(pd->context);
	struct ibv_srq_attr *a = &attr->attr;
	struct swiw_srq *srq;
	uint32_t num;
	int err;

	if (a->max_wr < 1 || a->max_wr > SWIW_MAX_SRQ_WR ||
	    a->max_sge > SWIW_MAX_SRQ_SGE || a->srq_limit > a->max_wr) {
		errno = EINVAL;
		return NULL;
	}
	srq = swiw_obj_alloc(&sctx->nsrq, SWIW_MAX_SRQ, sizeof(*srq));
	if (!srq)
		return NULL;
	num = swiw_roundup_pow2(a->max_wr);
	err = swiw_rq_init(&srq->rq, num, a->max_sge);
	if (err) {
		swiw_obj_free(&sctx->nsrq, srq);
		errno = err;
		return NULL;
	}
	srq->max_wr = num;
	srq->limit = a->srq_limit;
	srq->vsrq.srq.context = pd->context;
	srq->vsrq.srq.pd = pd;
	srq->vsrq.srq_type = IBV_SRQT_BASIC;
	a->max_wr = num;
	a->max_sge = srq->rq.max_sge;
	atomic_fetch_add(&to_swiw_pd(pd)->usecnt, 1);
	return &srq->vsrq.srq;
}

int swiw_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct swiw_srq *srq = to_swiw_srq(ibsrq);

	if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return EINVAL;
	if (mask & IBV_SRQ_MAX_WR)
		return EINVAL; /* no resizing: IBV_DEVICE_SRQ_RESIZE not set */
	if (mask & IBV_SRQ_LIMIT) {
		if (attr->srq_limit > srq->max_wr)
			return EINVAL;
		/* Armed until the engine sees fewer WRs than this. */
		__atomic_store_n(&srq->limit, attr->srq_limit,
				 __ATOMIC_RELEASE);
	}
	return 0;
}

int swiw_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct swiw_srq *srq = to_swiw_srq(ibsrq);

	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->rq.max_sge;
	attr->srq_limit = __atomic_load_n(&srq->limit, __ATOMIC_ACQUIRE);
	return 0;
}

int swiw_destroy_srq(struct ibv_srq *ibsrq)
{
	struct swiw_srq *srq = to_swiw_srq(ibsrq);

	if (atomic_load(&srq->users))
		return EBUSY;
	swiw_rq_destroy(&srq->rq);
	atomic_fetch_sub(&to_swiw_pd(ibsrq->pd)->usecnt, 1);
	swiw_obj_free(&to_swiw_ctx(ibsrq->context)->nsrq, srq);
	return 0;
}

int swiw_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr)
{
	return swiw_rq_post(&to_swiw_srq(ibsrq)->rq, wr, bad_wr);
}
