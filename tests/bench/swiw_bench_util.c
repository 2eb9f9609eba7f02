// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "swiw_bench_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

double swiw_bu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

bool swiw_bu_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *v)
{
	unsigned long long x;
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || *end || x < lo || x > hi)
		return false;
	*v = (uint32_t)x;
	return true;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void swiw_bu_stats(double *v, size_t n, struct swiw_bu_stats *st)
{
	double sum = 0, sq = 0;
	size_t i;

	qsort(v, n, sizeof(*v), cmp_double);
	for (i = 0; i < n; i++)
		sum += v[i];
	st->avg = sum / n;
	for (i = 0; i < n; i++)
		sq += (v[i] - st->avg) * (v[i] - st->avg);
	st->stdev = sqrt(sq / n);
	st->min = v[0];
	st->max = v[n - 1];
	st->median = v[n / 2];
	st->p99 = v[(size_t)((n - 1) * 0.99)];
	st->p999 = v[(size_t)((n - 1) * 0.999)];
}
