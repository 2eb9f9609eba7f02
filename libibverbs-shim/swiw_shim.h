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

/* 2: the connection manager hooks (swiw_cm_*) were added at the end. */
#define SWIW_SHIM_IFACE_VERSION 4
#define SWIW_SHIM_IFACE_SYMBOL "swiw_shim_iface"

/*
 * What the engine reports about a QP that the CM connects. Callbacks run in
 * the engine under its lock: the receiver only queues the event.
 */
enum swiw_cm_ev {
	SWIW_CM_ESTABLISHED = 1, /* ird/ord agreed; initiator: Reply's pd */
	SWIW_CM_REJECTED, /* a reject Reply (pd) or a reset: status */
	SWIW_CM_UNREACHABLE, /* the MPA peer did not answer in time */
	SWIW_CM_CONNECT_ERROR, /* MPA failed: status */
	SWIW_CM_DISCONNECTED, /* the stream ended after establishment */
};

#define SWIW_CM_PD_MAX 256

struct swiw_cm_event {
	int type; /* enum swiw_cm_ev */
	int status; /* 0 or a negative errno, as the kernel's iw_cm */
	uint16_t ird, ord;
	uint16_t pd_len;
	uint8_t pd[SWIW_CM_PD_MAX];
};

typedef void (*swiw_cm_cb)(void *arg, const struct swiw_cm_event *ev);

/* A TCP connection handed to a QP for MPA (swiw_setup_cm.c). */
struct swiw_cm_params {
	int responder; /* 0: send the Request; 1: answer @req */
	const void *pd; /* ours: Request or Reply private data */
	uint16_t pd_len;
	uint16_t ird, ord; /* responder_resources, initiator_depth */
	const void *req; /* responder: the whole Request frame read */
	uint16_t req_len;
	swiw_cm_cb cb;
	void *arg; /* also the key of cm_forget/cm_disconnect */
};

/* A Request parsed by cm_parse_request. */
struct swiw_cm_req {
	uint16_t frame_len; /* octets of the buffer that are the Request */
	uint16_t pd_len; /* private data, without the RFC 6581 word */
	uint16_t peer_ird, peer_ord; /* 0x3FFF: not negotiated */
	uint8_t pd[SWIW_CM_PD_MAX];
};

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

	/* Version 2: connection management (swiw_setup_cm.c). */
	/* Positive errno; on success the engine owns @fd. */
	int (*cm_attach)(struct ibv_qp *qp, int fd,
			 const struct swiw_cm_params *p);
	/* 0: @out holds a whole Request; EAGAIN: more bytes, frame_len
	 * octets in all so far as the header tells (read no more); EPROTO. */
	int (*cm_parse_request)(const void *buf, size_t len,
				struct swiw_cm_req *out);
	/* A reject Reply with @pd for the Request @req, sent on @fd. */
	int (*cm_reject)(int fd, const void *req, size_t req_len,
			 const void *pd, uint16_t pd_len);
	/* The stream of @arg ends (DISCONNECTED follows); ENOTCONN if none. */
	int (*cm_disconnect)(void *arg);
	/* No callback for @arg from now on. */
	void (*cm_forget)(void *arg);
	struct ibv_qp *(*qp_lookup)(struct ibv_context *ctx, uint32_t qpn);
	/* QPs of @ctx, or @qp, are connected by the CM: modify_qp to RTR
	 * without AV and DEST_QPN is a plain state change. */
	void (*cm_mark_ctx)(struct ibv_context *ctx);
	void (*cm_mark_qp)(struct ibv_qp *qp);

	/* Version 4: ibv_get_cq_event is about to read @ch, a channel of
	 * create_comp_channel's; returns once the read will not block (or
	 * the wait cannot be done there), having moved the engine from the
	 * caller's thread meanwhile. Non-NULL: the CQ of the record it was
	 * handed in memory, which the read must not wait for. */
	struct ibv_cq *(*chan_wait)(struct ibv_comp_channel *ch);
};

typedef const struct swiw_shim_iface *(*swiw_shim_iface_fn)(void);

#endif /* SWIW_SHIM_H */
