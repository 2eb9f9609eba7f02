// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * swiw.ko: the thin helper of the swiw software iWARP RNIC, a misc
 * character device /dev/swiw implementing kernel-headers/rdma/swiw-abi.h.
 *
 * Memory registration (long-term pinning charged to RLIMIT_MEMLOCK), rings
 * the provider maps, and helper streams: connected TCP sockets the helper
 * frames, places and answers for (swiw_stream.c, running the wire core's
 * lower half), so that one-sided operations complete while the owner does
 * not run. SWIW_IOC_VERSION reports SWIW_VERSION_DATAPATH.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/cred.h>
#include <linux/hashtable.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "swiw_kmod.h"
#include "swiw_port.h"
#include "swiw_fpdu.h"

unsigned int swiw_max_queue_mb = 1024;
module_param_named(max_queue_mb, swiw_max_queue_mb, uint, 0644);
MODULE_PARM_DESC(
	max_queue_mb,
	"Ring memory one open file may allocate, in MiB (default 1024)");

/* /dev/swiw is 0666: without a cap per user, files are unlimited. */
unsigned int swiw_max_user_mb = 1024;
module_param_named(max_user_mb, swiw_max_user_mb, uint, 0644);
MODULE_PARM_DESC(
	max_user_mb,
	"Kernel memory (rings, streams, region tables) the open files of one user may hold, in MiB (default 1024)");

static DEFINE_HASHTABLE(swiw_users, 6);
static DEFINE_SPINLOCK(swiw_users_lock);

struct swiw_kuser *swiw_user_get(kuid_t uid)
{
	struct swiw_kuser *u, *fresh;

	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL_ACCOUNT);
	spin_lock_bh(&swiw_users_lock);
	hash_for_each_possible(swiw_users, u, node, __kuid_val(uid))
	{
		/* One on its way out (no reference left) is passed over. */
		if (uid_eq(u->uid, uid) && refcount_inc_not_zero(&u->ref)) {
			spin_unlock_bh(&swiw_users_lock);
			kfree(fresh);
			return u;
		}
	}
	if (fresh) {
		fresh->uid = uid;
		refcount_set(&fresh->ref, 1);
		hash_add(swiw_users, &fresh->node, __kuid_val(uid));
	}
	spin_unlock_bh(&swiw_users_lock);
	return fresh;
}

void swiw_user_put(struct swiw_kuser *u)
{
	if (!refcount_dec_and_test(&u->ref))
		return;
	spin_lock_bh(&swiw_users_lock);
	hash_del(&u->node);
	spin_unlock_bh(&swiw_users_lock);
	WARN_ON_ONCE(atomic_long_read(&u->bytes));
	kfree(u);
}

int swiw_user_charge(struct swiw_kuser *u, size_t bytes)
{
	long max = (long)READ_ONCE(swiw_max_user_mb) << 20;

	if (atomic_long_add_return(bytes, &u->bytes) > max) {
		atomic_long_sub(bytes, &u->bytes);
		return -ENOMEM;
	}
	refcount_inc(&u->ref);
	return 0;
}

void swiw_user_uncharge(struct swiw_kuser *u, size_t bytes)
{
	atomic_long_sub(bytes, &u->bytes);
	swiw_user_put(u);
}

/* Streams' receive and transmit work (swiw_stream.c). */
struct workqueue_struct *swiw_wq;

static int swiw_open(struct inode *inode, struct file *file)
{
	struct swiw_kfile *f;

	f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);
	if (!f)
		return -ENOMEM;
	f->user = swiw_user_get(current_uid());
	if (!f->user) {
		kfree(f);
		return -ENOMEM;
	}
	xa_init_flags(&f->mrs, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_BH);
	xa_init_flags(&f->queues, XA_FLAGS_ALLOC1);
	xa_init_flags(&f->streams, XA_FLAGS_ALLOC1);
	mutex_init(&f->lock);
	atomic_long_set(&f->queue_bytes, 0);
	init_waitqueue_head(&f->wq);
	file->private_data = f;
	return nonseekable_open(inode, file);
}

/*
 * The last reference to the file is gone: no ioctl is running and no ring
 * is mapped any more (every mapping holds the file), so everything can go:
 * the streams first, which hold regions and rings.
 */
static int swiw_release(struct inode *inode, struct file *file)
{
	struct swiw_kfile *f = file->private_data;

	swiw_stream_release_all(f);
	swiw_mr_release_all(f);
	swiw_queue_release_all(f);
	swiw_user_put(f->user);
	mutex_destroy(&f->lock);
	kfree(f);
	return 0;
}

static int swiw_version(void __user *arg)
{
	struct swiw_ioc_version v = {
		.abi_version = SWIW_ABI_VERSION,
		.flags = SWIW_VERSION_DATAPATH,
	};

	return copy_to_user(arg, &v, sizeof(v)) ? -EFAULT : 0;
}

static long swiw_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct swiw_kfile *f = file->private_data;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case SWIW_IOC_VERSION:
		return swiw_version(uarg);
	case SWIW_IOC_REG_MR:
		return swiw_mr_reg(f, uarg);
	case SWIW_IOC_DEREG_MR:
		return swiw_mr_dereg(f, uarg);
	case SWIW_IOC_QUEUE:
		return swiw_queue_alloc(f, uarg);
	case SWIW_IOC_ATTACH:
		return swiw_stream_attach(f, uarg);
	case SWIW_IOC_DOORBELL:
	case SWIW_IOC_DETACH:
		return swiw_stream_cmd(f, cmd, uarg);
	case SWIW_IOC_QUEUE_FREE:
		return swiw_queue_free(f, uarg);
	case SWIW_IOC_SET_ACCESS:
		return swiw_stream_set_access(f, uarg);
	default:
		return -ENOTTY;
	}
}

static int swiw_mmap(struct file *file, struct vm_area_struct *vma)
{
	return swiw_queue_mmap(file->private_data, vma);
}

/* Readable while a stream has an event the provider has not consumed. */
static __poll_t swiw_poll(struct file *file, poll_table *wait)
{
	struct swiw_kfile *f = file->private_data;

	poll_wait(file, &f->wq, wait);
	return swiw_stream_events_pending(f) ? EPOLLIN | EPOLLRDNORM : 0;
}

static const struct file_operations swiw_fops = {
	.owner = THIS_MODULE,
	.open = swiw_open,
	.release = swiw_release,
	.unlocked_ioctl = swiw_ioctl,
	/* Every argument struct has one layout on 32- and 64-bit ABIs. */
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = swiw_mmap,
	.poll = swiw_poll,
	.llseek = no_llseek,
};

static struct miscdevice swiw_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "swiw",
	.fops = &swiw_fops,
	/* Like /dev/infiniband/uverbs*: any user may register memory. */
	.mode = 0666,
};

/*
 * The wire core is compiled in for the data path; check now that its
 * portable CRC32c agrees with the kernel's crc32c() it will use, and
 * that framing arithmetic is sane, so a broken build never loads.
 */
static int swiw_wire_selftest(void)
{
	static const u8 check[] = "123456789";
	u32 fast, table;

	fast = swiw_crc32c_final(swiw_crc32c(SWIW_CRC32C_INIT, check, 9));
	table = swiw_crc32c_final(
		swiw_crc32c_table(SWIW_CRC32C_INIT, check, 9));
	if (fast != 0xe3069283 || table != fast) {
		pr_err("CRC32c self-test failed: crc32c %08x, wire core %08x\n",
		       fast, table);
		return -EINVAL;
	}
	/* 2 octets of length, 5 of ULPDU, 1 of pad, 4 of CRC; no markers. */
	if (swiw_mpa_fpdu_len(5, 0, false) != 12) {
		pr_err("MPA framing self-test failed\n");
		return -EINVAL;
	}
	return 0;
}

static int __init swiw_init(void)
{
	int ret;

	ret = swiw_wire_selftest();
	if (ret)
		return ret;
	/* Unbound: a Read Response that receive queued in softirq goes out
	 * on an idle CPU, not behind the program spinning on this one. */
	swiw_wq = alloc_workqueue("swiw", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!swiw_wq)
		return -ENOMEM;
	ret = misc_register(&swiw_misc);
	if (ret) {
		destroy_workqueue(swiw_wq);
		return ret;
	}
	pr_info("/dev/swiw ready, ABI %u with data path\n", SWIW_ABI_VERSION);
	return 0;
}

static void __exit swiw_exit(void)
{
	misc_deregister(&swiw_misc);
	destroy_workqueue(swiw_wq);
}

module_init(swiw_init);
module_exit(swiw_exit);

MODULE_DESCRIPTION("swiw software iWARP RNIC: kernel helper (/dev/swiw)");
MODULE_AUTHOR("swiw developers");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_VERSION(SWIW_KMOD_VERSION);
