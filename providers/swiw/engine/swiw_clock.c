// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The engine's clock where clock_gettime() is a system call (swiw_clock.h).
 *
 * The counter is scaled by CLOCK_MONOTONIC's advance over its own in the
 * last interval and re-anchored on CLOCK_MONOTONIC every CLK_ANCHOR_NS:
 * one system call per 50 ms instead of a few per verb, no drift from the
 * clock the kernel keeps, and a counter whose rate changes is followed.
 * Counters that are not in step across CPUs (why the lab guest's kernel
 * gave its TSC up) show as readings that go back when a thread moves:
 * each thread's readings never do, and a step back of more than
 * CLK_WARP_NS turns the counter off for good.
 */
#include "swiw_clock.h"

/* A clock_gettime() dearer than this is a system call (vDSO: ~25 ns). */
#define CLK_SLOW_NS 250
/* The first scale is taken over this; then every CLK_ANCHOR_NS. */
#define CLK_FIRST_NS 10000000ll
#define CLK_ANCHOR_NS 50000000ll
#define CLK_WARP_NS 1000000u

uint32_t swiw_clock_tsc_on;

/*
 * base_ns is CLOCK_MONOTONIC when the counter read base_tsc; mult is ns
 * per tick << 32, 0 until the first interval is measured. seq is odd
 * while one thread re-anchors: readers take the three without a lock.
 */
static struct {
	uint32_t seq;
	uint64_t base_ns;
	uint64_t base_tsc;
	uint64_t mult;
} clk;

/* This thread's last reading: readings never go back. */
static __thread uint64_t clk_last;

static inline uint64_t tsc_read(void)
{
#if defined(__x86_64__)
	return __builtin_ia32_rdtsc();
#else
	return 0;
#endif
}

static uint64_t scale(uint64_t ticks, uint64_t mult)
{
	return (uint64_t)(((unsigned __int128)ticks * mult) >> 32);
}

/* Re-anchors on CLOCK_MONOTONIC, unless another thread is already. */
static uint64_t reanchor(uint32_t seq, uint64_t bns, uint64_t btsc)
{
	uint64_t ns, tsc, mult = 0;

	/* No fences (TSan has none): the stores below release, so a reader
	 * whose acquiring load takes one of them sees seq odd after it. */
	if (!__atomic_compare_exchange_n(&clk.seq, &seq, seq + 1, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return swiw_clock_sys_ns();
	ns = swiw_clock_sys_ns();
	tsc = tsc_read();
	/* A counter behind the anchor's (another CPU's) gives no scale. */
	if (tsc > btsc && ns > bns)
		mult = (uint64_t)(((unsigned __int128)(ns - bns) << 32) /
				  (tsc - btsc));
	__atomic_store_n(&clk.base_ns, ns, __ATOMIC_RELEASE);
	__atomic_store_n(&clk.base_tsc, tsc, __ATOMIC_RELEASE);
	if (mult)
		__atomic_store_n(&clk.mult, mult, __ATOMIC_RELEASE);
	__atomic_store_n(&clk.seq, seq + 2, __ATOMIC_RELEASE);
	return ns;
}

static uint64_t clamp(uint64_t ns)
{
	uint64_t last = clk_last;

	if (ns >= last) {
		clk_last = ns;
		return ns;
	}
	if (last - ns > CLK_WARP_NS)
		__atomic_store_n(&swiw_clock_tsc_on, 0, __ATOMIC_RELAXED);
	return last;
}

uint64_t swiw_clock_at(uint64_t tsc)
{
	uint64_t bns, btsc, mult, ns;
	uint32_t seq;

	do {
		seq = __atomic_load_n(&clk.seq, __ATOMIC_ACQUIRE);
		bns = __atomic_load_n(&clk.base_ns, __ATOMIC_ACQUIRE);
		btsc = __atomic_load_n(&clk.base_tsc, __ATOMIC_ACQUIRE);
		mult = __atomic_load_n(&clk.mult, __ATOMIC_ACQUIRE);
	} while ((seq & 1) ||
		 seq != __atomic_load_n(&clk.seq, __ATOMIC_RELAXED));
	if (!mult) {
		ns = swiw_clock_sys_ns();
		if ((int64_t)(ns - bns) >= CLK_FIRST_NS)
			reanchor(seq, bns, btsc);
		return clamp(ns);
	}
	if (tsc >= btsc)
		ns = bns + scale(tsc - btsc, mult);
	else
		ns = bns - scale(btsc - tsc, mult);
	if ((int64_t)(ns - bns) >= CLK_ANCHOR_NS)
		ns = reanchor(seq, bns, btsc);
	return clamp(ns);
}

uint64_t swiw_clock_tsc_ns(void)
{
	return swiw_clock_at(tsc_read());
}

uint64_t swiw_clock_init(enum swiw_clock_cfg mode)
{
	uint64_t t0, cost = 0;
	int i;

	__atomic_store_n(&swiw_clock_tsc_on, 0, __ATOMIC_RELAXED);
#if defined(__x86_64__)
	if (mode == SWIW_CLOCK_CFG_AUTO) {
		t0 = swiw_clock_sys_ns();
		for (i = 0; i < 8; i++)
			swiw_clock_sys_ns();
		cost = (swiw_clock_sys_ns() - t0) / 9;
		if (cost < CLK_SLOW_NS)
			return cost;
	} else if (mode != SWIW_CLOCK_CFG_TSC) {
		return 0;
	}
	__atomic_store_n(&clk.base_ns, swiw_clock_sys_ns(), __ATOMIC_RELAXED);
	__atomic_store_n(&clk.base_tsc, tsc_read(), __ATOMIC_RELAXED);
	__atomic_store_n(&clk.mult, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&swiw_clock_tsc_on, 1, __ATOMIC_RELEASE);
#else
	(void)mode, (void)t0, (void)i;
#endif
	return cost;
}

bool swiw_clock_counting(void)
{
	return __atomic_load_n(&swiw_clock_tsc_on, __ATOMIC_RELAXED);
}

uint32_t swiw_clock_anchors(void)
{
	return __atomic_load_n(&clk.seq, __ATOMIC_RELAXED) / 2;
}
