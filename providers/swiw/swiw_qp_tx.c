// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The in-process engine's transmit side: work requests taken from the SQ
 * in order, Read and Atomic Responses owed to the peer, each cut into DDP
 * segments (swiw_ddp_tx), framed by swiw_fpdu_tx_build and gathered from
 * registered memory with one sendmsg per batch of up to TX_BATCH
 * segments. Under the engine lock (swiw_engine.c).
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

static uint32_t stream_interest(const struct swiw_stream *s)
{
	return EPOLLIN | EPOLLRDHUP | (s->want_out ? EPOLLOUT : 0);
}

static void stream_want_out(struct swiw_stream *s, bool on)
{
	if (s->want_out == on)
		return;
	s->want_out = on;
	if (!s->eof_due_ns)
		swiw_eng_epoll_ctl(EPOLL_CTL_MOD, s->fd, stream_interest(s), s);
}

/* Sends what is left of the batch: 0 when all is out, -EAGAIN, or an
 * errno of the socket (negative). */
static int batch_flush(struct swiw_stream *s)
{
	while (s->iov_pos < s->niov) {
		struct msghdr mh = { .msg_iov = s->iov + s->iov_pos,
				     .msg_iovlen = s->niov - s->iov_pos };
		ssize_t n = sendmsg(s->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				stream_want_out(s, true);
				return -EAGAIN;
			}
			return -errno;
		}
		while (n > 0 && s->iov_pos < s->niov) {
			struct iovec *v = &s->iov[s->iov_pos];

			if ((size_t)n >= v->iov_len) {
				n -= (ssize_t)v->iov_len;
				s->iov_pos++;
			} else {
				v->iov_base = (uint8_t *)v->iov_base + n;
				v->iov_len -= (size_t)n;
				n = 0;
			}
		}
	}
	s->niov = s->iov_pos = 0;
	stream_want_out(s, false);
	return 0;
}

/*
 * Gathers [off, off + len) of the message's source into @v (process
 * addresses) or @g (SGEs, lkey 0 for inline data); returns the pieces.
 */
uint32_t swiw_tx_gather(const struct swiw_stream *s, uint32_t off, uint32_t len,
			struct swiw_iov *v, struct swiw_sge *g, uint32_t max)
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
		if (v) {
			v[n].base = s->src[i].addr + off;
			v[n].len = c;
		} else {
			g[n].laddr = s->src[i].lkey ?
					     s->src[i].laddr + off :
					     (uintptr_t)(s->src[i].addr + off);
			g[n].length = c;
			g[n].lkey = s->src[i].lkey;
		}
		n++;
		len -= c;
		off = 0;
	}
	return n;
}

/* Cuts segments of the current message into the batch until it is full
 * or the message ends. 0, or a negative errno. */
static int next_sqe(struct swiw_stream *s);

/*
 * The batch's message ended with room to spare: start the next WR in the
 * same batch, so that small messages share one sendmsg. Only plain Sends
 * and Writes from registered memory, with nothing owed to the peer first:
 * their completion is due once the batch is out (bdone), inline data
 * lives in one buffer per stream, and anything else has work of its own
 * at msg_done. True if the next message started.
 */
static bool chain_next(struct swiw_stream *s)
{
	const struct swiw_sqe *sqe;
	uint8_t op = s->sq_op;

	if (s->kind != TX_SQE || s->rr_head != s->rr_tail ||
	    (op != SWIW_OP_SEND && op != SWIW_OP_SEND_INV &&
	     op != SWIW_OP_WRITE) ||
	    (s->nsrc && s->src[0].addr == s->inl))
		return false;
	sqe = swiw_ring_cons_slot(&s->qp->sq_eng);
	if (!sqe || (sqe->flags & (SWIW_WQE_INLINE | SWIW_WQE_FENCE)) ||
	    (sqe->opcode != SWIW_OP_SEND && sqe->opcode != SWIW_OP_SEND_INV &&
	     sqe->opcode != SWIW_OP_WRITE))
		return false;
	s->bdone[s->nbdone++] = s->slot;
	if (next_sqe(s) == 1)
		return true;
	/* It failed (the stream with it) or did not start: the message
	 * just cut ends the batch as usual. */
	s->nbdone--;
	return false;
}

/* The batch went to TCP: the whole messages in it are done. */
static void batch_done(struct swiw_stream *s)
{
	uint32_t i;

	for (i = 0; i < s->nbdone; i++)
		s->infl[s->bdone[i] & s->infl_mask].done = true;
	if (s->nbdone)
		swiw_stream_sq_drain(s);
	s->nbdone = 0;
}

static int batch_build(struct swiw_stream *s)
{
	uint32_t nf = 0;

	s->batch_last = false;
	s->batch_bytes = 0;
	s->nbdone = 0;
	while (nf < TX_BATCH && !s->batch_last) {
		struct swiw_iov pieces[1 + SWIW_MAX_SGE];
		struct swiw_ddp_txseg seg;
		struct swiw_fpdu_frame *f = &s->fr[nf].f;
		uint32_t np, maxiov;
		int rc;

		rc = swiw_ddp_tx_next(&s->dtx, s->mulpdu, s->fr[nf].hdr,
				      sizeof(s->fr[nf].hdr), &seg);
		if (rc <= 0)
			return rc ? rc : -EINVAL;
		pieces[0].base = s->fr[nf].hdr;
		pieces[0].len = seg.hdr_len;
		np = 1 + swiw_tx_gather(s, seg.payload_off, seg.payload_len,
					pieces + 1, NULL, SWIW_MAX_SGE);
		maxiov = swiw_fpdu_tx_max_iov(np, seg.hdr_len + seg.payload_len,
					      s->ftx.markers);
		if (s->niov + maxiov > TX_IOV) {
			/* Undo is not possible: the cursor moved. The batch
			 * so far plus this frame always fit by sizing. */
			return -ENOSPC;
		}
		f->iov = (struct swiw_iov *)(s->iov + s->niov);
		f->max_iov = maxiov;
		rc = swiw_fpdu_tx_build(&s->ftx, pieces, np, f);
		if (rc)
			return rc;
		s->niov += f->n_iov;
		s->batch_bytes += seg.hdr_len + seg.payload_len;
		s->batch_last = seg.last;
		nf++;
		/* Leave room for the largest next frame. */
		if (s->niov + swiw_fpdu_tx_max_iov(1 + SWIW_MAX_SGE, 65535,
						   s->ftx.markers) >
		    TX_IOV)
			break;
		if (s->batch_last && nf < TX_BATCH && chain_next(s))
			s->batch_last = false;
	}
	return 0;
}

int swiw_tx_msg_start(struct swiw_stream *s, const struct swiw_rdmap_msg *m)
{
	int rc = swiw_ddp_tx_init(&s->dtx, m);

	if (!rc)
		s->batch_last = false;
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
		if (swiw_mem_lookup(sge[i].lkey, s->qp->vqp.qp.pd, 0,
				    sge[i].laddr, sge[i].length, &ref))
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
	swiw_ddp_progress_expect(&rd->prog, m.u.rreq.sink_to, m.u.rreq.size);
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
		if (swiw_mem_lookup(sge[i].lkey, s->qp->vqp.qp.pd,
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
	    swiw_mem_lookup(sge->lkey, s->qp->vqp.qp.pd, IBV_ACCESS_LOCAL_WRITE,
			    sge->laddr, RDMAP_ATOMIC_DATA_SIZE, &ref))
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
 * LOCAL_INV: done at once, in order with the WRs before it. A helper
 * stream checks it here and has the helper invalidate in ring order
 * (SWIW_TXD_INVALIDATE): it completes on the helper's SENT event.
 */
static int local_inv(struct swiw_stream *s, uint32_t stag)
{
	struct swiw_mem_ref ref;
	int err;

	if (s->attached) {
		err = swiw_mem_lookup(stag, s->qp->vqp.qp.pd, 0, 0, 0, &ref);
		if (!err) {
			s->infl[s->slot & s->infl_mask].inv_stag = stag;
			s->kind = TX_SQE;
			s->batch_last = false;
			return 0;
		}
	} else {
		err = swiw_mem_invalidate(stag, s->qp->vqp.qp.pd);
	}

	if (err) {
		swiw_info("QP %u: LOCAL_INV of STag 0x%x failed (%s)",
			  swiw_stream_qpn(s), stag,
			  err == SWIW_MEM_NOT_ASSOC ? "another PD's" :
						      "not valid");
		swiw_stream_fail(s, SWIW_V_NONE, NULL, 0, IBV_WC_LOC_PROT_ERR,
				 IBV_EVENT_QP_FATAL);
		return -1;
	}
	s->infl[s->slot & s->infl_mask].done = true;
	swiw_stream_sq_drain(s);
	return 0;
}

/* Takes the next SQE and starts its message. 1: started, 0: nothing to
 * do now, -1: the stream failed. */
static int next_sqe(struct swiw_stream *s)
{
	struct swiw_qp *qp = s->qp;
	const struct swiw_sqe *sqe;
	struct swiw_rdmap_msg m = { 0 };
	struct infl *w;
	uint64_t total = 0;
	bool ok = true;
	uint8_t op;

	sqe = swiw_ring_cons_slot(&qp->sq_eng);
	if (!sqe) {
		/* Arm with an RMW: ordered against post_send's exchange
		 * on the same word, so either we see its SQE now or it
		 * sees the arm and rings (swiw_engine_sq_posted). */
		__atomic_exchange_n(&qp->sq_armed, 1, __ATOMIC_SEQ_CST);
		sqe = swiw_ring_cons_slot(&qp->sq_eng);
		if (!sqe)
			return 0;
		__atomic_store_n(&qp->sq_armed, 0, __ATOMIC_RELAXED);
	}
	op = sqe->opcode;
	/* A fenced WR waits for every READ and atomic before it. */
	if ((sqe->flags & SWIW_WQE_FENCE) && s->rd_head != s->rd_tail)
		return 0;
	if ((op == SWIW_OP_READ || op == SWIW_OP_FETCH_ADD ||
	     op == SWIW_OP_CMP_SWAP) &&
	    !ord_room(s))
		return 0; /* ORD reached: a response frees a slot */
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
 * Helper streams: the current message into the transmit ring, one txd
 * per DDP segment (cut shorter where SWIW_TXD_SGE pieces end). 1: all of
 * it is in the ring, 0: the ring is full (a SENT event or the helper
 * clearing slots brings us back), or a negative errno.
 */
static int txd_build(struct swiw_stream *s)
{
	uint32_t quarter = s->txr.num / 4 ? s->txr.num / 4 : 1;

	while (!s->batch_last) {
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

			t->id = SWIW_TXD_ID_WR | s->slot;
			t->num_sge = 0;
			t->hdr_len = sizeof(stag);
			t->payload_len = 0;
			memcpy(t->hdr, &stag, sizeof(stag));
			swiw_ring_publish(&s->txr, t,
					  SWIW_TXD_INVALIDATE | SWIW_TXD_EVENT);
			s->tx_rung = true;
			s->batch_last = true;
			break;
		}
		rc = swiw_ddp_tx_next(&s->dtx, s->mulpdu, t->hdr,
				      sizeof(t->hdr), &seg);
		if (rc <= 0)
			return rc ? rc : -EINVAL;
		t->num_sge = (uint8_t)swiw_tx_gather(s, seg.payload_off,
						     seg.payload_len, NULL,
						     t->sge, SWIW_TXD_SGE);
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
		if ((seg.last && txd_completes_wr(s)) ||
		    !(s->txr.pos % quarter))
			fl |= SWIW_TXD_EVENT;
		swiw_ring_publish(&s->txr, t, fl);
		s->tx_rung = true;
		s->batch_last = seg.last;
	}
	return 1;
}

/* The current message's last octet went to TCP. */
static void msg_done(struct swiw_stream *s)
{
	enum tx_kind k = s->kind;

	s->kind = TX_NONE;
	if (k == TX_RRESP) {
		s->rr_head++;
		swiw_ddp_rx_ird_release(&s->drx);
	} else if (k == TX_RTR) {
		swiw_mpa_rtr_sent(&s->mpa);
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
		if (s->sq_op == SWIW_OP_READ) {
			/* Read Responses to the peer may go between. */
			s->rd_more = s->rd_next < s->rd_nsink;
		} else if (s->sq_op != SWIW_OP_FETCH_ADD &&
			   s->sq_op != SWIW_OP_CMP_SWAP && !s->attached) {
			/* (A helper's SENT event completes it.) */
			s->infl[s->slot & s->infl_mask].done = true;
			swiw_stream_sq_drain(s);
		}
	}
}

static void start_rresp(struct swiw_stream *s)
{
	struct rresp *r = &s->rr[s->rr_head % SWIW_MAX_IRD];
	struct swiw_rdmap_msg m = { .opcode = RDMAP_READ_RESP };

	if (r->atomic) {
		m.opcode = RDMAP_ATOMIC_RESP;
		m.msn = s->msn_aresp++;
		m.u.aresp = r->aresp;
		s->nsrc = 0;
		if (!swiw_tx_msg_start(s, &m))
			s->kind = TX_RRESP;
		return;
	}
	m.len = r->len;
	m.stag = r->sink_stag;
	m.to = r->sink_to;
	s->src[0].addr = r->src;
	s->src[0].len = r->len;
	s->nsrc = r->len ? 1 : 0;
	if (!swiw_tx_msg_start(s, &m))
		s->kind = TX_RRESP;
}

/* Sends what can go now; true if anything moved. */
bool swiw_tx_pump(struct swiw_stream *s, uint64_t budget)
{
	uint64_t spent = 0;
	bool moved = false;
	int rc;

	swiw_eng_assert_held();
	while (!s->failed && (s->tx_ready || s->kind == TX_RTR)) {
		if (s->niov && !s->attached) {
			rc = batch_flush(s);
			if (rc == -EAGAIN)
				return moved;
			if (rc) {
				swiw_stream_fail(s, SWIW_V_LLP_LOST, NULL, 0,
						 -1, IBV_EVENT_QP_FATAL);
				return true;
			}
			moved = true;
			spent += s->batch_bytes;
			batch_done(s);
			if (s->batch_last)
				msg_done(s);
			if (spent >= budget) {
				/* The caller's share is done: the engine
				 * goes on with the rest. */
				swiw_eng_doorbell();
				return moved;
			}
			continue;
		}
		if (s->kind == TX_NONE) {
			if (s->rr_head != s->rr_tail) {
				start_rresp(s);
			} else if (s->rd_more) {
				if (!ord_room(s))
					break;
				s->rd_more = false;
				if (rd_start_next(s)) {
					swiw_stream_fail(s, SWIW_V_NONE, NULL,
							 0,
							 IBV_WC_LOC_QP_OP_ERR,
							 IBV_EVENT_QP_FATAL);
					return true;
				}
				s->kind = TX_SQE;
			} else {
				if (next_sqe(s) <= 0)
					break;
				if (s->kind == TX_NONE) {
					moved = true; /* LOCAL_INV */
					continue;
				}
			}
			if (s->kind == TX_NONE)
				break;
		}
		if (s->attached) {
			rc = txd_build(s);
			if (!rc)
				break;
			if (rc > 0) {
				moved = true;
				msg_done(s);
				continue;
			}
			swiw_stream_fail(s, SWIW_V_RDMAP_CATASTROPHIC, NULL, 0,
					 IBV_WC_LOC_QP_OP_ERR,
					 IBV_EVENT_QP_FATAL);
			return true;
		}
		rc = batch_build(s);
		if (rc) {
			swiw_stream_fail(s, SWIW_V_RDMAP_CATASTROPHIC, NULL, 0,
					 IBV_WC_LOC_QP_OP_ERR,
					 IBV_EVENT_QP_FATAL);
			return true;
		}
	}
	if (s->tx_rung && s->attached && !s->failed)
		swiw_helper_doorbell(s);
	return moved;
}
