// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completions of what the peer sent. The lower half (wire/swiw_lower*.c,
 * in whichever engine runs it) placed the data and reports each message
 * that ended as an event (swiw_stream_lower.c); this file turns it into
 * the receive WR's completion, or the READ's or atomic's. Under the
 * engine lock (swiw_engine.c).
 */
#include <errno.h>
#include <string.h>

#include "swiw.h"
#include "swiw_stream.h"

/*
 * @avail receive WRs wait in the SRQ of @s, armed at @limit: below it the
 * limit event fires, once (whoever clears the arm first raises it).
 */
void swiw_srq_limit_fire(struct swiw_stream *s, uint32_t limit, uint32_t avail)
{
	struct swiw_srq *srq = s->qp->srq;

	if (avail >= limit ||
	    !__atomic_compare_exchange_n(&srq->limit, &limit, 0, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	swiw_post_async(to_swiw_ctx(s->qp->vqp.qp.context),
			IBV_EVENT_SRQ_LIMIT_REACHED, (uintptr_t)&srq->vsrq.srq);
}

static void complete_recv(struct swiw_stream *s, uint64_t id, uint8_t op,
			  uint32_t bytes, uint8_t flags, uint32_t imm_or_inv)
{
	struct swiw_cqe e = { .id = id,
			      .opcode = op,
			      .flags = flags,
			      .status = IBV_WC_SUCCESS,
			      .bytes = bytes,
			      .imm_or_inv = imm_or_inv,
			      .qp_num = swiw_stream_qpn(s),
			      .src_qp = s->qp->dest_qpn };

	s->rqe.valid = false;
	swiw_stream_push_cqe(s, s->qp->rcq, &e);
}

enum swiw_mpa_rtr swiw_rx_rtr_kind(const struct swiw_ddp_seg *g)
{
	if (g->opcode == RDMAP_WRITE && !g->payload_len)
		return SWIW_MPA_RTR_WRITE;
	if (g->opcode == RDMAP_READ_REQ && !g->u.rreq.size)
		return SWIW_MPA_RTR_READ;
	if (g->opcode == RDMAP_SEND && !g->payload_len)
		return SWIW_MPA_RTR_SEND;
	return SWIW_MPA_RTR_NONE;
}

void swiw_rx_complete(struct swiw_stream *s, const struct swiw_ddp_seg *g,
		      uint64_t rqe_id, uint32_t bytes, bool after_write,
		      bool mirror_inv)
{
	uint8_t fl = 0;

	switch (g->opcode) {
	case RDMAP_READ_RESP:
		if (s->rd_head != s->rd_tail) {
			struct rd_out *rd = &s->rd[s->rd_head++ % SWIW_MAX_ORD];

			if (rd->last) {
				s->infl[rd->slot & s->infl_mask].done = true;
				swiw_stream_sq_drain(s);
			}
		}
		break;
	case RDMAP_SEND:
	case RDMAP_SEND_SE:
	case RDMAP_SEND_INVAL:
	case RDMAP_SEND_SE_INVAL:
		if (g->op->flags & SWIW_OPF_SE)
			fl |= SWIW_CQE_SOLICITED;
		if (g->op->flags & SWIW_OPF_INVAL) {
			/* The lower half invalidated it; a helper's table is
			 * its own, and ours follows. */
			if (mirror_inv)
				swiw_mem_invalidate(g->rsvd_ulp,
						    s->qp->vqp.qp.pd);
			fl |= SWIW_CQE_INV;
		}
		complete_recv(s, rqe_id, SWIW_OP_RECV, bytes, fl, g->rsvd_ulp);
		break;
	case RDMAP_IMM_DATA:
	case RDMAP_IMM_DATA_SE: {
		uint32_t imm;

		memcpy(&imm, g->u.imm, sizeof(imm));
		fl = SWIW_CQE_IMM |
		     (g->op->flags & SWIW_OPF_SE ? SWIW_CQE_SOLICITED : 0);
		complete_recv(s, rqe_id,
			      after_write ? SWIW_OP_RECV_RDMA_IMM :
					    SWIW_OP_RECV,
			      after_write ? bytes : 0, fl, imm);
		break;
	}
	case RDMAP_TERMINATE:
		s->vendor_err = SWIW_VENDOR_ERR(
			g->u.term.layer, g->u.term.etype, g->u.term.ecode);
		swiw_stream_fail(s, SWIW_V_NONE, NULL, 0,
				 (int)swiw_term_peer_status(g->u.term.layer,
							    g->u.term.etype,
							    g->u.term.ecode),
				 IBV_EVENT_QP_FATAL);
		break;
	case RDMAP_ATOMIC_RESP: {
		struct rd_out *rd;
		uint64_t orig = g->u.aresp.orig;

		if (s->rd_head == s->rd_tail)
			break;
		rd = &s->rd[s->rd_head++ % SWIW_MAX_ORD];
		memcpy(rd->result, &orig, sizeof(orig));
		s->infl[rd->slot & s->infl_mask].done = true;
		swiw_stream_sq_drain(s);
		break;
	}
	default:
		break;
	}
}
