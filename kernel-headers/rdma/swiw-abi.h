/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * swiw-abi.h: the contract between the swiw provider and the engine that
 * runs its queues, either the in-process engine (a thread of the same
 * process) or the kernel helper behind /dev/swiw. Both implement exactly
 * this, so the provider is the same code over either.
 *
 * Usable from C in user space and in the kernel: __u32-style types,
 * __aligned_u64, explicit padding, no pointers, the same layout on 32- and
 * 64-bit ABIs.
 *
 * RINGS AND OWNERSHIP
 * Every queue (send queue SQ, receive queue RQ, shared receive queue SRQ,
 * completion queue CQ, and a stream's transmit and receive-event rings) is
 * an array of 2^k slots in memory both sides see. Each slot starts with a
 * flags word whose SWIW_SLOT_VALID bit says who owns it; there are no
 * shared indices (each side keeps its own position, slot = pos & (n - 1)),
 * so neither side ever trusts a count the other could corrupt.
 *
 *  producer: waits for VALID clear in slot[put & mask]; writes the
 *            element; stores flags | VALID with release ordering; put++.
 *  consumer: loads flags with acquire ordering; if VALID, reads the
 *            element (copying what it keeps: the producer may reuse the
 *            slot at once); stores 0 with release ordering; get++.
 *
 * In C11 terms: atomic_store_explicit(flags, v, memory_order_release) and
 * atomic_load_explicit(flags, memory_order_acquire); in the kernel
 * smp_store_release() and smp_load_acquire(). The acquire/release pair
 * orders the element's bytes with its flag on every architecture; no
 * other barrier is needed in coherent memory. The provider produces into
 * SQ/RQ/SRQ and the transmit ring and consumes CQ and the receive-event
 * ring; the engine the other way round. A side that finds a slot it
 * should own still VALID treats the queue as full (producer) or empty
 * (consumer). An engine never trusts an element's contents: every length,
 * count, STag and address is checked as if it came from the network.
 *
 * DOORBELLS
 * The provider rings the engine only when the queue may have been idle:
 * in-process, an eventfd write; with the helper, SWIW_IOC_DOORBELL. The
 * helper's file polls readable (POLLIN) while any of its streams has an
 * event the provider has not consumed. A
 * completion queue's arm word (struct swiw_cq_ctrl, after the last CQE)
 * asks the engine for one event on the next (or next solicited)
 * completion; the engine clears it when it fires.
 */
#ifndef SWIW_ABI_H
#define SWIW_ABI_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define SWIW_ABI_VERSION 4

/*
 * Limits the device advertises and every engine enforces on what crosses
 * this interface: SGEs per WQE, Read/Atomic Requests in flight each way,
 * regions and their size. The provider's swiw_limits.h holds the rest.
 */
#define SWIW_MAX_SGE 16 /* send and receive */
#define SWIW_MAX_IRD 128 /* inbound READs in flight, as siw */
#define SWIW_MAX_ORD 128 /* outbound READs in flight */
#define SWIW_MAX_MR 262144
#define SWIW_MAX_MR_SIZE (1ULL << 40)

/* Flags word of every slot (__u16 in WQEs, __u8 in CQEs). */
#define SWIW_SLOT_VALID 0x01

/* Work request flags (struct swiw_sqe.flags, struct swiw_rqe.flags). */
enum {
	SWIW_WQE_VALID = SWIW_SLOT_VALID,
	SWIW_WQE_INLINE = 0x0002, /* payload is in the SQE, not in SGEs */
	SWIW_WQE_SIGNALLED = 0x0004, /* completes with a CQE on success */
	SWIW_WQE_SOLICITED = 0x0008, /* Send with Solicited Event */
	SWIW_WQE_FENCE = 0x0010, /* wait for earlier READs and atomics */
	SWIW_WQE_IMM = 0x0020, /* imm_data is valid */
};

/* Operations: what an SQE asks for, and what a CQE reports. */
enum swiw_opcode {
	SWIW_OP_WRITE = 0,
	SWIW_OP_WRITE_IMM = 1, /* RDMA Write, then Immediate Data */
	SWIW_OP_SEND = 2,
	SWIW_OP_SEND_IMM = 3, /* Immediate Data carries the whole message */
	SWIW_OP_SEND_INV = 4, /* Send with Invalidate of rkey */
	SWIW_OP_READ = 5,
	SWIW_OP_FETCH_ADD = 6, /* RFC 7306 */
	SWIW_OP_CMP_SWAP = 7, /* RFC 7306 */
	SWIW_OP_LOCAL_INV = 8, /* invalidate rkey locally */
	SWIW_OP_RECV = 9, /* CQE only: a receive completed */
	SWIW_OP_RECV_RDMA_IMM = 10, /* CQE only: a Write with immediate */
	SWIW_OP_MAX
};

/* Scatter/gather element: the same layout as struct ibv_sge. */
struct swiw_sge {
	__aligned_u64 laddr;
	__u32 length;
	__u32 lkey;
};

/*
 * Send queue element: this 64-octet header, then the SGE array or the
 * inline payload. The SQ's stride (set when the QP is created, a multiple
 * of 16) is 64 + max(max_send_sge * 16, max_inline_data rounded up to 16).
 */
struct swiw_sqe {
	__aligned_u64 id; /* wr_id */
	__u16 flags; /* SWIW_WQE_* */
	__u8 num_sge;
	__u8 opcode; /* enum swiw_opcode */
	__u32 rkey; /* remote STag; STag to invalidate (SEND_INV, LOCAL_INV) */
	__aligned_u64 raddr; /* remote address (WRITE, READ, atomics) */
	__u32 imm_data; /* network order, as ibv_send_wr carries it */
	__u32 inline_len; /* octets of inline payload after the header */
	__aligned_u64 compare_add; /* CMP_SWAP compare, FETCH_ADD add */
	__aligned_u64 swap; /* CMP_SWAP swap */
	__aligned_u64 rsvd[2];
	/* struct swiw_sge sge[num_sge], or inline_len octets */
};

#define SWIW_SQE_HDR_SIZE 64

/* Receive queue element: a 16-octet header, then the SGE array. */
struct swiw_rqe {
	__aligned_u64 id; /* wr_id */
	__u16 flags; /* SWIW_WQE_VALID */
	__u8 num_sge;
	__u8 rsvd0;
	__u32 rsvd1;
	/* struct swiw_sge sge[num_sge] */
};

#define SWIW_RQE_HDR_SIZE 16

/* CQE flags. */
enum {
	SWIW_CQE_VALID = SWIW_SLOT_VALID,
	SWIW_CQE_SOLICITED = 0x02, /* the message asked for an event */
	SWIW_CQE_IMM = 0x04, /* imm_or_inv is immediate data */
	SWIW_CQE_INV = 0x08, /* imm_or_inv is the STag the peer invalidated */
};

/*
 * Completion queue element. status numbers are libibverbs' enum
 * ibv_wc_status (the provider asserts it); vendor_err carries a
 * TERMINATE's layer, error type and code (layer << 12 | etype << 8 |
 * code) when the error came from one.
 */
#define SWIW_VENDOR_ERR(layer, etype, ecode) \
	((__u32)(layer) << 12 | (__u32)(etype) << 8 | (__u32)(ecode))

struct swiw_cqe {
	__aligned_u64 id; /* wr_id */
	__u8 flags; /* SWIW_CQE_* */
	__u8 opcode; /* enum swiw_opcode of the work request */
	__u16 status;
	__u32 bytes;
	__u32 imm_or_inv;
	__u32 qp_num;
	__u32 src_qp;
	__u32 vendor_err;
};

/* After the last CQE: the arm word (one-shot, cleared when it fires). */
enum {
	SWIW_NOTIFY_NOT = 0,
	SWIW_NOTIFY_SOLICITED = 1,
	SWIW_NOTIFY_NEXT = 2, /* any completion (solicited ones included) */
};

struct swiw_cq_ctrl {
	__u32 notify;
	__u32 rsvd;
};

/*
 * HELPER STREAMS
 * With the helper, a QP's connected TCP socket is split in two halves.
 * The provider (upper half) keeps the send queue, the completion queue,
 * ORD, completions and every TERMINATE decision; it also runs the MPA
 * Request/Reply itself. The helper (lower half) takes the socket with
 * SWIW_IOC_ATTACH right after the Request/Reply, before any FPDU either
 * way, and from then on does everything that must happen while the
 * owning process may not run:
 *  - transmit: DDP segments the provider cut (struct swiw_txd), framed
 *    (MPA length, markers at the socket's own sequence positions, pad,
 *    CRC), payload gathered from registered memory;
 *  - receive: deframing, CRC, DDP/RDMAP validation, placement of tagged
 *    payload into registered memory and of untagged payload into the
 *    receive WRs it takes from the RQ ring (an SRQ's ring may be shared
 *    by several streams);
 *  - Read and Atomic Requests of the peer, answered in order by the
 *    helper itself (IRD from ATTACH), interleaved with the provider's
 *    messages only between a segment with L and the next;
 *  - remote invalidation (Send with Invalidate) of the file's regions.
 * The marker origin of each direction is the socket's sequence number
 * at ATTACH: the provider must have read exactly the MPA frames and
 * written nothing after its own. Octets already queued are processed
 * at ATTACH.
 *
 * A stream's transmit ring: one DDP segment per txd, the header built by
 * the provider (hdr_len octets, at most 70), the payload (payload_len
 * octets, the sum of sge[].length; num_sge at most SWIW_TXD_SGE) gathered
 * from regions of this file by lkey. hdr_len + payload_len is the ULPDU
 * (at least 14, a tagged header; at most 65535; the provider keeps it in its
 * MULPDU). The helper clears a txd's VALID only when the txd is fully on
 * the socket (accepted by TCP), so the provider may keep what a txd
 * points at until then.
 * A txd the helper cannot send (bad lengths, an lkey that is not a
 * region of this file or a range outside it) is not sent, nor is
 * anything after it: the helper posts SWIW_RXEV_SENT for it with a
 * positive errno in status and stops transmitting.
 * SWIW_TXD_INVALIDATE is no segment: hdr holds an STag (host order, 4
 * octets, hdr_len 4) that the helper invalidates in ring order, and
 * SWIW_RXEV_SENT always follows with status 0, or ENOENT (no such
 * region) or EACCES.
 */
#define SWIW_TXD_HDR_MAX 72 /* the largest DDP/RDMAP header, padded */
#define SWIW_TXD_SGE 4

struct swiw_txd {
	__aligned_u64 id; /* returned in the completion event, if asked */
	__u16 flags; /* SWIW_SLOT_VALID | SWIW_TXD_* */
	__u8 num_sge;
	__u8 hdr_len;
	__u32 payload_len;
	__u8 hdr[SWIW_TXD_HDR_MAX];
	struct swiw_sge sge[SWIW_TXD_SGE];
};

enum {
	SWIW_TXD_EVENT = 0x0100, /* post SWIW_RXEV_SENT once on the wire */
	SWIW_TXD_INVALIDATE = 0x0200, /* local invalidate of hdr's STag */
};

/*
 * A stream's receive-event ring: what the helper placed or could not
 * place, and what it sent. Placement itself is done by then. Events:
 *  SEGMENT, for messages the upper half completes, once each, when its
 *    last segment has been placed; hdr holds that segment's header
 *    (hdr_len octets, as received, at most 70):
 *    - an untagged message on queue 0 (Send family, Immediate Data):
 *      id is the RQE it went into, flags has SWIW_RXEV_RQE, len the
 *      message's octets; for Immediate Data, len is instead the length
 *      of the RDMA Write message received just before it on the stream
 *      (0 when the message before it was not a Write), and flags has
 *      SWIW_RXEV_AFTER_WRITE when there was one;
 *    - a Read Response (the READ's sink STag in hdr), len its octets;
 *    - an Atomic Response (the original value in hdr);
 *    - a TERMINATE of the peer; the helper receives nothing after it;
 *    - with SWIW_ATTACH_RTR_EVENT, also the first message of the
 *      stream, whatever it is (the RTR of RFC 6581), id 0, before any
 *      other event for it.
 *    Whole RDMA Writes, Read Requests and Atomic Requests post nothing.
 *  SENT: a txd with SWIW_TXD_EVENT (or a failed one, see above) is on
 *    the socket; id is the txd's, status 0 or why it was not sent.
 *  VIOLATION: the peer broke the protocol, or placement failed; the
 *    helper receives nothing more. violation is the wire core's enum
 *    swiw_violation, hdr the first octets of the offending ULPDU (as many
 *    as it has up to 70; when known, else hdr_len 0) and len its length,
 *    for the TERMINATE the provider sends. If it had taken an RQE for a
 *    message not yet complete, id is that RQE and flags has
 *    SWIW_RXEV_RQE.
 *  CLOSED: the TCP stream ended (status 0 for a FIN, else the socket's
 *    errno); the helper receives nothing more. An RQE taken and not
 *    completed is reported as for VIOLATION.
 * An RQE the helper took is always reported exactly once: in a SEGMENT
 * or with SWIW_RXEV_RQE in the event that ends reception.
 *
 * When the helper finds the event ring full, it stops (receiving and
 * transmitting) until the next SWIW_IOC_DOORBELL of that stream: the
 * provider rings it after any drain that consumed at least half the
 * ring's slots, which a stall always leads to.
 */
enum swiw_rxev_type {
	SWIW_RXEV_SEGMENT = 1, /* a message ended; hdr holds its header */
	SWIW_RXEV_SENT = 2, /* a txd with SWIW_TXD_EVENT went out */
	SWIW_RXEV_VIOLATION = 3, /* the stream failed: code below */
	SWIW_RXEV_CLOSED = 4, /* the peer closed the TCP stream */
};

enum {
	SWIW_RXEV_RQE = 0x0100, /* id is an RQE taken from the RQ ring */
	SWIW_RXEV_AFTER_WRITE = 0x0200, /* Immediate Data after a Write */
};

struct swiw_rxev {
	__aligned_u64 id; /* txd id (SENT), RQE id (SWIW_RXEV_RQE) */
	__u16 flags; /* SWIW_SLOT_VALID | SWIW_RXEV_* */
	__u8 type; /* enum swiw_rxev_type */
	__u8 hdr_len;
	__u32 len; /* payload octets placed */
	__u32 violation; /* the wire core's enum swiw_violation */
	__u32 status; /* SENT, CLOSED: 0 or a positive errno */
	__u8 hdr[SWIW_TXD_HDR_MAX];
};

/* /dev/swiw commands. */
#define SWIW_IOC_MAGIC 0xb5

/*
 * struct swiw_ioc_version.flags (once reserved, 0): what the helper
 * implements beyond memory registration and rings. A helper without
 * SWIW_VERSION_DATAPATH (the skeleton swiw.ko) fails ATTACH, DOORBELL and
 * DETACH with EOPNOTSUPP; the provider then keeps its in-process engine.
 */
enum {
	SWIW_VERSION_DATAPATH = 0x1,
};

struct swiw_ioc_version {
	__u32 abi_version; /* out: SWIW_ABI_VERSION of the helper */
	__u32 flags; /* out: SWIW_VERSION_*; ignore unknown bits */
};

/*
 * pd: the protection domain, any number the provider keeps unique among
 * its live PDs. A stream finds only the regions of its own PD (ATTACH's
 * pd): another PD's is not associated, as with a hardware RNIC.
 */
struct swiw_ioc_reg_mr {
	__aligned_u64 addr; /* in */
	__aligned_u64 length; /* in */
	__u32 access; /* in: IBV_ACCESS_* */
	__u32 stag; /* out */
	__u32 pd; /* in */
	__u32 rsvd; /* 0 */
	/* in (ABI 4): where the region starts in the address space of every
	 * access to it, remote (tagged offsets), receive SGEs and txd
	 * gathers alike; addr for ibv_reg_mr. */
	__aligned_u64 iova;
};

struct swiw_ioc_dereg_mr {
	__u32 stag; /* in */
	__u32 rsvd;
};

enum swiw_queue_kind {
	SWIW_QUEUE_SQ = 1,
	SWIW_QUEUE_RQ = 2,
	SWIW_QUEUE_CQ = 3,
	SWIW_QUEUE_TX = 4,
	SWIW_QUEUE_RXEV = 5,
};

struct swiw_ioc_queue {
	__u32 kind; /* in: enum swiw_queue_kind */
	__u32 num; /* in: slots, a power of two */
	__u32 stride; /* in: octets per slot, a multiple of 16 */
	__u32 id; /* out: names the queue in other commands */
	__aligned_u64 mmap_offset; /* out: mmap(2) offset of the ring */
	__aligned_u64 mmap_size; /* out: octets to map */
};

/* What a QP allows its peer (ATTACH, SET_ACCESS). */
enum {
	SWIW_ACCESS_REMOTE_WRITE = 0x2,
	SWIW_ACCESS_REMOTE_READ = 0x4,
	SWIW_ACCESS_REMOTE_ATOMIC = 0x8,
};

enum {
	SWIW_ATTACH_CRC = 0x1,
	SWIW_ATTACH_MARKERS_TX = 0x2,
	SWIW_ATTACH_MARKERS_RX = 0x4,
	SWIW_ATTACH_RTR_EVENT = 0x8, /* report the first message received */
};

/*
 * Hands a connected TCP socket, MPA Request/Reply done, to the helper
 * (see HELPER STREAMS). sq_id and cq_id are 0: the provider keeps its
 * send and completion queues. rq_id is an RQ ring (an SRQ's ring may be
 * given to several streams). pd is the QP's protection domain (as in
 * struct swiw_ioc_reg_mr): tagged access, receive SGEs, txd gathers and
 * invalidations find regions of that PD only. The rings stay the file's;
 * the socket stays the provider's fd, which must not be read or written
 * until DETACH.
 */
struct swiw_ioc_attach {
	__s32 sock_fd; /* in: connected TCP socket */
	__u32 flags; /* in: SWIW_ATTACH_* as negotiated */
	__u32 sq_id, rq_id, cq_id; /* in: the QP's queues (rq: RQ or SRQ) */
	__u32 tx_id, rxev_id; /* in: the stream's rings */
	__u32 ird, ord; /* in: as negotiated */
	__u32 stream_id; /* out */
	__u32 pd; /* in: the QP's PD */
	__u32 access; /* in: SWIW_ACCESS_REMOTE_*, what the QP allows */
};

/*
 * DOORBELL: the transmit ring has new txds (or the event ring was
 * drained); the helper sends what the socket takes at once, the rest
 * when it has room. DETACH: the helper stops at once, gives the socket
 * its own callbacks back and drops what it had not sent; an RQE it had
 * taken for a message not complete comes back in a CLOSED event
 * (status ECANCELED), so the provider drains the event ring, then
 * flushes. Closing the file detaches every stream.
 */
struct swiw_ioc_stream {
	__u32 stream_id; /* in */
	__u32 rsvd;
};

/*
 * SET_ACCESS: the QP's remote access rights changed (modify_qp): from
 * now on every incoming WRITE, READ and atomic is checked against them,
 * as against its region's.
 */
struct swiw_ioc_access {
	__u32 stream_id; /* in */
	__u32 access; /* in: SWIW_ACCESS_REMOTE_* */
};

/* Frees a ring no stream uses (EBUSY while attached); its mapping may
 * outlive it, the memory goes with the last munmap. */
struct swiw_ioc_queue_free {
	__u32 id; /* in */
	__u32 rsvd;
};

#define SWIW_IOC_VERSION _IOR(SWIW_IOC_MAGIC, 0, struct swiw_ioc_version)
#define SWIW_IOC_REG_MR _IOWR(SWIW_IOC_MAGIC, 1, struct swiw_ioc_reg_mr)
#define SWIW_IOC_DEREG_MR _IOW(SWIW_IOC_MAGIC, 2, struct swiw_ioc_dereg_mr)
#define SWIW_IOC_QUEUE _IOWR(SWIW_IOC_MAGIC, 3, struct swiw_ioc_queue)
#define SWIW_IOC_ATTACH _IOWR(SWIW_IOC_MAGIC, 4, struct swiw_ioc_attach)
#define SWIW_IOC_DOORBELL _IOW(SWIW_IOC_MAGIC, 5, struct swiw_ioc_stream)
#define SWIW_IOC_DETACH _IOW(SWIW_IOC_MAGIC, 6, struct swiw_ioc_stream)
#define SWIW_IOC_QUEUE_FREE _IOW(SWIW_IOC_MAGIC, 7, struct swiw_ioc_queue_free)
#define SWIW_IOC_SET_ACCESS _IOW(SWIW_IOC_MAGIC, 8, struct swiw_ioc_access)

#endif /* SWIW_ABI_H */
