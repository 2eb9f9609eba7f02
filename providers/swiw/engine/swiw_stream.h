/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The engine's streams: one connected TCP socket per QP, MPA setup, then
 * FPDUs both ways through a lower half. Private to engine/; everything
 * here runs under the engine lock.
 */
#ifndef SWIW_STREAM_H
#define SWIW_STREAM_H

#include <time.h>

#include "swiw.h"
#include "swiw_backend.h"
#include "swiw_clock.h"
#include "swiw_ddp.h"
#include "swiw_fpdu.h"
#include "swiw_mpa.h"
#include "swiw_term.h"
#include "swiw_shim.h"

struct seg_src {
	uint8_t *addr;
	uint32_t len;
	uint32_t lkey; /* 0: inline data (s->inl) */
	uint64_t laddr;
};

/* A send-queue WR from when it is taken until its completion is due. */
struct infl {
	uint64_t id;
	uint32_t bytes;
	uint8_t opcode;
	bool signalled;
	bool done;
	uint32_t inv_stag; /* helper LOCAL_INV: mirrored when it is done */
};

/*
 * A Read or Atomic Request of ours, waiting for its response. Both go on
 * queue 1 and are answered in order, so one FIFO (ORD) holds them. A READ
 * with several SGEs is one Read Request per SGE; the last completes it.
 */
struct rd_out {
	uint32_t slot; /* in infl[] */
	uint32_t sink_stag;
	bool atomic;
	bool last; /* its response completes the WR */
	uint8_t *result; /* atomic: the local 8 octets of the result */
};

/* The local SGEs of a READ, one Read Request each. */
struct rd_sink {
	uint32_t lkey;
	uint32_t len;
	uint64_t laddr;
};

/* The receive WR a lower half took for a message that failed. */
struct rxbuf {
	bool valid;
	bool bad; /* an SGE failed the lower half's checks */
	uint64_t id;
};

enum tx_kind {
	TX_NONE,
	TX_SQE,
	TX_RTR
};

/*
 * What a stream needs until MPA has ended (swiw_setup_mpa.c): the MPA
 * machine and its frames, and what the broker or the CM brought to it.
 */
struct swiw_setup {
	bool mpa_phase; /* bytes in are MPA frames */
	struct swiw_mpa mpa;
	uint8_t mpa_tx[SWIW_MPA_FRAME_MAX];
	uint8_t mpa_pd[SWIW_MPA_PD_MAX];
	bool bk_checked; /* initiator: the Reply's block was checked */
	bool term_sent; /* MPA's TERMINATE went (or was tried) */
	struct swiw_engine_bk bk;
	/* Connected by the CM (swiw_setup_cm.c): what it brings to MPA. */
	uint16_t cm_ird, cm_ord, cm_pd_len;
	uint8_t cm_pd[SWIW_MPA_PD_MAX];
	const uint8_t *cm_req; /* stream_start only */
	uint16_t cm_req_len;
	/* The MPA deadline (swiw_mpa_deadline) as clock time. */
	uint8_t mpa_dl; /* enum swiw_mpa_deadline armed */
	uint64_t mpa_due_ns;
	/* FPDU framing for a TERMINATE no lower half sends. */
	struct swiw_fpdu_tx ftx;
};

struct swiw_stream;

/*
 * How a stream reaches what carries its FPDUs: its own socket while it
 * sets up (swiw_setup_ops), a backend's lower half once attached
 * (swiw_link_ops, swiw_stream_lower.c), nothing once it has let go
 * (swiw_idle_ops). The upper half calls only these.
 */
struct swiw_stream_ops {
	/* The SQ goes out as txds: the lower half has the socket. */
	bool txd;
	/* The socket, or (@events 0) the backend, may have news. */
	void (*event)(struct swiw_stream *s, uint32_t events);
	/* Events posted while the upper half called in; true if any. */
	bool (*drain)(struct swiw_stream *s);
	/* Txds were published. */
	void (*doorbell)(struct swiw_stream *s);
	/*
	 * The stream fails: the TERMINATE for @v (SWIW_V_NONE: none), then
	 * the socket comes back, with the events that tell what failed.
	 */
	void (*fail)(struct swiw_stream *s, enum swiw_violation v,
		     const void *seg, uint32_t seg_len);
	/* RESET or destroy: let go of the socket, without completions. */
	void (*detach)(struct swiw_stream *s);
};

extern const struct swiw_stream_ops swiw_setup_ops, swiw_link_ops,
	swiw_idle_ops;
/* The ops that do nothing (swiw_stream.c), for the tables above. */
bool swiw_stream_no_drain(struct swiw_stream *s);
void swiw_stream_nop(struct swiw_stream *s);

/* A connected QP's stream: the upper half of its lower half. */
struct swiw_stream {
	struct swiw_qp *qp;
	int fd;
	const struct swiw_stream_ops *ops;
	struct swiw_setup *setup; /* until MPA ends, else NULL */
	bool fpdu_setup;
	bool tx_ready;
	bool failed;
	bool dead; /* detached, waiting in the graveyard */
	uint64_t eof_due_ns; /* the peer closed: fail the stream then */
	struct swiw_stream *next, *next_dead;

	/* The SQ's lookups of its WRs' regions (swiw_qp_tx.c). */
	struct swiw_mem_cache mcache;
	uint32_t ird, ord;
	uint32_t mulpdu;
	bool bk_on; /* connected through the broker: QP's ORD applies */
	/* Connected by the CM: who hears how it went (once, then
	 * DISCONNECTED once after ESTABLISHED). */
	bool cm;
	bool cm_up; /* ESTABLISHED was reported */
	bool cm_done; /* the last event was reported */
	void (*cm_cb)(void *arg, const struct swiw_cm_event *ev);
	void *cm_arg;

	/* Transmit. */
	struct swiw_ddp_tx dtx;
	enum tx_kind kind;
	uint32_t slot; /* TX_SQE: its infl[] entry */
	uint8_t sq_op;
	int phase; /* WRITE_IMM: 0 the Write, 1 the Immediate Data */
	uint32_t imm;
	struct seg_src src[SWIW_MAX_SGE];
	uint32_t nsrc;
	uint8_t inl[SWIW_MAX_INLINE];
	uint32_t msn_send, msn_rreq;
	uint32_t atomic_id;
	/* TX_SQE READ: the sinks still to be asked for. */
	struct rd_sink rd_sink[SWIW_MAX_SGE_RD];
	uint32_t rd_nsink, rd_next;
	bool rd_more; /* more sinks wait for ORD room */
	uint32_t rd_rkey;
	uint64_t rd_raddr;
	bool msg_cut; /* the current message is all in the ring */

	struct infl *infl;
	uint32_t infl_mask, infl_head, infl_tail;
	struct rd_out rd[SWIW_MAX_ORD];
	uint32_t rd_head, rd_tail;

	/* Receive. */
	struct rxbuf rqe;
	bool cq_full; /* a completion was lost: the QP fails */
	uint32_t vendor_err; /* the TERMINATE's codes, for the failed WRs */

	/*
	 * The link to the backend's lower half (swiw_backend.h,
	 * swiw_stream_lower.c): the SQ goes out as txds, receptions come
	 * back as events.
	 */
	const struct swiw_backend *be;
	bool rtr_event; /* the peer's first message comes as an event */
	uint32_t hs_id; /* stream_id */
	uint32_t hs_interest; /* in-process: the socket's epoll events */
	/* Out of the epoll set while a program polls it (sock_mute in
	 * swiw_engine.c); hs_interest is what it has when it comes back. */
	bool sock_muted;
	struct swiw_bqueue txq, evq;
	struct swiw_ring txr; /* producer view */
	struct swiw_ring evr; /* consumer view */
	uint32_t ev_taken; /* events consumed since the last doorbell */
	uint64_t ev_total; /* events consumed, ever */
	uint64_t in_total; /* of them, the peer's input (not SENT) */
	bool tx_rung; /* txds published since the last doorbell */
	/* The transmit ring stayed full after a doorbell: the lower half
	 * waits for transport room, which brings the pump back. */
	bool tx_full;
	/* The SQ's head waits for a Read or Atomic Response (ORD, a fence):
	 * the response's arrival, an event of this stream, pumps again. */
	bool rd_wait;
	struct swiw_mr *bounce_mr; /* inline data: a slot per txd */
	uint8_t *bounce;
	size_t bounce_len;
};

/*
 * txd ids: a WR's infl[] entry, or none. The txd whose SENT completes
 * the WR (its message's last, SWIW_TXD_ID_LAST) says so: the others of
 * the WR ask for SENT now and then only to bring the pump back, and a
 * SENT of theirs must not complete it while the rest is still to go.
 */
#define SWIW_TXD_ID_WR (1ull << 32)
#define SWIW_TXD_ID_LAST (1ull << 33)

static inline int swiw_acc_bits(int ibv)
{
	return (ibv & IBV_ACCESS_LOCAL_WRITE ? SWIW_ACC_LOCAL_WRITE : 0) |
	       (ibv & IBV_ACCESS_REMOTE_WRITE ? SWIW_ACC_REMOTE_WRITE : 0) |
	       (ibv & IBV_ACCESS_REMOTE_READ ? SWIW_ACC_REMOTE_READ : 0) |
	       (ibv & IBV_ACCESS_REMOTE_ATOMIC ? SWIW_ACC_REMOTE_ATOMIC : 0);
}

static inline uint32_t swiw_stream_qpn(const struct swiw_stream *s)
{
	return s->qp->vqp.qp.qp_num;
}

void swiw_eng_assert_held(void);
bool swiw_eng_poller_waits(void);
bool swiw_eng_sq_held(const struct swiw_qp *qp);
int swiw_eng_start(void);
int swiw_eng_epoll_ctl(int op, int fd, uint32_t events, void *ptr);
void swiw_eng_doorbell(void);
void swiw_eng_deadline(uint64_t due_ns);
void swiw_eng_watch_helper(int fd);
void swiw_eng_note_deep(void);

/* swiw_stream.c: lifecycle and errors */
void swiw_stream_event(struct swiw_stream *s, uint32_t events);
bool swiw_stream_pump(struct swiw_stream *s);
void swiw_stream_pump_end(struct swiw_stream *s, uint32_t tail);
bool swiw_streams_pump_all(void);
bool swiw_stream_poll_direct(bool *moved, bool *input);
bool swiw_streams_sock_mute(bool on);
void swiw_streams_reap(void);
int swiw_streams_timers(void);
void swiw_stream_qp_error(struct swiw_qp *qp);
void swiw_stream_detach(struct swiw_qp *qp);
void swiw_stream_push_cqe(struct swiw_stream *s, struct swiw_cq *cq,
			  struct swiw_cqe *e);
void swiw_stream_sq_drain(struct swiw_stream *s);
void swiw_stream_peer_eof(struct swiw_stream *s);
/* The peer closed its side during MPA, or its grace ended. */
void swiw_stream_peer_closed(struct swiw_stream *s);
void swiw_stream_list(struct swiw_stream *s);
void swiw_stream_free(struct swiw_stream *s);
struct swiw_stream *swiw_streams_first(void);
/*
 * The stream ends: TERMINATE for @v (best effort), the QP to error, the
 * send WR the failure concerns with @sq_status (-1: none), the receive
 * in progress with the table's local status, everything else flushed,
 * and the async event @ev (0: none).
 */
void swiw_stream_fail(struct swiw_stream *s, enum swiw_violation v,
		      const void *seg, uint32_t seg_len, int sq_status,
		      enum ibv_event_type ev);
/* The peer broke the protocol (@v): TERMINATE, and the table's event. */
void swiw_stream_violation(struct swiw_stream *s, enum swiw_violation v,
			   const void *seg, uint32_t seg_len);

/* swiw_setup_mpa.c: MPA, until the lower half takes the socket */
void swiw_stream_mpa_events(struct swiw_stream *s);
int swiw_stream_mpa_cfg(struct swiw_mpa_cfg *c);
/* The socket closed: true if the stream was redialed instead. */
bool swiw_setup_peer_closed(struct swiw_stream *s);
/* The MPA deadline: true if it passed at @now, else lowers *@best. */
bool swiw_setup_timer(struct swiw_stream *s, uint64_t now, uint64_t *best);
/* swiw_setup_cm.c: what the CM hears; under the engine lock */
void swiw_cm_report(struct swiw_stream *s, int type, int status);

/*
 * swiw_qp_tx.c: publishes what can go now as txds and rings the lower
 * half; true if anything moved.
 */
bool swiw_tx_pump_work(struct swiw_stream *s);

/*
 * Between messages, nothing rung or waiting, the SQ empty and armed:
 * what next_sqe would find, so the pump has nothing to do. A polling
 * program looks twice a poll; inline, the look costs no call.
 */
static inline bool swiw_tx_idle(const struct swiw_stream *s)
{
	return s->kind == TX_NONE && !s->rd_more && !s->tx_rung &&
	       !s->tx_full && !s->rd_wait && s->ops->txd && !s->failed &&
	       s->tx_ready && !swiw_ring_cons_slot(&s->qp->sq_eng) &&
	       __atomic_load_n(&s->qp->sq_armed, __ATOMIC_ACQUIRE);
}

static inline bool swiw_tx_pump(struct swiw_stream *s)
{
	return !swiw_tx_idle(s) && swiw_tx_pump_work(s);
}
int swiw_tx_msg_start(struct swiw_stream *s, const struct swiw_rdmap_msg *m);

/* swiw_complete.c: completions of what the peer sent */
void swiw_srq_limit_fire(struct swiw_stream *s, uint32_t limit, uint32_t avail);

/*
 * A message of the peer ended whole (a lower half's event): its
 * completion. @bytes is a Send's length, or for Immediate Data the
 * length of the Write before it (@after_write); @mirror_inv: a Send with
 * Invalidate's STag goes from the provider's table too.
 */
void swiw_rx_complete(struct swiw_stream *s, const struct swiw_ddp_seg *g,
		      uint64_t rqe_id, uint32_t bytes, bool after_write,
		      bool mirror_inv);
enum swiw_mpa_rtr swiw_rx_rtr_kind(const struct swiw_ddp_seg *g);

/* swiw_stream_lower.c: the link to the backend's lower half */
int swiw_link_init(struct swiw_stream *s);
void swiw_link_fini(struct swiw_stream *s);
int swiw_link_attach(struct swiw_stream *s);
/* The kernel helper's file is readable, or a poller looks at its event
 * rings without asking it: true if any stream took an event. */
bool swiw_streams_kernel_event(void);
bool swiw_streams_cq_armed(void);

/* swiw_setup_broker.c, from the engine loop */
bool swiw_conn_is_broker(const void *ptr);
void swiw_conn_broker_event(void *ptr);
void swiw_conn_run(void);
int swiw_conn_timeout_ms(void);
bool swiw_conn_redial(struct swiw_qp *qp, int err);

#endif /* SWIW_STREAM_H */
