// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Verbs entry points for device, port, PD, MR and CQ objects. They check
 * their arguments against swiw_limits.h and return positive errno values
 * (or NULL with errno set), as libibverbs documents.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swiw.h"
#include "swiw_access.h"

#ifndef SWIW_VERSION
#define SWIW_VERSION "0"
#endif

static atomic_uint next_pdn = 1;

static struct swiw_device *ctx_dev(struct ibv_context *ctx)
{
	return to_swiw_dev(ctx->device);
}

/*
 * A zeroed object of @size, counted in @cnt against @max (the device limit);
 * NULL with errno ENOMEM past the limit or out of memory. obj_free undoes.
 */
void *swiw_obj_alloc(atomic_uint *cnt, unsigned int max, size_t size)
{
	unsigned int v = atomic_load(cnt);
	void *obj;

	do {
		if (v >= max) {
			errno = ENOMEM;
			return NULL;
		}
	} while (!atomic_compare_exchange_weak(cnt, &v, v + 1));
	obj = calloc(1, size);
	if (!obj) {
		atomic_fetch_sub(cnt, 1);
		errno = ENOMEM;
	}
	return obj;
}

void swiw_obj_free(atomic_uint *cnt, void *obj)
{
	free(obj);
	atomic_fetch_sub(cnt, 1);
}

static int swiw_query_device_ex(struct ibv_context *ctx,
				const struct ibv_query_device_ex_input *input,
				struct ibv_device_attr_ex *out, size_t out_size)
{
	struct ibv_device_attr_ex a = {};
	struct ibv_device_attr *d = &a.orig_attr;

	if (input && input->comp_mask)
		return EINVAL;
	if (out_size < sizeof(*d))
		return EINVAL;

	/* Which engine runs the queues, where any user can see it. */
	snprintf(d->fw_ver, sizeof(d->fw_ver), "swiw %s %s", SWIW_VERSION,
		 swiw_engine_name(swiw_engine_choice()->kind));
	d->node_guid = ctx_dev(ctx)->node_guid;
	d->sys_image_guid = d->node_guid;
	d->max_mr_size = SWIW_MAX_MR_SIZE;
	d->page_size_cap = SWIW_PAGE_SIZE_CAP;
	d->vendor_id = SWIW_VENDOR_ID;
	d->vendor_part_id = SWIW_VENDOR_PART_ID;
	d->hw_ver = SWIW_HW_VER;
	d->max_qp = SWIW_MAX_QP;
	d->max_qp_wr = SWIW_MAX_QP_WR;
	d->device_cap_flags = SWIW_DEVICE_CAP_FLAGS;
	d->max_sge = SWIW_MAX_SGE;
	d->max_sge_rd = SWIW_MAX_SGE_RD;
	d->max_cq = SWIW_MAX_CQ;
	d->max_cqe = SWIW_MAX_CQE;
	d->max_mr = SWIW_MAX_MR;
	d->max_pd = SWIW_MAX_PD;
	d->max_qp_rd_atom = SWIW_MAX_IRD;
	d->max_res_rd_atom = SWIW_MAX_IRD * SWIW_MAX_QP;
	d->max_qp_init_rd_atom = SWIW_MAX_ORD;
	d->atomic_cap = SWIW_ATOMIC_CAP;
	d->max_srq = SWIW_MAX_SRQ;
	d->max_srq_wr = SWIW_MAX_SRQ_WR;
	d->max_srq_sge = SWIW_MAX_SRQ_SGE;
	d->max_pkeys = SWIW_MAX_PKEY;
	d->phys_port_cnt = 1;
	a.phys_port_cnt_ex = 1;

	memcpy(out, &a, out_size < sizeof(a) ? out_size : sizeof(a));
	return 0;
}

static enum ibv_mtu mtu_enum(unsigned int mtu)
{
	if (mtu >= 4096)
		return IBV_MTU_4096;
	if (mtu >= 2048)
		return IBV_MTU_2048;
	if (mtu >= 1024)
		return IBV_MTU_1024;
	if (mtu >= 512)
		return IBV_MTU_512;
	return IBV_MTU_256;
}

/* The narrowest IB width x speed pair that carries the link's rate. */
static void port_rate(unsigned int mbps, uint8_t *width, uint8_t *speed)
{
	static const struct {
		unsigned int mbps;
		uint8_t width, speed;
	} rates[] = {
		{ 2500, 1, 1 }, /* 1X SDR */
		{ 5000, 1, 2 }, /* 1X DDR */
		{ 10000, 1, 4 }, /* 1X QDR */
		{ 14000, 1, 16 }, /* 1X FDR */
		{ 25000, 1, 32 }, /* 1X EDR */
		{ 40000, 2, 4 }, /* 4X QDR */
		{ 50000, 1, 64 }, /* 1X HDR */
		{ 100000, 2, 32 }, /* 4X EDR */
		{ 200000, 2, 64 }, /* 4X HDR */
		{ ~0u, 2, 128 }, /* 4X NDR */
	};
	size_t i = 0;

	/* Unknown (lo, dummy): reported as the slowest rate, as Linux does. */
	while (mbps && mbps > rates[i].mbps)
		i++;
	*width = rates[i].width;
	*speed = rates[i].speed;
}

static int swiw_query_port(struct ibv_context *ctx, uint8_t port,
			   struct ibv_port_attr *attr)
{
	struct swiw_netif nif;
	bool present, active;

	if (port != SWIW_PORT)
		return EINVAL;
	present = !swiw_netif_get(ctx_dev(ctx)->ifindex, &nif);
	active = present && swiw_netif_port_active(&nif);

	memset(attr, 0, sizeof(*attr));
	attr->state = active ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	attr->max_mtu = IBV_MTU_4096;
	attr->active_mtu = mtu_enum(present ? nif.mtu : 0);
	attr->gid_tbl_len = SWIW_MAX_GID;
	attr->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_DEVICE_MGMT_SUP;
	attr->max_msg_sz = SWIW_MAX_MSG_SIZE;
	attr->pkey_tbl_len = SWIW_MAX_PKEY;
	attr->max_vl_num = 1;
	port_rate(present ? nif.speed_mbps : 0, &attr->active_width,
		  &attr->active_speed);
	/* IB PortPhysicalState: 5 LinkUp, 2 Polling (no carrier), 3 Disabled */
	attr->phys_state = active ? 5 : present && (nif.flags & IFF_UP) ? 2 : 3;
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

/* Reads the live GID table of @ctx's interface; 0 entries if it is gone. */
static int ctx_gids(struct ibv_context *ctx, uint32_t port,
		    struct swiw_netif *nif)
{
	if (port != SWIW_PORT)
		return EINVAL;
	if (swiw_netif_get(ctx_dev(ctx)->ifindex, nif))
		nif->ngid = 0;
	return 0;
}

int swiw_query_gid(struct ibv_context *ctx, uint8_t port, int index,
		   union ibv_gid *gid)
{
	struct swiw_netif nif;

	if (index < 0 || index >= SWIW_MAX_GID || ctx_gids(ctx, port, &nif)) {
		errno = EINVAL;
		return -1;
	}
	if ((unsigned int)index < nif.ngid)
		*gid = nif.gid[index];
	else
		memset(gid, 0, sizeof(*gid));
	return 0;
}

static void fill_gid_entry(struct ibv_gid_entry *e,
			   const struct swiw_netif *nif, uint32_t index)
{
	memset(e, 0, sizeof(*e));
	e->gid = nif->gid[index];
	e->gid_index = index;
	e->port_num = SWIW_PORT;
	e->gid_type = IBV_GID_TYPE_IB; /* iWARP GIDs carry no RoCE type */
	e->ndev_ifindex = nif->ifindex;
}

int swiw_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
		      struct ibv_gid_entry *entry, uint32_t flags,
		      size_t entry_size)
{
	struct swiw_netif nif;

	if (flags || entry_size < sizeof(*entry) || index >= SWIW_MAX_GID ||
	    ctx_gids(ctx, port, &nif))
		return EINVAL;
	if (index >= nif.ngid)
		return ENODATA;
	fill_gid_entry(entry, &nif, index);
	return 0;
}

ssize_t swiw_query_gid_table(struct ibv_context *ctx,
			     struct ibv_gid_entry *entries, size_t max_entries,
			     uint32_t flags, size_t entry_size)
{
	struct swiw_netif nif;
	uint32_t i;

	if (flags || entry_size < sizeof(*entries) ||
	    ctx_gids(ctx, SWIW_PORT, &nif))
		return -EINVAL;
	if (nif.ngid > max_entries)
		return -EINVAL;
	for (i = 0; i < nif.ngid; i++)
		fill_gid_entry((void *)((char *)entries + i * entry_size), &nif,
			       i);
	return nif.ngid;
}

int swiw_query_gid_type(struct ibv_context *ctx, uint8_t port,
			unsigned int index, int *type)
{
	struct swiw_netif nif;

	if (index >= SWIW_MAX_GID || ctx_gids(ctx, port, &nif)) {
		errno = EINVAL;
		return -1;
	}
	*type = 0; /* the "IB/RoCE v1" sysfs type: iWARP has no other */
	return 0;
}

int swiw_query_pkey(struct ibv_context *ctx, uint8_t port, int index,
		    __be16 *pkey)
{
	(void)ctx;
	if (port != SWIW_PORT || index < 0 || index >= SWIW_MAX_PKEY) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(0xffff); /* the default, full-member P_Key */
	return 0;
}

static struct ibv_pd *swiw_alloc_pd(struct ibv_context *ctx)
{
	struct swiw_pd *pd;

	pd = swiw_obj_alloc(&to_swiw_ctx(ctx)->npd, SWIW_MAX_PD, sizeof(*pd));
	if (!pd)
		return NULL;
	pd->ibv_pd.context = ctx;
	pd->pdn = atomic_fetch_add(&next_pdn, 1);
	pd->ibv_pd.handle = pd->pdn;
	return &pd->ibv_pd;
}

static int swiw_dealloc_pd(struct ibv_pd *ibpd)
{
	struct swiw_pd *pd = to_swiw_pd(ibpd);

	if (atomic_load(&pd->usecnt))
		return EBUSY;
	swiw_obj_free(&to_swiw_ctx(ibpd->context)->npd, pd);
	return 0;
}

_Static_assert((int)IBV_ACCESS_LOCAL_WRITE ==
			       (int)IB_UVERBS_ACCESS_LOCAL_WRITE &&
		       (int)IBV_ACCESS_REMOTE_ATOMIC ==
			       (int)IB_UVERBS_ACCESS_REMOTE_ATOMIC &&
		       (int)IBV_ACCESS_ON_DEMAND ==
			       (int)IB_UVERBS_ACCESS_ON_DEMAND &&
		       (int)IBV_ACCESS_OPTIONAL_RANGE ==
			       (int)IB_UVERBS_ACCESS_OPTIONAL_RANGE,
	       "libibverbs' access flags are the uverbs ABI's");

/*
 * The STag: the backend's when it registers memory itself (the helper
 * pins the region and names it; our table keeps it for the local checks),
 * else our own table's.
 */
int swiw_mr_stag_get(struct swiw_mr *mr, struct ibv_pd *pd, void *addr,
		     size_t length, uint64_t iova, int access)
{
	const struct swiw_backend *be = swiw_backend();
	uint32_t stag;
	int err;

	if (!be || !be->reg_mr)
		return swiw_stag_alloc(mr);
	err = be->reg_mr(addr, length, iova, access, to_swiw_pd(pd)->pdn,
			 &stag);
	if (err)
		return err;
	err = swiw_stag_insert(mr, stag);
	if (err) {
		swiw_err("STag 0x%x of the %s is taken in the provider's table",
			 stag, be->name);
		be->dereg_mr(stag);
		return err;
	}
	mr->backend = true;
	return 0;
}

void swiw_mr_stag_put(struct swiw_mr *mr)
{
	swiw_stag_free(mr);
	if (!mr->backend)
		swiw_engine_mr_gone();
	if (mr->backend) {
		int err = swiw_backend()->dereg_mr(mr->stag);

		if (err)
			swiw_warn("STag 0x%x: deregistration failed: %s",
				  mr->stag, strerror(err));
	}
}

/* A region of the provider's own (a helper stream's bounce area). */
struct swiw_mr *swiw_mr_internal(struct ibv_pd *pd, void *addr, size_t len,
				 int *err)
{
	struct swiw_mr *mr = calloc(1, sizeof(*mr));

	*err = ENOMEM;
	if (!mr)
		return NULL;
	*err = swiw_mr_stag_get(mr, pd, addr, len, (uintptr_t)addr,
				IBV_ACCESS_LOCAL_WRITE);
	if (*err) {
		free(mr);
		return NULL;
	}
	mr->access = IBV_ACCESS_LOCAL_WRITE;
	mr->iova = (uintptr_t)addr;
	mr->vmr.ibv_mr.pd = pd;
	mr->vmr.ibv_mr.addr = addr;
	mr->vmr.ibv_mr.length = len;
	return mr;
}

void swiw_mr_internal_free(struct swiw_mr *mr)
{
	swiw_mr_stag_put(mr);
	free(mr);
}

static struct ibv_mr *swiw_reg_mr(struct ibv_pd *ibpd, void *addr,
				  size_t length, uint64_t iova, int access)
{
	struct swiw_context *sctx = to_swiw_ctx(ibpd->context);
	struct swiw_mr *mr;
	int err;

	err = -swiw_access_check((unsigned int)access);
	if (!err && (!length || length > SWIW_MAX_MR_SIZE))
		err = EINVAL;
	if (!err)
		err = swiw_mem_check_range(addr, length,
					   access & SWIW_ACCESS_NEEDS_WRITE);
	if (err) {
		errno = err;
		return NULL;
	}
	mr = swiw_obj_alloc(&sctx->nmr, SWIW_MAX_MR, sizeof(*mr));
	if (!mr)
		return NULL;
	err = swiw_mr_stag_get(mr, ibpd, addr, length, iova, access);
	if (err) {
		swiw_obj_free(&sctx->nmr, mr);
		errno = err;
		return NULL;
	}
	mr->access = access;
	mr->iova = iova;
	mr->vmr.mr_type = VERBS_MR_TYPE_MR;
	mr->vmr.access = access;
	mr->vmr.ibv_mr.context = ibpd->context;
	mr->vmr.ibv_mr.pd = ibpd;
	mr->vmr.ibv_mr.addr = addr;
	mr->vmr.ibv_mr.length = length;
	mr->vmr.ibv_mr.handle = mr->stag;
	mr->vmr.ibv_mr.lkey = mr->stag;
	mr->vmr.ibv_mr.rkey = mr->stag;
	atomic_fetch_add(&to_swiw_pd(ibpd)->usecnt, 1);
	return &mr->vmr.ibv_mr;
}

static int swiw_dereg_mr(struct verbs_mr *vmr)
{
	struct swiw_mr *mr = swiw_container_of(vmr, struct swiw_mr, vmr);
	struct ibv_mr *ibmr = &vmr->ibv_mr;

	swiw_mr_stag_put(mr);
	atomic_fetch_sub(&to_swiw_pd(ibmr->pd)->usecnt, 1);
	swiw_obj_free(&to_swiw_ctx(ibmr->context)->nmr, mr);
	return 0;
}

static void swiw_free_context(struct ibv_context *ibctx)
{
	struct swiw_context *ctx = to_swiw_ctx(ibctx);

	swiw_events_close(ctx);
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

const struct verbs_context_ops swiw_ctx_ops = {
	.alloc_pd = swiw_alloc_pd,
	.create_cq = swiw_create_cq,
	.create_cq_ex = swiw_create_cq_ex,
	.create_qp = swiw_create_qp,
	.create_qp_ex = swiw_create_qp_ex,
	.create_srq = swiw_create_srq,
	.dealloc_pd = swiw_dealloc_pd,
	.dereg_mr = swiw_dereg_mr,
	.destroy_cq = swiw_destroy_cq,
	.destroy_qp = swiw_destroy_qp,
	.destroy_srq = swiw_destroy_srq,
	.free_context = swiw_free_context,
	.modify_qp = swiw_modify_qp,
	.modify_srq = swiw_modify_srq,
	.poll_cq = swiw_poll_cq,
	.post_recv = swiw_post_recv,
	.post_send = swiw_post_send,
	.post_srq_recv = swiw_post_srq_recv,
	.query_device_ex = swiw_query_device_ex,
	.query_port = swiw_query_port,
	.query_qp = swiw_query_qp,
	.query_srq = swiw_query_srq,
	.reg_mr = swiw_reg_mr,
	.req_notify_cq = swiw_req_notify_cq,
	.resize_cq = swiw_resize_cq,
};
