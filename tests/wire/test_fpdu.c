// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MPA framing: the transmit framer against a reference built here octet
 * by octet (bitwise CRC, markers placed by stream offset); FPDUPTR of
 * every marker in multi-FPDU streams; transmit-to-receive round trips;
 * the deframer fed split at every octet boundary, as single octets, in
 * random chunks and through its pull interface; each violation; MULPDU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "swiw_fpdu.h"
#include "wire_test.h"

#define STREAM_MAX (1 << 20)
#define MAX_FPDUS 512

/* CRC32c bit by bit: shares nothing with the code under test. */
static u32 ref_crc32c(const u8 *p, size_t n)
{
	u32 crc = 0xffffffffu;
	int k;

	while (n--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
	}
	return ~crc;
}

/*
 * The reference FPDU, octet by octet: content (length, ULPDU, pad) laid
 * down one octet at a time, a marker first wherever the stream offset is
 * a multiple of 512, then the CRC of everything so far, LSB first.
 */
static u32 ref_fpdu(const u8 *ulpdu, u32 len, u32 pos, bool markers, bool crc,
		    u8 *out)
{
	static u8 content[2 + 65535 + 3];
	bool lead = markers && pos % 512 == 0;
	u32 nc = 0, o = 0, i, c, ptr;

	content[nc++] = (u8)(len >> 8);
	content[nc++] = (u8)len;
	memcpy(content + nc, ulpdu, len);
	nc += len;
	while (nc % 4)
		content[nc++] = 0;
	for (i = 0; i <= nc; i++) {
		if (markers && (pos + o) % 512 == 0) {
			ptr = o == 0 ? 0 : o - (lead ? 4 : 0);
			out[o++] = 0;
			out[o++] = 0;
			out[o++] = (u8)(ptr >> 8);
			out[o++] = (u8)ptr;
		}
		if (i < nc)
			out[o++] = content[i];
	}
	c = crc ? ref_crc32c(out, o) : 0;
	for (i = 0; i < 4; i++) {
		assert_true(i == 0 || !markers || (pos + o) % 512);
		out[o++] = (u8)(c >> (8 * i));
	}
	return o;
}

/*
 * Frames @len octets at @ulpdu, cut into @np pieces (some perhaps empty),
 * and gathers the frame into @out. Checks the frame references the ULPDU
 * rather than copying it. Returns the FPDU's length.
 */
static u32 tx_frame(struct swiw_fpdu_tx *tx, const u8 *ulpdu, u32 len, u32 np,
		    u8 *out)
{
	static struct swiw_fpdu_frame f;
	struct swiw_iov in[8], iov[8 + 2 + 2 * SWIW_FPDU_MAX_MARKERS];
	u32 cut[8], i, o = 0;
	const u8 *b;

	assert_true(np >= 1 && np <= 8);
	for (i = 0; i + 1 < np; i++)
		cut[i] = len ? rnd() % (len + 1) : 0;
	cut[np - 1] = len;
	for (i = 1; i < np; i++) /* sort: few elements */
		for (o = i; o > 0 && cut[o - 1] > cut[o]; o--) {
			u32 t = cut[o];

			cut[o] = cut[o - 1];
			cut[o - 1] = t;
		}
	for (i = 0, o = 0; i < np; i++) {
		in[i].base = ulpdu + o;
		in[i].len = cut[i] - o;
		o = cut[i];
	}
	f.iov = iov;
	f.max_iov = swiw_fpdu_tx_max_iov(np, len, tx->markers);
	assert_true(f.max_iov <= SWIW_ARRAY_SIZE(iov));
	assert_int_equal(swiw_fpdu_tx_build(tx, in, np, &f), 0);
	for (i = 0, o = 0; i < f.n_iov; i++) {
		b = iov[i].base;
		assert_true(iov[i].len > 0);
		assert_true((b >= ulpdu && b + iov[i].len <= ulpdu + len) ||
			    (b >= f.own &&
			     b + iov[i].len <= f.own + sizeof(f.own)));
		memcpy(out + o, b, iov[i].len);
		o += (u32)iov[i].len;
	}
	assert_int_equal(o, f.len);
	return o;
}

static void check_one(u32 len, u32 pos, bool markers, bool crc, const u8 *data)
{
	static u8 got[70000], want[70000];
	struct swiw_fpdu_tx tx = { .pos = pos, .markers = markers, .crc = crc };
	u32 n, r;

	n = tx_frame(&tx, data, len, 1 + rnd() % 4, got);
	r = ref_fpdu(data, len, pos, markers, crc, want);
	assert_int_equal(n, r);
	assert_memory_equal(got, want, n);
	assert_int_equal(tx.pos, pos + n);
	assert_int_equal(swiw_mpa_fpdu_len(len, pos, markers), n);
	if (!crc) /* CRC off: the field is sent as zeros */
		assert_int_equal(
			got[n - 1] | got[n - 2] | got[n - 3] | got[n - 4], 0);
}

/* Every ULPDU size to 4100, each configuration, all marker phases. */
static void test_tx_sizes(void **state)
{
	static u8 data[65535];
	u32 len, cfg, pos;

	(void)state;
	fill(data, sizeof(data));
	for (cfg = 0; cfg < 4; cfg++)
		for (len = 0; len <= 4100; len++) {
			/* 92 / 4 is odd: the phase runs through all 128. */
			pos = (len * 92) & 511;
			check_one(len, pos + 4096 * (len % 3), cfg & 1, cfg & 2,
				  data);
		}
}

/* A few sizes at every 4-aligned stream phase, and the largest ones. */
static void test_tx_phases(void **state)
{
	static const u32 lens[] = { 0,	 1,    14,   46,   47,	 500,
				    502, 503,  504,  505,  506,	 507,
				    508, 1010, 1442, 4096, 8870, 64962 };
	static u8 data[65535];
	u32 i, pos, cfg;

	(void)state;
	fill(data, sizeof(data));
	for (i = 0; i < SWIW_ARRAY_SIZE(lens); i++)
		for (pos = 0; pos < 512; pos += 4)
			for (cfg = 0; cfg < 4; cfg++)
				check_one(lens[i], pos, cfg & 1, cfg & 2, data);
	check_one(65535, 0, false, true, data);
}

static void test_tx_errors(void **state)
{
	static u8 data[65536];
	static struct swiw_fpdu_frame f;
	struct swiw_iov in[2] = { { data, 65535 }, { data, 1 } };
	struct swiw_iov iov[300];
	struct swiw_fpdu_tx tx = { .pos = 0, .markers = true, .crc = true };

	(void)state;
	f.iov = iov;
	f.max_iov = SWIW_ARRAY_SIZE(iov);
	/* 65536 octets do not fit ULPDU_LENGTH. */
	assert_int_equal(swiw_fpdu_tx_build(&tx, in, 2, &f), -EMSGSIZE);
	/* 65535 with markers: the last FPDUPTR would exceed 16 bits. */
	assert_int_equal(swiw_fpdu_tx_build(&tx, in, 1, &f), -EMSGSIZE);
	/* Markers need a 4-aligned stream offset. */
	tx.pos = 2;
	in[0].len = 100;
	assert_int_equal(swiw_fpdu_tx_build(&tx, in, 1, &f), -EINVAL);
	/* Too few output pieces. */
	tx.pos = 0;
	f.max_iov = swiw_fpdu_tx_max_iov(1, 100, true) - 1;
	assert_int_equal(swiw_fpdu_tx_build(&tx, in, 1, &f), -ENOSPC);
	assert_int_equal(tx.pos, 0); /* nothing moved */
	f.max_iov = swiw_fpdu_tx_max_iov(1, 100, true);
	assert_int_equal(swiw_fpdu_tx_build(&tx, in, 1, &f), 0);
	assert_int_equal(tx.pos, f.len);
	/* No markers: 65535 is fine, at any offset. */
	tx.markers = false;
	tx.pos = 2;
	in[0].len = 65535;
	assert_int_equal(swiw_fpdu_tx_build(&tx, in, 1, &f), 0);
	assert_int_equal(f.len, 2 + 65535 + 3 + 4);
}

/*
 * MULPDU (RFC 5044 §4.5), by hand:
 *   EMSS 1460 (Ethernet, IPv4, no options): 1460 mod 4 = 0,
 *     ceil(1460/512) = 3: with markers 1460 - (6 + 12 + 0) = 1442,
 *     without 1460 - 6 = 1454.
 *   EMSS 1448 (timestamps): 3 markers: 1448 - 18 = 1430; 1442 without.
 *   EMSS 1461: mod 4 = 1: 1461 - (6 + 12 + 1) = 1442; 1461 - 7 = 1454.
 *   EMSS 8948 (9000 MTU): ceil = 18: 8948 - (6 + 72) = 8870; 8942.
 *   EMSS 65483 (loopback): mod 4 = 3, ceil = 128:
 *     65483 - (6 + 512 + 3) = 64962; 65483 - 9 = 65474.
 *   EMSS 512: 512 - (6 + 4) = 502; 506. EMSS 513: ceil = 2, mod 4 = 1:
 *     513 - (6 + 8 + 1) = 498; 513 - 7 = 506.
 *   EMSS 8: 8 - 6 = 2 without markers; with, 6 + 4 >= 8: nothing fits.
 */
static void test_mulpdu(void **state)
{
	u32 emss, pos, mul;

	(void)state;
	assert_int_equal(swiw_mpa_mulpdu(1460, true), 1442);
	assert_int_equal(swiw_mpa_mulpdu(1460, false), 1454);
	assert_int_equal(swiw_mpa_mulpdu(1448, true), 1430);
	assert_int_equal(swiw_mpa_mulpdu(1448, false), 1442);
	assert_int_equal(swiw_mpa_mulpdu(1461, true), 1442);
	assert_int_equal(swiw_mpa_mulpdu(1461, false), 1454);
	assert_int_equal(swiw_mpa_mulpdu(8948, true), 8870);
	assert_int_equal(swiw_mpa_mulpdu(8948, false), 8942);
	assert_int_equal(swiw_mpa_mulpdu(65483, true), 64962);
	assert_int_equal(swiw_mpa_mulpdu(65483, false), 65474);
	assert_int_equal(swiw_mpa_mulpdu(512, true), 502);
	assert_int_equal(swiw_mpa_mulpdu(512, false), 506);
	assert_int_equal(swiw_mpa_mulpdu(513, true), 498);
	assert_int_equal(swiw_mpa_mulpdu(513, false), 506);
	assert_int_equal(swiw_mpa_mulpdu(8, false), 2);
	assert_int_equal(swiw_mpa_mulpdu(8, true), 0);
	assert_int_equal(swiw_mpa_mulpdu(0, false), 0);
	assert_int_equal(swiw_mpa_mulpdu(200000, false), 65535);
	/* An FPDU of MULPDU octets fits EMSS wherever it starts. */
	for (emss = 16; emss <= 65535; emss += 1 + emss / 64)
		for (pos = 0; pos < 512; pos += 4) {
			mul = swiw_mpa_mulpdu(emss, true);
			assert_true(swiw_mpa_fpdu_len(mul, pos, true) <= emss);
			mul = swiw_mpa_mulpdu(emss, false);
			assert_true(swiw_mpa_fpdu_len(mul, pos, false) <= emss);
		}
}

/* A stream of FPDUs and the ULPDUs in it, for the receive tests. */
struct stream {
	u8 *wire;
	u32 wire_len;
	u8 *ulpdus; /* all ULPDUs, back to back */
	u32 ulpdus_len;
	u32 n;
	u32 len[MAX_FPDUS]; /* each ULPDU's length */
	u32 start[MAX_FPDUS + 1]; /* each FPDU's stream offset, and the end */
};

static struct stream *stream_new(void)
{
	struct stream *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->wire = malloc(STREAM_MAX);
	s->ulpdus = malloc(STREAM_MAX);
	assert_non_null(s->wire);
	assert_non_null(s->ulpdus);
	return s;
}

static void stream_free(struct stream *s)
{
	free(s->wire);
	free(s->ulpdus);
	free(s);
}

/* Frames ULPDUs of the given lengths (random content) from offset @pos. */
static void stream_build(struct stream *s, const u32 *lens, u32 n, u32 pos,
			 bool markers, bool crc)
{
	struct swiw_fpdu_tx tx = { .pos = pos, .markers = markers, .crc = crc };
	u32 i;

	s->wire_len = 0;
	s->ulpdus_len = 0;
	s->n = n;
	for (i = 0; i < n; i++) {
		u8 *u = s->ulpdus + s->ulpdus_len;

		assert_true(s->ulpdus_len + lens[i] < STREAM_MAX);
		assert_true(s->wire_len + lens[i] + 700 < STREAM_MAX);
		fill(u, lens[i]);
		s->len[i] = lens[i];
		s->start[i] = tx.pos;
		s->wire_len += tx_frame(&tx, u, lens[i], 1 + rnd() % 3,
					s->wire + s->wire_len);
		s->ulpdus_len += lens[i];
	}
	s->start[n] = tx.pos;
}

/* What a deframer delivered: ULPDUs back to back, in order. */
struct rec {
	u8 *buf;
	u32 len; /* octets of completed ULPDUs */
	u32 n;
	u32 lens[MAX_FPDUS];
	u32 cur_len; /* the ULPDU being received */
	u32 cur_got;
	bool in_fpdu;
};

static struct rec *rec_new(void)
{
	struct rec *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	r->buf = malloc(STREAM_MAX);
	assert_non_null(r->buf);
	return r;
}

static void rec_reset(struct rec *r)
{
	r->len = 0;
	r->n = 0;
	r->in_fpdu = false;
}

static void rec_free(struct rec *r)
{
	free(r->buf);
	free(r);
}

static int rec_hdr(void *ctx, const struct swiw_fpdu_rx *rx)
{
	struct rec *r = ctx;
	const u8 *h;
	u32 hl;

	assert_false(r->in_fpdu);
	h = swiw_fpdu_rx_hdr(rx, &hl);
	r->cur_len = swiw_fpdu_rx_ulpdu_len(rx);
	assert_int_equal(hl, SWIW_MIN(r->cur_len, (u32)rx->peek));
	memcpy(r->buf + r->len, h, hl);
	r->cur_got = hl;
	r->in_fpdu = true;
	return 0;
}

static int rec_payload(void *ctx, u32 off, const u8 *data, u32 len)
{
	struct rec *r = ctx;

	assert_true(r->in_fpdu);
	assert_int_equal(off, r->cur_got);
	assert_true(off + len <= r->cur_len);
	memcpy(r->buf + r->len + off, data, len);
	r->cur_got += len;
	return 0;
}

static int rec_end(void *ctx, const struct swiw_fpdu_rx *rx)
{
	struct rec *r = ctx;

	assert_true(r->in_fpdu);
	assert_int_equal(r->cur_got, r->cur_len);
	assert_int_equal(swiw_fpdu_rx_ulpdu_len(rx), r->cur_len);
	assert_true(r->n < MAX_FPDUS);
	r->lens[r->n++] = r->cur_len;
	r->len += r->cur_len;
	r->in_fpdu = false;
	return 0;
}

static const struct swiw_fpdu_rx_ops rec_ops = {
	.hdr = rec_hdr,
	.payload = rec_payload,
	.end = rec_end,
};

/* Deframer set-up; the peek runs through its choices from call to call. */
static void rx_setup(struct swiw_fpdu_rx *rx, u32 pos, bool markers, bool crc)
{
	static const u8 peeks[] = { 0, 1, 18, SWIW_FPDU_PEEK_MAX };
	static unsigned int turn;
	struct swiw_fpdu_rx_cfg cfg = {
		.pos = pos,
		.markers = markers,
		.crc = crc,
		.min_ulpdu = 0,
		.peek = peeks[turn++ % SWIW_ARRAY_SIZE(peeks)],
	};

	assert_int_equal(swiw_fpdu_rx_init(rx, &cfg), 0);
	assert_int_equal(rx->peek, cfg.peek ? cfg.peek : SWIW_FPDU_PEEK);
}

/* The deframer delivered exactly the stream's ULPDUs. */
static void rec_check(const struct rec *r, const struct stream *s)
{
	assert_int_equal(r->n, s->n);
	assert_memory_equal(r->lens, s->len, s->n * sizeof(u32));
	assert_int_equal(r->len, s->ulpdus_len);
	assert_memory_equal(r->buf, s->ulpdus, s->ulpdus_len);
	assert_false(r->in_fpdu);
}

/* Pushes [0, a), [a, b), [b, end): the stream split twice. */
static void push3(struct swiw_fpdu_rx *rx, const struct stream *s, u32 a, u32 b,
		  struct rec *r)
{
	size_t used;

	assert_int_equal(swiw_fpdu_rx_push(rx, s->wire, a, &rec_ops, r, &used),
			 0);
	assert_int_equal(used, a);
	assert_int_equal(swiw_fpdu_rx_push(rx, s->wire + a, b - a, &rec_ops, r,
					   &used),
			 0);
	assert_int_equal(swiw_fpdu_rx_push(rx, s->wire + b, s->wire_len - b,
					   &rec_ops, r, &used),
			 0);
}

/*
 * The pull interface as a zero-copy engine drives it: framing octets
 * copied into (or "received into") the deframer's buffers, payload
 * placed straight at its final offset in the destination, in chunks of
 * random size.
 */
static u32 heads; /* swiw_fpdu_rx_head() took a head (pull_all) */

static void pull_all(struct swiw_fpdu_rx *rx, const struct stream *s,
		     struct rec *r, u32 max_chunk)
{
	struct swiw_fpdu_rx_step step;
	unsigned int ev;
	u32 i = 0, k, hl;
	const u8 *h;

	while (i < s->wire_len) {
		assert_int_equal(swiw_fpdu_rx_next(rx, &step), 0);
		k = 1 + rnd() % max_chunk; /* once: SWIW_MIN repeats it */
		if (step.kind == SWIW_FPDU_RX_BUFFERED && (rnd() & 1)) {
			/* the length and head at once, where they fit */
			k = SWIW_MIN(k, s->wire_len - i);
			k = swiw_fpdu_rx_head(rx, s->wire + i, k, &ev);
			if (k) {
				heads++;
				assert_int_equal(ev, SWIW_FPDU_EV_HDR);
				i += k;
				rec_hdr(r, rx);
				continue;
			}
			assert_int_equal(ev, 0);
			assert_int_equal(swiw_fpdu_rx_next(rx, &step), 0);
			k = 1 + rnd() % max_chunk;
		}
		k = SWIW_MIN(k, step.len);
		k = SWIW_MIN(k, s->wire_len - i);
		if (step.kind == SWIW_FPDU_RX_PAYLOAD) {
			u8 *dst = r->buf + r->len + step.off;

			assert_true(r->in_fpdu);
			assert_int_equal(step.off, r->cur_got);
			memcpy(dst, s->wire + i, k);
			assert_int_equal(swiw_fpdu_rx_advance(rx, dst, k, &ev),
					 0);
			r->cur_got += k;
		} else if (rnd() & 1) {
			/* received in place, as recv() into step.buf */
			memcpy(step.buf, s->wire + i, k);
			assert_int_equal(swiw_fpdu_rx_advance(rx, NULL, k, &ev),
					 0);
		} else {
			assert_int_equal(swiw_fpdu_rx_advance(rx, s->wire + i,
							      k, &ev),
					 0);
		}
		i += k;
		if (ev == SWIW_FPDU_EV_HDR) {
			h = swiw_fpdu_rx_hdr(rx, &hl);
			rec_hdr(r, rx);
			assert_ptr_equal(h, swiw_fpdu_rx_hdr(rx, &hl));
		} else if (ev == SWIW_FPDU_EV_END) {
			rec_end(r, rx);
		}
	}
	assert_int_equal(swiw_fpdu_rx_pos(rx), s->start[s->n]);
}

static void lens_random(u32 *lens, u32 n, u32 max)
{
	u32 i;

	for (i = 0; i < n; i++)
		lens[i] = rnd() % (max + 1);
}

/* Random streams framed and deframed, whole, in chunks, by pull. */
static void test_round_trip(void **state)
{
	struct stream *s = stream_new();
	struct rec *r = rec_new();
	struct swiw_fpdu_rx rx;
	u32 lens[64], round, cfg, pos;

	(void)state;
	for (round = 0; round < 40; round++)
		for (cfg = 0; cfg < 4; cfg++) {
			bool markers = cfg & 1, crc = cfg & 2;

			pos = (rnd() % 4096) * 4;
			lens_random(lens, 64, round & 1 ? 3000 : 120);
			stream_build(s, lens, 64, pos, markers, crc);

			rx_setup(&rx, pos, markers, crc);
			rec_reset(r);
			push3(&rx, s, 0, 0, r);
			rec_check(r, s);

			rx_setup(&rx, pos, markers, crc);
			rec_reset(r);
			heads = 0;
			pull_all(&rx, s, r, 1 + rnd() % 700);
			rec_check(r, s);
			/* Heads taken at once, without markers only. */
			if (markers)
				assert_int_equal(heads, 0);
			else
				assert_true(heads > 0);
		}
	stream_free(s);
	rec_free(r);
}

/*
 * Re-segmentation: several FPDUs, markers on and off, CRC on, fed split
 * at every octet boundary, then as single octets: same ULPDUs each time.
 */
static void test_resegment(void **state)
{
	static const u32 lens[] = { 14, 46, 47, 18, 600, 0, 1, 300, 700, 28 };
	struct stream *s = stream_new();
	struct rec *r = rec_new();
	struct swiw_fpdu_rx rx;
	u32 a, cfg, pos;

	(void)state;
	for (cfg = 0; cfg < 4; cfg++) {
		bool markers = cfg & 1;

		pos = cfg & 2 ? 508 : 0; /* a leading marker, or one soon */
		stream_build(s, lens, SWIW_ARRAY_SIZE(lens), pos, markers,
			     true);
		if (markers)
			assert_true(s->wire_len > 2 * 512);
		for (a = 0; a <= s->wire_len; a++) {
			rx_setup(&rx, pos, markers, true);
			rec_reset(r);
			push3(&rx, s, a, a, r);
			rec_check(r, s);
			/* and a second cut a prime distance on */
			rx_setup(&rx, pos, markers, true);
			rec_reset(r);
			push3(&rx, s, a, SWIW_MIN(a + 37, s->wire_len), r);
			rec_check(r, s);
		}
		rx_setup(&rx, pos, markers, true);
		rec_reset(r);
		for (a = 0; a < s->wire_len; a++)
			assert_int_equal(swiw_fpdu_rx_push(&rx, s->wire + a, 1,
							   &rec_ops, r, NULL),
					 0);
		rec_check(r, s);
		rx_setup(&rx, pos, markers, true);
		rec_reset(r);
		pull_all(&rx, s, r, 1);
		rec_check(r, s);
	}
	stream_free(s);
	rec_free(r);
}

/* Every marker in long streams: reserved 0, FPDUPTR to its FPDU. */
static void test_fpduptr(void **state)
{
	struct stream *s = stream_new();
	u32 lens[200], round, at, i, ptr, hdr;
	bool lead;

	(void)state;
	for (round = 0; round < 20; round++) {
		lens_random(lens, 100, round & 1 ? 2000 : 8000);
		stream_build(s, lens, 100, 0, true, true);
		for (at = 0, i = 0; at < s->start[s->n]; at += 512) {
			while (s->start[i + 1] <= at)
				i++;
			lead = s->start[i] % 512 == 0;
			hdr = s->start[i] + (lead ? 4 : 0);
			ptr = swiw_get_be16(s->wire + at + 2);
			assert_int_equal(swiw_get_be16(s->wire + at), 0);
			if (at == s->start[i])
				assert_int_equal(ptr, 0);
			else
				assert_int_equal(ptr, at - hdr);
			/* and FPDUPTR leads to this FPDU's ULPDU_LENGTH */
			assert_int_equal(swiw_get_be16(s->wire + hdr),
					 s->len[i]);
		}
	}
	stream_free(s);
}

/*
 * A fixed stream for the violations, markers on, from offset 0:
 *   FPDU 0: ULPDU 600 at 0..616, leading marker at 0 (FPDUPTR 0),
 *           marker at 512 (FPDUPTR 508: from ULPDU_LENGTH at 4);
 *   FPDU 1: ULPDU 300 at 616..924, no marker;
 *   FPDU 2: ULPDU 700 at 924..1640, markers at 1024 (FPDUPTR 100) and
 *           1536 (FPDUPTR 612).
 */
static const u32 vlens[] = { 600, 300, 700 };

struct verdict {
	int ret;
	enum swiw_violation v;
	size_t used;
	u32 n; /* ULPDUs delivered */
};

static struct verdict push_all(const struct stream *s, bool markers, bool crc,
			       u16 max_ulpdu, u32 chunk)
{
	struct swiw_fpdu_rx_cfg cfg = {
		.markers = markers,
		.crc = crc,
		.min_ulpdu = SWIW_FPDU_MIN_ULPDU,
		.max_ulpdu = max_ulpdu,
	};
	struct swiw_fpdu_rx rx;
	struct verdict v = { 0 };
	struct rec *r = rec_new();
	size_t used;
	u32 i;

	assert_int_equal(swiw_fpdu_rx_init(&rx, &cfg), 0);
	for (i = 0; i < s->wire_len; i += chunk) {
		v.ret = swiw_fpdu_rx_push(&rx, s->wire + i,
					  SWIW_MIN(chunk, s->wire_len - i),
					  &rec_ops, r, &used);
		v.used += used;
		if (v.ret)
			break;
	}
	v.v = swiw_fpdu_rx_violation(&rx);
	v.n = r->n;
	if (v.ret) {
		/* It stays failed, whatever comes next. */
		struct swiw_fpdu_rx_step step;
		unsigned int ev;

		assert_int_equal(swiw_fpdu_rx_push(&rx, s->wire, 64, &rec_ops,
						   r, &used),
				 -EPROTO);
		assert_int_equal(used, 0);
		assert_int_equal(swiw_fpdu_rx_next(&rx, &step), -EPROTO);
		assert_int_equal(swiw_fpdu_rx_advance(&rx, s->wire, 1, &ev),
				 -EPROTO);
		assert_int_equal(swiw_fpdu_rx_violation(&rx), v.v);
	}
	rec_free(r);
	return v;
}

/* The verdict is the same pushed whole and as single octets. */
static void expect(const struct stream *s, bool markers, bool crc,
		   u16 max_ulpdu, enum swiw_violation want, size_t at, u32 n)
{
	struct verdict a = push_all(s, markers, crc, max_ulpdu, s->wire_len);
	struct verdict b = push_all(s, markers, crc, max_ulpdu, 1);
	struct verdict c = push_all(s, markers, crc, max_ulpdu, 7);

	assert_int_equal(a.v, want);
	assert_int_equal(a.ret, want == SWIW_V_NONE ? 0 : -EPROTO);
	assert_int_equal(a.used, want == SWIW_V_NONE ? s->wire_len : at);
	assert_int_equal(a.n, n);
	assert_int_equal(b.v, a.v);
	assert_int_equal(b.used, a.used);
	assert_int_equal(b.n, a.n);
	assert_int_equal(c.v, a.v);
	assert_int_equal(c.used, a.used);
	assert_int_equal(c.n, a.n);
}

static void test_violations(void **state)
{
	struct stream *s = stream_new();
	u8 *w;

	(void)state;
	stream_build(s, vlens, 3, 0, true, true);
	w = s->wire;
	assert_int_equal(s->start[1], 616);
	assert_int_equal(s->start[2], 924);
	assert_int_equal(s->wire_len, 1640);
	assert_int_equal(swiw_get_be16(w + 512 + 2), 508);
	assert_int_equal(swiw_get_be16(w + 1024 + 2), 100);
	assert_int_equal(swiw_get_be16(w + 1536 + 2), 612);
	expect(s, true, true, 0, SWIW_V_NONE, 0, 3);

	/* A flipped payload bit, then the CRC field itself. */
	w[700] ^= 0x10;
	expect(s, true, true, 0, SWIW_V_MPA_CRC, 924, 1);
	expect(s, true, false, 0, SWIW_V_NONE, 0, 3); /* CRC off: unseen */
	w[700] ^= 0x10;
	w[921] ^= 0x01;
	expect(s, true, true, 0, SWIW_V_MPA_CRC, 924, 1);
	expect(s, true, false, 0, SWIW_V_NONE, 0, 3);
	w[921] ^= 0x01;

	/* Marker reserved bits, in a leading and in a later marker. */
	w[0] = 0x80;
	expect(s, true, true, 0, SWIW_V_MPA_MARKER, 4, 0);
	w[0] = 0;
	w[1024 + 1] = 0x01;
	expect(s, true, false, 0, SWIW_V_MPA_MARKER, 1028, 2);
	w[1024 + 1] = 0;

	/* Wrong FPDUPTRs. */
	w[3] = 4; /* leading marker must say 0 */
	expect(s, true, true, 0, SWIW_V_MPA_MARKER, 4, 0);
	w[3] = 0;
	w[1024 + 3] = 104;
	expect(s, true, false, 0, SWIW_V_MPA_MARKER, 1028, 2);
	w[1024 + 3] = 96;
	expect(s, true, false, 0, SWIW_V_MPA_MARKER, 1028, 2);
	w[1024 + 2] = 0x01; /* 256 + 96 */
	expect(s, true, false, 0, SWIW_V_MPA_MARKER, 1028, 2);
	w[1024 + 2] = 0;
	/* Low two bits are ignored on receipt (with CRC off, so that only
	 * the marker differs). */
	w[1024 + 3] = 101;
	expect(s, true, false, 0, SWIW_V_NONE, 0, 3);
	w[1024 + 3] = 103;
	expect(s, true, false, 0, SWIW_V_NONE, 0, 3);
	w[1024 + 3] = 100;
	/* In an FPDU that began with a marker, a later one may count from
	 * that marker (512) as well as from ULPDU_LENGTH (508). */
	swiw_put_be16(w + 512 + 2, 512);
	expect(s, true, false, 0, SWIW_V_NONE, 0, 3);
	swiw_put_be16(w + 512 + 2, 516);
	expect(s, true, false, 0, SWIW_V_MPA_MARKER, 516, 0);
	swiw_put_be16(w + 512 + 2, 504);
	expect(s, true, false, 0, SWIW_V_MPA_MARKER, 516, 0);
	swiw_put_be16(w + 512 + 2, 508);
	expect(s, true, true, 0, SWIW_V_NONE, 0, 3);

	/* Lengths: below a DDP header, above a configured maximum. */
	swiw_put_be16(w + 4, 13);
	expect(s, true, true, 0, SWIW_V_MPA_ULPDU_LENGTH, 6, 0);
	swiw_put_be16(w + 4, 600);
	expect(s, true, true, 700, SWIW_V_NONE, 0, 3);
	/* FPDU 2's length field at 924..926 */
	expect(s, true, true, 699, SWIW_V_MPA_ULPDU_LENGTH, 926, 2);
	expect(s, true, true, 599, SWIW_V_MPA_ULPDU_LENGTH, 6, 0);
	/* FPDU 1's length field at 616 */
	swiw_put_be16(w + 616, 0);
	expect(s, true, true, 0, SWIW_V_MPA_ULPDU_LENGTH, 618, 1);
	swiw_put_be16(w + 616, 300);

	/* A wrong length lands the deframer on a marker point it did not
	 * expect, or on a bad CRC: either way it fails, never reads past. */
	swiw_put_be16(w + 616, 304);
	expect(s, true, true, 0, SWIW_V_MPA_CRC, 928, 1);
	swiw_put_be16(w + 616, 300);

	/* Without markers the same stream's FPDU 0 is a marker-free frame. */
	stream_build(s, vlens, 3, 0, false, true);
	expect(s, false, true, 0, SWIW_V_NONE, 0, 3);
	s->wire[2 + 600 + 2] ^= 1; /* FPDU 0's CRC */
	expect(s, false, true, 0, SWIW_V_MPA_CRC, 608, 0);
	expect(s, false, false, 0, SWIW_V_NONE, 0, 3);
	stream_free(s);
}

/* API misuse is refused without changing anything. */
static void test_rx_misuse(void **state)
{
	struct swiw_fpdu_rx_cfg cfg = { .markers = true, .crc = true };
	struct swiw_fpdu_rx rx;
	struct swiw_fpdu_rx_step step;
	unsigned int ev;
	u8 buf[8] = { 0 };

	(void)state;
	cfg.pos = 2;
	assert_int_equal(swiw_fpdu_rx_init(&rx, &cfg), -EINVAL);
	cfg.pos = 0;
	cfg.min_ulpdu = 100;
	cfg.max_ulpdu = 50;
	assert_int_equal(swiw_fpdu_rx_init(&rx, &cfg), -EINVAL);
	cfg.min_ulpdu = 0;
	cfg.max_ulpdu = 0;
	cfg.peek = SWIW_FPDU_PEEK_MAX + 1;
	assert_int_equal(swiw_fpdu_rx_init(&rx, &cfg), -EINVAL);
	cfg.peek = 0; /* the default: a Read Request's 46 */
	assert_int_equal(swiw_fpdu_rx_init(&rx, &cfg), 0);
	/* At offset 0 with markers the first thing is the leading marker. */
	assert_int_equal(swiw_fpdu_rx_next(&rx, &step), 0);
	assert_int_equal(step.kind, SWIW_FPDU_RX_BUFFERED);
	assert_int_equal(step.len, 4);
	assert_int_equal(swiw_fpdu_rx_advance(&rx, buf, 5, &ev), -EINVAL);
	assert_int_equal(swiw_fpdu_rx_pos(&rx), 0);
	assert_int_equal(swiw_fpdu_rx_advance(&rx, buf, 0, &ev), 0);
	assert_int_equal(swiw_fpdu_rx_advance(&rx, buf, 4, &ev), 0);
	assert_int_equal(ev, 0);
	/* Then the length alone. */
	assert_int_equal(swiw_fpdu_rx_next(&rx, &step), 0);
	assert_int_equal(step.len, 2);
	buf[1] = 100;
	assert_int_equal(swiw_fpdu_rx_advance(&rx, buf, 2, &ev), 0);
	assert_int_equal(ev, 0);
	/* The ULPDU's head is buffered, then payload is the caller's. */
	assert_int_equal(swiw_fpdu_rx_next(&rx, &step), 0);
	assert_int_equal(step.kind, SWIW_FPDU_RX_BUFFERED);
	assert_int_equal(step.len, SWIW_FPDU_PEEK);
	memset(step.buf, 0, step.len);
	assert_int_equal(swiw_fpdu_rx_advance(&rx, NULL, step.len, &ev), 0);
	assert_int_equal(ev, SWIW_FPDU_EV_HDR);
	assert_int_equal(swiw_fpdu_rx_next(&rx, &step), 0);
	assert_int_equal(step.kind, SWIW_FPDU_RX_PAYLOAD);
	assert_int_equal(step.off, SWIW_FPDU_PEEK);
	assert_int_equal(step.len, 100 - SWIW_FPDU_PEEK);
	/* payload octets are needed for the CRC */
	assert_int_equal(swiw_fpdu_rx_advance(&rx, NULL, 1, &ev), -EINVAL);
	assert_int_equal(swiw_fpdu_rx_violation(&rx), SWIW_V_NONE);
}

/* CRC off: the field is ignored whatever it holds, including zeros. */
static void test_crc_off(void **state)
{
	struct stream *s = stream_new();
	struct rec *r = rec_new();
	struct swiw_fpdu_rx rx;
	u32 lens[16], i;

	(void)state;
	lens_random(lens, 16, 900);
	stream_build(s, lens, 16, 0, false, false);
	for (i = 0; i < 16; i++) /* CRC off sends zeros */
		assert_int_equal(swiw_get_be32(s->wire + s->start[i + 1] - 4),
				 0);
	for (i = 1; i <= 16; i++)
		swiw_put_be32(s->wire + s->start[i] - 4, rnd());
	rx_setup(&rx, 0, false, false);
	rec_reset(r);
	push3(&rx, s, 5, 900, r);
	rec_check(r, s);
	/* the same stream with CRC checked fails on the first FPDU */
	rx_setup(&rx, 0, false, true);
	rec_reset(r);
	assert_int_equal(swiw_fpdu_rx_push(&rx, s->wire, s->wire_len, &rec_ops,
					   r, NULL),
			 -EPROTO);
	assert_int_equal(swiw_fpdu_rx_violation(&rx), SWIW_V_MPA_CRC);
	assert_int_equal(r->n, 0);
	stream_free(s);
	rec_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tx_sizes),
		cmocka_unit_test(test_tx_phases),
		cmocka_unit_test(test_tx_errors),
		cmocka_unit_test(test_mulpdu),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_resegment),
		cmocka_unit_test(test_fpduptr),
		cmocka_unit_test(test_violations),
		cmocka_unit_test(test_rx_misuse),
		cmocka_unit_test(test_crc_off),
	};

	rnd_state = 0x9e3779b9; /* this file's own sequence */

	return cmocka_run_group_tests(tests, NULL, NULL);
}
