/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Helpers the wire tests share: a reproducible pseudo-random source and
 * big-endian writers written independently of swiw_port.h, so that the
 * tests build their expected bytes without the code under test.
 */
#ifndef SWIW_WIRE_TEST_H
#define SWIW_WIRE_TEST_H

#include "swiw_port.h"

static u32 rnd_state = 0x2545f491;

/* xorshift32: the same sequence on every run for the same seed. */
static inline u32 rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 17;
	rnd_state ^= rnd_state << 5;
	return rnd_state;
}

static inline void fill(u8 *p, size_t n)
{
	while (n--)
		*p++ = (u8)rnd();
}

static inline void wr32(u8 *p, u32 v)
{
	p[0] = (u8)(v >> 24);
	p[1] = (u8)(v >> 16);
	p[2] = (u8)(v >> 8);
	p[3] = (u8)v;
}

static inline void wr64(u8 *p, u64 v)
{
	wr32(p, (u32)(v >> 32));
	wr32(p + 4, (u32)v);
}

#endif /* SWIW_WIRE_TEST_H */
