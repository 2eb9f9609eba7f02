// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * CRC32c and MPA framing costs, printed as tables: a figure, not a test.
 *
 * 1. CRC32c throughput of the portable table (slicing-by-8) and of the
 *    instruction path (ISA-L crc32_iscsi behind swiw_crc32c) over buffers
 *    of 64 B to 1 MiB, in cache for the small ones.
 * 2. Framing: the transmit framer building FPDUs from a header and a
 *    payload piece (no copy), and the deframer taking them back through
 *    its pull interface as an engine would (framing octets copied into
 *    its buffers, payload "placed" in place: the copy to the destination
 *    is the engine's and not counted), with markers and CRC off and on.
 *
 * Usage: bench_crc_framing [seconds per cell, default 0.2]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "swiw_fpdu.h"

static double cell_seconds = 0.2;
static volatile u32 sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char *cpu_note(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (!__builtin_cpu_supports("sse4.2"))
		return "no SSE4.2: both run the table";
	return __builtin_cpu_supports("avx512f") ? "SSE4.2, AVX-512" : "SSE4.2";
#else
	return "ISA-L's own dispatch";
#endif
}

typedef u32 (*crc_fn)(u32 crc, const void *buf, size_t len);

/* GB/s of @f over @len octets, repeated for about cell_seconds. */
static double crc_rate(crc_fn f, const u8 *buf, size_t len)
{
	u64 iters = 1, i, bytes;
	double t0, t;
	u32 crc = SWIW_CRC32C_INIT;

	for (;;) {
		t0 = now();
		for (i = 0; i < iters; i++)
			crc = f(crc, buf, len);
		t = now() - t0;
		if (t >= cell_seconds)
			break;
		iters *= t < cell_seconds / 16 ? 8 : 2;
	}
	sink = crc;
	bytes = iters * len;
	return (double)bytes / t / 1e9;
}

#define STREAM_FPDUS 64

struct frame_cost {
	double tx_ns; /* per FPDU */
	double rx_ns;
};

static struct frame_cost frame_rate(u32 ulpdu_len, bool markers, bool crc)
{
	static u8 payload[65536], hdr[18], wire[STREAM_FPDUS * 66000];
	static struct swiw_iov iov[2 + 2 + 2 * SWIW_FPDU_MAX_MARKERS];
	static struct swiw_fpdu_frame f;
	struct swiw_fpdu_tx tx = { .pos = 0, .markers = markers, .crc = crc };
	struct swiw_fpdu_rx_cfg cfg = { .markers = markers, .crc = crc };
	struct swiw_iov in[2] = { { hdr, sizeof(hdr) },
				  { payload, ulpdu_len - sizeof(hdr) } };
	struct swiw_fpdu_rx_step step;
	struct swiw_fpdu_rx rx;
	struct frame_cost c;
	u64 iters = 1, i, j;
	u32 wl = 0, off, k, n_ev = 0;
	unsigned int ev;
	double t0, t;

	memset(payload, 0x5a, sizeof(payload));
	memset(hdr, 0x11, sizeof(hdr));
	f.iov = iov;
	f.max_iov = SWIW_ARRAY_SIZE(iov);

	/* transmit: build FPDUs back to back, the stream offset moving on */
	for (;;) {
		t0 = now();
		for (i = 0; i < iters; i++)
			if (swiw_fpdu_tx_build(&tx, in, 2, &f))
				abort();
		t = now() - t0;
		if (t >= cell_seconds)
			break;
		iters *= t < cell_seconds / 16 ? 8 : 2;
	}
	c.tx_ns = t * 1e9 / (double)iters;

	/* a stream to receive: STREAM_FPDUS frames from offset 0 */
	tx.pos = 0;
	for (i = 0; i < STREAM_FPDUS; i++) {
		if (swiw_fpdu_tx_build(&tx, in, 2, &f))
			abort();
		for (j = 0; j < f.n_iov; j++) {
			memcpy(wire + wl, iov[j].base, iov[j].len);
			wl += (u32)iov[j].len;
		}
	}

	iters = 1;
	for (;;) {
		t0 = now();
		for (i = 0; i < iters; i++) {
			if (swiw_fpdu_rx_init(&rx, &cfg))
				abort();
			for (off = 0; off < wl; off += k) {
				swiw_fpdu_rx_next(&rx, &step);
				k = SWIW_MIN(step.len, wl - off);
				if (swiw_fpdu_rx_advance(&rx, wire + off, k,
							 &ev))
					abort();
				n_ev += ev;
			}
		}
		t = now() - t0;
		if (t >= cell_seconds)
			break;
		iters *= t < cell_seconds / 16 ? 8 : 2;
	}
	sink = n_ev;
	c.rx_ns = t * 1e9 / (double)(iters * STREAM_FPDUS);
	return c;
}

int main(int argc, char **argv)
{
	static const size_t crc_sizes[] = { 64, 4096, 65536, 1 << 20 };
	static const char *const crc_names[] = { "64 B", "4 KiB", "64 KiB",
						 "1 MiB" };
	static const u32 ulpdu_sizes[] = { 64, 1024, 4096, 64962 };
	u8 *buf;
	size_t i;
	u32 s, cfg;

	if (argc > 1)
		cell_seconds = atof(argv[1]);
	buf = malloc(1 << 20);
	if (!buf)
		return 1;
	for (i = 0; i < 1 << 20; i++)
		buf[i] = (u8)(i * 2654435761u >> 13);

	printf("CRC32c throughput, GB/s (%s)\n", cpu_note());
	printf("%-8s %12s %14s %8s\n", "size", "table (s-b-8)", "ISA-L (instr)",
	       "ratio");
	for (i = 0; i < SWIW_ARRAY_SIZE(crc_sizes); i++) {
		double a = crc_rate(swiw_crc32c_table, buf, crc_sizes[i]);
		double b = crc_rate(swiw_crc32c, buf, crc_sizes[i]);

		printf("%-8s %12.2f %14.2f %7.1fx\n", crc_names[i], a, b,
		       b / a);
	}

	printf("\nMPA framing cost: TX build + RX deframe (pull), per FPDU "
	       "and per ULPDU octet\n");
	printf("%-7s %-4s %-8s %9s %9s %9s %9s %8s\n", "markers", "CRC",
	       "ULPDU", "TX ns", "RX ns", "sum ns", "ns/B", "GB/s");
	for (cfg = 0; cfg < 4; cfg++)
		for (s = 0; s < SWIW_ARRAY_SIZE(ulpdu_sizes); s++) {
			bool markers = cfg & 1, crc = cfg & 2;
			struct frame_cost c =
				frame_rate(ulpdu_sizes[s], markers, crc);
			double sum = c.tx_ns + c.rx_ns;

			printf("%-7s %-4s %-8u %9.1f %9.1f %9.1f %9.4f %8.2f\n",
			       markers ? "on" : "off", crc ? "on" : "off",
			       ulpdu_sizes[s], c.tx_ns, c.rx_ns, sum,
			       sum / ulpdu_sizes[s], ulpdu_sizes[s] / sum);
		}
	free(buf);
	return 0;
}
