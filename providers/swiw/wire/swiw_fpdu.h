/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * MPA FPDU framing (RFC 5044 §4): sizing, a transmit framer and a
 * resumable receive deframer, built for zero-copy engines. Nothing here
 * allocates, copies payload or keeps global state: callers own every
 * object and pass it in.
 *
 * Wire format, per direction of a stream:
 *
 *   FPDU  = ULPDU_LENGTH(16, BE) | ULPDU | PAD(0-3 zero) | CRC(32, LE)
 *   Marker = Reserved(16) = 0 | FPDUPTR(16, BE)
 *
 * - ULPDU_LENGTH counts the ULPDU only; PAD makes 2 + ULPDU + PAD a
 *   multiple of 4, so every FPDU, and every stream offset between FPDUs,
 *   is a multiple of 4.
 * - With markers, one marker stands at every stream offset that is a
 *   multiple of 512, counted from the marker origin: the first octet of
 *   the first FPDU of the direction (offset 0 here; the kernel helper may
 *   use TCP sequence numbers minus that origin, as only offsets mod 512
 *   matter and 2^32 is a multiple of 512).
 * - A marker belongs to the FPDU whose octets follow it. One that falls
 *   exactly where an FPDU begins precedes that FPDU's ULPDU_LENGTH, has
 *   FPDUPTR 0 and is part of that FPDU; any other marker has FPDUPTR =
 *   octets from its FPDU's ULPDU_LENGTH field to the marker. The low two
 *   bits of FPDUPTR are sent as zero and ignored on receipt; a reserved
 *   bit set fails the deframer (SWIW_V_MPA_MARKER).
 * - The CRC (CRC32c, as iSCSI) covers every octet of the FPDU before the
 *   CRC field: ULPDU_LENGTH, ULPDU, PAD and all its markers, a leading
 *   one included. With CRC negotiated off the field is sent as zero (as
 *   siw does) and not checked.
 *
 * What was confirmed, and where (RFC 5044's full text was not at hand in
 * the searchable stores; only its title pages were, so the RFC wording
 * itself is from memory and marked [M]):
 * - Wireshark's packet-iwarp-mpa.c: markers every 512 octets keyed to the
 *   TCP sequence number of the first FPDU of each direction; an FPDU that
 *   starts on a marker point starts with the marker; the CRC is computed
 *   from the FPDU's first octet (that leading marker included) over
 *   ULPDU_LENGTH + ULPDU + PAD + 4 per marker; PAD = (4 - (len + 2) % 4)
 *   % 4; a marker may sit between PAD and CRC; FPDUPTR is shown, never
 *   checked.
 * - Linux irdma (puda.c, irdma_ieq_get_fpdu_len): an FPDU that starts on
 *   a marker point carries that marker, which must be all zero (reserved
 *   0, FPDUPTR 0); a marker exactly at the FPDU's end belongs to the next
 *   FPDU; the CRC covers everything but its own field, leading marker
 *   included, and is read in host (little-endian) order.
 * - tshark 4.0.17 on 1500 FPDUs from this framer, markers and CRC on,
 *   one FPDU per segment (leading markers with FPDUPTR 0, 2577 others,
 *   11 between PAD and CRC): 1500 "Good CRC32", none bad or malformed.
 *   Wireshark mis-sizes an FPDU that ends exactly on a marker point: it
 *   counts that marker in the ending segment (its number_of_markers()
 *   takes (size - offset) / 512 + 1) although its own FPDU parser, irdma
 *   and this code put it at the head of the next FPDU, and loses sync.
 * - MULPDU = EMSS - (6 + 4 * ceil(EMSS / 512) + EMSS mod 4) with markers,
 *   EMSS - (6 + EMSS mod 4) without [M, RFC 5044 §4.5; the marker formula
 *   also as quoted in third-party iWARP code]; the tests check that an
 *   FPDU of MULPDU octets fits EMSS at every stream offset.
 * - [M] FPDUPTR's definition (octets from the start of ULPDU_LENGTH to the
 *   marker, low two bits zero on send and treated as zero on receipt).
 *   Not confirmed: the value of a second marker inside an FPDU that began
 *   with one. This framer sends the distance to ULPDU_LENGTH (per the
 *   definition); the deframer also accepts the distance to the leading
 *   marker, the only other reading.
 */
#ifndef SWIW_FPDU_H
#define SWIW_FPDU_H

#include "swiw_port.h"
#include "iwarp.h"
#include "swiw_violation.h"

/* ULPDU octets the deframer shows before the payload: a Read Request. */
#define SWIW_FPDU_PEEK ((u32)sizeof(struct rdmap_read_req))
/*
 * The most it can be configured to show: 70, the longest fixed-size
 * control messages, an RFC 7306 Atomic Request and a TERMINATE carrying
 * an untagged DDP header and a Read Request's RDMAP header (22 + 2 + 18
 * + 28), so that a DDP layer never reassembles one itself.
 */
#define SWIW_FPDU_PEEK_MAX 70u
/* The shortest ULPDU a DDP peer can send: a tagged header. */
#define SWIW_FPDU_MIN_ULPDU ((u16)sizeof(struct ddp_tagged_hdr))
/* Markers one FPDU can hold: 65535 octets of ULPDU plus framing. */
#define SWIW_FPDU_MAX_MARKERS 130
/* Octets the framer writes itself: length, markers, pad and CRC. */
#define SWIW_FPDU_OWN_MAX                  \
	(MPA_HDR_SIZE + 3 + MPA_CRC_SIZE + \
	 MPA_MARKER_SIZE * SWIW_FPDU_MAX_MARKERS)
/*
 * A ULPDU this short is copied in beside them, so that its FPDU is one
 * piece: a sendmsg() of four pieces (length, header, payload, CRC) cost
 * a 88-octet ping-pong on loopback 0.4 us more one way than one piece.
 */
#define SWIW_FPDU_TX_COPY_MAX 256u

/*
 * A piece of memory, laid out as struct iovec and struct kvec (pointer,
 * then size_t), so that a frame's pieces can go to writev()/sendmsg()
 * after a cast the engine pins with a _Static_assert.
 */
struct swiw_iov {
	const void *base;
	size_t len;
};

/* Sizing ------------------------------------------------------------ */

/* Octets of PAD after a ULPDU of @ulpdu_len octets. */
static inline u32 swiw_mpa_pad(u32 ulpdu_len)
{
	return (4 - ((ulpdu_len + MPA_HDR_SIZE) & 3)) & 3;
}

u32 swiw_mpa_mulpdu(u32 emss, bool markers);
u32 swiw_mpa_fpdu_markers(u32 ulpdu_len, u32 pos, bool markers);
u32 swiw_mpa_fpdu_len(u32 ulpdu_len, u32 pos, bool markers);

/* Transmit ---------------------------------------------------------- */

/*
 * A direction's transmit state. @pos is the stream offset of the next
 * FPDU's first octet, from the marker origin (mod 2^32; a multiple of 4);
 * swiw_fpdu_tx_build() advances it. Fill it in directly.
 */
struct swiw_fpdu_tx {
	u32 pos;
	bool markers;
	bool crc;
};

/*
 * One framed FPDU: @iov (caller's array of @max_iov entries) receives
 * @n_iov pieces totalling @len octets, in wire order. Pieces point either
 * into the caller's ULPDU pieces or into @own (all of them, for a ULPDU of
 * at most SWIW_FPDU_TX_COPY_MAX octets), so the frame must outlive their
 * transmission. @crc is the value sent (0 with CRC off).
 */
struct swiw_fpdu_frame {
	struct swiw_iov *iov;
	u32 max_iov;
	u32 n_iov;
	u32 len;
	u32 crc;
	u8 own[SWIW_FPDU_OWN_MAX];
};

u32 swiw_fpdu_tx_max_iov(u32 n_pieces, u32 ulpdu_len, bool markers);
int swiw_fpdu_tx_build(struct swiw_fpdu_tx *tx, const struct swiw_iov *ulpdu,
		       u32 n_pieces, struct swiw_fpdu_frame *f);

/* Receive ----------------------------------------------------------- */

struct swiw_fpdu_rx_cfg {
	u32 pos; /* stream offset of the first octet fed (an FPDU's start) */
	bool markers;
	bool crc; /* check the CRC field */
	u16 min_ulpdu; /* shorter is a violation: SWIW_FPDU_MIN_ULPDU */
	u16 max_ulpdu; /* longer is a violation; 0: no limit below 65535 */
	u8 peek; /* ULPDU octets shown before the payload (0: the default,
		  * SWIW_FPDU_PEEK; at most SWIW_FPDU_PEEK_MAX) */
};

enum swiw_fpdu_rx_kind {
	SWIW_FPDU_RX_BUFFERED, /* framing or header: into step.buf */
	SWIW_FPDU_RX_PAYLOAD, /* ULPDU octets: wherever the caller wants */
};

/*
 * What the next octets of the stream are: @len of them at most (never
 * crossing a marker or the end of an FPDU part). BUFFERED octets go to
 * @buf, the deframer's own storage; PAYLOAD octets are ULPDU octets from
 * offset @off of the ULPDU on, which the caller places where it likes.
 */
struct swiw_fpdu_rx_step {
	enum swiw_fpdu_rx_kind kind;
	u8 *buf;
	u32 len;
	u32 off;
};

/* Events swiw_fpdu_rx_advance() reports in *ev. */
#define SWIW_FPDU_EV_HDR 1 /* ULPDU length and first octets known */
#define SWIW_FPDU_EV_END 2 /* FPDU complete, CRC good (or not checked) */

/* Deframer state: treat as opaque, use the functions and accessors. */
struct swiw_fpdu_rx {
	u32 pos; /* stream offset of the next octet */
	u32 start; /* stream offset of this FPDU's first octet */
	u32 crc_acc; /* running CRC of this FPDU */
	u32 crc_calc; /* of the last FPDU: computed */
	u32 crc_wire; /* and received */
	u32 ulpdu_len;
	u32 got; /* octets of the current part received */
	u32 need; /* octets of the current part */
	u16 min_ulpdu;
	u16 max_ulpdu;
	u8 part;
	u8 peek;
	u8 hdr_len; /* ULPDU octets in hb after the length */
	bool markers;
	bool crc;
	bool lead; /* this FPDU began with a marker */
	enum swiw_violation violation;
	u8 hb[MPA_HDR_SIZE + SWIW_FPDU_PEEK_MAX]; /* ULPDU_LENGTH, head */
	u8 marker[MPA_MARKER_SIZE];
	u8 trailer[3 + MPA_CRC_SIZE]; /* PAD, CRC */
};

int swiw_fpdu_rx_init(struct swiw_fpdu_rx *rx,
		      const struct swiw_fpdu_rx_cfg *cfg);
int swiw_fpdu_rx_next(struct swiw_fpdu_rx *rx, struct swiw_fpdu_rx_step *step);
int swiw_fpdu_rx_advance(struct swiw_fpdu_rx *rx, const void *data, u32 n,
			 unsigned int *ev);
u32 swiw_fpdu_rx_head(struct swiw_fpdu_rx *rx, const void *data, u32 avail,
		      unsigned int *ev);

/* Valid from SWIW_FPDU_EV_HDR to the next FPDU's first octet. */
static inline u32 swiw_fpdu_rx_ulpdu_len(const struct swiw_fpdu_rx *rx)
{
	return rx->ulpdu_len;
}

/* The first min(ULPDU_LENGTH, cfg.peek) octets of the ULPDU. */
static inline const u8 *swiw_fpdu_rx_hdr(const struct swiw_fpdu_rx *rx,
					 u32 *len)
{
	*len = rx->hdr_len;
	return rx->hb + MPA_HDR_SIZE;
}

/* SWIW_V_NONE, or why the deframer failed (it stays failed). */
static inline enum swiw_violation
swiw_fpdu_rx_violation(const struct swiw_fpdu_rx *rx)
{
	return rx->violation;
}

/* Stream offset of the next octet the deframer expects. */
static inline u32 swiw_fpdu_rx_pos(const struct swiw_fpdu_rx *rx)
{
	return rx->pos;
}

/*
 * Push interface: feed a buffer, get callbacks. hdr() runs when the
 * ULPDU's length and first octets are known (swiw_fpdu_rx_hdr()),
 * payload() for each run of the remaining ULPDU octets (pointing into the
 * fed buffer, markers stripped; before the CRC is known), end() when the
 * FPDU's CRC proved good. A callback returning non-zero stops the push and
 * is returned. Any callback may be NULL.
 */
struct swiw_fpdu_rx_ops {
	int (*hdr)(void *ctx, const struct swiw_fpdu_rx *rx);
	int (*payload)(void *ctx, u32 off, const u8 *data, u32 len);
	int (*end)(void *ctx, const struct swiw_fpdu_rx *rx);
};

int swiw_fpdu_rx_push(struct swiw_fpdu_rx *rx, const void *data, size_t len,
		      const struct swiw_fpdu_rx_ops *ops, void *ctx,
		      size_t *used);

#endif /* SWIW_FPDU_H */
