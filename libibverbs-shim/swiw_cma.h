/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * librdmacm for swiw devices, inside libswiw-preload.so: the rdma_* API
 * over TCP + MPA, with no kernel rdma_cm. The CM makes TCP connections,
 * listens on the TCP port of the same number (iWARP's rdma_cm port space
 * is TCP's), reads MPA Requests, and hands connected sockets to QPs; the
 * provider's engine runs MPA and reports back (swiw_shim.h, cm_*).
 *
 * LOCKS
 * cma_lock (swiw_cma.c) serialises ids, listeners and the CM thread; it is
 * taken before any provider lock. ev_lock guards the event queues, an id's
 * channel pointer and its event counts; it is a leaf, the only lock the
 * engine's callback takes, so a callback never waits for the CM.
 */
#ifndef SWIW_CMA_H
#define SWIW_CMA_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "swiw_shim.h"

#define SWIW_EXPORT __attribute__((visibility("default")))

/* Private data a ULP may send: 256 on the wire less the RFC 6581 word. */
#define CMA_PD_MAX (SWIW_CM_PD_MAX - 4)
#define CMA_CONNECT_TIMEOUT_MS 10000
#define CMA_REQUEST_TIMEOUT_MS 5000 /* SWIW_MPA_REQUEST_TIMEOUT_MS */
#define CMA_REQ_MAX (20 + SWIW_CM_PD_MAX) /* an MPA Request frame */

/* One open context per swiw device, for the whole process. */
struct cma_dev {
	struct ibv_device *dev;
	struct ibv_context *ctx;
	struct ibv_pd *pd; /* the default PD, made on first use */
	uint8_t max_ird, max_ord;
	struct cma_dev *next;
};

struct cma_chan {
	struct rdma_event_channel ch; /* first: the fd is an eventfd */
	struct cma_event *head, **tail;
	/* swiw_cma_fwd.c: the real librdmacm's channel, and its thread. */
	struct rdma_event_channel *real;
	int wake_fd;
	pthread_t fwd_thread;
	bool dead; /* destroyed, its memory kept a while (chan_free) */
};

struct cma_event {
	struct rdma_cm_event ev; /* first: what the user holds */
	struct cma_event *next;
	struct cma_id *owner; /* whose count the ack releases */
	uint8_t pd[SWIW_CM_PD_MAX];
};

enum cma_state {
	CMA_IDLE,
	CMA_BOUND,
	CMA_ADDR, /* address resolved */
	CMA_ROUTE, /* route resolved */
	CMA_LISTEN,
	CMA_REQ, /* a connection request, waiting for accept or reject */
	CMA_CONNECTING, /* TCP connect in flight */
	CMA_MPA, /* the QP's stream runs MPA, and then the connection */
	CMA_DONE, /* rejected, failed or disconnected */
};

struct cma_id {
	struct rdma_cm_id id; /* first: what the user holds */
	enum cma_state state;
	int fd; /* bound, listening, connecting or request socket */
	bool sync; /* no user channel: calls wait for their event */
	bool attached; /* the engine may call back with this id */
	bool destroyed; /* freed when the last event is acked */
	bool in_epoll;
	bool muted; /* CMA_LISTEN: out of descriptors, resumes at due_ms */
	bool reuseaddr, afonly;
	int backlog; /* CMA_LISTEN: Requests not yet accepted, at most */
	int tos; /* -1: not set */
	unsigned int events_out; /* retrieved and not acked */
	struct cma_dev *dev;
	struct cma_id *listener; /* CMA_REQ: the listener it came to */
	uint8_t req[CMA_REQ_MAX]; /* CMA_REQ: the MPA Request */
	uint16_t req_len;
	/* CMA_CONNECTING: what MPA will need. */
	uint32_t qpn;
	uint16_t ird, ord, pd_len;
	uint8_t pd[SWIW_CM_PD_MAX];
	uint64_t due_ms; /* connect deadline; a muted listener's resumption */
	/* Created by rdma_create_qp: destroyed by rdma_destroy_qp. */
	bool own_send_cq, own_recv_cq;
	/* rdma_create_ep(RAI_PASSIVE): the QP each request gets. */
	bool has_qp_init;
	struct ibv_qp_init_attr qp_init;
	struct ibv_pd *qp_init_pd;
	/* swiw_cma_fwd.c: the kernel rdma_cm's id that serves this one. */
	struct rdma_cm_id *real;
	struct cma_fwd_ref *ref;
	struct cma_id *next; /* every id, under cma_lock */
};

/* swiw_preload.c */
const struct swiw_shim_iface *swiw_shim(void);
bool swiw_shim_is_dev(struct ibv_device *dev);
void *swiw_real_sym(const char *name, const char *version);

/* swiw_cma.c: ids, channels, events */
extern pthread_mutex_t cma_lock;
int cma_err(int err); /* errno = err, returns -1 */
void cma_queue(struct cma_id *id, struct cma_id *owner,
	       enum rdma_cm_event_type type, int status,
	       const struct rdma_conn_param *param);
void cma_engine_cb(void *arg, const struct swiw_cm_event *ev);
int cma_complete(struct cma_id *id);
bool cma_has_queued(struct cma_id *id);
/* Requests not yet accepted or rejected: @lis's, and the process's. */
unsigned int cma_requests(const struct cma_id *lis, unsigned int *all);
struct cma_id *cma_id_new(struct rdma_event_channel *ch, void *context);
void cma_id_free(struct cma_id *id);
uint64_t cma_now_ms(void);
bool cma_ours(const struct rdma_cm_id *id);
/* Set while this thread is inside the real librdmacm (swiw_cma_fwd.c). */
extern __thread int cma_in_real;
bool cma_fwd_is_real(const struct rdma_cm_id *id);
/*
 * An id that is not ours: the real librdmacm's, come back through its
 * PLT, goes back to it; anything else (a destroyed id, a stray pointer)
 * is refused rather than handed to code that would follow it.
 */
#define CMA_REAL_ID(id, fn, ...)                                    \
	do {                                                        \
		if ((id) && !cma_ours(id)) {                        \
			if (!cma_fwd_is_real(id))                   \
				return cma_err(EINVAL);             \
			return cma_real()->fn((id), ##__VA_ARGS__); \
		}                                                   \
	} while (0)
void cma_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

void cma_queue_event(struct cma_event *e);

/* swiw_cma_fwd.c: other devices' addresses, to the real librdmacm */
struct cma_real {
	struct rdma_event_channel *(*create_event_channel)(void);
	void (*destroy_event_channel)(struct rdma_event_channel *);
	int (*create_id)(struct rdma_event_channel *, struct rdma_cm_id **,
			 void *, enum rdma_port_space);
	int (*destroy_id)(struct rdma_cm_id *);
	int (*bind_addr)(struct rdma_cm_id *, struct sockaddr *);
	int (*resolve_addr)(struct rdma_cm_id *, struct sockaddr *,
			    struct sockaddr *, int);
	int (*resolve_route)(struct rdma_cm_id *, int);
	int (*listen)(struct rdma_cm_id *, int);
	int (*connect)(struct rdma_cm_id *, struct rdma_conn_param *);
	int (*accept)(struct rdma_cm_id *, struct rdma_conn_param *);
	int (*reject)(struct rdma_cm_id *, const void *, uint8_t);
	int (*disconnect)(struct rdma_cm_id *);
	int (*get_cm_event)(struct rdma_event_channel *,
			    struct rdma_cm_event **);
	int (*ack_cm_event)(struct rdma_cm_event *);
	int (*create_qp_ex)(struct rdma_cm_id *, struct ibv_qp_init_attr_ex *);
	int (*create_qp)(struct rdma_cm_id *, struct ibv_pd *,
			 struct ibv_qp_init_attr *);
	void (*destroy_qp)(struct rdma_cm_id *);
	int (*migrate_id)(struct rdma_cm_id *, struct rdma_event_channel *);
	int (*set_option)(struct rdma_cm_id *, int, int, void *, size_t);
	int (*notify)(struct rdma_cm_id *, enum ibv_event_type);
	int (*create_srq_ex)(struct rdma_cm_id *,
			     struct ibv_srq_init_attr_ex *);
	void (*destroy_srq)(struct rdma_cm_id *);
	int (*init_qp_attr)(struct rdma_cm_id *, struct ibv_qp_attr *, int *);
	int (*establish)(struct rdma_cm_id *);
};

const struct cma_real *cma_real(void);
int cma_fwd_attach(struct cma_id *id, const char *why);
int cma_fwd_attach_chan(struct cma_chan *c);
void cma_fwd_sync(struct cma_id *id);
void cma_fwd_release(struct cma_id *id);
void cma_fwd_reap(void);
void cma_fwd_chan_free(struct cma_chan *c);

/* swiw_cma_addr.c: devices and addresses */
struct cma_dev *cma_dev_for_addr(const struct sockaddr *sa);
struct cma_dev *cma_dev_for_ctx(struct ibv_context *ctx);
int cma_route_src(const struct sockaddr *dst, struct sockaddr_storage *src);
socklen_t cma_sa_len(const struct sockaddr *sa);
bool cma_sa_any(const struct sockaddr *sa);
uint16_t cma_sa_port(const struct sockaddr *sa);
struct ibv_pd *cma_dev_pd(struct cma_dev *d);
int cma_bind_dev(struct cma_id *id, const struct sockaddr *sa, char *why,
		 size_t len);

/* swiw_cma_conn.c: sockets, the CM thread, QPs */
int cma_thread_watch(struct cma_id *id, uint32_t events);
void cma_thread_unwatch(struct cma_id *id);
void cma_conn_release(struct cma_id *id);

/* libibverbs, resolved at run time: this library does not link it. */
struct cma_verbs {
	struct ibv_context *(*open_device)(struct ibv_device *);
	int (*query_device)(struct ibv_context *, struct ibv_device_attr *);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *);
	int (*dealloc_pd)(struct ibv_pd *);
	struct ibv_cq *(*create_cq)(struct ibv_context *, int, void *,
				    struct ibv_comp_channel *, int);
	int (*destroy_cq)(struct ibv_cq *);
	struct ibv_qp *(*create_qp)(struct ibv_pd *, struct ibv_qp_init_attr *);
	int (*destroy_qp)(struct ibv_qp *);
	int (*modify_qp)(struct ibv_qp *, struct ibv_qp_attr *, int);
	struct ibv_srq *(*create_srq)(struct ibv_pd *,
				      struct ibv_srq_init_attr *);
	int (*destroy_srq)(struct ibv_srq *);
	void (*free_device_list)(struct ibv_device **);
};

const struct cma_verbs *cma_verbs(void);

#endif /* SWIW_CMA_H */
