// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The receive path as the in-process engine drives it: the wire core's
 * own lower half (swiw_lower.h) in pull mode, reading a hostile peer's
 * stream in reads of fuzzer-chosen sizes, large payload runs straight
 * into (fake) registered memory and receive WRs, through its real
 * lookups, validation and placement. lower_env.h aborts on any write
 * outside a region the lower half holds; every region must be put back
 * and every receive WR it took reported once; a violation's TERMINATE
 * must read back as built.
 *
 * Input: flags (bit 0 markers, 1 CRC, 2 RTR event, 3 lazy event drain,
 * 4 no remote rights for the QP), a read-size seed, then the stream.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../wire/lower_env.h"
#include "swiw_term.h"

#define STAGE_LEN SWIW_LOWER_STAGE_MIN
#define DIRECT_MIN 1024

struct count {
	u32 rqe_events;
};

static void check_term(const struct swiw_rxev *ev)
{
	struct swiw_term t, back;
	u8 buf[SWIW_TERM_MAX_LEN];
	int n;

	if (ev->type != SWIW_RXEV_VIOLATION)
		return;
	/* The provider's TERMINATE takes the length, hdr being its head. */
	if (ev->hdr_len != SWIW_MIN(ev->len, (u32)SWIW_DDP_HDR_MAX))
		abort();
	if (swiw_term_from_violation((enum swiw_violation)ev->violation,
				     ev->hdr, ev->len, &t))
		return; /* a row that sends no TERMINATE */
	n = swiw_term_build(&t, buf, sizeof(buf));
	if (n < 0)
		abort();
	if (swiw_term_parse(buf, (u32)n, &back) || back.layer != t.layer ||
	    back.etype != t.etype || back.ecode != t.ecode ||
	    ((t.hdrct & SWIW_TERM_M) && back.seg_len != ev->len))
		abort(); /* what we would send must read back as sent */
}

/* A receive WR of two SGEs into the untagged region. */
static void post_rqe(struct env *e, u32 stag, u64 id)
{
	struct {
		struct swiw_rqe h;
		struct swiw_sge sge[2];
	} q;

	memset(&q, 0, sizeof(q));
	q.h.id = id;
	q.h.num_sge = 2;
	q.sge[0] = (struct swiw_sge){ 0x20000 + 100, 3000, stag };
	q.sge[1] = (struct swiw_sge){ 0x20000 + 8192, 20000, stag };
	env_slot_put(env_rq_slot(e), &q, sizeof(q), 0);
	e->rq_put++;
}

/* A region under the STag wire_capture's traffic (the seeds) names. */
static void reg_at(struct env *e, u32 stag, u64 base, u64 len, u32 access)
{
	env_find(e, env_reg(e, base, len, access))->stag = stag;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct count c = { 0 };
	struct env e;
	u8 flags, *stage;
	u32 i, ut, rounds = 0;

	if (size < 2)
		return 0;
	flags = data[0];
	memset(&e, 0, sizeof(e));
	e.fd = -1;
	e.rx_seed = data[1];
	e.rx_data = data + 2;
	e.rx_len = size - 2;
	env_rings(&e, 8);
	e.cfg.crc = flags & 2;
	e.cfg.markers_rx = flags & 1;
	e.cfg.rtr_event = flags & 4;
	e.cfg.qp_access = flags & 16 ?
				  0 :
				  SWIW_ACC_REMOTE_WRITE | SWIW_ACC_REMOTE_READ |
					  SWIW_ACC_REMOTE_ATOMIC;
	stage = malloc(STAGE_LEN);
	if (!stage)
		abort();
	e.cfg.stage = stage;
	e.cfg.stage_len = STAGE_LEN;
	/* Small enough for the corpus's inputs to reach direct placement. */
	e.cfg.direct_min = DIRECT_MIN;
	env_reg(&e, 0x1000, 65536,
		SWIW_ACC_LOCAL_WRITE | SWIW_ACC_REMOTE_WRITE |
			SWIW_ACC_REMOTE_READ | SWIW_ACC_REMOTE_ATOMIC);
	reg_at(&e, 0x5501, 0x10000, 65536,
	       SWIW_ACC_LOCAL_WRITE | SWIW_ACC_REMOTE_WRITE);
	reg_at(&e, 0x5502, 0x10000, 65536,
	       SWIW_ACC_LOCAL_WRITE | SWIW_ACC_REMOTE_WRITE);
	reg_at(&e, 0x3301, 0x7f0000800000ull, 65536, SWIW_ACC_REMOTE_READ);
	reg_at(&e, 0x4401, 0x7f0000002000ull, 64,
	       SWIW_ACC_LOCAL_WRITE | SWIW_ACC_REMOTE_ATOMIC);
	ut = env_reg(&e, 0x20000, 32768, SWIW_ACC_LOCAL_WRITE);
	for (i = 0; i < 6; i++)
		post_rqe(&e, ut, i);
	e.l = malloc(sizeof(*e.l));
	if (!e.l || swiw_lower_init(e.l, &e.cfg, &env_ops, &e))
		abort();

	while (!swiw_lower_rx_done(e.l)) {
		size_t before = e.rx_off;
		int rc = swiw_lower_rx_pull(e.l, 1 + (e.rx_seed & 7));

		if (rc < 0)
			abort();
		swiw_lower_tx(e.l);
		if (!(flags & 8) || swiw_lower_stalled(e.l)) {
			env_fuzz_drain(&e, &c.rqe_events, check_term);
			swiw_lower_doorbell(e.l);
		}
		if (e.rx_off == before && !rc && !swiw_lower_stalled(e.l) &&
		    !swiw_lower_rx_done(e.l))
			abort(); /* nothing read, and no reason */
		if (++rounds > 100000)
			break;
	}
	env_fuzz_end(&e, &c.rqe_events, check_term);
	free(stage);
	return 0;
}
