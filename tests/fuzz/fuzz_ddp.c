// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target for the DDP/RDMAP receive path and TERMINATE.
 *
 * Input: byte 0 picks the receive mode (ordered, RFC 7306, strict) and
 * what else runs, byte 1 the IRD and buffer sizes, byte 2 a MULPDU; the
 * rest is a stream of DDP segments, each behind a 2-octet length. Each
 * segment goes to the validator against a fake memory of a few regions
 * and posted receives; accepted payload is written into that memory (an
 * escape aborts), a violation turns into a TERMINATE that must build and
 * parse back, and the stream stops there as the engine's would. Every
 * segment is also read as a TERMINATE, rebuilt and read again. With bit
 * 0x08 the input instead describes a message that the transmitter cuts
 * and the receiver must accept whole.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../wire/ddp_fake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                 \
	do {                     \
		if (!(c))        \
			abort(); \
	} while (0)

/* A TERMINATE read from @p must rebuild into the same message. */
static void term_round_trip(const u8 *p, u32 len)
{
	struct swiw_term t, t2;
	u8 out[SWIW_TERM_MAX_LEN];
	int rc = swiw_term_parse(p, len, &t), n;

	if (rc == -EBADMSG)
		return;
	CHECK(rc == 0 || rc == -EMSGSIZE);
	n = swiw_term_build(&t, out, sizeof(out));
	CHECK(n >= (int)SWIW_TERM_MIN_LEN && n <= (int)SWIW_TERM_MAX_LEN);
	CHECK(swiw_term_parse(out, (u32)n, &t2) == 0);
	CHECK(!memcmp(&t, &t2, sizeof(t)));
	if (rc)
		return;
	/* Canonical input: equal octets but for what is not checked. */
	CHECK((u32)n == len);
	CHECK((p[0] & ~0x3c) == out[0] && (p[1] & ~0x30) == out[1]);
	CHECK(!memcmp(p + 6, out + 6, 14));
	CHECK((p[20] & 0xe0) == out[20]);
	CHECK(!memcmp(p + 22, out + 22, len - 22));
}

/* The TERMINATE for @v on @seg must build, parse, and keep its code. */
static void term_for(enum swiw_violation v, const u8 *seg, u32 len)
{
	const struct swiw_violation_info *vi = swiw_violation_info(v);
	struct swiw_term t, back;
	u8 out[SWIW_TERM_MAX_LEN];
	int n;

	CHECK(vi && v != SWIW_V_NONE);
	n = swiw_term_from_violation(v, seg, len, &t);
	if (n == -EPERM) {
		/* Only a TERMINATE at fault in DDP or RDMAP goes unanswered. */
		CHECK(vi->layer != TERM_LAYER_LLP && len >= 2 &&
		      !(seg[0] & 0x80) && (seg[1] & 0x0f) == RDMAP_TERMINATE);
		return;
	}
	CHECK(n == 0);
	n = swiw_term_build(&t, out, sizeof(out));
	CHECK(n > 0);
	CHECK(swiw_term_parse(out, (u32)n, &back) == 0);
	CHECK(back.layer == vi->layer && back.etype == vi->etype &&
	      back.ecode == vi->ecode);
	CHECK(swiw_term_peer_status(back.layer, back.etype, back.ecode) ==
	      vi->peer_status);
}

static void setup_mem(struct fake_mem *fm, u8 sizes,
		      struct swiw_ddp_progress *read)
{
	u64 blen = 1 + (sizes & 0x7) * 300;
	u32 i;

	memset(fm, 0, sizeof(*fm));
	fake_add_region(fm, 0x100, 0x1000, 4096,
			SWIW_ACC_REMOTE_WRITE | SWIW_ACC_REMOTE_READ |
				SWIW_ACC_REMOTE_ATOMIC);
	fake_add_region(fm, 0x200, 0, 64, SWIW_ACC_REMOTE_READ);
	fake_add_region(fm, 0x300, ~0ULL - 255, 256,
			SWIW_ACC_REMOTE_WRITE | SWIW_ACC_REMOTE_ATOMIC);
	fake_add_region(fm, 0x400, 0x1000, 512, SWIW_ACC_REMOTE_WRITE)->assoc =
		false;
	/* Our READ's sink: 1000 octets at TO 0x8000. */
	swiw_ddp_progress_expect(read, 0x8000, 1000);
	fake_add_region(fm, 0x500, 0x8000, 1000, SWIW_ACC_LOCAL_WRITE)
		->progress = read;
	for (i = 1; i <= 8; i++)
		fake_add_rbuf(fm, 0, i, blen + i, sizes & 0x8 ? i & 1 : true);
	fake_add_rbuf(fm, 3, 1, 8, true);
	fake_add_rbuf(fm, 3, 2, 4, true);
}

/* Feeds the length-prefixed segments of @p to a receiver. */
static void rx_stream(const u8 *p, size_t size, u8 mode, u8 sizes)
{
	struct swiw_ddp_progress read;
	struct swiw_ddp_rx rx;
	struct fake_mem fm;
	u32 flags = mode & 0x7;

	setup_mem(&fm, sizes, &read);
	CHECK(swiw_ddp_rx_init(&rx, &fake_ops, &fm, flags, sizes >> 4) == 0);
	while (size >= 2) {
		u32 len = (u32)p[0] << 8 | p[1];
		struct swiw_ddp_seg seg;
		struct swiw_ddp_dest d;
		enum swiw_violation v = SWIW_V_COUNT;
		u8 *hdr;
		u32 hlen;
		int rc;

		p += 2;
		size -= 2;
		if (len > size)
			len = (u32)size;
		term_round_trip(p, len);
		/* The validator reads the header and nothing beyond: give
		 * it an exact-size copy of at most SWIW_DDP_HDR_MAX octets. */
		hlen = len < SWIW_DDP_HDR_MAX ? len : SWIW_DDP_HDR_MAX;
		hdr = malloc(hlen ? hlen : 1);
		CHECK(hdr);
		memcpy(hdr, p, hlen);
		rc = swiw_ddp_rx_segment(&rx, hdr, len, &seg, &d, &v);
		free(hdr);
		if (rc) {
			CHECK(rc == -EPROTO && v > SWIW_V_NONE &&
			      v < SWIW_V_COUNT);
			term_for(v, p, len);
			break; /* the stream ends with its TERMINATE */
		}
		CHECK(v == SWIW_V_NONE);
		CHECK(seg.hdr_len + seg.payload_len == len);
		if (d.action == SWIW_DDP_PLACE)
			CHECK(d.len == (d.handle ? seg.payload_len : 0));
		fake_place(&d, p + seg.hdr_len);
		if ((d.action == SWIW_DDP_READ_REQ ||
		     d.action == SWIW_DDP_ATOMIC_REQ) &&
		    (mode & 0x40))
			CHECK(swiw_ddp_rx_ird_release(&rx) == 0);
		CHECK(rx.ird_used <= rx.ird);
		p += len;
		size -= len;
	}
	fake_free(&fm);
}

/* Cuts a message the input describes; the receiver takes all of it. */
static void tx_to_rx(const u8 *p, size_t size, u8 mode, u32 mulpdu)
{
	static const u8 ops[] = { RDMAP_WRITE,	       RDMAP_SEND,
				  RDMAP_SEND_INVAL,    RDMAP_SEND_SE,
				  RDMAP_SEND_SE_INVAL, RDMAP_READ_REQ };
	struct swiw_ddp_progress read;
	struct swiw_rdmap_msg m;
	struct swiw_ddp_tx tx;
	struct swiw_ddp_txseg s;
	struct swiw_ddp_rx rx;
	struct fake_mem fm;
	u8 ulpdu[65536];
	u32 total = 0;
	bool ordered = mode & 0x1;
	int rc;

	if (size < 4)
		return;
	memset(&m, 0, sizeof(m));
	m.opcode = ops[p[0] % sizeof(ops)];
	m.len = (u32)(p[1] << 8 | p[2]) % 4097;
	m.msn = 1;
	m.stag = 0x100;
	m.to = 0x1000;
	m.inval_stag = p[3];
	if (m.opcode == RDMAP_READ_REQ) {
		m.len = 0;
		m.u.rreq.size = (u32)(p[1] << 8 | p[2]) % 4097;
		m.u.rreq.src_stag = 0x100;
		m.u.rreq.src_to = 0x1000;
	}
	setup_mem(&fm, 0x8, &read);
	/* MSN 1 takes any Send cut here. */
	free(fm.b[0].mem);
	fm.b[0].mem = calloc(1, 4096);
	CHECK(fm.b[0].mem);
	fm.b[0].len = 4096;
	CHECK(swiw_ddp_rx_init(&rx, &fake_ops, &fm,
			       ordered ? SWIW_DDP_RX_ORDERED : 0, 1) == 0);
	CHECK(swiw_ddp_tx_init(&tx, &m) == 0);
	while ((rc = swiw_ddp_tx_next(&tx, mulpdu, ulpdu, SWIW_DDP_HDR_MAX,
				      &s)) == 1) {
		struct swiw_ddp_seg seg;
		struct swiw_ddp_dest d;
		enum swiw_violation v;

		CHECK(s.hdr_len + s.payload_len <= mulpdu);
		CHECK(s.payload_off == total);
		memset(ulpdu + s.hdr_len, 0xa5, s.payload_len);
		CHECK(swiw_ddp_rx_segment(&rx, ulpdu, s.hdr_len + s.payload_len,
					  &seg, &d, &v) == 0);
		fake_place(&d, ulpdu + seg.hdr_len);
		CHECK(d.complete == s.last || m.opcode == RDMAP_WRITE);
		total += s.payload_len;
	}
	CHECK(rc == 0 || rc == -EMSGSIZE);
	if (rc == 0)
		CHECK(total == m.len);
	fake_free(&fm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	u8 mode, sizes;
	u32 mulpdu;

	if (size < 3)
		return 0;
	mode = data[0];
	sizes = data[1];
	mulpdu = 14 + (u32)data[2] * 64;
	if (mode & 0x08)
		tx_to_rx(data + 3, size - 3, mode, mulpdu);
	else
		rx_stream(data + 3, size - 3, mode, sizes);
	return 0;
}
