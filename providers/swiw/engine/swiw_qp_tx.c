// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The send queue's upper half: work requests taken from the SQ in order,
 * checked against the provider's STag table, each message cut into DDP
 * segments (swiw_ddp_tx) and published as txds on the stream's transmit
 * ring, whose lower half (wire/swiw_lower_tx.c, in whichever engine runs
 * it) frames, gathers and sends them, and answers the peer's Read and
 * Atomic Requests itself. ORD, fences and completions stay here. Under
 * the engine lock (swiw_engine.c).
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

static uint32_t eff_ord(const struct swiw_stream *s)
{
	uint32_t ord = s->ord;

	if (s->bk_on) {
		uint32_t q = __atomic_load_n(&s->qp->ord, __ATOMIC_RELAXED);

		if (q < ord)
			ord = q;
	}
	return ord ? ord : 1;
}

/*
 * Gathers [off, off + len) of the message's source into @g (SGEs, lkey 0
 * for inline data); returns the pieces.
 */
static uint32_t tx_gather(const struct swiw_stream *s, uint32_t off,
			  uint32_t len, struct swiw_sge *g, uint32_t max)
{
	uint32_t i, n = 0;

	for (i = 0; i < s->nsrc && len && n < max; i++) {
		uint32_t c;

		if (off >= s->src[i].len) {
			off -= s->src[i].len;
			continue;
		}
		c = s->src[i].len - off;
		if (c > len)
			c = len;
		g[n].laddr = s->src[i].lkey ? s->src[i].laddr + off :
					      (uintptr_t)(s->src[i].addr + off);
		g[n].length = c;
		g[n].lkey = s->src[i].lkey;
		n++;
		len -= c;
		off = 0;
	}
	return n;
}

int swiw_tx_msg_start(struct swiw_stream *s, const struct swiw_rdmap_msg *m)
{
	int rc = swiw_ddp_tx_init(&s->dtx, m);

	if (!rc)
		s->msg_cut = false;
	return rc;
}

static u8 send_opcode(uint8_t op, bool se)
{
	if (op == SWIW_OP_SEND_INV)
		return se ? RDMAP_SEND_SE_INVAL : RDMAP_SEND_INVAL;
	return se ? RDMAP_SEND_SE : RDMAP_SEND;
}

/* Resolves a local SGE list as a local read would; false on a bad one. */
static bool take_sges(struct swiw_stream *s, const struct swiw_sge *sge,
		      uint32_t n, uint64_t *total)
{
	uint32_t i;

	*total = 0;
	s->nsrc = 0;
	for (i = 0; i < n; i++) {
		struct swiw_mem_ref ref;

		if (!sge[i].length)
			continue;
		if (swiw_mem_lookup_cached(&s->mcache, sge[i].lkey,
					   s->qp->vqp.qp.pd, 0, sge[i].laddr,
					   sge[i].length, &ref))
			return false;
		s->src[s->nsrc].addr = ref.addr + (sge[i].laddr - ref.iova);
		s->src[s->nsrc].len = sge[i].length;
		s->src[s->nsrc].lkey = sge[i].lkey;
		s->src[s->nsrc].laddr = sge[i].laddr;
		s->nsrc++;
		*total += sge[i].length;
	}
	return true;
}

/* Room for one more Read or Atomic Request under ORD. */
static bool ord_room(const struct swiw_stream *s)
{
	return s->rd_tail - s->rd_head < eff_ord(s);
}

/* Starts the Read Request for the next sink of the current READ. */
static int rd_start_next(struct swiw_stream *s)
{
	struct rd_out *rd = &s->rd[s->rd_tail % SWIW_MAX_ORD];
	struct swiw_rdmap_msg m = { .opcode = RDMAP_READ_REQ };
	uint32_t i = s->rd_next;

	memset(rd, 0, sizeof(*rd));
	m.msn = s->msn_rreq++;
	m.u.rreq.src_stag = s->rd_rkey;
	m.u.rreq.src_to = s->rd_raddr;
	if (s->rd_nsink) {
		m.u.rreq.sink_stag = s->rd_sink[i].lkey;
		m.u.rreq.sink_to = s->rd_sink[i].laddr;
		m.u.rreq.size = s->rd_sink[i].len;
		s->rd_raddr += s->rd_sink[i].len;
	} else {
		/* A zero-length READ: nothing to place, no sink to name. */
		m.u.rreq.sink_stag = SWIW_MPA_RTR_STAG;
	}
	s->rd_next++;
	rd->slot = s->slot;
	rd->sink_stag = m.u.rreq.sink_stag;
	rd->last = s->rd_next >= s->rd_nsink;
	s->nsrc = 0; /* a Read Request carries no payload */
	if (swiw_tx_msg_start(s, &m))
		return -1;
	s->rd_tail++;
	return 0;
}

/*
 * A READ's sinks: each SGE must be this PD's memory with LOCAL_WRITE,
 * checked now as for a receive; zero-length SGEs are skipped.
 */
static bool rd_sinks(struct swiw_stream *s, const struct swiw_sqe *sqe,
		     uint64_t *total)
{
	const struct swiw_sge *sge = (const void *)(sqe + 1);
	uint32_t i;

	s->rd_nsink = s->rd_next = 0;
	*total = 0;
	if (sqe->num_sge > SWIW_MAX_SGE_RD || (sqe->flags & SWIW_WQE_INLINE))
		return false;
	for (i = 0; i < sqe->num_sge; i++) {
		struct swiw_mem_ref ref;

		if (!sge[i].length)
			continue;
		if (swiw_mem_lookup_cached(&s->mcache, sge[i].lkey,
					   s->qp->vqp.qp.pd,
					   IBV_ACCESS_LOCAL_WRITE, sge[i].laddr,
					   sge[i].length, &ref))
			return false;
		s->rd_sink[s->rd_nsink].lkey = sge[i].lkey;
		s->rd_sink[s->rd_nsink].laddr = sge[i].laddr;
		s->rd_sink[s->rd_nsink].len = sge[i].length;
		s->rd_nsink++;
		*total += sge[i].length;
	}
	s->rd_rkey = sqe->rkey;
	s->rd_raddr = sqe->raddr;
	return true;
}

/* An atomic WR: the request, and where its result goes. */
static bool atomic_req(struct swiw_stream *s, const struct swiw_sqe *sqe,
		       struct swiw_rdmap_msg *m)
{
	const struct swiw_sge *sge = (const void *)(sqe + 1);
	struct rd_out *rd = &s->rd[s->rd_tail % SWIW_MAX_ORD];
	struct swiw_rdmap_atomic_req *a = &m->u.areq;
	struct swiw_mem_ref ref;

	if (sqe->num_sge != 1 || (sqe->flags & SWIW_WQE_INLINE) ||
	    sge->length != RDMAP_ATOMIC_DATA_SIZE ||
	    swiw_mem_lookup_cached(&s->mcache, sge->lkey, s->qp->vqp.qp.pd,
				   IBV_ACCESS_LOCAL_WRITE, sge->laddr,
				   RDMAP_ATOMIC_DATA_SIZE, &ref))
		return false;
	memset(rd, 0, sizeof(*rd));
	rd->slot = s->slot;
	rd->atomic = true;
	rd->last = true;
	rd->result = ref.addr + (sge->laddr - ref.iova);
	m->opcode = RDMAP_ATOMIC_REQ;
	m->msn = s->msn_rreq++;
	a->req_id = s->atomic_id++;
	a->stag = sqe->rkey;
	a->to = sqe->raddr;
	a->add_swap = sqe->opcode == SWIW_OP_FETCH_ADD ? sqe->compare_add :
							 sqe->swap;
	if (sqe->opcode == SWIW_OP_FETCH_ADD) {
		a->op = RDMAP_ATOMIC_FETCH_ADD;
		a->add_swap_mask = 0; /* one 64-bit addition */
	} else {
		a->op = RDMAP_ATOMIC_CMP_SWAP;
		a->compare = sqe->compare_add;
		a->add_swap_mask = ~0ull;
		a->compare_mask = ~0ull;
	}
	s->nsrc = 0;
	return true;
}

/*
 * LOCAL_INV: checked here, and invalidated by the lower half in ring
 * order with the WRs before it (SWIW_TXD_INVALIDATE): it completes on
 * the SENT event.
 */
static int local_inv(struct swiw_stream *s, uint32_t stag)
{
	struct swiw_mem_ref ref;
	int err;

	err = swiw_mem_lookup(stag, s->qp->vqp.qp.pd, 0, 0, 0, &ref);
	if (err) {
		swiw_info("QP %u: LOCAL_INV of STag 0x%x failed (%s)",
			  swiw_stream_qpn(s), stag,
			  err == SWIW_MEM_NOT_ASSOC ? "another PD's" :
						      "not valid");
		swiw_stream_fail(s, SWIW_V_NONE, NULL, 0, IBV_WC_LOC_PROT_ERR,
				 IBV_EVENT_QP_FATAL);
		return -1;
	}
	s->infl[s->slot & s->infl_mask].inv_stag = stag;
	s->kind = TX_SQE;
	s->msg_cut = false;
	return 0;
}

/* Takes the next SQE and starts its message. 1: started, 0: nothing to
 * do now, -1: the stream failed. */
static int next_sqe(struct swiw_stream *s)
{
	struct swiw_qp *qp = s->qp;
	const struct swiw_sqe *sqe;
	struct swiw_rdmap_msg m;
	struct infl *w;
	uint64_t total = 0;
	bool ok = true;
	uint8_t op;

	/* The program sends what it posts meanwhile (swiw_engine.c). */
	if (swiw_eng_sq_held(qp))
		return 0;
	sqe = swiw_ring_cons_slot(&qp->sq_eng);
	if (!sqe) {
		/* Still armed from an earlier look: no post_send has taken
		 * the arm since, so the next one rings; no RMW again. */
		if (__atomic_load_n(&qp->sq_armed, __ATOMIC_ACQUIRE))
			return 0;
		/* Whoever pumped (a post, a poll, the thread) took every
		 * WR corked so far: the next burst may cork its own. */
		__atomic_store_n(&qp->sq_corked, 0, __ATOMIC_RELAXED);
		/* Arm with an RMW: ordered against post_send's exchange
		 * on the same word, so either we see its SQE now or it
		 * sees the arm and rings (swiw_engine_sq_posted). */
		__atomic_exchange_n(&qp->sq_armed, 1, __ATOMIC_SEQ_CST);
		sqe = swiw_ring_cons_slot(&qp->sq_eng);
		if (!sqe)
			return 0;
		__atomic_store_n(&qp->sq_armed, 0, __ATOMIC_RELAXED);
	}
	memset(&m, 0, sizeof(m));
	op = sqe->opcode;
	/* A fenced WR waits for every READ and atomic before it. */
	if ((sqe->flags & SWIW_WQE_FENCE) && s->rd_head != s->rd_tail) {
		s->rd_wait = true;
		return 0;
	}
	if ((op == SWIW_OP_READ || op == SWIW_OP_FETCH_ADD ||
	     op == SWIW_OP_CMP_SWAP) &&
	    !ord_room(s)) {
		s->rd_wait = true;
		return 0; /* ORD reached: a response frees a slot */
	}
	if (s->infl_tail - s->infl_head > s->infl_mask)
		return 0; /* cannot happen: the SQ is no larger */

	w = &s->infl[s->infl_tail & s->infl_mask];
	memset(w, 0, sizeof(*w));
	w->id = sqe->id;
	w->opcode = op;
	w->signalled = sqe->flags & SWIW_WQE_SIGNALLED;
	s->slot = s->infl_tail++;
	s->sq_op = op;
	s->phase = 0;
	memcpy(&s->imm, &sqe->imm_data, sizeof(s->imm));
	if (op == SWIW_OP_READ) {
		ok = rd_sinks(s, sqe, &total);
	} else if (op == SWIW_OP_FETCH_ADD || op == SWIW_OP_CMP_SWAP) {
		ok = atomic_req(s, sqe, &m);
		total = RDMAP_ATOMIC_DATA_SIZE;
	} else if (op == SWIW_OP_LOCAL_INV) {
		ok = !sqe->num_sge && !(sqe->flags & SWIW_WQE_INLINE);
	} else if (sqe->flags & SWIW_WQE_INLINE) {
		uint32_t len = sqe->inline_len;

		if (len > sizeof(s->inl) || len > qp->max_inline)
			ok = false;
		else
			memcpy(s->inl, sqe + 1, len);
		s->src[0].addr = s->inl;
		s->src[0].len = len;
		s->src[0].lkey = 0;
		s->nsrc = len ? 1 : 0;
		total = len;
	} else if (sqe->num_sge > qp->max_send_sge ||
		   !take_sges(s, (const struct swiw_sge *)(sqe + 1),
			      sqe->num_sge, &total)) {
		ok = false;
	}
	switch (op) {
	case SWIW_OP_SEND:
	case SWIW_OP_SEND_INV:
		m.opcode = send_opcode(op, sqe->flags & SWIW_WQE_SOLICITED);
		m.len = (u32)total;
		m.msn = s->msn_send++;
		m.inval_stag = sqe->rkey;
		break;
	case SWIW_OP_SEND_IMM:
		m.opcode = sqe->flags & SWIW_WQE_SOLICITED ? RDMAP_IMM_DATA_SE :
							     RDMAP_IMM_DATA;
		memcpy(m.u.imm, &sqe->imm_data, sizeof(sqe->imm_data));
		m.msn = s->msn_send++;
		if (total)
			ok = false; /* the message is the Immediate Data */
		break;
	case SWIW_OP_WRITE:
	case SWIW_OP_WRITE_IMM:
		m.opcode = RDMAP_WRITE;
		m.len = (u32)total;
		m.stag = sqe->rkey;
		m.to = sqe->raddr;
		break;
	case SWIW_OP_READ:
	case SWIW_OP_FETCH_ADD:
	case SWIW_OP_CMP_SWAP:
	case SWIW_OP_LOCAL_INV:
		break;
	default:
		ok = false;
		break;
	}
	w->bytes = (uint32_t)total;
	{
		uint32_t inv = sqe->rkey;

		swiw_ring_release(&qp->sq_eng, (void *)sqe);
		if (ok && op == SWIW_OP_LOCAL_INV)
			return local_inv(s, inv) ? -1 : 1;
	}
	if (ok && op == SWIW_OP_READ)
		ok = !rd_start_next(s);
	else if (ok)
		ok = !swiw_tx_msg_start(s, &m);
	if (!ok) {
		swiw_stream_fail(s, SWIW_V_NONE, NULL, 0, IBV_WC_LOC_QP_OP_ERR,
				 IBV_EVENT_QP_FATAL);
		return -1;
	}
	if (op == SWIW_OP_FETCH_ADD || op == SWIW_OP_CMP_SWAP)
		s->rd_tail++;
	s->kind = TX_SQE;
	return 1;
}

/* Does the current message's last txd complete a WR when it is sent? */
static bool txd_completes_wr(const struct swiw_stream *s)
{
	if (s->kind != TX_SQE)
		return false;
	switch (s->sq_op) {
	case SWIW_OP_READ:
	case SWIW_OP_FETCH_ADD:
	case SWIW_OP_CMP_SWAP:
		return false;
	case SWIW_OP_WRITE_IMM:
		return s->phase == 1;
	default:
		return true;
	}
}

/* Inline pieces (lkey 0) go through the txd slot's bounce area. */
static void txd_bounce(struct swiw_stream *s, struct swiw_txd *t)
{
	uint32_t slot = s->txr.pos & (s->txr.num - 1), i;
	uint8_t *b = s->bounce + (size_t)slot * SWIW_MAX_INLINE;

	for (i = 0; i < t->num_sge; i++) {
		if (t->sge[i].lkey)
			continue;
		memcpy(b, (void *)(uintptr_t)t->sge[i].laddr, t->sge[i].length);
		t->sge[i].laddr = (uintptr_t)b;
		t->sge[i].lkey = s->bounce_mr->stag;
		b += t->sge[i].length;
	}
}

/*
 * The current message into the transmit ring, one txd per DDP segment
 * (cut shorter where SWIW_TXD_SGE pieces end). 1: all of it is in the
 * ring, 0: the ring is full (a SENT event or the lower half clearing
 * slots brings us back), or a negative errno.
 */
static int txd_build(struct swiw_stream *s)
{
	uint32_t quarter = s->txr.num / 4 ? s->txr.num / 4 : 1;

	while (!s->msg_cut) {
		struct swiw_txd *t = swiw_ring_prod_slot(&s->txr);
		struct swiw_ddp_tx save = s->dtx;
		struct swiw_ddp_txseg seg;
		uint16_t fl = 0;
		uint32_t i, fit = 0;
		int rc;

		if (!t)
			return 0;
		if (s->kind == TX_SQE && s->sq_op == SWIW_OP_LOCAL_INV) {
			uint32_t stag =
				s->infl[s->slot & s->infl_mask].inv_stag;

			t->id = SWIW_TXD_ID_WR | SWIW_TXD_ID_LAST | s->slot;
			t->num_sge = 0;
			t->hdr_len = sizeof(stag);
			t->payload_len = 0;
			memcpy(t->hdr, &stag, sizeof(stag));
			swiw_ring_publish(&s->txr, t,
					  SWIW_TXD_INVALIDATE | SWIW_TXD_EVENT);
			s->tx_rung = true;
			s->msg_cut = true;
			break;
		}
		rc = swiw_ddp_tx_next(&s->dtx, s->mulpdu, t->hdr,
				      sizeof(t->hdr), &seg);
		if (rc <= 0)
			return rc ? rc : -EINVAL;
		t->num_sge = (uint8_t)tx_gather(s, seg.payload_off,
						seg.payload_len, t->sge,
						SWIW_TXD_SGE);
		for (i = 0; i < t->num_sge; i++)
			fit += t->sge[i].length;
		if (fit < seg.payload_len) {
			/* More pieces than a txd holds: a shorter segment. */
			s->dtx = save;
			rc = swiw_ddp_tx_next(&s->dtx, seg.hdr_len + fit,
					      t->hdr, sizeof(t->hdr), &seg);
			if (rc <= 0 || seg.payload_len != fit)
				return rc < 0 ? rc : -EINVAL;
		}
		t->hdr_len = (uint8_t)seg.hdr_len;
		t->payload_len = seg.payload_len;
		txd_bounce(s, t);
		t->id = s->kind == TX_SQE ? SWIW_TXD_ID_WR | s->slot : 0;
		/* An event now and then, so that a full ring always has
		 * one coming that brings the pump back. */
		if (seg.last && txd_completes_wr(s)) {
			t->id |= SWIW_TXD_ID_LAST;
			fl |= SWIW_TXD_EVENT;
		} else if (!(s->txr.pos % quarter)) {
			fl |= SWIW_TXD_EVENT;
		}
		swiw_ring_publish(&s->txr, t, fl);
		s->tx_rung = true;
		s->msg_cut = seg.last;
	}
	return 1;
}

/* The current message's last octet went to TCP. */
static void msg_done(struct swiw_stream *s)
{
	enum tx_kind k = s->kind;

	s->kind = TX_NONE;
	if (k == TX_RTR) {
		swiw_mpa_rtr_sent(&s->setup->mpa);
		swiw_stream_mpa_events(s);
	} else if (k == TX_SQE) {
		if (s->sq_op == SWIW_OP_WRITE_IMM && !s->phase) {
			struct swiw_rdmap_msg m = { .opcode = RDMAP_IMM_DATA };

			memcpy(m.u.imm, &s->imm, sizeof(s->imm));
			m.msn = s->msn_send++;
			s->phase = 1;
			s->nsrc = 0;
			if (!swiw_tx_msg_start(s, &m))
				s->kind = TX_SQE;
			return;
		}
		/* A READ's next sink may wait for ORD room; anything
		 * else completes on its SENT event or its response. */
		if (s->sq_op == SWIW_OP_READ)
			s->rd_more = s->rd_next < s->rd_nsink;
	}
}

/*
 * Publishes what can go now as txds and rings the lower half, which
 * sends what the transport takes; true if anything moved. Called by
 * swiw_tx_pump when the stream is not idle.
 */
bool swiw_tx_pump_work(struct swiw_stream *s)
{
	bool moved = false;
	int rc;

	swiw_eng_assert_held();
	s->tx_full = false;
	s->rd_wait = false;
	while (s->ops->txd && !s->failed &&
	       (s->tx_ready || s->kind == TX_RTR)) {
		if (s->kind == TX_NONE) {
			if (s->rd_more) {
				if (!ord_room(s)) {
					s->rd_wait = true;
					break;
				}
				s->rd_more = false;
				if (rd_start_next(s)) {
					swiw_stream_fail(s, SWIW_V_NONE, NULL,
							 0,
							 IBV_WC_LOC_QP_OP_ERR,
							 IBV_EVENT_QP_FATAL);
					return true;
				}
				s->kind = TX_SQE;
			} else if (next_sqe(s) <= 0) {
				break;
			}
			if (s->kind == TX_NONE)
				break;
		}
		rc = txd_build(s);
		if (!rc) {
			/* The ring is full: the lower half sends what it can.
			 * Still full, it waits for transport room, which
			 * brings the pump back. No second round here: the
			 * completions drained after the pump would wait. */
			if (s->tx_rung)
				s->ops->doorbell(s);
			s->tx_full = !s->failed &&
				     !swiw_ring_prod_slot(&s->txr);
			break;
		}
		if (rc < 0) {
			swiw_stream_fail(s, SWIW_V_RDMAP_CATASTROPHIC, NULL, 0,
					 IBV_WC_LOC_QP_OP_ERR,
					 IBV_EVENT_QP_FATAL);
			return true;
		}
		moved = true;
		msg_done(s);
	}
	if (s->tx_rung && !s->failed)
		s->ops->doorbell(s);
	return moved;
}
