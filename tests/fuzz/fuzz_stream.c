// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The receive path as the engine drives it, end to end: stream octets in
 * fuzzer-chosen pieces → the deframer's pull interface → DDP/RDMAP
 * validation of each FPDU's head → payload placed into (fake) registered
 * memory as it arrives, never past what validation allowed → the CRC
 * verdict → a TERMINATE built and parsed back for any violation.
 *
 * Input: flags (bit 0 markers, 1 CRC, 2 ordered placement, 3 RFC 7306,
 * 4 strict reserved bits), a piece-size seed, then the stream.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../wire/ddp_fake.h"
#include "swiw_ddp.h"
#include "swiw_fpdu.h"
#include "swiw_term.h"

struct placement {
	struct swiw_ddp_dest dst;
	struct swiw_ddp_seg seg;
	bool valid; /* this FPDU passed validation */
	u32 placed; /* payload octets placed so far */
};

static void check_term(enum swiw_violation v, const u8 *head, u32 head_len)
{
	struct swiw_term t, back;
	u8 buf[SWIW_TERM_MAX_LEN];
	int n;

	if (swiw_term_from_violation(v, head, head_len, &t))
		return; /* a row that sends no TERMINATE */
	n = swiw_term_build(&t, buf, sizeof(buf));
	if (n < 0)
		abort();
	if (swiw_term_parse(buf, (u32)n, &back) || back.layer != t.layer ||
	    back.etype != t.etype || back.ecode != t.ecode)
		abort(); /* what we would send must read back as sent */
}

/* Places @len payload octets that sit at ULPDU offset @off. */
static void place(struct placement *p, u32 off, const u8 *data, u32 len)
{
	u32 rel;

	if (!p->valid || p->dst.action != SWIW_DDP_PLACE || !p->dst.handle)
		return;
	if (off < p->seg.hdr_len || off - p->seg.hdr_len + len > p->dst.len)
		abort(); /* the deframer and the validator disagree */
	rel = off - p->seg.hdr_len;
	p->dst.offset += rel;
	p->dst.len -= rel;
	{
		struct swiw_ddp_dest d = p->dst;

		d.len = len;
		fake_place(&d, data); /* aborts outside the region */
	}
	p->dst.offset -= rel;
	p->dst.len += rel;
	p->placed += len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fake_mem fm;
	struct swiw_fpdu_rx_cfg cfg = { 0 };
	struct swiw_fpdu_rx frx;
	struct swiw_ddp_rx drx;
	struct placement p = { 0 };
	u32 flags, ddp_flags = 0, seed;
	size_t pos = 2;
	int i;

	if (size < 2)
		return 0;
	flags = data[0];
	seed = data[1] * 2654435761u + 1;
	cfg.markers = flags & 1;
	cfg.crc = flags & 2;
	cfg.min_ulpdu = SWIW_FPDU_MIN_ULPDU;
	cfg.peek = SWIW_FPDU_PEEK_MAX;
	if (flags & 4)
		ddp_flags |= SWIW_DDP_RX_ORDERED;
	if (flags & 8)
		ddp_flags |= SWIW_DDP_RX_RFC7306;
	if (flags & 16)
		ddp_flags |= SWIW_DDP_RX_STRICT;

	memset(&fm, 0, sizeof(fm));
	fake_add_region(&fm, 0x100, 0x1000, 4096,
			SWIW_ACC_LOCAL_WRITE | SWIW_ACC_REMOTE_WRITE |
				SWIW_ACC_REMOTE_READ | SWIW_ACC_REMOTE_ATOMIC);
	fake_add_region(&fm, 0x200, 0, 64, SWIW_ACC_REMOTE_READ);
	fake_add_region(&fm, 0x300, ~0ULL - 100, 100, SWIW_ACC_REMOTE_WRITE);
	for (i = 1; i <= 8; i++)
		fake_add_rbuf(&fm, 0, (u32)i, i * 300, i & 1);
	fake_add_rbuf(&fm, 3, 1, 8, false);
	if (swiw_fpdu_rx_init(&frx, &cfg) ||
	    swiw_ddp_rx_init(&drx, &fake_ops, &fm, ddp_flags, 4))
		abort();

	while (pos < size) {
		struct swiw_fpdu_rx_step step;
		unsigned int ev = 0;
		u32 n;

		if (swiw_fpdu_rx_next(&frx, &step))
			break; /* the deframer failed: checked below */
		seed = seed * 1103515245u + 12345u;
		n = 1 + (seed >> 16) % 97;
		n = SWIW_MIN(n, step.len);
		n = (u32)SWIW_MIN((size_t)n, size - pos);
		if (step.kind == SWIW_FPDU_RX_BUFFERED) {
			memcpy(step.buf, data + pos, n);
			if (swiw_fpdu_rx_advance(&frx, NULL, n, &ev))
				break;
		} else {
			/* Received "in place": straight into the region. */
			place(&p, step.off, data + pos, n);
			if (swiw_fpdu_rx_advance(&frx, data + pos, n, &ev))
				break;
		}
		pos += n;
		if (ev & SWIW_FPDU_EV_HDR) {
			enum swiw_violation v = SWIW_V_NONE;
			const u8 *head;
			u32 hlen, ulen = swiw_fpdu_rx_ulpdu_len(&frx);

			head = swiw_fpdu_rx_hdr(&frx, &hlen);
			memset(&p, 0, sizeof(p));
			if (swiw_ddp_rx_segment(&drx, head, ulen, &p.seg,
						&p.dst, &v)) {
				if (v <= SWIW_V_NONE || v >= SWIW_V_COUNT)
					abort();
				check_term(v, head, hlen);
				break; /* the stream ends with the TERMINATE */
			}
			p.valid = true;
			if (p.seg.hdr_len > hlen || p.seg.len != ulen)
				abort();
			/* Head octets past the header are payload too. */
			if (hlen > p.seg.hdr_len)
				place(&p, p.seg.hdr_len, head + p.seg.hdr_len,
				      hlen - p.seg.hdr_len);
			if (p.dst.action == SWIW_DDP_READ_REQ ||
			    p.dst.action == SWIW_DDP_ATOMIC_REQ)
				swiw_ddp_rx_ird_release(&drx);
		}
		if ((ev & SWIW_FPDU_EV_END) && p.valid &&
		    p.dst.action == SWIW_DDP_PLACE && p.dst.handle &&
		    p.placed != p.seg.payload_len)
			abort(); /* every payload octet placed, once */
	}
	if (swiw_fpdu_rx_violation(&frx) != SWIW_V_NONE)
		check_term(swiw_fpdu_rx_violation(&frx), NULL, 0);
	fake_free(&fm);
	return 0;
}
