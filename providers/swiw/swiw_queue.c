// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory of the swiw-abi.h rings the provider and its engines share:
 * SQ, RQ and CQ, and the in-process lower half's event and transmit
 * rings (swiw_queue.h).
 */
#include <sys/mman.h>

#include "swiw_queue.h"

/*
 * Ring memory of its own pages: zeroed, so every slot starts free, and
 * kept out of fork()ed children as registered memory is (the engine
 * writes into it).
 */
void *swiw_ring_alloc(uint32_t num, uint32_t stride, size_t extra, size_t *len)
{
	void *p;

	*len = (size_t)num * stride + extra;
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, *len, MADV_DONTFORK);
	return p;
}

void swiw_ring_free(void *base, size_t len)
{
	if (base)
		munmap(base, len);
}
