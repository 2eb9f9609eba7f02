// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * CRC32c, the portable way: a table-driven update that any C compiler and
 * the kernel can build. User space normally takes the CPU's instructions
 * instead (swiw_crc32c_user.c); the kernel helper uses the kernel's crc32c.
 */
#include "swiw_port.h"

/* Reflected Castagnoli polynomial (RFC 3720 §12.1). */
#define CRC32C_POLY 0x82f63b78u

static u32 crc32c_tab[256];
static bool crc32c_tab_ready;

static void crc32c_tab_init(void)
{
	u32 i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1)));
		crc32c_tab[i] = c;
	}
	crc32c_tab_ready = true;
}

u32 swiw_crc32c_table(u32 crc, const void *buf, size_t len)
{
	const u8 *p = buf;

	if (unlikely(!crc32c_tab_ready))
		crc32c_tab_init();
	while (len--)
		crc = crc32c_tab[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}
