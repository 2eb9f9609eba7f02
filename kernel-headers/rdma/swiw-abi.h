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
 * in-process, an eventfd write; with the helper, SWIW_IOC_DOORBELL. A
 * completion queue's arm word (struct swiw_cq_ctrl, after the last CQE)
 * asks the engine for one event on the next (or next solicited)
 * completion; the engine clears it when it fires.
 */
#ifndef SWIW_ABI_H
#define SWIW_ABI_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define SWIW_ABI_VERSION 1

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
 * A stream's transmit ring (kernel helper only): one DDP segment each,
 * header built by the provider, payload gathered by the helper from
 * registered memory; the helper frames it (MPA length, markers at the
 * socket's real sequence positions, pad, CRC) and sends it.
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
};

/*
 * A stream's receive-event ring (kernel helper only): what the helper
 * placed or could not place. Placement itself (tagged into registered
 * memory, untagged into the RQE it took from the RQ) is done by then.
 */
enum swiw_rxev_type {
	SWIW_RXEV_SEGMENT = 1, /* a DDP segment; hdr holds its header */
	SWIW_RXEV_SENT = 2, /* a txd with SWIW_TXD_EVENT went out */
	SWIW_RXEV_VIOLATION = 3, /* the stream failed: code below */
	SWIW_RXEV_CLOSED = 4, /* the peer closed the TCP stream */
};

struct swiw_rxev {
	__aligned_u64 id; /* txd id (SENT), RQE id (untagged SEGMENT) */
	__u16 flags; /* SWIW_SLOT_VALID */
	__u8 type; /* enum swiw_rxev_type */
	__u8 hdr_len;
	__u32 len; /* payload octets placed */
	__u32 violation; /* the wire core's enum swiw_violation */
	__u32 rsvd;
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

struct swiw_ioc_reg_mr {
	__aligned_u64 addr; /* in */
	__aligned_u64 length; /* in */
	__u32 access; /* in: IBV_ACCESS_* */
	__u32 stag; /* out */
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

enum {
	SWIW_ATTACH_CRC = 0x1,
	SWIW_ATTACH_MARKERS_TX = 0x2,
	SWIW_ATTACH_MARKERS_RX = 0x4,
};

/* Hands a connected TCP socket, MPA done, to the helper. */
struct swiw_ioc_attach {
	__s32 sock_fd; /* in: connected TCP socket */
	__u32 flags; /* in: SWIW_ATTACH_* as negotiated */
	__u32 sq_id, rq_id, cq_id; /* in: the QP's queues (rq: RQ or SRQ) */
	__u32 tx_id, rxev_id; /* in: the stream's rings */
	__u32 ird, ord; /* in: as negotiated */
	__u32 stream_id; /* out */
	__u32 rsvd[2];
};

struct swiw_ioc_stream {
	__u32 stream_id; /* in */
	__u32 rsvd;
};

#define SWIW_IOC_VERSION _IOR(SWIW_IOC_MAGIC, 0, struct swiw_ioc_version)
#define SWIW_IOC_REG_MR _IOWR(SWIW_IOC_MAGIC, 1, struct swiw_ioc_reg_mr)
#define SWIW_IOC_DEREG_MR _IOW(SWIW_IOC_MAGIC, 2, struct swiw_ioc_dereg_mr)
#define SWIW_IOC_QUEUE _IOWR(SWIW_IOC_MAGIC, 3, struct swiw_ioc_queue)
#define SWIW_IOC_ATTACH _IOWR(SWIW_IOC_MAGIC, 4, struct swiw_ioc_attach)
#define SWIW_IOC_DOORBELL _IOW(SWIW_IOC_MAGIC, 5, struct swiw_ioc_stream)
#define SWIW_IOC_DETACH _IOW(SWIW_IOC_MAGIC, 6, struct swiw_ioc_stream)

#endif /* SWIW_ABI_H */
