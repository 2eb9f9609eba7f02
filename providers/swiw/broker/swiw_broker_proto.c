// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The pure pieces the client library and the daemon share: swiw's MPA
 * private-data block, reject reasons, the role rule and GID addresses.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "swiw_broker.h"
#include "swiw_broker_proto.h"

_Static_assert(SWIW_BROKER_PD_LEN == SWIW_PD_LEN, "one block length");
_Static_assert(SWIW_BROKER_REQ_MAX == SWIW_BP_REQ_MAX, "one Request size");

static bool pd_type_known(unsigned int type)
{
	return type >= SWIW_BROKER_PD_REQUEST && type <= SWIW_BROKER_PD_REJECT;
}

static bool psn_word_ok(uint32_t w)
{
	return !(w & ~(SWIW_BROKER_PSN_KNOWN | SWIW_BROKER_PSN_MASK));
}

int swiw_broker_pd_encode(const struct swiw_broker_pd *pd, void *buf,
			  size_t size, size_t *len)
{
	struct swiw_pd_wire w;

	if (!pd || !buf || !len || size < sizeof(w))
		return EINVAL;
	if (!pd_type_known(pd->type) || pd->src_qpn > SWIW_BROKER_QPN_MAX ||
	    pd->dst_qpn > SWIW_BROKER_QPN_MAX)
		return EINVAL;
	if (pd->type == SWIW_BROKER_PD_REJECT ?
		    pd->reason > SWIW_BROKER_R_MAX :
		    pd->reason != SWIW_BROKER_R_NONE)
		return EINVAL;
	if (!psn_word_ok(pd->sq_psn) || !psn_word_ok(pd->rq_psn))
		return EINVAL;
	memset(&w, 0, sizeof(w));
	w.magic = htobe32(SWIW_PD_MAGIC);
	w.version = SWIW_PD_VERSION;
	w.type = pd->type;
	w.length = htobe16(SWIW_PD_LEN);
	w.src_qpn = htobe32(pd->src_qpn);
	w.dst_qpn = htobe32(pd->dst_qpn);
	w.nonce_hi = htobe32((uint32_t)(pd->nonce >> 32));
	w.nonce_lo = htobe32((uint32_t)pd->nonce);
	w.reason = htobe16(pd->reason);
	w.sq_psn = htobe32(pd->sq_psn);
	w.rq_psn = htobe32(pd->rq_psn);
	memcpy(buf, &w, sizeof(w));
	*len = sizeof(w);
	return 0;
}

int swiw_broker_pd_decode(const void *buf, size_t len,
			  struct swiw_broker_pd *pd)
{
	struct swiw_pd_wire w;
	uint16_t length;

	if (!pd || (len && !buf))
		return EINVAL;
	memset(pd, 0, sizeof(*pd));
	/* Magic and version first: they say whose block this is. */
	if (len < 5)
		return EBADMSG;
	memset(&w, 0, sizeof(w));
	memcpy(&w, buf, len < sizeof(w) ? len : sizeof(w));
	if (be32toh(w.magic) != SWIW_PD_MAGIC)
		return EBADMSG;
	pd->version = w.version;
	if (w.version != SWIW_PD_VERSION)
		return EPROTONOSUPPORT;
	if (len < SWIW_PD_LEN_FIRST)
		return EBADMSG;
	length = be16toh(w.length);
	if (length < SWIW_PD_LEN_FIRST || length > len)
		return EBADMSG;
	if (!pd_type_known(w.type))
		return EBADMSG;
	pd->type = w.type;
	pd->src_qpn = be32toh(w.src_qpn);
	pd->dst_qpn = be32toh(w.dst_qpn);
	pd->nonce = (uint64_t)be32toh(w.nonce_hi) << 32 | be32toh(w.nonce_lo);
	pd->reason = be16toh(w.reason);
	if (length >= SWIW_PD_LEN) {
		pd->psns = true;
		pd->sq_psn = be32toh(w.sq_psn);
		pd->rq_psn = be32toh(w.rq_psn);
		if (!psn_word_ok(pd->sq_psn) || !psn_word_ok(pd->rq_psn))
			return EBADMSG;
	}
	if (pd->src_qpn > SWIW_BROKER_QPN_MAX ||
	    pd->dst_qpn > SWIW_BROKER_QPN_MAX)
		return EBADMSG;
	/* A reason is a Reject's alone; an unknown one is still reported. */
	if (pd->type != SWIW_BROKER_PD_REJECT && pd->reason)
		return EBADMSG;
	return 0;
}

int swiw_broker_psn_check(const struct swiw_broker_pd *req, uint32_t rq_psn,
			  uint32_t sq_psn)
{
	bool compared = false;

	if (!req->psns)
		return EACCES;
	if ((req->sq_psn & SWIW_BROKER_PSN_KNOWN) &&
	    (rq_psn & SWIW_BROKER_PSN_KNOWN)) {
		if (req->sq_psn != rq_psn)
			return EACCES;
		compared = true;
	}
	if ((req->rq_psn & SWIW_BROKER_PSN_KNOWN) &&
	    (sq_psn & SWIW_BROKER_PSN_KNOWN)) {
		if (req->rq_psn != sq_psn)
			return EACCES;
		compared = true;
	}
	return compared ? 0 : EAGAIN;
}

static const char *const reason_str[] = {
	[SWIW_BROKER_R_NONE] = "no reason given",
	[SWIW_BROKER_R_UNKNOWN_QPN] =
		"no QP of that number at the peer expects this one (the peer's broker log says why)",
	[SWIW_BROKER_R_WRONG_PEER_ADDR] =
		"the peer QP expects another address (GID)",
	[SWIW_BROKER_R_WRONG_PEER_QPN] =
		"the peer QP expects another QP number",
	[SWIW_BROKER_R_NOT_READY] =
		"the peer's broker did not hand it to a QP in time (no QP of that number in RTR expecting this QP, address and PSNs; its log says which)",
	[SWIW_BROKER_R_ROLE] =
		"the peer QP connects out itself (both sides think they initiate)",
	[SWIW_BROKER_R_CONNECTED] = "the peer QP is already connected",
	[SWIW_BROKER_R_BAD_PD] = "no or malformed swiw private data",
	[SWIW_BROKER_R_VERSION] =
		"swiw private-data version not supported (a swiw older than PSN checks?)",
	[SWIW_BROKER_R_REFUSED] = "the peer refused the connection",
	[SWIW_BROKER_R_WRONG_PSN] =
		"the PSNs do not match those the QP was given",
};

const char *swiw_broker_reason_str(unsigned int reason)
{
	if (reason < sizeof(reason_str) / sizeof(reason_str[0]) &&
	    reason_str[reason])
		return reason_str[reason];
	return "unknown reason";
}

bool swiw_broker_reason_retryable(unsigned int reason)
{
	return reason == SWIW_BROKER_R_NOT_READY;
}

enum swiw_broker_role swiw_broker_role(const uint8_t local_gid[16],
				       uint32_t local_qpn,
				       const uint8_t peer_gid[16],
				       uint32_t peer_qpn)
{
	int c = memcmp(local_gid, peer_gid, 16);

	if (!c)
		c = local_qpn < peer_qpn ? -1 : local_qpn > peer_qpn ? 1 : 0;
	if (!c)
		return SWIW_BROKER_ROLE_NONE;
	return c < 0 ? SWIW_BROKER_INITIATOR : SWIW_BROKER_RESPONDER;
}

static const uint8_t v4_prefix[12] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
};

bool swiw_broker_gid_is_v4(const uint8_t gid[16])
{
	return !memcmp(gid, v4_prefix, sizeof(v4_prefix));
}

int swiw_broker_gid_sockaddr(const uint8_t gid[16], uint16_t port,
			     uint32_t scope_id, struct sockaddr_storage *ss,
			     socklen_t *len)
{
	static const uint8_t zero[16];

	if (!gid || !ss || !len)
		return EINVAL;
	memset(ss, 0, sizeof(*ss));
	if (swiw_broker_gid_is_v4(gid)) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		if (!memcmp(gid + 12, zero, 4))
			return EINVAL;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, gid + 12, 4);
		*len = sizeof(*sin);
		return 0;
	}
	if (!memcmp(gid, zero, 16) || gid[0] == 0xff)
		return EINVAL;
	{
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, gid, 16);
		if (gid[0] == 0xfe && (gid[1] & 0xc0) == 0x80)
			sin6->sin6_scope_id = scope_id;
		*len = sizeof(*sin6);
	}
	return 0;
}
