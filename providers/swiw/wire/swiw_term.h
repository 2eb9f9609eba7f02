/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * TERMINATE (RFC 5040 §4.8) and the one violation table.
 *
 * Every enum swiw_violation has one row (swiw_violation_info()): the
 * TERMINATE layer/type/code the RFCs give it, the headers it carries back,
 * the completion status of the local work request the offending message
 * was consuming, the status the peer's application sees when the
 * TERMINATE reaches it, and the async event the local side raises. The
 * engine sends the TERMINATE (best effort, at most one per stream, never
 * in answer to a TERMINATE), closes TCP, moves the QP to error and
 * flushes every other work request with SWIW_WC_WR_FLUSH_ERR.
 *
 * Wire layout, all after the 18-octet untagged DDP header (QN 2, MSN 1,
 * MO 0, L set, opcode 7):
 *
 *   Layer(4) EType(4) ErrCode(8) M D R Rsvd(13)	always, 4 octets
 *   DDP Segment Length(16)			present iff D
 *   Terminated DDP Header (14 tagged, 18 untagged)	present iff D
 *   Terminated RDMAP Header (28, a Read Request's)	present iff R
 *
 * M says the DDP Segment Length is valid. Nothing pads the parts; the
 * ULPDU is 22, 38, 42 or 70 octets and MPA pads the FPDU. The field
 * positions follow Wireshark's dissector, which reads the length and the
 * DDP header only when D is set and 28 octets when R is.
 */
#ifndef SWIW_TERM_H
#define SWIW_TERM_H

#include "swiw_port.h"
#include "iwarp.h"
#include "swiw_violation.h"

/*
 * Completion statuses, named and numbered as libibverbs' enum
 * ibv_wc_status (which the wire core cannot include): the engine maps
 * them one to one, and should _Static_assert the numbers where it can.
 */
enum swiw_wc_status {
	SWIW_WC_SUCCESS = 0,
	SWIW_WC_LOC_LEN_ERR = 1,
	SWIW_WC_LOC_QP_OP_ERR = 2,
	SWIW_WC_LOC_PROT_ERR = 4,
	SWIW_WC_WR_FLUSH_ERR = 5,
	SWIW_WC_BAD_RESP_ERR = 7,
	SWIW_WC_LOC_ACCESS_ERR = 8,
	SWIW_WC_REM_INV_REQ_ERR = 9,
	SWIW_WC_REM_ACCESS_ERR = 10,
	SWIW_WC_REM_OP_ERR = 11,
	SWIW_WC_REM_ABORT_ERR = 16,
	SWIW_WC_FATAL_ERR = 19,
	SWIW_WC_GENERAL_ERR = 21,
};

/* Affiliated async events: IBV_EVENT_QP_FATAL, _QP_REQ_ERR, _ACCESS_ERR. */
enum swiw_async_event {
	SWIW_AE_NONE = 0,
	SWIW_AE_QP_FATAL, /* the stream or the local side failed */
	SWIW_AE_QP_REQ_ERR, /* the peer sent an invalid request */
	SWIW_AE_QP_ACCESS_ERR, /* the peer violated memory protection */
};

/* HdrCt, the three header-control bits (M, D, R), in host order. */
#define SWIW_TERM_M 0x4 /* DDP Segment Length valid */
#define SWIW_TERM_D 0x2 /* terminated DDP header included */
#define SWIW_TERM_R 0x1 /* terminated RDMAP header included */

/* Sizes of the TERMINATE ULPDU. */
#define SWIW_TERM_SEG_LEN_SIZE 2
#define SWIW_TERM_RDMAP_HDR_SIZE RDMAP_READ_REQ_BODY_SIZE
#define SWIW_TERM_MIN_LEN ((u32)sizeof(struct rdmap_terminate))
#define SWIW_TERM_MAX_LEN                             \
	(SWIW_TERM_MIN_LEN + SWIW_TERM_SEG_LEN_SIZE + \
	 (u32)sizeof(struct ddp_untagged_hdr) + SWIW_TERM_RDMAP_HDR_SIZE)

/* Row flags (struct swiw_violation_info.flags). */
#define SWIW_VI_NO_TERM 0x1 /* no TERMINATE is sent (none, or no stream) */

struct swiw_violation_info {
	const char *name; /* "SWIW_V_..." */
	const char *ref; /* where the RFCs give the code */
	u8 layer; /* enum term_layer */
	u8 etype;
	u8 ecode;
	u8 hdrct; /* SWIW_TERM_*: what to carry back, when available */
	u8 flags; /* SWIW_VI_* */
	enum swiw_wc_status local_status;
	enum swiw_wc_status peer_status;
	enum swiw_async_event async;
};

/*
 * The row of @v, or NULL when @v is not an enum swiw_violation value
 * (negative or >= SWIW_V_COUNT). SWIW_V_NONE has a row (all success).
 */
const struct swiw_violation_info *swiw_violation_info(enum swiw_violation v);

/*
 * The status the local application gives the work request whose message
 * the peer terminated with (@layer, @etype, @ecode), as the table's
 * peer_status column; SWIW_WC_GENERAL_ERR for codes no RFC defines.
 */
enum swiw_wc_status swiw_term_peer_status(unsigned int layer,
					  unsigned int etype,
					  unsigned int ecode);

/* A TERMINATE in host order. */
struct swiw_term {
	u8 layer;
	u8 etype;
	u8 ecode;
	u8 hdrct; /* SWIW_TERM_M | _D | _R */
	u16 seg_len; /* DDP Segment Length; meaningful with M */
	u8 ddp_len; /* 14 or 18, by the T bit of ddp_hdr[0]; with D */
	u8 ddp_hdr[sizeof(struct ddp_untagged_hdr)];
	u8 rdmap_hdr[SWIW_TERM_RDMAP_HDR_SIZE]; /* with R */
};

/* The most of a segment swiw_term_from_violation() reads: a Read Request. */
#define SWIW_TERM_SEG_HEAD ((u32)sizeof(struct rdmap_read_req))

/*
 * Fills @t with the TERMINATE for violation @v detected on a DDP segment
 * of @seg_len octets (its whole ULPDU, header and payload; 0 when there
 * is none) whose first octets are at @seg: at least min(@seg_len,
 * SWIW_TERM_SEG_HEAD) of them, so the head a deframer kept will do, as
 * for swiw_ddp_rx_segment(). The row's code, and the DDP Segment Length
 * (@seg_len), DDP header and Read Request header as far as the row asks
 * for them and the segment has them (R only when it is a Read Request).
 * Returns 0, -EINVAL when @v is out of range or its row sends no
 * TERMINATE, or -EPERM when the segment is itself a TERMINATE and @v a
 * DDP or RDMAP fault: a TERMINATE is never answered with one.
 */
int swiw_term_from_violation(enum swiw_violation v, const void *seg,
			     u32 seg_len, struct swiw_term *t);

/*
 * Writes the TERMINATE ULPDU for @t (DDP header included) into @buf of
 * @size octets. Returns its length (SWIW_TERM_MIN_LEN..SWIW_TERM_MAX_LEN),
 * -EINVAL when @t is inconsistent (a field too wide, R without D, a
 * ddp_len that disagrees with the header's T bit), or -ENOSPC.
 */
int swiw_term_build(const struct swiw_term *t, void *buf, u32 size);

/*
 * Reads the TERMINATE body @body of @len octets (what follows the DDP
 * header) into @t. Returns 0 when the parts the header-control bits
 * declare are present and nothing else is; -EMSGSIZE when they are not
 * (siw sets R without the RDMAP header): @t then holds the code and the
 * parts that are complete, hdrct reduced to them; -EBADMSG when @len
 * cannot hold the 4-octet control word or R comes without D.
 */
int swiw_term_parse_body(const void *body, u32 len, struct swiw_term *t);

/*
 * Reads a whole TERMINATE ULPDU: the DDP header must be untagged, L set,
 * DV = RV = 1, opcode 7, QN 2, MSN 1, MO 0 (reserved bits are not
 * checked, RFC 5040/5041). Returns as swiw_term_parse_body(), with
 * -EBADMSG also for a bad DDP header.
 */
int swiw_term_parse(const void *ulpdu, u32 len, struct swiw_term *t);

#endif /* SWIW_TERM_H */
