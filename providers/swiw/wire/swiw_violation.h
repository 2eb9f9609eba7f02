/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Everything a peer can get wrong, as the wire core reports it. The
 * framing, negotiation, DDP and RDMAP code return these; one table
 * (swiw_term.c, swiw_violation_info()) maps each to the TERMINATE layer,
 * error type and code the RFCs give it, to the headers the TERMINATE
 * carries back, and to the completion status each side's application
 * sees. New entries go at the end, before SWIW_V_COUNT.
 */
#ifndef SWIW_VIOLATION_H
#define SWIW_VIOLATION_H

#include "swiw_port.h"

enum swiw_violation {
	SWIW_V_NONE = 0,

	/* LLP: MPA framing and connection setup (RFC 5044, RFC 6581) */
	SWIW_V_MPA_CRC, /* FPDU CRC does not match */
	SWIW_V_MPA_MARKER, /* marker malformed or FPDUPTR wrong */
	SWIW_V_MPA_ULPDU_LENGTH, /* ULPDU_LENGTH impossible */
	SWIW_V_MPA_BAD_RR, /* Request/Reply malformed: key, rev, flags */
	SWIW_V_MPA_PD_TOO_LONG, /* private data beyond the limit */
	SWIW_V_MPA_EARLY_DATA, /* bytes before the handshake allowed them */
	SWIW_V_MPA_INSUFFICIENT_IRD, /* RFC 6581: IRD/ORD cannot be met */
	SWIW_V_MPA_NO_MATCHING_RTR, /* RFC 6581: RTR absent or not agreed */
	SWIW_V_LLP_LOST, /* the TCP stream failed under us */

	/* DDP, tagged buffers (RFC 5041 §7.2) */
	SWIW_V_DDP_T_INVALID_STAG,
	SWIW_V_DDP_T_BASE_BOUNDS,
	SWIW_V_DDP_T_STAG_NOT_ASSOC, /* STag of another PD or stream */
	SWIW_V_DDP_T_TO_WRAP,
	SWIW_V_DDP_T_ACCESS, /* STag lacks the right (RDMAP names it) */

	/* DDP, untagged buffers */
	SWIW_V_DDP_UT_INVALID_QN,
	SWIW_V_DDP_UT_NO_BUFFER, /* MSN valid, no receive posted */
	SWIW_V_DDP_UT_MSN_RANGE,
	SWIW_V_DDP_UT_INVALID_MO,
	SWIW_V_DDP_UT_TOO_LONG, /* message longer than the buffer */

	/* DDP, either model */
	SWIW_V_DDP_VERSION,
	SWIW_V_DDP_RESERVED, /* reserved bits set, short segment */

	/* RDMAP (RFC 5040 §7) */
	SWIW_V_RDMAP_VERSION,
	SWIW_V_RDMAP_OPCODE, /* unknown, or not allowed where it came */
	SWIW_V_RDMAP_INVALID_STAG, /* Read source, invalidate target */
	SWIW_V_RDMAP_BASE_BOUNDS,
	SWIW_V_RDMAP_ACCESS_RIGHTS,
	SWIW_V_RDMAP_STAG_NOT_ASSOC,
	SWIW_V_RDMAP_TO_WRAP,
	SWIW_V_RDMAP_IRD_EXCEEDED, /* more Read Requests than IRD */
	SWIW_V_RDMAP_CANT_INVALIDATE,
	SWIW_V_RDMAP_CATASTROPHIC, /* local failure that ends the stream */

	/* Appended: codes the rows above cannot carry one to one */
	SWIW_V_DDP_UT_VERSION, /* DV wrong on an untagged segment (DDP 2/6);
				* SWIW_V_DDP_VERSION is the tagged one (1/4) */
	SWIW_V_RDMAP_CANT_INVALIDATE_OP, /* STag valid but of a kind that
					  * cannot be invalidated (2/9) */
	SWIW_V_RDMAP_MALFORMED, /* RDMAP message of the wrong size or shape */
	SWIW_V_RDMAP_ATOMIC_OPCODE, /* RFC 7306: unknown atomic operation */
	SWIW_V_RDMAP_ATOMIC_ALIGN, /* RFC 7306: target not 8-octet aligned */
	SWIW_V_DDP_CATASTROPHIC, /* local failure while placing data */

	SWIW_V_COUNT
};

#endif /* SWIW_VIOLATION_H */
