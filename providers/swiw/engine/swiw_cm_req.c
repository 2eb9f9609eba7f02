// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The rdma_cm listener's MPA Request parser: the same swiw_mpa machine as
 * the streams, over the octets the shim has read so far (see
 * swiw_cm_req.h). Pure: no socket, no lock, no configuration of its own.
 */
#include <errno.h>
#include <string.h>

#include "swiw_cm_req.h"
#include "swiw_shim.h"

_Static_assert(SWIW_CM_PD_MAX >= SWIW_MPA_PD_MAX, "a Request's pd fits");

int swiw_cm_req_take(struct swiw_mpa *m, const struct swiw_mpa_cfg *cfg,
		     uint8_t *tx, uint8_t *pd, const void *buf, size_t len,
		     size_t *used)
{
	u32 ev;

	if (swiw_mpa_init(m, SWIW_MPA_RESPONDER, cfg, tx, SWIW_MPA_FRAME_MAX,
			  pd, SWIW_MPA_PD_MAX))
		return EINVAL;
	*used = 0;
	if (swiw_mpa_input(m, buf, len, used))
		return EINVAL;
	ev = swiw_mpa_events(m);
	if (ev & SWIW_MPA_EV_REQUEST)
		return 0;
	if (ev & SWIW_MPA_EV_CLOSED)
		return EPROTO;
	return EAGAIN;
}

int swiw_cm_req_parse(const struct swiw_mpa_cfg *cfg, const void *buf,
		      size_t len, struct swiw_cm_req *out)
{
	uint8_t tx[SWIW_MPA_FRAME_MAX], pd[SWIW_MPA_PD_MAX];
	const struct swiw_mpa_outcome *o;
	struct swiw_mpa m;
	size_t used;
	int err;

	memset(out, 0, sizeof(*out));
	err = swiw_cm_req_take(&m, cfg, tx, pd, buf, len, &used);
	if (err == EAGAIN) {
		size_t need = swiw_mpa_rr_need(buf, len);

		if (len >= SWIW_MPA_FRAME_MAX || need > SWIW_MPA_FRAME_MAX)
			return EPROTO;
		out->frame_len = (uint16_t)need; /* what to read in all */
	}
	if (err)
		return err;
	o = swiw_mpa_outcome(&m);
	out->frame_len = (uint16_t)used;
	out->pd_len = o->peer_pd_len;
	memcpy(out->pd, o->peer_pd, o->peer_pd_len);
	if (o->peer_rev == MPA_REV_2 &&
	    (o->peer_flags & MPA_RR_FLAG_ENHANCED)) {
		out->peer_ird = o->peer_ird;
		out->peer_ord = o->peer_ord;
	} else {
		out->peer_ird = out->peer_ord = SWIW_MPA_IRD_ORD_NONE;
	}
	return 0;
}
