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
#include "swiw_backend.h"
#include "swiw_broker.h"
#include "swiw_limits.h"
#include "swiw_log.h"
#include "swiw_queue.h"

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
	atomic_uint npd, nmr, ncq, nqp, nsrq; /* objects held, vs the limits */
	struct swiw_context *next_open; /* event monitor list */
	bool cm; /* opened by the CM: its QPs are CM-managed */
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
	bool invalid; /* invalidated (LOCAL_INV, Send with Invalidate) */
	bool backend; /* the STag is the backend's (swiw_backend.h) */
};

/*
 * A CQ is a ring of struct swiw_cqe followed by the arm word. The
 * provider consumes it in poll_cq (under poll_lock); the engine produces
 * into it (under the engine lock), from every QP that completes there.
 */
struct swiw_cq {
	struct verbs_cq vcq;
	pthread_spinlock_t poll_lock;
	struct swiw_ring ring; /* provider: consumer view */
	struct swiw_ring eng; /* engine: producer view */
	struct swiw_cq_ctrl *ctrl; /* after the last CQE */
	void *mem;
	size_t mem_len;
	atomic_uint users; /* QPs that complete here */
	bool overflow; /* the engine found it full: CQ error raised */
	struct ibv_wc cur; /* ibv_cq_ex: the completion being read */
};

/* The queue a receive comes from: a QP's own RQ or an SRQ. */
struct swiw_rq {
	pthread_spinlock_t lock;
	struct swiw_ring ring; /* provider: producer view */
	struct swiw_ring eng; /* engine: consumer view */
	void *mem;
	size_t mem_len;
	struct swiw_bqueue bq; /* with a backend: its ring (mem is bq.mem) */
	uint32_t max_sge;
};

struct swiw_srq {
	struct verbs_srq vsrq;
	struct swiw_rq rq;
	uint32_t max_wr; /* as reported */
	uint32_t limit; /* SRQ limit event armed below this many WRs */
	atomic_uint users; /* QPs that receive from it */
};

/*
 * An RC queue pair. The SQ and the RQ are swiw-abi.h rings; the provider
 * produces work requests into them under sq_lock/rq.lock, the engine
 * consumes them. State changes and the engine's view are serialised by
 * state_lock.
 */
struct swiw_qp {
	struct verbs_qp vqp;
	pthread_mutex_t state_lock;
	enum ibv_qp_state state;
	pthread_spinlock_t sq_lock;
	struct swiw_ring sq; /* provider: producer view */
	struct swiw_ring sq_eng; /* engine: consumer view */
	void *sq_mem;
	size_t sq_mem_len;
	struct swiw_rq own_rq;
	struct swiw_rq *rq; /* &own_rq, or the SRQ's */
	bool rq_stale; /* RESET could not renew own_rq: RTR tries again */
	struct swiw_srq *srq;
	struct swiw_cq *scq, *rcq;
	uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge;
	uint32_t max_inline;
	bool sq_sig_all;
	/* Connection, from modify_qp. */
	union ibv_gid dgid;
	uint32_t dest_qpn;
	uint8_t ird, ord; /* max_dest_rd_atomic, max_rd_atomic */
	int access; /* qp_access_flags */
	uint32_t sq_psn, rq_psn;
	/* In-process engine: the attached stream (under the engine lock),
	 * and the doorbell arm: set by the engine when it found the SQ
	 * empty, exchanged to 0 by post_send, which then rings. */
	struct swiw_stream *stream;
	int sq_armed;
	/* Poll mode, post coalescing (swiw_engine_sq_posted): when the last
	 * post_send returned, and the WRs it left to the next pump since
	 * its own last pump. Without a lock: they decide when WRs go, never
	 * whether. */
	uint64_t sq_last_ns;
	unsigned int sq_corked;
	/* Connecting by modify_qp (swiw_setup_broker.c, under the engine lock). */
	struct swiw_bk *bk; /* the broker session that gave qp_num */
	struct swiw_qp *conn_next;
	struct swiw_broker_dial dial;
	uint8_t bk_role; /* enum swiw_broker_role, from RTR */
	bool expected; /* the broker knows the QP's peer */
	bool dialing; /* initiator: dial in progress */
	bool conn_wait; /* responder: waiting for the hand-over */
	uint64_t conn_due; /* responder: gives up then (broker clock, ms) */
	/* The PSNs the QP was given, as the broker's PSN words (KNOWN | PSN,
	 * 0 while unknown): receive from RTR, send from RTS. */
	uint32_t bk_rq_psn, bk_sq_psn;
	/* The peer's Request or Accept (type 0 before it came): a QP
	 * connected before its RTS checks its send PSN against it then. */
	struct swiw_broker_pd bk_peer;
	bool sq_psn_given; /* modify_qp set IBV_QP_SQ_PSN (state_lock) */
	struct swiw_qpx *qpx; /* ibv_qp_ex builders' state, or NULL */
	/* Connected by the CM (swiw_setup_cm.c): RTR needs no peer, and the
	 * engine takes the QP to RTS when MPA completes. */
	bool cm;
};

struct swiw_comp_channel {
	struct ibv_comp_channel ibv_ch;
	int wfd; /* write end of ibv_ch.fd: 8-byte CQ pointers */
	unsigned long posted; /* records written, for a waiter to see */
	/*
	 * A thread looking at the channel (swiw_engine_chan_wait) is handed
	 * the next record in memory, not through the pipe: no write() for
	 * the completion and no read() for ibv_get_cq_event. SWIW_LOOK_*;
	 * @handed is the record's CQ once @look is SWIW_LOOK_HANDED.
	 */
	uint32_t look;
	struct ibv_cq *handed;
};

enum {
	SWIW_LOOK_NONE,
	SWIW_LOOK_ACTIVE, /* one thread looks, and takes a record handed */
	SWIW_LOOK_CLAIMED, /* a completion is handing one over */
	SWIW_LOOK_HANDED
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

static inline struct swiw_qp *to_swiw_qp(struct ibv_qp *qp)
{
	return swiw_container_of(qp, struct swiw_qp, vqp.qp);
}

static inline struct swiw_srq *to_swiw_srq(struct ibv_srq *srq)
{
	return swiw_container_of(srq, struct swiw_srq, vsrq.srq);
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

/* swiw_verbs.c: objects counted against the device limits */
void *swiw_obj_alloc(atomic_uint *cnt, unsigned int max, size_t size);
void swiw_obj_free(atomic_uint *cnt, void *obj);

/* swiw_cq.c, swiw_qp.c, swiw_srq.c: the queue verbs */
struct ibv_cq *swiw_create_cq(struct ibv_context *ctx, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector);
int swiw_destroy_cq(struct ibv_cq *cq);
int swiw_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int swiw_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int swiw_resize_cq(struct ibv_cq *cq, int cqe);
struct ibv_qp *swiw_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
int swiw_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		  struct ibv_qp_init_attr *init);
int swiw_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int swiw_destroy_qp(struct ibv_qp *qp);
int swiw_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr);
int swiw_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr);
struct ibv_srq *swiw_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr);
int swiw_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
int swiw_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int swiw_destroy_srq(struct ibv_srq *srq);
int swiw_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr);
int swiw_build_sqe(struct swiw_qp *qp, const struct ibv_send_wr *wr,
		   struct swiw_sqe *sqe, uint16_t *flags_out);
int swiw_sq_state(struct swiw_qp *qp);
void swiw_sq_posted(struct swiw_qp *qp, int state);
void swiw_cqe_to_wc(const struct swiw_cqe *e, struct ibv_wc *wc);
int swiw_rq_init(struct swiw_rq *rq, uint32_t num, uint32_t max_sge);
void swiw_rq_destroy(struct swiw_rq *rq);
int swiw_rq_post(struct swiw_rq *rq, struct ibv_recv_wr *wr,
		 struct ibv_recv_wr **bad_wr);
void swiw_rq_resync(struct swiw_rq *rq);
int swiw_rq_renew(struct swiw_rq *rq);

/* swiw_cq_ex.c, swiw_qp_ex.c: the extended verbs */
struct ibv_cq_ex *swiw_create_cq_ex(struct ibv_context *ctx,
				    struct ibv_cq_init_attr_ex *attr);
struct ibv_qp *swiw_create_qp_ex(struct ibv_context *ctx,
				 struct ibv_qp_init_attr_ex *attr);

/* engine/: the progress machinery behind the rings (engine/swiw_engine.c) */
int swiw_engine_cq_push(struct swiw_cq *cq, const struct swiw_cqe *cqe);
void swiw_engine_flush_qp(struct swiw_qp *qp);
void swiw_engine_flush_qp_locked(struct swiw_qp *qp);
void swiw_engine_reset_qp(struct swiw_qp *qp);
int swiw_engine_renew_rq(struct swiw_qp *qp);
void swiw_engine_sq_posted(struct swiw_qp *qp);
uint64_t swiw_engine_poll(void);
void swiw_engine_polled(int n, uint64_t now);
void swiw_engine_armed(void);
struct ibv_cq *swiw_engine_chan_wait(struct swiw_comp_channel *ch);
void swiw_engine_qp_access(struct swiw_qp *qp);
/* The engine lock: every producer into a CQ holds it. */
void swiw_eng_lock(void);
void swiw_eng_unlock(void);

/*
 * A connection made through the broker: our private-data block (REQUEST
 * or ACCEPT), what the peer's must name, and for a responder the MPA
 * Request the broker already read from the socket.
 */
struct swiw_engine_bk {
	uint8_t pd[SWIW_BROKER_PD_LEN];
	uint16_t pd_len;
	uint32_t peer_qpn;
	uint64_t nonce;
	const uint8_t *req;
	uint16_t req_len;
};

/* The same under the engine lock, with the default MPA configuration. */
int swiw_engine_attach_locked(struct swiw_qp *qp, int fd, int role,
			      const struct swiw_engine_bk *bk);

struct swiw_cm_params;
struct swiw_cm_req;
/* engine/swiw_setup_cm.c: a QP connected by the CM (swiw_cma*.c) */
int swiw_engine_cm_attach_locked(struct swiw_qp *qp, int fd,
				 const struct swiw_cm_params *p);
int swiw_cm_attach(struct ibv_qp *qp, int fd, const struct swiw_cm_params *p);
int swiw_cm_parse_request(const void *buf, size_t len, struct swiw_cm_req *out);
int swiw_cm_reject(int fd, const void *req, size_t req_len, const void *pd,
		   uint16_t pd_len);
int swiw_cm_disconnect(void *arg);
void swiw_cm_forget(void *arg);
void swiw_cm_mark_ctx(struct ibv_context *ctx);
void swiw_cm_mark_qp(struct ibv_qp *qp);

/* engine/swiw_setup_broker.c: connecting by modify_qp through the broker */
int swiw_conn_qp_create(struct swiw_qp *qp);
void swiw_conn_qp_destroy(struct swiw_qp *qp);
int swiw_conn_rtr(struct swiw_qp *qp, const union ibv_gid *sgid, int ifindex);
void swiw_conn_rts(struct swiw_qp *qp);
void swiw_conn_stop(struct swiw_qp *qp);
struct ibv_qp *swiw_conn_qp_lookup(struct ibv_context *ctx, uint32_t qpn);

/* swiw_mem.c: STags and memory checks */
int swiw_stag_alloc(struct swiw_mr *mr);
int swiw_stag_insert(struct swiw_mr *mr, uint32_t stag);
int swiw_mr_stag_get(struct swiw_mr *mr, struct ibv_pd *pd, void *addr,
		     size_t length, uint64_t iova, int access);
void swiw_mr_stag_put(struct swiw_mr *mr);
struct swiw_mr *swiw_mr_internal(struct ibv_pd *pd, void *addr, size_t len,
				 int *err);
void swiw_mr_internal_free(struct swiw_mr *mr);
void swiw_stag_free(struct swiw_mr *mr);
int swiw_mem_check_range(const void *addr, size_t len, bool need_write);

/* A registered region as the engine saw it at lookup time. */
struct swiw_mem_ref {
	uint8_t *addr; /* process address of iova */
	uint64_t iova;
	uint64_t len;
	int access; /* IBV_ACCESS_* */
	struct ibv_pd *pd;
	uint32_t stag;
	uint64_t gen; /* deregistrations counted when it was taken */
};

enum swiw_mem_err {
	SWIW_MEM_INVALID = 1, /* no such STag, or the key does not match */
	SWIW_MEM_NOT_ASSOC, /* another PD's */
	SWIW_MEM_ACCESS, /* a right is missing */
	SWIW_MEM_WRAP, /* the range wraps past 2^64 */
	SWIW_MEM_BOUNDS, /* outside the region */
};

int swiw_mem_lookup(uint32_t stag, const struct ibv_pd *pd, int need,
		    uint64_t to, uint64_t len, struct swiw_mem_ref *ref);
int swiw_mem_invalidate(uint32_t stag, const struct ibv_pd *pd);
bool swiw_mem_ref_live(struct swiw_mem_ref *ref);

/* Lookups of one PD's regions, kept until the STag table changes
 * (swiw_mem_lookup_cached); for one thread at a time. */
#define SWIW_MEM_CACHE 4
struct swiw_mem_cache {
	struct swiw_mem_ref ref[SWIW_MEM_CACHE];
};

int swiw_mem_lookup_cached(struct swiw_mem_cache *c, uint32_t stag,
			   const struct ibv_pd *pd, int need, uint64_t to,
			   uint64_t len, struct swiw_mem_ref *ref);
void swiw_engine_mr_gone(void);

/* engine/swiw_backend.c: which engine runs the queues (once per process) */
enum swiw_engine_kind {
	SWIW_ENGINE_NONE, /* the configuration asks for one that cannot run */
	SWIW_ENGINE_INPROCESS,
	SWIW_ENGINE_RING, /* the lower half in the process, over the rings */
	SWIW_ENGINE_KERNEL,
};

struct swiw_engine_choice {
	int kind; /* enum swiw_engine_kind */
	bool helper_usable; /* /dev/swiw has this ABI and a data path */
	char why[160]; /* what /dev/swiw said, for logs */
};

const struct swiw_engine_choice *swiw_engine_choice(void);
const char *swiw_engine_name(int kind);

/* swiw_event.c: async events and completion channels */
int swiw_events_open(struct swiw_context *ctx);
void swiw_events_close(struct swiw_context *ctx);
void swiw_post_async(struct swiw_context *ctx, enum ibv_event_type type,
		     uint64_t element);
struct ibv_comp_channel *swiw_create_comp_channel(struct ibv_context *ctx);
int swiw_destroy_comp_channel(struct ibv_comp_channel *ch);
struct ibv_cq *swiw_chan_wait(struct ibv_comp_channel *ch);

#endif /* SWIW_H */
