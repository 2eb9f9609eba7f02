// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The user-space side of swiw_port.h: CRC32c and the wire core's log.
 *
 * CRC32c in user space: ISA-L's crc32_iscsi, which picks the CPU's fastest
 * instructions itself (crc32, PCLMULQDQ, AVX-512), where the CPU has
 * SSE4.2 (short pieces go to the crc32 instruction directly); the
 * portable slicing-by-8 table otherwise. On other
 * architectures ISA-L is used as it is: its own dispatch falls back to
 * generic C where the CPU has no CRC instructions.
 */
#include <stdarg.h>

#include <isa-l/crc.h>
#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

#include "swiw_port.h"

/*
 * Asked on every call rather than cached: the answer is one load from
 * libgcc's CPU model, filled by a constructor before main(), and a cache
 * of our own would be a lazily written global.
 */
static inline bool swiw_crc32c_use_isal(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_cpu_supports("sse4.2");
#else
	return true;
#endif
}

#if defined(__x86_64__)
/*
 * Short pieces (MPA's length field, markers, pad, headers, the runs
 * between markers) cost ISA-L 15-40 ns a call in set-up; the crc32
 * instruction does them in a few cycles a word. Measured here (Zen 5):
 * 4 B 3 vs 17 ns, 64 B 6 vs 20 ns, 192 B 19 vs 40 ns, 256 B 25 vs 21 ns.
 * Below 256 octets the instruction is used directly.
 */
#define SWIW_CRC32C_SHORT 256

__attribute__((target("sse4.2"))) static u32
swiw_crc32c_short(u32 crc, const unsigned char *p, size_t len)
{
	u64 c = crc, v;
	u32 w;

	while (len >= 8) {
		memcpy(&v, p, 8);
		c = _mm_crc32_u64(c, v);
		p += 8;
		len -= 8;
	}
	crc = (u32)c;
	if (len >= 4) {
		memcpy(&w, p, 4);
		crc = _mm_crc32_u32(crc, w);
		p += 4;
		len -= 4;
	}
	while (len--)
		crc = _mm_crc32_u8(crc, *p++);
	return crc;
}
#endif

/*
 * swiw_crc32c - raw CRC32c update over @len octets at @buf, fastest way
 *
 * Returns the updated CRC, with the same conventions as
 * swiw_crc32c_table(): no inversion, so the two can be mixed on pieces of
 * one stream.
 */
u32 swiw_crc32c(u32 crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	if (!swiw_crc32c_use_isal())
		return swiw_crc32c_table(crc, buf, len);
#if defined(__x86_64__)
	if (len < SWIW_CRC32C_SHORT)
		return swiw_crc32c_short(crc, p, len);
#endif
	/* ISA-L takes an int length: feed it in pieces. */
	while (len) {
		int n = len > (1u << 30) ? 1 << 30 : (int)len;

		crc = crc32_iscsi((unsigned char *)p, n, crc);
		p += n;
		len -= (size_t)n;
	}
	return crc;
}

/*
 * Silent unless the program says otherwise: the provider defines its own
 * swiw_wire_dbg() that feeds its log (swiw_log.c), which the linker takes
 * over this weak one; tests and fuzzers keep quiet.
 */
__attribute__((weak)) void swiw_wire_dbg(const char *fmt, ...)
{
	(void)fmt;
}
