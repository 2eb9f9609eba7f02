// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libswiw-rdmav34.so: the provider's registration with libibverbs, context
 * creation, and the table the preload library reaches it through.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <rdma/ib_user_ioctl_verbs.h>

#include "swiw.h"
#include "swiw_shim.h"

/* swiw devices are never enumerated by the kernel: refuse all of those. */
static bool swiw_match_device(struct verbs_sysfs_dev *sysfs_dev)
{
	(void)sysfs_dev;
	return false;
}

/*
 * Only the sentinel: libibverbs 44 walks a provider's table for every
 * kernel device it scans (a NULL one crashed swiw-run rping as soon as
 * siw0 existed), and an empty one matches nothing.
 */
static const struct verbs_match_ent swiw_match_table[] = { {} };

static struct verbs_device *swiw_alloc_device(struct verbs_sysfs_dev *sysfs)
{
	(void)sysfs;
	errno = ENODEV;
	return NULL;
}

static struct verbs_context *swiw_alloc_context(struct ibv_device *ibdev,
						int cmd_fd, void *private_data)
{
	const struct swiw_engine_choice *eng = swiw_engine_choice();
	struct swiw_context *ctx;
	int err;

	(void)private_data;
	if (eng->kind == SWIW_ENGINE_NONE) {
		errno = ENODEV; /* swiw_engine_choice said why */
		return NULL;
	}
	if (cmd_fd != -1) {
		/* Only the preload library opens swiw devices, with no fd. */
		close(cmd_fd);
		errno = EINVAL;
		return NULL;
	}
	ctx = _verbs_init_and_alloc_context(
		ibdev, cmd_fd, sizeof(*ctx),
		(struct verbs_context *)offsetof(struct swiw_context, ibv_ctx),
		RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;
	err = swiw_events_open(ctx);
	if (err) {
		verbs_uninit_context(&ctx->ibv_ctx);
		free(ctx);
		errno = err;
		return NULL;
	}
	ctx->ibv_ctx.context.num_comp_vectors = SWIW_NUM_COMP_VECTORS;
	verbs_set_ops(&ctx->ibv_ctx, &swiw_ctx_ops);
	swiw_dbg("%s: context opened, %s engine", ibdev->name,
		 swiw_engine_name(eng->kind));
	return &ctx->ibv_ctx;
}

const struct verbs_device_ops swiw_dev_ops = {
	.name = "swiw",
	.match_min_abi_version = 0,
	.match_max_abi_version = UINT32_MAX,
	.match_table = swiw_match_table,
	.match_device = swiw_match_device,
	.alloc_context = swiw_alloc_context,
	.alloc_device = swiw_alloc_device,
	.uninit_device = swiw_device_uninit,
};

/*
 * Registered with libibverbs as every provider is (what PROVIDER_DRIVER
 * does), so that libibverbs knows the driver; it never matches a kernel
 * device, and swiw devices reach applications through the preload library.
 */
static __attribute__((constructor)) void swiw_register(void)
{
	verbs_register_driver_34(&swiw_dev_ops);
}

static const struct swiw_shim_iface shim_iface = {
	.version = SWIW_SHIM_IFACE_VERSION,
	.size = sizeof(struct swiw_shim_iface),
	.dev_ops = &swiw_dev_ops,
	.get_devices = swiw_devices_get,
	.device_put = swiw_device_put,
	.get_device_guid = swiw_device_guid,
	.query_gid = swiw_query_gid,
	.query_gid_ex = swiw_query_gid_ex,
	.query_gid_table = swiw_query_gid_table,
	.query_gid_type = swiw_query_gid_type,
	.query_pkey = swiw_query_pkey,
	.create_comp_channel = swiw_create_comp_channel,
	.destroy_comp_channel = swiw_destroy_comp_channel,
	.cm_attach = swiw_cm_attach,
	.cm_parse_request = swiw_cm_parse_request,
	.cm_reject = swiw_cm_reject,
	.cm_disconnect = swiw_cm_disconnect,
	.cm_forget = swiw_cm_forget,
	.qp_lookup = swiw_conn_qp_lookup,
	.cm_mark_ctx = swiw_cm_mark_ctx,
	.cm_mark_qp = swiw_cm_mark_qp,
	.chan_wait = swiw_chan_wait,
};

const struct swiw_shim_iface *swiw_shim_iface(void);

__attribute__((visibility("default"))) const struct swiw_shim_iface *
swiw_shim_iface(void)
{
	return &shim_iface;
}
