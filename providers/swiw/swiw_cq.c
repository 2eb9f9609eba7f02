// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completion queues: a swiw-abi.h ring of CQEs the engine fills and
 * poll_cq empties without a system call, and the one-shot arm word after
 * it that asks the engine for a completion-channel event.
 */
#include <errno.h>
#include <string.h>

#include "swiw.h"

/* ibv_wc_status numbers travel in CQEs unchanged (swiw-abi.h). */
_Static_assert(IBV_WC_SUCCESS == 0 && IBV_WC_WR_FLUSH_ERR == 5 &&
		       IBV_WC_REM_ACCESS_ERR == 10 && IBV_WC_GENERAL_ERR == 21,
	       "ibv_wc_status numbering");

static void cq_set_ring(struct swiw_cq *cq, void *mem, uint32_t num)
{
	struct swiw_ring r = { .base = mem,
			       .num = num,
			       .stride = sizeof(struct swiw_cqe),
			       .flags_off = offsetof(struct swiw_cqe, flags) };

	cq->ring = r;
	cq->eng = r;
	cq->ctrl =
		(struct swiw_cq_ctrl *)((uint8_t *)mem +
					(size_t)num * sizeof(struct swiw_cqe));
}

struct ibv_cq *swiw_create_cq(struct ibv_context *ctx, int cqe,
			      struct ibv_comp_channel *channel, int comp_vector)
{
	struct swiw_context *sctx = to_swiw_ctx(ctx);
	struct swiw_cq *cq;
	uint32_t num;

	if (cqe < 1 || cqe > SWIW_MAX_CQE || comp_vector < 0 ||
	    comp_vector >= SWIW_NUM_COMP_VECTORS ||
	    (channel && channel->context != ctx)) {
		errno = EINVAL;
		return NULL;
	}
	cq = swiw_obj_alloc(&sctx->ncq, SWIW_MAX_CQ, sizeof(*cq));
	if (!cq)
		return NULL;
	num = swiw_roundup_pow2((uint32_t)cqe);
	cq->mem = swiw_ring_alloc(num, sizeof(struct swiw_cqe),
				  sizeof(struct swiw_cq_ctrl), &cq->mem_len);
	if (!cq->mem) {
		swiw_obj_free(&sctx->ncq, cq);
		errno = ENOMEM;
		return NULL;
	}
	cq_set_ring(cq, cq->mem, num);
	pthread_spin_init(&cq->poll_lock, PTHREAD_PROCESS_PRIVATE);
	cq->vcq.cq.context = ctx;
	cq->vcq.cq.cqe = (int)num;
	return &cq->vcq.cq;
}

int swiw_destroy_cq(struct ibv_cq *ibcq)
{
	struct swiw_cq *cq = to_swiw_cq(ibcq);

	if (atomic_load(&cq->users))
		return EBUSY; /* a QP still completes here */
	swiw_ring_free(cq->mem, cq->mem_len);
	pthread_spin_destroy(&cq->poll_lock);
	swiw_obj_free(&to_swiw_ctx(ibcq->context)->ncq, cq);
	return 0;
}

static enum ibv_wc_opcode wc_opcode(unsigned int op)
{
	static const enum ibv_wc_opcode map[SWIW_OP_MAX] = {
		[SWIW_OP_WRITE] = IBV_WC_RDMA_WRITE,
		[SWIW_OP_WRITE_IMM] = IBV_WC_RDMA_WRITE,
		[SWIW_OP_SEND] = IBV_WC_SEND,
		[SWIW_OP_SEND_IMM] = IBV_WC_SEND,
		[SWIW_OP_SEND_INV] = IBV_WC_SEND,
		[SWIW_OP_READ] = IBV_WC_RDMA_READ,
		[SWIW_OP_FETCH_ADD] = IBV_WC_FETCH_ADD,
		[SWIW_OP_CMP_SWAP] = IBV_WC_COMP_SWAP,
		[SWIW_OP_LOCAL_INV] = IBV_WC_LOCAL_INV,
		[SWIW_OP_RECV] = IBV_WC_RECV,
		[SWIW_OP_RECV_RDMA_IMM] = IBV_WC_RECV_RDMA_WITH_IMM,
	};

	return op < SWIW_OP_MAX ? map[op] : IBV_WC_SEND;
}

void swiw_cqe_to_wc(const struct swiw_cqe *e, struct ibv_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = e->id;
	wc->status = (enum ibv_wc_status)e->status;
	wc->opcode = wc_opcode(e->opcode);
	wc->vendor_err = e->vendor_err;
	wc->byte_len = e->bytes;
	wc->qp_num = e->qp_num;
	wc->src_qp = e->src_qp;
	if (e->flags & SWIW_CQE_IMM) {
		wc->imm_data = e->imm_or_inv;
		wc->wc_flags |= IBV_WC_WITH_IMM;
	} else if (e->flags & SWIW_CQE_INV) {
		wc->invalidated_rkey = e->imm_or_inv;
		wc->wc_flags |= IBV_WC_WITH_INV;
	}
}

static int cq_take(struct swiw_cq *cq, int num_entries, struct ibv_wc *wc)
{
	int n;

	pthread_spin_lock(&cq->poll_lock);
	for (n = 0; n < num_entries; n++) {
		struct swiw_cqe *e = swiw_ring_cons_slot(&cq->ring);

		if (!e)
			break;
		swiw_cqe_to_wc(e, &wc[n]);
		swiw_ring_release(&cq->ring, e);
	}
	pthread_spin_unlock(&cq->poll_lock);
	return n;
}

int swiw_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct swiw_cq *cq = to_swiw_cq(ibcq);
	uint64_t now;
	int n;

	if (num_entries < 0)
		return -EINVAL;
	n = cq_take(cq, num_entries, wc);
	if (n)
		swiw_engine_polled(n, 0);
	if (!n && num_entries) {
		/* Empty: move the engine ourselves (poll mode), then look
		 * again. */
		now = swiw_engine_poll();
		n = cq_take(cq, num_entries, wc);
		if (n)
			swiw_engine_polled(n, now); /* no longer waiting */
	}
	return n;
}

/*
 * Arms the CQ for the next completion added to it (verbs' semantics:
 * one already there does not count; the application polls after arming
 * to catch those). An exchange, as cq_notify() reads the word with a
 * read-modify-write: the two are ordered on the word, so either the
 * engine sees the arm, or this sees (synchronises with) the completion
 * it published before; with a plain store and load each could read the
 * other's old value (a store may pass a later load, on x86 too). Sequentially
 * consistent, as swiw_engine_armed then reads whether the progress thread
 * hears the kernel helper, which that thread sets before it reads this word.
 */
int swiw_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct swiw_cq *cq = to_swiw_cq(ibcq);

	__atomic_exchange_n(&cq->ctrl->notify,
			    solicited_only ? SWIW_NOTIFY_SOLICITED :
					     SWIW_NOTIFY_NEXT,
			    __ATOMIC_SEQ_CST);
	swiw_engine_armed();
	return 0;
}

/*
 * A new ring, with the CQEs not yet polled moved over in order. Both
 * sides stop while it happens: the poll lock, then the engine's.
 */
int swiw_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct swiw_cq *cq = to_swiw_cq(ibcq);
	struct swiw_cq_ctrl ctrl;
	struct swiw_ring old;
	uint32_t num, pending = 0;
	void *mem, *old_mem;
	size_t len, old_len;

	if (cqe < 1 || cqe > SWIW_MAX_CQE)
		return EINVAL;
	num = swiw_roundup_pow2((uint32_t)cqe);
	mem = swiw_ring_alloc(num, sizeof(struct swiw_cqe),
			      sizeof(struct swiw_cq_ctrl), &len);
	if (!mem)
		return ENOMEM;
	/* The engine produces under its lock: none may come meanwhile. */
	pthread_spin_lock(&cq->poll_lock);
	swiw_eng_lock();
	old = cq->ring;
	while (pending < old.num &&
	       swiw_ring_load_flags(&old,
				    swiw_ring_slot(&old, old.pos + pending)) &
		       SWIW_SLOT_VALID)
		pending++;
	if (pending > num) {
		swiw_eng_unlock();
		pthread_spin_unlock(&cq->poll_lock);
		swiw_ring_free(mem, len);
		return EINVAL; /* smaller than what it holds */
	}
	ctrl = *cq->ctrl;
	old_mem = cq->mem;
	old_len = cq->mem_len;
	cq->mem = mem;
	cq->mem_len = len;
	cq_set_ring(cq, mem, num);
	*cq->ctrl = ctrl;
	for (uint32_t i = 0; i < pending; i++) {
		memcpy(swiw_ring_slot(&cq->ring, i),
		       swiw_ring_slot(&old, old.pos + i),
		       sizeof(struct swiw_cqe));
		cq->eng.pos++;
	}
	ibcq->cqe = (int)num;
	swiw_eng_unlock();
	pthread_spin_unlock(&cq->poll_lock);
	swiw_ring_free(old_mem, old_len);
	return 0;
}
