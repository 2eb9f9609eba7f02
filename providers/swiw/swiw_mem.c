// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * STags and memory checks.
 *
 * An STag is (index << 8) | key: the index names a slot of the process's
 * memory-region table, the key is a random byte drawn anew each time the
 * slot is reused, so a peer cannot guess a valid STag from an old one and
 * a stale STag stops matching. Index 0 is never used: STag 0 is not valid
 * (hardware RNICs reject it, RFC 5040 leaves it reserved).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "swiw.h"

static pthread_mutex_t stag_lock = PTHREAD_MUTEX_INITIALIZER;
static struct swiw_mr **stag_table; /* SWIW_MAX_MR + 1 slots */
static uint32_t stag_free_hint = 1;
static uint64_t key_state;

/* xorshift64*, seeded from the kernel's CSPRNG; under stag_lock. */
static uint8_t next_key(void)
{
	if (!key_state) {
		if (getrandom(&key_state, sizeof(key_state), 0) !=
		    sizeof(key_state))
			key_state = (uintptr_t)&key_state ^
				    0x9e3779b97f4a7c15ULL;
		key_state |= 1;
	}
	key_state ^= key_state >> 12;
	key_state ^= key_state << 25;
	key_state ^= key_state >> 27;
	return (uint8_t)((key_state * 0x2545f4914f6cdd1dULL) >> 56);
}

int swiw_stag_alloc(struct swiw_mr *mr)
{
	uint32_t i, idx = 0;

	pthread_mutex_lock(&stag_lock);
	if (!stag_table) {
		stag_table = calloc(SWIW_MAX_MR + 1, sizeof(*stag_table));
		if (!stag_table) {
			pthread_mutex_unlock(&stag_lock);
			return ENOMEM;
		}
	}
	for (i = 0; i < SWIW_MAX_MR; i++) {
		uint32_t cand = (stag_free_hint + i - 1) % SWIW_MAX_MR + 1;

		if (!stag_table[cand]) {
			idx = cand;
			break;
		}
	}
	if (!idx) {
		pthread_mutex_unlock(&stag_lock);
		return ENOMEM;
	}
	stag_table[idx] = mr;
	stag_free_hint = idx % SWIW_MAX_MR + 1;
	mr->stag = idx << 8 | next_key();
	pthread_mutex_unlock(&stag_lock);
	return 0;
}

/*
 * The backend registered the region and chose @stag (same layout: index
 * << 8 | key): the table keeps it under that STag for the local checks.
 */
int swiw_stag_insert(struct swiw_mr *mr, uint32_t stag)
{
	uint32_t idx = stag >> 8;
	int err = 0;

	if (!idx || idx > SWIW_MAX_MR)
		return EINVAL;
	pthread_mutex_lock(&stag_lock);
	if (!stag_table)
		stag_table = calloc(SWIW_MAX_MR + 1, sizeof(*stag_table));
	if (!stag_table)
		err = ENOMEM;
	else if (stag_table[idx])
		err = EEXIST;
	else
		stag_table[idx] = mr;
	if (!err)
		mr->stag = stag;
	pthread_mutex_unlock(&stag_lock);
	return err;
}

/* Deregistrations and invalidations so far: a reference taken before the
 * last one must look whether its region is still there before it writes,
 * and a cached lookup is stale. */
static uint64_t mem_gen;

void swiw_stag_free(struct swiw_mr *mr)
{
	uint32_t idx = mr->stag >> 8;

	pthread_mutex_lock(&stag_lock);
	if (idx && idx <= SWIW_MAX_MR && stag_table[idx] == mr) {
		stag_table[idx] = NULL;
		__atomic_store_n(&mem_gen, mem_gen + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&stag_lock);
}

/*
 * The region @ref was taken from is still registered. The in-process
 * engine places a segment, or a message into an RQE's buffers, over
 * several rounds from one lookup; a deregistration in between (and the
 * munmap() that may follow it) must stop it: the rest of the segment is
 * dropped, as the region's owner no longer wants it, and the next
 * segment fails on the STag. Deregistration then waits for the round
 * under way (swiw_engine_mr_gone), so nothing is written after it
 * returns. Cheap while nothing was deregistered since @ref was checked.
 */
bool swiw_mem_ref_live(struct swiw_mem_ref *ref)
{
	uint32_t idx = ref->stag >> 8;
	struct swiw_mr *mr;
	bool live;

	if (__atomic_load_n(&mem_gen, __ATOMIC_ACQUIRE) == ref->gen)
		return true;
	pthread_mutex_lock(&stag_lock);
	mr = stag_table && idx && idx <= SWIW_MAX_MR ? stag_table[idx] : NULL;
	live = mr && mr->stag == ref->stag &&
	       (uint8_t *)mr->vmr.ibv_mr.addr == ref->addr &&
	       mr->iova == ref->iova && mr->vmr.ibv_mr.length == ref->len;
	if (live)
		ref->gen = mem_gen;
	pthread_mutex_unlock(&stag_lock);
	return live;
}

/*
 * Is [addr, addr + len) mapped, readable, and writable if asked? The kernel
 * would refuse to pin such a range with EFAULT; the in-process engine has
 * to refuse it the same way, or a later placement would fault.
 */
int swiw_mem_check_range(const void *addr, size_t len, bool need_write)
{
	uintptr_t start = (uintptr_t)addr, end, covered;
	char line[512];
	FILE *f;

	if (!len || __builtin_add_overflow(start, len, &end))
		return EINVAL;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return errno;
	covered = start;
	while (covered < end && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[5];
		int c;

		/* Skip the rest of a line longer than the buffer (long path). */
		if (!strchr(line, '\n'))
			while ((c = fgetc(f)) != EOF && c != '\n')
				;
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) != 3)
			continue;
		if (hi <= covered)
			continue;
		if (lo > covered)
			break; /* a hole */
		if (perms[0] != 'r' || (need_write && perms[1] != 'w'))
			break;
		covered = hi;
	}
	fclose(f);
	return covered >= end ? 0 : EFAULT;
}

/* What swiw_mem_lookup checks of a region found: its PD, rights, bounds. */
static int ref_check(const struct swiw_mem_ref *ref, const struct ibv_pd *pd,
		     int need, uint64_t to, uint64_t len)
{
	uint64_t end;

	if (!pd || ref->pd != pd)
		return SWIW_MEM_NOT_ASSOC;
	if ((ref->access & need) != need)
		return SWIW_MEM_ACCESS;
	if (!len)
		return 0; /* nothing to bound: the caller checks */
	if (__builtin_add_overflow(to, len, &end))
		return SWIW_MEM_WRAP;
	if (to < ref->iova || end > ref->iova + ref->len)
		return SWIW_MEM_BOUNDS;
	return 0;
}

/*
 * The engine's view of an STag, as a remote access would use it: the key
 * byte must match the slot's current key, the region must belong to
 * @pd, carry every right in @need (IBV_ACCESS_* bits; 0 for a local
 * read) and hold [@to, @to + @len) inside [iova, iova + length) (@len
 * 0: that check is the caller's). A NULL @pd matches no region: a
 * stream not yet given its QP's PD can reach nothing. The
 * fields are copied under the table lock, so a concurrent deregistration
 * cannot leave the caller with a freed MR. Returns 0, or the reason as
 * an enum swiw_mem_err.
 */
int swiw_mem_lookup(uint32_t stag, const struct ibv_pd *pd, int need,
		    uint64_t to, uint64_t len, struct swiw_mem_ref *ref)
{
	uint32_t idx = stag >> 8;
	struct swiw_mr *mr;
	int err = 0;

	if (!idx || idx > SWIW_MAX_MR)
		return SWIW_MEM_INVALID;
	pthread_mutex_lock(&stag_lock);
	mr = stag_table ? stag_table[idx] : NULL;
	if (!mr || mr->stag != stag || mr->invalid) {
		err = SWIW_MEM_INVALID;
	} else {
		ref->addr = (uint8_t *)mr->vmr.ibv_mr.addr;
		ref->iova = mr->iova;
		ref->len = mr->vmr.ibv_mr.length;
		ref->access = mr->access;
		ref->pd = mr->vmr.ibv_mr.pd;
		ref->stag = stag;
		ref->gen = mem_gen;
	}
	pthread_mutex_unlock(&stag_lock);
	return err ? err : ref_check(ref, pd, need, to, len);
}

/*
 * Invalidates @stag for @pd (LOCAL_INV, or a Send with Invalidate of the
 * peer): afterwards every access through it fails as an invalid STag,
 * until the region is deregistered (swiw has no fast registration to
 * make it valid again). 0, SWIW_MEM_INVALID (unknown, stale key, or
 * already invalid) or SWIW_MEM_NOT_ASSOC (another PD's, or @pd NULL).
 */
int swiw_mem_invalidate(uint32_t stag, const struct ibv_pd *pd)
{
	uint32_t idx = stag >> 8;
	struct swiw_mr *mr;
	int err = 0;

	if (!idx || idx > SWIW_MAX_MR)
		return SWIW_MEM_INVALID;
	pthread_mutex_lock(&stag_lock);
	mr = stag_table ? stag_table[idx] : NULL;
	if (!mr || mr->stag != stag || mr->invalid)
		err = SWIW_MEM_INVALID;
	else if (!pd || mr->vmr.ibv_mr.pd != pd)
		err = SWIW_MEM_NOT_ASSOC;
	else
		mr->invalid = true;
	if (!err)
		__atomic_store_n(&mem_gen, mem_gen + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&stag_lock);
	return err;
}

/*
 * swiw_mem_lookup() for a data path that looks the same few STags up for
 * every message (an RQE's buffer, a Send's source): a region found while
 * the table has not changed since (no deregistration or invalidation,
 * mem_gen) is taken from @c, without the table's lock, and checked as
 * swiw_mem_lookup checks. Only regions of @pd are kept. @c is zeroed
 * before first use (no region has STag 0).
 */
int swiw_mem_lookup_cached(struct swiw_mem_cache *c, uint32_t stag,
			   const struct ibv_pd *pd, int need, uint64_t to,
			   uint64_t len, struct swiw_mem_ref *ref)
{
	struct swiw_mem_ref *e = &c->ref[(stag >> 8) % SWIW_MEM_CACHE];
	int rc;

	if (stag && e->stag == stag && e->pd == pd &&
	    e->gen == __atomic_load_n(&mem_gen, __ATOMIC_ACQUIRE)) {
		*ref = *e;
	} else {
		rc = swiw_mem_lookup(stag, pd, 0, 0, 0, ref);
		if (rc)
			return rc;
		*e = *ref;
	}
	return ref_check(ref, pd, need, to, len);
}
