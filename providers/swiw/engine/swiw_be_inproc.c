// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The in-process backend, the default (engine = auto | inprocess): the
 * wire core's lower half on the engine thread (swiw_be_proc.c), reading
 * its socket itself with swiw_lower_rx_pull(), payload straight into the
 * registered region or the RQE's buffers, headers and small FPDUs
 * through a stage.
 */
#include "swiw_be_proc.h"

static bool inproc_rx(struct swiw_proc_stream *ps)
{
	return swiw_lower_rx_pull(&ps->l, SWIW_PROC_RX_READS) == 1;
}

static const struct swiw_proc_mode inproc_mode = {
	.lower_stage = true,
	.rx = inproc_rx,
};

static int inproc_attach(struct swiw_ioc_attach *a)
{
	return swiw_proc_attach(a, &inproc_mode);
}

struct swiw_backend swiw_inproc_backend = {
	.name = "in-process engine",
	.queue_alloc = swiw_proc_queue_alloc,
	.queue_free = swiw_proc_queue_free,
	.attach = inproc_attach,
	.doorbell = swiw_proc_doorbell,
	.set_access = swiw_proc_set_access,
	.detach = swiw_proc_detach,
	.mr_gone = swiw_proc_mr_gone,
	.event_fd = -1,
};
