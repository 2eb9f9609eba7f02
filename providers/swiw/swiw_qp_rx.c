// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The in-process engine's receive side: whatever the socket holds is read
 * into a staging buffer in one recv, and a large payload the staging
 * buffer does not hold yet is received straight into its destination,
 * through the deframer's pull interface. swiw_ddp_rx_segment decides
 * every placement, with the STag table and the RQ/SRQ ring behind its
 * lookups; completed messages complete their WRs here. Under the engine
 * lock (swiw_engine.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "swiw.h"
#include "swiw_stream.h"

/* Memory lookups for swiw_ddp_rx_segment ------------------------------ */

static int lookup_tagged(void *ctx, unsigned int opcode, u32 stag,
			 struct swiw_ddp_region *r)
{
	struct swiw_stream *s = ctx;
	struct rd_out *rd = NULL;
	int err;

	swiw_eng_assert_held();
	if (opcode == RDMAP_READ_RESP) {
		if (s->rd_head == s->rd_tail)
			return -ENOENT;
		rd = &s->rd[s->rd_head % SWIW_MAX_ORD];
		if (rd->atomic || rd->sink_stag != stag)
			return -ENOENT;
		r->progress = &rd->prog;
	}
	err = swiw_mem_lookup(stag, NULL, 0, 0, 0, &s->tref);
	if (err)
		return rd ? 0 : -ENOENT; /* a zero-length READ has no sink */
	r->handle = &s->tref;
	r->base = s->tref.iova;
	r->len = s->tref.len;
	r->access = (u32)swiw_acc_bits(s->tref.access);
	r->associated = s->tref.pd == s->qp->vqp.qp.pd;
	return 0;
}

/*
 * An SRQ armed with a limit raises IBV_EVENT_SRQ_LIMIT_REACHED once when
 * fewer WRs than the limit are left, and is disarmed (limit 0). Counting
 * only up to the limit keeps this cheap and needs no producer index.
 */
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

static void srq_limit_check(struct swiw_stream *s)
{
	struct swiw_srq *srq = s->qp->srq;
	uint32_t limit = __atomic_load_n(&srq->limit, __ATOMIC_ACQUIRE);
	struct swiw_ring *r = &srq->rq.eng;
	uint32_t n;

	if (!limit)
		return;
	for (n = 0; n < limit; n++)
		if (!(swiw_ring_load_flags(r, swiw_ring_slot(r, r->pos + n)) &
		      SWIW_SLOT_VALID))
			break;
	swiw_srq_limit_fire(s, limit, n);
}

/* Takes the next receive WR for message @msn and checks its SGEs. */
static int lookup_untagged(void *ctx, u32 qn, u32 msn, struct swiw_ddp_rbuf *b)
{
	struct swiw_stream *s = ctx;
	struct rxbuf *rb = &s->rqe;
	const struct swiw_rqe *rqe;
	const struct swiw_sge *sge;
	uint32_t i;

	swiw_eng_assert_held();
	if (qn == RDMAP_QN_ATOMIC_RESP) {
		struct rd_out *rd = &s->rd[s->rd_head % SWIW_MAX_ORD];

		if (s->rd_head == s->rd_tail || !rd->atomic)
			return -ENOENT;
		b->handle = rd;
		b->len = RDMAP_ATOMIC_DATA_SIZE;
		b->progress = NULL;
		return 0;
	}
	if (qn != RDMAP_QN_SEND)
		return -ENOENT;
	if (!rb->valid || rb->msn != msn) {
		if (rb->valid)
			return -ENOENT; /* the previous one never completed */
		rqe = swiw_ring_cons_slot(&s->qp->rq->eng);
		if (!rqe)
			return -ENOENT;
		memset(rb, 0, sizeof(*rb));
		rb->valid = true;
		rb->id = rqe->id;
		rb->msn = msn;
		rb->nsge = rqe->num_sge <= s->qp->rq->max_sge ? rqe->num_sge :
								0;
		sge = (const struct swiw_sge *)(rqe + 1);
		for (i = 0; i < rb->nsge; i++) {
			struct swiw_mem_ref ref;
			uint64_t laddr = sge[i].laddr;
			uint32_t len = sge[i].length;

			if (len &&
			    swiw_mem_lookup(sge[i].lkey, s->qp->vqp.qp.pd,
					    IBV_ACCESS_LOCAL_WRITE, laddr, len,
					    &ref)) {
				rb->bad = true;
				break;
			}
			rb->sge[i].addr = len ? ref.addr + (laddr - ref.iova) :
						NULL;
			rb->sge[i].len = len;
			rb->len += len;
		}
		swiw_ring_release(&s->qp->rq->eng, (void *)rqe);
		if (s->qp->srq)
			srq_limit_check(s);
		if (rb->bad)
			return -ENOENT;
	}
	b->handle = rb;
	b->len = rb->len;
	b->progress = NULL;
	return 0;
}

const struct swiw_ddp_mem_ops swiw_rx_mem_ops = {
	.tagged = lookup_tagged,
	.untagged = lookup_untagged,
};

/* Where payload octet @k of the current segment goes, and how many of
 * the following octets are contiguous there (0: nowhere). */
static uint8_t *dest_of(struct swiw_stream *s, uint64_t k, uint64_t *room)
{
	uint64_t off = s->dst.offset + k;
	uint32_t i;

	*room = 0;
	if (!s->seg_ok || s->dst.action != SWIW_DDP_PLACE || !s->dst.handle ||
	    k >= s->dst.len)
		return NULL;
	if (s->dst.handle == &s->tref) {
		*room = s->dst.len - k;
		return s->tref.addr + off;
	}
	for (i = 0; i < s->rqe.nsge; i++) {
		if (off < s->rqe.sge[i].len) {
			*room = s->rqe.sge[i].len - off;
			if (*room > s->dst.len - k)
				*room = s->dst.len - k;
			return s->rqe.sge[i].addr + off;
		}
		off -= s->rqe.sge[i].len;
	}
	return NULL;
}

/* Copies @n payload octets from ULPDU offset @uoff into place. */
static void place(struct swiw_stream *s, uint32_t uoff, const uint8_t *p,
		  uint32_t n)
{
	uint64_t k, room;
	uint8_t *d;

	if (uoff < s->seg.hdr_len) {
		uint32_t skip = s->seg.hdr_len - uoff;

		if (skip >= n)
			return;
		p += skip;
		n -= skip;
		uoff += skip;
	}
	k = uoff - s->seg.hdr_len;
	while (n && (d = dest_of(s, k, &room))) {
		uint32_t c = room < n ? (uint32_t)room : n;

		if (d != p)
			memcpy(d, p, c);
		p += c;
		n -= c;
		k += c;
	}
}

/* Receive --------------------------------------------------------------- */

static void on_hdr(struct swiw_stream *s)
{
	enum swiw_violation v = SWIW_V_NONE;
	const uint8_t *h;
	uint32_t hl, ulen = swiw_fpdu_rx_ulpdu_len(&s->frx);
	int rc;

	/*
	 * Large FPDUs come in runs (bulk transfers, see swiw_rx_pump), with
	 * a short one ending each message that MULPDU split: only a run of
	 * short ones means small messages.
	 */
	if (ulen >= DIRECT_MIN)
		s->rx_small_run = 0;
	else if (s->rx_small_run < RX_SMALL_RUN)
		s->rx_small_run++;
	h = swiw_fpdu_rx_hdr(&s->frx, &hl);
	s->seg_ok = false;
	rc = swiw_ddp_rx_segment(&s->drx, h, ulen, &s->seg, &s->dst, &v);
	if (rc) {
		if (s->rqe.bad)
			v = SWIW_V_DDP_CATASTROPHIC;
		if (rc == -EPROTO && s->seg.opcode == RDMAP_TERMINATE)
			swiw_stream_fail(s, SWIW_V_NONE, NULL, 0, -1,
					 IBV_EVENT_QP_FATAL);
		else
			swiw_stream_violation(
				s, rc == -EPROTO ? v : SWIW_V_DDP_CATASTROPHIC,
				h, hl);
		return;
	}
	s->seg_ok = true;
	if (hl > s->seg.hdr_len)
		place(s, 0, h, hl);
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

/* A Send with Invalidate arrived whole: its STag goes first. */
static bool remote_inv(struct swiw_stream *s, uint32_t stag,
		       enum swiw_rx_inv how)
{
	int err;

	if (how == SWIW_RX_INV_DONE)
		return true;
	err = swiw_mem_invalidate(stag, s->qp->vqp.qp.pd);
	if (!err || how == SWIW_RX_INV_MIRROR)
		return true;
	swiw_stream_violation(s,
			      err == SWIW_MEM_NOT_ASSOC ?
				      SWIW_V_RDMAP_STAG_NOT_ASSOC :
				      SWIW_V_RDMAP_CANT_INVALIDATE,
			      NULL, 0);
	return false;
}

/*
 * An Atomic Request passed every check: run it on the target's 8 octets
 * with a compare-and-swap loop, so that it is atomic against every other
 * atomic and CPU access, and queue the response in order with the Read
 * Responses.
 */
static void atomic_exec(struct swiw_stream *s)
{
	const struct swiw_rdmap_atomic_req *a = &s->seg.u.areq;
	struct rresp *r = &s->rr[s->rr_tail % SWIW_MAX_IRD];
	uint64_t *t = (uint64_t *)(void *)(s->tref.addr + s->dst.offset);
	uint64_t orig, next;

	if ((uintptr_t)t & 7) {
		/* Aligned TO, unaligned address (a region registered at
		 * another iova): no atomic instruction can do it. */
		swiw_stream_violation(s, SWIW_V_RDMAP_ATOMIC_ALIGN, NULL, 0);
		return;
	}
	orig = __atomic_load_n(t, __ATOMIC_ACQUIRE);
	do {
		next = swiw_rdmap_atomic_apply(a, orig);
	} while (next != orig && !__atomic_compare_exchange_n(
					 t, &orig, next, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
	memset(r, 0, sizeof(*r));
	r->atomic = true;
	r->aresp.req_id = a->req_id;
	r->aresp.orig = orig;
	s->rr_tail++;
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

static void on_end(struct swiw_stream *s)
{
	struct swiw_ddp_seg *g = &s->seg;
	struct swiw_ddp_dest *d = &s->dst;

	if (!s->seg_ok)
		return;
	s->seg_ok = false;
	if (swiw_mpa_state(&s->mpa) == SWIW_MPA_S_AWAIT_RTR) {
		enum swiw_mpa_rtr k = swiw_rx_rtr_kind(g);

		swiw_mpa_rtr_received(&s->mpa, k);
		swiw_stream_mpa_events(s);
		if (s->failed || k == SWIW_MPA_RTR_WRITE)
			return; /* the RTR is no Write of the ULP's */
	}
	if (g->tagged && g->opcode == RDMAP_WRITE)
		s->write_acc += g->payload_len;
	switch (d->action) {
	case SWIW_DDP_PLACE:
		if (!d->complete)
			break;
		if (g->tagged && g->opcode == RDMAP_WRITE) {
			s->after_write = true;
			s->last_write_len = s->write_acc;
			s->write_acc = 0;
			break;
		}
		swiw_rx_complete(s, g, s->rqe.id,
				 (uint32_t)(d->offset + d->len), false,
				 SWIW_RX_INV_CHECK);
		break;
	case SWIW_DDP_IMMEDIATE:
		swiw_rx_complete(s, g, s->rqe.id, (uint32_t)s->last_write_len,
				 s->after_write, SWIW_RX_INV_CHECK);
		break;
	case SWIW_DDP_READ_REQ: {
		struct rresp *r = &s->rr[s->rr_tail++ % SWIW_MAX_IRD];

		r->atomic = false;
		r->src = d->handle ? s->tref.addr + d->offset : NULL;
		r->len = d->handle ? (uint32_t)d->len : 0;
		r->sink_stag = g->u.rreq.sink_stag;
		r->sink_to = g->u.rreq.sink_to;
		break;
	}
	case SWIW_DDP_ATOMIC_REQ:
		atomic_exec(s);
		break;
	case SWIW_DDP_TERMINATE:
	case SWIW_DDP_ATOMIC_RESP:
		swiw_rx_complete(s, g, 0, 0, false, SWIW_RX_INV_CHECK);
		break;
	default:
		swiw_stream_violation(s, SWIW_V_RDMAP_OPCODE, NULL, 0);
		break;
	}
}

void swiw_rx_complete(struct swiw_stream *s, const struct swiw_ddp_seg *g,
		      uint64_t rqe_id, uint32_t bytes, bool after_write,
		      enum swiw_rx_inv inv)
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
			if (!remote_inv(s, g->rsvd_ulp, inv))
				return;
			fl |= SWIW_CQE_INV;
		}
		complete_recv(s, rqe_id, SWIW_OP_RECV, bytes, fl, g->rsvd_ulp);
		s->after_write = false;
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
		s->after_write = false;
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

/* Feeds @n octets at @p (already where the step wants them). */
static bool rx_feed(struct swiw_stream *s, const uint8_t *p, uint32_t n)
{
	unsigned int ev = 0;

	if (swiw_fpdu_rx_advance(&s->frx, p, n, &ev)) {
		enum swiw_violation v = swiw_fpdu_rx_violation(&s->frx);

		swiw_stream_violation(s, v ? v : SWIW_V_DDP_CATASTROPHIC, NULL,
				      0);
		return false;
	}
	if (ev & SWIW_FPDU_EV_HDR)
		on_hdr(s);
	if (!s->failed && (ev & SWIW_FPDU_EV_END))
		on_end(s);
	return !s->failed;
}

void swiw_rx_pump(struct swiw_stream *s)
{
	struct swiw_fpdu_rx_step st;
	ssize_t r;

	while (!s->failed && !s->mpa_phase && !s->attached) {
		if (s->st_head == s->st_tail) {
			uint64_t room = 0;
			uint8_t *d = NULL;

			if (swiw_fpdu_rx_next(&s->frx, &st))
				return;
			if (st.kind == SWIW_FPDU_RX_PAYLOAD &&
			    st.len >= DIRECT_MIN && st.off >= s->seg.hdr_len)
				d = dest_of(s, st.off - s->seg.hdr_len, &room);
			if (d && room >= DIRECT_MIN) {
				/*
				 * The payload straight into place and, in the
				 * same call, the trailer and the next header
				 * into the stage: one recv per FPDU.
				 */
				struct iovec v[2] = {
					{ d, room < st.len ? room : st.len },
					{ s->stage, RX_TAIL },
				};
				struct msghdr mh = { .msg_iov = v,
						     .msg_iovlen = 2 };

				r = recvmsg(s->fd, &mh, MSG_DONTWAIT);
				if (r > 0) {
					uint32_t n = (uint32_t)r;

					if (n > v[0].iov_len) {
						s->st_head = 0;
						s->st_tail =
							n -
							(uint32_t)v[0].iov_len;
						n = (uint32_t)v[0].iov_len;
					}
					rx_feed(s, d, n);
					continue;
				}
			} else {
				/*
				 * After a large FPDU, take just this step
				 * and the next header, so that the next
				 * payload is received straight into place
				 * rather than copied out of the stage.
				 */
				uint32_t want = STAGE_SIZE;

				if (s->rx_small_run < RX_SMALL_RUN &&
				    st.len + PEEK < want)
					want = st.len + PEEK;
				r = recv(s->fd, s->stage, want, MSG_DONTWAIT);
				if (r > 0) {
					s->st_head = 0;
					s->st_tail = (uint32_t)r;
					continue;
				}
			}
			if (r == 0 || (errno != EAGAIN &&
				       errno != EWOULDBLOCK && errno != EINTR))
				swiw_stream_peer_eof(s);
			return;
		}
		if (swiw_fpdu_rx_next(&s->frx, &st))
			return;
		{
			uint32_t n = s->st_tail - s->st_head;
			const uint8_t *p = s->stage + s->st_head;

			if (n > st.len)
				n = st.len;
			if (st.kind == SWIW_FPDU_RX_PAYLOAD)
				place(s, st.off, p, n);
			s->st_head += n;
			if (!rx_feed(s, p, n))
				return;
		}
	}
}
