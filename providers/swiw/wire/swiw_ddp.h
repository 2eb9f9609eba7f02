/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * DDP (RFC 5041) with RDMAP (RFC 5040, RFC 7306) semantics: cutting
 * messages into segments on transmit, and validating segments and
 * deciding where their payload goes on receive.
 *
 * Nothing here copies payload. Transmit hands back, per segment, the
 * header octets and the (offset, length) of the payload within the
 * message, so the engine gathers it from registered memory. Receive hands
 * back a destination (the engine's opaque handle for a region or receive
 * buffer, an offset into it and a length) or an enum swiw_violation,
 * which swiw_term_from_violation() turns into the TERMINATE to send.
 *
 * The engine supplies the memory: struct swiw_ddp_mem_ops resolves a
 * tagged STag to its region (bounds, access rights, association with this
 * stream) and an untagged (QN, MSN) to the receive buffer posted for it.
 * All state lives in caller-provided structs; nothing is global.
 */
#ifndef SWIW_DDP_H
#define SWIW_DDP_H

#include "swiw_port.h"
#include "iwarp.h"
#include "swiw_rdmap.h"
#include "swiw_term.h"
#include "swiw_violation.h"

/* The largest segment header: an Atomic Request, or a full TERMINATE. */
#define SWIW_DDP_HDR_MAX 70
_Static_assert(SWIW_DDP_HDR_MAX == sizeof(struct rdmap_atomic_req) &&
		       SWIW_DDP_HDR_MAX == SWIW_TERM_MAX_LEN,
	       "SWIW_DDP_HDR_MAX");

/* The body an RDMAP message carries beyond its DDP header, by opcode. */
union swiw_rdmap_body {
	struct swiw_rdmap_read_req rreq;
	struct swiw_rdmap_atomic_req areq;
	struct swiw_rdmap_atomic_resp aresp;
	u8 imm[RDMAP_IMM_DATA_SIZE];
	struct swiw_term term;
};

/* One RDMAP message to send, in host order. */
struct swiw_rdmap_msg {
	u8 opcode; /* enum rdmap_opcode / rdmap_opcode_ext */
	u32 len; /* payload octets; Write, Read Response, Send family only */
	u32 stag; /* tagged: Data Sink STag */
	u64 to; /* tagged: Data Sink TO of the first payload octet */
	u32 msn; /* untagged: this message's MSN on its queue */
	u32 inval_stag; /* Send with (SE and) Invalidate */
	union swiw_rdmap_body u;
};

/* Transmit cursor over one message. */
struct swiw_ddp_tx {
	struct swiw_rdmap_msg msg;
	const struct swiw_rdmap_op *op;
	u32 sent; /* payload octets already cut into segments */
	bool done; /* the segment with L has been produced */
};

/* One segment as swiw_ddp_tx_next() cut it. */
struct swiw_ddp_txseg {
	u32 hdr_len; /* header octets written to the caller's buffer */
	u32 payload_off; /* where this segment's payload starts, in the msg */
	u32 payload_len; /* ULPDU = hdr_len + payload_len <= MULPDU */
	bool last; /* L is set */
};

/*
 * Prepares @tx to cut @msg (copied). Returns 0; -EINVAL for an unknown
 * opcode, payload on a message that carries none, or a Terminate that
 * swiw_term_build() would refuse; -EOVERFLOW when a tagged message's TO
 * range would wrap past 2^64.
 */
int swiw_ddp_tx_init(struct swiw_ddp_tx *tx, const struct swiw_rdmap_msg *msg);

/*
 * Cuts the next segment of at most @mulpdu octets (header included):
 * writes its header to @hdr (@hdr_size >= the header; SWIW_DDP_HDR_MAX
 * always does) and describes it in @seg. Tagged segments advance the TO,
 * untagged ones the MO; every segment carries the message's STag or QN
 * and MSN, and only the last has L. A zero-length message is one segment
 * with L. Returns 1 when a segment was cut, 0 when the message is done,
 * -EMSGSIZE when @mulpdu cannot hold the header (and one payload octet,
 * if any remain), -ENOSPC when @hdr_size is too small.
 */
int swiw_ddp_tx_next(struct swiw_ddp_tx *tx, u32 mulpdu, void *hdr,
		     u32 hdr_size, struct swiw_ddp_txseg *seg);

/*
 * Completion tracking for one message whose segments may arrive in any
 * order: the engine keeps one with each receive (untagged) and each READ
 * (tagged, its Read Response), and returns it from its lookup. A message
 * is complete when the L segment has arrived and every octet before it.
 */
struct swiw_ddp_progress {
	u64 origin; /* tagged: the TO of message octet 0 (with _TOTAL) */
	u64 total; /* message length: preset, or learnt from L */
	u64 placed; /* payload octets accepted so far */
	u8 flags; /* SWIW_DDP_PROG_* */
};

#define SWIW_DDP_PROG_TOTAL 0x1 /* total and origin preset by the engine */
#define SWIW_DDP_PROG_LAST 0x2 /* the L segment has been accepted */

/* Starts tracking a message of unknown length (untagged). Cannot fail. */
void swiw_ddp_progress_init(struct swiw_ddp_progress *p);

/*
 * Starts tracking a tagged message of @total octets whose octet 0 is at
 * TO @origin (a READ's sink). Cannot fail.
 */
void swiw_ddp_progress_expect(struct swiw_ddp_progress *p, u64 origin,
			      u64 total);

/*
 * Accounts @len octets at message offset @off, @last if the segment had L.
 * Returns 1 when the message is now complete, 0 when more is due, -ERANGE
 * (and changes nothing) when the segment cannot belong to the message:
 * beyond its known end, a second L, an L short of octets already placed,
 * or more octets than the message holds (a duplicate).
 */
int swiw_ddp_progress_add(struct swiw_ddp_progress *p, u64 off, u32 len,
			  bool last);

/* Access rights of a tagged region (struct swiw_ddp_region.access). */
#define SWIW_ACC_LOCAL_WRITE 0x1
#define SWIW_ACC_REMOTE_WRITE 0x2
#define SWIW_ACC_REMOTE_READ 0x4
#define SWIW_ACC_REMOTE_ATOMIC 0x8

/* What the engine knows about a tagged STag. */
struct swiw_ddp_region {
	void *handle; /* opaque: the engine's MR or MW */
	u64 base; /* first valid TO */
	u64 len; /* octets from base */
	u32 access; /* SWIW_ACC_* */
	/* The STag belongs to this stream: an MR of the QP's PD, or a
	 * window bound to this QP. */
	bool associated;
	/* Optional: the local READ a Read Response completes. */
	struct swiw_ddp_progress *progress;
};

/* What the engine posted for one untagged message. */
struct swiw_ddp_rbuf {
	void *handle; /* opaque: the receive WR or result buffer */
	u64 len; /* octets it holds */
	/* Needed when segments can arrive out of order; may be NULL. */
	struct swiw_ddp_progress *progress;
};

struct swiw_ddp_mem_ops {
	/*
	 * Resolves @stag for a segment of @opcode: Write (needs REMOTE_WRITE),
	 * Read Response (the sink of a READ of ours: LOCAL_WRITE; siw puts
	 * the local STag in the Read Request), Read Request (the source:
	 * REMOTE_READ), Atomic Request (REMOTE_ATOMIC). Returns 0 with @r
	 * filled, or -ENOENT when the STag is unknown, invalidated or its key
	 * does not match.
	 */
	int (*tagged)(void *ctx, unsigned int opcode, u32 stag,
		      struct swiw_ddp_region *r);
	/*
	 * Finds the buffer posted for message @msn on queue @qn (0: receive
	 * queue, 3: Atomic Response results); every segment of the message
	 * asks again and must get the same buffer. Returns 0 with @b
	 * filled, or -ENOENT when none is posted for it.
	 */
	int (*untagged)(void *ctx, u32 qn, u32 msn, struct swiw_ddp_rbuf *b);
};

/*
 * Receive modes (struct swiw_ddp_rx.flags).
 *
 * SWIW_DDP_RX_ORDERED: segments arrive in the order they were sent, as
 * over MPA/TCP. Each untagged queue then has one message in progress: its
 * segments must carry the expected MSN and continue the MO without a gap
 * (SWIW_V_DDP_UT_MSN_RANGE, SWIW_V_DDP_UT_INVALID_MO), and a tagged
 * message must continue its STag and TO until its L segment. This is what
 * the engine should use: swiw runs over TCP, where anything else is a
 * broken peer, and the checks catch it at the first wrong segment.
 *
 * Without it, placement assumes nothing about order (RFC 5041's model):
 * destinations come from TO and MO alone, completion from the progress
 * structs, and a queue accepts MSNs up to SWIW_DDP_MSN_WINDOW messages
 * beyond the oldest incomplete one.
 *
 * SWIW_DDP_RX_RFC7306 accepts Immediate Data and atomics; without it
 * their opcodes are unexpected, like any unassigned one.
 *
 * SWIW_DDP_RX_STRICT rejects set reserved bits (SWIW_V_DDP_RESERVED).
 * The RFCs say they are not checked on receive; this is for testing peers.
 */
#define SWIW_DDP_RX_ORDERED 0x1
#define SWIW_DDP_RX_RFC7306 0x2
#define SWIW_DDP_RX_STRICT 0x4

#define SWIW_DDP_MSN_WINDOW 64

/* Receive state of one untagged queue. */
struct swiw_ddp_rxq {
	u32 msn; /* the oldest incomplete message; MSNs start at 1 */
	u32 mo; /* ordered: the next MO expected of message msn */
	u64 done; /* unordered: bit i set when message msn + i is complete */
};

/* Receive state of one stream. */
struct swiw_ddp_rx {
	const struct swiw_ddp_mem_ops *ops;
	void *ctx; /* passed to ops */
	u32 flags; /* SWIW_DDP_RX_* */
	u32 ird; /* Read and Atomic Requests we accept outstanding */
	u32 ird_used; /* accepted and not yet answered */
	struct swiw_ddp_rxq q[RDMAP_QN_COUNT];
	/* Ordered mode: the tagged message in progress, if open. */
	bool t_open;
	u8 t_opcode;
	u32 t_stag;
	u64 t_to; /* the TO its next segment must carry */
};

/*
 * Prepares @rx for a new stream: every queue expects MSN 1. Returns 0, or
 * -EINVAL when @ops lacks a callback or @flags has unknown bits.
 */
int swiw_ddp_rx_init(struct swiw_ddp_rx *rx, const struct swiw_ddp_mem_ops *ops,
		     void *ctx, u32 flags, u32 ird);

/* A received segment, decoded (host order). */
struct swiw_ddp_seg {
	const struct swiw_rdmap_op *op;
	u8 opcode;
	bool tagged;
	bool last;
	u32 len; /* the ULPDU */
	u32 hdr_len; /* payload starts here */
	u32 payload_len;
	u32 stag; /* tagged */
	u64 to;
	u32 rsvd_ulp; /* untagged: Invalidate STag of SEND_INV/SEND_SE_INV */
	u32 qn;
	u32 msn;
	u32 mo;
	union swiw_rdmap_body u;
	int term_rc; /* Terminate: swiw_term_parse_body()'s 0 or -EMSGSIZE */
};

/*
 * Decodes the ULPDU @ulpdu of @len octets without any stream state (reading
 * at most its first SWIW_DDP_HDR_MAX octets):
 * DV, RV, opcode (via the table), the buffer model the opcode needs, the
 * queue number, the length the opcode needs, L and MO 0 for single-
 * segment messages, the RDMAP body. @flags are SWIW_DDP_RX_RFC7306 and
 * SWIW_DDP_RX_STRICT. Returns 0 with @seg filled, -EPROTO with *@v set
 * to the violation, or -EINVAL for NULL arguments.
 */
int swiw_ddp_parse(const void *ulpdu, u32 len, u32 flags,
		   struct swiw_ddp_seg *seg, enum swiw_violation *v);

/* What the engine does with a valid segment (swiw_ddp_dest.action). */
enum swiw_ddp_action {
	/* Write, Read Response, Send family: copy len octets of payload
	 * (from ulpdu + seg->hdr_len) to (handle, offset); handle is NULL
	 * when there is nothing to place. */
	SWIW_DDP_PLACE,
	/* Read Request: answer with seg->u.rreq.size octets from (handle,
	 * offset) of the source region; handle NULL for a zero-length
	 * Read (an RTR). Then swiw_ddp_rx_ird_release(). */
	SWIW_DDP_READ_REQ,
	/* Atomic Request: execute seg->u.areq on the 8 octets at (handle,
	 * offset); answer, then swiw_ddp_rx_ird_release(). */
	SWIW_DDP_ATOMIC_REQ,
	/* Atomic Response: seg->u.aresp.orig goes to the result buffer
	 * handle (8 octets at offset 0); the atomic WR completes. */
	SWIW_DDP_ATOMIC_RESP,
	/* Immediate Data: seg->u.imm completes the receive handle (which
	 * it consumes, as any untagged message on QN 0). */
	SWIW_DDP_IMMEDIATE,
	/* Terminate: the peer ended the stream with seg->u.term. */
	SWIW_DDP_TERMINATE,
};

struct swiw_ddp_dest {
	enum swiw_ddp_action action;
	void *handle; /* region or receive buffer; NULL: none */
	u64 offset; /* into the region (TO - base) or buffer (MO) */
	u64 len; /* octets at (handle, offset) the action concerns */
	/* This segment completed its message: complete the receive, the
	 * READ, the atomic; for a Send with Invalidate, invalidate
	 * seg->rsvd_ulp now (a failure is SWIW_V_RDMAP_CANT_INVALIDATE or
	 * _CANT_INVALIDATE_OP). */
	bool complete;
};

/*
 * Validates the ULPDU @ulpdu of @len octets against the stream and the
 * engine's memory, and decides what to do with it:
 * - swiw_ddp_parse()'s checks;
 * - untagged: the MSN (RFC 5041: behind the oldest incomplete message or
 *   too far ahead is SWIW_V_DDP_UT_MSN_RANGE; ordered mode wants exactly
 *   the expected one and a continuous MO), a buffer posted for it
 *   (SWIW_V_DDP_UT_NO_BUFFER), MO + length within it (_TOO_LONG);
 * - tagged: the STag (invalid, not associated, access rights, TO wrap,
 *   base and bounds); a zero-length segment places nothing and is
 *   accepted whatever its STag (the RTR of RFC 6581 carries STag 1 in
 *   siw, anything elsewhere), the lookup only used to find a READ to
 *   complete;
 * - Read Request: IRD, the sink TO range, and unless zero length the
 *   source region (RDMAP protection codes); Atomic Request: IRD, the
 *   operation code, the target region, 8-octet alignment.
 * State (MSN, MO, TO continuity, IRD, progress) changes only when the
 * segment is valid. Only the first min(@len, SWIW_DDP_HDR_MAX) octets of
 * @ulpdu are read (@len, from ULPDU_LENGTH, sizes the payload): the engine
 * may pass the header alone and receive the payload straight into the
 * destination. Returns 0 with @seg and @dst filled; -EPROTO with *@v
 * set (send the TERMINATE for it, except when @seg->opcode is
 * RDMAP_TERMINATE: never answer one); -EINVAL for NULL arguments.
 */
int swiw_ddp_rx_segment(struct swiw_ddp_rx *rx, const void *ulpdu, u32 len,
			struct swiw_ddp_seg *seg, struct swiw_ddp_dest *dst,
			enum swiw_violation *v);

/*
 * A Read or Atomic Request has been answered (its last response segment
 * sent): one more may arrive. Returns 0, or -EINVAL if none is
 * outstanding.
 */
int swiw_ddp_rx_ird_release(struct swiw_ddp_rx *rx);

#endif /* SWIW_DDP_H */
