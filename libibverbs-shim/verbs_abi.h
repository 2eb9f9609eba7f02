/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * swiw's own declarations of libibverbs' private provider ABI
 * (IBVERBS_PRIVATE_34), as rdma-core v38..v56 lays it out on LP64.
 *
 * libibverbs does not install driver.h, so every provider built outside
 * rdma-core has to state this ABI itself. These declarations were written
 * from the documented layout (../shared/LIBIBVERBS.md §2) and every size and
 * offset that libibverbs reads at run time is pinned by a _Static_assert
 * below: a compiler or header change that moved one fails the build instead
 * of corrupting memory. At run time swiw_verbs_abi_check() additionally
 * refuses a libibverbs outside the verified release range.
 */
#ifndef SWIW_VERBS_ABI_H
#define SWIW_VERBS_ABI_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <infiniband/verbs.h>

/* rdma-core releases whose private ABI matches these declarations. */
#define SWIW_VERBS_MIN_RELEASE 38
#define SWIW_VERBS_MAX_RELEASE 56
#define SWIW_VERBS_PABI "IBVERBS_PRIVATE_34"

enum {
	SWIW_VERBS_LOG_NONE,
	SWIW_VERBS_LOG_ERR,
	SWIW_VERBS_LOG_WARN,
	SWIW_VERBS_LOG_INFO,
	SWIW_VERBS_LOG_DEBUG,
};

struct verbs_list_node {
	struct verbs_list_node *next, *prev;
};

struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

/* A kernel-enumerated device; swiw never has one, it only sees them. */
struct verbs_sysfs_dev {
	struct verbs_list_node entry;
	void *provider_data;
	const struct verbs_match_ent *match;
	unsigned int flags;
	char sysfs_name[IBV_SYSFS_NAME_MAX];
	dev_t sysfs_cdev;
	char ibdev_name[IBV_SYSFS_NAME_MAX];
	char ibdev_path[IBV_SYSFS_PATH_MAX];
	char modalias[512];
	uint64_t node_guid;
	uint32_t driver_id;
	enum ibv_node_type node_type;
	int ibdev_idx;
	uint32_t num_ports;
	uint32_t abi_ver;
	struct timespec time_created;
};

struct verbs_device;

struct verbs_device_ops {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;
	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);
	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);
	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

struct verbs_device {
	struct ibv_device device; /* first: libibverbs casts between them */
	const struct verbs_device_ops *ops;
	atomic_int refcount;
	struct verbs_list_node entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};

enum verbs_mr_type {
	VERBS_MR_TYPE_MR,
	VERBS_MR_TYPE_NULL_MR,
	VERBS_MR_TYPE_IMPORTED_MR,
	VERBS_MR_TYPE_DMABUF_MR,
};

struct verbs_mr {
	struct ibv_mr ibv_mr;
	enum verbs_mr_type mr_type;
	int access;
};

struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};

struct verbs_xrcd;

/* verbs_qp.comp_mask: ibv_qp_to_qp_ex() hands out qp_ex only with QP_EX. */
enum swiw_verbs_qp_mask {
	SWIW_VERBS_QP_XRCD = 1 << 0,
	SWIW_VERBS_QP_EX = 1 << 1,
};

struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	struct verbs_xrcd *xrcd;
};

struct verbs_srq {
	struct ibv_srq srq;
	enum ibv_srq_type srq_type;
	struct verbs_xrcd *xrcd;
	struct ibv_cq *cq;
	uint32_t srq_num;
};

/*
 * Every op a provider may supply. libibverbs reads this table by offset, so
 * the order (alphabetical, as libibverbs keeps it) is ABI. A NULL entry
 * keeps libibverbs' own stub, which fails with EOPNOTSUPP.
 */
struct verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *, enum ibv_advise_mr_advice, uint32_t,
			 struct ibv_sge *, uint32_t);
	struct ibv_dm *(*alloc_dm)(struct ibv_context *,
				   struct ibv_alloc_dm_attr *);
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *, enum ibv_mw_type);
	struct ibv_mr *(*alloc_null_mr)(struct ibv_pd *);
	struct ibv_pd *(*alloc_parent_domain)(
		struct ibv_context *, struct ibv_parent_domain_init_attr *);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *);
	struct ibv_td *(*alloc_td)(struct ibv_context *,
				   struct ibv_td_init_attr *);
	void (*async_event)(struct ibv_context *, struct ibv_async_event *);
	int (*attach_counters_point_flow)(struct ibv_counters *,
					  struct ibv_counter_attach_attr *,
					  struct ibv_flow *);
	int (*attach_mcast)(struct ibv_qp *, const union ibv_gid *, uint16_t);
	int (*bind_mw)(struct ibv_qp *, struct ibv_mw *, struct ibv_mw_bind *);
	int (*close_xrcd)(struct ibv_xrcd *);
	void (*cq_event)(struct ibv_cq *);
	struct ibv_ah *(*create_ah)(struct ibv_pd *, struct ibv_ah_attr *);
	struct ibv_counters *(*create_counters)(
		struct ibv_context *, struct ibv_counters_init_attr *);
	struct ibv_cq *(*create_cq)(struct ibv_context *, int,
				    struct ibv_comp_channel *, int);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *,
					  struct ibv_cq_init_attr_ex *);
	struct ibv_flow *(*create_flow)(struct ibv_qp *,
					struct ibv_flow_attr *);
	struct ibv_flow_action *(*create_flow_action_esp)(
		struct ibv_context *, struct ibv_flow_action_esp_attr *);
	struct ibv_qp *(*create_qp)(struct ibv_pd *, struct ibv_qp_init_attr *);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *,
				       struct ibv_qp_init_attr_ex *);
	struct ibv_rwq_ind_table *(*create_rwq_ind_table)(
		struct ibv_context *, struct ibv_rwq_ind_table_init_attr *);
	struct ibv_srq *(*create_srq)(struct ibv_pd *,
				      struct ibv_srq_init_attr *);
	struct ibv_srq *(*create_srq_ex)(struct ibv_context *,
					 struct ibv_srq_init_attr_ex *);
	struct ibv_wq *(*create_wq)(struct ibv_context *,
				    struct ibv_wq_init_attr *);
	int (*dealloc_mw)(struct ibv_mw *);
	int (*dealloc_pd)(struct ibv_pd *);
	int (*dealloc_td)(struct ibv_td *);
	int (*dereg_mr)(struct verbs_mr *);
	int (*destroy_ah)(struct ibv_ah *);
	int (*destroy_counters)(struct ibv_counters *);
	int (*destroy_cq)(struct ibv_cq *);
	int (*destroy_flow)(struct ibv_flow *);
	int (*destroy_flow_action)(struct ibv_flow_action *);
	int (*destroy_qp)(struct ibv_qp *);
	int (*destroy_rwq_ind_table)(struct ibv_rwq_ind_table *);
	int (*destroy_srq)(struct ibv_srq *);
	int (*destroy_wq)(struct ibv_wq *);
	int (*detach_mcast)(struct ibv_qp *, const union ibv_gid *, uint16_t);
	void (*free_context)(struct ibv_context *);
	int (*free_dm)(struct ibv_dm *);
	int (*get_srq_num)(struct ibv_srq *, uint32_t *);
	struct ibv_dm *(*import_dm)(struct ibv_context *, uint32_t);
	struct ibv_mr *(*import_mr)(struct ibv_pd *, uint32_t);
	struct ibv_pd *(*import_pd)(struct ibv_context *, uint32_t);
	int (*modify_cq)(struct ibv_cq *, struct ibv_modify_cq_attr *);
	int (*modify_flow_action_esp)(struct ibv_flow_action *,
				      struct ibv_flow_action_esp_attr *);
	int (*modify_qp)(struct ibv_qp *, struct ibv_qp_attr *, int);
	int (*modify_qp_rate_limit)(struct ibv_qp *,
				    struct ibv_qp_rate_limit_attr *);
	int (*modify_srq)(struct ibv_srq *, struct ibv_srq_attr *, int);
	int (*modify_wq)(struct ibv_wq *, struct ibv_wq_attr *);
	struct ibv_qp *(*open_qp)(struct ibv_context *,
				  struct ibv_qp_open_attr *);
	struct ibv_xrcd *(*open_xrcd)(struct ibv_context *,
				      struct ibv_xrcd_init_attr *);
	int (*poll_cq)(struct ibv_cq *, int, struct ibv_wc *);
	int (*post_recv)(struct ibv_qp *, struct ibv_recv_wr *,
			 struct ibv_recv_wr **);
	int (*post_send)(struct ibv_qp *, struct ibv_send_wr *,
			 struct ibv_send_wr **);
	int (*post_srq_ops)(struct ibv_srq *, struct ibv_ops_wr *,
			    struct ibv_ops_wr **);
	int (*post_srq_recv)(struct ibv_srq *, struct ibv_recv_wr *,
			     struct ibv_recv_wr **);
	int (*query_device_ex)(struct ibv_context *,
			       const struct ibv_query_device_ex_input *,
			       struct ibv_device_attr_ex *, size_t);
	int (*query_ece)(struct ibv_qp *, struct ibv_ece *);
	int (*query_port)(struct ibv_context *, uint8_t,
			  struct ibv_port_attr *);
	int (*query_qp)(struct ibv_qp *, struct ibv_qp_attr *, int,
			struct ibv_qp_init_attr *);
	int (*query_qp_data_in_order)(struct ibv_qp *, enum ibv_wr_opcode,
				      uint32_t);
	int (*query_rt_values)(struct ibv_context *, struct ibv_values_ex *);
	int (*query_srq)(struct ibv_srq *, struct ibv_srq_attr *);
	int (*read_counters)(struct ibv_counters *, uint64_t *, uint32_t,
			     uint32_t);
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *, struct ibv_dm *, uint64_t,
				    size_t, unsigned int);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *, uint64_t, size_t,
					uint64_t, int, int);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *, void *, size_t, uint64_t,
				 int);
	int (*req_notify_cq)(struct ibv_cq *, int);
	int (*rereg_mr)(struct verbs_mr *, int, struct ibv_pd *, void *, size_t,
			int);
	int (*resize_cq)(struct ibv_cq *, int);
	int (*set_ece)(struct ibv_qp *, struct ibv_ece *);
	void (*unimport_dm)(struct ibv_dm *);
	void (*unimport_mr)(struct ibv_mr *);
	void (*unimport_pd)(struct ibv_pd *);
};

/* What a provider imports from IBVERBS_PRIVATE_34. */
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);
void verbs_register_driver_34(const struct verbs_device_ops *ops);

static inline struct verbs_device *swiw_verbs_device(const struct ibv_device *d)
{
	return (struct verbs_device *)((char *)d -
				       offsetof(struct verbs_device, device));
}

#define SWIW_ABI_SIZE(type, n) \
	_Static_assert(sizeof(type) == (n), "libibverbs ABI: sizeof " #type)
#define SWIW_ABI_OFF(type, memb, n)                 \
	_Static_assert(offsetof(type, memb) == (n), \
		       "libibverbs ABI: " #type "." #memb)
#define SWIW_OPS_SLOT(memb, n) \
	SWIW_ABI_OFF(struct verbs_context_ops, memb, (n) * sizeof(void *))

/* Measured on rdma-core v44, x86_64 (LIBIBVERBS.md §2). */
SWIW_ABI_SIZE(struct verbs_match_ent, 24);
SWIW_ABI_SIZE(struct verbs_sysfs_dev, 992);
SWIW_ABI_OFF(struct verbs_sysfs_dev, sysfs_name, 36);
SWIW_ABI_OFF(struct verbs_sysfs_dev, sysfs_cdev, 104);
SWIW_ABI_OFF(struct verbs_sysfs_dev, ibdev_name, 112);
SWIW_ABI_OFF(struct verbs_sysfs_dev, ibdev_path, 176);
SWIW_ABI_OFF(struct verbs_sysfs_dev, modalias, 432);
SWIW_ABI_OFF(struct verbs_sysfs_dev, node_guid, 944);
SWIW_ABI_OFF(struct verbs_sysfs_dev, driver_id, 952);
SWIW_ABI_OFF(struct verbs_sysfs_dev, ibdev_idx, 960);
SWIW_ABI_OFF(struct verbs_sysfs_dev, time_created, 976);
SWIW_ABI_SIZE(struct verbs_device_ops, 72);
SWIW_ABI_OFF(struct verbs_device_ops, match_device, 32);
SWIW_ABI_OFF(struct verbs_device_ops, alloc_context, 40);
SWIW_ABI_OFF(struct verbs_device_ops, uninit_device, 64);
SWIW_ABI_SIZE(struct ibv_device, 664);
SWIW_ABI_SIZE(struct verbs_device, 712);
SWIW_ABI_OFF(struct verbs_device, ops, 664);
SWIW_ABI_OFF(struct verbs_device, refcount, 672);
SWIW_ABI_OFF(struct verbs_device, entry, 680);
SWIW_ABI_OFF(struct verbs_device, sysfs, 696);
SWIW_ABI_OFF(struct verbs_device, core_support, 704);
SWIW_ABI_SIZE(struct verbs_context, 648);
SWIW_ABI_OFF(struct verbs_context, priv, 208);
SWIW_ABI_OFF(struct verbs_context, sz, 312);
SWIW_ABI_OFF(struct verbs_context, context, 320);
SWIW_ABI_OFF(struct ibv_context, cmd_fd, 264);
SWIW_ABI_OFF(struct ibv_context, async_fd, 268);
SWIW_ABI_OFF(struct ibv_context, abi_compat, 320);
SWIW_ABI_SIZE(struct verbs_context_ops, 76 * sizeof(void *));
SWIW_OPS_SLOT(advise_mr, 0);
SWIW_OPS_SLOT(alloc_pd, 5);
SWIW_OPS_SLOT(async_event, 7);
SWIW_OPS_SLOT(cq_event, 12);
SWIW_OPS_SLOT(create_cq, 15);
SWIW_OPS_SLOT(create_cq_ex, 16);
SWIW_OPS_SLOT(create_qp, 19);
SWIW_OPS_SLOT(create_qp_ex, 20);
SWIW_OPS_SLOT(dealloc_pd, 26);
SWIW_OPS_SLOT(dereg_mr, 28);
SWIW_OPS_SLOT(free_context, 39);
SWIW_OPS_SLOT(import_dm, 42);
SWIW_OPS_SLOT(poll_cq, 53);
SWIW_OPS_SLOT(query_device_ex, 58);
SWIW_OPS_SLOT(query_port, 60);
SWIW_OPS_SLOT(reg_mr, 68);
SWIW_OPS_SLOT(unimport_pd, 75);
SWIW_ABI_OFF(struct verbs_mr, mr_type, sizeof(struct ibv_mr));
/* The extended CQ and QP overlay the plain ones (ibv_cq_ex_to_cq() is a
 * cast); ibv_qp_to_qp_ex() reads comp_mask right after the ibv_qp_ex. */
SWIW_ABI_SIZE(struct ibv_cq, 128);
SWIW_ABI_SIZE(struct ibv_cq_ex, 288);
SWIW_ABI_SIZE(struct verbs_cq, 288);
SWIW_ABI_OFF(struct ibv_cq_ex, start_poll, 144);
SWIW_ABI_SIZE(struct ibv_qp, 160);
SWIW_ABI_SIZE(struct ibv_qp_ex, 352);
SWIW_ABI_OFF(struct ibv_qp_ex, wr_id, 168);
SWIW_ABI_OFF(struct ibv_qp_ex, wr_start, 320);
SWIW_ABI_OFF(struct verbs_qp, comp_mask, 352);
SWIW_ABI_OFF(struct verbs_qp, xrcd, 360);

/*
 * Checks the libibverbs this process actually loaded, found through @sym,
 * its _verbs_init_and_alloc_context@IBVERBS_PRIVATE_34 (NULL if it has
 * none): the rdma-core release in the file's name must lie in the verified
 * range. Returns 0, or -1 with a one-line reason in @why.
 */
int swiw_verbs_abi_check(void *sym, char *why, size_t len);

/* "libibverbs.so.1.14.44.0" -> 44; -1 if the name does not parse. */
int swiw_verbs_release_from_name(const char *file_name);

#endif /* SWIW_VERBS_ABI_H */
