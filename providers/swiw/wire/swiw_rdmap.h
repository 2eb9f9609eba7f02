/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * RDMAP (RFC 5040) and its extensions (RFC 7306) above DDP: one const
 * table describes every opcode, and parsing dispatches through it only
 * after the opcode has been bounds-checked (swiw_rdmap_op()). The message
 * bodies that follow the DDP header (Read Request, Atomic Request and
 * Response) have host-order forms here and put/get helpers that convert
 * them from and to the wire.
 */
#ifndef SWIW_RDMAP_H
#define SWIW_RDMAP_H

#include "swiw_port.h"
#include "iwarp.h"

/* The opcode field has 4 bits: every value indexes the table. */
#define SWIW_RDMAP_NOPCODES 16

/* What the table knows about an opcode (struct swiw_rdmap_op.flags). */
#define SWIW_OPF_TAGGED 0x001 /* tagged buffer model (STag, TO) */
#define SWIW_OPF_ONESEG 0x002 /* exactly one segment: L set, MO 0 */
#define SWIW_OPF_PAYLOAD 0x004 /* ULP payload may follow the header */
#define SWIW_OPF_REQUEST 0x008 /* asks for a response; counts against IRD */
#define SWIW_OPF_RESPONSE 0x010 /* answers one of our requests */
#define SWIW_OPF_INVAL 0x020 /* RsvdULP carries the Invalidate STag */
#define SWIW_OPF_SE 0x040 /* Solicited Event */
#define SWIW_OPF_RFC7306 0x080 /* only with the RFC 7306 extensions */
#define SWIW_OPF_VARLEN 0x100 /* optional parts follow (Terminate) */

struct swiw_rdmap_op {
	const char *name;
	u8 hdr_len; /* DDP header plus RDMAP header and fixed body */
	u8 qn; /* untagged: the only queue the opcode may use */
	u16 flags; /* SWIW_OPF_* */
};

/*
 * The table entry of @opcode, or NULL when @opcode is out of range or not
 * assigned (8/9 and 0xA/0xB are RFC 7306's, 0xC-0xF unassigned).
 */
const struct swiw_rdmap_op *swiw_rdmap_op(unsigned int opcode);

/*
 * The DDP/RDMAP control word for a segment of @opcode (T from the table,
 * L from @last, DV = RV = 1), in wire order. Returns 0 (which no valid
 * control word is) when @opcode is not in the table. Inline: a function
 * returning a __be type across files trips sparse's whole-program check.
 */
static inline __be16 swiw_rdmap_ctrl(unsigned int opcode, bool last)
{
	const struct swiw_rdmap_op *op = swiw_rdmap_op(opcode);
	__be16 c;

	if (!op)
		return 0;
	c = DDP_CTRL_DV1 | RDMAP_CTRL_RV1 | swiw_cpu_to_be16((u16)opcode);
	if (op->flags & SWIW_OPF_TAGGED)
		c |= DDP_FLAG_TAGGED;
	if (last)
		c |= DDP_FLAG_LAST;
	return c;
}

/* RDMA Read Request body (RFC 5040): 28 octets after the DDP header. */
struct swiw_rdmap_read_req {
	u32 sink_stag; /* where the Read Response goes (requester) */
	u64 sink_to;
	u32 size; /* RDMA Read Message Size */
	u32 src_stag; /* where it comes from (responder) */
	u64 src_to;
};

/* Atomic Request body (RFC 7306): 52 octets after the DDP header. */
struct swiw_rdmap_atomic_req {
	u32 op; /* enum rdmap_atomic_op, 4 bits on the wire */
	u32 rsvd; /* the 28 reserved bits above it, as received */
	u32 req_id;
	u32 stag;
	u64 to;
	u64 add_swap;
	u64 add_swap_mask;
	u64 compare;
	u64 compare_mask;
};

/* Atomic Response body (RFC 7306): 12 octets after the DDP header. */
struct swiw_rdmap_atomic_resp {
	u32 req_id;
	u64 orig;
};

/*
 * Body converters. The put functions write exactly the body size
 * (RDMAP_READ_REQ_BODY_SIZE, RDMAP_ATOMIC_REQ_BODY_SIZE,
 * RDMAP_ATOMIC_RESP_BODY_SIZE octets) at @body; the get functions read
 * exactly as many. The caller has checked the length; they cannot fail.
 */
void swiw_rdmap_read_req_put(void *body, const struct swiw_rdmap_read_req *r);
void swiw_rdmap_read_req_get(const void *body, struct swiw_rdmap_read_req *r);
void swiw_rdmap_atomic_req_put(void *body,
			       const struct swiw_rdmap_atomic_req *a);
void swiw_rdmap_atomic_req_get(const void *body,
			       struct swiw_rdmap_atomic_req *a);
void swiw_rdmap_atomic_resp_put(void *body,
				const struct swiw_rdmap_atomic_resp *a);
void swiw_rdmap_atomic_resp_get(const void *body,
				struct swiw_rdmap_atomic_resp *a);

/*
 * RFC 7306 atomics on a 64-bit value @orig (host order): the value the
 * target holds afterwards. FetchAdd adds Add Data with the Add Mask
 * marking field boundaries (a carry out of a bit set in it is not
 * propagated: 0 is one 64-bit addition); Swap writes the Swap Data bits
 * the Swap Mask selects; CompareSwap does the same only when the bits
 * the Compare Mask selects equal the Compare Data's. The caller applies
 * it with a compare-and-swap loop so it is atomic, and answers with
 * @orig. The operation code was validated on receive.
 */
u64 swiw_rdmap_atomic_apply(const struct swiw_rdmap_atomic_req *a, u64 orig);

#endif /* SWIW_RDMAP_H */
