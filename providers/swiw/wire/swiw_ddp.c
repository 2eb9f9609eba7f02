// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * DDP segmentation and placement (RFC 5041) with RDMAP's rules (RFC 5040,
 * RFC 7306) on top. See swiw_ddp.h for the contract; the comments here
 * say why the checks are where they are.
 */
#include "swiw_ddp.h"

#define U64_ALL (~(u64)0)
#define TAGGED_LEN ((u32)sizeof(struct ddp_tagged_hdr))
#define UNTAGGED_LEN ((u32)sizeof(struct ddp_untagged_hdr))

/* True when the @len octets from @to do not fit below 2^64. */
static bool to_wraps(u64 to, u64 len)
{
	return len && to > U64_ALL - (len - 1);
}

/* True when [@to, @to + @len) lies outside [@base, @base + @rlen). */
static bool out_of_bounds(u64 to, u64 len, u64 base, u64 rlen)
{
	u64 off;

	if (to < base)
		return true;
	off = to - base;
	return off > rlen || len > rlen - off;
}

/* Returns 0, or -EINVAL/-EOVERFLOW (see swiw_ddp.h). */
int swiw_ddp_tx_init(struct swiw_ddp_tx *tx, const struct swiw_rdmap_msg *msg)
{
	const struct swiw_rdmap_op *op;
	u8 scratch[SWIW_TERM_MAX_LEN];

	if (!tx || !msg)
		return -EINVAL;
	op = swiw_rdmap_op(msg->opcode);
	if (!op)
		return -EINVAL;
	if (msg->len && !(op->flags & SWIW_OPF_PAYLOAD))
		return -EINVAL;
	if ((op->flags & SWIW_OPF_TAGGED) && to_wraps(msg->to, msg->len))
		return -EOVERFLOW;
	/* Refuse a Terminate now rather than after some segments. */
	if (msg->opcode == RDMAP_TERMINATE &&
	    swiw_term_build(&msg->u.term, scratch, sizeof(scratch)) < 0)
		return -EINVAL;
	memcpy(&tx->msg, msg, sizeof(*msg));
	tx->op = op;
	tx->sent = 0;
	tx->done = false;
	return 0;
}

/* Writes the header of the next segment; cannot fail (sizes checked). */
static void tx_put_hdr(const struct swiw_ddp_tx *tx, u8 *hdr, u32 hdr_size,
		       bool last)
{
	const struct swiw_rdmap_msg *m = &tx->msg;
	__be16 ctrl = swiw_rdmap_ctrl(m->opcode, last);

	if (tx->op->flags & SWIW_OPF_TAGGED) {
		struct ddp_tagged_hdr t;

		t.ctrl.ddp_rdmap_ctrl = ctrl;
		t.stag = swiw_cpu_to_be32(m->stag);
		t.to = swiw_cpu_to_be64(m->to + tx->sent);
		memcpy(hdr, &t, sizeof(t));
		return;
	}
	if (m->opcode == RDMAP_TERMINATE) {
		swiw_term_build(&m->u.term, hdr, hdr_size);
		return;
	}

	{
		struct ddp_untagged_hdr u;
		u8 *body = hdr + sizeof(u);

		u.ctrl.ddp_rdmap_ctrl = ctrl;
		u.rsvd_ulp = tx->op->flags & SWIW_OPF_INVAL ?
				     swiw_cpu_to_be32(m->inval_stag) :
				     0;
		u.qn = swiw_cpu_to_be32(tx->op->qn);
		u.msn = swiw_cpu_to_be32(m->msn);
		u.mo = swiw_cpu_to_be32(tx->sent);
		memcpy(hdr, &u, sizeof(u));

		switch (m->opcode) {
		case RDMAP_READ_REQ:
			swiw_rdmap_read_req_put(body, &m->u.rreq);
			break;
		case RDMAP_ATOMIC_REQ:
			swiw_rdmap_atomic_req_put(body, &m->u.areq);
			break;
		case RDMAP_ATOMIC_RESP:
			swiw_rdmap_atomic_resp_put(body, &m->u.aresp);
			break;
		case RDMAP_IMM_DATA:
		case RDMAP_IMM_DATA_SE:
			memcpy(body, m->u.imm, RDMAP_IMM_DATA_SIZE);
			break;
		default:
			break;
		}
	}
}

/* Returns 1 (a segment), 0 (done), -EMSGSIZE, -ENOSPC or -EINVAL. */
int swiw_ddp_tx_next(struct swiw_ddp_tx *tx, u32 mulpdu, void *hdr,
		     u32 hdr_size, struct swiw_ddp_txseg *seg)
{
	u32 hlen, room, chunk, left;
	bool last;

	if (!tx || !tx->op || !hdr || !seg)
		return -EINVAL;
	if (tx->done)
		return 0;
	hlen = tx->op->hdr_len;
	if (tx->msg.opcode == RDMAP_TERMINATE) {
		u8 scratch[SWIW_TERM_MAX_LEN];

		hlen = (u32)swiw_term_build(&tx->msg.u.term, scratch,
					    sizeof(scratch));
	}
	/* MPA's ULPDU_LENGTH has 16 bits. */
	mulpdu = SWIW_MIN(mulpdu, (u32)MPA_MAX_ULPDU_LEN);
	left = tx->msg.len - tx->sent;
	if (mulpdu < hlen + (left ? 1 : 0))
		return -EMSGSIZE;
	if (hdr_size < hlen)
		return -ENOSPC;
	room = mulpdu - hlen;
	chunk = SWIW_MIN(left, room);
	last = chunk == left;

	tx_put_hdr(tx, hdr, hdr_size, last);
	seg->hdr_len = hlen;
	seg->payload_off = tx->sent;
	seg->payload_len = chunk;
	seg->last = last;
	tx->sent += chunk;
	tx->done = last;
	return 1;
}

/* Cannot fail. */
void swiw_ddp_progress_init(struct swiw_ddp_progress *p)
{
	memset(p, 0, sizeof(*p));
}

/* Cannot fail. */
void swiw_ddp_progress_expect(struct swiw_ddp_progress *p, u64 origin,
			      u64 total)
{
	memset(p, 0, sizeof(*p));
	p->origin = origin;
	p->total = total;
	p->flags = SWIW_DDP_PROG_TOTAL;
}

/*
 * Returns 1 (complete), 0 (more due) or -ERANGE (unchanged). Counting
 * octets is enough over a transport that delivers each segment once;
 * a duplicate shows up as more octets than the message holds.
 */
int swiw_ddp_progress_add(struct swiw_ddp_progress *p, u64 off, u32 len,
			  bool last)
{
	bool known = p->flags & (SWIW_DDP_PROG_TOTAL | SWIW_DDP_PROG_LAST);
	u64 total = p->total;
	u64 end, placed;

	if (off > U64_ALL - len)
		return -ERANGE;
	end = off + len;
	placed = p->placed + len;
	if (known && end > total)
		return -ERANGE;
	if (last) {
		if (p->flags & SWIW_DDP_PROG_LAST)
			return -ERANGE;
		if ((p->flags & SWIW_DDP_PROG_TOTAL) && end != total)
			return -ERANGE;
		total = end;
		known = true;
	}
	if (known && placed > total)
		return -ERANGE;

	p->placed = placed;
	if (last) {
		p->total = total;
		p->flags |= SWIW_DDP_PROG_LAST;
	}
	return (p->flags & SWIW_DDP_PROG_LAST) && p->placed == p->total;
}

/* Returns 0, or -EINVAL for a missing callback or unknown flags. */
int swiw_ddp_rx_init(struct swiw_ddp_rx *rx, const struct swiw_ddp_mem_ops *ops,
		     void *ctx, u32 flags, u32 ird)
{
	unsigned int i;

	if (!rx || !ops || !ops->tagged || !ops->untagged)
		return -EINVAL;
	if (flags & ~(u32)(SWIW_DDP_RX_ORDERED | SWIW_DDP_RX_RFC7306 |
			   SWIW_DDP_RX_STRICT))
		return -EINVAL;
	memset(rx, 0, sizeof(*rx));
	rx->ops = ops;
	rx->ctx = ctx;
	rx->flags = flags;
	rx->ird = ird;
	for (i = 0; i < RDMAP_QN_COUNT; i++)
		rx->q[i].msn = 1; /* RFC 5041: the first message is MSN 1 */
	return 0;
}

/* Returns 0 when a request may be released, -EINVAL when none is due. */
int swiw_ddp_rx_ird_release(struct swiw_ddp_rx *rx)
{
	if (!rx || !rx->ird_used)
		return -EINVAL;
	rx->ird_used--;
	return 0;
}

/* Records @v and returns -EPROTO, for the parse and validate paths. */
static int fail(enum swiw_violation *v, enum swiw_violation what)
{
	*v = what;
	return -EPROTO;
}

/* Decodes the RDMAP body of a single-segment message; 0 or -EPROTO. */
static int parse_body(const u8 *p, u32 flags, struct swiw_ddp_seg *seg,
		      enum swiw_violation *v)
{
	const u8 *body = p + UNTAGGED_LEN;
	int rc;

	switch (seg->opcode) {
	case RDMAP_READ_REQ:
		swiw_rdmap_read_req_get(body, &seg->u.rreq);
		break;
	case RDMAP_ATOMIC_REQ:
		swiw_rdmap_atomic_req_get(body, &seg->u.areq);
		if ((flags & SWIW_DDP_RX_STRICT) && seg->u.areq.rsvd)
			return fail(v, SWIW_V_DDP_RESERVED);
		break;
	case RDMAP_ATOMIC_RESP:
		swiw_rdmap_atomic_resp_get(body, &seg->u.aresp);
		break;
	case RDMAP_IMM_DATA:
	case RDMAP_IMM_DATA_SE:
		memcpy(seg->u.imm, body, RDMAP_IMM_DATA_SIZE);
		break;
	case RDMAP_TERMINATE:
		rc = swiw_term_parse_body(body, seg->len - UNTAGGED_LEN,
					  &seg->u.term);
		if (rc == -EBADMSG)
			return fail(v, SWIW_V_RDMAP_MALFORMED);
		/* A TERMINATE missing parts still names its error. */
		seg->term_rc = rc;
		seg->hdr_len = seg->len;
		seg->payload_len = 0;
		break;
	default:
		break;
	}
	return 0;
}

/* Returns 0, -EPROTO with *v, or -EINVAL (see swiw_ddp.h). */
int swiw_ddp_parse(const void *ulpdu, u32 len, u32 flags,
		   struct swiw_ddp_seg *seg, enum swiw_violation *v)
{
	const u8 *p = ulpdu;
	const struct swiw_rdmap_op *op;
	struct iwarp_ctrl c;

	if (!seg || !v || (!p && len))
		return -EINVAL;
	*v = SWIW_V_NONE;
	memset(seg, 0, sizeof(*seg));
	seg->len = len;
	if (len < sizeof(c))
		return fail(v, SWIW_V_DDP_RESERVED);
	memcpy(&c, p, sizeof(c));
	seg->tagged = iwarp_tagged(&c);
	seg->last = iwarp_last(&c);
	seg->opcode = (u8)iwarp_opcode(&c);

	/* DDP first: its version decides how the rest is read at all. */
	if (iwarp_ddp_version(&c) != DDP_VERSION)
		return fail(v, seg->tagged ? SWIW_V_DDP_VERSION :
					     SWIW_V_DDP_UT_VERSION);
	if (len < (seg->tagged ? TAGGED_LEN : UNTAGGED_LEN))
		return fail(v, SWIW_V_DDP_RESERVED);
	if (iwarp_rdmap_version(&c) != RDMAP_VERSION)
		return fail(v, SWIW_V_RDMAP_VERSION);
	/* The table is indexed only through the bounds-checked lookup. */
	op = swiw_rdmap_op(seg->opcode);
	if (!op ||
	    ((op->flags & SWIW_OPF_RFC7306) && !(flags & SWIW_DDP_RX_RFC7306)))
		return fail(v, SWIW_V_RDMAP_OPCODE);
	if (!!(op->flags & SWIW_OPF_TAGGED) != seg->tagged)
		return fail(v, SWIW_V_RDMAP_OPCODE);
	seg->op = op;
	if ((flags & SWIW_DDP_RX_STRICT) &&
	    (c.ddp_rdmap_ctrl & (DDP_MASK_RESERVED | RDMAP_MASK_RESERVED)))
		return fail(v, SWIW_V_DDP_RESERVED);

	if (seg->tagged) {
		struct ddp_tagged_hdr t;

		memcpy(&t, p, sizeof(t));
		seg->stag = swiw_be32_to_cpu(t.stag);
		seg->to = swiw_be64_to_cpu(t.to);
	} else {
		struct ddp_untagged_hdr u;

		memcpy(&u, p, sizeof(u));
		seg->rsvd_ulp = swiw_be32_to_cpu(u.rsvd_ulp);
		seg->qn = swiw_be32_to_cpu(u.qn);
		seg->msn = swiw_be32_to_cpu(u.msn);
		seg->mo = swiw_be32_to_cpu(u.mo);
		if (seg->qn != op->qn)
			return fail(v, SWIW_V_DDP_UT_INVALID_QN);
		if ((flags & SWIW_DDP_RX_STRICT) && seg->rsvd_ulp &&
		    !(op->flags & SWIW_OPF_INVAL))
			return fail(v, SWIW_V_DDP_RESERVED);
	}
	if (len < op->hdr_len)
		return fail(v, SWIW_V_RDMAP_MALFORMED);
	seg->hdr_len = op->hdr_len;
	seg->payload_len = len - op->hdr_len;
	/* Read/Atomic Requests and Responses, Immediate Data, Terminate:
	 * one segment, nothing after the body (Terminate's parts aside). */
	if (op->flags & SWIW_OPF_ONESEG) {
		if (!seg->last || seg->mo)
			return fail(v, SWIW_V_RDMAP_MALFORMED);
		if (seg->payload_len && !(op->flags & SWIW_OPF_VARLEN))
			return fail(v, SWIW_V_RDMAP_MALFORMED);
	}
	/* MO has 32 bits: no untagged message reaches past 2^32 octets. */
	if (!seg->tagged && (u64)seg->mo + seg->payload_len > (1ULL << 32))
		return fail(v, SWIW_V_DDP_UT_INVALID_MO);
	return parse_body(p, flags, seg, v);
}

/* The MSN (and, ordered, MO) check: SWIW_V_NONE or the violation. */
static enum swiw_violation rx_msn_check(const struct swiw_ddp_rx *rx,
					const struct swiw_ddp_seg *seg)
{
	const struct swiw_ddp_rxq *q = &rx->q[seg->qn];
	u32 d = seg->msn - q->msn; /* modulo 2^32, as MSNs wrap */

	if (rx->flags & SWIW_DDP_RX_ORDERED) {
		if (d)
			return SWIW_V_DDP_UT_MSN_RANGE;
		if (seg->mo != q->mo)
			return SWIW_V_DDP_UT_INVALID_MO;
		return SWIW_V_NONE;
	}
	/* Behind the oldest incomplete message (d wraps huge), already
	 * complete, or beyond the window we can track. */
	if (d >= SWIW_DDP_MSN_WINDOW || ((q->done >> d) & 1))
		return SWIW_V_DDP_UT_MSN_RANGE;
	return SWIW_V_NONE;
}

/* Moves the queue on once @seg is accepted; cannot fail. */
static void rx_msn_commit(struct swiw_ddp_rx *rx,
			  const struct swiw_ddp_seg *seg, bool complete)
{
	struct swiw_ddp_rxq *q = &rx->q[seg->qn];

	if (rx->flags & SWIW_DDP_RX_ORDERED) {
		q->mo += seg->payload_len;
		if (seg->last) {
			q->msn++;
			q->mo = 0;
		}
		return;
	}
	if (!complete)
		return;
	q->done |= 1ULL << (seg->msn - q->msn);
	while (q->done & 1) {
		q->done >>= 1;
		q->msn++;
	}
}

/* Write and Read Response: SWIW_V_NONE with @dst filled, or why not. */
static enum swiw_violation rx_tagged(struct swiw_ddp_rx *rx,
				     const struct swiw_ddp_seg *seg,
				     struct swiw_ddp_dest *dst)
{
	bool ordered = rx->flags & SWIW_DDP_RX_ORDERED;
	struct swiw_ddp_progress *prog = NULL;
	struct swiw_ddp_region r;
	u32 need;
	int found, rc;

	/* Ordered: segments of one tagged message follow each other. siw
	 * picks the same codes for a changed STag or TO. */
	if (ordered && rx->t_open) {
		if (seg->opcode != rx->t_opcode)
			return SWIW_V_RDMAP_OPCODE;
		if (seg->stag != rx->t_stag)
			return SWIW_V_DDP_T_INVALID_STAG;
		if (seg->to != rx->t_to)
			return SWIW_V_DDP_T_BASE_BOUNDS;
	}
	memset(&r, 0, sizeof(r));
	found = rx->ops->tagged(rx->ctx, seg->opcode, seg->stag, &r);
	if (!seg->payload_len) {
		/* Nothing to place: any STag will do (RTR), but a READ
		 * of ours may still complete with it. */
		if (!found)
			prog = r.progress;
		else if (seg->opcode == RDMAP_READ_RESP)
			/* It answers a READ of ours, or nothing. */
			return SWIW_V_DDP_T_INVALID_STAG;
	} else {
		if (found)
			return SWIW_V_DDP_T_INVALID_STAG;
		if (!r.associated)
			return SWIW_V_DDP_T_STAG_NOT_ASSOC;
		need = seg->opcode == RDMAP_WRITE ? SWIW_ACC_REMOTE_WRITE :
						    SWIW_ACC_LOCAL_WRITE;
		if (!(r.access & need))
			return SWIW_V_DDP_T_ACCESS;
		if (to_wraps(seg->to, seg->payload_len))
			return SWIW_V_DDP_T_TO_WRAP;
		if (out_of_bounds(seg->to, seg->payload_len, r.base, r.len))
			return SWIW_V_DDP_T_BASE_BOUNDS;
		prog = r.progress;
		dst->handle = r.handle;
		dst->offset = seg->to - r.base;
		dst->len = seg->payload_len;
	}
	dst->action = SWIW_DDP_PLACE;
	dst->complete = seg->last;
	/* Only a READ the engine sized can be tracked out of order. */
	if (prog && (prog->flags & SWIW_DDP_PROG_TOTAL)) {
		if (seg->to < prog->origin)
			return SWIW_V_DDP_T_BASE_BOUNDS;
		rc = swiw_ddp_progress_add(prog, seg->to - prog->origin,
					   seg->payload_len, seg->last);
		if (rc < 0)
			return SWIW_V_DDP_T_BASE_BOUNDS;
		dst->complete = rc == 1;
	}
	if (ordered) {
		rx->t_open = !seg->last;
		rx->t_opcode = seg->opcode;
		rx->t_stag = seg->stag;
		rx->t_to = seg->to + seg->payload_len;
	}
	return SWIW_V_NONE;
}

/* Read source or Atomic target checks (RDMAP codes): SWIW_V_NONE or why. */
static enum swiw_violation rx_source(struct swiw_ddp_rx *rx,
				     unsigned int opcode, u32 stag, u64 to,
				     u64 len, u32 need,
				     struct swiw_ddp_region *r)
{
	memset(r, 0, sizeof(*r));
	if (rx->ops->tagged(rx->ctx, opcode, stag, r))
		return SWIW_V_RDMAP_INVALID_STAG;
	if (!r->associated)
		return SWIW_V_RDMAP_STAG_NOT_ASSOC;
	if (!(r->access & need))
		return SWIW_V_RDMAP_ACCESS_RIGHTS;
	if (to_wraps(to, len))
		return SWIW_V_RDMAP_TO_WRAP;
	if (out_of_bounds(to, len, r->base, r->len))
		return SWIW_V_RDMAP_BASE_BOUNDS;
	return SWIW_V_NONE;
}

/* Read and Atomic Requests, which IRD limits: SWIW_V_NONE or why not. */
static enum swiw_violation rx_request(struct swiw_ddp_rx *rx,
				      const struct swiw_ddp_seg *seg,
				      struct swiw_ddp_dest *dst)
{
	struct swiw_ddp_region r;
	enum swiw_violation vv;

	vv = rx_msn_check(rx, seg);
	if (vv)
		return vv;
	if (rx->ird_used >= rx->ird)
		return SWIW_V_RDMAP_IRD_EXCEEDED;

	if (seg->opcode == RDMAP_READ_REQ) {
		const struct swiw_rdmap_read_req *rr = &seg->u.rreq;

		dst->action = SWIW_DDP_READ_REQ;
		/* The response would run past 2^64 at the sink. */
		if (to_wraps(rr->sink_to, rr->size))
			return SWIW_V_RDMAP_TO_WRAP;
		if (rr->size) {
			vv = rx_source(rx, seg->opcode, rr->src_stag,
				       rr->src_to, rr->size,
				       SWIW_ACC_REMOTE_READ, &r);
			if (vv)
				return vv;
			dst->handle = r.handle;
			dst->offset = rr->src_to - r.base;
			dst->len = rr->size;
		}
	} else {
		const struct swiw_rdmap_atomic_req *a = &seg->u.areq;

		dst->action = SWIW_DDP_ATOMIC_REQ;
		if (a->op > RDMAP_ATOMIC_CMP_SWAP)
			return SWIW_V_RDMAP_ATOMIC_OPCODE;
		/* Alignment after the STag checks: it is the target's. */
		vv = rx_source(rx, seg->opcode, a->stag, a->to,
			       RDMAP_ATOMIC_DATA_SIZE, SWIW_ACC_REMOTE_ATOMIC,
			       &r);
		if (vv == SWIW_V_NONE && (a->to & (RDMAP_ATOMIC_DATA_SIZE - 1)))
			vv = SWIW_V_RDMAP_ATOMIC_ALIGN;
		if (vv)
			return vv;
		dst->handle = r.handle;
		dst->offset = a->to - r.base;
		dst->len = RDMAP_ATOMIC_DATA_SIZE;
	}
	dst->complete = true;
	rx->ird_used++;
	rx_msn_commit(rx, seg, true);
	return SWIW_V_NONE;
}

/* Send family, Immediate Data, Atomic Response (a posted buffer each):
 * SWIW_V_NONE with @dst filled, or the violation. */
static enum swiw_violation rx_untagged(struct swiw_ddp_rx *rx,
				       const struct swiw_ddp_seg *seg,
				       struct swiw_ddp_dest *dst)
{
	struct swiw_ddp_rbuf b;
	enum swiw_violation vv;
	u64 off = seg->mo;
	u64 need = seg->payload_len;
	int rc;

	vv = rx_msn_check(rx, seg);
	if (vv)
		return vv;
	memset(&b, 0, sizeof(b));
	if (rx->ops->untagged(rx->ctx, seg->qn, seg->msn, &b))
		return SWIW_V_DDP_UT_NO_BUFFER;

	dst->action = SWIW_DDP_PLACE;
	if (seg->opcode == RDMAP_ATOMIC_RESP) {
		dst->action = SWIW_DDP_ATOMIC_RESP;
		need = RDMAP_ATOMIC_DATA_SIZE;
	} else if (seg->opcode == RDMAP_IMM_DATA ||
		   seg->opcode == RDMAP_IMM_DATA_SE) {
		dst->action = SWIW_DDP_IMMEDIATE;
	}
	if (off > b.len || need > b.len - off)
		return SWIW_V_DDP_UT_TOO_LONG;

	dst->complete = seg->last;
	if (b.progress) {
		rc = swiw_ddp_progress_add(b.progress, off, seg->payload_len,
					   seg->last);
		if (rc < 0)
			return SWIW_V_DDP_UT_INVALID_MO;
		dst->complete = rc == 1;
	}
	dst->handle = b.handle;
	dst->offset = off;
	dst->len = need;
	rx_msn_commit(rx, seg, dst->complete);
	return SWIW_V_NONE;
}

/* Terminate, one per stream on QN 2 (MSN 1): SWIW_V_NONE or why not. */
static enum swiw_violation rx_terminate(struct swiw_ddp_rx *rx,
					const struct swiw_ddp_seg *seg,
					struct swiw_ddp_dest *dst)
{
	enum swiw_violation vv = rx_msn_check(rx, seg);

	if (vv)
		return vv;
	dst->action = SWIW_DDP_TERMINATE;
	dst->complete = true;
	rx_msn_commit(rx, seg, true);
	return SWIW_V_NONE;
}

/* Returns 0, -EPROTO with *v, or -EINVAL (see swiw_ddp.h). */
int swiw_ddp_rx_segment(struct swiw_ddp_rx *rx, const void *ulpdu, u32 len,
			struct swiw_ddp_seg *seg, struct swiw_ddp_dest *dst,
			enum swiw_violation *v)
{
	enum swiw_violation vv;
	int rc;

	if (!rx || !rx->ops || !dst)
		return -EINVAL;
	rc = swiw_ddp_parse(ulpdu, len, rx->flags, seg, v);
	if (rc)
		return rc;
	memset(dst, 0, sizeof(*dst));
	if (seg->tagged) {
		vv = rx_tagged(rx, seg, dst);
	} else {
		switch (seg->opcode) {
		case RDMAP_READ_REQ:
		case RDMAP_ATOMIC_REQ:
			vv = rx_request(rx, seg, dst);
			break;
		case RDMAP_TERMINATE:
			vv = rx_terminate(rx, seg, dst);
			break;
		default:
			vv = rx_untagged(rx, seg, dst);
			break;
		}
	}
	if (vv)
		return fail(v, vv);
	return 0;
}
