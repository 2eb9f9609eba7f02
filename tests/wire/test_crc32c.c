// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* CRC32c: RFC 3720 vectors for both implementations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "swiw_port.h"

static u32 table_crc(const void *p, size_t n)
{
	return swiw_crc32c_final(swiw_crc32c_table(SWIW_CRC32C_INIT, p, n));
}

static u32 fast_crc(const void *p, size_t n)
{
	return swiw_crc32c_final(swiw_crc32c(SWIW_CRC32C_INIT, p, n));
}

static void test_vectors(void **state)
{
	u8 buf[32];
	int i;

	(void)state;
	memset(buf, 0, 32);
	assert_int_equal(table_crc(buf, 32), 0x8a9136aa);
	assert_int_equal(fast_crc(buf, 32), 0x8a9136aa);
	memset(buf, 0xff, 32);
	assert_int_equal(table_crc(buf, 32), 0x62a8ab43);
	assert_int_equal(fast_crc(buf, 32), 0x62a8ab43);
	for (i = 0; i < 32; i++)
		buf[i] = (u8)i;
	assert_int_equal(table_crc(buf, 32), 0x46dd794e);
	assert_int_equal(fast_crc(buf, 32), 0x46dd794e);
	assert_int_equal(table_crc("123456789", 9), 0xe3069283);
	assert_int_equal(fast_crc("123456789", 9), 0xe3069283);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
