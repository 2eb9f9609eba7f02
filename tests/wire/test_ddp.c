// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * DDP segmentation and placement: every payload-carrying message type cut
 * at many lengths against many MULPDUs, each header decoded here octet by
 * octet; the segments fed back in order (ordered mode) and shuffled
 * across several messages (unordered mode) into a fake memory, contents
 * and completions checked; MSN sequencing per queue; zero-length
 * messages and RTRs; Read Request validation and IRD; progress tracking.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "ddp_fake.h"
#include "wire_test.h"

static u32 rd32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

static u64 rd64(const u8 *p)
{
	return (u64)rd32(p) << 32 | rd32(p + 4);
}

/* A tagged segment by hand: header, then @plen octets of @payload. */
static u32 mk_tagged(u8 *buf, u8 opcode, bool last, u32 stag, u64 to,
		     const u8 *payload, u32 plen)
{
	buf[0] = (u8)(0x80 | (last ? 0x40 : 0) | 0x01);
	buf[1] = (u8)(0x40 | opcode);
	wr32(buf + 2, stag);
	wr64(buf + 6, to);
	if (plen)
		memcpy(buf + 14, payload, plen);
	return 14 + plen;
}

/* An untagged segment by hand: header, then @blen octets of @body. */
static u32 mk_untagged(u8 *buf, u8 opcode, bool last, u32 rsvd, u32 qn, u32 msn,
		       u32 mo, const u8 *body, u32 blen)
{
	buf[0] = (u8)((last ? 0x40 : 0) | 0x01);
	buf[1] = (u8)(0x40 | opcode);
	wr32(buf + 2, rsvd);
	wr32(buf + 6, qn);
	wr32(buf + 10, msn);
	wr32(buf + 14, mo);
	if (blen)
		memcpy(buf + 18, body, blen);
	return 18 + blen;
}

static u32 mk_read_req(u8 *buf, u32 msn, u32 sink_stag, u64 sink_to, u32 size,
		       u32 src_stag, u64 src_to)
{
	u8 b[28];

	wr32(b, sink_stag);
	wr64(b + 4, sink_to);
	wr32(b + 12, size);
	wr32(b + 16, src_stag);
	wr64(b + 20, src_to);
	return mk_untagged(buf, RDMAP_READ_REQ, true, 0, 1, msn, 0, b, 28);
}

static const u8 payload_ops[] = {
	RDMAP_WRITE,	  RDMAP_READ_RESP, RDMAP_SEND,
	RDMAP_SEND_INVAL, RDMAP_SEND_SE,   RDMAP_SEND_SE_INVAL,
};

static bool is_tagged(u8 op)
{
	return op == RDMAP_WRITE || op == RDMAP_READ_RESP;
}

/*
 * Cuts a message of @len octets with @mulpdu and checks every header
 * against the message, octet by octet; feeds the segments in order to an
 * ordered receiver and checks the placed octets. Returns the number of
 * segments.
 */
static u32 cut_and_check(u8 opcode, u32 len, u32 mulpdu, const u8 *data)
{
	struct swiw_rdmap_msg m;
	struct swiw_ddp_tx tx;
	struct swiw_ddp_txseg s;
	struct swiw_ddp_rx rx;
	struct fake_mem fm;
	struct fake_region *reg = NULL;
	struct fake_rbuf *rb = NULL;
	u8 hdr[SWIW_DDP_HDR_MAX];
	static u8 ulpdu[65536 + 64];
	u32 eff = mulpdu > 65535 ? 65535 : mulpdu;
	u32 hlen = is_tagged(opcode) ? 14 : 18;
	u32 nseg = 0, expect_off = 0, completes = 0;
	bool tagged = is_tagged(opcode);
	int rc;

	memset(&m, 0, sizeof(m));
	m.opcode = opcode;
	m.len = len;
	m.stag = 0x1234ab00 | (u32)(len & 0xff);
	m.to = 0x7000000000ULL + len;
	m.msn = 1;
	m.inval_stag = 0xfeedf00d;
	assert_int_equal(swiw_ddp_tx_init(&tx, &m), 0);

	memset(&fm, 0, sizeof(fm));
	if (tagged) {
		reg = fake_add_region(&fm, m.stag, m.to, len,
				      SWIW_ACC_REMOTE_WRITE |
					      SWIW_ACC_LOCAL_WRITE);
	} else {
		rb = fake_add_rbuf(&fm, 0, 1, len, false);
	}
	assert_int_equal(swiw_ddp_rx_init(&rx, &fake_ops, &fm,
					  SWIW_DDP_RX_ORDERED, 4),
			 0);

	while ((rc = swiw_ddp_tx_next(&tx, mulpdu, hdr, sizeof(hdr), &s)) ==
	       1) {
		struct swiw_ddp_seg seg;
		struct swiw_ddp_dest d;
		enum swiw_violation v;

		nseg++;
		assert_int_equal(s.hdr_len, hlen);
		assert_true(s.hdr_len + s.payload_len <= eff);
		assert_int_equal(s.payload_off, expect_off);
		/* Only the last may be short, and only the last has L. */
		if (!s.last)
			assert_int_equal(s.hdr_len + s.payload_len, eff);
		assert_int_equal(s.last, expect_off + s.payload_len == len);
		assert_int_equal(hdr[0], (tagged ? 0x80 : 0) |
						 (s.last ? 0x40 : 0) | 0x01);
		assert_int_equal(hdr[1], 0x40 | opcode);
		if (tagged) {
			assert_int_equal(rd32(hdr + 2), m.stag);
			assert_true(rd64(hdr + 6) == m.to + s.payload_off);
		} else {
			bool inval = opcode == RDMAP_SEND_INVAL ||
				     opcode == RDMAP_SEND_SE_INVAL;

			assert_int_equal(rd32(hdr + 2),
					 inval ? m.inval_stag : 0);
			assert_int_equal(rd32(hdr + 6), 0);
			assert_int_equal(rd32(hdr + 10), 1);
			assert_int_equal(rd32(hdr + 14), s.payload_off);
		}
		expect_off += s.payload_len;

		memcpy(ulpdu, hdr, s.hdr_len);
		if (s.payload_len)
			memcpy(ulpdu + s.hdr_len, data + s.payload_off,
			       s.payload_len);
		rc = swiw_ddp_rx_segment(&rx, ulpdu, s.hdr_len + s.payload_len,
					 &seg, &d, &v);
		assert_int_equal(rc, 0);
		assert_int_equal(d.action, SWIW_DDP_PLACE);
		assert_int_equal(d.len, s.payload_len ? s.payload_len : 0);
		assert_int_equal(fake_place(&d, ulpdu + seg.hdr_len), 0);
		completes += d.complete;
		assert_int_equal(d.complete, s.last);
		if (!tagged)
			assert_int_equal(seg.rsvd_ulp, rd32(hdr + 2));
	}
	assert_int_equal(rc, 0);
	assert_int_equal(expect_off, len);
	assert_int_equal(completes, 1);
	if (tagged && len)
		assert_memory_equal(reg->mem, data, len);
	if (!tagged && len)
		assert_memory_equal(rb->mem, data, len);
	if (!tagged)
		assert_int_equal(rx.q[0].msn, 2);
	else
		assert_false(rx.t_open);
	fake_free(&fm);
	/* Idempotent once done. */
	assert_int_equal(swiw_ddp_tx_next(&tx, mulpdu, hdr, sizeof(hdr), &s),
			 0);
	return nseg;
}

static void test_segment_lengths(void **state)
{
	static const u32 lens[] = { 0,	  1,	2,     3,     17,    63,
				    64,	  65,	1000,  1441,  1442,  1443,
				    4096, 8191, 65535, 65536, 70001, 262147 };
	static const u32 mulpdus[] = { 19,   20,   64,	  100,	 1460,
				       1448, 4096, 65535, 65536, 1000000 };
	u8 *data = malloc(262147);
	unsigned int i, j, k;

	(void)state;
	fill(data, 262147);
	for (k = 0; k < sizeof(payload_ops); k++)
		for (i = 0; i < SWIW_ARRAY_SIZE(lens); i++)
			for (j = 0; j < SWIW_ARRAY_SIZE(mulpdus); j++) {
				u8 op = payload_ops[k];
				u32 hlen = is_tagged(op) ? 14 : 18;
				u32 eff = mulpdus[j] > 65535 ? 65535 :
							       mulpdus[j];
				u32 room = eff - hlen;
				u32 want = lens[i] ?
						   (lens[i] + room - 1) / room :
						   1;

				if (mulpdus[j] <= hlen)
					continue;
				assert_int_equal(cut_and_check(op, lens[i],
							       mulpdus[j],
							       data),
						 want);
			}
	/* Random lengths and MULPDUs. */
	for (i = 0; i < 300; i++) {
		u8 op = payload_ops[rnd() % sizeof(payload_ops)];
		u32 len = rnd() % 200000;
		u32 mulpdu = 19 + rnd() % 9000;

		cut_and_check(op, len, mulpdu, data);
	}
	free(data);
}

static void test_segment_limits(void **state)
{
	struct swiw_rdmap_msg m;
	struct swiw_ddp_tx tx;
	struct swiw_ddp_txseg s;
	u8 hdr[SWIW_DDP_HDR_MAX];

	(void)state;
	memset(&m, 0, sizeof(m));
	/* MULPDU must hold the header and a payload octet. */
	m.opcode = RDMAP_SEND;
	m.len = 10;
	assert_int_equal(swiw_ddp_tx_init(&tx, &m), 0);
	assert_int_equal(swiw_ddp_tx_next(&tx, 18, hdr, sizeof(hdr), &s),
			 -EMSGSIZE);
	assert_int_equal(swiw_ddp_tx_next(&tx, 19, hdr, 17, &s), -ENOSPC);
	/* A zero-length Send fits in exactly its header. */
	m.len = 0;
	assert_int_equal(swiw_ddp_tx_init(&tx, &m), 0);
	assert_int_equal(swiw_ddp_tx_next(&tx, 18, hdr, sizeof(hdr), &s), 1);
	assert_true(s.last);
	assert_int_equal(s.payload_len, 0);
	assert_int_equal(swiw_ddp_tx_next(&tx, 18, hdr, sizeof(hdr), &s), 0);
	/* No payload on messages that carry none. */
	m.opcode = RDMAP_READ_REQ;
	m.len = 1;
	assert_int_equal(swiw_ddp_tx_init(&tx, &m), -EINVAL);
	m.opcode = RDMAP_TERMINATE;
	assert_int_equal(swiw_ddp_tx_init(&tx, &m), -EINVAL);
	/* Unassigned opcodes. */
	m.len = 0;
	m.opcode = 12;
	assert_int_equal(swiw_ddp_tx_init(&tx, &m), -EINVAL);
	m.opcode = 200;
	assert_int_equal(swiw_ddp_tx_init(&tx, &m), -EINVAL);
	/* A tagged message may end at 2^64 but not past it. */
	m.opcode = RDMAP_WRITE;
	m.len = 16;
	m.to = ~0ULL - 15;
	assert_int_equal(swiw_ddp_tx_init(&tx, &m), 0);
	m.to = ~0ULL - 14;
	assert_int_equal(swiw_ddp_tx_init(&tx, &m), -EOVERFLOW);
	/* Single-segment messages need MULPDU >= their header. */
	m.opcode = RDMAP_READ_REQ;
	m.len = 0;
	assert_int_equal(swiw_ddp_tx_init(&tx, &m), 0);
	assert_int_equal(swiw_ddp_tx_next(&tx, 45, hdr, sizeof(hdr), &s),
			 -EMSGSIZE);
	assert_int_equal(swiw_ddp_tx_next(&tx, 46, hdr, sizeof(hdr), &s), 1);
	assert_int_equal(s.hdr_len, 46);
	assert_true(s.last);
	assert_int_equal(swiw_ddp_tx_next(&tx, 46, hdr, sizeof(hdr), &s), 0);
	/* Bad arguments. */
	assert_int_equal(swiw_ddp_tx_init(NULL, &m), -EINVAL);
	assert_int_equal(swiw_ddp_tx_next(&tx, 46, NULL, 70, &s), -EINVAL);
}

/* One segment of a shuffled stream. */
struct piece {
	u8 ulpdu[2048];
	u32 len;
	int msg; /* index into the messages */
};

struct shuffled_msg {
	u8 opcode;
	u32 len;
	u8 *data;
	struct fake_region *reg;
	struct fake_rbuf *rb;
	struct swiw_ddp_progress read; /* Read Response: our READ */
	int completions;
};

/*
 * Several messages cut by the transmitter, their segments shuffled,
 * placed by an unordered receiver: every octet lands where TO/MO says,
 * each message completes exactly once, on its last octet.
 */
static void shuffle_round(unsigned int seed)
{
	enum {
		NMSG = 7,
		MAXP = 1200
	};
	static struct piece pieces[MAXP];
	struct shuffled_msg msgs[NMSG];
	struct swiw_ddp_rx rx;
	struct fake_mem fm;
	u32 np = 0, i, msn = 1;
	int k;

	rnd_state = seed * 2654435761u + 1;
	memset(&fm, 0, sizeof(fm));
	memset(msgs, 0, sizeof(msgs));
	for (k = 0; k < NMSG; k++) {
		struct shuffled_msg *sm = &msgs[k];
		struct swiw_rdmap_msg m;
		struct swiw_ddp_tx tx;
		struct swiw_ddp_txseg s;
		u32 mulpdu = 200 + rnd() % 1500;
		int rc;

		memset(&m, 0, sizeof(m));
		sm->opcode = k < 3 ? RDMAP_SEND :
			     k < 5 ? RDMAP_WRITE :
			     k < 6 ? RDMAP_READ_RESP :
				     RDMAP_SEND_SE_INVAL;
		sm->len = rnd() % 20000;
		if (k == 1)
			sm->len = 0; /* a zero-length Send among them */
		sm->data = malloc(sm->len + 1);
		fill(sm->data, sm->len);
		m.opcode = sm->opcode;
		m.len = sm->len;
		m.stag = 0x100 + (u32)k;
		m.to = 0x10000 * (u64)(k + 1);
		m.inval_stag = 0xabc;
		if (is_tagged(sm->opcode)) {
			sm->reg = fake_add_region(&fm, m.stag, m.to, sm->len,
						  SWIW_ACC_REMOTE_WRITE |
							  SWIW_ACC_LOCAL_WRITE);
			if (sm->opcode == RDMAP_READ_RESP) {
				swiw_ddp_progress_expect(&sm->read, m.to,
							 sm->len);
				sm->reg->progress = &sm->read;
			}
		} else {
			m.msn = msn++;
			sm->rb = fake_add_rbuf(&fm, 0, m.msn,
					       sm->len + rnd() % 5, true);
		}
		assert_int_equal(swiw_ddp_tx_init(&tx, &m), 0);
		while ((rc = swiw_ddp_tx_next(&tx, mulpdu, pieces[np].ulpdu,
					      SWIW_DDP_HDR_MAX, &s)) == 1) {
			memcpy(pieces[np].ulpdu + s.hdr_len,
			       sm->data + s.payload_off, s.payload_len);
			pieces[np].len = s.hdr_len + s.payload_len;
			pieces[np].msg = k;
			np++;
			assert_true(np < MAXP);
		}
		assert_int_equal(rc, 0);
	}
	for (i = np - 1; i > 0; i--) {
		u32 j = rnd() % (i + 1);
		struct piece t = pieces[i];

		pieces[i] = pieces[j];
		pieces[j] = t;
	}
	assert_int_equal(swiw_ddp_rx_init(&rx, &fake_ops, &fm, 0, 0), 0);
	for (i = 0; i < np; i++) {
		struct swiw_ddp_seg seg;
		struct swiw_ddp_dest d;
		enum swiw_violation v = SWIW_V_COUNT;
		struct shuffled_msg *sm = &msgs[pieces[i].msg];

		assert_int_equal(swiw_ddp_rx_segment(&rx, pieces[i].ulpdu,
						     pieces[i].len, &seg, &d,
						     &v),
				 0);
		assert_int_equal(v, SWIW_V_NONE);
		assert_int_equal(fake_place(&d, pieces[i].ulpdu + seg.hdr_len),
				 0);
		if (d.complete)
			sm->completions++;
		if (sm->opcode == RDMAP_SEND_SE_INVAL)
			assert_int_equal(seg.rsvd_ulp, 0xabc);
	}
	for (k = 0; k < NMSG; k++) {
		struct shuffled_msg *sm = &msgs[k];
		u8 *got = sm->reg ? sm->reg->mem : sm->rb->mem;

		/* Writes have no WR: L completes them, whichever came
		 * first; everything else completes once, when whole. */
		if (sm->opcode != RDMAP_WRITE)
			assert_int_equal(sm->completions, 1);
		if (sm->len)
			assert_memory_equal(got, sm->data, sm->len);
		if (sm->rb)
			assert_true(sm->rb->progress.placed == sm->len);
		free(sm->data);
	}
	assert_int_equal(rx.q[0].msn, msn);
	assert_true(rx.q[0].done == 0);
	fake_free(&fm);
}

static void test_shuffled_placement(void **state)
{
	unsigned int seed;

	(void)state;
	for (seed = 1; seed <= 200; seed++)
		shuffle_round(seed);
}

/* A receiver on fm with the given flags; returns the rx. */
static void rx_on(struct swiw_ddp_rx *rx, struct fake_mem *fm, u32 flags,
		  u32 ird)
{
	assert_int_equal(swiw_ddp_rx_init(rx, &fake_ops, fm, flags, ird), 0);
}

static enum swiw_violation feed(struct swiw_ddp_rx *rx, const u8 *u, u32 len,
				struct swiw_ddp_dest *d)
{
	struct swiw_ddp_seg seg;
	struct swiw_ddp_dest dd;
	enum swiw_violation v = SWIW_V_COUNT;
	int rc = swiw_ddp_rx_segment(rx, u, len, &seg, d ? d : &dd, &v);

	if (rc == 0) {
		assert_int_equal(v, SWIW_V_NONE);
		return SWIW_V_NONE;
	}
	assert_int_equal(rc, -EPROTO);
	assert_int_not_equal(v, SWIW_V_NONE);
	return v;
}

static void test_msn_ordered(void **state)
{
	struct swiw_ddp_rx rx;
	struct fake_mem fm;
	u8 u[256], body[64];
	u32 n;

	(void)state;
	memset(&fm, 0, sizeof(fm));
	fill(body, sizeof(body));
	fake_add_rbuf(&fm, 0, 1, 64, false);
	fake_add_rbuf(&fm, 0, 2, 64, false);
	fake_add_rbuf(&fm, 0, 3, 64, false);
	fake_add_region(&fm, 0x77, 0x1000, 4096, SWIW_ACC_REMOTE_READ);
	rx_on(&rx, &fm, SWIW_DDP_RX_ORDERED, 8);

	/* MSN 1 in two segments: MO must continue. */
	n = mk_untagged(u, RDMAP_SEND, false, 0, 0, 1, 0, body, 10);
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_NONE);
	n = mk_untagged(u, RDMAP_SEND, true, 0, 0, 1, 11, body, 10);
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_DDP_UT_INVALID_MO);
	n = mk_untagged(u, RDMAP_SEND, true, 0, 0, 2, 10, body, 10);
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_DDP_UT_MSN_RANGE);
	n = mk_untagged(u, RDMAP_SEND, true, 0, 0, 1, 10, body, 10);
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_NONE);
	assert_int_equal(rx.q[0].msn, 2);

	/* Queues count independently: Read Requests on QN 1 from MSN 1. */
	n = mk_read_req(u, 1, 5, 0, 16, 0x77, 0x1000);
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_NONE);
	n = mk_read_req(u, 3, 5, 0, 16, 0x77, 0x1000);
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_DDP_UT_MSN_RANGE);
	n = mk_read_req(u, 2, 5, 0, 16, 0x77, 0x1000);
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_NONE);
	assert_int_equal(rx.q[1].msn, 3);
	assert_int_equal(rx.q[0].msn, 2);

	/* Behind, ahead, then in sequence. */
	n = mk_untagged(u, RDMAP_SEND, true, 0, 0, 1, 0, body, 4);
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_DDP_UT_MSN_RANGE);
	n = mk_untagged(u, RDMAP_SEND, true, 0, 0, 0x80000002, 0, body, 4);
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_DDP_UT_MSN_RANGE);
	n = mk_untagged(u, RDMAP_SEND, true, 0, 0, 2, 0, body, 4);
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_NONE);
	n = mk_untagged(u, RDMAP_SEND_SE, true, 0, 0, 3, 0, body, 0);
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_NONE);
	/* MSN 4: valid in sequence, but nothing posted for it. */
	n = mk_untagged(u, RDMAP_SEND, true, 0, 0, 4, 0, body, 4);
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_DDP_UT_NO_BUFFER);
	assert_int_equal(rx.q[0].msn, 4);
	fake_free(&fm);
}

static void test_msn_unordered(void **state)
{
	struct swiw_ddp_rx rx;
	struct fake_mem fm;
	u8 u[256], body[64];
	u32 n, i;

	(void)state;
	memset(&fm, 0, sizeof(fm));
	fill(body, sizeof(body));
	for (i = 1; i <= 40; i++)
		fake_add_rbuf(&fm, 0, i, 64, true);
	rx_on(&rx, &fm, 0, 0);

	/* MSN 2 completes before MSN 1: the queue waits for 1. */
	n = mk_untagged(u, RDMAP_SEND, true, 0, 0, 2, 0, body, 8);
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_NONE);
	assert_int_equal(rx.q[0].msn, 1);
	/* A second copy of the complete MSN 2 is out of range. */
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_DDP_UT_MSN_RANGE);
	/* MSN 1 in two segments, the last first. */
	n = mk_untagged(u, RDMAP_SEND, true, 0, 0, 1, 8, body, 8);
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_NONE);
	assert_int_equal(rx.q[0].msn, 1);
	/* Beyond the end L set: invalid MO. */
	n = mk_untagged(u, RDMAP_SEND, false, 0, 0, 1, 16, body, 1);
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_DDP_UT_INVALID_MO);
	n = mk_untagged(u, RDMAP_SEND, false, 0, 0, 1, 0, body, 8);
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_NONE);
	assert_int_equal(rx.q[0].msn, 3);
	/* The window: 64 messages past the oldest incomplete one. */
	n = mk_untagged(u, RDMAP_SEND, true, 0, 0, 3 + 63, 0, body, 8);
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_DDP_UT_NO_BUFFER);
	n = mk_untagged(u, RDMAP_SEND, true, 0, 0, 3 + 64, 0, body, 8);
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_DDP_UT_MSN_RANGE);
	n = mk_untagged(u, RDMAP_SEND, true, 0, 0, 2, 0, body, 8);
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_DDP_UT_MSN_RANGE);
	/* Too long for the buffer. */
	n = mk_untagged(u, RDMAP_SEND, true, 0, 0, 3, 60, body, 8);
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_DDP_UT_TOO_LONG);
	n = mk_untagged(u, RDMAP_SEND, true, 0, 0, 3, 56, body, 8);
	assert_int_equal(feed(&rx, u, n, NULL), SWIW_V_NONE);
	assert_int_equal(rx.q[0].msn, 3);
	fake_free(&fm);
}

static void test_zero_length_and_rtr(void **state)
{
	struct swiw_ddp_rx rx;
	struct fake_mem fm;
	struct swiw_ddp_dest d;
	struct swiw_ddp_progress read;
	struct fake_region *sink;
	u8 u[256];
	u32 n;

	(void)state;
	memset(&fm, 0, sizeof(fm));
	fake_add_rbuf(&fm, 0, 1, 0, false);
	sink = fake_add_region(&fm, 0x55, 0x2000, 0, SWIW_ACC_LOCAL_WRITE);
	sink->opcode = RDMAP_READ_RESP;
	swiw_ddp_progress_expect(&read, 0x2000, 0);
	sink->progress = &read;
	rx_on(&rx, &fm, SWIW_DDP_RX_ORDERED, 1);

	/* A zero-length Write RTR with an STag nobody registered. */
	n = mk_tagged(u, RDMAP_WRITE, true, 1, 0, NULL, 0);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_NONE);
	assert_null(d.handle);
	assert_true(d.complete);
	/* The same with a non-zero STag and TO: nothing to place. */
	n = mk_tagged(u, RDMAP_WRITE, true, 0xdeadbeef, ~0ULL, NULL, 0);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_NONE);
	/* A zero-length Send still takes a receive. */
	n = mk_untagged(u, RDMAP_SEND, true, 0, 0, 1, 0, NULL, 0);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_NONE);
	assert_non_null(d.handle);
	assert_true(d.complete);
	n = mk_untagged(u, RDMAP_SEND, true, 0, 0, 2, 0, NULL, 0);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_DDP_UT_NO_BUFFER);
	/* A zero-length READ RTR: any source STag, one IRD slot. */
	n = mk_read_req(u, 1, 0x55, 0x2000, 0, 0x999, 0);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_NONE);
	assert_int_equal(d.action, SWIW_DDP_READ_REQ);
	assert_null(d.handle);
	assert_int_equal(d.len, 0);
	/* Answered zero-length: our READ completes on it. */
	n = mk_tagged(u, RDMAP_READ_RESP, true, 0x55, 0x2000, NULL, 0);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_NONE);
	assert_true(d.complete);
	assert_true(read.flags & SWIW_DDP_PROG_LAST);
	fake_free(&fm);
}

static void test_read_request(void **state)
{
	struct swiw_ddp_rx rx;
	struct fake_mem fm;
	struct swiw_ddp_dest d;
	struct fake_region *src;
	u8 u[256];
	u32 n;

	(void)state;
	memset(&fm, 0, sizeof(fm));
	src = fake_add_region(&fm, 0x10, 0x1000, 0x1000, SWIW_ACC_REMOTE_READ);
	fake_add_region(&fm, 0x11, 0x1000, 0x1000, SWIW_ACC_REMOTE_WRITE);
	fake_add_region(&fm, 0x12, 0x1000, 0x1000, SWIW_ACC_REMOTE_READ)->assoc =
		false;
	rx_on(&rx, &fm, SWIW_DDP_RX_ORDERED, 2);

	n = mk_read_req(u, 1, 0x5, 0x77, 0x100, 0x10, 0x1800);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_NONE);
	assert_int_equal(d.action, SWIW_DDP_READ_REQ);
	assert_ptr_equal(d.handle, src);
	assert_int_equal(d.offset, 0x800);
	assert_int_equal(d.len, 0x100);
	assert_int_equal(rx.ird_used, 1);
	n = mk_read_req(u, 2, 0x5, 0x77, 0x800, 0x10, 0x1800);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_NONE);
	/* IRD 2: the third waits for a response to be sent. */
	n = mk_read_req(u, 3, 0x5, 0x77, 1, 0x10, 0x1000);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_RDMAP_IRD_EXCEEDED);
	assert_int_equal(swiw_ddp_rx_ird_release(&rx), 0);
	/* Source and sink checks, RDMAP codes. */
	n = mk_read_req(u, 3, 0x5, 0x77, 1, 0x99, 0x1000);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_RDMAP_INVALID_STAG);
	n = mk_read_req(u, 3, 0x5, 0x77, 1, 0x12, 0x1000);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_RDMAP_STAG_NOT_ASSOC);
	n = mk_read_req(u, 3, 0x5, 0x77, 1, 0x11, 0x1000);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_RDMAP_ACCESS_RIGHTS);
	n = mk_read_req(u, 3, 0x5, 0x77, 0x801, 0x10, 0x1800);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_RDMAP_BASE_BOUNDS);
	n = mk_read_req(u, 3, 0x5, 0x77, 2, 0x10, ~0ULL);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_RDMAP_TO_WRAP);
	n = mk_read_req(u, 3, 0x5, ~0ULL - 1, 2, 0x10, 0x1000);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_NONE);
	n = mk_read_req(u, 4, 0x5, ~0ULL - 1, 3, 0x10, 0x1000);
	assert_int_equal(swiw_ddp_rx_ird_release(&rx), 0);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_RDMAP_TO_WRAP);
	/* Nothing failed changed the state. */
	assert_int_equal(rx.q[1].msn, 4);
	assert_int_equal(rx.ird_used, 1);
	assert_int_equal(swiw_ddp_rx_ird_release(&rx), 0);
	assert_int_equal(swiw_ddp_rx_ird_release(&rx), -EINVAL);
	/* Malformed: payload after the body, L clear, MO not 0. */
	n = mk_read_req(u, 4, 0x5, 0x77, 1, 0x10, 0x1000);
	assert_int_equal(feed(&rx, u, n + 1, &d), SWIW_V_RDMAP_MALFORMED);
	u[0] &= (u8)~0x40;
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_RDMAP_MALFORMED);
	n = mk_read_req(u, 4, 0x5, 0x77, 1, 0x10, 0x1000);
	wr32(u + 14, 4);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_RDMAP_MALFORMED);
	assert_int_equal(feed(&rx, u, n - 1, &d), SWIW_V_RDMAP_MALFORMED);
	fake_free(&fm);
}

static void test_tagged_checks(void **state)
{
	struct swiw_ddp_rx rx;
	struct fake_mem fm;
	struct swiw_ddp_dest d;
	u8 u[256], p[64];
	u32 n;

	(void)state;
	memset(&fm, 0, sizeof(fm));
	fill(p, sizeof(p));
	fake_add_region(&fm, 0x20, 0x1000, 64, SWIW_ACC_REMOTE_WRITE);
	fake_add_region(&fm, 0x21, 0x1000, 64, SWIW_ACC_REMOTE_READ);
	fake_add_region(&fm, 0x22, 0x1000, 64, SWIW_ACC_REMOTE_WRITE)->assoc =
		false;
	fake_add_region(&fm, 0x23, ~0ULL - 63, 64, SWIW_ACC_REMOTE_WRITE);
	rx_on(&rx, &fm, SWIW_DDP_RX_ORDERED, 0);

	n = mk_tagged(u, RDMAP_WRITE, true, 0x99, 0x1000, p, 8);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_DDP_T_INVALID_STAG);
	n = mk_tagged(u, RDMAP_WRITE, true, 0x22, 0x1000, p, 8);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_DDP_T_STAG_NOT_ASSOC);
	n = mk_tagged(u, RDMAP_WRITE, true, 0x21, 0x1000, p, 8);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_DDP_T_ACCESS);
	n = mk_tagged(u, RDMAP_WRITE, true, 0x20, 0xfff, p, 8);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_DDP_T_BASE_BOUNDS);
	n = mk_tagged(u, RDMAP_WRITE, true, 0x20, 0x1039, p, 8);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_DDP_T_BASE_BOUNDS);
	n = mk_tagged(u, RDMAP_WRITE, true, 0x23, ~0ULL - 6, p, 8);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_DDP_T_TO_WRAP);
	n = mk_tagged(u, RDMAP_WRITE, true, 0x23, ~0ULL - 7, p, 8);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_NONE);
	assert_int_equal(d.offset, 56);
	n = mk_tagged(u, RDMAP_WRITE, true, 0x20, 0x1038, p, 8);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_NONE);
	assert_int_equal(fake_place(&d, u + 14), 0);

	/* Ordered: a tagged message continues its STag and TO. */
	n = mk_tagged(u, RDMAP_WRITE, false, 0x20, 0x1000, p, 8);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_NONE);
	n = mk_tagged(u, RDMAP_WRITE, true, 0x23, 0x1008, p, 8);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_DDP_T_INVALID_STAG);
	n = mk_tagged(u, RDMAP_WRITE, true, 0x20, 0x1010, p, 8);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_DDP_T_BASE_BOUNDS);
	n = mk_tagged(u, RDMAP_READ_RESP, true, 0x20, 0x1008, p, 8);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_RDMAP_OPCODE);
	n = mk_tagged(u, RDMAP_WRITE, true, 0x20, 0x1008, p, 8);
	assert_int_equal(feed(&rx, u, n, &d), SWIW_V_NONE);
	assert_false(rx.t_open);
	fake_free(&fm);
}

static void test_send_inval_surfaced(void **state)
{
	struct swiw_ddp_rx rx;
	struct fake_mem fm;
	struct swiw_ddp_seg seg;
	struct swiw_ddp_dest d;
	enum swiw_violation v;
	u8 u[64], p[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	u32 n;

	(void)state;
	memset(&fm, 0, sizeof(fm));
	fake_add_rbuf(&fm, 0, 1, 8, false);
	rx_on(&rx, &fm, SWIW_DDP_RX_ORDERED, 0);
	n = mk_untagged(u, RDMAP_SEND_INVAL, true, 0xc0ffee01, 0, 1, 0, p, 8);
	assert_int_equal(swiw_ddp_rx_segment(&rx, u, n, &seg, &d, &v), 0);
	assert_int_equal(seg.rsvd_ulp, 0xc0ffee01);
	assert_true(seg.op->flags & SWIW_OPF_INVAL);
	assert_true(d.complete);
	fake_free(&fm);
}

static void test_progress(void **state)
{
	struct swiw_ddp_progress p;

	(void)state;
	swiw_ddp_progress_init(&p);
	assert_int_equal(swiw_ddp_progress_add(&p, 10, 10, false), 0);
	assert_int_equal(swiw_ddp_progress_add(&p, 20, 5, true), 0);
	/* A second L, one short of what is placed, one beyond the end. */
	assert_int_equal(swiw_ddp_progress_add(&p, 20, 5, true), -ERANGE);
	assert_int_equal(swiw_ddp_progress_add(&p, 24, 2, false), -ERANGE);
	assert_int_equal(swiw_ddp_progress_add(&p, 0, 10, false), 1);
	assert_int_equal(swiw_ddp_progress_add(&p, 0, 1, false), -ERANGE);

	swiw_ddp_progress_init(&p);
	assert_int_equal(swiw_ddp_progress_add(&p, 0, 8, false), 0);
	assert_int_equal(swiw_ddp_progress_add(&p, 0, 8, false), 0);
	assert_int_equal(swiw_ddp_progress_add(&p, 8, 4, true), -ERANGE);
	assert_int_equal(swiw_ddp_progress_add(&p, ~0ULL - 2, 4, false),
			 -ERANGE);

	/* Preset: L must end exactly at the expected total. */
	swiw_ddp_progress_expect(&p, 0x100, 16);
	assert_int_equal(swiw_ddp_progress_add(&p, 0, 8, false), 0);
	assert_int_equal(swiw_ddp_progress_add(&p, 8, 9, true), -ERANGE);
	assert_int_equal(swiw_ddp_progress_add(&p, 8, 4, true), -ERANGE);
	assert_int_equal(swiw_ddp_progress_add(&p, 8, 8, true), 1);

	swiw_ddp_progress_init(&p);
	assert_int_equal(swiw_ddp_progress_add(&p, 0, 0, true), 1);
}

static void test_parse_basics(void **state)
{
	struct swiw_ddp_seg seg;
	enum swiw_violation v;
	u8 u[128];
	u32 n;

	(void)state;
	memset(u, 0, sizeof(u));
	assert_int_equal(swiw_ddp_parse(u, 1, 0, &seg, &v), -EPROTO);
	assert_int_equal(v, SWIW_V_DDP_RESERVED);
	assert_int_equal(swiw_ddp_parse(NULL, 4, 0, &seg, &v), -EINVAL);
	/* DV 2, tagged and untagged. */
	n = mk_tagged(u, RDMAP_WRITE, true, 1, 0, NULL, 0);
	u[0] = (u8)((u[0] & ~3) | 2);
	assert_int_equal(swiw_ddp_parse(u, n, 0, &seg, &v), -EPROTO);
	assert_int_equal(v, SWIW_V_DDP_VERSION);
	n = mk_untagged(u, RDMAP_SEND, true, 0, 0, 1, 0, NULL, 0);
	u[0] = (u8)((u[0] & ~3) | 0);
	assert_int_equal(swiw_ddp_parse(u, n, 0, &seg, &v), -EPROTO);
	assert_int_equal(v, SWIW_V_DDP_UT_VERSION);
	/* Short of its DDP header. */
	n = mk_untagged(u, RDMAP_SEND, true, 0, 0, 1, 0, NULL, 0);
	assert_int_equal(swiw_ddp_parse(u, 17, 0, &seg, &v), -EPROTO);
	assert_int_equal(v, SWIW_V_DDP_RESERVED);
	/* RV 0, opcode 12, opcode 8 without RFC 7306, T mismatch. */
	u[1] = RDMAP_SEND;
	assert_int_equal(swiw_ddp_parse(u, n, 0, &seg, &v), -EPROTO);
	assert_int_equal(v, SWIW_V_RDMAP_VERSION);
	u[1] = 0x40 | 12;
	assert_int_equal(swiw_ddp_parse(u, n, 0, &seg, &v), -EPROTO);
	assert_int_equal(v, SWIW_V_RDMAP_OPCODE);
	u[1] = 0x40 | RDMAP_IMM_DATA;
	assert_int_equal(swiw_ddp_parse(u, n + 8, 0, &seg, &v), -EPROTO);
	assert_int_equal(v, SWIW_V_RDMAP_OPCODE);
	assert_int_equal(
		swiw_ddp_parse(u, n + 8, SWIW_DDP_RX_RFC7306, &seg, &v), 0);
	u[1] = 0x40 | RDMAP_WRITE;
	assert_int_equal(swiw_ddp_parse(u, n, 0, &seg, &v), -EPROTO);
	assert_int_equal(v, SWIW_V_RDMAP_OPCODE);
	/* QN wrong for the opcode. */
	n = mk_untagged(u, RDMAP_SEND, true, 0, 1, 1, 0, NULL, 0);
	assert_int_equal(swiw_ddp_parse(u, n, 0, &seg, &v), -EPROTO);
	assert_int_equal(v, SWIW_V_DDP_UT_INVALID_QN);
	/* Reserved bits: ignored unless strict. */
	n = mk_untagged(u, RDMAP_SEND, true, 0x1234, 0, 1, 0, NULL, 0);
	u[0] |= 0x04;
	u[1] |= 0x10;
	assert_int_equal(swiw_ddp_parse(u, n, 0, &seg, &v), 0);
	assert_int_equal(swiw_ddp_parse(u, n, SWIW_DDP_RX_STRICT, &seg, &v),
			 -EPROTO);
	assert_int_equal(v, SWIW_V_DDP_RESERVED);
	/* An untagged message past 2^32 octets. */
	n = mk_untagged(u, RDMAP_SEND, true, 0, 0, 1, 0xfffffff0, u, 17);
	assert_int_equal(swiw_ddp_parse(u, n, 0, &seg, &v), -EPROTO);
	assert_int_equal(v, SWIW_V_DDP_UT_INVALID_MO);
	n = mk_untagged(u, RDMAP_SEND, true, 0, 0, 1, 0xfffffff0, u, 16);
	assert_int_equal(swiw_ddp_parse(u, n, 0, &seg, &v), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_segment_lengths),
		cmocka_unit_test(test_segment_limits),
		cmocka_unit_test(test_shuffled_placement),
		cmocka_unit_test(test_msn_ordered),
		cmocka_unit_test(test_msn_unordered),
		cmocka_unit_test(test_zero_length_and_rtr),
		cmocka_unit_test(test_read_request),
		cmocka_unit_test(test_tagged_checks),
		cmocka_unit_test(test_send_inval_surfaced),
		cmocka_unit_test(test_progress),
		cmocka_unit_test(test_parse_basics),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
