/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * MPA connection setup (RFC 5044 §7.1, RFC 6581) as a pure state machine:
 * bytes in, bytes out, events. No sockets, no clocks, no allocation: the
 * engine owns the TCP stream, the timers and the buffers, feeds the peer's
 * bytes to swiw_mpa_input(), sends what the machine puts in its transmit
 * buffer, and reads the events and the outcome after every call.
 *
 * Initiator                             Responder
 *   swiw_mpa_connect()  --Request-->      swiw_mpa_input(): EV_REQUEST
 *                                         swiw_mpa_accept() or _reject()
 *   swiw_mpa_input()    <--Reply---       EV_TX (+ EV_RX_FPDU)
 *   EV_SEND_RTR: send the RTR FPDU,
 *   then swiw_mpa_rtr_sent()  --RTR-->    swiw_mpa_rtr_received(kind)
 *   EV_RX_FPDU | EV_TX_FPDU               EV_TX_FPDU
 *
 * Every call is resumable: a frame may arrive in any number of pieces, and
 * swiw_mpa_input() reports how many bytes it took. It never takes a byte
 * that belongs to the FPDU stream: once EV_RX_FPDU is raised, the rest of
 * the input is the engine's.
 *
 * Failures end in SWIW_MPA_S_CLOSED with EV_CLOSED. The engine then sends
 * what is in the transmit buffer (a reject Reply, if EV_TX came with it),
 * a TERMINATE for outcome.violation if outcome.send_term says FPDUs may
 * already flow (swiw_term.c maps the violation to layer/type/code), and
 * closes the TCP connection. outcome.error says how the ULP sees it:
 *   -ECONNREFUSED  a reject Reply went either way, or the initiator
 *                  refused the Reply's terms (markers, CRC strictness);
 *   -ETIMEDOUT     swiw_mpa_timeout() in a waiting state;
 *   -EPROTO        the peer broke the protocol (outcome.violation).
 *
 * Decisions taken here where the RFCs leave room, with what the Linux
 * stacks do:
 * - Rev 0 (pre-RFC RDMAC framing, RFC 5044 App. C) is not spoken: a
 *   responder closes without a Reply (siw sends no reject to rev 0
 *   either), an initiator treats a rev 0 Reply as malformed (irdma too).
 * - A Request of Rev > 2 is answered with a reject Reply of our own Rev
 *   (RFC 5044: "reject or close"; it tells a future peer what we speak).
 *   A Reply of a higher Rev than the Request had is malformed.
 * - A responder answers Rev min(Request Rev, cfg.rev): a rev-1 initiator
 *   gets rev 1 (RFC 5044 frames, no IRD/ORD word). An initiator accepts a
 *   lower-Rev Reply (cxgb4, irdma do; siw refuses one).
 * - The RFC 6581 word exists only with Rev 2 and the 0x10 flag (siw and
 *   cxgb4 look at the flag; irdma assumes it from Rev 2 alone). It is
 *   never shown to the ULP.
 * - Reserved flag bits are ignored on receipt and sent as zero; siw's
 *   GSO experiment (0x08) lives there.
 */
#ifndef SWIW_MPA_H
#define SWIW_MPA_H

#include "swiw_port.h"
#include "iwarp.h"
#include "swiw_violation.h"

/* Largest frame either side sends: header and 256 octets of data. */
#define SWIW_MPA_FRAME_MAX (sizeof(struct mpa_rr) + MPA_MAX_PD_WIRE)
/* ULP private data the peer can send us, once the v2 word is removed. */
#define SWIW_MPA_PD_MAX MPA_MAX_PD_WIRE
/* IRD/ORD value that irdma sends to mean "do not negotiate" (below). */
#define SWIW_MPA_IRD_ORD_NONE MPA_V2_IRD_ORD_MAX

/*
 * Timeouts, in milliseconds; the engine arms its own timer for the kind
 * swiw_mpa_deadline() names and calls swiw_mpa_timeout() when it fires.
 * Request and Reply follow siw (MPAREP_TIMEOUT, MPAREQ_TIMEOUT); siw has
 * no RTR timer, swiw bounds that wait like the Reply.
 */
#define SWIW_MPA_REPLY_TIMEOUT_MS 10000
#define SWIW_MPA_REQUEST_TIMEOUT_MS 5000
#define SWIW_MPA_RTR_TIMEOUT_MS 10000

/*
 * STag of a zero-length RDMA Write RTR, and both STags of a zero-length
 * RDMA Read RTR (TO 0, length 0). Never 0: Chelsio T4/T5 fail any tagged
 * segment with STag 0 even with no payload (zrlio/softiwarp#21), and siw
 * uses 1 for the same reason. RFC 5040 has a receiver skip STag checks
 * on a zero-length tagged message (as read in softiwarp#17), so the
 * engine must not validate it either; any non-zero value then works.
 */
#define SWIW_MPA_RTR_STAG 1

enum swiw_mpa_role {
	SWIW_MPA_INITIATOR = 0,
	SWIW_MPA_RESPONDER = 1,
};

/* The RTR message (RFC 6581): the initiator's first FPDU. */
enum swiw_mpa_rtr {
	SWIW_MPA_RTR_NONE = 0, /* no RTR; as input: "not an RTR message" */
	SWIW_MPA_RTR_SEND = 1, /* B: zero-length Send (needs a receive) */
	SWIW_MPA_RTR_WRITE = 2, /* C: zero-length RDMA Write */
	SWIW_MPA_RTR_READ = 3, /* D: zero-length RDMA Read Request */
};

#define SWIW_MPA_RTR_F(t) (1u << (t))
#define SWIW_MPA_RTR_F_SEND SWIW_MPA_RTR_F(SWIW_MPA_RTR_SEND)
#define SWIW_MPA_RTR_F_WRITE SWIW_MPA_RTR_F(SWIW_MPA_RTR_WRITE)
#define SWIW_MPA_RTR_F_READ SWIW_MPA_RTR_F(SWIW_MPA_RTR_READ)
#define SWIW_MPA_RTR_F_ALL \
	(SWIW_MPA_RTR_F_SEND | SWIW_MPA_RTR_F_WRITE | SWIW_MPA_RTR_F_READ)

/* Peer-to-peer (RFC 6581 Control Flag A). */
enum swiw_mpa_p2p {
	SWIW_MPA_P2P_OFF = 0, /* never: a Request with A is rejected */
	SWIW_MPA_P2P_ON = 1, /* initiator asks; responder takes either */
	SWIW_MPA_P2P_REQUIRED = 2, /* the connection fails without it */
};

/*
 * Knobs and their defaults (swiw_mpa_cfg_init()). One struct serves both
 * roles; a role ignores the other's fields. The defaults interoperate
 * with the kernel's siw, cxgb4 and irdma out of the box:
 *
 * rev = 2
 *	RFC 6581 everywhere: siw, cxgb4 (mpa_rev=2) and irdma all default to
 *	it, and only rev 2 carries IRD/ORD and peer-to-peer. A responder
 *	answers a rev-1 Request in rev 1 regardless.
 * crc_required = false
 *	We do not set C, as siw (mpa_crc_required=false). CRC is still
 *	honoured: C in either frame turns it on both ways (RFC 5044), and
 *	cxgb4 (crc_enabled=1) and irdma set C on every frame.
 * crc_strict = false
 *	siw's mpa_crc_strict: with crc_required off, refuse a peer that sets
 *	C (responder: reject Reply; initiator: refuse the Reply). Off, as in
 *	siw, because cxgb4 and irdma always ask for CRC.
 * markers_wanted = false
 *	We do not set M: siw cannot send markers and rejects a Request with
 *	M; cxgb4 and irdma do not ask for them by default either.
 * markers_can_send = true
 *	We send markers when the peer's frame has M (RFC 5044: a receiver's
 *	demand). cxgb4 (markers_enabled=1) and irdma (iw_ooo) may ask.
 *	Off: a responder rejects such a Request, an initiator refuses.
 * p2p = SWIW_MPA_P2P_ON
 *	An initiator sets A: irdma refuses any v2 frame without A (RST,
 *	-EOPNOTSUPP from irdma_negotiate_mpa_v2_ird_ord), cxgb4 defaults to
 *	peer2peer=1, siw accepts it. A responder accepts a Request with or
 *	without A (siw's default initiator sends none) and echoes A, which
 *	RFC 6581 §9.2 requires and cxgb4 checks (softiwarp#18).
 * rtr_offer = WRITE | READ
 *	What an initiator offers. siw supports only these two (no Send RTR),
 *	irdma offers and accepts these two, cxgb4 answers READ (p2p_type=1)
 *	and fails a mismatch. A Send RTR consumes a posted receive.
 * rtr_pref = { WRITE, READ, SEND }
 *	A responder's preference among the offered types; a type not listed
 *	is not acceptable. WRITE first, as siw: it needs no IRD and no
 *	response. If none is offered, the Request is rejected.
 * v1_rtr = SWIW_MPA_RTR_NONE
 *	RTR used when rev 1 is negotiated and p2p is not OFF. cxgb4 with
 *	peer2peer=1 sends and expects its p2p_type RTR (READ) even in rev 1;
 *	set READ to talk rev 1 to such a peer. No RFC defines this.
 * wait_first_fpdu = false
 *	RFC 5044 §7.1.2: a responder "MUST receive and validate at least one
 *	FPDU before sending any FPDUs". siw, cxgb4 and irdma responders
 *	without peer-to-peer send right after the Reply, and client-server
 *	ULPs rely on it; true makes a non-P2P responder wait for the first
 *	FPDU (reported with swiw_mpa_rtr_received()) before sending.
 * relaxed_ird = true
 *	IRD/ORD that cannot be met are clamped, as siw
 *	(relaxed_ird_negotiation) and cxgb4 (RELAXED_IRD_NEGOTIATION) do:
 *	our ORD is lowered to the peer's IRD, our IRD raised to the peer's
 *	ORD up to ird_max. Off: a mismatch is SWIW_V_MPA_INSUFFICIENT_IRD
 *	(responder: reject Reply; initiator: TERMINATE).
 * ird_max = 128
 *	The highest IRD relaxed negotiation may raise to: the QP's limit
 *	(siw's SIW_MAX_IRD_QP). The engine sets the device's max.
 * *_timeout_ms: SWIW_MPA_*_TIMEOUT_MS above.
 *
 * IRD/ORD 0x3FFF: irdma sends 0x3FFF (IETF_NO_IRD_ORD) in both fields to
 * mean "no IRD/ORD negotiation" and then keeps its own values; it answers
 * such a Request with 0x3FFF in both. swiw does the same: a peer 0x3FFF
 * in either field disables negotiation (outcome.ird_ord_negotiated false,
 * the ULP's values stand) and a responder answers 0x3FFF/0x3FFF. RFC 6581
 * does not name this value as far as checked here; it is the largest the
 * 14-bit field holds, so a peer that reads it as a number also finds no
 * limit in it. A ULP may pass SWIW_MPA_IRD_ORD_NONE itself.
 */
struct swiw_mpa_cfg {
	u8 rev; /* MPA_REV_1 or MPA_REV_2 */
	u8 p2p; /* enum swiw_mpa_p2p */
	u8 rtr_offer; /* initiator: SWIW_MPA_RTR_F_* */
	u8 rtr_pref[3]; /* responder: enum swiw_mpa_rtr, NONE ends it */
	u8 v1_rtr; /* enum swiw_mpa_rtr */
	bool crc_required;
	bool crc_strict;
	bool markers_wanted;
	bool markers_can_send;
	bool wait_first_fpdu;
	bool relaxed_ird;
	u16 ird_max;
	u32 reply_timeout_ms;
	u32 request_timeout_ms;
	u32 rtr_timeout_ms;
};

/* What the ULP brings to connect/accept (rdma_conn_param's part). */
struct swiw_mpa_ulp {
	const void *pd; /* private data, not including the v2 word */
	u16 pd_len;
	u16 ird; /* responder_resources, <= SWIW_MPA_IRD_ORD_NONE */
	u16 ord; /* initiator_depth, <= SWIW_MPA_IRD_ORD_NONE */
};

enum swiw_mpa_state {
	SWIW_MPA_S_IDLE, /* initiator: before swiw_mpa_connect() */
	SWIW_MPA_S_AWAIT_REPLY, /* initiator: Request sent */
	SWIW_MPA_S_RTR_PENDING, /* initiator: the engine sends the RTR */
	SWIW_MPA_S_AWAIT_REQUEST, /* responder: from swiw_mpa_init() */
	SWIW_MPA_S_ULP_DECIDE, /* responder: accept or reject */
	SWIW_MPA_S_AWAIT_RTR, /* responder: Reply sent, no FPDU yet */
	SWIW_MPA_S_ESTABLISHED, /* terminal: FPDUs both ways */
	SWIW_MPA_S_CLOSED, /* terminal: failed, see the outcome */
};

/* Events, accumulated until swiw_mpa_events() returns them. */
#define SWIW_MPA_EV_TX 0x01 /* send outcome.tx_len bytes of tx_buf */
#define SWIW_MPA_EV_REQUEST 0x02 /* responder: accept or reject now */
#define SWIW_MPA_EV_SEND_RTR 0x04 /* initiator: first FPDU is outcome.rtr */
#define SWIW_MPA_EV_RX_FPDU 0x08 /* later input bytes are FPDUs */
#define SWIW_MPA_EV_TX_FPDU 0x10 /* FPDUs may be sent: established */
#define SWIW_MPA_EV_CLOSED 0x20 /* failed: see outcome, then close */
/*
 * EV_CLOSED withdraws every other pending event but EV_TX: a Reply whose
 * RTR is due, followed by early bytes in the same input, raises only
 * EV_CLOSED. Fetch events after every call.
 */

enum swiw_mpa_deadline {
	SWIW_MPA_DL_NONE = 0,
	SWIW_MPA_DL_REPLY, /* initiator waits for the Reply */
	SWIW_MPA_DL_REQUEST, /* responder waits for the Request */
	SWIW_MPA_DL_RTR, /* responder waits for the RTR/first FPDU */
};

enum swiw_mpa_reject {
	SWIW_MPA_REJ_NONE = 0,
	SWIW_MPA_REJ_BY_PEER, /* initiator: Reply with R */
	SWIW_MPA_REJ_BY_US, /* responder: we sent a Reply with R */
	SWIW_MPA_REJ_REFUSED, /* initiator: Reply's terms refused locally */
};

/* What was agreed, or why not. Valid fields depend on the state. */
struct swiw_mpa_outcome {
	int error; /* 0, -ECONNREFUSED, -ETIMEDOUT or -EPROTO */
	enum swiw_violation violation; /* SWIW_V_NONE or the peer's fault */
	bool send_term; /* TERMINATE the violation before closing */
	u8 reject; /* enum swiw_mpa_reject */
	u8 rev; /* revision in use (the Reply's) */
	bool enhanced; /* the RFC 6581 word was exchanged */
	bool crc; /* CRC generated and checked, both ways */
	bool markers_tx; /* we put markers in what we send */
	bool markers_rx; /* the peer puts markers in what we receive */
	bool p2p; /* an RTR message starts FPDU mode */
	u8 rtr; /* enum swiw_mpa_rtr agreed */
	bool ird_ord_negotiated; /* false: rev 1, or a peer 0x3FFF */
	u16 ird; /* agreed: Read Requests we accept at once */
	u16 ord; /* agreed: Read Requests we may have outstanding */
	/* The peer's frame, as received. */
	u8 peer_rev;
	u8 peer_flags;
	bool peer_p2p; /* its A */
	u8 peer_rtr; /* SWIW_MPA_RTR_F_* it offered (or chose) */
	u16 peer_ird; /* 14-bit values of its v2 word */
	u16 peer_ord;
	const u8 *peer_pd; /* in the caller's pd_buf; no v2 word */
	u16 peer_pd_len;
	u16 tx_len; /* bytes of tx_buf to send on EV_TX */
};

/* The machine; the caller allocates it, swiw_mpa_init() fills it. */
struct swiw_mpa {
	struct swiw_mpa_cfg cfg;
	struct swiw_mpa_outcome out;
	u8 role;
	u8 state;
	u32 events;
	u8 *tx_buf;
	u8 *pd_buf;
	/* The frame being received. */
	u8 hdr[sizeof(struct mpa_rr)];
	u8 v2[sizeof(struct mpa_v2_conn)];
	u16 got; /* octets of it received so far */
	u16 pd_len; /* its PD_Length */
	bool peer_enhanced;
	bool no_neg; /* the peer sent 0x3FFF */
	bool expect_any; /* AWAIT_RTR: any first FPDU will do */
	/* What we send. */
	u8 sent_flags;
	u8 reply_rev;
	bool reply_enhanced;
	u16 ird; /* the ULP's, as sent or to be answered */
	u16 ord;
};

/*
 * Fills @cfg with the defaults documented above. Never fails.
 */
/* A Request or Reply carries the RFC 6581 word: rev 2 and the 0x10 flag. */
static inline bool swiw_mpa_rr_enhanced(const struct mpa_rr *rr)
{
	return rr->rev == MPA_REV_2 && (rr->flags & MPA_RR_FLAG_ENHANCED);
}

/*
 * How many octets the Request or Reply frame whose first @got octets are
 * at @frame needs in all: its header, then the private data the header
 * announces. A reader that asks for no more than this never takes an
 * octet past the frame from its socket, and never waits on a partial
 * frame it has already read.
 */
static inline size_t swiw_mpa_rr_need(const void *frame, size_t got)
{
	/* Any alignment: the frame may sit anywhere in a stream buffer. */
	if (got < sizeof(struct mpa_rr))
		return sizeof(struct mpa_rr);
	return sizeof(struct mpa_rr) +
	       swiw_get_be16((const u8 *)frame +
			     offsetof(struct mpa_rr, pd_len));
}

/*
 * The ULP's private data in the whole Request (@request) or Reply frame
 * @frame of @len octets, after the RFC 6581 word when the frame has one,
 * for code that holds a frame the machine has already judged (the broker
 * hands the Request over). Returns 0, or -EBADMSG when the key is not the
 * expected one or the lengths do not add up.
 */
int swiw_mpa_frame_ulp_pd(const void *frame, size_t len, bool request,
			  const u8 **pd, u16 *pd_len);

void swiw_mpa_cfg_init(struct swiw_mpa_cfg *cfg);

/*
 * Starts a machine for @role with a copy of @cfg. @tx_buf (at least
 * SWIW_MPA_FRAME_MAX bytes) receives the frame to send; @pd_buf (at least
 * SWIW_MPA_PD_MAX bytes) receives the peer's private data. Both must
 * outlive the machine. A responder starts in AWAIT_REQUEST.
 * Returns 0, or -EINVAL for a bad argument or knob (rev not 1/2, unknown
 * p2p/RTR value, initiator with p2p and rev 2 but nothing offered,
 * ird_max above 0x3FFF, buffer too small).
 */
int swiw_mpa_init(struct swiw_mpa *m, enum swiw_mpa_role role,
		  const struct swiw_mpa_cfg *cfg, u8 *tx_buf, size_t tx_size,
		  u8 *pd_buf, size_t pd_size);

/*
 * Initiator: builds the Request from @ulp into tx_buf (EV_TX) and waits
 * for the Reply. With p2p and a READ RTR possible, ORD 0 is sent as 1
 * (siw and cxgb4 do the same). Returns 0, -EINVAL when not an idle
 * initiator, or when the private data (plus 4 octets with rev 2) would
 * exceed 256 octets or IRD/ORD exceed 0x3FFF; nothing is sent then.
 */
int swiw_mpa_connect(struct swiw_mpa *m, const struct swiw_mpa_ulp *ulp);

/*
 * Feeds @len bytes the peer sent; *@consumed tells how many the machine
 * took (all of them while a frame is incomplete, none once FPDU mode has
 * begun: those belong to the engine). Protocol outcomes are reported in
 * the state, events and outcome, not in the return value.
 * Returns 0, or -EINVAL for a NULL @consumed or a NULL @buf with @len.
 */
int swiw_mpa_input(struct swiw_mpa *m, const void *buf, size_t len,
		   size_t *consumed);

/*
 * Responder, after EV_REQUEST: accepts with @ulp's private data and
 * IRD/ORD, negotiated against the Request's; builds the Reply (EV_TX).
 * If IRD/ORD cannot be met, a reject Reply goes out instead (state
 * CLOSED, violation INSUFFICIENT_IRD). Returns 0, or -EINVAL when not
 * deciding or @ulp is out of bounds (private data plus the v2 word over
 * 256 octets, IRD/ORD over 0x3FFF); the decision is still open then.
 */
int swiw_mpa_accept(struct swiw_mpa *m, const struct swiw_mpa_ulp *ulp);

/*
 * Responder, after EV_REQUEST: rejects with optional private data;
 * builds a Reply with R (EV_TX) and closes (EV_CLOSED, -ECONNREFUSED).
 * Returns 0, or -EINVAL when not deciding or @pd_len too long.
 */
int swiw_mpa_reject(struct swiw_mpa *m, const void *pd, u16 pd_len);

/*
 * Initiator, after EV_SEND_RTR: the engine has queued the RTR as the
 * first FPDU; FPDUs may now flow both ways (EV_RX_FPDU | EV_TX_FPDU).
 * Returns 0, or -EINVAL in any other state.
 */
int swiw_mpa_rtr_sent(struct swiw_mpa *m);

/*
 * Responder in AWAIT_RTR: the engine validated the first FPDU and reports
 * its kind (SWIW_MPA_RTR_NONE if it is not a zero-length RTR message).
 * The agreed kind, or any FPDU with wait_first_fpdu, establishes the
 * connection (EV_TX_FPDU); anything else is SWIW_V_MPA_NO_MATCHING_RTR.
 * Returns 0, or -EINVAL in another state or for an unknown kind.
 */
int swiw_mpa_rtr_received(struct swiw_mpa *m, enum swiw_mpa_rtr kind);

/*
 * The timer for swiw_mpa_deadline() expired: closes with -ETIMEDOUT.
 * Returns 0, or -EINVAL if the machine waits on no deadline.
 */
int swiw_mpa_timeout(struct swiw_mpa *m);

/*
 * What the machine waits for, and (if @ms) for how long from entering the
 * state. Never fails.
 */
enum swiw_mpa_deadline swiw_mpa_deadline(const struct swiw_mpa *m, u32 *ms);

/* Returns the events raised since the last call, and clears them. */
u32 swiw_mpa_events(struct swiw_mpa *m);

static inline enum swiw_mpa_state swiw_mpa_state(const struct swiw_mpa *m)
{
	return (enum swiw_mpa_state)m->state;
}

static inline const struct swiw_mpa_outcome *
swiw_mpa_outcome(const struct swiw_mpa *m)
{
	return &m->out;
}

#endif /* SWIW_MPA_H */
