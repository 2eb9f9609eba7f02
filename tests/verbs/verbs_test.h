/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the verbs tests share: opening swiw_lo through the stock libibverbs. */
#ifndef SWIW_VERBS_TEST_H
#define SWIW_VERBS_TEST_H

#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>

/* Opens swiw_lo from a fresh device list kept in *list; NULL if absent. */
static inline struct ibv_context *open_swiw_lo(struct ibv_device ***list)
{
	struct ibv_context *ctx = NULL;
	int i;

	*list = ibv_get_device_list(NULL);
	for (i = 0; *list && (*list)[i]; i++)
		if (!strcmp(ibv_get_device_name((*list)[i]), "swiw_lo"))
			ctx = ibv_open_device((*list)[i]);
	if (!ctx)
		fprintf(stderr, "no swiw_lo: run this test through swiw-run\n");
	return ctx;
}

/*
 * RESET to RTS against QP @peer at @gid, as any verbs program connects:
 * 0 or modify_qp's error.
 */
static inline int verbs_to_rts_gid(struct ibv_qp *qp, const union ibv_gid *gid,
				   uint32_t peer)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
				 .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ |
						    IBV_ACCESS_REMOTE_ATOMIC };

	int err = ibv_modify_qp(qp, &a,
				IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					IBV_QP_ACCESS_FLAGS);

	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.dest_qp_num = peer;
	a.max_dest_rd_atomic = 16;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = *gid;
	err = ibv_modify_qp(qp, &a,
			    IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN |
				    IBV_QP_MAX_DEST_RD_ATOMIC);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.max_rd_atomic = 16;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* The same against QP @peer of this host (::ffff:127.0.0.1, swiw_lo). */
static inline int verbs_to_rts(struct ibv_qp *qp, uint32_t peer)
{
	union ibv_gid lo = {
		.raw = { [10] = 0xff, [11] = 0xff, [12] = 127, [15] = 1 }
	};

	return verbs_to_rts_gid(qp, &lo, peer);
}

#endif /* SWIW_VERBS_TEST_H */
