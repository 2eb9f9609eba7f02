/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * swiw-broker: the connection broker of one network namespace.
 *
 * One thread, one epoll set, level-triggered. Objects in the set start
 * with a struct brk_ev naming their kind. An object closed while events
 * of the same epoll_wait() batch may still name it is unlinked from
 * everything at once but freed only after the batch (brk_reap()).
 *
 *   swiw_broker_main.c     options, start-up, the loop, timers, logging
 *   swiw_broker_session.c  unix sessions, the QP table, requests
 *   swiw_broker_conn.c     TCP: accepting, reading the MPA Request,
 *                          matching, rejecting, handing over
 */
#ifndef SWIW_BROKER_DAEMON_H
#define SWIW_BROKER_DAEMON_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/types.h>

#include "swiw_broker.h"
#include "swiw_broker_proto.h"
#include "swiw_mpa.h"

/* Exit status (swiw_broker_client.c reads them after --spawned). */
#define BRK_EXIT_READY 0 /* serving, or another broker serves already */
#define BRK_EXIT_USAGE 2
#define BRK_EXIT_PORT 3 /* the TCP port is taken */
#define BRK_EXIT_FAIL 4

struct brk_opts {
	uint16_t port;
	bool spawned; /* started by a client: detach, log to syslog */
	unsigned int idle_ms; /* exit after this long without clients; 0 never */
	unsigned int request_ms; /* to receive a whole MPA Request */
	unsigned int hold_ms; /* a Request not handed over waits this long */
	unsigned int hello_ms; /* for a new client's HELLO */
	unsigned int max_pending; /* TCP connections not yet handed over */
	unsigned int max_per_peer; /* of those, from one address */
	unsigned int max_qps; /* registered QPs, all sessions */
	unsigned int max_session_qps;
	unsigned int max_sessions;
	unsigned int max_user_qps; /* of one uid but root, all its sessions */
	unsigned int max_user_sessions;
};

enum brk_kind {
	BRK_UNIX_LISTEN,
	BRK_TCP_LISTEN,
	BRK_SESSION_CTL,
	BRK_SESSION_EVT,
	BRK_CONN,
	BRK_SIGNAL,
};

struct brk_ev {
	enum brk_kind kind;
};

#define brk_container_of(ptr, type, member) \
	((type *)((char *)(ptr)-offsetof(type, member)))

struct brk_session;
struct brk_conn;

enum brk_qp_state {
	BRK_QP_REGISTERED, /* no expectation: Requests are held */
	BRK_QP_RESPONDER, /* takes one matching connection */
	BRK_QP_INITIATOR, /* connects out itself: Requests rejected */
	BRK_QP_HANDED, /* its connection went to the owner */
};

struct brk_qp {
	uint32_t qpn;
	uint8_t state; /* enum brk_qp_state */
	uint8_t peer_gid[16];
	uint32_t peer_qpn;
	/* From RTR and RTS: SWIW_BROKER_PSN_KNOWN | PSN, or 0 (not yet). */
	uint32_t rq_psn, sq_psn;
	struct brk_session *s;
	struct brk_qp *hnext; /* hash chain */
	struct brk_qp *snext, *sprev; /* the session's QPs */
};

/* What one uid holds, over all its sessions (root is not counted). */
struct brk_user {
	uid_t uid;
	unsigned int nsessions, nqps;
	struct brk_user *next;
};

struct brk_session {
	struct brk_ev ctl_ev;
	struct brk_ev evt_ev;
	int ctl, evt; /* evt is -1 until HELLO */
	unsigned int id;
	pid_t pid; /* SO_PEERCRED at accept */
	uid_t uid;
	struct brk_user *u; /* NULL for root */
	uint64_t hello_deadline;
	unsigned int nqps;
	struct brk_qp *qps;
	struct brk_conn *outq, *outq_tail; /* hand-overs waiting for evt */
	bool dead;
	struct brk_session *next, *prev;
};

enum brk_conn_state {
	BRK_C_READ, /* reading the MPA Request */
	BRK_C_HELD, /* Request read; its QP not in RTR, or no PSN to check */
	BRK_C_QUEUED, /* matched; the owner's event socket is full */
};

/* The pending connections from one address. */
struct brk_peer {
	uint8_t addr[16];
	unsigned int n;
	struct brk_conn *head, *tail; /* oldest first */
	struct brk_peer *hnext;
};

#define BRK_PEER_HASH 1024

struct brk_conn {
	struct brk_ev ev;
	int fd;
	uint8_t state; /* enum brk_conn_state */
	bool dead;
	uint16_t why; /* held: what keeps it from its QP (a reason, logged) */
	uint64_t deadline;
	uint8_t peer[16]; /* IPv6, IPv4 mapped */
	struct swiw_bp_addr peer_addr, local_addr;
	/* The Request exactly as read; never a byte beyond it. */
	uint8_t req[SWIW_BP_REQ_MAX];
	uint16_t got, need;
	struct swiw_mpa mpa; /* validates the Request, builds a reject */
	uint8_t mpa_tx[SWIW_MPA_FRAME_MAX];
	uint8_t mpa_pd[SWIW_MPA_PD_MAX];
	struct swiw_broker_pd pd; /* the Request's swiw block */
	struct brk_session *qs; /* BRK_C_QUEUED: whose queue */
	struct brk_conn *qnext;
	struct brk_conn *next, *prev; /* every live one, oldest first */
	struct brk_peer *pe; /* its address's */
	struct brk_conn *pnext, *pprev; /* the address's, oldest first */
};

struct brk {
	struct brk_opts o;
	int ep;
	int unix_fd;
	struct brk_ev unix_ev;
	int tcp_fd;
	struct brk_ev tcp_ev;
	bool paused; /* out of descriptors: listeners off until resume_at */
	uint64_t resume_at;
	int sig_fd;
	struct brk_ev sig_ev;
	bool stop;
	uint64_t idle_since; /* 0: not idle */
	/* Sessions and connections. */
	struct brk_session *sessions;
	unsigned int nsessions, next_session_id;
	struct brk_user *users;
	struct brk_conn *conns, *conns_tail; /* oldest first */
	unsigned int nconns;
	struct brk_peer *peer_hash[BRK_PEER_HASH];
	uint64_t peer_key[2]; /* random: an address cannot pick its chain */
	/* Closed in this batch, freed after it. */
	struct brk_session *dead_sessions;
	struct brk_conn *dead_conns;
	/* The QP table: chained hash, grown by doubling. */
	struct brk_qp **qp_hash;
	unsigned int qp_hash_size, nqps;
	/* QP numbers handed out this epoch (one bit each), how many, and
	 * random octets not used yet (swiw_broker_session.c). */
	uint8_t *qpn_used;
	uint32_t qpn_epoch;
	uint8_t rnd[4096];
	unsigned int rnd_left;
};

/* swiw_broker_main.c */
enum brk_log_level {
	BRK_LOG_ERR = 1,
	BRK_LOG_WARN = 2,
	BRK_LOG_INFO = 3,
	BRK_LOG_DEBUG = 4,
};
void brk_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* For what a remote peer can trigger: at most a few lines a second. */
void brk_log_peer(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
uint64_t brk_now(void);
int brk_epoll_add(struct brk *b, int fd, uint32_t events, struct brk_ev *ev);
int brk_epoll_mod(struct brk *b, int fd, uint32_t events, struct brk_ev *ev);
void brk_epoll_del(struct brk *b, int fd);
void brk_addr_str(const uint8_t a[16], char *buf, size_t size);
/* Out of descriptors: stop accepting for a moment rather than spin. */
void brk_pause_listeners(struct brk *b);
/*
 * The loop's state around the listeners unix_fd and tcp_fd: the epoll
 * set, the QP table, the peer hash's key. 0 or an errno.
 */
int brk_setup(struct brk *b);
/* Every session's and connection's deadline up to @now; *@next lowered. */
void brk_timeouts(struct brk *b, uint64_t now, uint64_t *next);

/* swiw_broker_session.c */
int brk_qp_table_init(struct brk *b);
void brk_qp_table_free(struct brk *b);
struct brk_qp *brk_qp_find(struct brk *b, uint32_t qpn);
void brk_unix_accept(struct brk *b);
void brk_session_ctl(struct brk *b, struct brk_session *s, uint32_t events);
void brk_session_evt(struct brk *b, struct brk_session *s, uint32_t events);
void brk_session_close(struct brk *b, struct brk_session *s);
void brk_session_timeouts(struct brk *b, uint64_t now, uint64_t *next);
/* Sends a CONN; false if the event socket is full (caller queues). */
int brk_session_send_conn(struct brk *b, struct brk_session *s,
			  struct brk_conn *c);

/* swiw_broker_conn.c */
void brk_tcp_accept(struct brk *b);
void brk_conn_input(struct brk *b, struct brk_conn *c, uint32_t events);
void brk_conn_close(struct brk *b, struct brk_conn *c);
void brk_conn_reject(struct brk *b, struct brk_conn *c, unsigned int reason);
void brk_conn_timeouts(struct brk *b, uint64_t now, uint64_t *next);
/*
 * The QP's expectation changed or it went: settle the connections held for
 * it, and refuse those queued for a QP that is gone.
 */
void brk_conns_settle(struct brk *b, uint32_t qpn);
/* The owner of queued hand-overs can take more. */
void brk_conns_flush(struct brk *b, struct brk_session *s);

void brk_reap(struct brk *b);
/*
 * One epoll event of a listener, session or connection, handled; false
 * for any other kind (the signal descriptor), which the caller owns.
 */
bool brk_dispatch(struct brk *b, const struct epoll_event *e);
/* Every session and connection closed and freed, the QP table too. */
void brk_close_all(struct brk *b);

#endif /* SWIW_BROKER_DAEMON_H */
