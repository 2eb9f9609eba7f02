// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The violation table, one test per row: the row against an expectation
 * written here from RFC 5040 §4.8/§7, RFC 5041 §7, RFC 5044/6581 and the
 * status rules of swiw_term.c; the violation provoked through the DDP
 * receive path wherever the wire core detects it; the TERMINATE built
 * for it compared octet by octet with one assembled here, parsed back,
 * and received by a fresh stream. Then TERMINATE edge cases.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ddp_fake.h"
#include "wire_test.h"

/* Every enum swiw_violation value, in order. */
#define ROWS(X)                            \
	X(SWIW_V_NONE)                     \
	X(SWIW_V_MPA_CRC)                  \
	X(SWIW_V_MPA_MARKER)               \
	X(SWIW_V_MPA_ULPDU_LENGTH)         \
	X(SWIW_V_MPA_BAD_RR)               \
	X(SWIW_V_MPA_PD_TOO_LONG)          \
	X(SWIW_V_MPA_EARLY_DATA)           \
	X(SWIW_V_MPA_INSUFFICIENT_IRD)     \
	X(SWIW_V_MPA_NO_MATCHING_RTR)      \
	X(SWIW_V_LLP_LOST)                 \
	X(SWIW_V_DDP_T_INVALID_STAG)       \
	X(SWIW_V_DDP_T_BASE_BOUNDS)        \
	X(SWIW_V_DDP_T_STAG_NOT_ASSOC)     \
	X(SWIW_V_DDP_T_TO_WRAP)            \
	X(SWIW_V_DDP_T_ACCESS)             \
	X(SWIW_V_DDP_UT_INVALID_QN)        \
	X(SWIW_V_DDP_UT_NO_BUFFER)         \
	X(SWIW_V_DDP_UT_MSN_RANGE)         \
	X(SWIW_V_DDP_UT_INVALID_MO)        \
	X(SWIW_V_DDP_UT_TOO_LONG)          \
	X(SWIW_V_DDP_VERSION)              \
	X(SWIW_V_DDP_RESERVED)             \
	X(SWIW_V_RDMAP_VERSION)            \
	X(SWIW_V_RDMAP_OPCODE)             \
	X(SWIW_V_RDMAP_INVALID_STAG)       \
	X(SWIW_V_RDMAP_BASE_BOUNDS)        \
	X(SWIW_V_RDMAP_ACCESS_RIGHTS)      \
	X(SWIW_V_RDMAP_STAG_NOT_ASSOC)     \
	X(SWIW_V_RDMAP_TO_WRAP)            \
	X(SWIW_V_RDMAP_IRD_EXCEEDED)       \
	X(SWIW_V_RDMAP_CANT_INVALIDATE)    \
	X(SWIW_V_RDMAP_CATASTROPHIC)       \
	X(SWIW_V_DDP_UT_VERSION)           \
	X(SWIW_V_RDMAP_CANT_INVALIDATE_OP) \
	X(SWIW_V_RDMAP_MALFORMED)          \
	X(SWIW_V_RDMAP_ATOMIC_OPCODE)      \
	X(SWIW_V_RDMAP_ATOMIC_ALIGN)       \
	X(SWIW_V_DDP_CATASTROPHIC)

#define COUNT_ROW(v) +1
_Static_assert(0 ROWS(COUNT_ROW) == SWIW_V_COUNT,
	       "the test lists every violation");

/* M D R as the 3-bit HdrCt value. */
#define M 4
#define D 2
#define R 1

struct expect {
	const char *name;
	u8 layer, etype, ecode, hdrct;
	bool sent;
	enum swiw_wc_status local, peer;
	enum swiw_async_event async;
};

#define E(v, l, e, c, h, s, loc, peer, ae) \
	[v] = { #v, l, e, c, h, s, SWIW_WC_##loc, SWIW_WC_##peer, SWIW_AE_##ae }

/* Layer 0 RDMAP, 1 DDP, 2 LLP; codes as numbered in the RFCs. */
static const struct expect expect[SWIW_V_COUNT] = {
	E(SWIW_V_NONE, 0, 0, 0, 0, false, SUCCESS, SUCCESS, NONE),
	E(SWIW_V_MPA_CRC, 2, 0, 2, 0, true, GENERAL_ERR, REM_ABORT_ERR,
	  QP_FATAL),
	E(SWIW_V_MPA_MARKER, 2, 0, 3, 0, true, GENERAL_ERR, REM_ABORT_ERR,
	  QP_FATAL),
	E(SWIW_V_MPA_ULPDU_LENGTH, 2, 0, 3, 0, true, GENERAL_ERR, REM_ABORT_ERR,
	  QP_FATAL),
	E(SWIW_V_MPA_BAD_RR, 2, 0, 4, 0, true, GENERAL_ERR, REM_ABORT_ERR,
	  QP_FATAL),
	E(SWIW_V_MPA_PD_TOO_LONG, 2, 0, 4, 0, true, GENERAL_ERR, REM_ABORT_ERR,
	  QP_FATAL),
	E(SWIW_V_MPA_EARLY_DATA, 2, 0, 4, 0, true, GENERAL_ERR, REM_ABORT_ERR,
	  QP_FATAL),
	E(SWIW_V_MPA_INSUFFICIENT_IRD, 2, 0, 6, 0, true, GENERAL_ERR,
	  REM_ABORT_ERR, QP_FATAL),
	E(SWIW_V_MPA_NO_MATCHING_RTR, 2, 0, 7, 0, true, GENERAL_ERR,
	  REM_ABORT_ERR, QP_FATAL),
	E(SWIW_V_LLP_LOST, 2, 0, 1, 0, false, FATAL_ERR, REM_ABORT_ERR,
	  QP_FATAL),
	E(SWIW_V_DDP_T_INVALID_STAG, 1, 1, 0, M | D, true, LOC_PROT_ERR,
	  REM_ACCESS_ERR, QP_ACCESS_ERR),
	E(SWIW_V_DDP_T_BASE_BOUNDS, 1, 1, 1, M | D, true, LOC_PROT_ERR,
	  REM_ACCESS_ERR, QP_ACCESS_ERR),
	E(SWIW_V_DDP_T_STAG_NOT_ASSOC, 1, 1, 2, M | D, true, LOC_PROT_ERR,
	  REM_ACCESS_ERR, QP_ACCESS_ERR),
	E(SWIW_V_DDP_T_TO_WRAP, 1, 1, 3, M | D, true, LOC_PROT_ERR,
	  REM_ACCESS_ERR, QP_ACCESS_ERR),
	E(SWIW_V_DDP_T_ACCESS, 0, 1, 2, M | D, true, LOC_PROT_ERR,
	  REM_ACCESS_ERR, QP_ACCESS_ERR),
	E(SWIW_V_DDP_UT_INVALID_QN, 1, 2, 1, M | D, true, LOC_QP_OP_ERR,
	  REM_INV_REQ_ERR, QP_REQ_ERR),
	E(SWIW_V_DDP_UT_NO_BUFFER, 1, 2, 2, M | D, true, LOC_QP_OP_ERR,
	  REM_OP_ERR, QP_REQ_ERR),
	E(SWIW_V_DDP_UT_MSN_RANGE, 1, 2, 3, M | D, true, LOC_QP_OP_ERR,
	  REM_INV_REQ_ERR, QP_REQ_ERR),
	E(SWIW_V_DDP_UT_INVALID_MO, 1, 2, 4, M | D, true, LOC_QP_OP_ERR,
	  REM_INV_REQ_ERR, QP_REQ_ERR),
	E(SWIW_V_DDP_UT_TOO_LONG, 1, 2, 5, M | D, true, LOC_LEN_ERR,
	  REM_INV_REQ_ERR, QP_REQ_ERR),
	E(SWIW_V_DDP_VERSION, 1, 1, 4, 0, true, LOC_QP_OP_ERR, REM_INV_REQ_ERR,
	  QP_REQ_ERR),
	E(SWIW_V_DDP_RESERVED, 0, 2, 0xff, M | D, true, LOC_QP_OP_ERR,
	  REM_OP_ERR, QP_REQ_ERR),
	E(SWIW_V_RDMAP_VERSION, 0, 2, 5, M | D, true, LOC_QP_OP_ERR,
	  REM_INV_REQ_ERR, QP_REQ_ERR),
	E(SWIW_V_RDMAP_OPCODE, 0, 2, 6, M | D, true, LOC_QP_OP_ERR,
	  REM_INV_REQ_ERR, QP_REQ_ERR),
	E(SWIW_V_RDMAP_INVALID_STAG, 0, 1, 0, M | D | R, true, WR_FLUSH_ERR,
	  REM_ACCESS_ERR, QP_ACCESS_ERR),
	E(SWIW_V_RDMAP_BASE_BOUNDS, 0, 1, 1, M | D | R, true, WR_FLUSH_ERR,
	  REM_ACCESS_ERR, QP_ACCESS_ERR),
	E(SWIW_V_RDMAP_ACCESS_RIGHTS, 0, 1, 2, M | D | R, true, WR_FLUSH_ERR,
	  REM_ACCESS_ERR, QP_ACCESS_ERR),
	E(SWIW_V_RDMAP_STAG_NOT_ASSOC, 0, 1, 3, M | D | R, true, WR_FLUSH_ERR,
	  REM_ACCESS_ERR, QP_ACCESS_ERR),
	E(SWIW_V_RDMAP_TO_WRAP, 0, 1, 4, M | D | R, true, WR_FLUSH_ERR,
	  REM_ACCESS_ERR, QP_ACCESS_ERR),
	E(SWIW_V_RDMAP_IRD_EXCEEDED, 0, 2, 7, M | D | R, true, WR_FLUSH_ERR,
	  REM_OP_ERR, QP_REQ_ERR),
	E(SWIW_V_RDMAP_CANT_INVALIDATE, 0, 1, 9, M | D, true, REM_INV_REQ_ERR,
	  REM_ACCESS_ERR, QP_ACCESS_ERR),
	E(SWIW_V_RDMAP_CATASTROPHIC, 0, 0, 0, 0, true, FATAL_ERR, REM_OP_ERR,
	  QP_FATAL),
	E(SWIW_V_DDP_UT_VERSION, 1, 2, 6, 0, true, LOC_QP_OP_ERR,
	  REM_INV_REQ_ERR, QP_REQ_ERR),
	E(SWIW_V_RDMAP_CANT_INVALIDATE_OP, 0, 2, 9, M | D, true,
	  REM_INV_REQ_ERR, REM_INV_REQ_ERR, QP_REQ_ERR),
	E(SWIW_V_RDMAP_MALFORMED, 0, 2, 0xff, M | D, true, LOC_QP_OP_ERR,
	  REM_OP_ERR, QP_REQ_ERR),
	E(SWIW_V_RDMAP_ATOMIC_OPCODE, 0, 2, 6, M | D, true, WR_FLUSH_ERR,
	  REM_INV_REQ_ERR, QP_REQ_ERR),
	E(SWIW_V_RDMAP_ATOMIC_ALIGN, 0, 1, 1, M | D, true, WR_FLUSH_ERR,
	  REM_ACCESS_ERR, QP_ACCESS_ERR),
	E(SWIW_V_DDP_CATASTROPHIC, 1, 0, 0, 0, true, GENERAL_ERR, REM_OP_ERR,
	  QP_FATAL),
};

static u32 mk_tagged(u8 *buf, u8 b0, u8 b1, u32 stag, u64 to, u32 plen)
{
	u32 i;

	buf[0] = b0;
	buf[1] = b1;
	wr32(buf + 2, stag);
	wr64(buf + 6, to);
	for (i = 0; i < plen; i++)
		buf[14 + i] = (u8)(i * 7);
	return 14 + plen;
}

static u32 mk_untagged(u8 *buf, u8 b0, u8 b1, u32 rsvd, u32 qn, u32 msn, u32 mo,
		       u32 blen)
{
	u32 i;

	buf[0] = b0;
	buf[1] = b1;
	wr32(buf + 2, rsvd);
	wr32(buf + 6, qn);
	wr32(buf + 10, msn);
	wr32(buf + 14, mo);
	for (i = 0; i < blen; i++)
		buf[18 + i] = (u8)(i * 13 + 1);
	return 18 + blen;
}

static u32 mk_read_req(u8 *buf, u8 b0, u32 msn, u32 size, u32 src_stag,
		       u64 src_to)
{
	u32 n = mk_untagged(buf, b0, 0x41, 0, 1, msn, 0, 28);

	wr32(buf + 18, 0x5151);
	wr64(buf + 22, 0x9000);
	wr32(buf + 30, size);
	wr32(buf + 34, src_stag);
	wr64(buf + 38, src_to);
	return n;
}

static u32 mk_atomic(u8 *buf, u32 op, u32 stag, u64 to)
{
	u32 n = mk_untagged(buf, 0x41, 0x4a, 0, 1, 1, 0, 52);

	wr32(buf + 18, op);
	wr32(buf + 22, 77);
	wr32(buf + 26, stag);
	wr64(buf + 30, to);
	return n;
}

/*
 * Builds the segment that provokes @v and, where the DDP receive path
 * detects @v, feeds it and checks that it does. Violations other layers
 * or the engine detect get a representative segment (or none).
 */
static u32 provoke(enum swiw_violation v, u8 *seg)
{
	struct swiw_ddp_rx rx;
	struct fake_mem fm;
	struct swiw_ddp_seg s;
	struct swiw_ddp_dest d;
	enum swiw_violation got = SWIW_V_NONE;
	u32 flags = SWIW_DDP_RX_ORDERED | SWIW_DDP_RX_RFC7306;
	u32 ird = 4, n = 0;
	bool detect = true;
	struct fake_region *r;

	memset(&fm, 0, sizeof(fm));
	fake_add_rbuf(&fm, 0, 1, 16, false);
	fake_add_region(&fm, 0x100, 0x1000, 64, SWIW_ACC_REMOTE_WRITE);
	fake_add_region(&fm, 0x200, 0x1000, 64,
			SWIW_ACC_REMOTE_READ | SWIW_ACC_REMOTE_ATOMIC);
	r = fake_add_region(&fm, 0x300, 0x1000, 64,
			    SWIW_ACC_REMOTE_WRITE | SWIW_ACC_REMOTE_READ);
	r->assoc = false;
	fake_add_region(&fm, 0x400, ~0ULL - 63, 64,
			SWIW_ACC_REMOTE_WRITE | SWIW_ACC_REMOTE_READ);

	switch (v) {
	case SWIW_V_NONE:
		n = mk_untagged(seg, 0x41, 0x43, 0, 0, 1, 0, 8);
		break;
	case SWIW_V_DDP_T_INVALID_STAG:
		n = mk_tagged(seg, 0xc1, 0x40, 0x999, 0x1000, 8);
		break;
	case SWIW_V_DDP_T_BASE_BOUNDS:
		n = mk_tagged(seg, 0xc1, 0x40, 0x100, 0x1039, 8);
		break;
	case SWIW_V_DDP_T_STAG_NOT_ASSOC:
		n = mk_tagged(seg, 0xc1, 0x40, 0x300, 0x1000, 8);
		break;
	case SWIW_V_DDP_T_TO_WRAP:
		n = mk_tagged(seg, 0xc1, 0x40, 0x400, ~0ULL - 3, 8);
		break;
	case SWIW_V_DDP_T_ACCESS:
		n = mk_tagged(seg, 0xc1, 0x40, 0x200, 0x1000, 8);
		break;
	case SWIW_V_DDP_UT_INVALID_QN:
		n = mk_untagged(seg, 0x41, 0x43, 0, 5, 1, 0, 8);
		break;
	case SWIW_V_DDP_UT_NO_BUFFER:
		fm.b[0].msn = 99; /* posted, but for another message */
		n = mk_untagged(seg, 0x41, 0x43, 0, 0, 1, 0, 8);
		break;
	case SWIW_V_DDP_UT_MSN_RANGE:
		n = mk_untagged(seg, 0x41, 0x43, 0, 0, 3, 0, 8);
		break;
	case SWIW_V_DDP_UT_INVALID_MO:
		n = mk_untagged(seg, 0x41, 0x43, 0, 0, 1, 4, 8);
		break;
	case SWIW_V_DDP_UT_TOO_LONG:
		n = mk_untagged(seg, 0x41, 0x43, 0, 0, 1, 0, 17);
		break;
	case SWIW_V_DDP_VERSION:
		n = mk_tagged(seg, 0xc0, 0x40, 0x100, 0x1000, 8);
		break;
	case SWIW_V_DDP_RESERVED:
		flags |= SWIW_DDP_RX_STRICT;
		n = mk_untagged(seg, 0x45, 0x43, 0, 0, 1, 0, 8);
		break;
	case SWIW_V_RDMAP_VERSION:
		n = mk_untagged(seg, 0x41, 0x83, 0, 0, 1, 0, 8);
		break;
	case SWIW_V_RDMAP_OPCODE:
		n = mk_untagged(seg, 0x41, 0x4d, 0, 0, 1, 0, 8);
		break;
	case SWIW_V_RDMAP_INVALID_STAG:
		n = mk_read_req(seg, 0x41, 1, 16, 0x999, 0x1000);
		break;
	case SWIW_V_RDMAP_BASE_BOUNDS:
		n = mk_read_req(seg, 0x41, 1, 16, 0x200, 0x1031);
		break;
	case SWIW_V_RDMAP_ACCESS_RIGHTS:
		n = mk_read_req(seg, 0x41, 1, 16, 0x100, 0x1000);
		break;
	case SWIW_V_RDMAP_STAG_NOT_ASSOC:
		n = mk_read_req(seg, 0x41, 1, 16, 0x300, 0x1000);
		break;
	case SWIW_V_RDMAP_TO_WRAP:
		n = mk_read_req(seg, 0x41, 1, 16, 0x400, ~0ULL - 7);
		break;
	case SWIW_V_RDMAP_IRD_EXCEEDED:
		ird = 0;
		n = mk_read_req(seg, 0x41, 1, 16, 0x200, 0x1000);
		break;
	case SWIW_V_DDP_UT_VERSION:
		n = mk_untagged(seg, 0x42, 0x43, 0, 0, 1, 0, 8);
		break;
	case SWIW_V_RDMAP_MALFORMED:
		n = mk_read_req(seg, 0x01, 1, 16, 0x200, 0x1000);
		break;
	case SWIW_V_RDMAP_ATOMIC_OPCODE:
		n = mk_atomic(seg, 5, 0x200, 0x1000);
		break;
	case SWIW_V_RDMAP_ATOMIC_ALIGN:
		n = mk_atomic(seg, 0, 0x200, 0x1004);
		break;

	/* Detected by the engine on a Send with Invalidate. */
	case SWIW_V_RDMAP_CANT_INVALIDATE:
	case SWIW_V_RDMAP_CANT_INVALIDATE_OP:
		detect = false;
		n = mk_untagged(seg, 0x41, 0x44, 0xabcd, 0, 1, 0, 8);
		break;
	/* Local failures, MPA, the stream: a segment they happen on. */
	default:
		detect = false;
		n = mk_tagged(seg, 0xc1, 0x40, 0x100, 0x1000, 8);
		break;
	}
	if (detect) {
		int rc;

		assert_int_equal(
			swiw_ddp_rx_init(&rx, &fake_ops, &fm, flags, ird), 0);
		rc = swiw_ddp_rx_segment(&rx, seg, n, &s, &d, &got);
		if (v == SWIW_V_NONE) {
			assert_int_equal(rc, 0);
		} else {
			assert_int_equal(rc, -EPROTO);
			assert_int_equal(got, v);
		}
	}
	fake_free(&fm);
	return n;
}

static void check_row(enum swiw_violation v)
{
	const struct expect *e = &expect[v];
	const struct swiw_violation_info *vi = swiw_violation_info(v);
	struct swiw_term t, back;
	struct swiw_ddp_rx rx;
	struct fake_mem fm;
	struct swiw_ddp_seg s;
	struct swiw_ddp_dest d;
	enum swiw_violation got;
	u8 seg[128], out[SWIW_TERM_MAX_LEN + 8], want[SWIW_TERM_MAX_LEN];
	u8 hdrct = 0;
	u32 n, wl = 22, dlen;
	int len;

	assert_non_null(vi);
	assert_string_equal(vi->name, e->name);
	assert_non_null(vi->ref);
	assert_int_equal(vi->layer, e->layer);
	assert_int_equal(vi->etype, e->etype);
	assert_int_equal(vi->ecode, e->ecode);
	assert_int_equal(vi->hdrct, e->hdrct);
	assert_int_equal(!(vi->flags & SWIW_VI_NO_TERM), e->sent);
	assert_int_equal(vi->local_status, e->local);
	assert_int_equal(vi->peer_status, e->peer);
	assert_int_equal(vi->async, e->async);

	n = provoke(v, seg);
	if (!e->sent) {
		assert_int_equal(swiw_term_from_violation(v, seg, n, &t),
				 -EINVAL);
		return;
	}
	/* The peer reads this status back from the code alone. */
	assert_int_equal(swiw_term_peer_status(e->layer, e->etype, e->ecode),
			 e->peer);

	assert_int_equal(swiw_term_from_violation(v, seg, n, &t), 0);
	len = swiw_term_build(&t, out, sizeof(out));
	assert_true(len > 0);

	/* The TERMINATE, assembled here: untagged, L, QN 2, MSN 1, MO 0. */
	memset(want, 0, sizeof(want));
	want[0] = 0x41;
	want[1] = 0x47;
	want[9] = 2;
	want[13] = 1;
	dlen = seg[0] & 0x80 ? 14 : 18;
	if (e->hdrct & D) {
		hdrct |= D | (e->hdrct & M);
		want[22] = (u8)(n >> 8);
		want[23] = (u8)n;
		memcpy(want + 24, seg, dlen);
		wl += 2 + dlen;
		if ((e->hdrct & R) && !(seg[0] & 0x80) && (seg[1] & 0xf) == 1) {
			hdrct |= R;
			memcpy(want + wl, seg + 18, 28);
			wl += 28;
		}
	}
	want[18] = (u8)(e->layer << 4 | e->etype);
	want[19] = e->ecode;
	want[20] = (u8)(hdrct << 5);
	assert_int_equal(len, wl);
	assert_memory_equal(out, want, wl);
	/* A Read Request's RDMAP header goes back exactly when R is due. */
	if ((e->hdrct & R) && v != SWIW_V_RDMAP_ATOMIC_OPCODE)
		assert_int_equal(wl, 70);

	/* Parsed back, field by field. */
	assert_int_equal(swiw_term_parse(out, (u32)len, &back), 0);
	assert_int_equal(back.layer, e->layer);
	assert_int_equal(back.etype, e->etype);
	assert_int_equal(back.ecode, e->ecode);
	assert_int_equal(back.hdrct, hdrct);
	if (hdrct & D) {
		assert_int_equal(back.seg_len, n);
		assert_int_equal(back.ddp_len, dlen);
		assert_memory_equal(back.ddp_hdr, seg, dlen);
	}
	if (hdrct & R)
		assert_memory_equal(back.rdmap_hdr, seg + 18, 28);

	/* And received by the peer's stream as its TERMINATE. */
	memset(&fm, 0, sizeof(fm));
	assert_int_equal(swiw_ddp_rx_init(&rx, &fake_ops, &fm,
					  SWIW_DDP_RX_ORDERED, 0),
			 0);
	assert_int_equal(swiw_ddp_rx_segment(&rx, out, (u32)len, &s, &d, &got),
			 0);
	assert_int_equal(d.action, SWIW_DDP_TERMINATE);
	assert_int_equal(s.term_rc, 0);
	assert_int_equal(s.u.term.ecode, e->ecode);
	assert_int_equal(swiw_term_peer_status(s.u.term.layer, s.u.term.etype,
					       s.u.term.ecode),
			 e->peer);
}

#define DEF_ROW(v)                        \
	static void row_##v(void **state) \
	{                                 \
		(void)state;              \
		check_row(v);             \
	}
ROWS(DEF_ROW)

static void test_table_bounds(void **state)
{
	(void)state;
	assert_null(swiw_violation_info(SWIW_V_COUNT));
	assert_null(swiw_violation_info((enum swiw_violation) - 1));
	assert_null(swiw_violation_info((enum swiw_violation)1000));
	assert_int_equal(swiw_term_from_violation(SWIW_V_COUNT, NULL, 0, NULL),
			 -EINVAL);
	/* Codes no RFC defines. */
	assert_int_equal(swiw_term_peer_status(3, 0, 0), SWIW_WC_GENERAL_ERR);
	assert_int_equal(swiw_term_peer_status(0, 3, 0), SWIW_WC_GENERAL_ERR);
	assert_int_equal(swiw_term_peer_status(1, 1, 9), SWIW_WC_GENERAL_ERR);
	assert_int_equal(swiw_term_peer_status(1, 2, 0), SWIW_WC_GENERAL_ERR);
	assert_int_equal(swiw_term_peer_status(1, 3, 0), SWIW_WC_REM_ABORT_ERR);
	assert_int_equal(swiw_term_peer_status(0, 2, 8), SWIW_WC_REM_OP_ERR);
}

static void test_term_edges(void **state)
{
	struct swiw_term t;
	u8 out[SWIW_TERM_MAX_LEN + 8], seg[64];
	int len;

	(void)state;
	memset(&t, 0, sizeof(t));
	t.layer = 1;
	t.etype = 2;
	t.ecode = 3;
	/* Layer and EType have 4 bits, R needs D, D needs a right length. */
	t.layer = 16;
	assert_int_equal(swiw_term_build(&t, out, sizeof(out)), -EINVAL);
	t.layer = 1;
	t.hdrct = SWIW_TERM_R;
	assert_int_equal(swiw_term_build(&t, out, sizeof(out)), -EINVAL);
	t.hdrct = SWIW_TERM_D;
	t.ddp_len = 14; /* ddp_hdr[0] says untagged */
	assert_int_equal(swiw_term_build(&t, out, sizeof(out)), -EINVAL);
	t.ddp_len = 18;
	assert_int_equal(swiw_term_build(&t, out, 41), -ENOSPC);
	assert_int_equal(swiw_term_build(&t, out, 42), 42);
	t.hdrct = 0;
	assert_int_equal(swiw_term_build(&t, out, 22), 22);
	assert_int_equal(swiw_term_parse(out, 22, &t), 0);
	assert_int_equal(swiw_term_parse(out, 21, &t), -EBADMSG);
	/* Extra octets after the declared parts. */
	assert_int_equal(swiw_term_parse(out, 23, &t), -EMSGSIZE);
	/* Not QN 2 / MSN 1 / MO 0 / opcode 7 / L. */
	out[13] = 2;
	assert_int_equal(swiw_term_parse(out, 22, &t), -EBADMSG);
	out[13] = 1;
	out[0] = 0x01;
	assert_int_equal(swiw_term_parse(out, 22, &t), -EBADMSG);
	out[0] = 0x41;
	/* Reserved bits are not checked on receive. */
	out[21] = 0xff;
	assert_int_equal(swiw_term_parse(out, 22, &t), 0);
	assert_int_equal(t.hdrct, 0);
	/* R without D: no defined place for the RDMAP header. */
	out[20] = 0x20;
	assert_int_equal(swiw_term_parse(out, 22, &t), -EBADMSG);

	/* siw's TERMINATE for an RDMAP error on a Send: M, D and R set but
	 * only the length and the DDP header follow. The code survives. */
	memset(seg, 0, sizeof(seg));
	seg[0] = 0x41;
	seg[1] = 0x44;
	assert_int_equal(swiw_term_from_violation(SWIW_V_RDMAP_CANT_INVALIDATE,
						  seg, 26, &t),
			 0);
	len = swiw_term_build(&t, out, sizeof(out));
	assert_int_equal(len, 42);
	out[20] |= 0x20;
	assert_int_equal(swiw_term_parse(out, 42, &t), -EMSGSIZE);
	assert_int_equal(t.ecode, 9);
	assert_int_equal(t.hdrct, SWIW_TERM_M | SWIW_TERM_D);
	/* D declared, not even the DDP header there. */
	assert_int_equal(swiw_term_parse(out, 30, &t), -EMSGSIZE);
	assert_int_equal(t.hdrct, 0);
	assert_int_equal(t.layer, 0);
	assert_int_equal(t.etype, 1);

	/* A segment too short to carry its own header back. */
	assert_int_equal(swiw_term_from_violation(SWIW_V_DDP_UT_MSN_RANGE, seg,
						  17, &t),
			 0);
	assert_int_equal(t.hdrct, 0);
	assert_int_equal(swiw_term_from_violation(SWIW_V_DDP_UT_MSN_RANGE, NULL,
						  0, &t),
			 0);
	assert_int_equal(t.hdrct, 0);
}

static void test_term_via_segmenter(void **state)
{
	struct swiw_rdmap_msg m;
	struct swiw_ddp_tx tx;
	struct swiw_ddp_txseg s;
	u8 seg[64], a[SWIW_DDP_HDR_MAX], b[SWIW_DDP_HDR_MAX];
	int len;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.opcode = RDMAP_TERMINATE;
	memset(seg, 0x5a, sizeof(seg));
	seg[0] = 0x41;
	seg[1] = 0x41;
	assert_int_equal(swiw_term_from_violation(SWIW_V_RDMAP_BASE_BOUNDS, seg,
						  46, &m.u.term),
			 0);
	len = swiw_term_build(&m.u.term, a, sizeof(a));
	assert_int_equal(len, 70);
	assert_int_equal(swiw_ddp_tx_init(&tx, &m), 0);
	assert_int_equal(swiw_ddp_tx_next(&tx, 70, b, sizeof(b), &s), 1);
	assert_int_equal(s.hdr_len, 70);
	assert_true(s.last);
	assert_memory_equal(a, b, 70);
	assert_int_equal(swiw_ddp_tx_next(&tx, 70, b, sizeof(b), &s), 0);
	assert_int_equal(swiw_ddp_tx_init(&tx, &m), 0);
	assert_int_equal(swiw_ddp_tx_next(&tx, 69, b, sizeof(b), &s),
			 -EMSGSIZE);
	/* A Terminate the builder would refuse is refused up front. */
	m.u.term.hdrct = SWIW_TERM_R;
	assert_int_equal(swiw_ddp_tx_init(&tx, &m), -EINVAL);
}

static void test_one_terminate_per_stream(void **state)
{
	struct swiw_ddp_rx rx;
	struct fake_mem fm;
	struct swiw_ddp_seg s;
	struct swiw_ddp_dest d;
	struct swiw_term t;
	enum swiw_violation v;
	u8 out[SWIW_TERM_MAX_LEN];
	int len;

	(void)state;
	memset(&fm, 0, sizeof(fm));
	assert_int_equal(swiw_term_from_violation(SWIW_V_RDMAP_CATASTROPHIC,
						  NULL, 0, &t),
			 0);
	len = swiw_term_build(&t, out, sizeof(out));
	assert_int_equal(len, 22);
	assert_int_equal(swiw_ddp_rx_init(&rx, &fake_ops, &fm, 0, 0), 0);
	assert_int_equal(swiw_ddp_rx_segment(&rx, out, 22, &s, &d, &v), 0);
	assert_int_equal(d.action, SWIW_DDP_TERMINATE);
	/* A second TERMINATE (MSN 1 again) is out of range. */
	assert_int_equal(swiw_ddp_rx_segment(&rx, out, 22, &s, &d, &v),
			 -EPROTO);
	assert_int_equal(v, SWIW_V_DDP_UT_MSN_RANGE);
	/* Neither is answered with a TERMINATE (RFC 5040: the stream ends
	 * at one). */
	assert_int_equal(swiw_term_from_violation(v, out, 22, &t), -EPERM);
	/* A TERMINATE that lacks its own control word is malformed. */
	assert_int_equal(swiw_ddp_parse(out, 21, 0, &s, &v), -EPROTO);
	assert_int_equal(v, SWIW_V_RDMAP_MALFORMED);
	assert_int_equal(swiw_term_from_violation(v, out, 21, &t), -EPERM);
	/* An MPA fault is, whatever the header seems to say. */
	assert_int_equal(swiw_term_from_violation(SWIW_V_MPA_CRC, out, 22, &t),
			 0);
	/* A tagged segment with the TERMINATE's opcode is no TERMINATE. */
	out[0] |= 0x80;
	assert_int_equal(swiw_term_from_violation(SWIW_V_DDP_T_INVALID_STAG,
						  out, 22, &t),
			 0);
}

#define ENT_ROW(v) cmocka_unit_test(row_##v),

int main(void)
{
	const struct CMUnitTest tests[] = {
		ROWS(ENT_ROW) cmocka_unit_test(test_table_bounds),
		cmocka_unit_test(test_term_edges),
		cmocka_unit_test(test_term_via_segmenter),
		cmocka_unit_test(test_one_terminate_per_stream),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
