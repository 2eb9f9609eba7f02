// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * CRC32c in user space: ISA-L's crc32_iscsi, which picks the CPU's fastest
 * instructions at run time (crc32, PCLMULQDQ, AVX-512), where the CPU has
 * SSE4.2; the portable table otherwise.
 */
#include <isa-l/crc.h>

#include "swiw_port.h"

u32 swiw_crc32c(u32 crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	/* ISA-L takes an int length: feed it in pieces. */
	while (len) {
		int n = len > (1u << 30) ? 1 << 30 : (int)len;

		crc = crc32_iscsi((unsigned char *)p, n, crc);
		p += n;
		len -= (size_t)n;
	}
	return crc;
}
