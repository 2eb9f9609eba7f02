// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The MPA receive deframer (RFC 5044 §4; conventions in swiw_fpdu.h): a
 * state machine that takes the stream in pieces of any size and says, at
 * each point, what the next octets are. Framing octets, markers and the
 * head of each ULPDU it buffers itself; the rest of the ULPDU the caller
 * places where it likes, so payload can go straight to its destination.
 * The same octets give the same results however they are split: every
 * decision depends on the stream offset and the octets, never on the
 * boundaries between calls.
 */
#include "swiw_fpdu.h"

#define SWIW_MARKER_MASK (MPA_MARKER_SPACING - 1)

/* The parts of an FPDU, in stream order; markers may cut into any. */
enum {
	SWIW_RX_LEN, /* ULPDU_LENGTH: into hb */
	SWIW_RX_HDR, /* the rest of the ULPDU head: into hb */
	SWIW_RX_PAYLOAD, /* the rest of the ULPDU: the caller's */
	SWIW_RX_TRAILER, /* PAD and CRC: into trailer */
};

/* A new FPDU starts at rx->pos. */
static void swiw_rx_begin(struct swiw_fpdu_rx *rx)
{
	rx->start = rx->pos;
	rx->lead = rx->markers && !(rx->pos & SWIW_MARKER_MASK);
	rx->crc_acc = SWIW_CRC32C_INIT;
	rx->part = SWIW_RX_LEN;
	rx->got = 0;
	rx->need = MPA_HDR_SIZE;
}

static int swiw_rx_fail(struct swiw_fpdu_rx *rx, enum swiw_violation v)
{
	rx->violation = v;
	return -EPROTO;
}

/*
 * swiw_fpdu_rx_init - set a deframer up at the start of an FPDU
 * @rx: the deframer
 * @cfg: stream offset, negotiated markers and CRC, ULPDU length limits
 *
 * Returns 0, or -EINVAL if @cfg is inconsistent (markers with an offset
 * that is not a multiple of 4, a minimum above the maximum, a peek above
 * SWIW_FPDU_PEEK_MAX).
 */
int swiw_fpdu_rx_init(struct swiw_fpdu_rx *rx,
		      const struct swiw_fpdu_rx_cfg *cfg)
{
	u16 max = cfg->max_ulpdu ? cfg->max_ulpdu : MPA_MAX_ULPDU_LEN;

	if ((cfg->markers && (cfg->pos & 3)) || cfg->min_ulpdu > max ||
	    cfg->peek > SWIW_FPDU_PEEK_MAX)
		return -EINVAL;
	memset(rx, 0, sizeof(*rx));
	rx->pos = cfg->pos;
	rx->markers = cfg->markers;
	rx->crc = cfg->crc;
	rx->min_ulpdu = cfg->min_ulpdu;
	rx->max_ulpdu = max;
	rx->peek = cfg->peek ? cfg->peek : SWIW_FPDU_PEEK;
	rx->violation = SWIW_V_NONE;
	swiw_rx_begin(rx);
	return 0;
}

/*
 * swiw_fpdu_rx_next - what the next octets of the stream are
 * @rx: the deframer
 * @step: filled in: the kind of octets, how many at most, where they go
 *
 * The step never crosses a marker or a part of the FPDU, so it may be
 * shorter than the part. Calling it changes nothing.
 *
 * Returns 0, or -EPROTO once the deframer has failed.
 */
int swiw_fpdu_rx_next(struct swiw_fpdu_rx *rx, struct swiw_fpdu_rx_step *step)
{
	u32 room = 0xffffffffu, r;

	if (rx->violation != SWIW_V_NONE)
		return -EPROTO;
	step->kind = SWIW_FPDU_RX_BUFFERED;
	step->off = 0;
	if (rx->markers) {
		/* Offsets 0..3 mod 512 are always marker octets. */
		r = rx->pos & SWIW_MARKER_MASK;
		if (r < MPA_MARKER_SIZE) {
			step->buf = rx->marker + r;
			step->len = MPA_MARKER_SIZE - r;
			return 0;
		}
		room = MPA_MARKER_SPACING - r;
	}
	switch (rx->part) {
	case SWIW_RX_LEN:
	case SWIW_RX_HDR:
		step->buf = rx->hb + rx->got;
		break;
	case SWIW_RX_PAYLOAD:
		step->kind = SWIW_FPDU_RX_PAYLOAD;
		step->buf = NULL;
		step->off = rx->hdr_len + rx->got;
		break;
	default:
		step->buf = rx->trailer + rx->got;
		break;
	}
	step->len = SWIW_MIN(rx->need - rx->got, room);
	return 0;
}

/* A whole marker arrived: reserved zero, FPDUPTR back to this FPDU. */
static int swiw_rx_marker(struct swiw_fpdu_rx *rx)
{
	u32 dist = rx->pos - MPA_MARKER_SIZE - rx->start;
	u32 ptr = swiw_get_be16(rx->marker + 2) & ~3u;
	bool ok;

	if (swiw_get_be16(rx->marker))
		return swiw_rx_fail(rx, SWIW_V_MPA_MARKER);
	if (!dist)
		ok = !ptr; /* leading: points at its own FPDU */
	else if (rx->lead)
		/* To ULPDU_LENGTH, or (other reading) the leading marker. */
		ok = ptr == dist - MPA_MARKER_SIZE || ptr == dist;
	else
		ok = ptr == dist;
	return ok ? 0 : swiw_rx_fail(rx, SWIW_V_MPA_MARKER);
}

/* A ULPDU_LENGTH of @len is allowed: record it, size the head. */
static bool swiw_rx_set_len(struct swiw_fpdu_rx *rx, u32 len)
{
	if (len < rx->min_ulpdu || len > rx->max_ulpdu)
		return false;
	rx->ulpdu_len = len;
	rx->hdr_len = (u8)SWIW_MIN(len, (u32)rx->peek);
	return true;
}

/* The ULPDU_LENGTH field is in: check it, size the head. */
static int swiw_rx_length(struct swiw_fpdu_rx *rx)
{
	if (!swiw_rx_set_len(rx, swiw_get_be16(rx->hb)))
		return swiw_rx_fail(rx, SWIW_V_MPA_ULPDU_LENGTH);
	rx->need = MPA_HDR_SIZE + rx->hdr_len;
	rx->part = SWIW_RX_HDR;
	return 0;
}

/* Moves to part @part of @need octets. */
static void swiw_rx_part(struct swiw_fpdu_rx *rx, u8 part, u32 need)
{
	rx->part = part;
	rx->need = need;
	rx->got = 0;
}

static u32 swiw_rx_trailer_len(const struct swiw_fpdu_rx *rx)
{
	return swiw_mpa_pad(rx->ulpdu_len) + MPA_CRC_SIZE;
}

/* The head is in: on to the payload, or (none) the trailer. */
static void swiw_rx_head_done(struct swiw_fpdu_rx *rx, unsigned int *ev)
{
	*ev = SWIW_FPDU_EV_HDR;
	if (rx->ulpdu_len > rx->hdr_len)
		swiw_rx_part(rx, SWIW_RX_PAYLOAD, rx->ulpdu_len - rx->hdr_len);
	else
		swiw_rx_part(rx, SWIW_RX_TRAILER, swiw_rx_trailer_len(rx));
}

/* PAD and CRC are in: check the CRC, start the next FPDU. */
static int swiw_rx_end(struct swiw_fpdu_rx *rx, unsigned int *ev)
{
	__le32 le;

	memcpy(&le, rx->trailer + rx->need - MPA_CRC_SIZE, sizeof(le));
	rx->crc_wire = swiw_le32_to_cpu(le);
	rx->crc_calc = rx->crc ? swiw_crc32c_final(rx->crc_acc) : 0;
	if (rx->crc && rx->crc_calc != rx->crc_wire)
		return swiw_rx_fail(rx, SWIW_V_MPA_CRC);
	*ev = SWIW_FPDU_EV_END;
	swiw_rx_begin(rx);
	return 0;
}

/*
 * swiw_fpdu_rx_advance - tell the deframer that octets arrived
 * @rx: the deframer
 * @data: where the @n octets are. For a BUFFERED step: NULL or step.buf
 *	if they were received in place, else they are copied there. For a
 *	PAYLOAD step: where the caller placed them (read for the CRC; may be
 *	NULL with CRC off).
 * @n: how many, at most the step's length
 * @ev: set to 0, SWIW_FPDU_EV_HDR or SWIW_FPDU_EV_END
 *
 * Runs the CRC over exactly these octets, checks markers as they
 * complete, and moves on through the FPDU.
 *
 * Returns 0; -EPROTO if the peer violated the protocol, now or before
 * (swiw_fpdu_rx_violation() says how: SWIW_V_MPA_CRC, SWIW_V_MPA_MARKER
 * or SWIW_V_MPA_ULPDU_LENGTH; the deframer stays failed); -EINVAL if @n
 * exceeds the step or payload octets are missing for the CRC, in which
 * case nothing changed.
 */
int swiw_fpdu_rx_advance(struct swiw_fpdu_rx *rx, const void *data, u32 n,
			 unsigned int *ev)
{
	struct swiw_fpdu_rx_step step;
	const u8 *p = data;
	u32 c, pad;
	int ret;

	*ev = 0;
	ret = swiw_fpdu_rx_next(rx, &step);
	if (ret || !n)
		return ret;
	if (n > step.len)
		return -EINVAL;
	if (step.kind == SWIW_FPDU_RX_BUFFERED) {
		if (p && p != step.buf)
			memcpy(step.buf, p, n);
		p = step.buf;
	} else if (!p && rx->crc) {
		return -EINVAL;
	}

	if (rx->markers && (rx->pos & SWIW_MARKER_MASK) < MPA_MARKER_SIZE) {
		if (rx->crc)
			rx->crc_acc = swiw_crc32c(rx->crc_acc, p, n);
		rx->pos += n;
		if ((rx->pos & SWIW_MARKER_MASK) == MPA_MARKER_SIZE)
			return swiw_rx_marker(rx);
		return 0;
	}

	if (rx->crc) {
		c = n;
		if (rx->part == SWIW_RX_TRAILER) {
			/* PAD is covered, the CRC field is not. */
			pad = rx->need - MPA_CRC_SIZE;
			c = rx->got < pad ? SWIW_MIN(n, pad - rx->got) : 0;
		}
		if (c)
			rx->crc_acc = swiw_crc32c(rx->crc_acc, p, c);
	}
	rx->pos += n;
	rx->got += n;

	if (rx->part == SWIW_RX_LEN && rx->got == MPA_HDR_SIZE) {
		ret = swiw_rx_length(rx);
		if (ret)
			return ret;
	}
	if (rx->got < rx->need)
		return 0;
	switch (rx->part) {
	case SWIW_RX_HDR:
		swiw_rx_head_done(rx, ev);
		return 0;
	case SWIW_RX_PAYLOAD:
		swiw_rx_part(rx, SWIW_RX_TRAILER, swiw_rx_trailer_len(rx));
		return 0;
	default:
		return swiw_rx_end(rx, ev);
	}
}

/*
 * swiw_fpdu_rx_head - take an FPDU's length and head in one step
 * @rx: the deframer, at the first octet of an FPDU
 * @data: the next @avail octets of the stream
 * @avail: how many
 * @ev: set to SWIW_FPDU_EV_HDR when octets were taken, else 0
 *
 * What swiw_fpdu_rx_advance() does for the LEN and the HDR steps, in one
 * call, when @data holds both and no marker falls among them: the common
 * case of a stream read in large pieces. A length the deframer would
 * refuse is left to the steps, which fail at its octets.
 *
 * Returns the octets taken: 0 (none; take the steps) or MPA_HDR_SIZE plus
 * the head's length.
 */
u32 swiw_fpdu_rx_head(struct swiw_fpdu_rx *rx, const void *data, u32 avail,
		      unsigned int *ev)
{
	const u8 *p = data;
	u32 len, n;

	*ev = 0;
	if (rx->violation != SWIW_V_NONE || rx->part != SWIW_RX_LEN ||
	    rx->got || rx->markers || avail < MPA_HDR_SIZE)
		return 0;
	len = swiw_get_be16(p);
	/* The whole head, or nothing (a length refused: the steps fail). */
	if (avail < MPA_HDR_SIZE + SWIW_MIN(len, (u32)rx->peek) ||
	    !swiw_rx_set_len(rx, len))
		return 0;
	n = MPA_HDR_SIZE + rx->hdr_len;
	memcpy(rx->hb, p, n);
	if (rx->crc)
		rx->crc_acc = swiw_crc32c(rx->crc_acc, p, n);
	rx->pos += n;
	swiw_rx_head_done(rx, ev);
	return n;
}

/*
 * swiw_fpdu_rx_push - deframe a buffer, with callbacks
 * @rx: the deframer
 * @data: the next @len octets of the stream
 * @ops: the callbacks (struct swiw_fpdu_rx_ops)
 * @ctx: passed to them
 * @used: if not NULL, set to the octets consumed
 *
 * Consumes all of @data unless something stops it; a partial FPDU at
 * the end is kept for the next call. After a violation, *@used is the
 * stream offset just past the octet that proved it, for any split.
 *
 * Returns 0; -EPROTO on a violation (see swiw_fpdu_rx_advance()); or the
 * first non-zero value a callback returned.
 */
int swiw_fpdu_rx_push(struct swiw_fpdu_rx *rx, const void *data, size_t len,
		      const struct swiw_fpdu_rx_ops *ops, void *ctx,
		      size_t *used)
{
	struct swiw_fpdu_rx_step step;
	const u8 *p = data;
	size_t left = len;
	unsigned int ev;
	int ret = 0;
	u32 n;

	while (left) {
		ret = swiw_fpdu_rx_next(rx, &step);
		if (ret)
			break;
		n = (u32)SWIW_MIN((size_t)step.len, left);
		if (step.kind == SWIW_FPDU_RX_PAYLOAD && ops->payload) {
			ret = ops->payload(ctx, step.off, p, n);
			if (ret)
				break;
		}
		ret = swiw_fpdu_rx_advance(rx, p, n, &ev);
		/* Octets that proved a violation count as consumed: the
		 * count is then the same however the stream was split. */
		if (ret == -EINVAL)
			break;
		p += n;
		left -= n;
		if (ret)
			break;
		if (ev == SWIW_FPDU_EV_HDR && ops->hdr)
			ret = ops->hdr(ctx, rx);
		else if (ev == SWIW_FPDU_EV_END && ops->end)
			ret = ops->end(ctx, rx);
		if (ret)
			break;
	}
	if (used)
		*used = len - left;
	return ret;
}
