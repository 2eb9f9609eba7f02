/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The lower half of a helper stream (swiw-abi.h, HELPER STREAMS): what
 * swiw.ko does behind /dev/swiw once a socket is attached, written once
 * and compiled into the module and into the provider (whose "ring"
 * engine runs it on its progress thread, so the contract is tested
 * without a kernel).
 *
 * Transmit: txds from the stream's transmit ring, checked, their payload
 * gathered from registered memory, framed by swiw_fpdu_tx_build() and
 * handed to the transport; Read and Atomic Responses of the helper's own
 * go between messages. Receive: octets pushed in order through
 * swiw_fpdu_rx, swiw_ddp_rx_segment() with this file's regions and the
 * RQ ring, payload copied into place, and events on the event ring.
 *
 * The environment (kernel or user space) supplies memory, the transport
 * and wake-ups through struct swiw_lower_ops, and serialises every call
 * on one struct swiw_lower (a stream lock). Ring memory is shared with a
 * process that may scribble on it at any time: every element is copied
 * out once and checked as if it came from the network.
 */
#ifndef SWIW_LOWER_H
#define SWIW_LOWER_H

#include "swiw_port.h"
#include "swiw_ddp.h"
#include "swiw_fpdu.h"
#include "swiw_ring.h"

#include <rdma/swiw-abi.h>

/* mr_get, mr_invalidate: another PD's region (Linux's value; the
 * freestanding port defines only the errnos the wire core used before). */
#ifndef EPERM
#define EPERM 1
#endif

/*
 * An RQ ring and its consumer position: one per RQ or SRQ, shared by
 * every stream attached to it, under ops->rq_lock().
 */
struct swiw_lower_rq {
	struct swiw_ring ring;
	u32 max_sge; /* RQEs with more SGEs are a local error */
};

/* A registered region, as mr_get() found it. */
struct swiw_lower_mr {
	void *handle; /* the environment's; held until mr_put() */
	u64 base; /* the address of its first octet (the iova) */
	u64 len;
	u32 access; /* SWIW_ACC_* (swiw_ddp.h) */
};

struct swiw_lower_ops {
	/*
	 * Finds the valid region @stag names (key included) and holds it:
	 * 0, -ENOENT, or -EPERM for a region of another PD than the
	 * stream's (not held). Regions of the stream's file (or process)
	 * only.
	 */
	int (*mr_get)(void *env, u32 stag, struct swiw_lower_mr *mr);
	void (*mr_put)(void *env, void *handle);
	/* Invalidates @stag: 0, -ENOENT, -EPERM (another PD's), or
	 * -EACCES (cannot be). */
	int (*mr_invalidate)(void *env, u32 stag);
	/* Copies @len octets to @addr, which the caller checked lies in
	 * the held region. */
	void (*mr_write)(void *env, void *handle, u64 addr, const void *src,
			 u32 len);
	/*
	 * Describes @len octets at @addr of the held region as at most @max
	 * contiguous pieces that stay valid while it is held; returns the
	 * pieces used, 0 if @max is too few.
	 */
	u32 (*mr_map)(void *env, void *handle, u64 addr, u32 len,
		      struct swiw_iov *iov, u32 max);
	/* Applies @a atomically to the 8 octets at @addr (8-aligned, in
	 * the held region): 0 with *@orig, or -EFAULT. */
	int (*mr_atomic)(void *env, void *handle, u64 addr,
			 const struct swiw_rdmap_atomic_req *a, u64 *orig);
	/* The held region is still registered (NULL: never asked); see
	 * swiw_lower_tx_revoke. */
	bool (*mr_live)(void *env, void *handle);
	/* Serialise the streams that take RQEs from one shared RQ. */
	void (*rq_lock)(void *env, struct swiw_lower_rq *rq);
	void (*rq_unlock)(void *env, struct swiw_lower_rq *rq);
	/*
	 * Hands @n pieces (@len octets, one or several FPDUs) to the transport
	 * without blocking: returns the octets taken (0 to @len), or a
	 * negative errno when the transport failed (the stream then reports
	 * CLOSED).
	 */
	long (*send)(void *env, const struct swiw_iov *iov, u32 n, u32 len);
	/*
	 * Pull-mode receive only (swiw_lower_rx_pull; NULL otherwise): reads
	 * into @n pieces without blocking. Returns the octets read, 0 at the
	 * peer's FIN, -EAGAIN when none are waiting, or a negative errno.
	 */
	long (*recv)(void *env, const struct swiw_iov *iov, u32 n);
	/* Events were posted: wake whoever waits for them. */
	void (*wake)(void *env);
};

struct swiw_lower_cfg {
	bool crc;
	bool markers_tx;
	bool markers_rx;
	bool rtr_event; /* SWIW_ATTACH_RTR_EVENT */
	u32 ird; /* Read and Atomic Requests the peer may have outstanding */
	u32 mulpdu; /* for the helper's own Read Response segments */
	u32 tx_pos; /* marker offsets of the next octet out and in: */
	u32 rx_pos; /* 0 when attached before any FPDU (swiw-abi.h) */
	struct swiw_ring tx; /* consumer view */
	struct swiw_ring rxev; /* producer view */
	struct swiw_lower_rq *rq; /* shared; the environment owns it */
	u32 qp_access; /* SWIW_ACC_REMOTE_*: what the QP allows the peer */
	/* Pull-mode receive: where octets wait that are not yet placed. */
	u8 *stage;
	u32 stage_len; /* at least SWIW_LOWER_STAGE_MIN */
	/* A payload run this long is read straight into place rather than
	 * through the stage (0: SWIW_LOWER_DIRECT_MIN). */
	u32 direct_min;
};

/* A response of ours to a Read or Atomic Request, waiting its turn. */
struct swiw_lower_resp {
	bool atomic;
	void *mr; /* the held source region (Read Response), or NULL */
	u64 src; /* address of the first octet to send */
	struct swiw_rdmap_msg msg;
};

/*
 * A Read or Atomic Request of ours, sent and not yet answered: the
 * peer's responses must match these, oldest first (ORD of them at most).
 */
struct swiw_lower_rreq {
	bool atomic;
	u32 sink_stag;
	struct swiw_ddp_progress prog; /* the sink's TO range and length */
};

/* The RQE the current untagged message goes into. */
struct swiw_lower_rqe {
	bool valid;
	bool bad; /* an SGE failed its checks: SWIW_V_DDP_CATASTROPHIC */
	u64 id;
	u32 nsge;
	u64 len;
	struct {
		void *mr; /* held */
		u64 addr;
		u32 len;
	} sge[SWIW_MAX_SGE];
};

/* Pieces one SGE of a segment may map to (65535 octets over 4 KiB pages). */
#define SWIW_LOWER_MAP_MAX 20
#define SWIW_LOWER_ULPDU_IOV (1 + SWIW_TXD_SGE * SWIW_LOWER_MAP_MAX)
#define SWIW_LOWER_FRAME_IOV \
	(SWIW_LOWER_ULPDU_IOV + 2 + 2 * SWIW_FPDU_MAX_MARKERS)
/*
 * Transmit batches: up to SWIW_LOWER_BATCH FPDUs, of up to
 * SWIW_LOWER_BATCH_IOV pieces in all, go to the transport in one send().
 */
#define SWIW_LOWER_BATCH 16
#define SWIW_LOWER_BATCH_IOV 1024
/*
 * Event reservation: reception needs this many free event slots before it
 * starts an FPDU (the RTR event, then a SEGMENT or the VIOLATION), and
 * transmit leaves them free for it.
 */
#define SWIW_LOWER_RX_EVENTS 2
/* The smallest event ring: a stall then means half of it is unread. */
#define SWIW_LOWER_RXEV_MIN 8
/* Events that found no room (at most a SENT failure and the end of
 * reception), posted at the next doorbell. */
#define SWIW_LOWER_PEND 4
/*
 * Pull-mode receive: a payload run this long goes straight into place.
 * Below it a second read costs more than the copy out of the stage: one
 * recvmsg() on loopback is worth a copy of some 16 KiB.
 */
#define SWIW_LOWER_DIRECT_MIN 16384
/* What is read behind such a run: pad, CRC, and the next FPDU's head. */
#define SWIW_LOWER_RX_TAIL (8 + SWIW_FPDU_PEEK_MAX)
#define SWIW_LOWER_STAGE_MIN 4096
/* Pieces of one such read: the destination's, then the stage's. */
#define SWIW_LOWER_RX_IOV (SWIW_MAX_SGE * SWIW_LOWER_MAP_MAX + 1)

/* One FPDU of the batch in hand, until the transport took all of it. */
struct swiw_lower_frame {
	bool txd; /* a txd's, else a response's */
	bool last; /* a response's last segment */
	u32 iov_end; /* past its last piece in the batch */
	u32 nmr;
	void *mr[SWIW_TXD_SGE]; /* a txd's regions, held */
	struct swiw_txd t; /* the txd, copied out once */
	u8 hdr[SWIW_DDP_HDR_MAX]; /* a response's header */
	struct swiw_fpdu_frame f; /* its markers, pad and CRC */
};

/*
 * Per stream; the caller allocates it (it is large) and keeps it. The
 * members are the implementation's: use the functions.
 */
struct swiw_lower {
	const struct swiw_lower_ops *ops;
	void *env;
	struct swiw_lower_cfg cfg;

	/* Transmit */
	struct swiw_fpdu_tx ftx;
	bool tx_failed; /* a bad txd or the transport: nothing more goes out */
	bool in_msg; /* the last frame built left a provider message open */
	u32 tx_take; /* the next txd to take; cfg.tx.pos: the next to retire */
	struct swiw_lower_frame bf[SWIW_LOWER_BATCH];
	u32 bf_head, bf_n; /* frames not wholly sent, oldest first */
	u32 ev_owed; /* SENT events those frames will post */
	struct swiw_iov biov[SWIW_LOWER_BATCH_IOV]; /* their pieces */
	u32 biov_pos, biov_n; /* the first piece not wholly sent; the end */
	u64 biov_left; /* octets from biov_pos on */
	struct swiw_iov ulpdu[SWIW_LOWER_ULPDU_IOV];
	struct swiw_ddp_tx resp_tx; /* the response being cut */
	bool resp_busy;
	struct swiw_lower_resp resp[SWIW_MAX_IRD];
	u32 resp_head, resp_cut, resp_tail; /* oldest held, being cut, end */
	u32 msn_aresp; /* MSN of our next Atomic Response (queue 3) */
	struct swiw_lower_rreq rreq[SWIW_MAX_ORD]; /* FIFO */
	u32 rreq_head, rreq_tail;

	/* Receive */
	struct swiw_fpdu_rx frx;
	struct swiw_ddp_rx drx;
	bool rx_done; /* VIOLATION, TERMINATE or CLOSED decided */
	bool rx_mid; /* an FPDU is under way (its events are reserved) */
	bool first_seen; /* the first message's END was seen */
	bool rtr_write; /* the current segment is the RTR's zero Write */
	bool seg_ok;
	struct swiw_ddp_seg seg;
	struct swiw_ddp_dest dst;
	u8 seg_hdr[SWIW_DDP_HDR_MAX]; /* the segment's header, as received */
	u32 seg_hdr_len;
	struct swiw_lower_mr tmr; /* the current tagged segment's region */
	bool tmr_held;
	u64 t_acc; /* octets of the tagged message under way */
	struct swiw_lower_rqe rqe;
	struct swiw_sge rqe_sge[SWIW_MAX_SGE]; /* an RQE's SGEs, copied */
	u64 write_acc, last_write_len;
	bool after_write;
	/* Pull mode: octets read into cfg.stage, not yet fed */
	u32 st_head, st_tail;
	struct swiw_iov rx_iov[SWIW_LOWER_RX_IOV];
	u8 rx_small_run; /* short FPDUs in a row */

	/* Events */
	bool stalled; /* the event ring was full: wait for a doorbell */
	bool wake_due;
	/* Event slots from cfg.rxev.pos up to here were seen free: only
	 * this side fills them, so they stay free until it does. */
	u32 ev_free_to;
	u32 npend;
	struct swiw_rxev pend[SWIW_LOWER_PEND];
};

/*
 * Sets @l up for a stream attached before any FPDU. Returns 0, or
 * -EINVAL for a missing op or a cfg it cannot run: rings of 2^k slots
 * with strides that hold their element (multiples of 8), an event ring
 * of at least SWIW_LOWER_RXEV_MIN slots, an RQ ring whose stride holds
 * max_sge (<= SWIW_MAX_SGE) SGEs, mulpdu above SWIW_DDP_HDR_MAX, a
 * stage of at least SWIW_LOWER_STAGE_MIN octets if any. IRD above
 * SWIW_MAX_IRD is cut to it.
 *
 * Every incoming WRITE, READ and atomic needs its right in both the
 * region and cfg.qp_access. Every Read Response and Atomic Response
 * must answer the oldest Read or Atomic Request this stream sent that
 * is not answered yet: its sink STag, TO range, length and order.
 *
 * Calling rules: every call on one @l is serialised by the caller.
 * Reception may queue responses: call swiw_lower_tx() after
 * swiw_lower_rx() took octets. After swiw_lower_doorbell(), call
 * swiw_lower_tx() and feed the octets swiw_lower_rx() left again.
 */
int swiw_lower_init(struct swiw_lower *l, const struct swiw_lower_cfg *cfg,
		    const struct swiw_lower_ops *ops, void *env);

/*
 * Receive: feeds @len octets that followed the last ones fed. Returns 0
 * with *@used octets consumed: fewer than @len only when reception
 * stopped (event ring full: swiw_lower_stalled(); or a VIOLATION,
 * TERMINATE or CLOSED posted: swiw_lower_rx_done()). The environment
 * keeps the rest in the socket and feeds it again after a doorbell.
 * A TERMINATE of the peer that fails its checks ends reception with a
 * VIOLATION whose hdr is that TERMINATE: the provider never answers it.
 */
int swiw_lower_rx(struct swiw_lower *l, const void *data, size_t len,
		  size_t *used);

/*
 * Pull-mode receive (cfg.stage and ops->recv given): reads from the
 * transport and feeds what it read, at most @reads reads, until nothing
 * is waiting or reception stops as with swiw_lower_rx(). A payload run of
 * cfg.direct_min octets or more is read straight into its
 * destination, with the FPDU's trailer and the next head behind it in
 * the same read. The transport's end is reported as by
 * swiw_lower_rx_closed(). Returns 1 if @reads ran out (octets may still
 * be waiting), 0 otherwise, or -EINVAL without a stage or recv op.
 */
int swiw_lower_rx_pull(struct swiw_lower *l, u32 reads);

/* The QP's remote access rights (cfg.qp_access) changed. */
void swiw_lower_set_access(struct swiw_lower *l, u32 qp_access);

/* The transport ended (@err 0: FIN, else a positive errno): CLOSED. */
void swiw_lower_rx_closed(struct swiw_lower *l, int err);

/*
 * Transmit: frames and hands to the transport what the transmit ring
 * and the response FIFO hold, until the transport takes no more or
 * nothing is left, in batches of up to SWIW_LOWER_BATCH FPDUs a send. Returns 1 when octets are waiting for transport room
 * (call again when it has some), 0 when idle or stopped. A txd's ULPDU
 * is at least a tagged header (14 octets: an RTR's zero-length Write)
 * and, with markers, short enough for its last marker's FPDUPTR (the
 * provider's MULPDU always is); txd flags other than SWIW_SLOT_VALID,
 * SWIW_TXD_EVENT and SWIW_TXD_INVALIDATE fail it with EINVAL.
 */
int swiw_lower_tx(struct swiw_lower *l);

/*
 * A region was deregistered. A frame not wholly handed to the transport
 * whose payload comes from a region no longer live (ops->mr_live) cannot
 * go on: its owner may reuse the memory once the deregistration returns.
 * The stream's framing cannot be kept without it, so transmission stops
 * for good and the stream ends in a local catastrophic error (a
 * VIOLATION event). Returns whether it did. Called by the stream's owner,
 * as swiw_lower_tx is.
 */
bool swiw_lower_tx_revoke(struct swiw_lower *l);

/* A doorbell: the event ring may have room again. */
void swiw_lower_doorbell(struct swiw_lower *l);

static inline bool swiw_lower_stalled(const struct swiw_lower *l)
{
	return l->stalled;
}

static inline bool swiw_lower_rx_done(const struct swiw_lower *l)
{
	return l->rx_done;
}

/*
 * Receive queued responses of ours (Read, Atomic) that swiw_lower_tx()
 * would send: an environment that receives where it cannot send (the
 * helper's softirq) passes them to a context that can.
 */
static inline bool swiw_lower_tx_due(const struct swiw_lower *l)
{
	return !l->tx_failed && (l->resp_busy || l->resp_cut != l->resp_tail);
}

/*
 * Payload octets of the responses swiw_lower_tx_due() names, counted
 * until they pass @max: whether they are few enough to send at once
 * from where they became due, rather than handed to a worker.
 */
static inline u64 swiw_lower_resp_octets(const struct swiw_lower *l, u64 max)
{
	u64 n = 0;
	u32 k;

	for (k = l->resp_cut; k != l->resp_tail && n <= max; k++)
		n += l->resp[k % SWIW_MAX_IRD].msg.len;
	return n;
}

/* An event is posted that the consumer has not taken (for poll()). */
bool swiw_lower_events_pending(const struct swiw_lower *l);

/*
 * Detach: drops every region held, the frame in progress and the
 * responses not sent. If an RQE was taken for a message not complete
 * and reception had not already ended, posts CLOSED with status
 * ECANCELED and SWIW_RXEV_RQE (swiw-abi.h: every RQE taken is reported
 * once); the provider drains the event ring after DETACH.
 */
void swiw_lower_fini(struct swiw_lower *l);

#endif /* SWIW_LOWER_H */
