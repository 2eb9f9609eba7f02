// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * engine = ring: the backend (swiw_backend.h) of the helper's lower half
 * run in this process, so that the ring path (RQ rings the lower half
 * takes receive WRs from, transmit and event rings) is exercised where
 * there is no module. Regions stay in the provider's STag table, which
 * the lower half reads through its ops. Rings are plain anonymous memory
 * named by an id, as /dev/swiw names its own.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "swiw.h"
#include "swiw_backend.h"

struct ring_queue {
	uint32_t kind; /* 0: slot free */
	uint32_t num, stride;
	void *mem;
	size_t len;
};

static pthread_mutex_t rq_table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ring_queue *queues; /* index = id - 1 */
static uint32_t nqueues;

static int r_queue_alloc(uint32_t kind, uint32_t num, uint32_t stride,
			 struct swiw_bqueue *q)
{
	struct ring_queue *e = NULL;
	uint32_t i;
	void *mem;
	size_t len;

	if (!num || (num & (num - 1)) || !stride || (stride & 15))
		return EINVAL;
	mem = swiw_ring_alloc(num, stride, 0, &len);
	if (!mem)
		return ENOMEM;
	pthread_mutex_lock(&rq_table_lock);
	for (i = 0; i < nqueues; i++)
		if (!queues[i].kind) {
			e = &queues[i];
			break;
		}
	if (!e) {
		uint32_t n = nqueues ? nqueues * 2 : 64;
		struct ring_queue *t = realloc(queues, n * sizeof(*t));

		if (!t) {
			pthread_mutex_unlock(&rq_table_lock);
			swiw_ring_free(mem, len);
			return ENOMEM;
		}
		memset(t + nqueues, 0, (n - nqueues) * sizeof(*t));
		queues = t;
		i = nqueues;
		nqueues = n;
		e = &queues[i];
	}
	*e = (struct ring_queue){ .kind = kind,
				  .num = num,
				  .stride = stride,
				  .mem = mem,
				  .len = len };
	pthread_mutex_unlock(&rq_table_lock);
	q->id = i + 1;
	q->mem = mem;
	q->len = len;
	return 0;
}

static void r_queue_free(struct swiw_bqueue *q)
{
	pthread_mutex_lock(&rq_table_lock);
	if (q->id && q->id <= nqueues && queues[q->id - 1].mem == q->mem)
		queues[q->id - 1].kind = 0;
	pthread_mutex_unlock(&rq_table_lock);
	swiw_ring_free(q->mem, q->len);
	q->mem = NULL;
}

static int r_attach(struct swiw_ioc_attach *a)
{
	(void)a;
	return EOPNOTSUPP;
}

static int r_stream_op(uint32_t stream_id)
{
	(void)stream_id;
	return EOPNOTSUPP;
}

struct swiw_backend swiw_ring_backend = {
	.name = "ring engine",
	.queue_alloc = r_queue_alloc,
	.queue_free = r_queue_free,
	.attach = r_attach,
	.doorbell = r_stream_op,
	.detach = r_stream_op,
	.event_fd = -1,
};
