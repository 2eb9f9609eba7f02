// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The in-process engine's side of the swiw-abi.h rings: it consumes work
 * requests from send and receive queues and produces completions, exactly
 * as the kernel helper does from the other side of /dev/swiw.
 *
 * Locking: a QP's queues are consumed under its state_lock; a CQ, fed by
 * many QPs, is produced into under its eng_lock.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "swiw.h"

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
	memcpy(slot, cqe, sizeof(*slot));
	slot->flags = 0;
	swiw_ring_publish(&cq->eng, slot, cqe->flags & ~SWIW_CQE_VALID);
	cq_notify(cq, cqe);
	pthread_mutex_unlock(&cq->eng_lock);
	return 0;
}

/* Every SQE and (own) RQE still queued completes with WR_FLUSH_ERR. */
void swiw_engine_flush_qp(struct swiw_qp *qp)
{
	uint32_t qpn = qp->vqp.qp.qp_num;
	struct swiw_cqe e;
	void *slot;

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

/* RESET and destroy: queued work requests are dropped, not completed. */
void swiw_engine_reset_qp(struct swiw_qp *qp)
{
	void *slot;

	while ((slot = swiw_ring_cons_slot(&qp->sq_eng)))
		swiw_ring_release(&qp->sq_eng, slot);
	if (qp->srq)
		return;
	while ((slot = swiw_ring_cons_slot(&qp->rq->eng)))
		swiw_ring_release(&qp->rq->eng, slot);
}
