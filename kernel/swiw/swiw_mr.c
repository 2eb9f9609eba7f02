// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory registration: SWIW_IOC_REG_MR pins a range of the caller's memory
 * for as long as it stays registered (FOLL_LONGTERM: placement may happen
 * at any time, the owner running or not), charged to mm->pinned_vm against
 * RLIMIT_MEMLOCK as drivers/infiniband/core/umem.c does. STags are the
 * in-process engine's: (index << 8) | a random key byte drawn anew for
 * every registration, so a stale STag of a reused index does not match.
 */
#include <linux/capability.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/random.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include "swiw_access.h"
#include "swiw_kmod.h"

static void swiw_mr_unpin(struct swiw_kmr *mr, unsigned long npinned)
{
	/* Placement may have written into them: dirty, as umem does. */
	if (mr->writable)
		unpin_user_pages_dirty_lock(mr->pages, npinned, true);
	else
		unpin_user_pages(mr->pages, npinned);
}

/* Unpins, returns the charge to the mm it was taken from, frees. */
static void swiw_mr_free(struct swiw_kmr *mr)
{
	swiw_mr_unpin(mr, mr->npages);
	atomic64_sub(mr->npages, &mr->mm->pinned_vm);
	mmdrop(mr->mm);
	kvfree(mr->pages);
	kfree(mr);
}

static int swiw_mr_pin(struct swiw_kmr *mr)
{
	unsigned int gup = FOLL_LONGTERM | (mr->writable ? FOLL_WRITE : 0);
	unsigned long start = mr->addr & PAGE_MASK;
	unsigned long done = 0;
	int ret;

	while (done < mr->npages) {
		/* pin_user_pages_fast() takes an int count; chunk it. */
		int chunk = min_t(unsigned long, mr->npages - done, SZ_1M);

		ret = pin_user_pages_fast(start + done * PAGE_SIZE, chunk, gup,
					  mr->pages + done);
		if (ret <= 0) {
			/* 0 pages pinned and no error: treat as a bad range. */
			ret = ret ?: -EFAULT;
			goto err;
		}
		done += ret;
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto err;
		}
	}
	return 0;
err:
	swiw_mr_unpin(mr, done);
	return ret;
}

/* Charges @npages to current->mm, as ib_umem_get() does. */
static int swiw_mr_charge(struct mm_struct *mm, unsigned long npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	u64 pinned = atomic64_add_return(npages, &mm->pinned_vm);

	if (pinned > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return -ENOMEM; /* what ibv_reg_mr reports over ulimit -l */
	}
	return 0;
}

int swiw_mr_reg(struct swiw_kfile *f, void __user *arg)
{
	struct swiw_ioc_reg_mr req;
	struct swiw_kmr *mr;
	u64 end;
	u32 idx;
	int ret;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	ret = swiw_access_check(req.access);
	if (ret)
		return ret;
	if (!req.length || req.length > SWIW_MAX_MR_SIZE ||
	    check_add_overflow(req.addr, req.length, &end) ||
	    PAGE_ALIGN(end) < end)
		return -EINVAL;
	/* Not user memory at all: what pinning it would answer. */
	if (end > TASK_SIZE || !current->mm)
		return -EFAULT;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return -ENOMEM;
	mr->access = req.access;
	mr->addr = req.addr;
	mr->length = req.length;
	mr->writable = req.access & SWIW_ACCESS_NEEDS_WRITE;
	mr->npages = (PAGE_ALIGN(end) - (req.addr & PAGE_MASK)) >> PAGE_SHIFT;
	mr->pages = kvmalloc_array(mr->npages, sizeof(*mr->pages), GFP_KERNEL);
	if (!mr->pages) {
		ret = -ENOMEM;
		goto err_free;
	}
	mr->mm = current->mm;
	mmgrab(mr->mm);
	ret = swiw_mr_charge(mr->mm, mr->npages);
	if (ret)
		goto err_mm;
	ret = swiw_mr_pin(mr);
	if (ret)
		goto err_charge;

	/*
	 * Reserve the index, then publish the region whole: the data path
	 * may look it up from then on, and must never see it half made.
	 */
	ret = xa_alloc(&f->mrs, &idx, NULL, XA_LIMIT(1, SWIW_MAX_MR),
		       GFP_KERNEL);
	if (ret) {
		ret = ret == -EBUSY ? -ENOMEM : ret; /* table full */
		goto err_pin;
	}
	mr->stag = idx << 8 | get_random_u8();
	ret = xa_err(xa_store(&f->mrs, idx, mr, GFP_KERNEL));
	if (ret) {
		xa_erase(&f->mrs, idx);
		goto err_pin;
	}
	req.stag = mr->stag;
	if (copy_to_user(arg, &req, sizeof(req))) {
		/* Nobody learnt the STag: undo, unless a guess freed it. */
		if (xa_cmpxchg(&f->mrs, idx, mr, NULL, GFP_KERNEL) == mr)
			swiw_mr_free(mr);
		return -EFAULT;
	}
	return 0;

err_pin:
	swiw_mr_unpin(mr, mr->npages);
err_charge:
	atomic64_sub(mr->npages, &mr->mm->pinned_vm);
err_mm:
	mmdrop(mr->mm);
	kvfree(mr->pages);
err_free:
	kfree(mr);
	return ret;
}

int swiw_mr_dereg(struct swiw_kfile *f, void __user *arg)
{
	struct swiw_ioc_dereg_mr req;
	struct swiw_kmr *mr;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (req.rsvd)
		return -EINVAL;
	/* Index and key must both match: a stale STag frees nothing. */
	xa_lock(&f->mrs);
	mr = xa_load(&f->mrs, req.stag >> 8);
	if (!mr || mr->stag != req.stag) {
		xa_unlock(&f->mrs);
		return -EINVAL;
	}
	__xa_erase(&f->mrs, req.stag >> 8);
	xa_unlock(&f->mrs);
	swiw_mr_free(mr);
	return 0;
}

void swiw_mr_release_all(struct swiw_kfile *f)
{
	struct swiw_kmr *mr;
	unsigned long idx;

	xa_for_each(&f->mrs, idx, mr) swiw_mr_free(mr);
	xa_destroy(&f->mrs);
}
