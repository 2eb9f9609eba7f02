// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The violation table and TERMINATE messages (RFC 5040 §4.8 and §7,
 * RFC 5041 §7, RFC 5044 and RFC 6581 for the LLP codes, RFC 7306).
 *
 * How the status columns are chosen, so that a row can be checked:
 * - peer_status is a function of the code alone (swiw_term_peer_status()):
 *   protection errors give REM_ACCESS_ERR, malformed or out-of-sequence
 *   requests REM_INV_REQ_ERR, failures inside the peer REM_OP_ERR, a
 *   stream the peer gave up on (LLP layer) REM_ABORT_ERR.
 * - local_status is for the local work request the offending message was
 *   consuming: the receive of a Send, the READ whose response it was.
 *   Where the message consumes none (Write, Read or Atomic Request at the
 *   responder) the row says WR_FLUSH_ERR: only flushing happens.
 * - async: access errors QP_ACCESS_ERR, invalid requests QP_REQ_ERR, the
 *   stream or the local side failing QP_FATAL.
 * - headers: DDP-layer errors carry M and D, RDMAP errors on a Read
 *   Request also R; errors where the header cannot be trusted (CRC,
 *   version) or where there is none carry nothing.
 */
#include "swiw_term.h"
#include "swiw_rdmap.h"

#define M SWIW_TERM_M
#define D SWIW_TERM_D
#define R SWIW_TERM_R
#define NO_TERM SWIW_VI_NO_TERM

#define ROW(v, ref_, l, e, c, h, f, loc, peer, ae) \
	[v] = { .name = #v,                        \
		.ref = ref_,                       \
		.layer = l,                        \
		.etype = e,                        \
		.ecode = c,                        \
		.hdrct = h,                        \
		.flags = f,                        \
		.local_status = SWIW_WC_##loc,     \
		.peer_status = SWIW_WC_##peer,     \
		.async = SWIW_AE_##ae }

#define LLP TERM_LAYER_LLP
#define DDP TERM_LAYER_DDP
#define RDMAP TERM_LAYER_RDMAP
#define RFC5040 "RFC 5040 §4.8, §7"
#define RFC5041 "RFC 5041 §7"
#define RFC5044 "RFC 5044 (LLP codes)"
#define RFC6581 "RFC 6581 (LLP codes)"
#define RFC7306 "RFC 7306 (codes of RFC 5040)"

static const struct swiw_violation_info swiw_violations[] = {
	ROW(SWIW_V_NONE, "-", 0, 0, 0, 0, NO_TERM, SUCCESS, SUCCESS, NONE),

	/* LLP (layer 2, EType 0). The header of a segment MPA rejects cannot
	 * be trusted, so none is carried. */
	ROW(SWIW_V_MPA_CRC, RFC5044, LLP, 0, LLP_ECODE_CRC, 0, 0, GENERAL_ERR,
	    REM_ABORT_ERR, QP_FATAL),
	ROW(SWIW_V_MPA_MARKER, RFC5044, LLP, 0, LLP_ECODE_MARKER, 0, 0,
	    GENERAL_ERR, REM_ABORT_ERR, QP_FATAL),
	/* No code of its own: a length that disagrees with the stream is
	 * what "Marker and ULPDU Length mismatch" names. */
	ROW(SWIW_V_MPA_ULPDU_LENGTH, RFC5044, LLP, 0, LLP_ECODE_MARKER, 0, 0,
	    GENERAL_ERR, REM_ABORT_ERR, QP_FATAL),
	/* Sendable only once FPDUs may flow (an Initiator after a bad
	 * Reply); a Responder that gets a bad Request just closes. */
	ROW(SWIW_V_MPA_BAD_RR, RFC5044, LLP, 0, LLP_ECODE_BAD_RR, 0, 0,
	    GENERAL_ERR, REM_ABORT_ERR, QP_FATAL),
	ROW(SWIW_V_MPA_PD_TOO_LONG, RFC5044, LLP, 0, LLP_ECODE_BAD_RR, 0, 0,
	    GENERAL_ERR, REM_ABORT_ERR, QP_FATAL),
	ROW(SWIW_V_MPA_EARLY_DATA, RFC5044, LLP, 0, LLP_ECODE_BAD_RR, 0, 0,
	    GENERAL_ERR, REM_ABORT_ERR, QP_FATAL),
	ROW(SWIW_V_MPA_INSUFFICIENT_IRD, RFC6581, LLP, 0,
	    LLP_ECODE_INSUFFICIENT_IRD, 0, 0, GENERAL_ERR, REM_ABORT_ERR,
	    QP_FATAL),
	ROW(SWIW_V_MPA_NO_MATCHING_RTR, RFC6581, LLP, 0,
	    LLP_ECODE_NO_MATCHING_RTR, 0, 0, GENERAL_ERR, REM_ABORT_ERR,
	    QP_FATAL),
	/* The stream is gone: nothing can carry a TERMINATE. */
	ROW(SWIW_V_LLP_LOST, RFC5044, LLP, 0, LLP_ECODE_TCP_LOST, 0, NO_TERM,
	    FATAL_ERR, REM_ABORT_ERR, QP_FATAL),

	/* DDP tagged buffers (layer 1, EType 1). local_status is for the
	 * READ whose Read Response hit a bad sink. */
	ROW(SWIW_V_DDP_T_INVALID_STAG, RFC5041, DDP, DDP_ETYPE_TAGGED_BUF,
	    DDP_ECODE_T_INVALID_STAG, M | D, 0, LOC_PROT_ERR, REM_ACCESS_ERR,
	    QP_ACCESS_ERR),
	ROW(SWIW_V_DDP_T_BASE_BOUNDS, RFC5041, DDP, DDP_ETYPE_TAGGED_BUF,
	    DDP_ECODE_T_BASE_BOUNDS, M | D, 0, LOC_PROT_ERR, REM_ACCESS_ERR,
	    QP_ACCESS_ERR),
	ROW(SWIW_V_DDP_T_STAG_NOT_ASSOC, RFC5041, DDP, DDP_ETYPE_TAGGED_BUF,
	    DDP_ECODE_T_STAG_NOT_ASSOC, M | D, 0, LOC_PROT_ERR, REM_ACCESS_ERR,
	    QP_ACCESS_ERR),
	ROW(SWIW_V_DDP_T_TO_WRAP, RFC5041, DDP, DDP_ETYPE_TAGGED_BUF,
	    DDP_ECODE_T_TO_WRAP, M | D, 0, LOC_PROT_ERR, REM_ACCESS_ERR,
	    QP_ACCESS_ERR),
	/* DDP has no access-rights code; RDMAP's Remote Protection Error
	 * has one. siw deviates: it sends DDP 1/0 (invalid STag). */
	ROW(SWIW_V_DDP_T_ACCESS, RFC5040, RDMAP, RDMAP_ETYPE_REMOTE_PROTECTION,
	    RDMAP_ECODE_ACCESS_RIGHTS, M | D, 0, LOC_PROT_ERR, REM_ACCESS_ERR,
	    QP_ACCESS_ERR),

	/* DDP untagged buffers (layer 1, EType 2). */
	ROW(SWIW_V_DDP_UT_INVALID_QN, RFC5041, DDP, DDP_ETYPE_UNTAGGED_BUF,
	    DDP_ECODE_UT_INVALID_QN, M | D, 0, LOC_QP_OP_ERR, REM_INV_REQ_ERR,
	    QP_REQ_ERR),
	/* No receive posted: no local work request is consumed. */
	ROW(SWIW_V_DDP_UT_NO_BUFFER, RFC5041, DDP, DDP_ETYPE_UNTAGGED_BUF,
	    DDP_ECODE_UT_INVALID_MSN_NOBUF, M | D, 0, LOC_QP_OP_ERR, REM_OP_ERR,
	    QP_REQ_ERR),
	ROW(SWIW_V_DDP_UT_MSN_RANGE, RFC5041, DDP, DDP_ETYPE_UNTAGGED_BUF,
	    DDP_ECODE_UT_INVALID_MSN_RANGE, M | D, 0, LOC_QP_OP_ERR,
	    REM_INV_REQ_ERR, QP_REQ_ERR),
	ROW(SWIW_V_DDP_UT_INVALID_MO, RFC5041, DDP, DDP_ETYPE_UNTAGGED_BUF,
	    DDP_ECODE_UT_INVALID_MO, M | D, 0, LOC_QP_OP_ERR, REM_INV_REQ_ERR,
	    QP_REQ_ERR),
	/* siw deviates: it sends DDP 2/2 (no buffer) for a Send larger than
	 * the receive; RFC 5041 has code 5 for exactly that. */
	ROW(SWIW_V_DDP_UT_TOO_LONG, RFC5041, DDP, DDP_ETYPE_UNTAGGED_BUF,
	    DDP_ECODE_UT_MSG_TOOLONG, M | D, 0, LOC_LEN_ERR, REM_INV_REQ_ERR,
	    QP_REQ_ERR),

	/* DDP, either model. With DV wrong the layout is unknown, so no
	 * header goes back. This row is the tagged one (1/4). */
	ROW(SWIW_V_DDP_VERSION, RFC5041, DDP, DDP_ETYPE_TAGGED_BUF,
	    DDP_ECODE_T_VERSION, 0, 0, LOC_QP_OP_ERR, REM_INV_REQ_ERR,
	    QP_REQ_ERR),
	/* Neither RFC has a code for a short segment or set reserved bits
	 * (which only strict mode checks): Remote Operation Error,
	 * Unspecified. */
	ROW(SWIW_V_DDP_RESERVED, RFC5040, RDMAP, RDMAP_ETYPE_REMOTE_OPERATION,
	    RDMAP_ECODE_UNSPECIFIED, M | D, 0, LOC_QP_OP_ERR, REM_OP_ERR,
	    QP_REQ_ERR),

	/* RDMAP (layer 0). siw sends version and opcode errors without
	 * headers; the DDP header is sound in both cases, so it goes back. */
	ROW(SWIW_V_RDMAP_VERSION, RFC5040, RDMAP, RDMAP_ETYPE_REMOTE_OPERATION,
	    RDMAP_ECODE_VERSION, M | D, 0, LOC_QP_OP_ERR, REM_INV_REQ_ERR,
	    QP_REQ_ERR),
	ROW(SWIW_V_RDMAP_OPCODE, RFC5040, RDMAP, RDMAP_ETYPE_REMOTE_OPERATION,
	    RDMAP_ECODE_OPCODE, M | D, 0, LOC_QP_OP_ERR, REM_INV_REQ_ERR,
	    QP_REQ_ERR),
	/* Read source or Atomic target at the responder: no local WR. */
	ROW(SWIW_V_RDMAP_INVALID_STAG, RFC5040, RDMAP,
	    RDMAP_ETYPE_REMOTE_PROTECTION, RDMAP_ECODE_INVALID_STAG, M | D | R,
	    0, WR_FLUSH_ERR, REM_ACCESS_ERR, QP_ACCESS_ERR),
	ROW(SWIW_V_RDMAP_BASE_BOUNDS, RFC5040, RDMAP,
	    RDMAP_ETYPE_REMOTE_PROTECTION, RDMAP_ECODE_BASE_BOUNDS, M | D | R,
	    0, WR_FLUSH_ERR, REM_ACCESS_ERR, QP_ACCESS_ERR),
	ROW(SWIW_V_RDMAP_ACCESS_RIGHTS, RFC5040, RDMAP,
	    RDMAP_ETYPE_REMOTE_PROTECTION, RDMAP_ECODE_ACCESS_RIGHTS, M | D | R,
	    0, WR_FLUSH_ERR, REM_ACCESS_ERR, QP_ACCESS_ERR),
	ROW(SWIW_V_RDMAP_STAG_NOT_ASSOC, RFC5040, RDMAP,
	    RDMAP_ETYPE_REMOTE_PROTECTION, RDMAP_ECODE_STAG_NOT_ASSOC,
	    M | D | R, 0, WR_FLUSH_ERR, REM_ACCESS_ERR, QP_ACCESS_ERR),
	ROW(SWIW_V_RDMAP_TO_WRAP, RFC5040, RDMAP, RDMAP_ETYPE_REMOTE_PROTECTION,
	    RDMAP_ECODE_TO_WRAP, M | D | R, 0, WR_FLUSH_ERR, REM_ACCESS_ERR,
	    QP_ACCESS_ERR),
	/* The code siw uses too; RFC 5040 has nothing closer. */
	ROW(SWIW_V_RDMAP_IRD_EXCEEDED, RFC5040, RDMAP,
	    RDMAP_ETYPE_REMOTE_OPERATION, RDMAP_ECODE_CATASTROPHIC_STREAM,
	    M | D | R, 0, WR_FLUSH_ERR, REM_OP_ERR, QP_REQ_ERR),
	/* Send with Invalidate: the STag is in the DDP header, so D is all
	 * it takes. The local status is siw's for the receive. */
	ROW(SWIW_V_RDMAP_CANT_INVALIDATE, RFC5040, RDMAP,
	    RDMAP_ETYPE_REMOTE_PROTECTION, RDMAP_ECODE_CANT_INVALIDATE, M | D,
	    0, REM_INV_REQ_ERR, REM_ACCESS_ERR, QP_ACCESS_ERR),
	ROW(SWIW_V_RDMAP_CATASTROPHIC, RFC5040, RDMAP, RDMAP_ETYPE_CATASTROPHIC,
	    0, 0, 0, FATAL_ERR, REM_OP_ERR, QP_FATAL),

	/* Appended rows. */
	ROW(SWIW_V_DDP_UT_VERSION, RFC5041, DDP, DDP_ETYPE_UNTAGGED_BUF,
	    DDP_ECODE_UT_VERSION, 0, 0, LOC_QP_OP_ERR, REM_INV_REQ_ERR,
	    QP_REQ_ERR),
	ROW(SWIW_V_RDMAP_CANT_INVALIDATE_OP, RFC5040, RDMAP,
	    RDMAP_ETYPE_REMOTE_OPERATION, RDMAP_ECODE_CANT_INVALIDATE, M | D, 0,
	    REM_INV_REQ_ERR, REM_INV_REQ_ERR, QP_REQ_ERR),
	ROW(SWIW_V_RDMAP_MALFORMED, RFC5040, RDMAP,
	    RDMAP_ETYPE_REMOTE_OPERATION, RDMAP_ECODE_UNSPECIFIED, M | D, 0,
	    LOC_QP_OP_ERR, REM_OP_ERR, QP_REQ_ERR),
	/* RFC 7306 errors, with RFC 5040 codes (whether RFC 7306 added codes
	 * of its own is unverified here). It returns the DDP header of a
	 * failed Atomic Request but not its RDMAP header, so no R. */
	ROW(SWIW_V_RDMAP_ATOMIC_OPCODE, RFC7306, RDMAP,
	    RDMAP_ETYPE_REMOTE_OPERATION, RDMAP_ECODE_OPCODE, M | D, 0,
	    WR_FLUSH_ERR, REM_INV_REQ_ERR, QP_REQ_ERR),
	ROW(SWIW_V_RDMAP_ATOMIC_ALIGN, RFC7306, RDMAP,
	    RDMAP_ETYPE_REMOTE_PROTECTION, RDMAP_ECODE_BASE_BOUNDS, M | D, 0,
	    WR_FLUSH_ERR, REM_ACCESS_ERR, QP_ACCESS_ERR),
	ROW(SWIW_V_DDP_CATASTROPHIC, RFC5041, DDP, DDP_ETYPE_CATASTROPHIC, 0, 0,
	    0, GENERAL_ERR, REM_OP_ERR, QP_FATAL),
};

#undef M
#undef D
#undef R
#undef NO_TERM
#undef LLP
#undef DDP
#undef RDMAP

_Static_assert(SWIW_ARRAY_SIZE(swiw_violations) == SWIW_V_COUNT,
	       "one violation table row per enum swiw_violation value");

/* Returns the row of @v, or NULL when @v is out of range. */
const struct swiw_violation_info *swiw_violation_info(enum swiw_violation v)
{
	if ((unsigned int)v >= SWIW_ARRAY_SIZE(swiw_violations))
		return NULL;
	return &swiw_violations[v];
}

/* Returns the peer-visible status of a code; GENERAL_ERR if unknown. */
enum swiw_wc_status swiw_term_peer_status(unsigned int layer,
					  unsigned int etype,
					  unsigned int ecode)
{
	switch (layer) {
	case TERM_LAYER_RDMAP:
		if (etype == RDMAP_ETYPE_CATASTROPHIC)
			return SWIW_WC_REM_OP_ERR;
		if (etype == RDMAP_ETYPE_REMOTE_PROTECTION)
			return SWIW_WC_REM_ACCESS_ERR;
		if (etype != RDMAP_ETYPE_REMOTE_OPERATION)
			return SWIW_WC_GENERAL_ERR;
		switch (ecode) {
		case RDMAP_ECODE_VERSION:
		case RDMAP_ECODE_OPCODE:
		case RDMAP_ECODE_CANT_INVALIDATE:
			return SWIW_WC_REM_INV_REQ_ERR;
		default:
			return SWIW_WC_REM_OP_ERR;
		}
	case TERM_LAYER_DDP:
		switch (etype) {
		case DDP_ETYPE_CATASTROPHIC:
			return SWIW_WC_REM_OP_ERR;
		case DDP_ETYPE_TAGGED_BUF:
			if (ecode <= DDP_ECODE_T_TO_WRAP)
				return SWIW_WC_REM_ACCESS_ERR;
			if (ecode == DDP_ECODE_T_VERSION)
				return SWIW_WC_REM_INV_REQ_ERR;
			return SWIW_WC_GENERAL_ERR;
		case DDP_ETYPE_UNTAGGED_BUF:
			if (ecode == DDP_ECODE_UT_INVALID_MSN_NOBUF)
				return SWIW_WC_REM_OP_ERR;
			if (ecode >= DDP_ECODE_UT_INVALID_QN &&
			    ecode <= DDP_ECODE_UT_VERSION)
				return SWIW_WC_REM_INV_REQ_ERR;
			return SWIW_WC_GENERAL_ERR;
		case DDP_ETYPE_RSVD:
			return SWIW_WC_REM_ABORT_ERR; /* the LLP's */
		default:
			return SWIW_WC_GENERAL_ERR;
		}
	case TERM_LAYER_LLP:
		return SWIW_WC_REM_ABORT_ERR;
	default:
		return SWIW_WC_GENERAL_ERR;
	}
}

/* The length of a DDP header by its first octet's T bit. */
static u8 term_ddp_len(u8 first)
{
	return first & 0x80 ? (u8)sizeof(struct ddp_tagged_hdr) :
			      (u8)sizeof(struct ddp_untagged_hdr);
}

/* The RDMAP opcode of an untagged segment @s of @len octets; -1 for a
 * tagged one or one too short for its control word. */
static int untagged_opcode(const u8 *s, u32 len)
{
	struct iwarp_ctrl c;

	if (!s || len < sizeof(c))
		return -1;
	memcpy(&c, s, sizeof(c));
	return iwarp_tagged(&c) ? -1 : (int)iwarp_opcode(&c);
}

/* Returns 0 with @t filled, or -EINVAL for no row or a no-TERMINATE row. */
int swiw_term_from_violation(enum swiw_violation v, const void *seg,
			     u32 seg_len, struct swiw_term *t)
{
	const struct swiw_violation_info *vi = swiw_violation_info(v);
	const u8 *s = seg;
	u8 dlen;

	if (!vi || (vi->flags & SWIW_VI_NO_TERM) || !t)
		return -EINVAL;
	/* RFC 5040 ends the stream at a TERMINATE: one that breaks a DDP
	 * or RDMAP rule is not answered. An MPA fault (CRC, marker,
	 * length) is, whatever the header says: its bytes are not to be
	 * trusted. */
	if (vi->layer != TERM_LAYER_LLP &&
	    untagged_opcode(s, seg_len) == RDMAP_TERMINATE)
		return -EPERM;
	memset(t, 0, sizeof(*t));
	t->layer = vi->layer;
	t->etype = vi->etype;
	t->ecode = vi->ecode;
	if (!(vi->hdrct & SWIW_TERM_D) || !s || !seg_len)
		return 0;
	dlen = term_ddp_len(s[0]);
	if (seg_len < dlen)
		return 0; /* too short to carry its own header back */
	t->hdrct |= SWIW_TERM_D;
	t->ddp_len = dlen;
	memcpy(t->ddp_hdr, s, dlen);
	if (vi->hdrct & SWIW_TERM_M) {
		t->hdrct |= SWIW_TERM_M;
		/* RFC 5041: the whole segment, header included. siw sends
		 * the payload length instead. */
		t->seg_len = (u16)SWIW_MIN(seg_len, (u32)MPA_MAX_ULPDU_LEN);
	}
	/* Only a Read Request has an RDMAP header beyond DDP's. */
	if ((vi->hdrct & SWIW_TERM_R) &&
	    untagged_opcode(s, seg_len) == RDMAP_READ_REQ &&
	    seg_len >= sizeof(struct rdmap_read_req)) {
		t->hdrct |= SWIW_TERM_R;
		memcpy(t->rdmap_hdr, s + sizeof(struct ddp_untagged_hdr),
		       SWIW_TERM_RDMAP_HDR_SIZE);
	}
	return 0;
}

/* Returns the ULPDU length written, -EINVAL or -ENOSPC. */
int swiw_term_build(const struct swiw_term *t, void *buf, u32 size)
{
	struct rdmap_terminate h;
	u32 len = SWIW_TERM_MIN_LEN;
	u8 *p = buf;

	if (!t || !buf || t->layer > 0xf || t->etype > 0xf ||
	    (t->hdrct & ~(SWIW_TERM_M | SWIW_TERM_D | SWIW_TERM_R)))
		return -EINVAL;
	if ((t->hdrct & SWIW_TERM_R) && !(t->hdrct & SWIW_TERM_D))
		return -EINVAL;
	if (t->hdrct & SWIW_TERM_D) {
		if (t->ddp_len != term_ddp_len(t->ddp_hdr[0]))
			return -EINVAL;
		len += SWIW_TERM_SEG_LEN_SIZE + t->ddp_len;
	}
	if (t->hdrct & SWIW_TERM_R)
		len += SWIW_TERM_RDMAP_HDR_SIZE;
	if (size < len)
		return -ENOSPC;

	memset(&h, 0, sizeof(h));
	h.ddp.ctrl.ddp_rdmap_ctrl = swiw_rdmap_ctrl(RDMAP_TERMINATE, true);
	h.ddp.qn = swiw_cpu_to_be32(RDMAP_QN_TERMINATE);
	h.ddp.msn = swiw_cpu_to_be32(1);
	h.ddp.mo = 0;
	h.term_ctrl =
		swiw_cpu_to_be32((u32)t->layer << 28 | (u32)t->etype << 24 |
				 (u32)t->ecode << 16 | (u32)t->hdrct << 13);
	memcpy(p, &h, sizeof(h));
	p += sizeof(h);
	if (t->hdrct & SWIW_TERM_D) {
		swiw_put_be16(p, t->seg_len);
		p += SWIW_TERM_SEG_LEN_SIZE;
		memcpy(p, t->ddp_hdr, t->ddp_len);
		p += t->ddp_len;
	}
	if (t->hdrct & SWIW_TERM_R)
		memcpy(p, t->rdmap_hdr, SWIW_TERM_RDMAP_HDR_SIZE);
	return (int)len;
}

/* Returns 0, -EMSGSIZE (parts missing or extra, @t partial) or -EBADMSG. */
int swiw_term_parse_body(const void *body, u32 len, struct swiw_term *t)
{
	const u8 *p = body;
	u32 off = sizeof(__be32);
	__be32 w;
	u32 c;

	if (!body || !t || len < sizeof(w))
		return -EBADMSG;
	memcpy(&w, p, sizeof(w));
	c = swiw_be32_to_cpu(w);
	memset(t, 0, sizeof(*t));
	t->layer = (u8)(c >> 28);
	t->etype = (u8)(c >> 24 & 0xf);
	t->ecode = (u8)(c >> 16);
	t->hdrct = (u8)(c >> 13 & 0x7);
	/* Where an RDMAP header without a DDP header would start is not
	 * defined; Wireshark would read it at a different place. */
	if ((t->hdrct & SWIW_TERM_R) && !(t->hdrct & SWIW_TERM_D))
		return -EBADMSG;
	if (t->hdrct & SWIW_TERM_D) {
		if (len < off + SWIW_TERM_SEG_LEN_SIZE + 1 ||
		    len < off + SWIW_TERM_SEG_LEN_SIZE +
				    term_ddp_len(p[off + 2])) {
			t->hdrct = 0;
			return -EMSGSIZE;
		}
		t->seg_len = swiw_get_be16(p + off);
		off += SWIW_TERM_SEG_LEN_SIZE;
		t->ddp_len = term_ddp_len(p[off]);
		memcpy(t->ddp_hdr, p + off, t->ddp_len);
		off += t->ddp_len;
	}
	if (t->hdrct & SWIW_TERM_R) {
		if (len < off + SWIW_TERM_RDMAP_HDR_SIZE) {
			t->hdrct &= (u8)~SWIW_TERM_R;
			return -EMSGSIZE;
		}
		memcpy(t->rdmap_hdr, p + off, SWIW_TERM_RDMAP_HDR_SIZE);
		off += SWIW_TERM_RDMAP_HDR_SIZE;
	}
	return off == len ? 0 : -EMSGSIZE;
}

/* Returns as swiw_term_parse_body(), -EBADMSG for a bad DDP header. */
int swiw_term_parse(const void *ulpdu, u32 len, struct swiw_term *t)
{
	const __be16 checked = DDP_FLAG_TAGGED | DDP_FLAG_LAST |
			       DDP_MASK_VERSION | RDMAP_MASK_VERSION |
			       RDMAP_MASK_OPCODE;
	struct ddp_untagged_hdr h;

	if (!ulpdu || !t || len < SWIW_TERM_MIN_LEN)
		return -EBADMSG;
	memcpy(&h, ulpdu, sizeof(h));
	if ((h.ctrl.ddp_rdmap_ctrl & checked) !=
		    swiw_rdmap_ctrl(RDMAP_TERMINATE, true) ||
	    swiw_be32_to_cpu(h.qn) != RDMAP_QN_TERMINATE ||
	    swiw_be32_to_cpu(h.msn) != 1 || h.mo)
		return -EBADMSG;
	return swiw_term_parse_body((const u8 *)ulpdu + sizeof(h),
				    len - (u32)sizeof(h), t);
}
