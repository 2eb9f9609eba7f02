// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The in-process engine's data path: one stream per connected QP. MPA
 * setup runs on the socket through swiw_mpa; then messages go out as
 * DDP segments (swiw_ddp_tx) framed by swiw_fpdu_tx_build, gathered from
 * registered memory with one sendmsg per message (up to TX_BATCH
 * segments), and come in through the deframer's pull interface: whatever
 * the socket holds is read into a staging buffer in one recv, and a large
 * payload the staging buffer does not hold yet is received straight into
 * its destination. swiw_ddp_rx_segment decides every placement, with the
 * STag table and the RQ/SRQ ring behind its lookups. Everything here runs
 * under the engine lock (swiw_engine.c).
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
#include "swiw_ddp.h"
#include "swiw_fpdu.h"
#include "swiw_mpa.h"
#include "swiw_term.h"

_Static_assert(sizeof(struct swiw_iov) == sizeof(struct iovec) &&
		       offsetof(struct swiw_iov, len) ==
			       offsetof(struct iovec, iov_len),
	       "swiw_iov is an iovec");
_Static_assert((int)SWIW_WC_REM_ACCESS_ERR == (int)IBV_WC_REM_ACCESS_ERR &&
		       (int)SWIW_WC_GENERAL_ERR == (int)IBV_WC_GENERAL_ERR &&
		       (int)SWIW_WC_LOC_PROT_ERR == (int)IBV_WC_LOC_PROT_ERR,
	       "swiw_wc_status numbering");

/* A TERMINATE's codes as swiw-abi.h puts them in a CQE's vendor_err. */
#define TERM_VENDOR_ERR(layer, etype, ecode) \
	((uint32_t)(layer) << 12 | (uint32_t)(etype) << 8 | (uint32_t)(ecode))

#define TX_BATCH 16
#define TX_IOV 1024
#define STAGE_SIZE (256 * 1024)
#define DIRECT_MIN 2048 /* payload runs received straight into place */
#define PEEK SWIW_FPDU_PEEK_MAX

struct seg_src {
	uint8_t *addr;
	uint32_t len;
};

/* A send-queue WR from when it is taken until its completion is due. */
struct infl {
	uint64_t id;
	uint32_t bytes;
	uint8_t opcode;
	bool signalled;
	bool done;
};

/*
 * A Read or Atomic Request of ours, waiting for its response. Both go on
 * queue 1 and are answered in order, so one FIFO (ORD) holds them. A READ
 * with several SGEs is one Read Request per SGE; the last completes it.
 */
struct rd_out {
	uint32_t slot; /* in infl[] */
	uint32_t sink_stag;
	bool atomic;
	bool last; /* its response completes the WR */
	uint8_t *result; /* atomic: the local 8 octets of the result */
	struct swiw_ddp_progress prog;
};

/* A Read or Atomic Request of the peer, waiting to be answered. */
struct rresp {
	bool atomic;
	uint8_t *src;
	uint32_t len;
	uint32_t sink_stag;
	uint64_t sink_to;
	struct swiw_rdmap_atomic_resp aresp;
};

/* The local SGEs of a READ, one Read Request each. */
struct rd_sink {
	uint32_t lkey;
	uint32_t len;
	uint64_t laddr;
};

/* The receive WR the current untagged message goes into. */
struct rxbuf {
	bool valid;
	bool bad; /* an SGE failed the local checks */
	uint64_t id;
	uint32_t msn;
	uint32_t nsge;
	uint64_t len;
	struct seg_src sge[SWIW_MAX_SGE];
};

enum tx_kind {
	TX_NONE,
	TX_SQE,
	TX_RRESP,
	TX_RTR
};

struct swiw_stream {
	struct swiw_qp *qp;
	int fd;
	bool mpa_phase; /* bytes in are MPA frames */
	bool fpdu_setup;
	bool tx_ready;
	bool failed;
	bool dead; /* detached, waiting in the graveyard */
	bool want_out;
	uint64_t eof_due_ns; /* the peer closed: fail the stream then */
	struct swiw_stream *next, *next_dead;

	struct swiw_mpa mpa;
	uint8_t mpa_tx[SWIW_MPA_FRAME_MAX];
	uint8_t mpa_pd[SWIW_MPA_PD_MAX];
	uint32_t ird, ord;
	uint32_t mulpdu;
	bool bk_on; /* connected through the broker: check the blocks */
	bool bk_checked; /* initiator: the Reply's block was checked */
	struct swiw_engine_bk bk;

	/* Transmit. */
	struct swiw_fpdu_tx ftx;
	struct swiw_ddp_tx dtx;
	enum tx_kind kind;
	uint32_t slot; /* TX_SQE: its infl[] entry */
	uint8_t sq_op;
	int phase; /* WRITE_IMM: 0 the Write, 1 the Immediate Data */
	uint32_t imm;
	struct seg_src src[SWIW_MAX_SGE];
	uint32_t nsrc;
	uint8_t inl[SWIW_MAX_INLINE];
	uint32_t msn_send, msn_rreq, msn_aresp;
	uint32_t atomic_id;
	/* TX_SQE READ: the sinks still to be asked for. */
	struct rd_sink rd_sink[SWIW_MAX_SGE_RD];
	uint32_t rd_nsink, rd_next;
	bool rd_more; /* more sinks wait for ORD room */
	uint32_t rd_rkey;
	uint64_t rd_raddr;
	struct {
		uint8_t hdr[SWIW_DDP_HDR_MAX];
		struct swiw_fpdu_frame f;
	} fr[TX_BATCH];
	struct iovec iov[TX_IOV];
	uint32_t niov, iov_pos;
	bool batch_last; /* the batch ends the message */

	struct infl *infl;
	uint32_t infl_mask, infl_head, infl_tail;
	struct rd_out rd[SWIW_MAX_ORD];
	uint32_t rd_head, rd_tail;
	struct rresp rr[SWIW_MAX_IRD];
	uint32_t rr_head, rr_tail;

	/* Receive. */
	struct swiw_fpdu_rx frx;
	struct swiw_ddp_rx drx;
	uint8_t *stage;
	uint32_t st_head, st_tail;
	bool seg_ok; /* the current segment passed validation */
	struct swiw_ddp_seg seg;
	struct swiw_ddp_dest dst;
	struct swiw_mem_ref tref; /* the region of the current segment */
	struct rxbuf rqe;
	uint64_t last_write_len, write_acc;
	bool after_write; /* the last message in was a whole Write */
	bool cq_full; /* a completion was lost: the QP fails */
	uint32_t vendor_err; /* the TERMINATE's codes, for the failed WRs */
};

static struct swiw_stream *streams, *graveyard;

static void mpa_events(struct swiw_stream *s);

static void stream_fail(struct swiw_stream *s, enum swiw_violation v,
			const void *seg, uint32_t seg_len, int sq_status,
			enum ibv_event_type ev);

/*
 * IRD is an RTR attribute, ORD an RTS one, and a QP connected by the
 * broker may run MPA before RTS: it offers the device's ORD, and the
 * QP's max_rd_atomic, whenever it is set, limits what is outstanding.
 */
static uint16_t ulp_ird(const struct swiw_stream *s)
{
	return __atomic_load_n(&s->qp->ird, __ATOMIC_RELAXED);
}

static uint16_t ulp_ord(const struct swiw_stream *s)
{
	if (s->bk_on)
		return SWIW_MAX_ORD;
	return __atomic_load_n(&s->qp->ord, __ATOMIC_RELAXED);
}

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

static uint32_t qpn(const struct swiw_stream *s)
{
	return s->qp->vqp.qp.qp_num;
}

/* A full CQ loses the completion and fails the QP (see overflow_check). */
static void push_cqe(struct swiw_stream *s, struct swiw_cq *cq,
		     struct swiw_cqe *e)
{
	if (swiw_engine_cq_push(cq, e) && !s->cq_full) {
		swiw_err("QP %u: CQ overflow: a completion was lost, the QP "
			 "goes to error",
			 s->qp->vqp.qp.qp_num);
		s->cq_full = true;
	}
}

/* SQ completions go out in the order the WRs were posted. */
static void sq_drain(struct swiw_stream *s)
{
	while (s->infl_head != s->infl_tail) {
		struct infl *w = &s->infl[s->infl_head & s->infl_mask];
		struct swiw_cqe e = { 0 };

		if (!w->done)
			break;
		if (w->signalled) {
			e.id = w->id;
			e.opcode = w->opcode;
			e.status = IBV_WC_SUCCESS;
			e.bytes = w->bytes;
			e.qp_num = qpn(s);
			push_cqe(s, s->qp->scq, &e);
		}
		s->infl_head++;
	}
}

/* Memory lookups for swiw_ddp_rx_segment ------------------------------ */

static int access_bits(int ibv)
{
	return (ibv & IBV_ACCESS_LOCAL_WRITE ? SWIW_ACC_LOCAL_WRITE : 0) |
	       (ibv & IBV_ACCESS_REMOTE_WRITE ? SWIW_ACC_REMOTE_WRITE : 0) |
	       (ibv & IBV_ACCESS_REMOTE_READ ? SWIW_ACC_REMOTE_READ : 0) |
	       (ibv & IBV_ACCESS_REMOTE_ATOMIC ? SWIW_ACC_REMOTE_ATOMIC : 0);
}

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
	r->access = (u32)access_bits(s->tref.access);
	r->associated = s->tref.pd == s->qp->vqp.qp.pd;
	return 0;
}

/*
 * An SRQ armed with a limit raises IBV_EVENT_SRQ_LIMIT_REACHED once when
 * fewer WRs than the limit are left, and is disarmed (limit 0). Counting
 * only up to the limit keeps this cheap and needs no producer index.
 */
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
	if (n >= limit ||
	    !__atomic_compare_exchange_n(&srq->limit, &limit, 0, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	swiw_post_async(to_swiw_ctx(s->qp->vqp.qp.context),
			IBV_EVENT_SRQ_LIMIT_REACHED, (uintptr_t)&srq->vsrq.srq);
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

static const struct swiw_ddp_mem_ops mem_ops = {
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

/* Transmit -------------------------------------------------------------- */

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

/* Gathers [off, off + len) of the message's source into @v. */
static uint32_t gather(struct swiw_stream *s, uint32_t off, uint32_t len,
		       struct swiw_iov *v, uint32_t max)
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
		v[n].base = s->src[i].addr + off;
		v[n].len = c;
		n++;
		len -= c;
		off = 0;
	}
	return n;
}

/* Cuts segments of the current message into the batch until it is full
 * or the message ends. 0, or a negative errno. */
static int batch_build(struct swiw_stream *s)
{
	uint32_t nf = 0;

	s->batch_last = false;
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
		np = 1 + gather(s, seg.payload_off, seg.payload_len, pieces + 1,
				SWIW_MAX_SGE);
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
		s->batch_last = seg.last;
		nf++;
		/* Leave room for the largest next frame. */
		if (s->niov + swiw_fpdu_tx_max_iov(1 + SWIW_MAX_SGE, 65535,
						   s->ftx.markers) >
		    TX_IOV)
			break;
	}
	return 0;
}

static int msg_start(struct swiw_stream *s, const struct swiw_rdmap_msg *m)
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
	if (msg_start(s, &m))
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

/* LOCAL_INV: done at once, in order with the WRs before it. */
static int local_inv(struct swiw_stream *s, uint32_t stag)
{
	int err = swiw_mem_invalidate(stag, s->qp->vqp.qp.pd);

	if (err) {
		swiw_info("QP %u: LOCAL_INV of STag 0x%x failed (%s)", qpn(s),
			  stag,
			  err == SWIW_MEM_NOT_ASSOC ? "another PD's" :
						      "not valid");
		stream_fail(s, SWIW_V_NONE, NULL, 0, IBV_WC_LOC_PROT_ERR,
			    IBV_EVENT_QP_FATAL);
		return -1;
	}
	s->infl[s->slot & s->infl_mask].done = true;
	sq_drain(s);
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
		ok = !msg_start(s, &m);
	if (!ok) {
		stream_fail(s, SWIW_V_NONE, NULL, 0, IBV_WC_LOC_QP_OP_ERR,
			    IBV_EVENT_QP_FATAL);
		return -1;
	}
	if (op == SWIW_OP_FETCH_ADD || op == SWIW_OP_CMP_SWAP)
		s->rd_tail++;
	s->kind = TX_SQE;
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
		mpa_events(s);
	} else if (k == TX_SQE) {
		if (s->sq_op == SWIW_OP_WRITE_IMM && !s->phase) {
			struct swiw_rdmap_msg m = { .opcode = RDMAP_IMM_DATA };

			memcpy(m.u.imm, &s->imm, sizeof(s->imm));
			m.msn = s->msn_send++;
			s->phase = 1;
			s->nsrc = 0;
			if (!msg_start(s, &m))
				s->kind = TX_SQE;
			return;
		}
		if (s->sq_op == SWIW_OP_READ) {
			/* Read Responses to the peer may go between. */
			s->rd_more = s->rd_next < s->rd_nsink;
		} else if (s->sq_op != SWIW_OP_FETCH_ADD &&
			   s->sq_op != SWIW_OP_CMP_SWAP) {
			s->infl[s->slot & s->infl_mask].done = true;
			sq_drain(s);
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
		if (!msg_start(s, &m))
			s->kind = TX_RRESP;
		return;
	}
	m.len = r->len;
	m.stag = r->sink_stag;
	m.to = r->sink_to;
	s->src[0].addr = r->src;
	s->src[0].len = r->len;
	s->nsrc = r->len ? 1 : 0;
	if (!msg_start(s, &m))
		s->kind = TX_RRESP;
}

/* Sends what can go now; true if anything moved. */
static bool tx_pump(struct swiw_stream *s)
{
	bool moved = false;
	int rc;

	swiw_eng_assert_held();
	while (!s->failed && (s->tx_ready || s->kind == TX_RTR)) {
		if (s->niov) {
			rc = batch_flush(s);
			if (rc == -EAGAIN)
				return moved;
			if (rc) {
				stream_fail(s, SWIW_V_LLP_LOST, NULL, 0, -1,
					    IBV_EVENT_QP_FATAL);
				return true;
			}
			moved = true;
			if (s->batch_last)
				msg_done(s);
			continue;
		}
		if (s->kind == TX_NONE) {
			if (s->rr_head != s->rr_tail) {
				start_rresp(s);
			} else if (s->rd_more) {
				if (!ord_room(s))
					return moved;
				s->rd_more = false;
				if (rd_start_next(s)) {
					stream_fail(s, SWIW_V_NONE, NULL, 0,
						    IBV_WC_LOC_QP_OP_ERR,
						    IBV_EVENT_QP_FATAL);
					return true;
				}
				s->kind = TX_SQE;
			} else {
				if (next_sqe(s) <= 0)
					return moved;
				if (s->kind == TX_NONE) {
					moved = true; /* LOCAL_INV */
					continue;
				}
			}
			if (s->kind == TX_NONE)
				return moved;
		}
		rc = batch_build(s);
		if (rc) {
			stream_fail(s, SWIW_V_RDMAP_CATASTROPHIC, NULL, 0,
				    IBV_WC_LOC_QP_OP_ERR, IBV_EVENT_QP_FATAL);
			return true;
		}
	}
	return moved;
}

/* Errors ---------------------------------------------------------------- */

/* Best effort: the TERMINATE for @v, when no FPDU is half sent. */
static void send_terminate(struct swiw_stream *s, enum swiw_violation v,
			   const void *seg, uint32_t seg_len)
{
	struct swiw_fpdu_frame *f = &s->fr[0].f;
	struct swiw_term t;
	struct swiw_iov piece;
	struct msghdr mh = { 0 };
	int len;

	if (!s->fpdu_setup || s->iov_pos || s->mpa_phase ||
	    swiw_term_from_violation(v, seg, seg_len, &t))
		return;
	len = swiw_term_build(&t, s->fr[0].hdr, sizeof(s->fr[0].hdr));
	if (len < 0)
		return;
	piece.base = s->fr[0].hdr;
	piece.len = (size_t)len;
	f->iov = (struct swiw_iov *)s->iov;
	f->max_iov = swiw_fpdu_tx_max_iov(1, (u32)len, s->ftx.markers);
	if (swiw_fpdu_tx_build(&s->ftx, &piece, 1, f))
		return;
	mh.msg_iov = s->iov;
	mh.msg_iovlen = f->n_iov;
	if (sendmsg(s->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		swiw_dbg("TERMINATE not sent: %s", strerror(errno));
}

static void async_event(struct swiw_stream *s, enum ibv_event_type ev)
{
	swiw_post_async(to_swiw_ctx(s->qp->vqp.qp.context), ev,
			(uintptr_t)&s->qp->vqp.qp);
}

/*
 * The stream ends: TERMINATE for @v (best effort), the QP to error, the
 * send WR the failure concerns with @sq_status (-1: none), the receive
 * in progress with the table's local status, everything else flushed,
 * and the async event @ev (0: none).
 */
static void stream_fail(struct swiw_stream *s, enum swiw_violation v,
			const void *seg, uint32_t seg_len, int sq_status,
			enum ibv_event_type ev)
{
	const struct swiw_violation_info *vi = swiw_violation_info(v);
	struct swiw_qp *qp = s->qp;
	int rq_status = IBV_WC_WR_FLUSH_ERR;
	bool first = true;

	swiw_eng_assert_held();
	if (s->failed)
		return;
	s->failed = true;
	swiw_dbg("QP %u: stream fails (%s, send status %d, %u send WRs out)",
		 qpn(s), vi ? vi->name : "?", sq_status,
		 s->infl_tail - s->infl_head);
	if (v != SWIW_V_NONE && vi && !(vi->flags & SWIW_VI_NO_TERM))
		send_terminate(s, v, seg, seg_len);
	/*
	 * FIN after the TERMINATE, not RST: closing with unread input would
	 * reset the connection and could discard the TERMINATE at the peer.
	 * The socket is closed when the QP is reset or destroyed.
	 */
	shutdown(s->fd, SHUT_WR);
	swiw_eng_epoll_ctl(EPOLL_CTL_DEL, s->fd, 0, NULL);
	__atomic_store_n(&qp->state, IBV_QPS_ERR, __ATOMIC_RELEASE);
	if (v != SWIW_V_NONE && vi && s->rqe.valid &&
	    vi->local_status != SWIW_WC_SUCCESS)
		rq_status = vi->local_status;
	if (s->rqe.bad)
		rq_status = IBV_WC_LOC_PROT_ERR;

	/* Send WRs taken from the ring, in order. */
	sq_drain(s);
	while (s->infl_head != s->infl_tail) {
		struct infl *w = &s->infl[s->infl_head++ & s->infl_mask];
		struct swiw_cqe e = { .id = w->id,
				      .opcode = w->opcode,
				      .status = IBV_WC_WR_FLUSH_ERR,
				      .qp_num = qpn(s) };

		if (first && sq_status >= 0 && !w->done) {
			e.status = (uint16_t)sq_status;
			e.vendor_err = s->vendor_err;
		}
		first = false;
		push_cqe(s, qp->scq, &e);
	}
	if (first && sq_status >= 0) {
		const struct swiw_sqe *sqe = swiw_ring_cons_slot(&qp->sq_eng);

		if (sqe) {
			struct swiw_cqe e = { .id = sqe->id,
					      .opcode = sqe->opcode,
					      .status = (uint16_t)sq_status,
					      .qp_num = qpn(s),
					      .vendor_err = s->vendor_err };

			swiw_ring_release(&qp->sq_eng, (void *)sqe);
			push_cqe(s, qp->scq, &e);
		}
	}
	s->rd_head = s->rd_tail = s->rr_head = s->rr_tail = 0;
	s->rd_more = false;
	s->kind = TX_NONE;
	if (s->rqe.valid) {
		struct swiw_cqe e = { .id = s->rqe.id,
				      .opcode = SWIW_OP_RECV,
				      .status = (uint16_t)rq_status,
				      .qp_num = qpn(s) };

		if (rq_status != IBV_WC_WR_FLUSH_ERR)
			e.vendor_err = s->vendor_err;

		s->rqe.valid = false;
		push_cqe(s, qp->rcq, &e);
	}
	swiw_engine_flush_qp_locked(qp);
	if (ev)
		async_event(s, ev);
}

static enum ibv_event_type vi_event(enum swiw_violation v)
{
	const struct swiw_violation_info *vi = swiw_violation_info(v);

	switch (vi ? vi->async : SWIW_AE_QP_FATAL) {
	case SWIW_AE_QP_REQ_ERR:
		return IBV_EVENT_QP_REQ_ERR;
	case SWIW_AE_QP_ACCESS_ERR:
		return IBV_EVENT_QP_ACCESS_ERR;
	default:
		return IBV_EVENT_QP_FATAL;
	}
}

static void fail_violation(struct swiw_stream *s, enum swiw_violation v,
			   const void *seg, uint32_t seg_len)
{
	const struct swiw_violation_info *vi = swiw_violation_info(v);

	swiw_info("QP %u: %s, stream terminated", qpn(s), vi ? vi->name : "?");
	if (vi)
		s->vendor_err =
			TERM_VENDOR_ERR(vi->layer, vi->etype, vi->ecode);
	stream_fail(s, v, seg, seg_len, -1, vi_event(v));
}

/* Receive --------------------------------------------------------------- */

static void on_hdr(struct swiw_stream *s)
{
	enum swiw_violation v = SWIW_V_NONE;
	const uint8_t *h;
	uint32_t hl, ulen = swiw_fpdu_rx_ulpdu_len(&s->frx);
	int rc;

	h = swiw_fpdu_rx_hdr(&s->frx, &hl);
	s->seg_ok = false;
	rc = swiw_ddp_rx_segment(&s->drx, h, ulen, &s->seg, &s->dst, &v);
	if (rc) {
		if (s->rqe.bad)
			v = SWIW_V_DDP_CATASTROPHIC;
		if (rc == -EPROTO && s->seg.opcode == RDMAP_TERMINATE)
			stream_fail(s, SWIW_V_NONE, NULL, 0, -1,
				    IBV_EVENT_QP_FATAL);
		else
			fail_violation(
				s, rc == -EPROTO ? v : SWIW_V_DDP_CATASTROPHIC,
				h, hl);
		return;
	}
	s->seg_ok = true;
	if (hl > s->seg.hdr_len)
		place(s, 0, h, hl);
}

static void complete_recv(struct swiw_stream *s, uint8_t op, uint32_t bytes,
			  uint8_t flags, uint32_t imm_or_inv)
{
	struct swiw_cqe e = { .id = s->rqe.id,
			      .opcode = op,
			      .flags = flags,
			      .status = IBV_WC_SUCCESS,
			      .bytes = bytes,
			      .imm_or_inv = imm_or_inv,
			      .qp_num = qpn(s),
			      .src_qp = s->qp->dest_qpn };

	s->rqe.valid = false;
	push_cqe(s, s->qp->rcq, &e);
}

/* A Send with Invalidate arrived whole: its STag goes first. */
static bool remote_inv(struct swiw_stream *s, uint32_t stag)
{
	int err = swiw_mem_invalidate(stag, s->qp->vqp.qp.pd);

	if (!err)
		return true;
	fail_violation(s,
		       err == SWIW_MEM_NOT_ASSOC ? SWIW_V_RDMAP_STAG_NOT_ASSOC :
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
		fail_violation(s, SWIW_V_RDMAP_ATOMIC_ALIGN, NULL, 0);
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

static enum swiw_mpa_rtr rtr_kind(const struct swiw_ddp_seg *g)
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
	uint8_t fl;

	if (!s->seg_ok)
		return;
	s->seg_ok = false;
	if (swiw_mpa_state(&s->mpa) == SWIW_MPA_S_AWAIT_RTR) {
		enum swiw_mpa_rtr k = rtr_kind(g);

		swiw_mpa_rtr_received(&s->mpa, k);
		mpa_events(s);
		if (s->failed || k == SWIW_MPA_RTR_WRITE)
			return; /* the RTR is no Write of the ULP's */
	}
	if (g->tagged && g->opcode == RDMAP_WRITE)
		s->write_acc += g->payload_len;
	switch (d->action) {
	case SWIW_DDP_PLACE:
		if (!d->complete)
			break;
		if (g->tagged && g->opcode == RDMAP_READ_RESP) {
			if (s->rd_head != s->rd_tail) {
				struct rd_out *rd =
					&s->rd[s->rd_head++ % SWIW_MAX_ORD];

				if (rd->last) {
					s->infl[rd->slot & s->infl_mask].done =
						true;
					sq_drain(s);
				}
			}
		} else if (g->tagged) {
			s->after_write = true;
			s->last_write_len = s->write_acc;
			s->write_acc = 0;
		} else {
			fl = 0;
			if (g->op->flags & SWIW_OPF_SE)
				fl |= SWIW_CQE_SOLICITED;
			if (g->op->flags & SWIW_OPF_INVAL) {
				if (!remote_inv(s, g->rsvd_ulp))
					return;
				fl |= SWIW_CQE_INV;
			}
			complete_recv(s, SWIW_OP_RECV,
				      (uint32_t)(d->offset + d->len), fl,
				      g->rsvd_ulp);
			s->after_write = false;
		}
		break;
	case SWIW_DDP_IMMEDIATE: {
		uint32_t imm;

		memcpy(&imm, g->u.imm, sizeof(imm));
		fl = SWIW_CQE_IMM |
		     (g->op->flags & SWIW_OPF_SE ? SWIW_CQE_SOLICITED : 0);
		complete_recv(s,
			      s->after_write ? SWIW_OP_RECV_RDMA_IMM :
					       SWIW_OP_RECV,
			      s->after_write ? (uint32_t)s->last_write_len : 0,
			      fl, imm);
		s->after_write = false;
		break;
	}
	case SWIW_DDP_READ_REQ: {
		struct rresp *r = &s->rr[s->rr_tail++ % SWIW_MAX_IRD];

		r->atomic = false;
		r->src = d->handle ? s->tref.addr + d->offset : NULL;
		r->len = d->handle ? (uint32_t)d->len : 0;
		r->sink_stag = g->u.rreq.sink_stag;
		r->sink_to = g->u.rreq.sink_to;
		break;
	}
	case SWIW_DDP_TERMINATE:
		s->vendor_err = TERM_VENDOR_ERR(
			g->u.term.layer, g->u.term.etype, g->u.term.ecode);
		stream_fail(s, SWIW_V_NONE, NULL, 0,
			    (int)swiw_term_peer_status(g->u.term.layer,
						       g->u.term.etype,
						       g->u.term.ecode),
			    IBV_EVENT_QP_FATAL);
		break;
	case SWIW_DDP_ATOMIC_REQ:
		atomic_exec(s);
		break;
	case SWIW_DDP_ATOMIC_RESP: {
		struct rd_out *rd = &s->rd[s->rd_head++ % SWIW_MAX_ORD];
		uint64_t orig = g->u.aresp.orig;

		memcpy(rd->result, &orig, sizeof(orig));
		s->infl[rd->slot & s->infl_mask].done = true;
		sq_drain(s);
		break;
	}
	default:
		fail_violation(s, SWIW_V_RDMAP_OPCODE, NULL, 0);
		break;
	}
}

/* Feeds @n octets at @p (already where the step wants them). */
static bool rx_feed(struct swiw_stream *s, const uint8_t *p, uint32_t n)
{
	unsigned int ev = 0;

	if (swiw_fpdu_rx_advance(&s->frx, p, n, &ev)) {
		enum swiw_violation v = swiw_fpdu_rx_violation(&s->frx);

		fail_violation(s, v ? v : SWIW_V_DDP_CATASTROPHIC, NULL, 0);
		return false;
	}
	if (ev & SWIW_FPDU_EV_HDR)
		on_hdr(s);
	if (!s->failed && (ev & SWIW_FPDU_EV_END))
		on_end(s);
	return !s->failed;
}

/*
 * The initiator's attempt failed in a way another attempt may fix: the
 * stream goes and the QP dials again. False if it may not.
 */
static bool bk_redial(struct swiw_stream *s, int err)
{
	struct swiw_qp *qp = s->qp;

	if (!s->bk_on || s->mpa.role != SWIW_MPA_INITIATOR ||
	    !swiw_conn_redial(qp, err))
		return false;
	swiw_dbg("QP %u: connection attempt failed (%s), trying again", qpn(s),
		 strerror(err));
	swiw_stream_detach(qp);
	s->failed = true;
	return true;
}

static void peer_closed(struct swiw_stream *s)
{
	if (s->mpa_phase && swiw_mpa_state(&s->mpa) == SWIW_MPA_S_AWAIT_REPLY &&
	    bk_redial(s, ECONNRESET))
		return;
	stream_fail(s, SWIW_V_LLP_LOST, NULL, 0, -1, IBV_EVENT_QP_FATAL);
}

/*
 * The peer closed its side once FPDUs flowed, typically because its QP
 * was destroyed after its last Send completed. What arrived before is
 * already completed; the QP fails (and its receives flush) after a short
 * grace, so that the application sees those completions alone first, as
 * it would over InfiniBand, where a destroyed peer goes unnoticed.
 */
#define EOF_GRACE_NS (100 * 1000000ull)

static void peer_eof(struct swiw_stream *s)
{
	struct timespec ts;

	if (s->eof_due_ns)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	s->eof_due_ns = (uint64_t)ts.tv_sec * 1000000000u +
			(uint64_t)ts.tv_nsec + EOF_GRACE_NS;
	/* Out of the epoll set: a hung-up socket would report for ever. */
	swiw_eng_epoll_ctl(EPOLL_CTL_DEL, s->fd, 0, NULL);
}

/* Streams whose grace ran out fail; returns ms until the next, or -1. */
int swiw_streams_timers(void)
{
	struct swiw_stream *s;
	struct timespec ts;
	uint64_t now, best = UINT64_MAX;

	swiw_eng_assert_held();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	for (s = streams; s; s = s->next) {
		if (!s->eof_due_ns || s->failed || s->dead)
			continue;
		if (now >= s->eof_due_ns)
			peer_closed(s);
		else if (s->eof_due_ns < best)
			best = s->eof_due_ns;
	}
	if (best == UINT64_MAX)
		return -1;
	return (int)((best - now) / 1000000u) + 1;
}

static void rx_pump(struct swiw_stream *s)
{
	struct swiw_fpdu_rx_step st;
	ssize_t r;

	while (!s->failed && !s->mpa_phase) {
		if (s->st_head == s->st_tail) {
			uint64_t room = 0;
			uint8_t *d = NULL;

			if (swiw_fpdu_rx_next(&s->frx, &st))
				return;
			if (st.kind == SWIW_FPDU_RX_PAYLOAD &&
			    st.len >= DIRECT_MIN && st.off >= s->seg.hdr_len)
				d = dest_of(s, st.off - s->seg.hdr_len, &room);
			if (d && room >= DIRECT_MIN) {
				r = recv(s->fd, d,
					 room < st.len ? room : st.len,
					 MSG_DONTWAIT);
				if (r > 0) {
					rx_feed(s, d, (uint32_t)r);
					continue;
				}
			} else {
				r = recv(s->fd, s->stage, STAGE_SIZE,
					 MSG_DONTWAIT);
				if (r > 0) {
					s->st_head = 0;
					s->st_tail = (uint32_t)r;
					continue;
				}
			}
			if (r == 0 || (errno != EAGAIN &&
				       errno != EWOULDBLOCK && errno != EINTR))
				peer_eof(s);
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

/* MPA ------------------------------------------------------------------- */

static int fpdu_setup(struct swiw_stream *s)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&s->mpa);
	struct swiw_fpdu_rx_cfg rc = { 0 };
	int emss = 0;
	socklen_t sl = sizeof(emss);

	if (s->fpdu_setup)
		return 0;
	if (getsockopt(s->fd, IPPROTO_TCP, TCP_MAXSEG, &emss, &sl) || emss <= 0)
		emss = 1460;
	s->mulpdu = swiw_mpa_mulpdu((u32)emss, o->markers_tx);
	s->ftx.pos = 0;
	s->ftx.markers = o->markers_tx;
	s->ftx.crc = o->crc;
	rc.pos = 0;
	rc.markers = o->markers_rx;
	rc.crc = o->crc;
	rc.min_ulpdu = SWIW_FPDU_MIN_ULPDU;
	rc.peek = PEEK;
	s->ird = o->ird;
	s->ord = o->ord;
	if (!o->ird_ord_negotiated) {
		s->ird = ulp_ird(s);
		s->ord = ulp_ord(s);
	}
	if (s->ird > SWIW_MAX_IRD)
		s->ird = SWIW_MAX_IRD;
	if (s->ord > SWIW_MAX_ORD)
		s->ord = SWIW_MAX_ORD;
	if (swiw_fpdu_rx_init(&s->frx, &rc) ||
	    swiw_ddp_rx_init(&s->drx, &mem_ops, s,
			     SWIW_DDP_RX_ORDERED | SWIW_DDP_RX_RFC7306, s->ird))
		return -EINVAL;
	s->msn_send = s->msn_rreq = s->msn_aresp = 1;
	s->fpdu_setup = true;
	return 0;
}

static void mpa_fail(struct swiw_stream *s)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&s->mpa);

	stream_fail(s, o->send_term ? o->violation : SWIW_V_NONE, NULL, 0, -1,
		    IBV_EVENT_QP_FATAL);
}

/* Initiator: the Reply must carry the ACCEPT block for this Request. */
static bool bk_accept_ok(struct swiw_stream *s)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&s->mpa);
	struct swiw_broker_pd pd;

	if (swiw_broker_pd_decode(o->peer_pd, o->peer_pd_len, &pd) ||
	    pd.type != SWIW_BROKER_PD_ACCEPT || pd.src_qpn != s->bk.peer_qpn ||
	    pd.dst_qpn != qpn(s) || pd.nonce != s->bk.nonce) {
		swiw_err("QP %u: the peer's MPA Reply does not accept this "
			 "connection to QP %u",
			 qpn(s), s->bk.peer_qpn);
		return false;
	}
	return true;
}

/*
 * Initiator: the MPA exchange ended. A NOT_READY reject is tried again;
 * any other is logged with its reason. True if the stream was retried.
 */
static bool bk_rejected(struct swiw_stream *s)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&s->mpa);
	struct swiw_broker_pd pd;

	if (!s->bk_on || s->mpa.role != SWIW_MPA_INITIATOR ||
	    o->reject != SWIW_MPA_REJ_BY_PEER)
		return false;
	if (swiw_broker_pd_decode(o->peer_pd, o->peer_pd_len, &pd) ||
	    pd.type != SWIW_BROKER_PD_REJECT) {
		swiw_err("QP %u: QP %u's side rejected the connection", qpn(s),
			 s->bk.peer_qpn);
		return false;
	}
	if (swiw_broker_reason_retryable(pd.reason) && bk_redial(s, EAGAIN))
		return true;
	swiw_err("QP %u: QP %u's side rejected the connection: %s", qpn(s),
		 s->bk.peer_qpn, swiw_broker_reason_str(pd.reason));
	return false;
}

static void mpa_events(struct swiw_stream *s)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&s->mpa);
	u32 ev;

	while (!s->failed && (ev = swiw_mpa_events(&s->mpa))) {
		if ((ev & SWIW_MPA_EV_TX) &&
		    send(s->fd, s->mpa_tx, o->tx_len,
			 MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)o->tx_len) {
			stream_fail(s, SWIW_V_NONE, NULL, 0, -1,
				    IBV_EVENT_QP_FATAL);
			return;
		}
		if (ev & SWIW_MPA_EV_CLOSED) {
			if (!bk_rejected(s))
				mpa_fail(s);
			return;
		}
		if (s->bk_on && !s->bk_checked &&
		    s->mpa.role == SWIW_MPA_INITIATOR &&
		    (ev & (SWIW_MPA_EV_RX_FPDU | SWIW_MPA_EV_SEND_RTR |
			   SWIW_MPA_EV_TX_FPDU))) {
			s->bk_checked = true;
			if (!bk_accept_ok(s)) {
				stream_fail(s, SWIW_V_NONE, NULL, 0, -1,
					    IBV_EVENT_QP_FATAL);
				return;
			}
		}
		if (ev & SWIW_MPA_EV_REQUEST) {
			struct swiw_mpa_ulp u = { .ird = ulp_ird(s),
						  .ord = ulp_ord(s) };

			if (s->bk_on) {
				u.pd = s->bk.pd;
				u.pd_len = s->bk.pd_len;
			}

			if (swiw_mpa_accept(&s->mpa, &u))
				swiw_mpa_reject(&s->mpa, NULL, 0);
			continue;
		}
		if ((ev & (SWIW_MPA_EV_RX_FPDU | SWIW_MPA_EV_SEND_RTR |
			   SWIW_MPA_EV_TX_FPDU)) &&
		    fpdu_setup(s)) {
			stream_fail(s, SWIW_V_NONE, NULL, 0, -1,
				    IBV_EVENT_QP_FATAL);
			return;
		}
		if (ev & SWIW_MPA_EV_RX_FPDU)
			s->mpa_phase = false;
		if (ev & SWIW_MPA_EV_SEND_RTR) {
			struct swiw_rdmap_msg m = { 0 };

			m.stag = SWIW_MPA_RTR_STAG;
			if (o->rtr == SWIW_MPA_RTR_READ) {
				m.opcode = RDMAP_READ_REQ;
				m.msn = s->msn_rreq++;
				m.u.rreq.sink_stag = SWIW_MPA_RTR_STAG;
				m.u.rreq.src_stag = SWIW_MPA_RTR_STAG;
			} else if (o->rtr == SWIW_MPA_RTR_SEND) {
				m.opcode = RDMAP_SEND;
				m.msn = s->msn_send++;
			} else {
				m.opcode = RDMAP_WRITE;
			}
			s->nsrc = 0;
			if (msg_start(s, &m)) {
				stream_fail(s, SWIW_V_NONE, NULL, 0, -1,
					    IBV_EVENT_QP_FATAL);
				return;
			}
			s->kind = TX_RTR;
		}
		if (ev & SWIW_MPA_EV_TX_FPDU)
			s->tx_ready = true;
	}
}

static void mpa_rx(struct swiw_stream *s)
{
	uint8_t buf[SWIW_MPA_FRAME_MAX];
	size_t used = 0;
	ssize_t n;

	/* Peek, and take only what the machine took: the rest is FPDUs. */
	n = recv(s->fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		peer_closed(s);
		return;
	}
	if (n < 0)
		return;
	swiw_mpa_input(&s->mpa, buf, (size_t)n, &used);
	if (used && recv(s->fd, buf, used, MSG_DONTWAIT) != (ssize_t)used) {
		peer_closed(s);
		return;
	}
	mpa_events(s);
}

/* Engine entry points --------------------------------------------------- */

/*
 * A completion the application's CQ had no room for is lost: the CQ is in
 * error (swiw_engine_cq_push raised IBV_EVENT_CQ_ERR) and so is the QP.
 */
static void overflow_check(struct swiw_stream *s)
{
	if (s->cq_full && !s->failed)
		stream_fail(s, SWIW_V_NONE, NULL, 0, -1, IBV_EVENT_QP_FATAL);
}

bool swiw_stream_pump(struct swiw_stream *s)
{
	bool moved;

	if (s->failed || s->dead)
		return false;
	moved = tx_pump(s);
	overflow_check(s);
	return moved;
}

bool swiw_streams_pump_all(void)
{
	struct swiw_stream *s;
	bool moved = false;

	swiw_eng_assert_held();
	for (s = streams; s; s = s->next)
		if (swiw_stream_pump(s))
			moved = true;
	return moved;
}

void swiw_stream_event(struct swiw_stream *s, uint32_t events)
{
	swiw_eng_assert_held();
	if (s->dead || s->failed)
		return;
	if (events & EPOLLOUT)
		tx_pump(s);
	if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) &&
	    !s->eof_due_ns) {
		if (s->mpa_phase)
			mpa_rx(s);
		rx_pump(s);
	}
	if (!s->failed)
		tx_pump(s);
	overflow_check(s);
}

static void stream_free(struct swiw_stream *s)
{
	free(s->infl);
	free(s->stage);
	free(s);
}

void swiw_streams_reap(void)
{
	struct swiw_stream *s;

	swiw_eng_assert_held();
	while ((s = graveyard)) {
		graveyard = s->next_dead;
		close(s->fd);
		stream_free(s);
	}
}

/* The QP went to error from the application's side. */
void swiw_stream_qp_error(struct swiw_qp *qp)
{
	swiw_eng_assert_held();
	if (qp->stream)
		stream_fail(qp->stream, SWIW_V_NONE, NULL, 0, -1, 0);
}

/* RESET or destroy: the stream goes, without completions. */
void swiw_stream_detach(struct swiw_qp *qp)
{
	struct swiw_stream *s = qp->stream, **pp;

	swiw_eng_assert_held();
	if (!s)
		return;
	for (pp = &streams; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	if (!s->failed) {
		shutdown(s->fd, SHUT_RDWR);
		swiw_eng_epoll_ctl(EPOLL_CTL_DEL, s->fd, 0, NULL);
	}
	s->dead = true;
	s->next_dead = graveyard;
	graveyard = s;
	qp->stream = NULL;
	swiw_eng_doorbell();
}

static struct swiw_stream *stream_new(struct swiw_qp *qp, int fd, int role,
				      int *err)
{
	struct swiw_mpa_cfg c;
	struct swiw_stream *s;
	int one = 1, fl;

	*err = EINVAL;
	if (role != SWIW_MPA_INITIATOR && role != SWIW_MPA_RESPONDER)
		return NULL;
	swiw_mpa_cfg_init(&c);
	c.ird_max = SWIW_MAX_IRD;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one))) {
		*err = errno;
		return NULL;
	}
	*err = ENOMEM;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->stage = malloc(STAGE_SIZE);
	s->infl = calloc(qp->max_send_wr, sizeof(*s->infl));
	if (!s->stage || !s->infl)
		goto fail;
	s->infl_mask = qp->max_send_wr - 1;
	s->qp = qp;
	s->fd = fd;
	s->mpa_phase = true;
	if (swiw_mpa_init(&s->mpa, role, &c, s->mpa_tx, sizeof(s->mpa_tx),
			  s->mpa_pd, sizeof(s->mpa_pd))) {
		*err = EINVAL;
		goto fail;
	}
	*err = 0;
	return s;
fail:
	stream_free(s);
	return NULL;
}

/* Under the engine lock: @s starts MPA on its socket. */
static int stream_start(struct swiw_stream *s, const struct swiw_engine_bk *bk)
{
	struct swiw_qp *qp = s->qp;
	int err;

	swiw_eng_assert_held();
	if (qp->stream)
		return EBUSY;
	err = swiw_eng_start();
	if (err)
		return err;
	if (bk) {
		s->bk_on = true;
		s->bk = *bk;
		s->bk.req = NULL;
		s->bk.req_len = 0;
	}
	if (s->mpa.role == SWIW_MPA_INITIATOR) {
		struct swiw_mpa_ulp u = { .ird = ulp_ird(s),
					  .ord = ulp_ord(s) };

		if (bk) {
			u.pd = s->bk.pd;
			u.pd_len = s->bk.pd_len;
		}
		if (swiw_mpa_connect(&s->mpa, &u))
			return EINVAL;
	} else if (bk && bk->req_len) {
		size_t used = 0;

		/* The broker read the Request: feed it as if received. */
		swiw_mpa_input(&s->mpa, bk->req, bk->req_len, &used);
		if (used != bk->req_len)
			return EPROTO;
	}
	err = swiw_eng_epoll_ctl(EPOLL_CTL_ADD, s->fd, EPOLLIN | EPOLLRDHUP, s);
	if (err)
		return err;
	s->next = streams;
	streams = s;
	qp->stream = s;
	mpa_events(s);
	return 0;
}

int swiw_engine_attach_locked(struct swiw_qp *qp, int fd, int role,
			      const struct swiw_engine_bk *bk)
{
	struct swiw_stream *s;
	int err;

	swiw_eng_assert_held();
	s = stream_new(qp, fd, role, &err);
	if (!s)
		return err;
	err = stream_start(s, bk);
	if (err)
		stream_free(s);
	return err;
}
