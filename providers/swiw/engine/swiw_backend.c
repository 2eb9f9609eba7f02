// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Which backend runs this process's lower halves: the kernel helper
 * behind /dev/swiw (swiw_be_kernel.c), or the wire core's lower half in
 * the process, its socket read by recv() (swiw_be_inproc.c) or pushed to
 * it as the kernel's receive path does (engine = ring, swiw_be_ring.c).
 * Decided once per process, from the configuration (engine = auto |
 * inprocess | ring | kernel) and what /dev/swiw answers.
 */
#include <pthread.h>
#include <stdio.h>

#include "swiw.h"
#include "swiw_backend.h"
#include "swiw_config.h"

static pthread_once_t choice_once = PTHREAD_ONCE_INIT;
static struct swiw_engine_choice choice;
static const struct swiw_backend *backend;

static void engine_choose(void)
{
	int want = swiw_config()->engine;

	choice.kind = SWIW_ENGINE_INPROCESS;
	backend = &swiw_inproc_backend;
	if (want == SWIW_ENGINE_CFG_INPROCESS) {
		snprintf(choice.why, sizeof(choice.why),
			 "engine = inprocess in the configuration");
		swiw_info("in-process engine: %s", choice.why);
		return;
	}
	if (want == SWIW_ENGINE_CFG_RING) {
		/* Never chosen by auto: it tests the ring path without a
		 * module, at a cost the in-process engine does not pay. */
		choice.kind = SWIW_ENGINE_RING;
		backend = &swiw_ring_backend;
		snprintf(choice.why, sizeof(choice.why),
			 "engine = ring in the configuration");
		swiw_info("ring engine: %s", choice.why);
		return;
	}
	if (swiw_kernel_backend_probe(&choice)) {
		choice.kind = SWIW_ENGINE_KERNEL;
		backend = &swiw_kernel_backend;
		swiw_info("kernel helper: %s", choice.why);
		return;
	}
	if (want == SWIW_ENGINE_CFG_KERNEL) {
		/* Forced, and not possible: devices refuse to open rather
		 * than run somewhere else than asked. */
		choice.kind = SWIW_ENGINE_NONE;
		backend = NULL;
		swiw_err("engine = kernel, but the kernel helper cannot be "
			 "used: %s",
			 choice.why);
		return;
	}
	swiw_info("in-process engine: %s", choice.why);
}

const struct swiw_engine_choice *swiw_engine_choice(void)
{
	pthread_once(&choice_once, engine_choose);
	return &choice;
}

const struct swiw_backend *swiw_backend(void)
{
	pthread_once(&choice_once, engine_choose);
	return backend;
}

const char *swiw_engine_name(int kind)
{
	switch (kind) {
	case SWIW_ENGINE_INPROCESS:
		return "in-process";
	case SWIW_ENGINE_RING:
		return "ring";
	case SWIW_ENGINE_KERNEL:
		return "kernel helper";
	default:
		return "none";
	}
}
