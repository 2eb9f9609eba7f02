// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MPA FPDU sizing and the transmit framer (RFC 5044 §4; conventions and
 * what was confirmed are in swiw_fpdu.h). The framer references the
 * caller's ULPDU pieces and writes only the octets MPA adds: length,
 * markers, pad and CRC.
 */
#include "swiw_fpdu.h"

#define SWIW_MARKER_MASK (MPA_MARKER_SPACING - 1)

/* Offset from a stream offset to the next marker point (0 if on one). */
static inline u32 swiw_marker_gap(u32 pos)
{
	return (0u - pos) & SWIW_MARKER_MASK;
}

/*
 * swiw_mpa_mulpdu - largest ULPDU to put in one TCP segment (RFC 5044 §4.5)
 * @emss: effective maximum segment size of the connection
 * @markers: whether this direction carries markers
 *
 * Returns EMSS - (6 + 4 * ceil(EMSS / 512) + EMSS mod 4) with markers, or
 * EMSS - (6 + EMSS mod 4) without, capped at 65535 (ULPDU_LENGTH is 16
 * bits); 0 if EMSS is too small to carry any FPDU. An FPDU of that size
 * never exceeds EMSS octets, wherever in the stream it starts: the
 * markers counted are the most such a span can hold.
 */
u32 swiw_mpa_mulpdu(u32 emss, bool markers)
{
	u32 over = MPA_HDR_SIZE + MPA_CRC_SIZE + emss % 4;

	if (markers)
		over += MPA_MARKER_SIZE *
			((emss + MPA_MARKER_SPACING - 1) / MPA_MARKER_SPACING);
	if (emss <= over)
		return 0;
	return SWIW_MIN(emss - over, (u32)MPA_MAX_ULPDU_LEN);
}

/*
 * swiw_mpa_fpdu_markers - markers inside one FPDU
 * @ulpdu_len: octets of ULPDU
 * @pos: stream offset of the FPDU's first octet (a multiple of 4)
 * @markers: whether the direction carries markers
 *
 * Returns how many markers the FPDU holds, a leading one included: marker
 * k (from 0) falls after d + 508 k of the FPDU's own octets, d being the
 * gap to the first marker point, and belongs to the FPDU while that is
 * less than all of them (one exactly at the end starts the next FPDU).
 */
u32 swiw_mpa_fpdu_markers(u32 ulpdu_len, u32 pos, bool markers)
{
	u32 body = MPA_HDR_SIZE + ulpdu_len + swiw_mpa_pad(ulpdu_len) +
		   MPA_CRC_SIZE;
	u32 gap = swiw_marker_gap(pos);

	if (!markers || body <= gap)
		return 0;
	return (body - gap - 1) / (MPA_MARKER_SPACING - MPA_MARKER_SIZE) + 1;
}

/*
 * swiw_mpa_fpdu_len - octets one FPDU takes on the wire
 * @ulpdu_len: octets of ULPDU
 * @pos: stream offset of the FPDU's first octet (a multiple of 4)
 * @markers: whether the direction carries markers
 *
 * Returns 2 + ULPDU + PAD + 4, plus 4 per marker inside the FPDU.
 */
u32 swiw_mpa_fpdu_len(u32 ulpdu_len, u32 pos, bool markers)
{
	return MPA_HDR_SIZE + ulpdu_len + swiw_mpa_pad(ulpdu_len) +
	       MPA_CRC_SIZE +
	       MPA_MARKER_SIZE * swiw_mpa_fpdu_markers(ulpdu_len, pos, markers);
}

/*
 * swiw_fpdu_tx_max_iov - pieces swiw_fpdu_tx_build() may need
 * @n_pieces: ULPDU pieces the caller will pass
 * @ulpdu_len: their total length
 * @markers: whether the direction carries markers
 *
 * Returns a bound valid at any stream offset: one run of framer octets at
 * each end, the caller's pieces, and two more per marker (the marker, and
 * the piece it splits).
 */
u32 swiw_fpdu_tx_max_iov(u32 n_pieces, u32 ulpdu_len, bool markers)
{
	return n_pieces + 2 + 2 * swiw_mpa_fpdu_markers(ulpdu_len, 0, markers);
}

/*
 * The framer's walk through one FPDU. Its two steps are inlined into
 * swiw_fpdu_tx_build, where most of their arguments are constants: 160
 * fewer instructions an FPDU than as calls (callgrind, ib_send_lat 64 B).
 */
struct swiw_tx_walk {
	struct swiw_fpdu_frame *f;
	u32 own; /* octets used in f->own */
	u32 off; /* FPDU offset of the next octet, markers included */
	u32 next_marker; /* FPDU offset of the next marker */
	u32 markers_left;
	u32 crc;
	bool crc_on;
	bool lead; /* the FPDU starts with a marker */
};

static __always_inline void swiw_tx_piece(struct swiw_tx_walk *w, const u8 *p,
					  u32 len, bool owned)
{
	struct swiw_fpdu_frame *f = w->f;
	struct swiw_iov *last = f->n_iov ? &f->iov[f->n_iov - 1] : NULL;

	if (owned) {
		memcpy(f->own + w->own, p, len);
		p = f->own + w->own;
		w->own += len;
		/* Framer octets that follow each other are one piece. */
		if (last && (const u8 *)last->base + last->len == p) {
			last->len += len;
			return;
		}
	}
	f->iov[f->n_iov].base = p;
	f->iov[f->n_iov].len = len;
	f->n_iov++;
}

static void swiw_tx_marker(struct swiw_tx_walk *w)
{
	u8 m[MPA_MARKER_SIZE];
	u32 ptr = w->off;

	/* A leading marker points at its own FPDU: 0. Later ones count
	 * from ULPDU_LENGTH, which a leading marker pushes 4 octets on. */
	if (w->lead && ptr)
		ptr -= MPA_MARKER_SIZE;
	swiw_put_be16(m, 0);
	swiw_put_be16(m + 2, (u16)ptr);
	swiw_tx_piece(w, m, sizeof(m), true);
	if (w->crc_on)
		w->crc = swiw_crc32c(w->crc, m, sizeof(m));
	w->off += MPA_MARKER_SIZE;
	w->next_marker += MPA_MARKER_SPACING;
	w->markers_left--;
}

/* Emits @len octets of the FPDU's own content, markers cut in. */
static __always_inline void swiw_tx_emit(struct swiw_tx_walk *w, const u8 *p,
					 u32 len, bool owned, bool crc)
{
	u32 n;

	while (len) {
		if (w->markers_left && w->off == w->next_marker)
			swiw_tx_marker(w);
		n = len;
		if (w->markers_left)
			n = SWIW_MIN(n, w->next_marker - w->off);
		swiw_tx_piece(w, p, n, owned);
		if (crc && w->crc_on)
			w->crc = swiw_crc32c(w->crc, p, n);
		w->off += n;
		p += n;
		len -= n;
	}
}

/*
 * A short ULPDU with no marker in its FPDU (the common small message): the
 * whole FPDU is laid down in @f->own in one pass, one piece. The walk
 * below gives the same octets for ~200 instructions more an FPDU.
 */
static int fpdu_tx_short(struct swiw_fpdu_tx *tx, const struct swiw_iov *ulpdu,
			 u32 n_pieces, u32 len, u32 pad,
			 struct swiw_fpdu_frame *f)
{
	u8 *o = f->own;
	u32 at = MPA_HDR_SIZE, i;
	__le32 le;

	swiw_put_be16(o, (u16)len);
	for (i = 0; i < n_pieces; i++) {
		if (!ulpdu[i].len)
			continue;
		memcpy(o + at, ulpdu[i].base, ulpdu[i].len);
		at += (u32)ulpdu[i].len;
	}
	memset(o + at, 0, pad);
	at += pad;
	f->crc = tx->crc ? swiw_crc32c_final(
				   swiw_crc32c(SWIW_CRC32C_INIT, o, at)) :
			   0;
	le = swiw_cpu_to_le32(f->crc);
	memcpy(o + at, &le, MPA_CRC_SIZE);
	at += MPA_CRC_SIZE;
	f->iov[0].base = o;
	f->iov[0].len = at;
	f->n_iov = 1;
	f->len = at;
	tx->pos += at;
	return 0;
}

/*
 * swiw_fpdu_tx_build - frame one ULPDU as an FPDU
 * @tx: the direction's transmit state; @tx->pos advances by the FPDU
 * @ulpdu: the ULPDU (DDP/RDMAP header, then payload) as pieces, in order
 * @n_pieces: how many; empty pieces are allowed and skipped
 * @f: the frame: @f->iov and @f->max_iov in, the rest out
 *
 * Produces, in @f->iov, the FPDU in wire order: ULPDU_LENGTH, the ULPDU
 * pieces cut where markers fall, the markers, pad and CRC. The CRC covers
 * every octet before it, markers included (zero with CRC off). A ULPDU of
 * up to SWIW_FPDU_TX_COPY_MAX octets is copied into @f->own, and the
 * FPDU is then one piece; a longer one is not copied.
 *
 * Returns 0; -EMSGSIZE if the ULPDU exceeds 65535 octets or a marker's
 * FPDUPTR would not fit 16 bits (keep ULPDUs to swiw_mpa_mulpdu());
 * -ENOSPC if @f->max_iov is too small for this FPDU
 * (swiw_fpdu_tx_max_iov() is always enough); -EINVAL if markers are on
 * and @tx->pos is not a multiple of 4. On error nothing changes.
 */
int swiw_fpdu_tx_build(struct swiw_fpdu_tx *tx, const struct swiw_iov *ulpdu,
		       u32 n_pieces, struct swiw_fpdu_frame *f)
{
	struct swiw_tx_walk w = { .f = f };
	static const u8 zero[4];
	u64 total = 0;
	u32 len, pad, m, last, i;
	u8 hdr[MPA_HDR_SIZE], crc[MPA_CRC_SIZE];
	bool copy;
	__le32 le;

	for (i = 0; i < n_pieces; i++)
		total += ulpdu[i].len;
	if (total > MPA_MAX_ULPDU_LEN)
		return -EMSGSIZE;
	len = (u32)total;
	if (tx->markers && (tx->pos & 3))
		return -EINVAL;
	pad = swiw_mpa_pad(len);
	m = swiw_mpa_fpdu_markers(len, tx->pos, tx->markers);
	w.next_marker = swiw_marker_gap(tx->pos);
	w.lead = m && w.next_marker == 0;
	if (m) {
		last = w.next_marker + (m - 1) * MPA_MARKER_SPACING;
		if (w.lead && last)
			last -= MPA_MARKER_SIZE;
		if (last > 0xffff)
			return -EMSGSIZE;
	}
	if (f->max_iov < n_pieces + 2 + 2 * m)
		return -ENOSPC;

	copy = len <= SWIW_FPDU_TX_COPY_MAX &&
	       MPA_HDR_SIZE + len + pad + MPA_CRC_SIZE + MPA_MARKER_SIZE * m <=
		       sizeof(f->own);
	if (!m && copy)
		return fpdu_tx_short(tx, ulpdu, n_pieces, len, pad, f);
	w.markers_left = m;
	w.crc_on = tx->crc;
	w.crc = SWIW_CRC32C_INIT;
	f->n_iov = 0;

	swiw_put_be16(hdr, (u16)len);
	swiw_tx_emit(&w, hdr, MPA_HDR_SIZE, true, true);
	for (i = 0; i < n_pieces; i++)
		swiw_tx_emit(&w, ulpdu[i].base, (u32)ulpdu[i].len, copy, true);
	swiw_tx_emit(&w, zero, pad, true, true);
	/* A marker may stand between pad and CRC; it is covered. */
	if (w.markers_left && w.off == w.next_marker)
		swiw_tx_marker(&w);
	f->crc = tx->crc ? swiw_crc32c_final(w.crc) : 0;
	le = swiw_cpu_to_le32(f->crc);
	memcpy(crc, &le, sizeof(crc));
	swiw_tx_emit(&w, crc, MPA_CRC_SIZE, true, false);

	f->len = w.off;
	tx->pos += w.off;
	return 0;
}
