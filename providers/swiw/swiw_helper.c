// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Which engine runs this process's queues: the kernel helper behind
 * /dev/swiw, the same lower half run in the process over the same rings
 * (ring), or the in-process engine. Decided once per process, from the
 * configuration (engine = auto | inprocess | ring | kernel) and what
 * /dev/swiw answers to SWIW_IOC_VERSION. The helper is used only when
 * its ABI is this provider's and it has the data path
 * (SWIW_VERSION_DATAPATH); the skeleton swiw.ko registers memory and maps
 * rings but moves no data. Also the kernel backend (swiw_backend.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/swiw-abi.h>

#include "swiw.h"
#include "swiw_backend.h"
#include "swiw_config.h"

#define SWIW_HELPER_DEV "/dev/swiw"

static pthread_once_t helper_once = PTHREAD_ONCE_INIT;
static struct swiw_engine_choice choice;
static const struct swiw_backend *backend;
static int helper_fd = -1;

/* Probes /dev/swiw; returns its fd when usable, else -1 (and says why). */
static int helper_probe(struct swiw_engine_choice *c)
{
	struct swiw_ioc_version v = { 0 };
	int fd = open(SWIW_HELPER_DEV, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		snprintf(c->why, sizeof(c->why), "%s: %s", SWIW_HELPER_DEV,
			 strerror(errno));
		return -1;
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
		snprintf(c->why, sizeof(c->why), "%s (ABI %u) has a data path",
			 SWIW_HELPER_DEV, v.abi_version);
		return fd;
	}
	close(fd);
	return -1;
}

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
	helper_fd = helper_probe(&choice);
	if (helper_fd >= 0) {
		choice.kind = SWIW_ENGINE_KERNEL;
		swiw_kernel_backend_open(helper_fd);
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
	pthread_once(&helper_once, engine_choose);
	return &choice;
}

const struct swiw_backend *swiw_backend(void)
{
	pthread_once(&helper_once, engine_choose);
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

/* The kernel backend: /dev/swiw's ioctls and mmap ----------------------- */

static int kfd = -1;

int swiw_kernel_backend_open(int fd)
{
	kfd = fd;
	swiw_kernel_backend.event_fd = fd;
	return 0;
}

static int kioctl(unsigned long cmd, void *arg)
{
	int rc;

	do
		rc = ioctl(kfd, cmd, arg);
	while (rc && errno == EINTR);
	return rc ? errno : 0;
}

static int k_reg_mr(void *addr, uint64_t len, int access, uint32_t pd,
		    uint32_t *stag)
{
	struct swiw_ioc_reg_mr r = { .addr = (uintptr_t)addr,
				     .length = len,
				     .access = (uint32_t)access,
				     .pd = pd };
	int err = kioctl(SWIW_IOC_REG_MR, &r);

	if (!err)
		*stag = r.stag;
	return err;
}

static int k_dereg_mr(uint32_t stag)
{
	struct swiw_ioc_dereg_mr r = { .stag = stag };

	return kioctl(SWIW_IOC_DEREG_MR, &r);
}

static int k_queue_alloc(uint32_t kind, uint32_t num, uint32_t stride,
			 struct swiw_bqueue *q)
{
	struct swiw_ioc_queue r = { .kind = kind,
				    .num = num,
				    .stride = stride };
	struct swiw_ioc_queue_free f = { 0 };
	void *p;
	int err = kioctl(SWIW_IOC_QUEUE, &r);

	if (err)
		return err;
	p = mmap(NULL, r.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, kfd,
		 (off_t)r.mmap_offset);
	if (p == MAP_FAILED) {
		err = errno;
		f.id = r.id;
		kioctl(SWIW_IOC_QUEUE_FREE, &f);
		return err;
	}
	/* A forked child must not share the rings (as for our own). */
	madvise(p, r.mmap_size, MADV_DONTFORK);
	q->id = r.id;
	q->mem = p;
	q->len = r.mmap_size;
	return 0;
}

static void k_queue_free(struct swiw_bqueue *q)
{
	struct swiw_ioc_queue_free f = { .id = q->id };
	int err;

	if (!q->mem)
		return;
	err = kioctl(SWIW_IOC_QUEUE_FREE, &f);
	if (err)
		swiw_warn("%s: queue %u not freed: %s", SWIW_HELPER_DEV, q->id,
			  strerror(err));
	munmap(q->mem, q->len);
	q->mem = NULL;
}

static int k_attach(struct swiw_ioc_attach *a)
{
	return kioctl(SWIW_IOC_ATTACH, a);
}

static int k_doorbell(uint32_t stream_id)
{
	struct swiw_ioc_stream r = { .stream_id = stream_id };

	return kioctl(SWIW_IOC_DOORBELL, &r);
}

static int k_set_access(uint32_t stream_id, uint32_t access)
{
	struct swiw_ioc_access r = { .stream_id = stream_id, .access = access };

	return kioctl(SWIW_IOC_SET_ACCESS, &r);
}

static int k_detach(uint32_t stream_id)
{
	struct swiw_ioc_stream r = { .stream_id = stream_id };

	return kioctl(SWIW_IOC_DETACH, &r);
}

struct swiw_backend swiw_kernel_backend = {
	.name = "kernel helper",
	.reg_mr = k_reg_mr,
	.dereg_mr = k_dereg_mr,
	.queue_alloc = k_queue_alloc,
	.queue_free = k_queue_free,
	.attach = k_attach,
	.doorbell = k_doorbell,
	.set_access = k_set_access,
	.detach = k_detach,
	.event_fd = -1,
	.mirror_invalidate = true,
};
