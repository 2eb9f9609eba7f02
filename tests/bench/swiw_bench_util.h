/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the benchmark programs (tcp_ref, swiw-bench) share. */
#ifndef SWIW_BENCH_UTIL_H
#define SWIW_BENCH_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

/* Monotonic time in seconds. */
double swiw_bu_now(void);

/* Parses a whole decimal number in [lo, hi]; false if it is not one. */
bool swiw_bu_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *v);

/* A sample's order statistics, in the samples' unit. */
struct swiw_bu_stats {
	double min, max, median, avg, stdev, p99, p999;
};

/* Sorts @v (@n > 0 samples) and fills @st. */
void swiw_bu_stats(double *v, size_t n, struct swiw_bu_stats *st);

#endif
