/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Every iWARP wire header: MPA (RFC 5044) and its enhanced connection setup
 * (RFC 6581), DDP (RFC 5041), RDMAP (RFC 5040) and its extensions
 * (RFC 7306). Fields are big-endian (__be*, bitwise under sparse) except
 * the MPA CRC, which travels least significant byte first; masks are
 * constants in wire order; there are no bitfields. Each struct's size is
 * pinned by a _Static_assert.
 */
#ifndef SWIW_IWARP_H
#define SWIW_IWARP_H

#include "swiw_port.h"

#define SWIW_WIRE_SIZE(type, n) \
	_Static_assert(sizeof(type) == (n), "wire layout: sizeof " #type)

/*
 * MPA Request and Reply frames (RFC 5044 §7.1.1, RFC 6581 §4): a key, one
 * flags octet, the revision, and the length of the private data that
 * follows. They are sent once each, before any FPDU, without CRC.
 */
#define MPA_KEY_LEN 16
#define MPA_KEY_REQ "MPA ID Req Frame"
#define MPA_KEY_REP "MPA ID Rep Frame"

struct mpa_rr {
	u8 key[MPA_KEY_LEN];
	u8 flags;
	u8 rev;
	__be16 pd_len;
};
SWIW_WIRE_SIZE(struct mpa_rr, 20);

#define MPA_RR_FLAG_MARKERS 0x80 /* M: "send me markers" */
#define MPA_RR_FLAG_CRC 0x40 /* C: CRC in both directions */
#define MPA_RR_FLAG_REJECT 0x20 /* R: responder rejects */
#define MPA_RR_FLAG_ENHANCED 0x10 /* RFC 6581 connection setup */
#define MPA_RR_FLAG_RESERVED 0x0f

#define MPA_REV_RDMAC 0 /* pre-RFC RDMA Consortium framing */
#define MPA_REV_1 1 /* RFC 5044 */
#define MPA_REV_2 2 /* RFC 6581 */

/* RFC 5044 allows 512 octets of private data; Linux (siw, cxgb4) accepts
 * 256, so swiw never sends more than that, RFC 6581 word included. */
#define MPA_MAX_PD_RFC 512
#define MPA_MAX_PD_WIRE 256

/*
 * RFC 6581 §5: with rev 2 and the enhanced flag, private data starts with
 * two words: the sender's IRD and ORD (14 bits each), the peer-to-peer
 * flag A, and the RTR message types it offers (initiator) or chose
 * (responder): B zero-length SEND, C zero-length WRITE, D zero-length READ.
 */
struct mpa_v2_conn {
	__be16 ird; /* A | B | IRD */
	__be16 ord; /* C | D | ORD */
};
SWIW_WIRE_SIZE(struct mpa_v2_conn, 4);

#define MPA_V2_PEER_TO_PEER SWIW_BE16(0x8000) /* in ird */
#define MPA_V2_RDMA_SEND_RTR SWIW_BE16(0x4000) /* in ird */
#define MPA_V2_RDMA_WRITE_RTR SWIW_BE16(0x8000) /* in ord */
#define MPA_V2_RDMA_READ_RTR SWIW_BE16(0x4000) /* in ord */
#define MPA_V2_MASK_IRD_ORD SWIW_BE16(0x3fff)
#define MPA_V2_IRD_ORD_MAX 0x3fff

/*
 * FPDU (RFC 5044 §4.1): ULPDU_LENGTH, the ULPDU (one DDP segment), 0-3
 * octets of zero pad to a 4-octet boundary, and the CRC32c of all of it,
 * markers included. With markers, one marker stands every 512 octets of
 * the stream counted from the first octet of the first FPDU (§4.3).
 */
struct mpa_fpdu_hdr {
	__be16 ulpdu_len; /* ULPDU only: not itself, pad, CRC or markers */
};
SWIW_WIRE_SIZE(struct mpa_fpdu_hdr, 2);

struct mpa_trailer {
	__le32 crc; /* least significant byte first */
};
SWIW_WIRE_SIZE(struct mpa_trailer, 4);

struct mpa_marker {
	__be16 rsvd; /* zero */
	__be16 fpdu_ptr; /* octets back to the start of this FPDU */
};
SWIW_WIRE_SIZE(struct mpa_marker, 4);

#define MPA_HDR_SIZE 2
#define MPA_CRC_SIZE 4
#define MPA_MARKER_SIZE 4
#define MPA_MARKER_SPACING 512
#define MPA_MAX_ULPDU_LEN 0xffff

/*
 * DDP and RDMAP control (RFC 5041 §4.1, RFC 5040 §4.2): one 16-bit word,
 * DDP's octet (T, L, reserved, DV) then RDMAP's (RV, reserved, opcode).
 */
struct iwarp_ctrl {
	__be16 ddp_rdmap_ctrl;
};
SWIW_WIRE_SIZE(struct iwarp_ctrl, 2);

#define DDP_FLAG_TAGGED SWIW_BE16(0x8000)
#define DDP_FLAG_LAST SWIW_BE16(0x4000)
#define DDP_MASK_RESERVED SWIW_BE16(0x3c00)
#define DDP_MASK_VERSION SWIW_BE16(0x0300)
#define RDMAP_MASK_VERSION SWIW_BE16(0x00c0)
#define RDMAP_MASK_RESERVED SWIW_BE16(0x0030)
#define RDMAP_MASK_OPCODE SWIW_BE16(0x000f)

#define DDP_VERSION 1
#define RDMAP_VERSION 1
/* DV = 01 and RV = 01, in place. */
#define DDP_CTRL_DV1 SWIW_BE16(0x0100)
#define RDMAP_CTRL_RV1 SWIW_BE16(0x0040)

static inline unsigned int iwarp_opcode(const struct iwarp_ctrl *c)
{
	return swiw_be16_to_cpu(c->ddp_rdmap_ctrl & RDMAP_MASK_OPCODE);
}

static inline unsigned int iwarp_ddp_version(const struct iwarp_ctrl *c)
{
	return swiw_be16_to_cpu(c->ddp_rdmap_ctrl & DDP_MASK_VERSION) >> 8;
}

static inline unsigned int iwarp_rdmap_version(const struct iwarp_ctrl *c)
{
	return swiw_be16_to_cpu(c->ddp_rdmap_ctrl & RDMAP_MASK_VERSION) >> 6;
}

static inline bool iwarp_tagged(const struct iwarp_ctrl *c)
{
	return (c->ddp_rdmap_ctrl & DDP_FLAG_TAGGED) != 0;
}

static inline bool iwarp_last(const struct iwarp_ctrl *c)
{
	return (c->ddp_rdmap_ctrl & DDP_FLAG_LAST) != 0;
}

/* DDP tagged buffer header (RFC 5041 §4.2): placement by STag and TO. */
struct ddp_tagged_hdr {
	struct iwarp_ctrl ctrl;
	__be32 stag;
	__be64 to;
} __packed;
SWIW_WIRE_SIZE(struct ddp_tagged_hdr, 14);

/* DDP untagged buffer header (RFC 5041 §4.3): queue, message, offset. */
struct ddp_untagged_hdr {
	struct iwarp_ctrl ctrl;
	__be32 rsvd_ulp; /* RDMAP: Invalidate STag for Send with Invalidate */
	__be32 qn;
	__be32 msn;
	__be32 mo;
} __packed;
SWIW_WIRE_SIZE(struct ddp_untagged_hdr, 18);

/* Untagged queues of RDMAP (RFC 5040 §5.1). */
#define RDMAP_QN_SEND 0
#define RDMAP_QN_READ_REQ 1
#define RDMAP_QN_TERMINATE 2

/* RDMAP message opcodes (RFC 5040 §4.2). */
enum rdmap_opcode {
	RDMAP_WRITE = 0,
	RDMAP_READ_REQ = 1,
	RDMAP_READ_RESP = 2,
	RDMAP_SEND = 3,
	RDMAP_SEND_INVAL = 4,
	RDMAP_SEND_SE = 5,
	RDMAP_SEND_SE_INVAL = 6,
	RDMAP_TERMINATE = 7,
};

/* RDMA Read Request (RFC 5040 §4.4): untagged on QN 1, no payload. */
struct rdmap_read_req {
	struct ddp_untagged_hdr ddp;
	__be32 sink_stag;
	__be64 sink_to;
	__be32 read_size;
	__be32 src_stag;
	__be64 src_to;
} __packed;
SWIW_WIRE_SIZE(struct rdmap_read_req, 46);

#define RDMAP_READ_REQ_BODY_SIZE 28 /* what a TERMINATE copies back */

/*
 * Terminate (RFC 5040 §4.8): untagged on QN 2, MSN 1, MO 0, L set. The
 * control word names the layer, error type and code; M says the DDP
 * Segment Length that follows is valid, D that the terminated DDP header
 * is appended, R that the terminated RDMAP header is.
 */
struct rdmap_terminate {
	struct ddp_untagged_hdr ddp;
	__be32 term_ctrl;
} __packed;
SWIW_WIRE_SIZE(struct rdmap_terminate, 22);

#define TERM_MASK_LAYER SWIW_BE32(0xf0000000)
#define TERM_MASK_ETYPE SWIW_BE32(0x0f000000)
#define TERM_MASK_ECODE SWIW_BE32(0x00ff0000)
#define TERM_FLAG_M SWIW_BE32(0x00008000)
#define TERM_FLAG_D SWIW_BE32(0x00004000)
#define TERM_FLAG_R SWIW_BE32(0x00002000)
#define TERM_MASK_RESERVED SWIW_BE32(0x00001fff)

enum term_layer {
	TERM_LAYER_RDMAP = 0,
	TERM_LAYER_DDP = 1,
	TERM_LAYER_LLP = 2,
};

enum term_rdmap_etype {
	RDMAP_ETYPE_CATASTROPHIC = 0,
	RDMAP_ETYPE_REMOTE_PROTECTION = 1,
	RDMAP_ETYPE_REMOTE_OPERATION = 2,
};

enum term_rdmap_ecode {
	RDMAP_ECODE_INVALID_STAG = 0x00,
	RDMAP_ECODE_BASE_BOUNDS = 0x01,
	RDMAP_ECODE_ACCESS_RIGHTS = 0x02,
	RDMAP_ECODE_STAG_NOT_ASSOC = 0x03,
	RDMAP_ECODE_TO_WRAP = 0x04,
	RDMAP_ECODE_VERSION = 0x05,
	RDMAP_ECODE_OPCODE = 0x06,
	RDMAP_ECODE_CATASTROPHIC_STREAM = 0x07,
	RDMAP_ECODE_CATASTROPHIC_GLOBAL = 0x08,
	RDMAP_ECODE_CANT_INVALIDATE = 0x09,
	RDMAP_ECODE_UNSPECIFIED = 0xff,
};

enum term_ddp_etype {
	DDP_ETYPE_CATASTROPHIC = 0,
	DDP_ETYPE_TAGGED_BUF = 1,
	DDP_ETYPE_UNTAGGED_BUF = 2,
	DDP_ETYPE_RSVD = 3, /* for the LLP */
};

enum term_ddp_tagged_ecode {
	DDP_ECODE_T_INVALID_STAG = 0x00,
	DDP_ECODE_T_BASE_BOUNDS = 0x01,
	DDP_ECODE_T_STAG_NOT_ASSOC = 0x02,
	DDP_ECODE_T_TO_WRAP = 0x03,
	DDP_ECODE_T_VERSION = 0x04,
};

enum term_ddp_untagged_ecode {
	DDP_ECODE_UT_INVALID_QN = 0x01,
	DDP_ECODE_UT_INVALID_MSN_NOBUF = 0x02,
	DDP_ECODE_UT_INVALID_MSN_RANGE = 0x03,
	DDP_ECODE_UT_INVALID_MO = 0x04,
	DDP_ECODE_UT_MSG_TOOLONG = 0x05,
	DDP_ECODE_UT_VERSION = 0x06,
};

/* LLP (MPA) errors, EType 0; RFC 6581 adds 5 to 7. */
enum term_llp_ecode {
	LLP_ECODE_TCP_LOST = 0x01,
	LLP_ECODE_CRC = 0x02,
	LLP_ECODE_MARKER = 0x03, /* marker and ULPDU_LENGTH disagree */
	LLP_ECODE_BAD_RR = 0x04, /* invalid Request or Reply frame */
	LLP_ECODE_LOCAL_CATASTROPHIC = 0x05,
	LLP_ECODE_INSUFFICIENT_IRD = 0x06,
	LLP_ECODE_NO_MATCHING_RTR = 0x07,
};

/*
 * RDMAP extensions (RFC 7306): Immediate Data and Atomic Operations.
 *
 * Source: the RFC 7306 text itself was not reachable from here. The
 * values and layouts below come from Wireshark's current dissector
 * (epan/dissectors/packet-iwarp-ddp-rdmap.c: opcodes 0xA/0xB, the Atomic
 * Request and Response bodies, atomic codes 0 FetchAdd and 2 CmpSwap),
 * zrlio/urdma's proto.h (Immediate Data 0x8/0x9, Atomic Request on QN 1,
 * Atomic Response on QN 3) and Chelsio's T4 firmware interface (its
 * disabled wire opcodes: Send Immediate 0x8 and 0x9 with SE, Atomic
 * Request 0xA, Response 0xB). They agree with RFC 7306's IANA tables as
 * recalled (Swap = 1). Opcodes 0xC-0xF stay unassigned.
 */
enum rdmap_opcode_ext {
	RDMAP_IMM_DATA = 8, /* 8 octets of ULP data, untagged on QN 0 */
	RDMAP_IMM_DATA_SE = 9, /* the same, with Solicited Event */
	RDMAP_ATOMIC_REQ = 10, /* untagged on QN 1, counts against IRD */
	RDMAP_ATOMIC_RESP = 11, /* untagged on QN 3 */
};

/* RFC 7306 queues: Atomic Requests share QN 1 (and its MSN) with RDMA
 * Read Requests; Atomic Responses have a queue of their own. */
#define RDMAP_QN_ATOMIC_REQ RDMAP_QN_READ_REQ
#define RDMAP_QN_ATOMIC_RESP 3
#define RDMAP_QN_COUNT 4

/* Immediate Data (and with SE): one segment, L set, 8 octets of data. */
#define RDMAP_IMM_DATA_SIZE 8

struct rdmap_imm_data {
	struct ddp_untagged_hdr ddp;
	u8 data[RDMAP_IMM_DATA_SIZE]; /* opaque to RDMAP, no byte order */
} __packed;
SWIW_WIRE_SIZE(struct rdmap_imm_data, 26);

/* Atomic operation codes, the low 4 bits of the first body word. */
enum rdmap_atomic_op {
	RDMAP_ATOMIC_FETCH_ADD = 0,
	RDMAP_ATOMIC_SWAP = 1,
	RDMAP_ATOMIC_CMP_SWAP = 2,
};

#define RDMAP_ATOMIC_MASK_RESERVED SWIW_BE32(0xfffffff0)
#define RDMAP_ATOMIC_MASK_OPCODE SWIW_BE32(0x0000000f)
#define RDMAP_ATOMIC_DATA_SIZE 8 /* every operand and result is 64 bits */

/*
 * Atomic Request: untagged on QN 1, one segment with L set, no payload.
 * FetchAdd uses the add data and mask; Swap the swap data and mask;
 * CompareSwap all four fields. Unused fields are sent as zero.
 */
struct rdmap_atomic_req {
	struct ddp_untagged_hdr ddp;
	__be32 atomic_op; /* reserved(28) | op(4) */
	__be32 req_id;
	__be32 remote_stag;
	__be64 remote_to; /* 8-octet aligned */
	__be64 add_swap_data;
	__be64 add_swap_mask;
	__be64 compare_data;
	__be64 compare_mask;
} __packed;
SWIW_WIRE_SIZE(struct rdmap_atomic_req, 70);

#define RDMAP_ATOMIC_REQ_BODY_SIZE 52

/* Atomic Response: untagged on QN 3, one segment with L set. */
struct rdmap_atomic_resp {
	struct ddp_untagged_hdr ddp;
	__be32 orig_req_id;
	__be64 orig_value; /* the target's value before the operation */
} __packed;
SWIW_WIRE_SIZE(struct rdmap_atomic_resp, 30);

#define RDMAP_ATOMIC_RESP_BODY_SIZE 12

#endif /* SWIW_IWARP_H */
