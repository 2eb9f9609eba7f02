// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Rings: SWIW_IOC_QUEUE allocates the zeroed memory of one swiw-abi.h ring
 * and names it by an id and an mmap offset; mmap maps exactly that ring,
 * shared, never executable. SWIW_IOC_QUEUE_FREE (or release()) drops the
 * file's reference; every mapping and every attached stream holds one
 * more, so the memory outlives neither them nor the last of them.
 *
 * A ring's pages are charged to the caller's memory cgroup and, with the
 * rest of what its files hold, to its user (max_user_mb); vmap'd with
 * VM_USERMAP, as vmalloc_user's are, so that remap_vmalloc_range maps
 * them.
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>
#include <linux/vmalloc.h>

#include "swiw_kmod.h"

/* The smallest slot each kind's element fits in (a multiple of 16). */
static u32 swiw_queue_min_stride(u32 kind)
{
	switch (kind) {
	case SWIW_QUEUE_SQ:
		return SWIW_SQE_HDR_SIZE;
	case SWIW_QUEUE_RQ:
		return SWIW_RQE_HDR_SIZE;
	case SWIW_QUEUE_CQ:
		return ALIGN(sizeof(struct swiw_cqe), 16);
	case SWIW_QUEUE_TX:
		return ALIGN(sizeof(struct swiw_txd), 16);
	case SWIW_QUEUE_RXEV:
		return ALIGN(sizeof(struct swiw_rxev), 16);
	default:
		return 0;
	}
}

static void swiw_queue_mem_free(struct swiw_kqueue *q)
{
	unsigned long i, n = q->size >> PAGE_SHIFT;

	if (q->mem)
		vunmap(q->mem);
	for (i = 0; q->pages && i < n && q->pages[i]; i++)
		__free_page(q->pages[i]);
	kvfree(q->pages);
}

static int swiw_queue_mem_alloc(struct swiw_kqueue *q)
{
	unsigned long i, n = q->size >> PAGE_SHIFT;

	q->pages = kvcalloc(n, sizeof(*q->pages), GFP_KERNEL_ACCOUNT);
	if (!q->pages)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		q->pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
		if (!q->pages[i])
			return -ENOMEM;
	}
	q->mem = vmap(q->pages, n, VM_MAP | VM_USERMAP, PAGE_KERNEL);
	return q->mem ? 0 : -ENOMEM;
}

/* The octets a ring holds the user to: its pages and their table. */
static size_t swiw_queue_charge(const struct swiw_kqueue *q)
{
	return q->size + (q->size >> PAGE_SHIFT) * sizeof(struct page *);
}

int swiw_queue_alloc(struct swiw_kfile *f, void __user *arg)
{
	struct swiw_ioc_queue req;
	struct swiw_kqueue *q;
	u32 min_stride, id;
	size_t size;
	int ret;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	min_stride = swiw_queue_min_stride(req.kind);
	if (!min_stride || !req.num || !is_power_of_2(req.num) ||
	    req.num > SWIW_KQ_MAX_NUM || req.stride < min_stride ||
	    req.stride > SWIW_KQ_MAX_STRIDE || req.stride % 16)
		return -EINVAL;
	size = (size_t)req.num * req.stride;
	/* A CQ's arm word follows its last CQE. */
	if (req.kind == SWIW_QUEUE_CQ)
		size += sizeof(struct swiw_cq_ctrl);
	size = PAGE_ALIGN(size);
	if (size > SWIW_KQ_MAX_BYTES)
		return -EINVAL;

	q = kzalloc(sizeof(*q), GFP_KERNEL_ACCOUNT);
	if (!q)
		return -ENOMEM;
	refcount_set(&q->ref, 1);
	q->file = f;
	q->kind = req.kind;
	q->num = req.num;
	q->stride = req.stride;
	q->size = size;
	spin_lock_init(&q->rq_lock);

	/* The budget counts rings until their memory goes, mapped or not. */
	if (atomic_long_add_return(size, &f->queue_bytes) >
	    (long)swiw_max_queue_mb << 20) {
		ret = -ENOMEM;
		goto err_budget;
	}
	ret = swiw_user_charge(f->user, swiw_queue_charge(q));
	if (ret)
		goto err_budget;
	ret = swiw_queue_mem_alloc(q);
	if (ret)
		goto err_mem;
	if (q->kind == SWIW_QUEUE_RQ) {
		q->rq.ring.base = q->mem;
		q->rq.ring.num = q->num;
		q->rq.ring.stride = q->stride;
		q->rq.max_sge = min_t(u32, SWIW_MAX_SGE,
				      (q->stride - SWIW_RQE_HDR_SIZE) /
					      sizeof(struct swiw_sge));
	}
	mutex_lock(&f->lock);
	ret = xa_alloc(&f->queues, &id, q, XA_LIMIT(1, SWIW_KQ_MAX_ID),
		       GFP_KERNEL);
	if (ret) {
		ret = ret == -EBUSY ? -ENOMEM : ret; /* out of ids */
		goto err_vfree;
	}
	q->id = id;
	mutex_unlock(&f->lock);

	/* The ring stays allocated if this fails: it goes with the file. */
	req.id = id;
	req.mmap_offset = (u64)id << (SWIW_KQ_PGOFF_SHIFT + PAGE_SHIFT);
	req.mmap_size = size;
	return copy_to_user(arg, &req, sizeof(req)) ? -EFAULT : 0;

err_vfree:
	mutex_unlock(&f->lock);
err_mem:
	swiw_queue_mem_free(q);
	swiw_user_uncharge(f->user, swiw_queue_charge(q));
err_budget:
	atomic_long_sub(size, &f->queue_bytes);
	kfree(q);
	return ret;
}

struct swiw_kqueue *swiw_queue_find(struct swiw_kfile *f, u32 id, u32 kind)
{
	struct swiw_kqueue *q;

	lockdep_assert_held(&f->lock);
	q = xa_load(&f->queues, id);
	return q && q->kind == kind ? q : NULL;
}

void swiw_queue_get(struct swiw_kqueue *q)
{
	refcount_inc(&q->ref);
}

void swiw_queue_put(struct swiw_kqueue *q)
{
	if (!refcount_dec_and_test(&q->ref))
		return;
	atomic_long_sub(q->size, &q->file->queue_bytes);
	swiw_queue_mem_free(q);
	swiw_user_uncharge(q->file->user, swiw_queue_charge(q));
	kfree(q);
}

int swiw_queue_free(struct swiw_kfile *f, void __user *arg)
{
	struct swiw_ioc_queue_free req;
	struct swiw_kqueue *q;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (req.rsvd)
		return -EINVAL;
	mutex_lock(&f->lock);
	q = req.id ? xa_load(&f->queues, req.id) : NULL;
	if (!q) {
		mutex_unlock(&f->lock);
		return -EINVAL;
	}
	if (q->users) {
		mutex_unlock(&f->lock);
		return -EBUSY;
	}
	xa_erase(&f->queues, req.id);
	mutex_unlock(&f->lock);
	/* A mapping may still hold it: then the memory goes with that. */
	swiw_queue_put(q);
	return 0;
}

static void swiw_queue_vm_open(struct vm_area_struct *vma)
{
	swiw_queue_get(vma->vm_private_data);
}

static void swiw_queue_vm_close(struct vm_area_struct *vma)
{
	swiw_queue_put(vma->vm_private_data);
}

static const struct vm_operations_struct swiw_queue_vm_ops = {
	.open = swiw_queue_vm_open,
	.close = swiw_queue_vm_close,
};

int swiw_queue_mmap(struct swiw_kfile *f, struct vm_area_struct *vma)
{
	unsigned long pgoff = vma->vm_pgoff;
	struct swiw_kqueue *q;
	int ret;

	/* One whole ring per mapping, from its first octet. */
	if (pgoff & ((1UL << SWIW_KQ_PGOFF_SHIFT) - 1))
		return -EINVAL;
	/* Shared with the helper, or it is no ring; data, never code. */
	if (!(vma->vm_flags & VM_SHARED) || (vma->vm_flags & VM_EXEC))
		return -EINVAL;
	mutex_lock(&f->lock);
	q = xa_load(&f->queues, pgoff >> SWIW_KQ_PGOFF_SHIFT);
	if (!q || vma->vm_end - vma->vm_start != q->size) {
		mutex_unlock(&f->lock);
		return -EINVAL;
	}
	swiw_queue_get(q); /* QUEUE_FREE may come next: the mapping's */
	mutex_unlock(&f->lock);
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_clear(vma, VM_MAYEXEC);
#else
	vma->vm_flags &= ~VM_MAYEXEC;
#endif
	ret = remap_vmalloc_range(vma, q->mem, 0);
	if (ret) {
		swiw_queue_put(q);
		return ret;
	}
	vma->vm_private_data = q;
	vma->vm_ops = &swiw_queue_vm_ops;
	return 0;
}

void swiw_queue_release_all(struct swiw_kfile *f)
{
	struct swiw_kqueue *q;
	unsigned long id;

	xa_for_each(&f->queues, id, q) swiw_queue_put(q);
	xa_destroy(&f->queues);
}
