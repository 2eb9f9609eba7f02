// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <arpa/inet.h>
#include <string.h>

#include "pcap_tcp.h"

#define TH_FIN 0x01
#define TH_SYN 0x02
#define TH_PSH 0x08
#define TH_ACK 0x10

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static void le32(FILE *f, uint32_t v)
{
	fwrite(&v, 4, 1, f); /* pcap headers are in host order */
}

static uint32_t sum16(const uint8_t *p, size_t len, uint32_t sum)
{
	for (; len > 1; p += 2, len -= 2)
		sum += (uint32_t)(p[0] << 8 | p[1]);
	if (len)
		sum += (uint32_t)(p[0] << 8);
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

int pcap_out_open(struct pcap_out *out, const char *path)
{
	out->f = fopen(path, "wb");
	if (!out->f)
		return -1;
	out->ts_us = 1700000000ULL * 1000000;
	le32(out->f, 0xa1b2c3d4); /* microsecond pcap */
	fwrite((uint16_t[]){ 2, 4 }, 2, 2, out->f);
	le32(out->f, 0); /* thiszone */
	le32(out->f, 0); /* sigfigs */
	le32(out->f, 262144); /* snaplen */
	le32(out->f, 1); /* Ethernet */
	return 0;
}

int pcap_out_close(struct pcap_out *out)
{
	return fclose(out->f);
}

static void emit(struct tcp_conv *c, int dir, uint8_t flags, const void *data,
		 size_t len)
{
	uint8_t pkt[14 + 20 + 20 + 65536];
	uint8_t *eth = pkt, *ip = pkt + 14, *tcp = ip + 20;
	size_t iplen = 20 + 20 + len;
	uint32_t sum;

	memset(pkt, 0, 14 + 40);
	memcpy(eth, "\x02\0\0\0\0\x02", 6);
	memcpy(eth + 6, "\x02\0\0\0\0\x01", 6);
	eth[5] = (uint8_t)(dir ? 1 : 2);
	eth[11] = (uint8_t)(dir ? 2 : 1);
	put16(eth + 12, 0x0800);

	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)iplen);
	put16(ip + 6, 0x4000); /* DF */
	ip[8] = 64;
	ip[9] = 6;
	put32(ip + 12, c->ip[dir]);
	put32(ip + 16, c->ip[!dir]);
	put16(ip + 10, fold(sum16(ip, 20, 0)));

	put16(tcp, c->port[dir]);
	put16(tcp + 2, c->port[!dir]);
	put32(tcp + 4, c->seq[dir]);
	put32(tcp + 8, !(flags & TH_ACK) ? 0 :
		       c->gapped[!dir]	 ? c->gap[!dir] :
					   c->seq[!dir]);
	tcp[12] = 5 << 4;
	tcp[13] = flags;
	put16(tcp + 14, 65535);
	if (len)
		memcpy(tcp + 20, data, len);
	sum = sum16(ip + 12, 8, 0) + 6 + (uint32_t)(20 + len);
	put16(tcp + 16, fold(sum16(tcp, 20 + len, sum)));

	c->out->ts_us += 10;
	le32(c->out->f, (uint32_t)(c->out->ts_us / 1000000));
	le32(c->out->f, (uint32_t)(c->out->ts_us % 1000000));
	le32(c->out->f, (uint32_t)(14 + iplen));
	le32(c->out->f, (uint32_t)(14 + iplen));
	fwrite(pkt, 1, 14 + iplen, c->out->f);

	c->seq[dir] += (uint32_t)len + ((flags & (TH_SYN | TH_FIN)) ? 1 : 0);
}

void tcp_conv_open(struct tcp_conv *c, struct pcap_out *out, uint32_t ip0,
		   uint16_t port0, uint32_t ip1, uint16_t port1,
		   unsigned int mss)
{
	c->out = out;
	c->ip[0] = ip0;
	c->ip[1] = ip1;
	c->port[0] = port0;
	c->port[1] = port1;
	c->seq[0] = 0x10000000u + port0;
	c->seq[1] = 0x70000000u + port1;
	c->mss = mss;
	emit(c, 0, TH_SYN, NULL, 0);
	emit(c, 1, TH_SYN | TH_ACK, NULL, 0);
	emit(c, 0, TH_ACK, NULL, 0);
}

void tcp_conv_send(struct tcp_conv *c, int dir, const void *data, size_t len)
{
	const uint8_t *p = data;

	while (len) {
		size_t n = len < c->mss ? len : c->mss;

		emit(c, dir, TH_ACK | TH_PSH, p, n);
		emit(c, !dir, TH_ACK, NULL, 0);
		p += n;
		len -= n;
	}
}

void tcp_conv_close(struct tcp_conv *c)
{
	emit(c, 0, TH_FIN | TH_ACK, NULL, 0);
	emit(c, 1, TH_FIN | TH_ACK, NULL, 0);
	emit(c, 0, TH_ACK, NULL, 0);
}
