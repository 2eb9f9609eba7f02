// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Rings: SWIW_IOC_QUEUE allocates the zeroed memory of one swiw-abi.h ring
 * and names it by an id and an mmap offset; mmap maps exactly that ring,
 * shared, never executable. A ring lives as long as its file: a mapping
 * holds the file, so release() frees rings no one can still reach.
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

	q = kzalloc(sizeof(*q), GFP_KERNEL);
	if (!q)
		return -ENOMEM;
	q->kind = req.kind;
	q->num = req.num;
	q->stride = req.stride;
	q->size = size;

	mutex_lock(&f->lock);
	if (f->queue_bytes + size > (size_t)swiw_max_queue_mb << 20) {
		ret = -ENOMEM;
		goto err_unlock;
	}
	q->mem = vmalloc_user(size);
	if (!q->mem) {
		ret = -ENOMEM;
		goto err_unlock;
	}
	ret = xa_alloc(&f->queues, &id, q, XA_LIMIT(1, SWIW_KQ_MAX_ID),
		       GFP_KERNEL);
	if (ret) {
		ret = ret == -EBUSY ? -ENOMEM : ret; /* out of ids */
		goto err_vfree;
	}
	q->id = id;
	f->queue_bytes += size;
	mutex_unlock(&f->lock);

	/* The ring stays allocated if this fails: it goes with the file. */
	req.id = id;
	req.mmap_offset = (u64)id << (SWIW_KQ_PGOFF_SHIFT + PAGE_SHIFT);
	req.mmap_size = size;
	return copy_to_user(arg, &req, sizeof(req)) ? -EFAULT : 0;

err_vfree:
	vfree(q->mem);
err_unlock:
	mutex_unlock(&f->lock);
	kfree(q);
	return ret;
}

struct swiw_kqueue *swiw_queue_find(struct swiw_kfile *f, u32 id, u32 kind)
{
	struct swiw_kqueue *q = xa_load(&f->queues, id);

	return q && q->kind == kind ? q : NULL;
}

int swiw_queue_mmap(struct swiw_kfile *f, struct vm_area_struct *vma)
{
	unsigned long pgoff = vma->vm_pgoff;
	struct swiw_kqueue *q;

	/* One whole ring per mapping, from its first octet. */
	if (pgoff & ((1UL << SWIW_KQ_PGOFF_SHIFT) - 1))
		return -EINVAL;
	q = xa_load(&f->queues, pgoff >> SWIW_KQ_PGOFF_SHIFT);
	if (!q || vma->vm_end - vma->vm_start != q->size)
		return -EINVAL;
	/* Shared with the helper, or it is no ring; data, never code. */
	if (!(vma->vm_flags & VM_SHARED) || (vma->vm_flags & VM_EXEC))
		return -EINVAL;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_clear(vma, VM_MAYEXEC);
#else
	vma->vm_flags &= ~VM_MAYEXEC;
#endif
	return remap_vmalloc_range(vma, q->mem, 0);
}

void swiw_queue_release_all(struct swiw_kfile *f)
{
	struct swiw_kqueue *q;
	unsigned long id;

	xa_for_each(&f->queues, id, q)
	{
		vfree(q->mem);
		kfree(q);
	}
	xa_destroy(&f->queues);
}
