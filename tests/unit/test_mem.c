// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The STag table's checks, as the engine makes them for a peer's access:
 * key, PD, rights, bounds. Each case is one a remote peer can send.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "swiw.h"

static struct ibv_pd pd_a, pd_b;
static uint8_t buf[4096];

static void mr_init(struct swiw_mr *mr, struct ibv_pd *pd, int access)
{
	memset(mr, 0, sizeof(*mr));
	mr->vmr.ibv_mr.addr = buf;
	mr->vmr.ibv_mr.length = sizeof(buf);
	mr->vmr.ibv_mr.pd = pd;
	mr->iova = 0x10000;
	mr->access = access;
}

static void test_lookup(void **state)
{
	struct swiw_mem_ref ref;
	struct swiw_mr mr;
	uint32_t st;

	(void)state;
	mr_init(&mr, &pd_a, IBV_ACCESS_REMOTE_WRITE);
	assert_int_equal(swiw_stag_alloc(&mr), 0);
	st = mr.stag;
	assert_int_equal(swiw_mem_lookup(st, &pd_a, IBV_ACCESS_REMOTE_WRITE,
					 0x10000, sizeof(buf), &ref),
			 0);
	assert_ptr_equal(ref.addr, buf);
	assert_int_equal(swiw_mem_lookup(st ^ 0x01, &pd_a, 0, 0, 0, &ref),
			 SWIW_MEM_INVALID);
	assert_int_equal(swiw_mem_lookup(0, &pd_a, 0, 0, 0, &ref),
			 SWIW_MEM_INVALID);
	assert_int_equal(swiw_mem_lookup(st, &pd_b, 0, 0, 0, &ref),
			 SWIW_MEM_NOT_ASSOC);
	assert_int_equal(swiw_mem_lookup(st, &pd_a, IBV_ACCESS_REMOTE_READ, 0,
					 0, &ref),
			 SWIW_MEM_ACCESS);
	assert_int_equal(swiw_mem_lookup(st, &pd_a, 0, 0x10001, sizeof(buf),
					 &ref),
			 SWIW_MEM_BOUNDS);
	assert_int_equal(swiw_mem_lookup(st, &pd_a, 0, 0xffff, 1, &ref),
			 SWIW_MEM_BOUNDS);
	assert_int_equal(swiw_mem_lookup(st, &pd_a, 0, UINT64_MAX, 2, &ref),
			 SWIW_MEM_WRAP);
	swiw_stag_free(&mr);
	assert_int_equal(swiw_mem_lookup(st, &pd_a, 0, 0, 0, &ref),
			 SWIW_MEM_INVALID);
}

/* A stream not yet given its QP's PD must reach no region at all. */
static void test_no_pd_fails_closed(void **state)
{
	struct swiw_mem_ref ref;
	struct swiw_mr mr;

	(void)state;
	mr_init(&mr, &pd_a, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	assert_int_equal(swiw_stag_alloc(&mr), 0);
	assert_int_equal(swiw_mem_lookup(mr.stag, NULL, 0, 0, 0, &ref),
			 SWIW_MEM_NOT_ASSOC);
	assert_int_equal(swiw_mem_lookup(mr.stag, NULL, IBV_ACCESS_REMOTE_WRITE,
					 0x10000, 1, &ref),
			 SWIW_MEM_NOT_ASSOC);
	assert_int_equal(swiw_mem_invalidate(mr.stag, NULL),
			 SWIW_MEM_NOT_ASSOC);
	assert_int_equal(swiw_mem_lookup(mr.stag, &pd_a, 0, 0, 0, &ref), 0);
	swiw_stag_free(&mr);
}

static void test_invalidate(void **state)
{
	struct swiw_mem_ref ref;
	struct swiw_mr mr;

	(void)state;
	mr_init(&mr, &pd_a, IBV_ACCESS_REMOTE_WRITE);
	assert_int_equal(swiw_stag_alloc(&mr), 0);
	assert_int_equal(swiw_mem_invalidate(mr.stag, &pd_b),
			 SWIW_MEM_NOT_ASSOC);
	assert_int_equal(swiw_mem_lookup(mr.stag, &pd_a, 0, 0, 0, &ref), 0);
	assert_int_equal(swiw_mem_invalidate(mr.stag, &pd_a), 0);
	assert_int_equal(swiw_mem_lookup(mr.stag, &pd_a, 0, 0, 0, &ref),
			 SWIW_MEM_INVALID);
	assert_int_equal(swiw_mem_invalidate(mr.stag, &pd_a), SWIW_MEM_INVALID);
	swiw_stag_free(&mr);
}

/*
 * The data path's cached lookup: a hit is checked as a lookup is (PD,
 * rights, bounds), and a deregistration or an invalidation since the
 * entry was kept makes it miss, whether or not the slot is reused.
 */
static void test_cached(void **state)
{
	struct swiw_mem_cache c;
	struct swiw_mem_ref ref;
	struct swiw_mr mr, mr2;
	uint32_t st;

	(void)state;
	memset(&c, 0, sizeof(c));
	mr_init(&mr, &pd_a, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE);
	assert_int_equal(swiw_stag_alloc(&mr), 0);
	st = mr.stag;
	assert_int_equal(swiw_mem_lookup_cached(&c, st, &pd_a, 0, 0x10000,
						sizeof(buf), &ref),
			 0);
	assert_ptr_equal(ref.addr, buf);
	/* Hits, checked each time. */
	assert_int_equal(swiw_mem_lookup_cached(&c, st, &pd_a,
						IBV_ACCESS_LOCAL_WRITE, 0x10000,
						1, &ref),
			 0);
	assert_int_equal(swiw_mem_lookup_cached(&c, st, &pd_b, 0, 0, 0, &ref),
			 SWIW_MEM_NOT_ASSOC);
	assert_int_equal(swiw_mem_lookup_cached(&c, st, &pd_a,
						IBV_ACCESS_REMOTE_READ, 0, 0,
						&ref),
			 SWIW_MEM_ACCESS);
	assert_int_equal(swiw_mem_lookup_cached(&c, st, &pd_a, 0, 0x10001,
						sizeof(buf), &ref),
			 SWIW_MEM_BOUNDS);
	assert_int_equal(swiw_mem_lookup_cached(&c, st, &pd_a, 0, UINT64_MAX, 2,
						&ref),
			 SWIW_MEM_WRAP);
	assert_int_equal(swiw_mem_lookup_cached(&c, st ^ 0x01, &pd_a, 0, 0, 0,
						&ref),
			 SWIW_MEM_INVALID);
	/* Invalidated: the entry kept is stale. */
	assert_int_equal(swiw_mem_invalidate(st, &pd_a), 0);
	assert_int_equal(swiw_mem_lookup_cached(&c, st, &pd_a, 0, 0, 0, &ref),
			 SWIW_MEM_INVALID);
	swiw_stag_free(&mr);

	/* Deregistered after a hit was kept: stale too. */
	mr_init(&mr2, &pd_a, IBV_ACCESS_REMOTE_WRITE);
	assert_int_equal(swiw_stag_alloc(&mr2), 0);
	st = mr2.stag;
	assert_int_equal(swiw_mem_lookup_cached(&c, st, &pd_a, 0, 0, 0, &ref),
			 0);
	swiw_stag_free(&mr2);
	assert_int_equal(swiw_mem_lookup_cached(&c, st, &pd_a, 0, 0, 0, &ref),
			 SWIW_MEM_INVALID);
	/* A miss of another PD is not kept for the right one's sake. */
	mr_init(&mr, &pd_a, IBV_ACCESS_REMOTE_WRITE);
	assert_int_equal(swiw_stag_alloc(&mr), 0);
	assert_int_equal(swiw_mem_lookup_cached(&c, mr.stag, &pd_b, 0, 0, 0,
						&ref),
			 SWIW_MEM_NOT_ASSOC);
	assert_int_equal(swiw_mem_lookup_cached(&c, mr.stag, &pd_b, 0, 0, 0,
						&ref),
			 SWIW_MEM_NOT_ASSOC);
	swiw_stag_free(&mr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup),
		cmocka_unit_test(test_no_pd_fails_closed),
		cmocka_unit_test(test_invalidate),
		cmocka_unit_test(test_cached),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
