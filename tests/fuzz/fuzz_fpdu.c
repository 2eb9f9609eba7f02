// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target for the MPA deframer and framer.
 *
 * Input: four configuration octets, then a body.
 *   [0] bit 0 markers, bit 1 CRC, bit 2 round trip (else: the body is a
 *       raw stream), bit 3 pull interface for the split run, bits 5-7 a
 *       maximum ULPDU length
 *   [1] seed of the split pattern
 *   [2] minimum ULPDU length (low 6 bits), octets of ULPDU head shown
 *       (high 2 bits: default 46, 1, 18, 70)
 *   [3] stream offset of the first octet / 4
 *
 * Raw stream: deframed whole (push), then again in pieces whose sizes the
 * split seed chooses (push, or pull with payload placed in a separate
 * destination as a zero-copy engine would). Both runs must agree on every
 * delivered octet and event, on the violation and on where it was found.
 *
 * Round trip: the body is a script of ULPDU lengths; ULPDUs of those
 * lengths with pseudo-random content are framed, the frames gathered and
 * deframed in pieces; what comes out must be exactly what went in.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "swiw_fpdu.h"

#define WIRE_MAX (96 * 1024) /* a round trip's stream, at most */
#define ROUND_TRIP_MAX 48

static const u8 peek_choice[4] = { 0, 1, 18, SWIW_FPDU_PEEK_MAX };
static const u16 max_choice[8] = { 0, 14, 46, 100, 1000, 4096, 30000, 65535 };

/* What a run delivered, independent of how the stream was split. */
struct digest {
	u64 hash; /* FNV-1a over events and delivered octets */
	u32 fpdus;
	u32 cur_len; /* ULPDU in progress */
	u32 cur_got;
	bool in_fpdu;
	/* round trip: where ULPDUs are reassembled, if anywhere */
	u8 *out;
	u32 out_len;
};

static void mix(struct digest *d, const u8 *p, u32 n)
{
	while (n--) {
		d->hash ^= *p++;
		d->hash *= 0x100000001b3ull;
	}
}

static void mix32(struct digest *d, u32 v)
{
	u8 b[4] = { (u8)v, (u8)(v >> 8), (u8)(v >> 16), (u8)(v >> 24) };

	mix(d, b, 4);
}

static int on_hdr(void *ctx, const struct swiw_fpdu_rx *rx)
{
	struct digest *d = ctx;
	const u8 *h;
	u32 hl;

	if (d->in_fpdu)
		abort();
	h = swiw_fpdu_rx_hdr(rx, &hl);
	d->cur_len = swiw_fpdu_rx_ulpdu_len(rx);
	if (hl != SWIW_MIN(d->cur_len, (u32)rx->peek))
		abort();
	mix32(d, 0x48445221); /* "HDR!" */
	mix32(d, d->cur_len);
	mix(d, h, hl);
	if (d->out)
		memcpy(d->out + d->out_len, h, hl);
	d->cur_got = hl;
	d->in_fpdu = true;
	return 0;
}

static int on_payload(void *ctx, u32 off, const u8 *data, u32 len)
{
	struct digest *d = ctx;

	if (!d->in_fpdu || off != d->cur_got || len == 0 ||
	    off + len > d->cur_len)
		abort();
	mix(d, data, len);
	if (d->out)
		memcpy(d->out + d->out_len + off, data, len);
	d->cur_got += len;
	return 0;
}

static int on_end(void *ctx, const struct swiw_fpdu_rx *rx)
{
	struct digest *d = ctx;

	if (!d->in_fpdu || d->cur_got != d->cur_len ||
	    swiw_fpdu_rx_ulpdu_len(rx) != d->cur_len)
		abort();
	mix32(d, 0x454e4421); /* "END!" */
	d->out_len += d->cur_len;
	d->fpdus++;
	d->in_fpdu = false;
	return 0;
}

static const struct swiw_fpdu_rx_ops ops = {
	.hdr = on_hdr,
	.payload = on_payload,
	.end = on_end,
};

static u32 rnd(u32 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/*
 * Next piece size: single octets, small, or large, as the seed says;
 * single octets only for short streams, to keep runs fast.
 */
static u32 piece(u32 *s, u8 seed, size_t total)
{
	switch ((seed & 3) | (total > 8192 && !(seed & 3))) {
	case 0:
		return 1;
	case 1:
		return 1 + rnd(s) % 8;
	case 2:
		return 1 + rnd(s) % 600;
	default:
		return 1 + rnd(s) % 5000;
	}
}

struct result {
	int ret;
	enum swiw_violation v;
	u32 pos;
};

/* Push interface, the stream in pieces. */
static struct result run_push(const struct swiw_fpdu_rx_cfg *cfg, const u8 *p,
			      size_t n, u8 seed, struct digest *d)
{
	struct swiw_fpdu_rx rx;
	struct result r = { 0 };
	u32 s = 0x1234567u + seed, k;
	size_t used, total = n;

	if (swiw_fpdu_rx_init(&rx, cfg))
		abort();
	while (n) {
		k = seed == 0xff ? (u32)n : piece(&s, seed, total);
		k = (u32)SWIW_MIN((size_t)k, n);
		r.ret = swiw_fpdu_rx_push(&rx, p, k, &ops, d, &used);
		if (r.ret) {
			if (r.ret != -EPROTO)
				abort();
			p += used;
			break;
		}
		if (used != k)
			abort();
		p += k;
		n -= k;
	}
	r.v = swiw_fpdu_rx_violation(&rx);
	r.pos = swiw_fpdu_rx_pos(&rx);
	if ((r.ret == 0) != (r.v == SWIW_V_NONE))
		abort();
	return r;
}

/*
 * Pull interface, as an engine drives it: framing octets received into
 * the deframer's buffers, payload placed at its offset in @dst.
 */
static struct result run_pull(const struct swiw_fpdu_rx_cfg *cfg, const u8 *p,
			      size_t n, u8 seed, struct digest *d, u8 *dst)
{
	struct swiw_fpdu_rx_step step;
	struct swiw_fpdu_rx rx;
	struct result r = { 0 };
	u32 s = 0x7654321u + seed, k;
	size_t total = n;
	unsigned int ev;

	if (swiw_fpdu_rx_init(&rx, cfg))
		abort();
	while (n) {
		r.ret = swiw_fpdu_rx_next(&rx, &step);
		if (r.ret)
			abort(); /* failure shows in advance first */
		k = piece(&s, seed, total);
		k = SWIW_MIN(k, step.len);
		k = (u32)SWIW_MIN((size_t)k, n);
		if (step.kind == SWIW_FPDU_RX_PAYLOAD) {
			if (!d->in_fpdu || step.off != d->cur_got)
				abort();
			memcpy(dst + step.off, p, k);
			r.ret = swiw_fpdu_rx_advance(&rx, dst + step.off, k,
						     &ev);
			if (!r.ret)
				on_payload(d, step.off, dst + step.off, k);
		} else {
			memcpy(step.buf, p, k);
			r.ret = swiw_fpdu_rx_advance(&rx, NULL, k, &ev);
		}
		if (r.ret) {
			if (r.ret != -EPROTO)
				abort();
			break;
		}
		p += k;
		n -= k;
		if (ev == SWIW_FPDU_EV_HDR)
			on_hdr(d, &rx);
		else if (ev == SWIW_FPDU_EV_END)
			on_end(d, &rx);
	}
	r.v = swiw_fpdu_rx_violation(&rx);
	r.pos = swiw_fpdu_rx_pos(&rx);
	return r;
}

static void same(const struct result *a, const struct digest *da,
		 const struct result *b, const struct digest *db)
{
	if (a->ret != b->ret || a->v != b->v || a->pos != b->pos ||
	    da->hash != db->hash || da->fpdus != db->fpdus ||
	    da->in_fpdu != db->in_fpdu || da->cur_got != db->cur_got)
		abort();
}

static u8 dst[65536];
static u8 wire[WIRE_MAX];
static u8 ulpdus[WIRE_MAX];
static u8 out[WIRE_MAX];

static void raw_stream(const struct swiw_fpdu_rx_cfg *cfg, const u8 *p,
		       size_t n, u8 seed, bool pull)
{
	struct digest da = { .hash = 0xcbf29ce484222325ull };
	struct digest db = da;
	struct result a, b;

	a = run_push(cfg, p, n, 0xff, &da);
	if (pull)
		b = run_pull(cfg, p, n, seed, &db, dst);
	else
		b = run_push(cfg, p, n, seed, &db);
	same(&a, &da, &b, &db);
}

static void round_trip(const struct swiw_fpdu_rx_cfg *cfg, const u8 *p,
		       size_t n, u8 seed, bool pull)
{
	static struct swiw_fpdu_frame f;
	static struct swiw_iov iov[3 + 2 + 2 * SWIW_FPDU_MAX_MARKERS];
	struct swiw_fpdu_tx tx = {
		.pos = cfg->pos,
		.markers = cfg->markers,
		.crc = cfg->crc,
	};
	struct digest d = { .hash = 0xcbf29ce484222325ull, .out = out };
	struct swiw_iov in[3];
	u32 s = 0xabcdefu + seed, nu = 0, wl = 0, ul = 0, len, i, a, b;
	struct result r;

	f.iov = iov;
	f.max_iov = SWIW_ARRAY_SIZE(iov);
	for (; n >= 2 && nu < ROUND_TRIP_MAX; p += 2, n -= 2, nu++) {
		len = swiw_get_be16(p);
		/* mostly short, a few long */
		if ((len & 0xc000) != 0xc000)
			len &= 0x7ff;
		len = SWIW_MAX(len, (u32)cfg->min_ulpdu);
		if (cfg->max_ulpdu)
			len = SWIW_MIN(len, (u32)cfg->max_ulpdu);
		if (cfg->markers) /* keep every FPDUPTR within 16 bits */
			len = SWIW_MIN(len, swiw_mpa_mulpdu(65535, true));
		if (ul + len > WIRE_MAX || wl + len + 600 > WIRE_MAX)
			break;
		for (i = 0; i < len; i++)
			ulpdus[ul + i] = (u8)rnd(&s);
		/* three pieces, cut where the script's next octet says */
		a = len ? rnd(&s) % (len + 1) : 0;
		b = a + (len - a ? rnd(&s) % (len - a + 1) : 0);
		in[0] = (struct swiw_iov){ ulpdus + ul, a };
		in[1] = (struct swiw_iov){ ulpdus + ul + a, b - a };
		in[2] = (struct swiw_iov){ ulpdus + ul + b, len - b };
		if (swiw_fpdu_tx_build(&tx, in, 3, &f))
			abort();
		if (f.len !=
		    swiw_mpa_fpdu_len(len, tx.pos - f.len, cfg->markers))
			abort();
		for (i = 0; i < f.n_iov; i++) {
			memcpy(wire + wl, iov[i].base, iov[i].len);
			wl += (u32)iov[i].len;
		}
		ul += len;
	}
	if (pull)
		r = run_pull(cfg, wire, wl, seed, &d, dst);
	else
		r = run_push(cfg, wire, wl, seed, &d);
	if (r.ret || d.fpdus != nu || d.in_fpdu || d.out_len != ul ||
	    memcmp(out, ulpdus, ul) || r.pos != tx.pos)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct swiw_fpdu_rx_cfg cfg = { 0 };
	u8 flags;

	if (size < 4)
		return 0;
	flags = data[0];
	cfg.markers = flags & 1;
	cfg.crc = flags & 2;
	cfg.max_ulpdu = max_choice[flags >> 5];
	cfg.min_ulpdu = data[2] & 63;
	cfg.peek = peek_choice[data[2] >> 6];
	if (cfg.max_ulpdu && cfg.min_ulpdu > cfg.max_ulpdu)
		cfg.min_ulpdu = cfg.max_ulpdu;
	cfg.pos = (u32)data[3] * 4 + 0xfffffc00u; /* wraps 2^32 early */
	if (flags & 4)
		round_trip(&cfg, data + 4, size - 4, data[1], flags & 8);
	else
		raw_stream(&cfg, data + 4, size - 4, data[1], flags & 8);
	return 0;
}
