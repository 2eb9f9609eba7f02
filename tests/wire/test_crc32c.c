// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * CRC32c: the RFC 3720 vectors (PROTOCOL.md §6) for both implementations,
 * the table and ISA-L; and the two agreeing on random data of many
 * lengths and alignments, fed whole or in pieces, and mixed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "swiw_port.h"
#include "wire_test.h"

typedef u32 (*crc_fn)(u32 crc, const void *buf, size_t len);

static const crc_fn impls[] = { swiw_crc32c_table, swiw_crc32c };

static u32 crc_of(crc_fn f, const void *p, size_t n)
{
	return swiw_crc32c_final(f(SWIW_CRC32C_INIT, p, n));
}

/* Deterministic pseudo-random octets (xorshift32). */
static void test_vectors(void **state)
{
	/* RFC 3720 B.4: an iSCSI Read(10) command PDU, 48 octets. */
	static const u8 read10[48] = {
		0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00,
		0x00, 0x18, 0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	u8 zeros[32], ones[32], up[32], down[32];
	unsigned int i, k;

	(void)state;
	memset(zeros, 0, sizeof(zeros));
	memset(ones, 0xff, sizeof(ones));
	for (i = 0; i < 32; i++) {
		up[i] = (u8)i;
		down[i] = (u8)(31 - i);
	}
	for (k = 0; k < SWIW_ARRAY_SIZE(impls); k++) {
		assert_int_equal(crc_of(impls[k], zeros, 32), 0x8a9136aa);
		assert_int_equal(crc_of(impls[k], ones, 32), 0x62a8ab43);
		assert_int_equal(crc_of(impls[k], up, 32), 0x46dd794e);
		assert_int_equal(crc_of(impls[k], down, 32), 0x113fdb5c);
		assert_int_equal(crc_of(impls[k], read10, 48), 0xd9963a56);
		assert_int_equal(crc_of(impls[k], "123456789", 9), 0xe3069283);
		assert_int_equal(crc_of(impls[k], NULL, 0), 0);
		assert_int_equal(crc_of(impls[k], "", 0), 0);
	}
}

/* The wire order MPA uses: least significant octet first (§6). */
static void test_wire_order(void **state)
{
	static const u8 wire[4] = { 0x83, 0x92, 0x06, 0xe3 };
	__le32 le = swiw_cpu_to_le32(crc_of(swiw_crc32c, "123456789", 9));

	(void)state;
	assert_memory_equal(&le, wire, 4);
}

/* Every length to 1 KiB and some large ones, at every alignment to 16. */
static void test_agree_lengths(void **state)
{
	static const size_t big[] = { 4095,  4096,  4097,    65535,
				      65536, 65537, 1 << 20, (1 << 20) + 13 };
	size_t n, align, i;
	u8 *buf = malloc((1 << 20) + 64);

	(void)state;
	assert_non_null(buf);
	fill(buf, (1 << 20) + 64);
	for (n = 0; n <= 1024; n++)
		for (align = 0; align < 16; align++)
			assert_int_equal(crc_of(swiw_crc32c_table, buf + align,
						n),
					 crc_of(swiw_crc32c, buf + align, n));
	for (i = 0; i < SWIW_ARRAY_SIZE(big); i++)
		for (align = 0; align < 16; align += 5)
			assert_int_equal(
				crc_of(swiw_crc32c_table, buf + align, big[i]),
				crc_of(swiw_crc32c, buf + align, big[i]));
	free(buf);
}

/*
 * Fed in pieces, split anywhere, both give the CRC of the whole; and the
 * raw state of one continues in the other, as MPA framing relies on.
 */
static void test_agree_pieces(void **state)
{
	u8 buf[3000];
	size_t n, a, b, round;
	u32 whole, crc;

	(void)state;
	for (round = 0; round < 300; round++) {
		n = rnd() % sizeof(buf);
		fill(buf, n);
		whole = crc_of(swiw_crc32c_table, buf, n);
		a = n ? rnd() % (n + 1) : 0;
		b = a + (n - a ? rnd() % (n - a + 1) : 0);

		crc = swiw_crc32c(SWIW_CRC32C_INIT, buf, a);
		crc = swiw_crc32c(crc, buf + a, b - a);
		crc = swiw_crc32c(crc, buf + b, n - b);
		assert_int_equal(swiw_crc32c_final(crc), whole);

		crc = swiw_crc32c_table(SWIW_CRC32C_INIT, buf, a);
		crc = swiw_crc32c(crc, buf + a, b - a);
		crc = swiw_crc32c_table(crc, buf + b, n - b);
		assert_int_equal(swiw_crc32c_final(crc), whole);
	}
	/* Every split point of one buffer, byte-wise feeding included. */
	fill(buf, 600);
	whole = crc_of(swiw_crc32c, buf, 600);
	for (a = 0; a <= 600; a++) {
		crc = swiw_crc32c_table(SWIW_CRC32C_INIT, buf, a);
		assert_int_equal(
			swiw_crc32c_final(swiw_crc32c(crc, buf + a, 600 - a)),
			whole);
	}
	crc = SWIW_CRC32C_INIT;
	for (a = 0; a < 600; a++)
		crc = (a & 1 ? swiw_crc32c : swiw_crc32c_table)(crc, buf + a,
								1);
	assert_int_equal(swiw_crc32c_final(crc), whole);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_wire_order),
		cmocka_unit_test(test_agree_lengths),
		cmocka_unit_test(test_agree_pieces),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
