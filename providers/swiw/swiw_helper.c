// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Which engine runs this process's queues: the kernel helper behind
 * /dev/swiw, or the in-process engine. Decided once per process, from the
 * configuration (engine = auto | inprocess | kernel) and what /dev/swiw
 * answers to SWIW_IOC_VERSION. The helper is used only when its ABI is
 * this provider's and it has the data path (SWIW_VERSION_DATAPATH); the
 * skeleton swiw.ko registers memory and maps rings but moves no data.
 * This provider does not drive the helper's data path yet either, so
 * today every process runs the in-process engine, and says why.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <rdma/swiw-abi.h>

#include "swiw.h"
#include "swiw_config.h"

#define SWIW_HELPER_DEV "/dev/swiw"

static pthread_once_t helper_once = PTHREAD_ONCE_INIT;
static struct swiw_engine_choice choice;

static void helper_probe(struct swiw_engine_choice *c)
{
	struct swiw_ioc_version v = { 0 };
	int fd = open(SWIW_HELPER_DEV, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		snprintf(c->why, sizeof(c->why), "%s: %s", SWIW_HELPER_DEV,
			 strerror(errno));
		return;
	}
	if (ioctl(fd, SWIW_IOC_VERSION, &v)) {
		snprintf(c->why, sizeof(c->why), "%s: SWIW_IOC_VERSION: %s",
			 SWIW_HELPER_DEV, strerror(errno));
	} else if (v.abi_version != SWIW_ABI_VERSION) {
		snprintf(c->why, sizeof(c->why),
			 "%s speaks ABI %u, this provider ABI %u",
			 SWIW_HELPER_DEV, v.abi_version, SWIW_ABI_VERSION);
	} else if (!(v.flags & SWIW_VERSION_DATAPATH)) {
		snprintf(c->why, sizeof(c->why),
			 "%s (ABI %u) has no data path (the skeleton helper)",
			 SWIW_HELPER_DEV, v.abi_version);
	} else {
		c->helper_usable = true;
		snprintf(c->why, sizeof(c->why),
			 "%s (ABI %u) has a data path this provider does not "
			 "drive yet",
			 SWIW_HELPER_DEV, v.abi_version);
	}
	close(fd);
}

static void engine_choose(void)
{
	int want = swiw_config()->engine;

	choice.kind = SWIW_ENGINE_INPROCESS;
	if (want == SWIW_ENGINE_CFG_INPROCESS) {
		snprintf(choice.why, sizeof(choice.why),
			 "engine = inprocess in the configuration");
		return;
	}
	helper_probe(&choice);
	if (want == SWIW_ENGINE_CFG_KERNEL) {
		/* Forced, and not possible: devices refuse to open rather
		 * than run somewhere else than asked. */
		choice.kind = SWIW_ENGINE_NONE;
		swiw_err("engine = kernel, but the kernel helper cannot be "
			 "used: %s",
			 choice.why);
		return;
	}
	swiw_info("in-process engine: %s", choice.why);
}

const struct swiw_engine_choice *swiw_engine_choice(void)
{
	pthread_once(&helper_once, engine_choose);
	return &choice;
}

const char *swiw_engine_name(int kind)
{
	switch (kind) {
	case SWIW_ENGINE_INPROCESS:
		return "in-process";
	case SWIW_ENGINE_KERNEL:
		return "kernel helper";
	default:
		return "none";
	}
}
