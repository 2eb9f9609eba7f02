/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * swiw provider: objects and the functions the provider's files share.
 */
#ifndef SWIW_H
#define SWIW_H

#include <net/if.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "verbs_abi.h"
#include "swiw_limits.h"
#include "swiw_log.h"

#define SWIW_NAME_PREFIX "swiw_"

#define swiw_container_of(ptr, type, member) \
	((type *)((char *)(ptr)-offsetof(type, member)))

/*
 * One swiw device per network interface. Devices are singletons per
 * (ifindex, name) so that every device list of a process hands out the same
 * pointers (librdmacm compares them). The registry holds one reference;
 * each device list entry and each open context holds another.
 */
struct swiw_device {
	struct verbs_device vdev; /* first: libibverbs casts to it */
	int ifindex;
	char ifname[IF_NAMESIZE];
	__be64 node_guid;
	struct swiw_device *next; /* registry, under the registry lock */
};

/* A live view of one interface, read from rtnetlink when asked. */
struct swiw_netif {
	int ifindex;
	char name[IF_NAMESIZE];
	unsigned int flags; /* IFF_* */
	unsigned int mtu;
	unsigned int speed_mbps; /* 0: unknown */
	uint8_t mac[6];
	bool has_mac;
	unsigned int ngid;
	union ibv_gid gid[SWIW_MAX_GID];
};

struct swiw_context {
	struct verbs_context ibv_ctx;
	int async_wfd; /* write end of ibv_ctx.context.async_fd */
	bool port_active; /* last state reported, under the event lock */
	atomic_uint npd, nmr, ncq; /* objects held, against the limits */
	struct swiw_context *next_open; /* event monitor list */
};

struct swiw_pd {
	struct ibv_pd ibv_pd;
	uint32_t pdn;
	atomic_uint usecnt; /* MRs (later QPs, SRQs) that name this PD */
};

struct swiw_mr {
	struct verbs_mr vmr;
	uint32_t stag; /* lkey == rkey: iWARP has one STag */
	int access;
	uint64_t iova;
};

struct swiw_cq {
	struct verbs_cq vcq;
	atomic_uint armed; /* 0, or IBV_WC_... notify request, one-shot */
};

struct swiw_comp_channel {
	struct ibv_comp_channel ibv_ch;
	int wfd; /* write end of ibv_ch.fd: 8-byte CQ pointers */
};

static inline struct swiw_device *to_swiw_dev(struct ibv_device *d)
{
	return swiw_container_of(d, struct swiw_device, vdev.device);
}

static inline struct swiw_context *to_swiw_ctx(struct ibv_context *c)
{
	return swiw_container_of(c, struct swiw_context, ibv_ctx.context);
}

static inline struct swiw_pd *to_swiw_pd(struct ibv_pd *pd)
{
	return swiw_container_of(pd, struct swiw_pd, ibv_pd);
}

static inline struct swiw_cq *to_swiw_cq(struct ibv_cq *cq)
{
	return swiw_container_of(cq, struct swiw_cq, vcq.cq);
}

extern const struct verbs_device_ops swiw_dev_ops;

/* swiw_dev.c: discovery and the device registry */
int swiw_netif_list(struct swiw_netif **ifs);
int swiw_netif_get(int ifindex, struct swiw_netif *nif);
bool swiw_netif_wanted(const struct swiw_netif *nif);
bool swiw_netif_port_active(const struct swiw_netif *nif);
int swiw_devices_get(struct ibv_device ***devs);
void swiw_device_put(struct ibv_device *ibdev);
__be64 swiw_device_guid(struct ibv_device *ibdev);
void swiw_device_uninit(struct verbs_device *vdev);

/* swiw_verbs.c: object verbs */
extern const struct verbs_context_ops swiw_ctx_ops;
int swiw_query_gid(struct ibv_context *ctx, uint8_t port, int index,
		   union ibv_gid *gid);
int swiw_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
		      struct ibv_gid_entry *entry, uint32_t flags,
		      size_t entry_size);
ssize_t swiw_query_gid_table(struct ibv_context *ctx,
			     struct ibv_gid_entry *entries, size_t max_entries,
			     uint32_t flags, size_t entry_size);
int swiw_query_gid_type(struct ibv_context *ctx, uint8_t port,
			unsigned int index, int *type);
int swiw_query_pkey(struct ibv_context *ctx, uint8_t port, int index,
		    __be16 *pkey);

/* swiw_mem.c: STags and memory checks */
int swiw_stag_alloc(struct swiw_mr *mr);
void swiw_stag_free(struct swiw_mr *mr);
int swiw_mem_check_range(const void *addr, size_t len, bool need_write);

/* swiw_event.c: async events and completion channels */
int swiw_events_open(struct swiw_context *ctx);
void swiw_events_close(struct swiw_context *ctx);
void swiw_post_async(struct swiw_context *ctx, enum ibv_event_type type,
		     uint64_t element);
struct ibv_comp_channel *swiw_create_comp_channel(struct ibv_context *ctx);
int swiw_destroy_comp_channel(struct ibv_comp_channel *ch);

#endif /* SWIW_H */
