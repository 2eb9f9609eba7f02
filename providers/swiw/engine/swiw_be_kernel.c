// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The kernel backend (swiw_backend.h): the kernel helper swiw.ko behind
 * /dev/swiw runs the lower halves; this file is its ioctls and mmaps. It
 * is used only when the helper speaks this provider's ABI and has the
 * data path (SWIW_VERSION_DATAPATH); the skeleton swiw.ko registers
 * memory and maps rings but moves no data.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/swiw-abi.h>

#include "swiw.h"
#include "swiw_backend.h"

#define SWIW_HELPER_DEV "/dev/swiw"

static int kfd = -1;

/*
 * Probes /dev/swiw and, when the helper can be used, opens the backend on
 * it; says why in @c either way.
 */
bool swiw_kernel_backend_probe(struct swiw_engine_choice *c)
{
	struct swiw_ioc_version v = { 0 };
	int fd = open(SWIW_HELPER_DEV, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		snprintf(c->why, sizeof(c->why), "%s: %s", SWIW_HELPER_DEV,
			 strerror(errno));
		return false;
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
		kfd = fd;
		swiw_kernel_backend.event_fd = fd;
		return true;
	}
	close(fd);
	return false;
}

static int kioctl(unsigned long cmd, void *arg)
{
	int rc;

	do
		rc = ioctl(kfd, cmd, arg);
	while (rc && errno == EINTR);
	return rc ? errno : 0;
}

static int k_reg_mr(void *addr, uint64_t len, uint64_t iova, int access,
		    uint32_t pd, uint32_t *stag)
{
	struct swiw_ioc_reg_mr r = { .addr = (uintptr_t)addr,
				     .length = len,
				     .access = (uint32_t)access,
				     .pd = pd,
				     .iova = iova };
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
