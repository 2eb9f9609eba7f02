// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The lower half of a helper stream (swiw_lower.h) fed what a hostile
 * peer and a hostile process can give it: arbitrary stream octets in
 * fuzzer-chosen pieces, and arbitrary txd and RQE ring contents. It
 * must never touch memory outside what the environment holds for it
 * (lower_env.h aborts), must put back every region it held, and must
 * report every RQE it took exactly once.
 *
 * Input: flags (bit 0 markers in, 1 CRC, 2 RTR event, 3 lazy event
 * drain, 4 markers out), a piece-size seed, a ring octet (RQEs in bits
 * 0-2, txds in bits 3-5), that many raw RQE slots (80 octets) and txd
 * slots (152 octets), then the stream.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../wire/lower_env.h"

#define RQE_RAW (SWIW_RQE_HDR_SIZE + 4 * 16)
#define TXD_RAW ((u32)sizeof(struct swiw_txd))

struct count {
	u32 rqe_events;
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct count c = { 0 };
	struct env e;
	u8 flags, seed, rings;
	u32 i, n_rqe, n_txd, pieces = 0;
	size_t off, used;
	int rc;

	if (size < 3)
		return 0;
	flags = data[0];
	seed = data[1];
	rings = data[2];
	off = 3;
	memset(&e, 0, sizeof(e));
	e.fd = -1; /* send() takes everything */
	env_rings(&e, 8);
	e.rq.max_sge = 4;
	e.cfg.crc = flags & 2;
	e.cfg.markers_rx = flags & 1;
	e.cfg.markers_tx = flags & 16;
	e.cfg.rtr_event = flags & 4;
	e.cfg.mulpdu = 200 + seed * 4;
	env_reg(&e, 0x1000, 65536,
		SWIW_ACC_LOCAL_WRITE | SWIW_ACC_REMOTE_WRITE |
			SWIW_ACC_REMOTE_READ | SWIW_ACC_REMOTE_ATOMIC);
	env_reg(&e, 0x20000, 4096, SWIW_ACC_LOCAL_WRITE);
	e.l = malloc(sizeof(*e.l));
	if (!e.l || swiw_lower_init(e.l, &e.cfg, &env_ops, &e))
		abort();

	/* Ring slots as a process may fill them, VALID set. */
	n_rqe = rings & 7;
	n_txd = (rings >> 3) & 7;
	for (i = 0; i < n_rqe && size - off >= RQE_RAW; i++, off += RQE_RAW) {
		env_slot_put(env_rq_slot(&e), data + off, RQE_RAW, 0);
		e.rq_put++;
	}
	for (i = 0; i < n_txd && size - off >= TXD_RAW; i++, off += TXD_RAW) {
		u16 fl;

		memcpy(&fl, data + off + 8, sizeof(fl));
		env_slot_put(env_tx_slot(&e), data + off, TXD_RAW, fl);
		e.tx_put++;
	}

	while (off < size && !swiw_lower_rx_done(e.l)) {
		size_t len = 1 + (seed * 131u + pieces * 17u) % 4096;

		if (len > size - off)
			len = size - off;
		rc = swiw_lower_rx(e.l, data + off, len, &used);
		if (rc || used > len)
			abort();
		off += used;
		pieces++;
		swiw_lower_tx(e.l);
		if (!(flags & 8) || swiw_lower_stalled(e.l)) {
			env_fuzz_drain(&e, &c.rqe_events, NULL);
			swiw_lower_doorbell(e.l);
		}
		if (!used && !swiw_lower_stalled(e.l) &&
		    !swiw_lower_rx_done(e.l))
			abort(); /* nothing taken, and no reason */
		if (pieces > 100000)
			break;
	}
	swiw_lower_rx_closed(e.l, 0);
	env_fuzz_end(&e, &c.rqe_events, NULL);
	return 0;
}
