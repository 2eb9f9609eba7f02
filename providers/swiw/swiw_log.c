// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdarg.h>
#include <stdio.h>

#include "swiw_config.h"
#include "swiw_log.h"

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
