/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A minimal pcap writer for synthetic TCP conversations: handshake, data
 * cut into MSS-sized segments with correct sequence numbers and checksums,
 * and close, as a packet capture of a real connection would show them.
 */
#ifndef SWIW_PCAP_TCP_H
#define SWIW_PCAP_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct pcap_out {
	FILE *f;
	uint64_t ts_us;
};

struct tcp_conv {
	struct pcap_out *out;
	uint32_t ip[2]; /* host order; side 0 is the initiator */
	uint16_t port[2];
	uint32_t seq[2]; /* next sequence number each side sends */
	/* Set: the other side acks a side's data up to gap[side] only, as a
	 * receiver does while a segment before the ones it has is missing. */
	bool gapped[2];
	uint32_t gap[2];
	unsigned int mss;
};

int pcap_out_open(struct pcap_out *out, const char *path);
int pcap_out_close(struct pcap_out *out);

/* SYN, SYN-ACK, ACK from side 0 (ip0:port0) to side 1. */
void tcp_conv_open(struct tcp_conv *c, struct pcap_out *out, uint32_t ip0,
		   uint16_t port0, uint32_t ip1, uint16_t port1,
		   unsigned int mss);
/* @len bytes from side @dir, in segments of at most the MSS, each acked. */
void tcp_conv_send(struct tcp_conv *c, int dir, const void *data, size_t len);
/* FIN from each side, acked. */
void tcp_conv_close(struct tcp_conv *c);

#endif
