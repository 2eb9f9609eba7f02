/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The backend of a stream's lower half, behind the swiw-abi.h rings: the
 * kernel helper (/dev/swiw, swiw_be_kernel.c) or the wire core's lower
 * half run in the process (swiw_be_proc.c, with its socket read by recv(),
 * swiw_be_inproc.c, or pushed to it, swiw_be_ring.c). Chosen once per
 * process (swiw_backend.c); the provider calls only these.
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
	int (*reg_mr)(void *addr, uint64_t len, uint64_t iova, int access,
		      uint32_t pd, uint32_t *stag);
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
	 * A region of the provider's table was deregistered (NULL: the
	 * backend's own DEREG_MR sees to it): nothing the streams have not
	 * sent yet is read from it any more. True if a stream ended so.
	 */
	bool (*mr_gone)(void);
	/*
	 * The fd the engine thread polls for events (-1: none, the backend
	 * reports through swiw_backend_wake on the engine thread itself).
	 */
	int event_fd;
	/* Send with Invalidate and INVALIDATE txds change the helper's
	 * table only: the provider mirrors them in its own. */
	bool mirror_invalidate;
};

/* The process's backend; NULL only when engine = kernel cannot be had. */
const struct swiw_backend *swiw_backend(void);

/* swiw_be_kernel.c: /dev/swiw */
struct swiw_engine_choice;
extern struct swiw_backend swiw_kernel_backend;
bool swiw_kernel_backend_probe(struct swiw_engine_choice *c);

/* swiw_be_inproc.c: the default, engine = auto | inprocess */
extern struct swiw_backend swiw_inproc_backend;
/* swiw_be_ring.c: engine = ring */
extern struct swiw_backend swiw_ring_backend;
/*
 * swiw_be_proc.c, for the last two: their streams' sockets, from the
 * engine's epoll; the events wanted next, and in *@more whether reception
 * stopped at its read bound with the socket perhaps still readable.
 */
uint32_t swiw_proc_stream_io(uint32_t id, uint32_t events, bool *more);
uint32_t swiw_proc_stream_interest(uint32_t id);
void swiw_proc_stream_pd(uint32_t id, const void *pd);

#endif /* SWIW_BACKEND_H */
