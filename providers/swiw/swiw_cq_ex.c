// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ibv_create_cq_ex: the same CQ as ibv_create_cq (one ring, one arm word,
 * the same completion channel), read one completion at a time through
 * start_poll/next_poll/end_poll and the read_* callbacks. Each completion
 * is taken out of the ring whole, converted as poll_cq converts it, and
 * the callbacks read that copy.
 */
#include <errno.h>
#include <limits.h>

#include "swiw.h"

/* What a swiw CQE carries; SLID, SL and DLID path bits read as 0. */
#define SWIW_CQ_WC_FLAGS IBV_WC_STANDARD_FLAGS

static struct swiw_cq *cqx_cq(struct ibv_cq_ex *cqx)
{
	return swiw_container_of(cqx, struct swiw_cq, vcq.cq_ex);
}

/* Takes the next CQE into cq->cur; ENOENT if there is none. */
static int cqx_take(struct ibv_cq_ex *cqx)
{
	struct swiw_cq *cq = cqx_cq(cqx);
	struct swiw_cqe *e = swiw_ring_cons_slot(&cq->ring);

	if (!e)
		return ENOENT;
	swiw_cqe_to_wc(e, &cq->cur);
	swiw_ring_release(&cq->ring, e);
	cqx->wr_id = cq->cur.wr_id;
	cqx->status = cq->cur.status;
	return 0;
}

/* The poll lock is held from a successful start_poll to end_poll. */
static int cqx_start_poll(struct ibv_cq_ex *cqx, struct ibv_poll_cq_attr *attr)
{
	struct swiw_cq *cq = cqx_cq(cqx);
	uint64_t now;
	int err;

	if (attr && attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->poll_lock);
	err = cqx_take(cqx);
	if (!err) {
		swiw_engine_polled(1, 0);
		return 0;
	}
	/* Empty: as ibv_poll_cq, move the engine ourselves (poll mode),
	 * then look again. */
	pthread_spin_unlock(&cq->poll_lock);
	now = swiw_engine_poll();
	pthread_spin_lock(&cq->poll_lock);
	err = cqx_take(cqx);
	/* One found: no longer waiting. */
	if (err)
		pthread_spin_unlock(&cq->poll_lock);
	else
		swiw_engine_polled(1, now);
	return err;
}

static int cqx_next_poll(struct ibv_cq_ex *cqx)
{
	return cqx_take(cqx);
}

static void cqx_end_poll(struct ibv_cq_ex *cqx)
{
	pthread_spin_unlock(&cqx_cq(cqx)->poll_lock);
}

static enum ibv_wc_opcode cqx_read_opcode(struct ibv_cq_ex *cqx)
{
	return cqx_cq(cqx)->cur.opcode;
}

static uint32_t cqx_read_vendor_err(struct ibv_cq_ex *cqx)
{
	return cqx_cq(cqx)->cur.vendor_err;
}

static uint32_t cqx_read_byte_len(struct ibv_cq_ex *cqx)
{
	return cqx_cq(cqx)->cur.byte_len;
}

/* The immediate data or the invalidated STag, as read_wc_flags says. */
static __be32 cqx_read_imm_data(struct ibv_cq_ex *cqx)
{
	return cqx_cq(cqx)->cur.imm_data;
}

static uint32_t cqx_read_qp_num(struct ibv_cq_ex *cqx)
{
	return cqx_cq(cqx)->cur.qp_num;
}

static uint32_t cqx_read_src_qp(struct ibv_cq_ex *cqx)
{
	return cqx_cq(cqx)->cur.src_qp;
}

static unsigned int cqx_read_wc_flags(struct ibv_cq_ex *cqx)
{
	return cqx_cq(cqx)->cur.wc_flags;
}

/* iWARP has no LIDs or service levels. */
static uint32_t cqx_read_slid(struct ibv_cq_ex *cqx)
{
	(void)cqx;
	return 0;
}

static uint8_t cqx_read_u8_zero(struct ibv_cq_ex *cqx)
{
	(void)cqx;
	return 0;
}

struct ibv_cq_ex *swiw_create_cq_ex(struct ibv_context *ctx,
				    struct ibv_cq_init_attr_ex *attr)
{
	struct ibv_cq_ex *cqx;
	struct ibv_cq *ibcq;

	/* A parent domain (MASK_PD) and the IGNORE_OVERRUN flag are not
	 * offered; SINGLE_THREADED is only a hint. */
	if ((attr->comp_mask & ~IBV_CQ_INIT_ATTR_MASK_FLAGS) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) ||
	    (attr->wc_flags & ~(uint64_t)SWIW_CQ_WC_FLAGS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->cqe > INT_MAX || attr->comp_vector > INT_MAX) {
		errno = EINVAL;
		return NULL;
	}
	ibcq = swiw_create_cq(ctx, (int)attr->cqe, attr->channel,
			      (int)attr->comp_vector);
	if (!ibcq)
		return NULL;
	cqx = &to_swiw_cq(ibcq)->vcq.cq_ex;
	cqx->start_poll = cqx_start_poll;
	cqx->next_poll = cqx_next_poll;
	cqx->end_poll = cqx_end_poll;
	cqx->read_opcode = cqx_read_opcode;
	cqx->read_vendor_err = cqx_read_vendor_err;
	cqx->read_wc_flags = cqx_read_wc_flags;
	cqx->read_byte_len = cqx_read_byte_len;
	cqx->read_imm_data = cqx_read_imm_data;
	cqx->read_qp_num = cqx_read_qp_num;
	cqx->read_src_qp = cqx_read_src_qp;
	cqx->read_slid = cqx_read_slid;
	cqx->read_sl = cqx_read_u8_zero;
	cqx->read_dlid_path_bits = cqx_read_u8_zero;
	return cqx;
}
