/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The lower half run in the process (swiw_be_proc.c) and the two backends
 * built on it, which differ only in how a stream's socket reaches its
 * lower half: swiw_be_inproc.c (recv() straight into place) and
 * swiw_be_ring.c (octets pushed, as the kernel's receive path does).
 * Under the engine lock.
 */
#ifndef SWIW_BE_PROC_H
#define SWIW_BE_PROC_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/swiw-abi.h>

#include "swiw.h"
#include "swiw_backend.h"
#include "swiw_lower.h"

#define SWIW_PROC_STAGE (256 * 1024)
/*
 * Reads (stage-fulls) a stream's receive takes per call, so that under a
 * steady stream the upper half drains the events (completions) in
 * between; it calls again at once (swiw_proc_stream_io's *more).
 */
#define SWIW_PROC_RX_READS 4

struct swiw_proc_stream;

/* How a backend feeds received octets to a stream's lower half. */
struct swiw_proc_mode {
	/* The lower half reads the socket itself, into this stage. */
	bool lower_stage;
	/* The socket may be readable: feed what it holds; true if the
	 * read bound stopped it. */
	bool (*rx)(struct swiw_proc_stream *ps);
};

struct swiw_proc_stream {
	struct swiw_lower l;
	uint32_t id;
	int fd;
	const struct swiw_proc_mode *mode;
	struct ring_ref *free_refs;
	struct swiw_mem_cache mcache; /* r_mr_get's */
	struct ring_queue *q[3]; /* tx, rxev, rq: busy while attached */
	uint8_t *stage; /* received octets the lower half has not taken */
	uint32_t st_head, st_tail;
	bool ended; /* the transport ended and the lower half knows */
	const void *pd; /* its QP's: regions of other PDs are not found */
	bool want_out;
};

int swiw_proc_queue_alloc(uint32_t kind, uint32_t num, uint32_t stride,
			  struct swiw_bqueue *q);
void swiw_proc_queue_free(struct swiw_bqueue *q);
int swiw_proc_attach(struct swiw_ioc_attach *a,
		     const struct swiw_proc_mode *mode);
int swiw_proc_doorbell(uint32_t id);
int swiw_proc_set_access(uint32_t id, uint32_t access);
bool swiw_proc_mr_gone(void);
int swiw_proc_detach(uint32_t id);

#endif /* SWIW_BE_PROC_H */
