// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RDMAP opcodes and message bodies (RFC 5040, RFC 7306). The bodies are
 * converted through the iwarp.h structs, so every field passes through a
 * typed __be* conversion that sparse checks.
 */
#include "swiw_rdmap.h"

#define UNTAGGED_HDR ((u8)sizeof(struct ddp_untagged_hdr))
#define TAGGED_HDR ((u8)sizeof(struct ddp_tagged_hdr))

/* Indexed by opcode; a zero hdr_len marks an unassigned opcode. */
static const struct swiw_rdmap_op swiw_rdmap_ops[SWIW_RDMAP_NOPCODES] = {
	[RDMAP_WRITE] = { "Write", TAGGED_HDR, 0,
			  SWIW_OPF_TAGGED | SWIW_OPF_PAYLOAD },
	[RDMAP_READ_REQ] = { "Read Request", (u8)sizeof(struct rdmap_read_req),
			     RDMAP_QN_READ_REQ,
			     SWIW_OPF_ONESEG | SWIW_OPF_REQUEST },
	[RDMAP_READ_RESP] = { "Read Response", TAGGED_HDR, 0,
			      SWIW_OPF_TAGGED | SWIW_OPF_PAYLOAD |
				      SWIW_OPF_RESPONSE },
	[RDMAP_SEND] = { "Send", UNTAGGED_HDR, RDMAP_QN_SEND,
			 SWIW_OPF_PAYLOAD },
	[RDMAP_SEND_INVAL] = { "Send with Invalidate", UNTAGGED_HDR,
			       RDMAP_QN_SEND,
			       SWIW_OPF_PAYLOAD | SWIW_OPF_INVAL },
	[RDMAP_SEND_SE] = { "Send with SE", UNTAGGED_HDR, RDMAP_QN_SEND,
			    SWIW_OPF_PAYLOAD | SWIW_OPF_SE },
	[RDMAP_SEND_SE_INVAL] = { "Send with SE and Invalidate", UNTAGGED_HDR,
				  RDMAP_QN_SEND,
				  SWIW_OPF_PAYLOAD | SWIW_OPF_SE |
					  SWIW_OPF_INVAL },
	/* The fixed part; the optional parts make it 22 to 70 octets. */
	[RDMAP_TERMINATE] = { "Terminate", (u8)sizeof(struct rdmap_terminate),
			      RDMAP_QN_TERMINATE,
			      SWIW_OPF_ONESEG | SWIW_OPF_VARLEN },
	[RDMAP_IMM_DATA] = { "Immediate Data",
			     (u8)sizeof(struct rdmap_imm_data), RDMAP_QN_SEND,
			     SWIW_OPF_ONESEG | SWIW_OPF_RFC7306 },
	[RDMAP_IMM_DATA_SE] = { "Immediate Data with SE",
				(u8)sizeof(struct rdmap_imm_data),
				RDMAP_QN_SEND,
				SWIW_OPF_ONESEG | SWIW_OPF_SE |
					SWIW_OPF_RFC7306 },
	[RDMAP_ATOMIC_REQ] = { "Atomic Request",
			       (u8)sizeof(struct rdmap_atomic_req),
			       RDMAP_QN_ATOMIC_REQ,
			       SWIW_OPF_ONESEG | SWIW_OPF_REQUEST |
				       SWIW_OPF_RFC7306 },
	[RDMAP_ATOMIC_RESP] = { "Atomic Response",
				(u8)sizeof(struct rdmap_atomic_resp),
				RDMAP_QN_ATOMIC_RESP,
				SWIW_OPF_ONESEG | SWIW_OPF_RESPONSE |
					SWIW_OPF_RFC7306 },
};

_Static_assert(SWIW_ARRAY_SIZE(swiw_rdmap_ops) == 16,
	       "one entry per 4-bit opcode");

/* Returns the entry, or NULL for an opcode out of range or unassigned. */
const struct swiw_rdmap_op *swiw_rdmap_op(unsigned int opcode)
{
	if (opcode >= SWIW_ARRAY_SIZE(swiw_rdmap_ops))
		return NULL;
	if (!swiw_rdmap_ops[opcode].hdr_len)
		return NULL;
	return &swiw_rdmap_ops[opcode];
}

#define BODY(type) ((u8 *)&(type) + sizeof(struct ddp_untagged_hdr))
#define CBODY(type) ((const u8 *)&(type) + sizeof(struct ddp_untagged_hdr))

/* Writes RDMAP_READ_REQ_BODY_SIZE octets; cannot fail. */
void swiw_rdmap_read_req_put(void *body, const struct swiw_rdmap_read_req *r)
{
	struct rdmap_read_req w;

	w.sink_stag = swiw_cpu_to_be32(r->sink_stag);
	w.sink_to = swiw_cpu_to_be64(r->sink_to);
	w.read_size = swiw_cpu_to_be32(r->size);
	w.src_stag = swiw_cpu_to_be32(r->src_stag);
	w.src_to = swiw_cpu_to_be64(r->src_to);
	memcpy(body, CBODY(w), RDMAP_READ_REQ_BODY_SIZE);
}

/* Reads RDMAP_READ_REQ_BODY_SIZE octets; cannot fail. */
void swiw_rdmap_read_req_get(const void *body, struct swiw_rdmap_read_req *r)
{
	struct rdmap_read_req w;

	memcpy(BODY(w), body, RDMAP_READ_REQ_BODY_SIZE);
	r->sink_stag = swiw_be32_to_cpu(w.sink_stag);
	r->sink_to = swiw_be64_to_cpu(w.sink_to);
	r->size = swiw_be32_to_cpu(w.read_size);
	r->src_stag = swiw_be32_to_cpu(w.src_stag);
	r->src_to = swiw_be64_to_cpu(w.src_to);
}

/* Writes RDMAP_ATOMIC_REQ_BODY_SIZE octets, reserved bits zero; no fail. */
void swiw_rdmap_atomic_req_put(void *body,
			       const struct swiw_rdmap_atomic_req *a)
{
	struct rdmap_atomic_req w;

	w.atomic_op = swiw_cpu_to_be32(a->op) & RDMAP_ATOMIC_MASK_OPCODE;
	w.req_id = swiw_cpu_to_be32(a->req_id);
	w.remote_stag = swiw_cpu_to_be32(a->stag);
	w.remote_to = swiw_cpu_to_be64(a->to);
	w.add_swap_data = swiw_cpu_to_be64(a->add_swap);
	w.add_swap_mask = swiw_cpu_to_be64(a->add_swap_mask);
	w.compare_data = swiw_cpu_to_be64(a->compare);
	w.compare_mask = swiw_cpu_to_be64(a->compare_mask);
	memcpy(body, CBODY(w), RDMAP_ATOMIC_REQ_BODY_SIZE);
}

/* Reads RDMAP_ATOMIC_REQ_BODY_SIZE octets; cannot fail. */
void swiw_rdmap_atomic_req_get(const void *body,
			       struct swiw_rdmap_atomic_req *a)
{
	struct rdmap_atomic_req w;

	memcpy(BODY(w), body, RDMAP_ATOMIC_REQ_BODY_SIZE);
	a->op = swiw_be32_to_cpu(w.atomic_op & RDMAP_ATOMIC_MASK_OPCODE);
	a->rsvd = swiw_be32_to_cpu(w.atomic_op & RDMAP_ATOMIC_MASK_RESERVED);
	a->req_id = swiw_be32_to_cpu(w.req_id);
	a->stag = swiw_be32_to_cpu(w.remote_stag);
	a->to = swiw_be64_to_cpu(w.remote_to);
	a->add_swap = swiw_be64_to_cpu(w.add_swap_data);
	a->add_swap_mask = swiw_be64_to_cpu(w.add_swap_mask);
	a->compare = swiw_be64_to_cpu(w.compare_data);
	a->compare_mask = swiw_be64_to_cpu(w.compare_mask);
}

/* Writes RDMAP_ATOMIC_RESP_BODY_SIZE octets; cannot fail. */
void swiw_rdmap_atomic_resp_put(void *body,
				const struct swiw_rdmap_atomic_resp *a)
{
	struct rdmap_atomic_resp w;

	w.orig_req_id = swiw_cpu_to_be32(a->req_id);
	w.orig_value = swiw_cpu_to_be64(a->orig);
	memcpy(body, CBODY(w), RDMAP_ATOMIC_RESP_BODY_SIZE);
}

/* Reads RDMAP_ATOMIC_RESP_BODY_SIZE octets; cannot fail. */
void swiw_rdmap_atomic_resp_get(const void *body,
				struct swiw_rdmap_atomic_resp *a)
{
	struct rdmap_atomic_resp w;

	memcpy(BODY(w), body, RDMAP_ATOMIC_RESP_BODY_SIZE);
	a->req_id = swiw_be32_to_cpu(w.orig_req_id);
	a->orig = swiw_be64_to_cpu(w.orig_value);
}

/* Bitwise addition with the carry cut after every bit set in @nocarry. */
static u64 masked_add(u64 x, u64 y, u64 nocarry)
{
	u64 sum = 0, carry = 0;
	unsigned int i;

	if (!nocarry)
		return x + y;
	for (i = 0; i < 64; i++) {
		u64 b = ((x >> i) & 1) + ((y >> i) & 1) + carry;

		sum |= (b & 1) << i;
		carry = (nocarry >> i) & 1 ? 0 : b >> 1;
	}
	return sum;
}

u64 swiw_rdmap_atomic_apply(const struct swiw_rdmap_atomic_req *a, u64 orig)
{
	u64 swapped = (orig & ~a->add_swap_mask) |
		      (a->add_swap & a->add_swap_mask);

	switch (a->op) {
	case RDMAP_ATOMIC_FETCH_ADD:
		return masked_add(orig, a->add_swap, a->add_swap_mask);
	case RDMAP_ATOMIC_SWAP:
		return swapped;
	case RDMAP_ATOMIC_CMP_SWAP:
		if ((orig ^ a->compare) & a->compare_mask)
			return orig;
		return swapped;
	default:
		return orig;
	}
}
