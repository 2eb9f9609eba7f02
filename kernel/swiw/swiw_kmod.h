/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * swiw.ko internals: the state of one open /dev/swiw file. Everything a
 * process registers or allocates through its file lives in it and is freed
 * by release(), whatever state the process was in when it went away.
 */
#ifndef SWIW_KMOD_H
#define SWIW_KMOD_H

#include <linux/types.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/xarray.h>

#include <rdma/swiw-abi.h>

/* The provider's limits (STag indexes, IRD/ORD): one definition. */
#include "swiw_limits.h"

/* A registered region: its pinned pages, and the mm they were charged to. */
struct swiw_kmr {
	u32 stag; /* (index << 8) | key, as the in-process engine's */
	u32 access; /* IB_UVERBS_ACCESS_* */
	u64 addr;
	u64 length;
	unsigned long npages;
	bool writable;
	struct mm_struct *mm; /* mmgrab'd: pinned_vm is returned to it */
	struct page **pages;
};

/* A ring allocated with SWIW_IOC_QUEUE, mapped by the provider. */
struct swiw_kqueue {
	u32 id;
	u32 kind; /* enum swiw_queue_kind */
	u32 num;
	u32 stride;
	size_t size; /* octets the provider maps (page multiple) */
	void *mem; /* vmalloc_user: zeroed, mappable */
};

struct swiw_kfile {
	struct xarray mrs; /* STag index -> struct swiw_kmr */
	struct xarray queues; /* queue id -> struct swiw_kqueue */
	struct mutex lock; /* queue_bytes, and queue insertion */
	size_t queue_bytes;
};

/*
 * Queue ids are the mmap offset in units of 2^SWIW_KQ_PGOFF_SHIFT pages,
 * so each queue owns a fixed window of offsets and a lookup is one shift.
 * A queue is at most SWIW_KQ_MAX_BYTES, which fits that window.
 */
#define SWIW_KQ_PGOFF_SHIFT 16
#define SWIW_KQ_MAX_ID ((1U << 15) - 1)
#define SWIW_KQ_MAX_BYTES (64UL << 20)
#define SWIW_KQ_MAX_NUM (1U << 20)
#define SWIW_KQ_MAX_STRIDE 4096U

extern unsigned int swiw_max_queue_mb;

int swiw_mr_reg(struct swiw_kfile *f, void __user *arg);
int swiw_mr_dereg(struct swiw_kfile *f, void __user *arg);
void swiw_mr_release_all(struct swiw_kfile *f);

int swiw_queue_alloc(struct swiw_kfile *f, void __user *arg);
int swiw_queue_mmap(struct swiw_kfile *f, struct vm_area_struct *vma);
struct swiw_kqueue *swiw_queue_find(struct swiw_kfile *f, u32 id, u32 kind);
void swiw_queue_release_all(struct swiw_kfile *f);

int swiw_stream_attach(struct swiw_kfile *f, void __user *arg);
int swiw_stream_cmd(struct swiw_kfile *f, unsigned int cmd, void __user *arg);

#endif /* SWIW_KMOD_H */
