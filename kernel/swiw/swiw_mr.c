// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory registration: SWIW_IOC_REG_MR pins a range of the caller's memory
 * for as long as it stays registered (FOLL_LONGTERM: placement may happen
 * at any time, the owner running or not), charged to mm->pinned_vm against
 * RLIMIT_MEMLOCK as drivers/infiniband/core/umem.c does. STags are the
 * in-process engine's: (index << 8) | a random key byte drawn anew for
 * every registration, so a stale STag of a reused index does not match.
 *
 * The data path holds regions by reference while it places into them or
 * sends from them: deregistration and release() only drop the table's
 * reference, and the pages are unpinned (and uncharged) with the last.
 */
#include <linux/capability.h>
#include <linux/highmem.h>
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

/* What a region's bookkeeping holds its user to. */
static size_t swiw_mr_bytes(const struct swiw_kmr *mr)
{
	return sizeof(*mr) + mr->npages * sizeof(*mr->pages);
}

/* Unpins, returns the charges to the mm and the user, frees. */
static void swiw_mr_free(struct swiw_kmr *mr)
{
	swiw_mr_unpin(mr, mr->npages);
	atomic64_sub(mr->npages, &mr->mm->pinned_vm);
	mmdrop(mr->mm);
	kvfree(mr->pages);
	swiw_user_uncharge(mr->user, swiw_mr_bytes(mr));
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

/*
 * The zero page or the huge zero page (whose symbol is not exported):
 * neither anonymous nor in a page cache.
 */
static bool swiw_is_zero_page(struct page *page)
{
	struct page *head = compound_head(page);

	return is_zero_pfn(page_to_pfn(page)) ||
	       (!PageAnon(head) && !READ_ONCE(head->mapping));
}

/*
 * A read-only pin of anonymous memory never touched yet pins the shared
 * zero page (6.1 does not unshare it for FOLL_LONGTERM), and the owner's
 * first write then gives the mapping a page of its own that the helper
 * never sees: Sends and Read Responses would carry zeros. Where the
 * mapping may be written, pin a page of its own instead, as the owner's
 * write would have made it.
 */
static int swiw_mr_unshare_zero(struct swiw_kmr *mr)
{
	unsigned long start = mr->addr & PAGE_MASK, i;
	struct page *page;

	for (i = 0; i < mr->npages; i++) {
		if (!swiw_is_zero_page(mr->pages[i]))
			continue;
		if (pin_user_pages_fast(start + i * PAGE_SIZE, 1,
					FOLL_LONGTERM | FOLL_WRITE,
					&page) == 1) {
			unpin_user_page(mr->pages[i]);
			mr->pages[i] = page;
		}
		/* Not writable (PROT_READ): zeros are what it holds. */
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}
	return 0;
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
	u64 end, iova_end;
	u32 idx;
	int ret;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (req.rsvd)
		return -EINVAL;
	ret = swiw_access_check(req.access);
	if (ret)
		return ret;
	if (!req.length || req.length > SWIW_MAX_MR_SIZE ||
	    check_add_overflow(req.addr, req.length, &end) ||
	    PAGE_ALIGN(end) < end ||
	    check_add_overflow(req.iova, req.length, &iova_end))
		return -EINVAL;
	/* Not user memory at all: what pinning it would answer. */
	if (end > TASK_SIZE || !current->mm)
		return -EFAULT;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL_ACCOUNT);
	if (!mr)
		return -ENOMEM;
	refcount_set(&mr->ref, 1);
	mr->pd = req.pd;
	mr->access = req.access;
	mr->addr = req.addr;
	mr->iova = req.iova;
	mr->length = req.length;
	mr->writable = req.access & SWIW_ACCESS_NEEDS_WRITE;
	mr->npages = (PAGE_ALIGN(end) - (req.addr & PAGE_MASK)) >> PAGE_SHIFT;
	mr->mm = current->mm;
	mmgrab(mr->mm);
	/* The limits first: nothing of the region's size is allocated
	 * for a caller who may not pin it. */
	ret = swiw_mr_charge(mr->mm, mr->npages);
	if (ret)
		goto err_mm;
	ret = swiw_user_charge(f->user, swiw_mr_bytes(mr));
	if (ret)
		goto err_charge;
	mr->user = f->user;
	/* No warning for a size kvmalloc refuses (> INT_MAX): ENOMEM. */
	mr->pages = kvmalloc_array(mr->npages, sizeof(*mr->pages),
				   GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!mr->pages) {
		ret = -ENOMEM;
		goto err_user;
	}
	ret = swiw_mr_pin(mr); /* all or none */
	if (ret)
		goto err_pages;
	if (!mr->writable) {
		ret = swiw_mr_unshare_zero(mr);
		if (ret)
			goto err_pin;
	}

	/*
	 * Reserve the index, then publish the region whole: the data path
	 * may look it up from then on, and must never see it half made.
	 */
	ret = xa_alloc_bh(&f->mrs, &idx, NULL, XA_LIMIT(1, SWIW_MAX_MR),
			  GFP_KERNEL);
	if (ret) {
		ret = ret == -EBUSY ? -ENOMEM : ret; /* table full */
		goto err_pin;
	}
	mr->stag = idx << 8 | get_random_u8();
	ret = xa_err(xa_store_bh(&f->mrs, idx, mr, GFP_KERNEL));
	if (ret) {
		xa_erase_bh(&f->mrs, idx);
		goto err_pin;
	}
	req.stag = mr->stag;
	if (copy_to_user(arg, &req, sizeof(req))) {
		/* Nobody learnt the STag: undo, unless a guess freed it. */
		if (xa_cmpxchg_bh(&f->mrs, idx, mr, NULL, GFP_KERNEL) == mr)
			swiw_mr_put(mr);
		return -EFAULT;
	}
	return 0;

err_pin:
	swiw_mr_unpin(mr, mr->npages);
err_pages:
	kvfree(mr->pages);
err_user:
	swiw_user_uncharge(f->user, swiw_mr_bytes(mr));
err_charge:
	atomic64_sub(mr->npages, &mr->mm->pinned_vm);
err_mm:
	mmdrop(mr->mm);
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
	xa_lock_bh(&f->mrs);
	mr = xa_load(&f->mrs, req.stag >> 8);
	if (!mr || mr->stag != req.stag) {
		xa_unlock_bh(&f->mrs);
		return -EINVAL;
	}
	__xa_erase(&f->mrs, req.stag >> 8);
	WRITE_ONCE(mr->dead, true);
	xa_unlock_bh(&f->mrs);
	/* A placement that took the region before holds it over several
	 * receive rounds (a segment, an RQE's message): once this returns
	 * the program may reuse the memory, so every placement under way
	 * ends first, and later ones see it dead. */
	swiw_streams_barrier(f);
	swiw_mr_put(mr);
	return 0;
}

void swiw_mr_release_all(struct swiw_kfile *f)
{
	struct swiw_kmr *mr;
	unsigned long idx;

	xa_for_each(&f->mrs, idx, mr) swiw_mr_put(mr);
	xa_destroy(&f->mrs);
}

static void swiw_mr_free_work(struct work_struct *w)
{
	swiw_mr_free(container_of(w, struct swiw_kmr, free_work));
}

void swiw_mr_put(struct swiw_kmr *mr)
{
	if (!refcount_dec_and_test(&mr->ref))
		return;
	/* Placement in softirq, or under a BH lock, held the last
	 * reference (the region was deregistered meanwhile): unpinning
	 * and freeing the page array wait for process context. */
	if (in_interrupt()) {
		INIT_WORK(&mr->free_work, swiw_mr_free_work);
		queue_work(swiw_wq, &mr->free_work);
		return;
	}
	swiw_mr_free(mr);
}

/*
 * Finds the valid region @stag names and takes a reference, under the
 * table's lock so that a deregistration racing with it either comes
 * first (ENOENT) or leaves the pages to this reference. A region of
 * another PD than @pd is -EPERM (not associated), and not held.
 */
int swiw_mr_get(struct swiw_kfile *f, u32 pd, u32 stag,
		struct swiw_lower_mr *out)
{
	struct swiw_kmr *mr;

	xa_lock_bh(&f->mrs);
	mr = xa_load(&f->mrs, stag >> 8);
	if (!mr || mr->stag != stag || READ_ONCE(mr->invalid)) {
		xa_unlock_bh(&f->mrs);
		return -ENOENT;
	}
	if (mr->pd != pd) {
		xa_unlock_bh(&f->mrs);
		return -EPERM;
	}
	refcount_inc(&mr->ref);
	xa_unlock_bh(&f->mrs);
	out->handle = mr;
	out->base = mr->iova;
	out->len = mr->length;
	/* IB_UVERBS_ACCESS_* and SWIW_ACC_* share their low four bits. */
	out->access = mr->access &
		      (SWIW_ACC_LOCAL_WRITE | SWIW_ACC_REMOTE_WRITE |
		       SWIW_ACC_REMOTE_READ | SWIW_ACC_REMOTE_ATOMIC);
	return 0;
}

/*
 * Invalidates @stag (LOCAL_INV, Send with Invalidate) for a stream of
 * @pd: 0, -ENOENT, or -EPERM (another PD's region, left valid).
 */
int swiw_mr_invalidate(struct swiw_kfile *f, u32 pd, u32 stag)
{
	struct swiw_kmr *mr;
	int ret = -ENOENT;

	xa_lock_bh(&f->mrs);
	mr = xa_load(&f->mrs, stag >> 8);
	if (mr && mr->stag == stag && !mr->invalid) {
		if (mr->pd != pd) {
			ret = -EPERM;
		} else {
			WRITE_ONCE(mr->invalid, true);
			ret = 0;
		}
	}
	xa_unlock_bh(&f->mrs);
	return ret;
}

/*
 * The page and offset of @addr, if [@addr, @addr + @len) lies in @mr.
 * The wire core checked it already; this is the last line that keeps a
 * bug there from touching memory no one registered.
 */
static bool swiw_mr_locate(const struct swiw_kmr *mr, u64 addr, u64 len,
			   unsigned long *pg, unsigned int *off)
{
	u64 rel;

	if (addr < mr->iova || len > mr->length ||
	    addr - mr->iova > mr->length - len)
		return false;
	rel = (mr->addr & ~PAGE_MASK) + (addr - mr->iova);
	*pg = rel >> PAGE_SHIFT;
	*off = rel & ~PAGE_MASK;
	return true;
}

void swiw_mr_write(struct swiw_kmr *mr, u64 addr, const void *src, u32 len)
{
	unsigned long pg;
	unsigned int off;

	if (READ_ONCE(mr->dead))
		return; /* deregistered: the rest of the segment is dropped */
	if (WARN_ON_ONCE(!mr->writable ||
			 !swiw_mr_locate(mr, addr, len, &pg, &off)))
		return;
	while (len) {
		u32 n = min_t(u32, len, PAGE_SIZE - off);
		void *p = kmap_local_page(mr->pages[pg]);

		memcpy(p + off, src, n);
		kunmap_local(p);
		flush_dcache_page(mr->pages[pg]);
		src += n;
		len -= n;
		off = 0;
		pg++;
	}
}

/*
 * Describes the range as pieces of the direct map (no highmem: see
 * swiw_kmod.h), merging pages that are contiguous there.
 */
u32 swiw_mr_map(struct swiw_kmr *mr, u64 addr, u32 len, struct swiw_iov *iov,
		u32 max)
{
	unsigned long pg;
	unsigned int off;
	u32 n = 0;

	if (READ_ONCE(mr->dead) ||
	    WARN_ON_ONCE(!swiw_mr_locate(mr, addr, len, &pg, &off)))
		return 0;
	while (len) {
		u32 take = min_t(u32, len, PAGE_SIZE - off);
		const u8 *p = (const u8 *)page_address(mr->pages[pg]) + off;

		if (n && (const u8 *)iov[n - 1].base + iov[n - 1].len == p) {
			iov[n - 1].len += take;
		} else {
			if (n == max)
				return 0;
			iov[n].base = p;
			iov[n].len = take;
			n++;
		}
		len -= take;
		off = 0;
		pg++;
	}
	return n;
}

/*
 * RFC 7306 atomics on the u64 at @addr: a compare-and-swap loop, so the
 * update is atomic against the owner's CPU accesses and other atomics.
 */
int swiw_mr_atomic(struct swiw_kmr *mr, u64 addr,
		   const struct swiw_rdmap_atomic_req *a, u64 *orig)
{
	unsigned long pg;
	unsigned int off;
	u64 *p, cur, next;

	/* Aligned in memory too: an iova need not be congruent to the
	 * address, and a word at a page's last four octets would reach
	 * into a page that is not the region's. */
	if ((addr & 7) || !mr->writable || READ_ONCE(mr->dead) ||
	    !swiw_mr_locate(mr, addr, 8, &pg, &off) || (off & 7))
		return -EFAULT;
	p = kmap_local_page(mr->pages[pg]) + off;
	cur = READ_ONCE(*p);
	for (;;) {
		u64 seen;

		next = swiw_rdmap_atomic_apply(a, cur);
		if (next == cur)
			break;
		seen = cmpxchg64(p, cur, next);
		if (seen == cur)
			break;
		cur = seen;
	}
	kunmap_local(p);
	*orig = cur;
	return 0;
}
