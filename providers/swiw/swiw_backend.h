/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The lower half behind the swiw-abi.h rings, when one runs the queues:
 * the kernel helper (/dev/swiw, swiw_helper.c) or the same lower half in
 * the process (engine = ring, swiw_ring_engine.c). The provider calls
 * only these; the in-process engine has no backend (swiw_backend()
 * returns NULL) and keeps its own memory and rings.
 */
#ifndef SWIW_BACKEND_H
#define SWIW_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/swiw-abi.h>

/* A ring the backend allocated: its id in other calls, and its memory. */
struct swiw_bqueue {
	uint32_t id;
	void *mem;
	size_t len;
};

struct swiw_backend {
	const char *name;
	/*
	 * Registers a region and names its STag, which the provider's own
	 * table then keeps (swiw_stag_insert). NULL: the provider's table
	 * allocates the STag and the backend looks regions up there. @pd is
	 * the PD's number (struct swiw_pd.pdn): streams of another PD do
	 * not find the region.
	 */
	int (*reg_mr)(void *addr, uint64_t len, int access, uint32_t pd,
		      uint32_t *stag);
	int (*dereg_mr)(uint32_t stag);
	/* Zeroed ring of @num slots of @stride octets: 0 or a positive errno. */
	int (*queue_alloc)(uint32_t kind, uint32_t num, uint32_t stride,
			   struct swiw_bqueue *q);
	void (*queue_free)(struct swiw_bqueue *q);
	/* Hands a socket over (swiw-abi.h): 0 or a positive errno. */
	int (*attach)(struct swiw_ioc_attach *a);
	int (*doorbell)(uint32_t stream_id);
	/* The QP's remote access rights changed: SWIW_ACC_REMOTE_*. */
	int (*set_access)(uint32_t stream_id, uint32_t access);
	int (*detach)(uint32_t stream_id);
	/*
	 * The fd the engine thread polls for events (-1: none, the backend
	 * reports through swiw_backend_wake on the engine thread itself).
	 */
	int event_fd;
	/* Send with Invalidate and INVALIDATE txds change the helper's
	 * table only: the provider mirrors them in its own. */
	bool mirror_invalidate;
};

/* The process's backend, or NULL with the in-process engine. */
const struct swiw_backend *swiw_backend(void);

/* swiw_helper.c: /dev/swiw */
extern struct swiw_backend swiw_kernel_backend;
int swiw_kernel_backend_open(int fd);

/*
 * swiw_ring_engine.c: the lower half run in the process, its socket read
 * in pull mode (the in-process engine) or pushed as the kernel's receive
 * path does (engine = ring)
 */
extern struct swiw_backend swiw_inproc_backend;
extern struct swiw_backend swiw_ring_backend;
/* Its streams' sockets, from the engine's epoll: the events wanted next. */
uint32_t swiw_ring_stream_io(uint32_t id, uint32_t events);
uint32_t swiw_ring_stream_interest(uint32_t id);
void swiw_ring_stream_pd(uint32_t id, const void *pd);

#endif /* SWIW_BACKEND_H */
