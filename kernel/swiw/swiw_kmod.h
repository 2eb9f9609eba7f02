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
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

/* The limits (SGEs, IRD/ORD, regions): one definition, the ABI's. */
#include <rdma/swiw-abi.h>

#include "swiw_lower.h"

/*
 * The data path reaches pinned pages through the kernel's direct map
 * (page_address), both for placement on receive and to hand pages to
 * TCP on transmit; with highmem, pages would need a mapping per access.
 */
#ifdef CONFIG_HIGHMEM
#error "swiw.ko needs a kernel without CONFIG_HIGHMEM (64-bit)"
#endif

/*
 * The kernel memory one user's files hold (rings, streams, the regions'
 * page tables): every open file of the user points at it, and every
 * charge holds a reference, since a region's last put may come after its
 * file is gone. Capped by max_user_mb.
 */
struct swiw_kuser {
	struct hlist_node node; /* swiw_users, under swiw_users_lock */
	kuid_t uid;
	refcount_t ref;
	atomic_long_t bytes;
};

struct swiw_kuser *swiw_user_get(kuid_t uid);
void swiw_user_put(struct swiw_kuser *u);
/* 0, or -ENOMEM when @bytes more would pass the user's cap. */
int swiw_user_charge(struct swiw_kuser *u, size_t bytes);
void swiw_user_uncharge(struct swiw_kuser *u, size_t bytes);

/*
 * A registered region: its pinned pages, and the mm they were charged to.
 * The file's table holds one reference and every stream that uses it
 * (mr_get) one more: pages stay pinned and charged until the last goes.
 */
struct swiw_kmr {
	refcount_t ref;
	u32 stag; /* (index << 8) | key, as the in-process engine's */
	u32 pd; /* the provider's PD: streams of another find it not */
	u32 access; /* IB_UVERBS_ACCESS_* */
	bool invalid; /* invalidated: no new access finds it */
	bool dead; /* deregistered: a placement under way writes no more */
	u64 addr; /* where it is in the process */
	u64 iova; /* where every access addresses it */
	u64 length;
	unsigned long npages;
	bool writable;
	struct mm_struct *mm; /* mmgrab'd: pinned_vm is returned to it */
	struct page **pages;
	struct swiw_kuser *user; /* charged the page table and this */
	struct work_struct free_work; /* a last put in softirq frees here */
};

/*
 * A ring allocated with SWIW_IOC_QUEUE, mapped by the provider. The
 * file's table holds one reference, every mapping (vm_ops open/close) and
 * every stream using it one more; the memory goes with the last.
 */
struct swiw_kqueue {
	refcount_t ref;
	struct swiw_kfile *file;
	u32 id;
	u32 kind; /* enum swiw_queue_kind */
	u32 num;
	u32 stride;
	size_t size; /* octets the provider maps (page multiple) */
	void *mem; /* pages vmap'd for user mapping: zeroed */
	struct page **pages; /* charged to the memcg and the user */
	u32 users; /* attached streams, under file->lock */
	/* SWIW_QUEUE_RQ: the consumer side every stream on it shares
	 * (taken in softirq too: a spinlock, BH off). */
	spinlock_t rq_lock;
	struct swiw_lower_rq rq;
};

struct swiw_kfile {
	/* STag index -> struct swiw_kmr; looked up in softirq (LOCK_BH) */
	struct xarray mrs;
	struct xarray queues; /* queue id -> struct swiw_kqueue */
	struct xarray streams; /* stream id -> struct swiw_kstream */
	u32 next_stream; /* xa_alloc_cyclic's cursor, under lock */
	struct mutex lock; /* queue users, queue and stream tables */
	atomic_long_t queue_bytes;
	struct swiw_kuser *user; /* the opener's: what the file holds */
	wait_queue_head_t wq; /* poll(): events posted */
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
/* Streams one file may have attached at once. */
#define SWIW_MAX_STREAMS 16384

extern unsigned int swiw_max_queue_mb;
extern unsigned int swiw_max_user_mb;
extern struct workqueue_struct *swiw_wq;

int swiw_mr_reg(struct swiw_kfile *f, void __user *arg);
int swiw_mr_dereg(struct swiw_kfile *f, void __user *arg);
void swiw_mr_release_all(struct swiw_kfile *f);
/* The data path's view (struct swiw_lower_ops), on a file's regions. */
int swiw_mr_get(struct swiw_kfile *f, u32 pd, u32 stag,
		struct swiw_lower_mr *out);
void swiw_mr_put(struct swiw_kmr *mr);
int swiw_mr_invalidate(struct swiw_kfile *f, u32 pd, u32 stag);
void swiw_mr_write(struct swiw_kmr *mr, u64 addr, const void *src, u32 len);
u32 swiw_mr_map(struct swiw_kmr *mr, u64 addr, u32 len, struct swiw_iov *iov,
		u32 max);
int swiw_mr_atomic(struct swiw_kmr *mr, u64 addr,
		   const struct swiw_rdmap_atomic_req *a, u64 *orig);

int swiw_queue_alloc(struct swiw_kfile *f, void __user *arg);
int swiw_queue_free(struct swiw_kfile *f, void __user *arg);
int swiw_queue_mmap(struct swiw_kfile *f, struct vm_area_struct *vma);
/* Under f->lock: a queue of this file and kind, or NULL. */
struct swiw_kqueue *swiw_queue_find(struct swiw_kfile *f, u32 id, u32 kind);
void swiw_queue_get(struct swiw_kqueue *q);
void swiw_queue_put(struct swiw_kqueue *q);
void swiw_queue_release_all(struct swiw_kfile *f);

int swiw_stream_attach(struct swiw_kfile *f, void __user *arg);
int swiw_stream_cmd(struct swiw_kfile *f, unsigned int cmd, void __user *arg);
void swiw_streams_barrier(struct swiw_kfile *f);
int swiw_stream_set_access(struct swiw_kfile *f, void __user *arg);
bool swiw_stream_events_pending(struct swiw_kfile *f);
void swiw_stream_release_all(struct swiw_kfile *f);

#endif /* SWIW_KMOD_H */
