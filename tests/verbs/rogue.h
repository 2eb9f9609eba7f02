/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A misbehaving iWARP peer for the verbs tests: a plain TCP socket in
 * the test process that speaks MPA, DDP and RDMAP through the wire core
 * (providers/swiw/wire), so it can send what no correct stack sends
 * while the swiw QP at the other end is the real one. It connects as
 * the MPA initiator (CRC on, peer-to-peer with a Write RTR) to a swiw
 * listener, then sends messages built by swiw_ddp_tx and reads back
 * whole FPDUs, which swiw_ddp_parse() decodes. Every wait is bounded.
 */
#ifndef SWIW_ROGUE_H
#define SWIW_ROGUE_H

#include <stdbool.h>
#include <stdint.h>

#include "swiw_ddp.h"
#include "swiw_fpdu.h"
#include "swiw_mpa.h"

/* IRD and ORD the rogue offers in its MPA Request. */
#define ROGUE_IRD_ORD 8
/* Segment headers of the messages sent that the rogue remembers. */
#define ROGUE_HDR_LOG 64

struct rogue {
	int fd;
	bool crc;
	struct swiw_mpa mpa;
	u8 mpa_tx[SWIW_MPA_FRAME_MAX];
	u8 mpa_pd[SWIW_MPA_PD_MAX];
	struct swiw_fpdu_tx ftx;
	struct swiw_fpdu_rx frx;
	u32 msn[RDMAP_QN_COUNT]; /* the last MSN sent on each queue */
	/* Octets read from the socket and not yet deframed. */
	u8 in[16384];
	size_t in_head, in_tail;
	/* The FPDU being received, and whether it is complete. */
	u8 ulpdu[65536];
	u32 ulpdu_len;
	bool whole;
	/* Headers of the segments of the last message sent, in order. */
	u8 hdr[ROGUE_HDR_LOG][SWIW_DDP_HDR_MAX];
	u32 seg_len[ROGUE_HDR_LOG]; /* its ULPDU: header and payload */
	u32 nhdr;
};

/* One message received whole (each is a single FPDU here). */
struct rogue_msg {
	struct swiw_ddp_seg seg;
	enum swiw_violation v; /* what swiw_ddp_parse() found wrong, if any */
	const u8 *ulpdu; /* in the rogue's buffer, until the next receive */
	u32 len;
	const u8 *payload;
};

/* TCP to 127.0.0.1:@port and the MPA Request: 0 or a negative errno. */
int rogue_connect(struct rogue *r, uint16_t port);

/*
 * The Reply, then the RTR: FPDUs may flow both ways afterwards. 0, or a
 * negative errno (-EPROTO: the Reply was refused or a reject).
 */
int rogue_establish(struct rogue *r, int ms);

/*
 * Sends @m with @m->len octets of @payload in segments of at most
 * @mulpdu octets. An untagged message whose msn is 0 takes the next MSN
 * of its queue. 0 or a negative errno.
 */
int rogue_send(struct rogue *r, const struct swiw_rdmap_msg *m,
	       const void *payload, u32 mulpdu);

/*
 * One FPDU around a ULPDU the caller built (@hdr, then @payload), which
 * need not be valid: 0 or a negative errno.
 */
int rogue_send_ulpdu(struct rogue *r, const void *hdr, u32 hdr_len,
		     const void *payload, u32 payload_len);

/*
 * The same FPDU built into @out (@max octets) instead, *@len long, for the
 * caller to send in parts with rogue_write_raw: 0 or a negative errno.
 * The stream counts it as sent (marker positions).
 */
int rogue_frame(struct rogue *r, const void *hdr, u32 hdr_len,
		const void *payload, u32 payload_len, u8 *out, size_t max,
		size_t *len);

/* @len octets of the stream, as they are: 0 or a negative errno. */
int rogue_write_raw(struct rogue *r, const void *buf, size_t len);

/*
 * The next FPDU within @ms: 0, -ETIMEDOUT, -ENODATA at the peer's FIN,
 * -EPROTO when the framing (length, CRC) is broken, another -errno.
 */
int rogue_recv(struct rogue *r, struct rogue_msg *msg, int ms);

/*
 * The peer's FIN within @ms, with no FPDU before it: 0; -EBADMSG if an
 * FPDU came, -ETIMEDOUT, or another negative errno.
 */
int rogue_wait_eof(struct rogue *r, int ms);

void rogue_close(struct rogue *r);

#endif /* SWIW_ROGUE_H */
