/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The rdma_cm listener's MPA Request parser (swiw_cm_req.c): bytes from
 * any TCP peer that connects to a listener, run through a responder
 * machine. Apart from the engine, with the MPA knobs passed in, so that
 * tests/fuzz/fuzz_cm.c links it alone; swiw_setup_cm.c calls it with the
 * knobs every stream runs with (swiw_stream_mpa_cfg()).
 */
#ifndef SWIW_CM_REQ_H
#define SWIW_CM_REQ_H

#include <stddef.h>
#include <stdint.h>

#include "swiw_mpa.h"

struct swiw_cm_req;

/*
 * Starts a responder machine @m with @cfg (@tx and @pd of
 * SWIW_MPA_FRAME_MAX and SWIW_MPA_PD_MAX octets) and feeds it @len octets
 * at @buf; *@used says how many it took. Returns 0 when a whole Request
 * was read (EV_REQUEST: accept or reject it now), EPROTO when the machine
 * closed, EAGAIN when it needs more, EINVAL for a bad @cfg.
 */
int swiw_cm_req_take(struct swiw_mpa *m, const struct swiw_mpa_cfg *cfg,
		     uint8_t *tx, uint8_t *pd, const void *buf, size_t len,
		     size_t *used);

/*
 * Parses the @len octets at @buf as an MPA Request, as the shim's table
 * entry cm_parse_request (swiw_shim.h) does, with @cfg. Returns 0 (@out
 * holds it, frame_len == @len), EAGAIN (more octets: frame_len in all, as
 * the header tells) or EPROTO.
 */
int swiw_cm_req_parse(const struct swiw_mpa_cfg *cfg, const void *buf,
		      size_t len, struct swiw_cm_req *out);

#endif /* SWIW_CM_REQ_H */
