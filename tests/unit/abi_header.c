// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * swiw-abi.h stands alone and keeps its layout: compiled by itself with
 * -Wpadded -Werror (no implicit padding anywhere), its sizes and the
 * offsets both sides rely on pinned here.
 */
#include <stddef.h>

#include <rdma/swiw-abi.h>

#define SIZE(t, n) _Static_assert(sizeof(t) == (n), "sizeof " #t)
#define OFF(t, m, n) _Static_assert(offsetof(t, m) == (n), #t "." #m)

SIZE(struct swiw_sge, 16);
SIZE(struct swiw_sqe, SWIW_SQE_HDR_SIZE);
OFF(struct swiw_sqe, flags, 8);
OFF(struct swiw_sqe, rkey, 12);
OFF(struct swiw_sqe, raddr, 16);
OFF(struct swiw_sqe, compare_add, 32);
SIZE(struct swiw_rqe, SWIW_RQE_HDR_SIZE);
OFF(struct swiw_rqe, flags, 8);
SIZE(struct swiw_cqe, 32);
OFF(struct swiw_cqe, flags, 8);
OFF(struct swiw_cqe, status, 10);
SIZE(struct swiw_cq_ctrl, 8);
SIZE(struct swiw_txd, 152);
OFF(struct swiw_txd, sge, 88);
SIZE(struct swiw_rxev, 96);
SIZE(struct swiw_ioc_version, 8);
SIZE(struct swiw_ioc_reg_mr, 40);
OFF(struct swiw_ioc_reg_mr, pd, 24);
OFF(struct swiw_ioc_reg_mr, iova, 32);
SIZE(struct swiw_ioc_queue, 32);
SIZE(struct swiw_ioc_attach, 48);
OFF(struct swiw_ioc_attach, pd, 40);
OFF(struct swiw_ioc_attach, access, 44);
SIZE(struct swiw_ioc_stream, 8);
SIZE(struct swiw_ioc_access, 8);
/* ABI 2 added the PD: the grown struct gives REG_MR a new number, so a
 * provider and a module of different ABIs never mistake each other's.
 * ABI 3 gave ATTACH the QP's remote rights (its reserved word, which a
 * version 2 helper required to be 0) and added SET_ACCESS. ABI 4 gave
 * REG_MR the region's iova, and so a new number again. */
_Static_assert(SWIW_ABI_VERSION == 4, "ABI version");
_Static_assert(_IOC_SIZE(SWIW_IOC_REG_MR) == 40, "REG_MR carries the iova");
_Static_assert(SWIW_OP_MAX <= 256, "opcode fits a __u8");

int main(void)
{
	return 0;
}
