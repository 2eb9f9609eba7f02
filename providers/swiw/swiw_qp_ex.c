// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ibv_create_qp_ex and the ibv_qp_ex work request builders (ibv_wr_*).
 *
 * A builder call (wr_send, wr_rdma_write, ...) starts a work request as
 * an ibv_send_wr; the data call after it (wr_set_sge, ...) completes it,
 * or the next builder or wr_complete does when it has no data. Either way
 * the work request goes through swiw_build_sqe(), as post_send's do, into
 * the next free SQ slot, which stays unpublished: the engine sees none of
 * the batch before wr_complete publishes it all in order, and wr_abort or
 * a failed check drops it all. The SQ lock is held from wr_start on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "swiw.h"

#define SWIW_QPX_OPS                                                      \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
	 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |             \
	 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |   \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV | \
	 IBV_QP_EX_WITH_SEND_WITH_INV)

#define SWIW_QPX_ATTRS                                         \
	(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS | \
	 IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)

struct swiw_qpx {
	uint64_t ops; /* IBV_QP_EX_WITH_* the QP was created with */
	int state; /* swiw_sq_state() at wr_start */
	int err; /* the first failure since wr_start */
	uint32_t n; /* SQEs built since wr_start */
	bool pending; /* wr waits for its data */
	struct ibv_send_wr wr;
	uint16_t flags[]; /* per SQE built: what publishing sets */
};

static struct swiw_qp *qpx_qp(struct ibv_qp_ex *qpx)
{
	return swiw_container_of(qpx, struct swiw_qp, vqp.qp_ex);
}

/* Writes the pending work request into the next unpublished slot. */
static void qpx_build(struct swiw_qp *qp, struct swiw_qpx *x)
{
	struct swiw_sqe *sqe;
	int err = ENOMEM; /* the send queue is full */

	x->pending = false;
	if (x->err)
		return;
	sqe = swiw_ring_slot(&qp->sq, qp->sq.pos + x->n);
	if (x->n < qp->sq.num &&
	    !(swiw_ring_load_flags(&qp->sq, sqe) & SWIW_SLOT_VALID))
		err = swiw_build_sqe(qp, &x->wr, sqe, &x->flags[x->n]);
	if (err)
		x->err = err;
	else
		x->n++;
}

/* A builder: the previous work request is done, this one starts. */
static struct swiw_qpx *qpx_begin(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op,
				  uint64_t need)
{
	struct swiw_qp *qp = qpx_qp(qpx);
	struct swiw_qpx *x = qp->qpx;

	if (x->pending)
		qpx_build(qp, x);
	if (!(x->ops & need) && !x->err)
		x->err = EINVAL; /* not asked for at creation */
	memset(&x->wr, 0, sizeof(x->wr));
	x->wr.wr_id = qpx->wr_id;
	x->wr.send_flags = qpx->wr_flags;
	x->wr.opcode = op;
	x->pending = true;
	return x;
}

static void qpx_send(struct ibv_qp_ex *qpx)
{
	qpx_begin(qpx, IBV_WR_SEND, IBV_QP_EX_WITH_SEND);
}

static void qpx_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	qpx_begin(qpx, IBV_WR_SEND_WITH_IMM, IBV_QP_EX_WITH_SEND_WITH_IMM)
		->wr.imm_data = imm;
}

static void qpx_send_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	qpx_begin(qpx, IBV_WR_SEND_WITH_INV, IBV_QP_EX_WITH_SEND_WITH_INV)
		->wr.invalidate_rkey = rkey;
}

static void qpx_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	qpx_begin(qpx, IBV_WR_LOCAL_INV, IBV_QP_EX_WITH_LOCAL_INV)
		->wr.invalidate_rkey = rkey;
}

static struct swiw_qpx *qpx_rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op,
				 uint64_t need, uint32_t rkey, uint64_t raddr)
{
	struct swiw_qpx *x = qpx_begin(qpx, op, need);

	x->wr.wr.rdma.rkey = rkey;
	x->wr.wr.rdma.remote_addr = raddr;
	return x;
}

static void qpx_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr)
{
	qpx_rdma(qpx, IBV_WR_RDMA_WRITE, IBV_QP_EX_WITH_RDMA_WRITE, rkey,
		 raddr);
}

static void qpx_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
			       uint64_t raddr, __be32 imm)
{
	qpx_rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM,
		 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, rkey, raddr)
		->wr.imm_data = imm;
}

static void qpx_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr)
{
	qpx_rdma(qpx, IBV_WR_RDMA_READ, IBV_QP_EX_WITH_RDMA_READ, rkey, raddr);
}

static void qpx_atomic(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op,
		       uint64_t need, uint32_t rkey, uint64_t raddr,
		       uint64_t compare_add, uint64_t swap)
{
	struct swiw_qpx *x = qpx_begin(qpx, op, need);

	x->wr.wr.atomic.rkey = rkey;
	x->wr.wr.atomic.remote_addr = raddr;
	x->wr.wr.atomic.compare_add = compare_add;
	x->wr.wr.atomic.swap = swap;
}

static void qpx_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr,
			uint64_t compare, uint64_t swap)
{
	qpx_atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP,
		   IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, rkey, raddr, compare,
		   swap);
}

static void qpx_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr,
			  uint64_t add)
{
	qpx_atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD,
		   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, rkey, raddr, add, 0);
}

/* A data call: completes the pending work request with @sge[@n]. */
static void qpx_data(struct ibv_qp_ex *qpx, const struct ibv_sge *sge, size_t n,
		     bool inl)
{
	struct swiw_qp *qp = qpx_qp(qpx);
	struct swiw_qpx *x = qp->qpx;

	if (!x->pending || n > SWIW_MAX_SGE) {
		if (!x->err)
			x->err = EINVAL; /* no builder before it, or too long */
		x->pending = false;
		return;
	}
	x->wr.sg_list = (struct ibv_sge *)sge;
	x->wr.num_sge = (int)n;
	if (inl)
		x->wr.send_flags |= IBV_SEND_INLINE;
	qpx_build(qp, x); /* copies the SGEs, or the inline data */
}

static void qpx_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr,
			uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	qpx_data(qpx, &sge, 1, false);
}

static void qpx_set_sge_list(struct ibv_qp_ex *qpx, size_t n,
			     const struct ibv_sge *sge)
{
	qpx_data(qpx, sge, n, false);
}

static void qpx_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				size_t length)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr,
			       .length = (uint32_t)length };

	if (length > UINT32_MAX)
		sge.length = UINT32_MAX; /* over max_inline: refused */
	qpx_data(qpx, &sge, 1, true);
}

static void qpx_set_inline_data_list(struct ibv_qp_ex *qpx, size_t n,
				     const struct ibv_data_buf *buf)
{
	struct ibv_sge sge[SWIW_MAX_SGE];
	size_t i;

	for (i = 0; i < n && i < SWIW_MAX_SGE; i++) {
		sge[i].addr = (uintptr_t)buf[i].addr;
		sge[i].length = buf[i].length > UINT32_MAX ?
					UINT32_MAX :
					(uint32_t)buf[i].length;
		sge[i].lkey = 0;
	}
	qpx_data(qpx, sge, n, true);
}

static void qpx_start(struct ibv_qp_ex *qpx)
{
	struct swiw_qp *qp = qpx_qp(qpx);
	struct swiw_qpx *x = qp->qpx;

	pthread_spin_lock(&qp->sq_lock);
	x->state = swiw_sq_state(qp);
	x->err = x->state < 0 ? EINVAL : 0;
	x->n = 0;
	x->pending = false;
}

static void qpx_abort(struct ibv_qp_ex *qpx)
{
	struct swiw_qp *qp = qpx_qp(qpx);

	/* Nothing was published: the slots are simply written again. */
	qp->qpx->n = 0;
	qp->qpx->pending = false;
	pthread_spin_unlock(&qp->sq_lock);
}

static int qpx_complete(struct ibv_qp_ex *qpx)
{
	struct swiw_qp *qp = qpx_qp(qpx);
	struct swiw_qpx *x = qp->qpx;
	int err;
	uint32_t i;

	if (x->pending)
		qpx_build(qp, x);
	err = x->err;
	if (err) {
		qpx_abort(qpx);
		return err;
	}
	for (i = 0; i < x->n; i++)
		swiw_ring_publish(&qp->sq, swiw_ring_slot(&qp->sq, qp->sq.pos),
				  x->flags[i]);
	x->n = 0;
	pthread_spin_unlock(&qp->sq_lock);
	if (i)
		swiw_sq_posted(qp, x->state);
	return 0;
}

static void qpx_init(struct swiw_qp *qp)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;

	qpx->wr_send = qpx_send;
	qpx->wr_send_imm = qpx_send_imm;
	qpx->wr_send_inv = qpx_send_inv;
	qpx->wr_local_inv = qpx_local_inv;
	qpx->wr_rdma_write = qpx_rdma_write;
	qpx->wr_rdma_write_imm = qpx_rdma_write_imm;
	qpx->wr_rdma_read = qpx_rdma_read;
	qpx->wr_atomic_cmp_swp = qpx_cmp_swp;
	qpx->wr_atomic_fetch_add = qpx_fetch_add;
	qpx->wr_set_sge = qpx_set_sge;
	qpx->wr_set_sge_list = qpx_set_sge_list;
	qpx->wr_set_inline_data = qpx_set_inline_data;
	qpx->wr_set_inline_data_list = qpx_set_inline_data_list;
	qpx->wr_start = qpx_start;
	qpx->wr_complete = qpx_complete;
	qpx->wr_abort = qpx_abort;
	qp->vqp.comp_mask |= SWIW_VERBS_QP_EX;
}

struct ibv_qp *swiw_create_qp_ex(struct ibv_context *ctx,
				 struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_init_attr init;
	struct swiw_qpx *x = NULL;
	struct ibv_qp *ibqp;
	struct swiw_qp *qp;
	bool ex = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;

	/* XRC, TSO, RSS and create flags (scatter-FCS, ...) are not offered;
	 * nor are memory windows, TSO or atomic writes among the ops. */
	if ((attr->comp_mask & ~(uint32_t)SWIW_QPX_ATTRS) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags) ||
	    (ex && (attr->send_ops_flags & ~(uint64_t)SWIW_QPX_OPS))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd ||
	    attr->pd->context != ctx) {
		errno = EINVAL;
		return NULL;
	}
	init = (struct ibv_qp_init_attr){ .qp_context = attr->qp_context,
					  .send_cq = attr->send_cq,
					  .recv_cq = attr->recv_cq,
					  .srq = attr->srq,
					  .cap = attr->cap,
					  .qp_type = attr->qp_type,
					  .sq_sig_all = attr->sq_sig_all };
	ibqp = swiw_create_qp(attr->pd, &init);
	if (!ibqp)
		return NULL;
	qp = to_swiw_qp(ibqp);
	if (ex) {
		x = calloc(1,
			   sizeof(*x) + qp->max_send_wr * sizeof(x->flags[0]));
		if (!x) {
			swiw_destroy_qp(ibqp);
			errno = ENOMEM;
			return NULL;
		}
		x->ops = attr->send_ops_flags;
		qp->qpx = x;
		qpx_init(qp);
	}
	attr->cap = init.cap;
	return ibqp;
}
