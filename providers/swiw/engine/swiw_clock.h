/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The engine's clock, in ns of CLOCK_MONOTONIC: its deadlines and its
 * policy windows (a 2 us cork, "polled within 10 us"), read a few times
 * per verb. clock_gettime() reads it from the vDSO for ~25 ns where the
 * kernel's clocksource allows; where it does not (hpet, acpi_pm: a VM
 * whose TSC the kernel marked unstable, the lab's QEMU) every read is a
 * system call, 1.6 us under the lab's QEMU, three of them per RDMA Write.
 * There the engine counts the CPU's time-stamp counter instead, scaled to
 * CLOCK_MONOTONIC and re-anchored on it every 50 ms (swiw_clock.c).
 */
#ifndef SWIW_CLOCK_H
#define SWIW_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "swiw_config.h"

/* Nonzero while the engine counts the TSC; read before anything else. */
extern uint32_t swiw_clock_tsc_on;

/*
 * Chooses the clock, once, before the engine's threads read it; returns
 * what one clock_gettime() took, if measured.
 */
uint64_t swiw_clock_init(enum swiw_clock_cfg mode);
bool swiw_clock_counting(void);
uint64_t swiw_clock_tsc_ns(void);

static inline uint64_t swiw_clock_sys_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t swiw_eng_now_ns(void)
{
	if (__atomic_load_n(&swiw_clock_tsc_on, __ATOMIC_ACQUIRE))
		return swiw_clock_tsc_ns();
	return swiw_clock_sys_ns();
}

/* For tests: the reading for counter value @tsc, as swiw_clock_tsc_ns;
 * how many times the counter was anchored on CLOCK_MONOTONIC. */
uint64_t swiw_clock_at(uint64_t tsc);
uint32_t swiw_clock_anchors(void);

#endif /* SWIW_CLOCK_H */
