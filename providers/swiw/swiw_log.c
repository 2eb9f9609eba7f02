// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdarg.h>
#include <stdio.h>

#include "swiw_config.h"
#include "swiw_log.h"

void swiw_wire_dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

int swiw_log_max = -1;

/* The wire core's debug lines (swiw_port.h), into this log. */
void swiw_wire_dbg(const char *fmt, ...)
{
	char buf[384];
	va_list ap;

	if (swiw_config()->log_level < SWIW_LOG_DEBUG)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	swiw_log(SWIW_LOG_DEBUG, "%s", buf);
}

void swiw_log(enum swiw_log_level level, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if ((int)level > swiw_config()->log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* One write per message so that lines of threads do not interleave. */
	fprintf(stderr, "swiw: %s\n", buf);
}
