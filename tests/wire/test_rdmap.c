// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RDMAP: the opcode table against an expectation written here from
 * RFC 5040's table and RFC 7306's additions; control words; the Read
 * Request, Atomic Request/Response and Immediate Data messages built by
 * the transmitter, compared octet by octet with layouts written out here,
 * and parsed back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "swiw_ddp.h"

struct expect_op {
	unsigned int opcode;
	u8 hdr_len;
	bool tagged;
	u8 qn;
	bool one_seg, payload, request, response, inval, se, ext;
};

/* RFC 5040 §4 (0-7) and RFC 7306 (8-0xB); 0xC-0xF unassigned. */
static const struct expect_op expect_ops[] = {
	{ 0x0, 14, true, 0, false, true, false, false, false, false, false },
	{ 0x1, 46, false, 1, true, false, true, false, false, false, false },
	{ 0x2, 14, true, 0, false, true, false, true, false, false, false },
	{ 0x3, 18, false, 0, false, true, false, false, false, false, false },
	{ 0x4, 18, false, 0, false, true, false, false, true, false, false },
	{ 0x5, 18, false, 0, false, true, false, false, false, true, false },
	{ 0x6, 18, false, 0, false, true, false, false, true, true, false },
	{ 0x7, 22, false, 2, true, false, false, false, false, false, false },
	{ 0x8, 26, false, 0, true, false, false, false, false, false, true },
	{ 0x9, 26, false, 0, true, false, false, false, false, true, true },
	{ 0xa, 70, false, 1, true, false, true, false, false, false, true },
	{ 0xb, 30, false, 3, true, false, false, true, false, false, true },
};

static void test_opcode_table(void **state)
{
	unsigned int i;

	(void)state;
	for (i = 0; i < SWIW_ARRAY_SIZE(expect_ops); i++) {
		const struct expect_op *e = &expect_ops[i];
		const struct swiw_rdmap_op *op = swiw_rdmap_op(e->opcode);

		assert_non_null(op);
		assert_non_null(op->name);
		assert_int_equal(op->hdr_len, e->hdr_len);
		assert_int_equal(!!(op->flags & SWIW_OPF_TAGGED), e->tagged);
		if (!e->tagged)
			assert_int_equal(op->qn, e->qn);
		assert_int_equal(!!(op->flags & SWIW_OPF_ONESEG), e->one_seg);
		assert_int_equal(!!(op->flags & SWIW_OPF_PAYLOAD), e->payload);
		assert_int_equal(!!(op->flags & SWIW_OPF_REQUEST), e->request);
		assert_int_equal(!!(op->flags & SWIW_OPF_RESPONSE),
				 e->response);
		assert_int_equal(!!(op->flags & SWIW_OPF_INVAL), e->inval);
		assert_int_equal(!!(op->flags & SWIW_OPF_SE), e->se);
		assert_int_equal(!!(op->flags & SWIW_OPF_RFC7306), e->ext);
	}
	for (i = 0xc; i < 0x10; i++)
		assert_null(swiw_rdmap_op(i));
	assert_null(swiw_rdmap_op(16));
	assert_null(swiw_rdmap_op(0xff));
	assert_null(swiw_rdmap_op(~0u));
}

static void test_ctrl_words(void **state)
{
	static const struct {
		unsigned int op;
		bool last;
		u8 b0, b1;
	} cw[] = {
		{ RDMAP_WRITE, false, 0x81, 0x40 },
		{ RDMAP_WRITE, true, 0xc1, 0x40 },
		{ RDMAP_READ_REQ, true, 0x41, 0x41 },
		{ RDMAP_READ_RESP, true, 0xc1, 0x42 },
		{ RDMAP_SEND, false, 0x01, 0x43 },
		{ RDMAP_SEND_SE_INVAL, true, 0x41, 0x46 },
		{ RDMAP_TERMINATE, true, 0x41, 0x47 },
		{ RDMAP_IMM_DATA_SE, true, 0x41, 0x49 },
		{ RDMAP_ATOMIC_REQ, true, 0x41, 0x4a },
		{ RDMAP_ATOMIC_RESP, true, 0x41, 0x4b },
	};
	unsigned int i;

	(void)state;
	for (i = 0; i < SWIW_ARRAY_SIZE(cw); i++) {
		__be16 c = swiw_rdmap_ctrl(cw[i].op, cw[i].last);
		u8 b[2];

		memcpy(b, &c, 2);
		assert_int_equal(b[0], cw[i].b0);
		assert_int_equal(b[1], cw[i].b1);
	}
	assert_true(swiw_rdmap_ctrl(12, true) == 0);
}

static void test_wire_sizes(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct ddp_tagged_hdr), 14);
	assert_int_equal(sizeof(struct ddp_untagged_hdr), 18);
	assert_int_equal(sizeof(struct rdmap_read_req), 46);
	assert_int_equal(sizeof(struct rdmap_terminate), 22);
	assert_int_equal(sizeof(struct rdmap_imm_data), 26);
	assert_int_equal(sizeof(struct rdmap_atomic_req), 70);
	assert_int_equal(sizeof(struct rdmap_atomic_resp), 30);
	assert_int_equal(RDMAP_QN_ATOMIC_REQ, 1);
	assert_int_equal(RDMAP_QN_ATOMIC_RESP, 3);
}

/* Builds the single segment of @m; returns its length. */
static u32 build_one(const struct swiw_rdmap_msg *m, u8 *out)
{
	struct swiw_ddp_tx tx;
	struct swiw_ddp_txseg s;

	assert_int_equal(swiw_ddp_tx_init(&tx, m), 0);
	assert_int_equal(swiw_ddp_tx_next(&tx, 1500, out, SWIW_DDP_HDR_MAX, &s),
			 1);
	assert_true(s.last);
	assert_int_equal(s.payload_len, 0);
	assert_int_equal(swiw_ddp_tx_next(&tx, 1500, out, SWIW_DDP_HDR_MAX, &s),
			 0);
	return s.hdr_len;
}

static const u8 untagged_prefix_qn1_msn7[18] = {
	0x41, 0x00, 0, 0, 0, 0, /* ctrl (opcode patched), RsvdULP */
	0,    0,    0, 1, /* QN 1 */
	0,    0,    0, 7, /* MSN 7 */
	0,    0,    0, 0, /* MO 0 */
};

static void test_read_request_layout(void **state)
{
	static const u8 body[28] = {
		0x11, 0x22, 0x33, 0x44, /* sink STag */
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /* sink TO */
		0x00, 0x01, 0x00, 0x00, /* size 65536 */
		0xaa, 0xbb, 0xcc, 0xdd, /* source STag */
		0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, /* src TO */
	};
	struct swiw_rdmap_msg m;
	struct swiw_ddp_seg seg;
	enum swiw_violation v;
	u8 out[SWIW_DDP_HDR_MAX], want[46];

	(void)state;
	memset(&m, 0, sizeof(m));
	m.opcode = RDMAP_READ_REQ;
	m.msn = 7;
	m.u.rreq.sink_stag = 0x11223344;
	m.u.rreq.sink_to = 0x0102030405060708ULL;
	m.u.rreq.size = 65536;
	m.u.rreq.src_stag = 0xaabbccdd;
	m.u.rreq.src_to = 0xf1f2f3f4f5f6f7f8ULL;
	assert_int_equal(build_one(&m, out), 46);
	memcpy(want, untagged_prefix_qn1_msn7, 18);
	want[1] = 0x41;
	memcpy(want + 18, body, 28);
	assert_memory_equal(out, want, 46);

	assert_int_equal(swiw_ddp_parse(out, 46, 0, &seg, &v), 0);
	assert_int_equal(seg.opcode, RDMAP_READ_REQ);
	assert_int_equal(seg.qn, 1);
	assert_int_equal(seg.msn, 7);
	assert_int_equal(seg.payload_len, 0);
	assert_memory_equal(&seg.u.rreq, &m.u.rreq, sizeof(m.u.rreq));
}

static void test_atomic_round_trip(void **state)
{
	static const u8 body[52] = {
		0x00, 0x00, 0x00, 0x02, /* rsvd | CompareSwap */
		0x00, 0x00, 0x12, 0x34, /* Request Identifier */
		0x0a, 0x0b, 0x0c, 0x0d, /* Remote STag */
		0,    0,    0,	  0,	0, 0, 0x10, 0x08, /* Remote TO */
		1,    1,    1,	  1,	1, 1, 1,    1, /* Swap Data */
		2,    2,    2,	  2,	2, 2, 2,    2, /* Swap Mask */
		3,    3,    3,	  3,	3, 3, 3,    3, /* Compare Data */
		4,    4,    4,	  4,	4, 4, 4,    4, /* Compare Mask */
	};
	static const u8 resp_body[12] = {
		0x00, 0x00, 0x12, 0x34, /* Original Request Identifier */
		0xde, 0xad, 0xbe, 0xef, 0x00, 0x11, 0x22, 0x33, /* value */
	};
	struct swiw_rdmap_msg m;
	struct swiw_ddp_seg seg;
	enum swiw_violation v;
	u8 out[SWIW_DDP_HDR_MAX], want[70];

	(void)state;
	memset(&m, 0, sizeof(m));
	m.opcode = RDMAP_ATOMIC_REQ;
	m.msn = 7;
	m.u.areq.op = RDMAP_ATOMIC_CMP_SWAP;
	m.u.areq.req_id = 0x1234;
	m.u.areq.stag = 0x0a0b0c0d;
	m.u.areq.to = 0x1008;
	m.u.areq.add_swap = 0x0101010101010101ULL;
	m.u.areq.add_swap_mask = 0x0202020202020202ULL;
	m.u.areq.compare = 0x0303030303030303ULL;
	m.u.areq.compare_mask = 0x0404040404040404ULL;
	assert_int_equal(build_one(&m, out), 70);
	memcpy(want, untagged_prefix_qn1_msn7, 18);
	want[1] = 0x4a;
	memcpy(want + 18, body, 52);
	assert_memory_equal(out, want, 70);
	/* Only with the RFC 7306 extensions enabled. */
	assert_int_equal(swiw_ddp_parse(out, 70, 0, &seg, &v), -EPROTO);
	assert_int_equal(v, SWIW_V_RDMAP_OPCODE);
	assert_int_equal(swiw_ddp_parse(out, 70, SWIW_DDP_RX_RFC7306, &seg, &v),
			 0);
	assert_memory_equal(&seg.u.areq, &m.u.areq, sizeof(m.u.areq));
	/* Reserved bits come back as received, strict mode refuses them. */
	out[18] = 0x80;
	assert_int_equal(swiw_ddp_parse(out, 70, SWIW_DDP_RX_RFC7306, &seg, &v),
			 0);
	assert_int_equal(seg.u.areq.rsvd, 0x80000000u);
	assert_int_equal(seg.u.areq.op, RDMAP_ATOMIC_CMP_SWAP);
	assert_int_equal(swiw_ddp_parse(out, 70,
					SWIW_DDP_RX_RFC7306 |
						SWIW_DDP_RX_STRICT,
					&seg, &v),
			 -EPROTO);
	assert_int_equal(v, SWIW_V_DDP_RESERVED);

	memset(&m, 0, sizeof(m));
	m.opcode = RDMAP_ATOMIC_RESP;
	m.msn = 7;
	m.u.aresp.req_id = 0x1234;
	m.u.aresp.orig = 0xdeadbeef00112233ULL;
	assert_int_equal(build_one(&m, out), 30);
	memcpy(want, untagged_prefix_qn1_msn7, 18);
	want[1] = 0x4b;
	want[9] = 3; /* QN 3 */
	memcpy(want + 18, resp_body, 12);
	assert_memory_equal(out, want, 30);
	assert_int_equal(swiw_ddp_parse(out, 30, SWIW_DDP_RX_RFC7306, &seg, &v),
			 0);
	assert_int_equal(seg.qn, 3);
	assert_int_equal(seg.u.aresp.req_id, 0x1234);
	assert_true(seg.u.aresp.orig == 0xdeadbeef00112233ULL);
	/* Atomic Response on the wrong queue. */
	out[9] = 1;
	assert_int_equal(swiw_ddp_parse(out, 30, SWIW_DDP_RX_RFC7306, &seg, &v),
			 -EPROTO);
	assert_int_equal(v, SWIW_V_DDP_UT_INVALID_QN);
}

static void test_immediate_round_trip(void **state)
{
	static const u8 data[8] = { 9, 8, 7, 6, 5, 4, 3, 2 };
	struct swiw_rdmap_msg m;
	struct swiw_ddp_seg seg;
	enum swiw_violation v;
	u8 out[SWIW_DDP_HDR_MAX], want[26];
	unsigned int op;

	(void)state;
	for (op = RDMAP_IMM_DATA; op <= RDMAP_IMM_DATA_SE; op++) {
		memset(&m, 0, sizeof(m));
		m.opcode = (u8)op;
		m.msn = 7;
		memcpy(m.u.imm, data, 8);
		assert_int_equal(build_one(&m, out), 26);
		memcpy(want, untagged_prefix_qn1_msn7, 18);
		want[1] = (u8)(0x40 | op);
		want[9] = 0; /* QN 0 */
		memcpy(want + 18, data, 8);
		assert_memory_equal(out, want, 26);
		assert_int_equal(swiw_ddp_parse(out, 26, SWIW_DDP_RX_RFC7306,
						&seg, &v),
				 0);
		assert_int_equal(seg.opcode, op);
		assert_memory_equal(seg.u.imm, data, 8);
		/* Exactly 8 octets: a ninth is malformed. */
		assert_int_equal(swiw_ddp_parse(out, 27, SWIW_DDP_RX_RFC7306,
						&seg, &v),
				 -EPROTO);
		assert_int_equal(v, SWIW_V_RDMAP_MALFORMED);
	}
}

/* RFC 7306 semantics: masked add, masked swap, masked compare. */
static void test_atomic_apply(void **state)
{
	struct swiw_rdmap_atomic_req a = { .op = RDMAP_ATOMIC_FETCH_ADD };

	(void)state;
	a.add_swap = 1;
	assert_true(swiw_rdmap_atomic_apply(&a, ~0ull) == 0);
	/* Two 32-bit fields: the low one wraps without carrying. */
	a.add_swap_mask = 1ull << 31;
	assert_true(swiw_rdmap_atomic_apply(&a, 0x00000005ffffffffull) ==
		    0x0000000500000000ull);
	a.add_swap = 0x0000000100000001ull;
	assert_true(swiw_rdmap_atomic_apply(&a, 0x00000005ffffffffull) ==
		    0x0000000600000000ull);

	a.op = RDMAP_ATOMIC_SWAP;
	a.add_swap = 0x1122334455667788ull;
	a.add_swap_mask = 0x00000000ffffffffull;
	assert_true(swiw_rdmap_atomic_apply(&a, 0xaaaaaaaabbbbbbbbull) ==
		    0xaaaaaaaa55667788ull);

	a.op = RDMAP_ATOMIC_CMP_SWAP;
	a.add_swap = 42;
	a.add_swap_mask = ~0ull;
	a.compare = 7;
	a.compare_mask = ~0ull;
	assert_true(swiw_rdmap_atomic_apply(&a, 7) == 42);
	assert_true(swiw_rdmap_atomic_apply(&a, 8) == 8);
	/* Only the compared bits must match. */
	a.compare_mask = 0xff;
	assert_true(swiw_rdmap_atomic_apply(&a, 0x1207) == 42);
	assert_true(swiw_rdmap_atomic_apply(&a, 0x1208) == 0x1208);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opcode_table),
		cmocka_unit_test(test_ctrl_words),
		cmocka_unit_test(test_wire_sizes),
		cmocka_unit_test(test_read_request_layout),
		cmocka_unit_test(test_atomic_round_trip),
		cmocka_unit_test(test_immediate_round_trip),
		cmocka_unit_test(test_atomic_apply),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
