// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target for the rdma_cm listener's Request parser
 * (engine/swiw_cm_req.c): what libswiw-preload.so makes of the octets any
 * TCP peer sends to an rdma_cm listener, read as the shim reads them
 * (swiw_cma_conn.c, pend_read) and all at once.
 *
 * Input: one configuration octet, then the peer's octets.
 *   c0  the MPA knobs swiw.conf can set (swiw_stream_mpa_cfg()):
 *       bit 0 rev 1 (else 2), 1 mpa_crc, 2 mpa_markers, bits 3-4
 *       mpa_p2p (on, off, required, on), bits 5-7 an mpa_rtr list
 *
 * Invariants (abort on violation):
 * - every answer is 0, EAGAIN or EPROTO; the output holds nothing else
 *   than the answer allows;
 * - 0: the buffer is exactly one Request, frame_len its length, the
 *   private data what follows the header (and the RFC 6581 word), as
 *   swiw_mpa_frame_ulp_pd() finds it;
 * - EAGAIN: frame_len is what the header says the Request needs, more
 *   than the buffer holds and no more than a Request can be;
 * - the shim's stepwise reading (the header, then frame_len) comes to
 *   the same Request as the whole buffer: it accepts exactly when the
 *   buffer is one Request, or a Request followed by octets the parser
 *   refuses; it never waits on a buffer the parser calls whole.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/swiw-abi.h>

#include "swiw_cm_req.h"
#include "swiw_shim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                 \
	do {                     \
		if (!(x))        \
			abort(); \
	} while (0)

/* The shim's buffer and first read (swiw_cma.h, swiw_cma_conn.c). */
#define SHIM_REQ_MAX (20 + SWIW_CM_PD_MAX)
#define SHIM_REQ_HDR 20

static const u8 rtr_lists[8][3] = {
	{ 0, 0, 0 }, /* unset: the machine's defaults */
	{ SWIW_MPA_RTR_WRITE, SWIW_MPA_RTR_READ, SWIW_MPA_RTR_SEND },
	{ SWIW_MPA_RTR_READ, 0, 0 },
	{ SWIW_MPA_RTR_SEND, 0, 0 },
	{ SWIW_MPA_RTR_WRITE, 0, 0 },
	{ SWIW_MPA_RTR_SEND, SWIW_MPA_RTR_WRITE, SWIW_MPA_RTR_READ },
	{ SWIW_MPA_RTR_READ, SWIW_MPA_RTR_WRITE, 0 },
	{ SWIW_MPA_RTR_WRITE, SWIW_MPA_RTR_SEND, 0 },
};

/* As swiw_stream_mpa_cfg() maps swiw.conf's keys. */
static void cfg_from(struct swiw_mpa_cfg *c, u8 b)
{
	static const u8 p2p[4] = { SWIW_MPA_P2P_ON, SWIW_MPA_P2P_OFF,
				   SWIW_MPA_P2P_REQUIRED, SWIW_MPA_P2P_ON };
	const u8 *rtr = rtr_lists[b >> 5];
	unsigned int i;

	swiw_mpa_cfg_init(c);
	c->ird_max = SWIW_MAX_IRD;
	c->rev = b & 1 ? MPA_REV_1 : MPA_REV_2;
	c->crc_required = b & 2;
	c->markers_wanted = b & 4;
	c->p2p = p2p[(b >> 3) & 3];
	if (!rtr[0])
		return;
	c->rtr_offer = 0;
	for (i = 0; i < 3; i++) {
		c->rtr_pref[i] = rtr[i];
		if (rtr[i])
			c->rtr_offer |= SWIW_MPA_RTR_F(rtr[i]);
	}
}

static bool all_zero(const void *p, size_t n)
{
	const u8 *b = p;

	while (n--)
		if (*b++)
			return false;
	return true;
}

/*
 * Parses the first @len octets, copied to end exactly where the buffer
 * does (an overrun traps) and to start at an odd address (so does a
 * misaligned load).
 */
static int parse(const struct swiw_mpa_cfg *c, const u8 *data, size_t len,
		 struct swiw_cm_req *out)
{
	u8 *buf = malloc(len + 1), *copy = buf + 1;
	const u8 *pd;
	u16 pd_len;
	int err;

	CHECK(buf);
	memcpy(copy, data, len);
	memset(out, 0xa5, sizeof(*out));
	err = swiw_cm_req_parse(c, copy, len, out);
	switch (err) {
	case 0:
		CHECK(out->frame_len == len);
		CHECK(len >= sizeof(struct mpa_rr) &&
		      len <= SWIW_MPA_FRAME_MAX);
		CHECK(!swiw_mpa_frame_ulp_pd(copy, len, true, &pd, &pd_len));
		CHECK(out->pd_len == pd_len && pd_len <= SWIW_CM_PD_MAX);
		CHECK(!memcmp(out->pd, pd, pd_len));
		CHECK(all_zero(out->pd + pd_len, sizeof(out->pd) - pd_len));
		CHECK(out->peer_ird <= SWIW_MPA_IRD_ORD_NONE &&
		      out->peer_ord <= SWIW_MPA_IRD_ORD_NONE);
		/* No RFC 6581 word: nothing to negotiate with. */
		if (pd == copy + sizeof(struct mpa_rr))
			CHECK(out->peer_ird == SWIW_MPA_IRD_ORD_NONE &&
			      out->peer_ord == SWIW_MPA_IRD_ORD_NONE);
		break;
	case EAGAIN:
		CHECK(out->frame_len > len);
		CHECK(out->frame_len <= SWIW_MPA_FRAME_MAX);
		CHECK(out->frame_len == swiw_mpa_rr_need(copy, len));
		CHECK(!out->pd_len && !out->peer_ird && !out->peer_ord);
		CHECK(all_zero(out->pd, sizeof(out->pd)));
		break;
	case EPROTO:
		CHECK(all_zero(out, sizeof(*out)));
		break;
	default:
		abort();
	}
	free(buf);
	return err;
}

enum shim_end {
	SHIM_ACCEPT,
	SHIM_CLOSE,
	SHIM_WAIT
};

/*
 * pend_read(): reads no more than it needs (the header, then frame_len
 * in all), parses once it has that, and closes on EPROTO or on a
 * frame_len that does not grow or does not fit. *@got: octets taken.
 */
static enum shim_end shim_read(const struct swiw_mpa_cfg *c, const u8 *data,
			       size_t size, size_t *got)
{
	struct swiw_cm_req req;
	size_t need = SHIM_REQ_HDR;
	int err;

	for (;;) {
		*got = size < need ? size : need;
		if (*got < need)
			return SHIM_WAIT;
		err = parse(c, data, *got, &req);
		if (!err)
			return SHIM_ACCEPT;
		if (err != EAGAIN)
			return SHIM_CLOSE;
		if (req.frame_len <= *got || req.frame_len > SHIM_REQ_MAX)
			return SHIM_CLOSE;
		need = req.frame_len;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct swiw_mpa_cfg c;
	struct swiw_cm_req whole;
	enum shim_end end;
	size_t got;
	int err;

	if (size < 1)
		return 0;
	cfg_from(&c, data[0]);
	data++;
	size--;

	err = parse(&c, data, size, &whole);
	end = shim_read(&c, data, size, &got);
	if (!err)
		CHECK(end == SHIM_ACCEPT && got == size);
	if (end == SHIM_ACCEPT && got < size)
		CHECK(err == EPROTO); /* octets after the Request: early data */
	if (end == SHIM_WAIT)
		CHECK(err == EAGAIN && whole.frame_len > size);
	if (err == EAGAIN)
		CHECK(end == SHIM_WAIT || end == SHIM_CLOSE);
	return 0;
}
