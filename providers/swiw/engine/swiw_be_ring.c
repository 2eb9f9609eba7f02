// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * engine = ring: the lower half in the process (swiw_be_proc.c) fed as
 * swiw.ko feeds it from tcp_read_sock(): octets received into a stage and
 * pushed with swiw_lower_rx(), so that the kernel's receive path runs
 * where there is no module. Never chosen by engine = auto.
 */
#include <errno.h>
#include <sys/socket.h>

#include "swiw_be_proc.h"

/* Feeds what the socket holds, keeping what a stalled lower half left;
 * true if the read bound stopped it. */
static bool ring_rx(struct swiw_proc_stream *ps)
{
	unsigned int reads = 0;

	for (;;) {
		size_t used = 0;
		ssize_t n;

		if (ps->ended || swiw_lower_rx_done(&ps->l))
			return false;
		if (ps->st_head < ps->st_tail) {
			swiw_lower_rx(&ps->l, ps->stage + ps->st_head,
				      ps->st_tail - ps->st_head, &used);
			ps->st_head += (uint32_t)used;
			if (ps->st_head < ps->st_tail)
				return false; /* stalled or ended */
			continue;
		}
		if (swiw_lower_stalled(&ps->l))
			return false;
		if (reads++ == SWIW_PROC_RX_READS)
			return true;
		n = recv(ps->fd, ps->stage, SWIW_PROC_STAGE, MSG_DONTWAIT);
		if (n > 0) {
			ps->st_head = 0;
			ps->st_tail = (uint32_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return false;
		ps->ended = true;
		swiw_lower_rx_closed(&ps->l, n ? errno : 0);
		return false;
	}
}

static const struct swiw_proc_mode ring_mode = {
	.rx = ring_rx,
};

static int ring_attach(struct swiw_ioc_attach *a)
{
	return swiw_proc_attach(a, &ring_mode);
}

struct swiw_backend swiw_ring_backend = {
	.name = "ring engine",
	.queue_alloc = swiw_proc_queue_alloc,
	.queue_free = swiw_proc_queue_free,
	.attach = ring_attach,
	.doorbell = swiw_proc_doorbell,
	.set_access = swiw_proc_set_access,
	.detach = swiw_proc_detach,
	.mr_gone = swiw_proc_mr_gone,
	.event_fd = -1,
};
