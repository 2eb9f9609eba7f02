/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The connection broker's two formats, shared by the client library
 * (swiw_broker_client.c), the daemon (broker/) and the tests:
 *
 * 1. swiw's private-data block, carried on the wire as the ULP private
 *    data of MPA Request and Reply frames (after the RFC 6581 word), in
 *    network byte order;
 * 2. the local protocol between a process and the broker of its network
 *    namespace: SOCK_SEQPACKET over an abstract unix socket, host byte
 *    order, one message per record.
 *
 * swiw_broker.h is the API the engine uses; it does not need this file.
 */
#ifndef SWIW_BROKER_PROTO_H
#define SWIW_BROKER_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#define SWIW_BP_ASSERT(cond, what) _Static_assert(cond, "layout: " what)

/*
 * 1. The private-data block (version 1), 36 octets:
 *
 *   0  magic     "swiw" (0x73 0x77 0x69 0x77)
 *   4  version   1; a reader refuses a version it does not know
 *   5  type      1 Request, 2 Accept, 3 Reject
 *   6  length    octets of the block; a later minor addition appends
 *                fields and raises it, an older reader ignores the tail
 *   8  src_qpn   the sender's QP number (24 bits)
 *  12  dst_qpn   the QP number the sender addresses (24 bits)
 *  16  nonce     chosen by the initiator per connection attempt; an
 *                Accept or Reject echoes it
 *  24  reason    Reject only: enum swiw_broker_reason; 0 otherwise
 *  26  reserved  0
 *  28  sq_psn    the sender QP's send PSN, if it has one yet (RTS):
 *                bit 31 set and the PSN in bits 0..23; else 0
 *  32  rq_psn    the PSN the sender QP expects to receive (RTR), the
 *                same way
 *
 * The first revision ended at 28 (no PSNs); swiw refuses such a block
 * now (reason VERSION), since a connection is let through only when the
 * initiator shows it knows a PSN the application exchanged out of band.
 *
 * The initiator sends a Request (src = its QP, dst = the peer's); the
 * responding engine answers an Accept (src = its QP, dst = the
 * initiator's); the broker, or the engine, answers a Reject in an MPA
 * Reply with R set.
 */
#define SWIW_PD_MAGIC 0x73776977u /* "swiw" */
#define SWIW_PD_VERSION 1
#define SWIW_PD_LEN 36
#define SWIW_PD_LEN_FIRST 28 /* the first revision, without PSNs */

struct swiw_pd_wire {
	__be32 magic;
	__u8 version;
	__u8 type;
	__be16 length;
	__be32 src_qpn;
	__be32 dst_qpn;
	__be32 nonce_hi;
	__be32 nonce_lo;
	__be16 reason;
	__be16 rsvd;
	__be32 sq_psn;
	__be32 rq_psn;
};
SWIW_BP_ASSERT(sizeof(struct swiw_pd_wire) == SWIW_PD_LEN, "swiw_pd_wire size");

/*
 * 2. The local protocol. The broker binds the abstract name below in its
 * network namespace (abstract names are per namespace, so each namespace
 * gets its own broker; binding the name is the lock that keeps a second
 * one out).
 *
 * A client connects a control socket and sends HELLO with one file
 * descriptor attached (SCM_RIGHTS): its end of a fresh socketpair, the
 * event socket. Requests then go over the control socket and get one
 * reply each, in order, carrying the request's seq and a status (0 or a
 * positive errno). The broker writes only CONN messages to the event
 * socket, each with the connected TCP socket attached. The session ends
 * when either socket closes; its QPs are dropped then.
 *
 * Versioning: HELLO carries SWIW_BP_VERSION. A broker that speaks another
 * version replies EPROTONOSUPPORT with its own and closes. Messages may
 * grow at their end in a later version; a receiver checks hdr.len
 * against the size it needs.
 *
 * Layouts are fixed-width with explicit padding (a 32-bit process may
 * talk to a 64-bit broker); sizes and offsets are asserted below.
 */
#define SWIW_BP_NAME "swiw-broker"
#define SWIW_BP_VERSION 2 /* 2: PSNs in EXPECT, SQ_PSN */

enum swiw_bp_type {
	SWIW_BP_HELLO = 1, /* swiw_bp_hello + event socket; reply hello */
	SWIW_BP_QP_ALLOC = 2, /* swiw_bp_hdr; reply swiw_bp_qp */
	SWIW_BP_QP_FREE = 3, /* swiw_bp_qp; reply swiw_bp_hdr */
	SWIW_BP_EXPECT = 4, /* swiw_bp_expect; reply swiw_bp_hdr */
	SWIW_BP_UNEXPECT = 5, /* swiw_bp_qp; reply swiw_bp_hdr */
	SWIW_BP_SQ_PSN = 6, /* swiw_bp_psn (at RTS); reply swiw_bp_hdr */
	SWIW_BP_CONN = 64, /* broker -> event socket, with the TCP fd */
};

struct swiw_bp_hdr {
	__u16 type; /* enum swiw_bp_type */
	__u16 len; /* of the whole message */
	__u32 seq; /* request's, echoed in the reply */
	__s32 status; /* replies: 0 or a positive errno */
	__u32 rsvd;
};
SWIW_BP_ASSERT(sizeof(struct swiw_bp_hdr) == 16, "swiw_bp_hdr size");

struct swiw_bp_hello {
	struct swiw_bp_hdr hdr;
	__u32 version; /* SWIW_BP_VERSION */
	__u32 pid; /* request: the client's; reply: the broker's */
	__u16 port; /* reply: the TCP port the broker listens on */
	__u16 rsvd;
	__u32 rsvd2;
};
SWIW_BP_ASSERT(sizeof(struct swiw_bp_hello) == 32, "swiw_bp_hello size");

struct swiw_bp_qp {
	struct swiw_bp_hdr hdr;
	__u32 qpn;
	__u32 rsvd;
};
SWIW_BP_ASSERT(sizeof(struct swiw_bp_qp) == 24, "swiw_bp_qp size");

struct swiw_bp_expect {
	struct swiw_bp_hdr hdr;
	__u32 qpn;
	__u32 peer_qpn;
	__u8 peer_gid[16];
	__u8 role; /* enum swiw_broker_role */
	__u8 rsvd[3];
	__u32 rq_psn; /* the PSN the QP expects to receive */
};
SWIW_BP_ASSERT(sizeof(struct swiw_bp_expect) == 48, "swiw_bp_expect size");
SWIW_BP_ASSERT(offsetof(struct swiw_bp_expect, peer_gid) == 24,
	       "swiw_bp_expect.peer_gid");
SWIW_BP_ASSERT(offsetof(struct swiw_bp_expect, rq_psn) == 44,
	       "swiw_bp_expect.rq_psn");

/* The QP's send PSN, once it has one: a Request can be checked by it. */
struct swiw_bp_psn {
	struct swiw_bp_hdr hdr;
	__u32 qpn;
	__u32 sq_psn;
};
SWIW_BP_ASSERT(sizeof(struct swiw_bp_psn) == 24, "swiw_bp_psn size");

/* An IPv6 address (IPv4 as ::ffff:a.b.c.d) and port, host order. */
struct swiw_bp_addr {
	__u8 addr[16];
	__u32 scope_id;
	__u16 port;
	__u16 rsvd;
};
SWIW_BP_ASSERT(sizeof(struct swiw_bp_addr) == 24, "swiw_bp_addr size");

/* The largest MPA Request: 20-octet header and 256 of private data. */
#define SWIW_BP_REQ_MAX 276

struct swiw_bp_conn {
	struct swiw_bp_hdr hdr;
	__u32 qpn; /* the local QP it is for */
	__u32 peer_qpn; /* the Request's src_qpn */
	__u32 nonce_hi; /* the Request's nonce */
	__u32 nonce_lo;
	struct swiw_bp_addr peer; /* getpeername() of the socket */
	struct swiw_bp_addr local; /* getsockname() */
	__u16 req_len; /* octets of req: the whole MPA Request */
	__u8 rsvd[6];
	__u8 req[SWIW_BP_REQ_MAX];
	__u8 rsvd2[4];
};
SWIW_BP_ASSERT(offsetof(struct swiw_bp_conn, peer) == 32, "swiw_bp_conn.peer");
SWIW_BP_ASSERT(offsetof(struct swiw_bp_conn, req) == 88, "swiw_bp_conn.req");
SWIW_BP_ASSERT(sizeof(struct swiw_bp_conn) == 368, "swiw_bp_conn size");

/* The largest message either side sends. */
#define SWIW_BP_MSG_MAX sizeof(struct swiw_bp_conn)

#endif /* SWIW_BROKER_PROTO_H */
