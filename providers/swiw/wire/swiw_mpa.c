// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MPA Request/Reply negotiation, initiator and responder (swiw_mpa.h has
 * the contract and the policy). The machine collects one frame at a time
 * into its header buffer and the caller's private-data buffer, checks the
 * header as soon as it is complete, and decides once the whole frame is
 * in.
 */
#include "swiw_mpa.h"

#define RR_SIZE ((u16)sizeof(struct mpa_rr))
#define V2_SIZE ((u16)sizeof(struct mpa_v2_conn))

void swiw_mpa_cfg_init(struct swiw_mpa_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->rev = MPA_REV_2;
	cfg->p2p = SWIW_MPA_P2P_ON;
	cfg->rtr_offer = SWIW_MPA_RTR_F_WRITE | SWIW_MPA_RTR_F_READ;
	cfg->rtr_pref[0] = SWIW_MPA_RTR_WRITE;
	cfg->rtr_pref[1] = SWIW_MPA_RTR_READ;
	cfg->rtr_pref[2] = SWIW_MPA_RTR_SEND;
	cfg->v1_rtr = SWIW_MPA_RTR_NONE;
	cfg->crc_required = false;
	cfg->crc_strict = false;
	cfg->markers_wanted = false;
	cfg->markers_can_send = true;
	cfg->wait_first_fpdu = false;
	cfg->relaxed_ird = true;
	cfg->ird_max = 128;
	cfg->reply_timeout_ms = SWIW_MPA_REPLY_TIMEOUT_MS;
	cfg->request_timeout_ms = SWIW_MPA_REQUEST_TIMEOUT_MS;
	cfg->rtr_timeout_ms = SWIW_MPA_RTR_TIMEOUT_MS;
}

static bool mpa_cfg_valid(const struct swiw_mpa_cfg *c, enum swiw_mpa_role role)
{
	unsigned int i;

	if (c->rev != MPA_REV_1 && c->rev != MPA_REV_2)
		return false;
	if (c->p2p > SWIW_MPA_P2P_REQUIRED)
		return false;
	if (c->rtr_offer & ~SWIW_MPA_RTR_F_ALL)
		return false;
	if (c->v1_rtr > SWIW_MPA_RTR_READ)
		return false;
	for (i = 0; i < SWIW_ARRAY_SIZE(c->rtr_pref); i++)
		if (c->rtr_pref[i] > SWIW_MPA_RTR_READ)
			return false;
	if (c->ird_max > MPA_V2_IRD_ORD_MAX)
		return false;
	/* An initiator asking for peer-to-peer must offer an RTR. */
	if (role == SWIW_MPA_INITIATOR && c->rev == MPA_REV_2 &&
	    c->p2p != SWIW_MPA_P2P_OFF && !c->rtr_offer)
		return false;
	return true;
}

int swiw_mpa_init(struct swiw_mpa *m, enum swiw_mpa_role role,
		  const struct swiw_mpa_cfg *cfg, u8 *tx_buf, size_t tx_size,
		  u8 *pd_buf, size_t pd_size)
{
	if (!m || !cfg || !tx_buf || !pd_buf)
		return -EINVAL;
	if (role != SWIW_MPA_INITIATOR && role != SWIW_MPA_RESPONDER)
		return -EINVAL;
	if (tx_size < SWIW_MPA_FRAME_MAX || pd_size < SWIW_MPA_PD_MAX)
		return -EINVAL;
	if (!mpa_cfg_valid(cfg, role))
		return -EINVAL;
	memset(m, 0, sizeof(*m));
	m->cfg = *cfg;
	m->role = (u8)role;
	m->tx_buf = tx_buf;
	m->pd_buf = pd_buf;
	m->out.peer_pd = pd_buf;
	m->state = role == SWIW_MPA_RESPONDER ? SWIW_MPA_S_AWAIT_REQUEST :
						SWIW_MPA_S_IDLE;
	return 0;
}

u32 swiw_mpa_events(struct swiw_mpa *m)
{
	u32 ev = m->events;

	m->events = 0;
	return ev;
}

enum swiw_mpa_deadline swiw_mpa_deadline(const struct swiw_mpa *m, u32 *ms)
{
	enum swiw_mpa_deadline dl = SWIW_MPA_DL_NONE;
	u32 t = 0;

	switch (m->state) {
	case SWIW_MPA_S_AWAIT_REPLY:
		dl = SWIW_MPA_DL_REPLY;
		t = m->cfg.reply_timeout_ms;
		break;
	case SWIW_MPA_S_AWAIT_REQUEST:
		dl = SWIW_MPA_DL_REQUEST;
		t = m->cfg.request_timeout_ms;
		break;
	case SWIW_MPA_S_AWAIT_RTR:
		dl = SWIW_MPA_DL_RTR;
		t = m->cfg.rtr_timeout_ms;
		break;
	default:
		break;
	}
	if (ms)
		*ms = t;
	return dl;
}

/* Ends the handshake; the engine closes TCP (after TERMINATE if @term). */
static void mpa_close(struct swiw_mpa *m, int err, enum swiw_violation v,
		      bool term)
{
	m->out.error = err;
	m->out.violation = v;
	m->out.send_term = term;
	m->state = SWIW_MPA_S_CLOSED;
	swiw_wire_dbg(
		"MPA %s: connection setup failed: error %d, violation %d%s",
		m->role == SWIW_MPA_INITIATOR ? "initiator" : "responder", err,
		(int)v, term ? ", sending TERMINATE" : "");
	/* What this call had started is moot; a reject Reply still goes. */
	m->events &= SWIW_MPA_EV_TX;
	m->events |= SWIW_MPA_EV_CLOSED;
}

static bool mpa_ulp_valid(const struct swiw_mpa_ulp *ulp, bool enhanced)
{
	u32 wire = (u32)ulp->pd_len + (enhanced ? V2_SIZE : 0);

	if (ulp->pd_len && !ulp->pd)
		return false;
	if (wire > MPA_MAX_PD_WIRE)
		return false;
	return ulp->ird <= MPA_V2_IRD_ORD_MAX && ulp->ord <= MPA_V2_IRD_ORD_MAX;
}

/*
 * Writes a Request or Reply into tx_buf: header, the RFC 6581 word if
 * @v2, then the ULP's private data. Callers checked the lengths.
 */
static void mpa_build(struct swiw_mpa *m, const char *key, u8 flags, u8 rev,
		      const struct mpa_v2_conn *v2, const void *pd, u16 pd_len)
{
	struct mpa_rr rr;
	u16 len = pd_len + (v2 ? V2_SIZE : 0);
	u8 *p = m->tx_buf;

	memcpy(rr.key, key, MPA_KEY_LEN);
	rr.flags = flags;
	rr.rev = rev;
	rr.pd_len = swiw_cpu_to_be16(len);
	memcpy(p, &rr, RR_SIZE);
	p += RR_SIZE;
	if (v2) {
		memcpy(p, v2, V2_SIZE);
		p += V2_SIZE;
	}
	if (pd_len)
		memcpy(p, pd, pd_len);
	m->out.tx_len = RR_SIZE + len;
	m->events |= SWIW_MPA_EV_TX;
}

static __be16 mpa_rtr_bit_ird(u8 rtr)
{
	return rtr == SWIW_MPA_RTR_SEND ? MPA_V2_RDMA_SEND_RTR : 0;
}

static __be16 mpa_rtr_bit_ord(u8 rtr)
{
	if (rtr == SWIW_MPA_RTR_WRITE)
		return MPA_V2_RDMA_WRITE_RTR;
	if (rtr == SWIW_MPA_RTR_READ)
		return MPA_V2_RDMA_READ_RTR;
	return 0;
}

static void mpa_v2_put(struct mpa_v2_conn *v2, u16 ird, u16 ord, bool p2p,
		       u8 rtr_mask)
{
	v2->ird = swiw_cpu_to_be16(ird & MPA_V2_IRD_ORD_MAX);
	v2->ord = swiw_cpu_to_be16(ord & MPA_V2_IRD_ORD_MAX);
	if (p2p)
		v2->ird |= MPA_V2_PEER_TO_PEER;
	if (rtr_mask & SWIW_MPA_RTR_F_SEND)
		v2->ird |= mpa_rtr_bit_ird(SWIW_MPA_RTR_SEND);
	if (rtr_mask & SWIW_MPA_RTR_F_WRITE)
		v2->ord |= mpa_rtr_bit_ord(SWIW_MPA_RTR_WRITE);
	if (rtr_mask & SWIW_MPA_RTR_F_READ)
		v2->ord |= mpa_rtr_bit_ord(SWIW_MPA_RTR_READ);
}

/* Decodes the peer's RFC 6581 word into the outcome. */
static void mpa_v2_get(struct swiw_mpa *m)
{
	struct mpa_v2_conn v2;
	u8 mask = 0;

	memcpy(&v2, m->v2, V2_SIZE);
	m->out.peer_ird = swiw_be16_to_cpu(v2.ird & MPA_V2_MASK_IRD_ORD);
	m->out.peer_ord = swiw_be16_to_cpu(v2.ord & MPA_V2_MASK_IRD_ORD);
	m->out.peer_p2p = (v2.ird & MPA_V2_PEER_TO_PEER) != 0;
	if (v2.ird & MPA_V2_RDMA_SEND_RTR)
		mask |= SWIW_MPA_RTR_F_SEND;
	if (v2.ord & MPA_V2_RDMA_WRITE_RTR)
		mask |= SWIW_MPA_RTR_F_WRITE;
	if (v2.ord & MPA_V2_RDMA_READ_RTR)
		mask |= SWIW_MPA_RTR_F_READ;
	m->out.peer_rtr = mask;
	m->no_neg = m->out.peer_ird == MPA_V2_IRD_ORD_MAX ||
		    m->out.peer_ord == MPA_V2_IRD_ORD_MAX;
}

/* The responder's pick: the first preferred type the initiator offered. */
static u8 mpa_rtr_pick(const struct swiw_mpa_cfg *c, u8 offered)
{
	unsigned int i;

	for (i = 0; i < SWIW_ARRAY_SIZE(c->rtr_pref); i++) {
		if (c->rtr_pref[i] == SWIW_MPA_RTR_NONE)
			break;
		if (offered & SWIW_MPA_RTR_F(c->rtr_pref[i]))
			return c->rtr_pref[i];
	}
	return SWIW_MPA_RTR_NONE;
}

/*
 * Reject Reply. With the v2 word it carries A and one RTR bit when the
 * Request had A, and IRD/ORD 0x3FFF: irdma parses the word before it
 * looks at R, and resets instead of reporting the reject unless the word
 * has A and a WRITE or READ bit and IRD/ORD it accepts. siw and cxgb4
 * check R first.
 */
static void mpa_send_reject(struct swiw_mpa *m, const void *pd, u16 pd_len)
{
	struct mpa_v2_conn v2;
	u8 flags = MPA_RR_FLAG_REJECT;
	u8 rtr = m->out.rtr;

	if (m->reply_enhanced) {
		flags |= MPA_RR_FLAG_ENHANCED;
		if (rtr == SWIW_MPA_RTR_NONE)
			rtr = m->out.peer_rtr & SWIW_MPA_RTR_F_WRITE ?
				      SWIW_MPA_RTR_WRITE :
			      m->out.peer_rtr & SWIW_MPA_RTR_F_READ ?
				      SWIW_MPA_RTR_READ :
				      SWIW_MPA_RTR_NONE;
		mpa_v2_put(&v2, SWIW_MPA_IRD_ORD_NONE, SWIW_MPA_IRD_ORD_NONE,
			   m->out.peer_p2p,
			   (m->out.peer_p2p && rtr) ? SWIW_MPA_RTR_F(rtr) : 0);
	}
	mpa_build(m, MPA_KEY_REP, flags, m->reply_rev,
		  m->reply_enhanced ? &v2 : NULL, pd, pd_len);
	m->out.reject = SWIW_MPA_REJ_BY_US;
	mpa_close(m, -ECONNREFUSED, m->out.violation, false);
}

/* Responder: a policy or peer fault ends the Request with a reject. */
static void mpa_auto_reject(struct swiw_mpa *m, enum swiw_violation v)
{
	m->out.violation = v;
	mpa_send_reject(m, NULL, 0);
}

/*
 * Checks a complete header. Returns false after closing the machine on a
 * frame that cannot be trusted (wrong key, length, Rev 0, R in a
 * Request) or one answered with a reject (Rev above 2).
 */
static bool mpa_check_hdr(struct swiw_mpa *m)
{
	bool responder = m->role == SWIW_MPA_RESPONDER;
	struct mpa_rr rr;

	memcpy(&rr, m->hdr, RR_SIZE);
	m->pd_len = swiw_be16_to_cpu(rr.pd_len);
	m->out.peer_rev = rr.rev;
	m->out.peer_flags = rr.flags;
	if (memcmp(rr.key, responder ? MPA_KEY_REQ : MPA_KEY_REP, MPA_KEY_LEN))
		goto bad;
	if (m->pd_len > MPA_MAX_PD_WIRE) {
		mpa_close(m, -EPROTO, SWIW_V_MPA_PD_TOO_LONG, false);
		return false;
	}
	if (rr.rev == MPA_REV_RDMAC)
		goto bad;
	if (responder) {
		if (rr.flags & MPA_RR_FLAG_REJECT)
			goto bad;
		if (rr.rev > MPA_REV_2) {
			m->reply_rev = m->cfg.rev;
			mpa_auto_reject(m, SWIW_V_MPA_BAD_RR);
			return false;
		}
	} else if (rr.rev > m->cfg.rev) {
		goto bad;
	}
	m->peer_enhanced = swiw_mpa_rr_enhanced(&rr);
	if (m->peer_enhanced && m->pd_len < V2_SIZE)
		goto bad;
	return true;
bad:
	mpa_close(m, -EPROTO, SWIW_V_MPA_BAD_RR, false);
	return false;
}

/*
 * Takes bytes of the frame being received into the header buffer, the
 * v2 word and the caller's pd_buf. Returns true once the frame is
 * complete; false if more is needed or the header closed the machine.
 */
static bool mpa_rx_frame(struct swiw_mpa *m, const u8 *p, size_t len,
			 size_t *used)
{
	u16 skip, off;
	size_t take;

	for (;;) {
		if (m->got < RR_SIZE) {
			if (*used == len)
				return false;
			take = SWIW_MIN((size_t)(RR_SIZE - m->got),
					len - *used);
			memcpy(m->hdr + m->got, p + *used, take);
			m->got += (u16)take;
			*used += take;
			if (m->got < RR_SIZE || !mpa_check_hdr(m))
				return false;
		}
		if (m->got == RR_SIZE + m->pd_len) {
			m->out.peer_pd_len =
				m->pd_len - (m->peer_enhanced ? V2_SIZE : 0);
			return true;
		}
		if (*used == len)
			return false;
		skip = m->peer_enhanced ? V2_SIZE : 0;
		off = m->got - RR_SIZE;
		if (off < skip) {
			take = SWIW_MIN((size_t)(skip - off), len - *used);
			memcpy(m->v2 + off, p + *used, take);
		} else {
			take = SWIW_MIN((size_t)(m->pd_len - off), len - *used);
			memcpy(m->pd_buf + (off - skip), p + *used, take);
		}
		m->got += (u16)take;
		*used += take;
	}
}

/*
 * IRD/ORD as a responder (RFC 6581): our ORD may not exceed the
 * initiator's IRD, our IRD must cover its ORD. Relaxed: clamp, raising
 * IRD no further than ird_max. Returns false if they cannot be met.
 */
static bool mpa_neg_responder(const struct swiw_mpa_cfg *c, u16 peer_ird,
			      u16 peer_ord, u16 *ird, u16 *ord)
{
	if (*ord > peer_ird) {
		if (!c->relaxed_ird)
			return false;
		*ord = peer_ird;
	}
	if (*ird < peer_ord) {
		if (!c->relaxed_ird || peer_ord > c->ird_max)
			return false;
		*ird = peer_ord;
	}
	return true;
}

/*
 * IRD/ORD as an initiator, from the Reply. Relaxed (siw, cxgb4): our IRD
 * becomes the responder's ORD if it fits ird_max or what we offered, our
 * ORD drops to its IRD. Returns false if they cannot be met.
 */
static bool mpa_neg_initiator(const struct swiw_mpa_cfg *c, u16 peer_ird,
			      u16 peer_ord, u16 *ird, u16 *ord)
{
	if (!c->relaxed_ird)
		return peer_ord <= *ird && *ord <= peer_ird;
	if (peer_ord > *ird && peer_ord > c->ird_max)
		return false;
	*ird = peer_ord;
	*ord = SWIW_MIN(*ord, peer_ird);
	return true;
}

/* Peer-to-peer without the RFC 6581 word: only cxgb4's rev-1 habit. */
static u8 mpa_v1_rtr(const struct swiw_mpa_cfg *c)
{
	return c->p2p != SWIW_MPA_P2P_OFF ? c->v1_rtr : SWIW_MPA_RTR_NONE;
}

static bool mpa_one_bit(u8 mask)
{
	return mask && !(mask & (mask - 1));
}

static u8 mpa_rtr_of_mask(u8 mask)
{
	if (mask == SWIW_MPA_RTR_F_SEND)
		return SWIW_MPA_RTR_SEND;
	if (mask == SWIW_MPA_RTR_F_WRITE)
		return SWIW_MPA_RTR_WRITE;
	return SWIW_MPA_RTR_READ;
}

/*
 * Initiator: a complete Reply. Decides CRC, markers, peer-to-peer and
 * IRD/ORD; a fault found here comes after a valid Reply, so FPDUs may
 * carry a TERMINATE for it (siw and cxgb4 send one).
 */
static void mpa_proc_reply(struct swiw_mpa *m)
{
	const struct swiw_mpa_cfg *c = &m->cfg;
	struct swiw_mpa_outcome *o = &m->out;
	u8 flags = o->peer_flags;
	bool sent_p2p = m->sent_flags & MPA_RR_FLAG_ENHANCED &&
			c->p2p != SWIW_MPA_P2P_OFF;
	u16 ird = m->ird, ord = m->ord;

	if (m->peer_enhanced)
		mpa_v2_get(m);
	if (flags & MPA_RR_FLAG_REJECT) {
		o->reject = SWIW_MPA_REJ_BY_PEER;
		mpa_close(m, -ECONNREFUSED, SWIW_V_NONE, false);
		return;
	}
	/* We cannot reject a Reply; refusing its terms means closing. */
	if (((flags & MPA_RR_FLAG_MARKERS) && !c->markers_can_send) ||
	    ((flags & MPA_RR_FLAG_CRC) && c->crc_strict && !c->crc_required)) {
		o->reject = SWIW_MPA_REJ_REFUSED;
		mpa_close(m, -ECONNREFUSED, SWIW_V_NONE, false);
		return;
	}
	o->rev = o->peer_rev;
	o->enhanced = m->peer_enhanced;
	o->crc = (m->sent_flags & MPA_RR_FLAG_CRC) || (flags & MPA_RR_FLAG_CRC);
	o->markers_tx = flags & MPA_RR_FLAG_MARKERS;
	o->markers_rx = m->sent_flags & MPA_RR_FLAG_MARKERS;
	o->rtr = SWIW_MPA_RTR_NONE;
	if (m->peer_enhanced) {
		/* RFC 6581: A is echoed, exactly one offered RTR chosen. */
		if (sent_p2p != o->peer_p2p ||
		    (sent_p2p && (!mpa_one_bit(o->peer_rtr) ||
				  (o->peer_rtr & ~c->rtr_offer))))
			goto no_rtr;
		if (sent_p2p)
			o->rtr = mpa_rtr_of_mask(o->peer_rtr);
		if (!m->no_neg) {
			if (!mpa_neg_initiator(c, o->peer_ird, o->peer_ord,
					       &ird, &ord))
				goto insufficient;
			/* Our READ RTR needs a slot in its IRD. */
			if (o->rtr == SWIW_MPA_RTR_READ && !ord)
				goto insufficient;
			o->ird_ord_negotiated = true;
		}
	} else {
		o->rtr = mpa_v1_rtr(c);
		if (!o->rtr && c->p2p == SWIW_MPA_P2P_REQUIRED)
			goto no_rtr;
	}
	o->ird = ird;
	o->ord = ord;
	o->p2p = o->rtr != SWIW_MPA_RTR_NONE;
	if (o->p2p) {
		m->state = SWIW_MPA_S_RTR_PENDING;
		m->events |= SWIW_MPA_EV_SEND_RTR;
	} else {
		m->state = SWIW_MPA_S_ESTABLISHED;
		m->events |= SWIW_MPA_EV_RX_FPDU | SWIW_MPA_EV_TX_FPDU;
	}
	return;
no_rtr:
	o->rtr = SWIW_MPA_RTR_NONE;
	mpa_close(m, -EPROTO, SWIW_V_MPA_NO_MATCHING_RTR, true);
	return;
insufficient:
	/* As siw: report what the peer offered even when it fails. */
	o->ird = o->peer_ord;
	o->ord = o->peer_ird;
	mpa_close(m, -EPROTO, SWIW_V_MPA_INSUFFICIENT_IRD, true);
}

/*
 * Responder: a complete Request. Policy mismatches are rejected here,
 * before the ULP sees anything (siw does the same); otherwise the ULP
 * decides (EV_REQUEST).
 */
static void mpa_proc_request(struct swiw_mpa *m)
{
	const struct swiw_mpa_cfg *c = &m->cfg;
	struct swiw_mpa_outcome *o = &m->out;
	u8 flags = o->peer_flags;
	u8 rtr = SWIW_MPA_RTR_NONE;

	m->reply_rev = SWIW_MIN(o->peer_rev, c->rev);
	m->reply_enhanced = m->reply_rev == MPA_REV_2 && m->peer_enhanced;
	if (m->peer_enhanced)
		mpa_v2_get(m);
	o->rev = m->reply_rev;
	o->enhanced = m->reply_enhanced;
	o->crc = (flags & MPA_RR_FLAG_CRC) || c->crc_required;
	o->markers_tx = flags & MPA_RR_FLAG_MARKERS;
	o->markers_rx = c->markers_wanted;
	if ((flags & MPA_RR_FLAG_MARKERS) && !c->markers_can_send) {
		mpa_auto_reject(m, SWIW_V_NONE);
		return;
	}
	if ((flags & MPA_RR_FLAG_CRC) && c->crc_strict && !c->crc_required) {
		mpa_auto_reject(m, SWIW_V_NONE);
		return;
	}
	if (m->reply_enhanced) {
		if (o->peer_p2p) {
			if (c->p2p != SWIW_MPA_P2P_OFF)
				rtr = mpa_rtr_pick(c, o->peer_rtr);
			if (!rtr)
				goto no_rtr;
		} else if (c->p2p == SWIW_MPA_P2P_REQUIRED) {
			goto no_rtr;
		}
	} else {
		rtr = mpa_v1_rtr(c);
		if (!rtr && c->p2p == SWIW_MPA_P2P_REQUIRED)
			goto no_rtr;
	}
	o->rtr = rtr;
	o->p2p = rtr != SWIW_MPA_RTR_NONE;
	m->state = SWIW_MPA_S_ULP_DECIDE;
	m->events |= SWIW_MPA_EV_REQUEST;
	return;
no_rtr:
	mpa_auto_reject(m, SWIW_V_MPA_NO_MATCHING_RTR);
}

int swiw_mpa_input(struct swiw_mpa *m, const void *buf, size_t len,
		   size_t *consumed)
{
	size_t used = 0;

	if (!consumed || (len && !buf))
		return -EINVAL;
	*consumed = 0;
	switch (m->state) {
	case SWIW_MPA_S_AWAIT_REPLY:
	case SWIW_MPA_S_AWAIT_REQUEST:
		break;
	case SWIW_MPA_S_IDLE:
	case SWIW_MPA_S_ULP_DECIDE:
	case SWIW_MPA_S_RTR_PENDING:
		/* The peer may not send here: it waits for us. */
		if (len)
			goto early;
		return 0;
	default:
		/* FPDU mode or closed: the bytes are not ours. */
		return 0;
	}
	if (!mpa_rx_frame(m, buf, len, &used)) {
		*consumed = used;
		return 0;
	}
	*consumed = used;
	if (m->role == SWIW_MPA_RESPONDER)
		mpa_proc_request(m);
	else
		mpa_proc_reply(m);
	/*
	 * A responder sends nothing before our Reply, nor before our RTR
	 * with peer-to-peer (siw answers such bytes with -EPROTO). Bytes
	 * after a Reply without RTR are the responder's first FPDUs.
	 */
	if (used < len && (m->state == SWIW_MPA_S_ULP_DECIDE ||
			   m->state == SWIW_MPA_S_RTR_PENDING))
		goto early;
	return 0;
early:
	mpa_close(m, -EPROTO, SWIW_V_MPA_EARLY_DATA,
		  m->state == SWIW_MPA_S_RTR_PENDING);
	return 0;
}

int swiw_mpa_connect(struct swiw_mpa *m, const struct swiw_mpa_ulp *ulp)
{
	const struct swiw_mpa_cfg *c = &m->cfg;
	bool v2 = c->rev == MPA_REV_2;
	bool p2p = c->p2p != SWIW_MPA_P2P_OFF;
	struct mpa_v2_conn word;
	u8 flags = 0;

	if (m->role != SWIW_MPA_INITIATOR || m->state != SWIW_MPA_S_IDLE)
		return -EINVAL;
	if (!ulp || !mpa_ulp_valid(ulp, v2))
		return -EINVAL;
	m->ird = ulp->ird;
	m->ord = ulp->ord;
	/* The responder counts a READ RTR against its IRD: ask for one. */
	if (p2p && !m->ord &&
	    ((v2 && (c->rtr_offer & SWIW_MPA_RTR_F_READ)) ||
	     c->v1_rtr == SWIW_MPA_RTR_READ))
		m->ord = 1;
	if (c->crc_required)
		flags |= MPA_RR_FLAG_CRC;
	if (c->markers_wanted)
		flags |= MPA_RR_FLAG_MARKERS;
	if (v2) {
		flags |= MPA_RR_FLAG_ENHANCED;
		mpa_v2_put(&word, m->ird, m->ord, p2p, p2p ? c->rtr_offer : 0);
	}
	m->sent_flags = flags;
	mpa_build(m, MPA_KEY_REQ, flags, c->rev, v2 ? &word : NULL, ulp->pd,
		  ulp->pd_len);
	m->state = SWIW_MPA_S_AWAIT_REPLY;
	return 0;
}

int swiw_mpa_accept(struct swiw_mpa *m, const struct swiw_mpa_ulp *ulp)
{
	const struct swiw_mpa_cfg *c = &m->cfg;
	struct swiw_mpa_outcome *o = &m->out;
	struct mpa_v2_conn word;
	u16 ird, ord, w_ird, w_ord;
	u8 flags = 0;

	if (m->state != SWIW_MPA_S_ULP_DECIDE)
		return -EINVAL;
	if (!ulp || !mpa_ulp_valid(ulp, m->reply_enhanced))
		return -EINVAL;
	ird = ulp->ird;
	ord = ulp->ord;
	if (m->reply_enhanced && !m->no_neg) {
		if (!mpa_neg_responder(c, o->peer_ird, o->peer_ord, &ird,
				       &ord)) {
			mpa_auto_reject(m, SWIW_V_MPA_INSUFFICIENT_IRD);
			return 0;
		}
		o->ird_ord_negotiated = true;
	}
	/* The initiator's READ RTR takes one IRD slot (cxgb4, irdma). */
	if (o->rtr == SWIW_MPA_RTR_READ && !ird)
		ird = 1;
	o->ird = ird;
	o->ord = ord;
	if (o->crc)
		flags |= MPA_RR_FLAG_CRC;
	if (c->markers_wanted)
		flags |= MPA_RR_FLAG_MARKERS;
	if (m->reply_enhanced) {
		flags |= MPA_RR_FLAG_ENHANCED;
		w_ird = m->no_neg ? SWIW_MPA_IRD_ORD_NONE : ird;
		w_ord = m->no_neg ? SWIW_MPA_IRD_ORD_NONE : ord;
		mpa_v2_put(&word, w_ird, w_ord, o->peer_p2p,
			   o->rtr ? SWIW_MPA_RTR_F(o->rtr) : 0);
	}
	mpa_build(m, MPA_KEY_REP, flags, m->reply_rev,
		  m->reply_enhanced ? &word : NULL, ulp->pd, ulp->pd_len);
	m->events |= SWIW_MPA_EV_RX_FPDU;
	if (o->p2p || c->wait_first_fpdu) {
		m->expect_any = !o->p2p;
		m->state = SWIW_MPA_S_AWAIT_RTR;
	} else {
		m->state = SWIW_MPA_S_ESTABLISHED;
		m->events |= SWIW_MPA_EV_TX_FPDU;
	}
	return 0;
}

int swiw_mpa_reject(struct swiw_mpa *m, const void *pd, u16 pd_len)
{
	u32 wire = (u32)pd_len + (m->reply_enhanced ? V2_SIZE : 0);

	if (m->state != SWIW_MPA_S_ULP_DECIDE)
		return -EINVAL;
	if ((pd_len && !pd) || wire > MPA_MAX_PD_WIRE)
		return -EINVAL;
	mpa_send_reject(m, pd, pd_len);
	return 0;
}

int swiw_mpa_rtr_sent(struct swiw_mpa *m)
{
	if (m->state != SWIW_MPA_S_RTR_PENDING)
		return -EINVAL;
	m->state = SWIW_MPA_S_ESTABLISHED;
	m->events |= SWIW_MPA_EV_RX_FPDU | SWIW_MPA_EV_TX_FPDU;
	return 0;
}

int swiw_mpa_rtr_received(struct swiw_mpa *m, enum swiw_mpa_rtr kind)
{
	if (m->state != SWIW_MPA_S_AWAIT_RTR ||
	    (unsigned int)kind > SWIW_MPA_RTR_READ)
		return -EINVAL;
	if (!m->expect_any && kind != m->out.rtr) {
		mpa_close(m, -EPROTO, SWIW_V_MPA_NO_MATCHING_RTR, true);
		return 0;
	}
	m->state = SWIW_MPA_S_ESTABLISHED;
	m->events |= SWIW_MPA_EV_TX_FPDU;
	return 0;
}

int swiw_mpa_timeout(struct swiw_mpa *m)
{
	if (swiw_mpa_deadline(m, NULL) == SWIW_MPA_DL_NONE)
		return -EINVAL;
	mpa_close(m, -ETIMEDOUT, SWIW_V_NONE, false);
	return 0;
}

int swiw_mpa_frame_ulp_pd(const void *frame, size_t len, bool request,
			  const u8 **pd, u16 *pd_len)
{
	struct mpa_rr rr;
	u16 plen, skip;

	if (len < sizeof(rr))
		return -EBADMSG;
	memcpy(&rr, frame, sizeof(rr));
	if (memcmp(rr.key, request ? MPA_KEY_REQ : MPA_KEY_REP, MPA_KEY_LEN))
		return -EBADMSG;
	plen = swiw_be16_to_cpu(rr.pd_len);
	skip = swiw_mpa_rr_enhanced(&rr) ? V2_SIZE : 0;
	if (len != sizeof(rr) + plen || plen < skip)
		return -EBADMSG;
	*pd = (const u8 *)frame + sizeof(rr) + skip;
	*pd_len = plen - skip;
	return 0;
}
