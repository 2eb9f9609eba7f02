// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RC queue pairs: creation against the device limits, the state machine,
 * and the post verbs, which check each work request and write it into
 * the send or receive ring for the engine. Only the engine consumes the
 * rings; a QP in the error state has everything flushed by it, so every
 * posted work request completes exactly once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "swiw.h"

static bool caps_valid(const struct ibv_qp_cap *cap, bool srq)
{
	return cap->max_send_wr <= SWIW_MAX_QP_WR &&
	       cap->max_send_sge <= SWIW_MAX_SGE &&
	       cap->max_inline_data <= SWIW_MAX_INLINE &&
	       (srq || (cap->max_recv_wr <= SWIW_MAX_QP_WR &&
			cap->max_recv_sge <= SWIW_MAX_SGE));
}

struct ibv_qp *swiw_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct swiw_context *sctx = to_swiw_ctx(pd->context);
	struct ibv_qp_cap *cap = &attr->cap;
	struct swiw_qp *qp;
	uint32_t num, area, stride;
	int err;

	if (attr->qp_type != IBV_QPT_RC) {
		errno = EOPNOTSUPP; /* iWARP is reliable connected only */
		return NULL;
	}
	if (!attr->send_cq || !attr->recv_cq ||
	    attr->send_cq->context != pd->context ||
	    attr->recv_cq->context != pd->context ||
	    (attr->srq && attr->srq->context != pd->context) ||
	    !caps_valid(cap, attr->srq)) {
		errno = EINVAL;
		return NULL;
	}
	qp = swiw_obj_alloc(&sctx->nqp, SWIW_MAX_QP, sizeof(*qp));
	if (!qp)
		return NULL;

	num = swiw_roundup_pow2(cap->max_send_wr ? cap->max_send_wr : 1);
	area = cap->max_send_sge * (uint32_t)sizeof(struct swiw_sge);
	if (area < cap->max_inline_data)
		area = cap->max_inline_data;
	area = (area + 15) & ~15u;
	if (!area)
		area = sizeof(struct swiw_sge);
	stride = SWIW_SQE_HDR_SIZE + area;
	qp->sq_mem = swiw_ring_alloc(num, stride, 0, &qp->sq_mem_len);
	if (!qp->sq_mem) {
		err = ENOMEM;
		goto fail;
	}
	qp->sq = (struct swiw_ring){ .base = qp->sq_mem,
				     .num = num,
				     .stride = stride,
				     .flags_off =
					     offsetof(struct swiw_sqe, flags),
				     .flags16 = true };
	qp->sq_eng = qp->sq;
	qp->max_send_wr = num;
	qp->max_send_sge = area / sizeof(struct swiw_sge);
	if (qp->max_send_sge > SWIW_MAX_SGE)
		qp->max_send_sge = SWIW_MAX_SGE;
	qp->max_inline = area < SWIW_MAX_INLINE ? area : SWIW_MAX_INLINE;

	if (attr->srq) {
		qp->srq = to_swiw_srq(attr->srq);
		qp->rq = &qp->srq->rq;
		atomic_fetch_add(&qp->srq->users, 1);
	} else {
		num = swiw_roundup_pow2(cap->max_recv_wr ? cap->max_recv_wr :
							   1);
		err = swiw_rq_init(&qp->own_rq, num,
				   cap->max_recv_sge ? cap->max_recv_sge : 1);
		if (err)
			goto fail;
		qp->rq = &qp->own_rq;
		qp->max_recv_wr = num;
		qp->max_recv_sge = qp->own_rq.max_sge;
	}
	qp->scq = to_swiw_cq(attr->send_cq);
	qp->rcq = to_swiw_cq(attr->recv_cq);
	atomic_fetch_add(&qp->scq->users, 1);
	atomic_fetch_add(&qp->rcq->users, 1);
	atomic_fetch_add(&to_swiw_pd(pd)->usecnt, 1);
	qp->sq_sig_all = attr->sq_sig_all;
	qp->cm = sctx->cm;
	qp->state = IBV_QPS_RESET;
	pthread_mutex_init(&qp->state_lock, NULL);
	pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);

	/* What the QP can actually hold, as the verbs contract says. */
	cap->max_send_wr = qp->max_send_wr;
	cap->max_send_sge = qp->max_send_sge;
	cap->max_inline_data = qp->max_inline;
	if (!attr->srq) {
		cap->max_recv_wr = qp->max_recv_wr;
		cap->max_recv_sge = qp->max_recv_sge;
	}
	qp->vqp.qp.context = pd->context;
	qp->vqp.qp.qp_context = attr->qp_context;
	qp->vqp.qp.pd = pd;
	qp->vqp.qp.send_cq = attr->send_cq;
	qp->vqp.qp.recv_cq = attr->recv_cq;
	qp->vqp.qp.srq = attr->srq;
	qp->vqp.qp.qp_type = IBV_QPT_RC;
	qp->vqp.qp.state = IBV_QPS_RESET;
	/* The QPN comes from the broker, unique in the network namespace. */
	err = swiw_conn_qp_create(qp);
	if (err)
		goto fail_conn;
	return &qp->vqp.qp;
fail_conn:
	pthread_mutex_destroy(&qp->state_lock);
	pthread_spin_destroy(&qp->sq_lock);
	atomic_fetch_sub(&qp->scq->users, 1);
	atomic_fetch_sub(&qp->rcq->users, 1);
	atomic_fetch_sub(&to_swiw_pd(pd)->usecnt, 1);
	if (qp->srq)
		atomic_fetch_sub(&qp->srq->users, 1);
	else
		swiw_rq_destroy(&qp->own_rq);
fail:
	swiw_ring_free(qp->sq_mem, qp->sq_mem_len);
	swiw_obj_free(&sctx->nqp, qp);
	errno = err;
	return NULL;
}

int swiw_destroy_qp(struct ibv_qp *ibqp)
{
	struct swiw_qp *qp = to_swiw_qp(ibqp);

	/* A destroyed QP's work requests vanish without completions. */
	pthread_mutex_lock(&qp->state_lock);
	swiw_conn_qp_destroy(qp);
	swiw_engine_reset_qp(qp);
	pthread_mutex_unlock(&qp->state_lock);
	atomic_fetch_sub(&qp->scq->users, 1);
	atomic_fetch_sub(&qp->rcq->users, 1);
	if (qp->srq)
		atomic_fetch_sub(&qp->srq->users, 1);
	else
		swiw_rq_destroy(&qp->own_rq);
	atomic_fetch_sub(&to_swiw_pd(ibqp->pd)->usecnt, 1);
	swiw_ring_free(qp->sq_mem, qp->sq_mem_len);
	pthread_mutex_destroy(&qp->state_lock);
	pthread_spin_destroy(&qp->sq_lock);
	free(qp->qpx);
	swiw_obj_free(&to_swiw_ctx(ibqp->context)->nqp, qp);
	return 0;
}

/* The transitions of the IB QP state machine an iWARP RC QP takes. */
static bool transition_valid(enum ibv_qp_state cur, enum ibv_qp_state next)
{
	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR)
		return true;
	switch (cur) {
	case IBV_QPS_RESET:
		return next == IBV_QPS_INIT;
	case IBV_QPS_INIT:
		return next == IBV_QPS_INIT || next == IBV_QPS_RTR;
	case IBV_QPS_RTR:
		return next == IBV_QPS_RTS;
	case IBV_QPS_RTS:
		return next == IBV_QPS_RTS || next == IBV_QPS_SQD;
	case IBV_QPS_SQD:
		return next == IBV_QPS_RTS || next == IBV_QPS_SQD;
	default:
		return false;
	}
}

#define SWIW_QP_ACCESS                                      \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static int check_attrs(struct swiw_qp *qp, const struct ibv_qp_attr *a,
		       int mask, enum ibv_qp_state next)
{
	static const union ibv_gid zero;

	if ((mask & IBV_QP_PORT) && a->port_num != SWIW_PORT)
		return EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index >= SWIW_MAX_PKEY)
		return EINVAL;
	if ((mask & IBV_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags & ~SWIW_QP_ACCESS))
		return EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
	    a->max_dest_rd_atomic > SWIW_MAX_IRD)
		return EINVAL;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > SWIW_MAX_ORD)
		return EINVAL;
	/* iWARP routes by IP address: the GID is the peer, LIDs mean nothing. */
	if ((mask & IBV_QP_AV) &&
	    (!a->ah_attr.is_global ||
	     a->ah_attr.grh.sgid_index >= SWIW_MAX_GID ||
	     !memcmp(&a->ah_attr.grh.dgid, &zero, sizeof(zero))))
		return EINVAL;
	if ((mask & IBV_QP_CAP) && (a->cap.max_send_wr > qp->max_send_wr ||
				    a->cap.max_recv_wr > qp->max_recv_wr))
		return EINVAL; /* queues are not resized */
	/* Connecting by modify_qp needs the peer's address and QP number;
	 * the CM connects its QPs itself. */
	if (!qp->cm &&
	    __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE) == IBV_QPS_INIT &&
	    next == IBV_QPS_RTR &&
	    (mask & (IBV_QP_AV | IBV_QP_DEST_QPN)) !=
		    (IBV_QP_AV | IBV_QP_DEST_QPN))
		return EINVAL;
	return 0;
}

/* INIT to RTR: the QP's connection is made by the broker and the engine. */
static int connect_rtr(struct swiw_qp *qp, const struct ibv_qp_attr *attr)
{
	struct ibv_context *ctx = qp->vqp.qp.context;
	union ibv_gid sgid;

	if (swiw_query_gid(ctx, SWIW_PORT, attr->ah_attr.grh.sgid_index, &sgid))
		return EINVAL;
	if (!memcmp(&sgid, &(union ibv_gid){ 0 }, sizeof(sgid))) {
		swiw_err("QP %u: GID index %u of %s is not in use",
			 qp->vqp.qp.qp_num, attr->ah_attr.grh.sgid_index,
			 ctx->device->name);
		return EINVAL;
	}
	return swiw_conn_rtr(qp, &sgid, to_swiw_dev(ctx->device)->ifindex);
}

int swiw_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct swiw_qp *qp = to_swiw_qp(ibqp);
	enum ibv_qp_state cur, next;
	int err;

	pthread_mutex_lock(&qp->state_lock);
	cur = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);
	if ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur) {
		err = EINVAL;
		goto out;
	}
	next = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
	/*
	 * The CM takes its QPs to RTS when MPA completes; a program that
	 * then walks the IB sequence itself (rdma_init_qp_attr, rping -q,
	 * rdma_establish) finds the QP there already.
	 */
	if (qp->cm && (cur == IBV_QPS_RTR || cur == IBV_QPS_RTS) &&
	    (next == IBV_QPS_INIT || next == IBV_QPS_RTR))
		next = cur;
	if (next != cur && !transition_valid(cur, next)) {
		err = EINVAL;
		goto out;
	}
	err = check_attrs(qp, attr, mask, next);
	if (err)
		goto out;

	if (mask & IBV_QP_ACCESS_FLAGS) {
		__atomic_store_n(&qp->access, attr->qp_access_flags,
				 __ATOMIC_RELAXED);
		swiw_engine_qp_access(qp);
	}
	if (mask & IBV_QP_AV)
		qp->dgid = attr->ah_attr.grh.dgid;
	if (mask & IBV_QP_DEST_QPN)
		qp->dest_qpn = attr->dest_qp_num;
	/* The engine reads these while it connects the QP (swiw_stream.c). */
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		__atomic_store_n(&qp->ird, attr->max_dest_rd_atomic,
				 __ATOMIC_RELAXED);
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		__atomic_store_n(&qp->ord, attr->max_rd_atomic,
				 __ATOMIC_RELAXED);
	if (mask & IBV_QP_SQ_PSN) {
		qp->sq_psn = attr->sq_psn;
		qp->sq_psn_given = true;
	}
	if (mask & IBV_QP_RQ_PSN)
		qp->rq_psn = attr->rq_psn;
	if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR) {
		err = qp->rq_stale ? swiw_engine_renew_rq(qp) : 0;
		if (err)
			goto out;
		if (!qp->cm || (mask & (IBV_QP_AV | IBV_QP_DEST_QPN)) ==
				       (IBV_QP_AV | IBV_QP_DEST_QPN))
			err = connect_rtr(qp, attr);
		if (err)
			goto out;
	}
	__atomic_store_n(&qp->state, next, __ATOMIC_RELEASE);
	if (cur == IBV_QPS_RTR && next == IBV_QPS_RTS && !qp->cm)
		swiw_conn_rts(qp);
	if (next == IBV_QPS_ERR) {
		swiw_conn_stop(qp);
		swiw_engine_flush_qp(qp);
	} else if (next == IBV_QPS_RESET) {
		int rerr;

		swiw_conn_stop(qp);
		qp->sq_psn_given = false;
		swiw_engine_reset_qp(qp);
		rerr = swiw_engine_renew_rq(qp);
		if (rerr)
			swiw_warn("QP %u: no fresh receive queue at RESET: %s",
				  qp->vqp.qp.qp_num, strerror(rerr));
	}
out:
	pthread_mutex_unlock(&qp->state_lock);
	return err;
}

int swiw_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
		  struct ibv_qp_init_attr *init)
{
	struct swiw_qp *qp = to_swiw_qp(ibqp);

	(void)mask; /* everything is cheap to report */
	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	pthread_mutex_lock(&qp->state_lock);
	attr->qp_state = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);
	attr->cur_qp_state = attr->qp_state;
	attr->path_mtu = IBV_MTU_4096;
	attr->qp_access_flags = qp->access;
	attr->dest_qp_num = qp->dest_qpn;
	attr->ah_attr.is_global = 1;
	attr->ah_attr.grh.dgid = qp->dgid;
	attr->ah_attr.port_num = SWIW_PORT;
	attr->port_num = SWIW_PORT;
	/* The engine sets these as MPA completes (swiw_cm_report), without
	 * state_lock. */
	attr->max_dest_rd_atomic = __atomic_load_n(&qp->ird, __ATOMIC_RELAXED);
	attr->max_rd_atomic = __atomic_load_n(&qp->ord, __ATOMIC_RELAXED);
	attr->sq_psn = qp->sq_psn;
	attr->rq_psn = qp->rq_psn;
	attr->sq_draining = 0;
	pthread_mutex_unlock(&qp->state_lock);
	attr->cap.max_send_wr = qp->max_send_wr;
	attr->cap.max_recv_wr = qp->max_recv_wr;
	attr->cap.max_send_sge = qp->max_send_sge;
	attr->cap.max_recv_sge = qp->max_recv_sge;
	attr->cap.max_inline_data = qp->max_inline;
	init->qp_type = IBV_QPT_RC;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->qp_context = ibqp->qp_context;
	init->cap = attr->cap;
	init->sq_sig_all = qp->sq_sig_all;
	return 0;
}

static int sqe_opcode(enum ibv_wr_opcode op, uint8_t *out)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
		*out = SWIW_OP_WRITE;
		return 0;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		*out = SWIW_OP_WRITE_IMM;
		return 0;
	case IBV_WR_SEND:
		*out = SWIW_OP_SEND;
		return 0;
	case IBV_WR_SEND_WITH_IMM:
		*out = SWIW_OP_SEND_IMM;
		return 0;
	case IBV_WR_SEND_WITH_INV:
		*out = SWIW_OP_SEND_INV;
		return 0;
	case IBV_WR_RDMA_READ:
		*out = SWIW_OP_READ;
		return 0;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		*out = SWIW_OP_CMP_SWAP;
		return 0;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		*out = SWIW_OP_FETCH_ADD;
		return 0;
	case IBV_WR_LOCAL_INV:
		*out = SWIW_OP_LOCAL_INV;
		return 0;
	default:
		return EINVAL; /* memory windows, TSO, driver opcodes */
	}
}

/*
 * Checks one work request and writes it into @sqe; 0 or a positive errno.
 * post_send and the ibv_qp_ex builders (swiw_qp_ex.c) both come here.
 */
int swiw_build_sqe(struct swiw_qp *qp, const struct ibv_send_wr *wr,
		   struct swiw_sqe *sqe, uint16_t *flags_out)
{
	uint64_t total = 0;
	uint16_t flags = 0;
	uint8_t op;
	int i, err;

	err = sqe_opcode(wr->opcode, &op);
	if (err)
		return err;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > SWIW_MAX_SGE)
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (total > SWIW_MAX_MSG_SIZE)
		return EINVAL;
	if (op == SWIW_OP_READ && (uint32_t)wr->num_sge > SWIW_MAX_SGE_RD)
		return EINVAL;
	if ((op == SWIW_OP_CMP_SWAP || op == SWIW_OP_FETCH_ADD) &&
	    (wr->num_sge != 1 || wr->sg_list[0].length != 8 ||
	     (wr->wr.atomic.remote_addr & 7)))
		return EINVAL; /* RFC 7306: one aligned 64-bit operand */

	/*
	 * Everything but the flags word, which the engine may be polling:
	 * only swiw_ring_publish() writes it (atomically).
	 */
	sqe->id = 0;
	memset((uint8_t *)sqe + offsetof(struct swiw_sqe, num_sge), 0,
	       SWIW_SQE_HDR_SIZE - offsetof(struct swiw_sqe, num_sge));
	sqe->id = wr->wr_id;
	sqe->opcode = op;
	switch (op) {
	case SWIW_OP_WRITE:
	case SWIW_OP_WRITE_IMM:
	case SWIW_OP_READ:
		sqe->raddr = wr->wr.rdma.remote_addr;
		sqe->rkey = wr->wr.rdma.rkey;
		break;
	case SWIW_OP_CMP_SWAP:
	case SWIW_OP_FETCH_ADD:
		sqe->raddr = wr->wr.atomic.remote_addr;
		sqe->rkey = wr->wr.atomic.rkey;
		sqe->compare_add = wr->wr.atomic.compare_add;
		sqe->swap = wr->wr.atomic.swap;
		break;
	case SWIW_OP_SEND_INV:
	case SWIW_OP_LOCAL_INV:
		sqe->rkey = wr->invalidate_rkey;
		break;
	default:
		break;
	}
	if (op == SWIW_OP_WRITE_IMM || op == SWIW_OP_SEND_IMM) {
		sqe->imm_data = wr->imm_data;
		flags |= SWIW_WQE_IMM;
	}
	if ((wr->send_flags & IBV_SEND_SIGNALED) || qp->sq_sig_all)
		flags |= SWIW_WQE_SIGNALLED;
	if (wr->send_flags & IBV_SEND_SOLICITED)
		flags |= SWIW_WQE_SOLICITED;
	if (wr->send_flags & IBV_SEND_FENCE)
		flags |= SWIW_WQE_FENCE;

	if (wr->send_flags & IBV_SEND_INLINE) {
		uint8_t *dst = (uint8_t *)(sqe + 1);

		if (op == SWIW_OP_READ || op == SWIW_OP_CMP_SWAP ||
		    op == SWIW_OP_FETCH_ADD || op == SWIW_OP_LOCAL_INV ||
		    total > qp->max_inline)
			return EINVAL;
		for (i = 0; i < wr->num_sge; i++) {
			memcpy(dst, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			dst += wr->sg_list[i].length;
		}
		sqe->inline_len = (uint32_t)total;
		flags |= SWIW_WQE_INLINE;
	} else {
		if ((uint32_t)wr->num_sge > qp->max_send_sge)
			return EINVAL;
		sqe->num_sge = (uint8_t)wr->num_sge;
		if (wr->num_sge) /* sg_list may be NULL without SGEs */
			memcpy(sqe + 1, wr->sg_list,
			       (size_t)wr->num_sge * sizeof(struct swiw_sge));
	}
	*flags_out = flags; /* without VALID: swiw_ring_publish sets it */
	return 0;
}

/*
 * The QP's state if it takes send work, else -1. RTR is accepted: a QP
 * connected by modify_qp has its stream from RTR on, and perftest's
 * send_bw server, which never goes to RTS, posts its iWARP credit Writes
 * there. The work waits for MPA.
 */
int swiw_sq_state(struct swiw_qp *qp)
{
	enum ibv_qp_state state = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);

	return state == IBV_QPS_RESET || state == IBV_QPS_INIT ? -1 :
								 (int)state;
}

/* After SQEs were published: wake the engine, or flush a QP in error. */
void swiw_sq_posted(struct swiw_qp *qp, int state)
{
	swiw_engine_sq_posted(qp);
	/* Posted to a QP in error: they complete at once, flushed. */
	if (state == IBV_QPS_ERR) {
		pthread_mutex_lock(&qp->state_lock);
		swiw_engine_flush_qp(qp);
		pthread_mutex_unlock(&qp->state_lock);
	}
}

int swiw_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr)
{
	struct swiw_qp *qp = to_swiw_qp(ibqp);
	int state, err = 0;

	state = swiw_sq_state(qp);
	if (state < 0) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&qp->sq_lock);
	for (; wr; wr = wr->next) {
		struct swiw_sqe *sqe = swiw_ring_prod_slot(&qp->sq);
		uint16_t flags;

		if (!sqe) {
			err = ENOMEM; /* the send queue is full */
			break;
		}
		err = swiw_build_sqe(qp, wr, sqe, &flags);
		if (err)
			break;
		swiw_ring_publish(&qp->sq, sqe, flags);
	}
	pthread_spin_unlock(&qp->sq_lock);
	if (err)
		*bad_wr = wr;
	swiw_sq_posted(qp, state);
	return err;
}

int swiw_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr)
{
	struct swiw_qp *qp = to_swiw_qp(ibqp);
	enum ibv_qp_state state;
	int err;

	state = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);
	if (qp->srq || state == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}
	err = swiw_rq_post(qp->rq, wr, bad_wr);
	if (state == IBV_QPS_ERR) {
		pthread_mutex_lock(&qp->state_lock);
		swiw_engine_flush_qp(qp);
		pthread_mutex_unlock(&qp->state_lock);
	}
	return err;
}
