/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The memory registration access rules, once for both engines: the
 * provider (ibv_reg_mr) and the kernel helper (SWIW_IOC_REG_MR) answer a
 * set of IB_UVERBS_ACCESS_* flags alike, and as the kernel's own MR
 * checks would. The flags are the uverbs ABI's, which libibverbs'
 * IBV_ACCESS_* equal.
 */
#ifndef SWIW_ACCESS_H
#define SWIW_ACCESS_H

#include <rdma/ib_user_ioctl_verbs.h>

#define SWIW_ACCESS_KNOWN                                                \
	(IB_UVERBS_ACCESS_LOCAL_WRITE | IB_UVERBS_ACCESS_REMOTE_WRITE |  \
	 IB_UVERBS_ACCESS_REMOTE_READ | IB_UVERBS_ACCESS_REMOTE_ATOMIC | \
	 IB_UVERBS_ACCESS_MW_BIND | IB_UVERBS_ACCESS_ZERO_BASED |        \
	 IB_UVERBS_ACCESS_ON_DEMAND | IB_UVERBS_ACCESS_HUGETLB)

/* Rights that let someone write the pages: they are pinned writable. */
#define SWIW_ACCESS_NEEDS_WRITE                                         \
	(IB_UVERBS_ACCESS_LOCAL_WRITE | IB_UVERBS_ACCESS_REMOTE_WRITE | \
	 IB_UVERBS_ACCESS_REMOTE_ATOMIC)

/* 0, or the negative errno the kernel's MR checks give for @access. */
static inline int swiw_access_check(unsigned int access)
{
	unsigned int a = access &
			 ~(unsigned int)IB_UVERBS_ACCESS_OPTIONAL_RANGE;

	if (a & ~(unsigned int)SWIW_ACCESS_KNOWN)
		return -EINVAL;
	/* Remote writers need the local write right as well (IB spec). */
	if ((a & (IB_UVERBS_ACCESS_REMOTE_WRITE |
		  IB_UVERBS_ACCESS_REMOTE_ATOMIC)) &&
	    !(a & IB_UVERBS_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (a & (IB_UVERBS_ACCESS_ON_DEMAND | IB_UVERBS_ACCESS_ZERO_BASED))
		return -EOPNOTSUPP; /* not advertised */
	return 0;
}

#endif /* SWIW_ACCESS_H */
