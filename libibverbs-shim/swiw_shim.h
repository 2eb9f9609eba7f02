/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What libswiw-preload.so needs from the provider, and all the provider
 * exports (symbol version SWIW_PROVIDER_1). The preload library answers for
 * swiw devices the libibverbs calls that would otherwise read sysfs or a
 * uverbs file, and forwards every other device to libibverbs.
 */
#ifndef SWIW_SHIM_H
#define SWIW_SHIM_H

#include <stdint.h>
#include <sys/types.h>

#include <infiniband/verbs.h>

#include "verbs_abi.h"

#define SWIW_SHIM_IFACE_VERSION 1
#define SWIW_SHIM_IFACE_SYMBOL "swiw_shim_iface"

struct swiw_shim_iface {
	uint32_t version;
	uint32_t size;
	/* A device is swiw's iff its verbs_device ops are this table. */
	const struct verbs_device_ops *dev_ops;

	/* The current devices, each referenced; malloc'd array. */
	int (*get_devices)(struct ibv_device ***devs);
	void (*device_put)(struct ibv_device *dev);
	__be64 (*get_device_guid)(struct ibv_device *dev);

	int (*query_gid)(struct ibv_context *ctx, uint8_t port, int index,
			 union ibv_gid *gid);
	int (*query_gid_ex)(struct ibv_context *ctx, uint32_t port,
			    uint32_t index, struct ibv_gid_entry *entry,
			    uint32_t flags, size_t entry_size);
	ssize_t (*query_gid_table)(struct ibv_context *ctx,
				   struct ibv_gid_entry *entries,
				   size_t max_entries, uint32_t flags,
				   size_t entry_size);
	int (*query_gid_type)(struct ibv_context *ctx, uint8_t port,
			      unsigned int index, int *type);
	int (*query_pkey)(struct ibv_context *ctx, uint8_t port, int index,
			  __be16 *pkey);

	struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *ctx);
	int (*destroy_comp_channel)(struct ibv_comp_channel *ch);
};

typedef const struct swiw_shim_iface *(*swiw_shim_iface_fn)(void);

#endif /* SWIW_SHIM_H */
