// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The engine's clock (engine/swiw_clock.c), on the CPU's real counter:
 * scaled and re-anchored, it stays within a millisecond of
 * CLOCK_MONOTONIC; a thread's readings never go back; a counter that
 * steps back (not in step across CPUs) turns itself off; and "auto"
 * counts only where clock_gettime() is slow.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "swiw_clock.h"

/* Reads the clock for @ms of CLOCK_MONOTONIC; fails if it goes back or
 * strays more than a millisecond out of the CLOCK_MONOTONIC readings
 * taken around it (a preemption between them only widens the window). */
static void track(unsigned int ms)
{
	uint64_t end = swiw_clock_sys_ns() + (uint64_t)ms * 1000000u;
	uint64_t prev = 0, now, before, after;

	do {
		before = swiw_clock_sys_ns();
		now = swiw_eng_now_ns();
		after = swiw_clock_sys_ns();
		assert_true(now >= prev);
		if (now + 1000000 < before || now > after + 1000000)
			fail_msg(
				"the counter's clock read %llu ns between %llu and %llu",
				(unsigned long long)now,
				(unsigned long long)before,
				(unsigned long long)after);
		prev = now;
	} while (after < end);
}

static void test_counts(void **state)
{
	uint32_t anchors;

	(void)state;
#if defined(__x86_64__)
	swiw_clock_init(SWIW_CLOCK_CFG_TSC);
	assert_true(swiw_clock_counting());
	anchors = swiw_clock_anchors();
	/* The first scale (10 ms), then two re-anchorings (50 ms each). */
	track(130);
	assert_true(swiw_clock_counting());
	assert_true(swiw_clock_anchors() - anchors >= 3);
#else
	skip();
#endif
}

static void test_step_back(void **state)
{
	uint64_t t0, t1, s0, s1, per_ms, then;

	(void)state;
#if defined(__x86_64__)
	swiw_clock_init(SWIW_CLOCK_CFG_TSC);
	track(15);
	assert_true(swiw_clock_counting());
	t0 = __builtin_ia32_rdtsc();
	s0 = swiw_clock_sys_ns();
	do
		s1 = swiw_clock_sys_ns();
	while (s1 - s0 < 2000000);
	t1 = __builtin_ia32_rdtsc();
	per_ms = (t1 - t0) * 1000000 / (s1 - s0);
	then = swiw_clock_at(t1);
	/* 0.2 ms behind this thread's last reading, as from a CPU whose
	 * counter lags a little: the last reading again, still counting. */
	assert_int_equal(swiw_clock_at(t1 - per_ms / 5), then);
	assert_true(swiw_clock_counting());
	/* 5 ms behind: the counters are not in step; given up. */
	assert_int_equal(swiw_clock_at(t1 - 5 * per_ms), then);
	assert_false(swiw_clock_counting());
	assert_true(swiw_eng_now_ns() >= then);
#else
	skip();
#endif
}

static void test_auto(void **state)
{
	uint64_t cost;

	(void)state;
	cost = swiw_clock_init(SWIW_CLOCK_CFG_AUTO);
	if (swiw_clock_counting())
		assert_true(cost >= 250);
	else
		assert_true(cost < 250);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_step_back),
		cmocka_unit_test(test_auto),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
