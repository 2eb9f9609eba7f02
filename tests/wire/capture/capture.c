// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * wire_capture PCAP: a synthetic iWARP conversation produced by the wire
 * core, written as a packet capture for tshark_check.sh to judge.
 *
 * Four TCP connections, each with its MPA handshake driven by the real
 * negotiation machines of both sides and its FPDUs cut by the DDP
 * segmenter and framed by the FPDU framer, CRC on throughout, every
 * RDMAP message type in both directions, messages of several segments:
 *   1. MPA rev 1, no markers, one FPDU per TCP segment;
 *   2. MPA rev 2, peer-to-peer with a WRITE RTR, no markers, several
 *      FPDUs per TCP segment;
 *   3. MPA rev 2, peer-to-peer with a READ RTR, markers both ways;
 *   4. MPA rev 2, WRITE RTR, no markers, FPDUs larger than the TCP
 *      segments (tshark reassembles them).
 * Wireshark 4.0 strips markers correctly only where every FPDU starts a
 * TCP segment and both directions use markers (its number_of_markers()
 * ignores which side asked for them), so the marker conversation keeps to
 * that; markers in one direction only are covered by the unit tests.
 * It prints what it sent: "fpdus N", "mpa_frames N", "opcodes ...".
 *
 * wire_capture --cut FLAW PCAP: instead, one conversation (MPA rev 2,
 * WRITE RTR, markers both ways, CRC) cut as a TCP stack under pressure
 * cuts it: segments that end inside FPDUs, and a retransmission with other
 * bounds than the segments it repeats. It is for capture_check.sh, whose
 * FPDU walk must see through that (FLAW none) and through a segment
 * captured after the one behind it, as a receiver's capture may hold them
 * (reorder), and must catch what a live capture can get wrong: a segment
 * missing (hole), a retransmission that differs (retx), a marker pointing
 * elsewhere (marker), a stream ending inside an FPDU (length), a bad CRC
 * in an FPDU that ends on a marker point, which Wireshark 4.0 cannot read
 * and the walk checks (crc).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcap_tcp.h"
#include "swiw_ddp.h"
#include "swiw_fpdu.h"
#include "swiw_mpa.h"
#include "swiw_rdmap.h"
#include "swiw_term.h"

#define BATCH_MAX (256 * 1024)

struct side {
	struct swiw_fpdu_tx ftx;
	u32 msn[4]; /* next MSN per untagged queue */
	u8 batch[BATCH_MAX]; /* FPDUs not yet handed to TCP */
	size_t batch_len;
	size_t ends[BATCH_MAX / 16]; /* where each FPDU in the batch ends */
	unsigned int n_ends;
};

struct conv {
	struct tcp_conv tcp;
	struct side side[2];
	u32 mulpdu;
	bool batch; /* several FPDUs per TCP segment */
	bool cut; /* --cut: FPDUs kept in cut_buf, cut by cut_emit() */
};

static const char *cut_flaw;
static u8 cut_buf[2][1 << 20];
static size_t cut_len[2];
static size_t cut_on_marker[2]; /* where the FPDU ending on one ends */

static unsigned int n_fpdus, n_mpa_frames;
static bool opcode_seen[16];
static u8 payload[70000];

static void die(const char *what, int err)
{
	fprintf(stderr, "wire_capture: %s: %d\n", what, err);
	exit(1);
}

/*
 * Hands the queued FPDUs to TCP aligned as an iWARP sender aligns them
 * (RFC 5044 §4.4): whole FPDUs per segment, up to the MSS, and an FPDU
 * larger than the MSS starting a segment of its own. Wireshark 4.0's MPA
 * dissector also cannot reassemble an FPDU that starts behind another in
 * a segment and runs on into the next.
 */
static void flush(struct conv *cv, int dir)
{
	struct side *s = &cv->side[dir];
	size_t start = 0, end = 0;
	unsigned int i;

	if (cv->cut) {
		if (cut_len[dir] + s->batch_len > sizeof(cut_buf[dir]))
			die("--cut: the conversation is too long", 0);
		memcpy(cut_buf[dir] + cut_len[dir], s->batch, s->batch_len);
		cut_len[dir] += s->batch_len;
		s->batch_len = 0;
		s->n_ends = 0;
		return;
	}
	for (i = 0; i < s->n_ends; i++) {
		if (s->ends[i] - start > cv->tcp.mss && end > start) {
			tcp_conv_send(&cv->tcp, dir, s->batch + start,
				      end - start);
			start = end;
		}
		end = s->ends[i];
	}
	if (end > start)
		tcp_conv_send(&cv->tcp, dir, s->batch + start, end - start);
	s->batch_len = 0;
	s->n_ends = 0;
}

/* Frames one ULPDU (header and payload piece) and queues the FPDU. */
static void put_fpdu(struct conv *cv, int dir, const void *hdr, u32 hdr_len,
		     const void *pay, u32 pay_len)
{
	struct side *s = &cv->side[dir];
	struct swiw_iov piece[2] = { { hdr, hdr_len }, { pay, pay_len } };
	struct swiw_iov out[300];
	struct swiw_fpdu_frame f = { .iov = out, .max_iov = 300 };
	u32 i;
	int ret;

	ret = swiw_fpdu_tx_build(&s->ftx, piece, pay_len ? 2 : 1, &f);
	if (ret)
		die("swiw_fpdu_tx_build", ret);
	if (s->ftx.markers && s->ftx.pos % MPA_MARKER_SPACING == 0 && !cv->cut)
		die("an FPDU ends on a marker point", 0);
	if (s->batch_len + f.len > BATCH_MAX ||
	    s->n_ends == SWIW_ARRAY_SIZE(s->ends))
		flush(cv, dir);
	for (i = 0; i < f.n_iov; i++) {
		memcpy(s->batch + s->batch_len, out[i].base, out[i].len);
		s->batch_len += out[i].len;
	}
	s->ends[s->n_ends++] = s->batch_len;
	n_fpdus++;
	if (!cv->batch)
		flush(cv, dir);
}

/* Cuts @m into segments of at most the MULPDU and frames each. */
static void send_msg(struct conv *cv, int dir, struct swiw_rdmap_msg *m,
		     unsigned int qn)
{
	struct swiw_ddp_tx tx;
	struct swiw_ddp_txseg seg;
	u8 hdr[SWIW_DDP_HDR_MAX];
	int ret;

	if (qn < 4)
		m->msn = cv->side[dir].msn[qn]++;
	ret = swiw_ddp_tx_init(&tx, m);
	if (ret)
		die("swiw_ddp_tx_init", ret);
	for (;;) {
		struct swiw_fpdu_tx *ftx = &cv->side[dir].ftx;
		struct swiw_ddp_tx probe = tx;
		u32 mulpdu = cv->mulpdu, end;

		/* Wireshark 4.0 misplaces a marker that falls exactly where
		 * an FPDU ends (it counts it in the ending FPDU): where this
		 * segment would end so, cut it 4 octets shorter. */
		ret = swiw_ddp_tx_next(&probe, mulpdu, hdr, sizeof(hdr), &seg);
		if (ret == 1 && ftx->markers && !cv->cut) {
			end = ftx->pos +
			      swiw_mpa_fpdu_len(seg.hdr_len + seg.payload_len,
						ftx->pos, true);
			if (end % MPA_MARKER_SPACING == 0)
				mulpdu = seg.hdr_len + seg.payload_len - 4;
		}
		ret = swiw_ddp_tx_next(&tx, mulpdu, hdr, sizeof(hdr), &seg);
		if (ret != 1)
			break;
		put_fpdu(cv, dir, hdr, seg.hdr_len, payload + seg.payload_off,
			 seg.payload_len);
	}
	if (ret)
		die("swiw_ddp_tx_next", ret);
	opcode_seen[m->opcode] = true;
}

static void send_untagged(struct conv *cv, int dir, u8 op, u32 len,
			  unsigned int qn)
{
	struct swiw_rdmap_msg m = { .opcode = op, .len = len };

	if (op == RDMAP_SEND_INVAL || op == RDMAP_SEND_SE_INVAL)
		m.inval_stag = 0x1234a5;
	send_msg(cv, dir, &m, qn);
}

static void send_tagged(struct conv *cv, int dir, u8 op, u32 stag, u64 to,
			u32 len)
{
	struct swiw_rdmap_msg m = {
		.opcode = op, .len = len, .stag = stag, .to = to
	};

	send_msg(cv, dir, &m, 4);
}

static void send_read_req(struct conv *cv, int dir, u32 size)
{
	struct swiw_rdmap_msg m = { .opcode = RDMAP_READ_REQ };

	m.u.rreq.sink_stag = 0x2201;
	m.u.rreq.sink_to = 0x7f0000001000ULL;
	m.u.rreq.size = size;
	m.u.rreq.src_stag = 0x3301;
	m.u.rreq.src_to = 0x7f0000800000ULL;
	send_msg(cv, dir, &m, RDMAP_QN_READ_REQ);
	flush(cv, dir);
	/* The response, tagged to the sink. */
	send_tagged(cv, !dir, RDMAP_READ_RESP, 0x2201, 0x7f0000001000ULL, size);
}

static void send_atomics(struct conv *cv, int dir)
{
	struct swiw_rdmap_msg m = { .opcode = RDMAP_ATOMIC_REQ };

	m.u.areq.op = RDMAP_ATOMIC_FETCH_ADD;
	m.u.areq.req_id = 7;
	m.u.areq.stag = 0x4401;
	m.u.areq.to = 0x7f0000002000ULL;
	m.u.areq.add_swap = 5;
	send_msg(cv, dir, &m, RDMAP_QN_ATOMIC_REQ);
	flush(cv, dir);
	memset(&m, 0, sizeof(m));
	m.opcode = RDMAP_ATOMIC_RESP;
	m.u.aresp.req_id = 7;
	m.u.aresp.orig = 41;
	send_msg(cv, !dir, &m, RDMAP_QN_ATOMIC_RESP);
	flush(cv, !dir);
}

static void send_imm(struct conv *cv, int dir, u8 op)
{
	struct swiw_rdmap_msg m = { .opcode = op };

	memcpy(m.u.imm, "\x11\x22\x33\x44\x55\x66\x77\x88", 8);
	send_msg(cv, dir, &m, RDMAP_QN_SEND);
}

static void send_terminate(struct conv *cv, int dir)
{
	struct swiw_rdmap_msg m = { .opcode = RDMAP_TERMINATE };
	u8 bad[sizeof(struct ddp_tagged_hdr)] = { 0x81, 0x40 }; /* a Write */
	int ret;

	ret = swiw_term_from_violation(SWIW_V_DDP_T_BASE_BOUNDS, bad,
				       sizeof(bad), &m.u.term);
	if (ret)
		die("swiw_term_from_violation", ret);
	send_msg(cv, dir, &m, 4); /* QN 2, MSN 1: fixed by the segmenter */
	flush(cv, dir);
}

/* Runs both negotiation machines against each other over the capture. */
static void handshake(struct conv *cv, const struct swiw_mpa_cfg *ci,
		      const struct swiw_mpa_cfg *cr, bool send_rtr)
{
	static u8 tx[2][SWIW_MPA_FRAME_MAX], pd[2][SWIW_MPA_PD_MAX];
	struct swiw_mpa m[2];
	struct swiw_mpa_ulp ulp = {
		.pd = "swiw capture", .pd_len = 12, .ird = 16, .ord = 16
	};
	const struct swiw_mpa_outcome *o[2];
	size_t used;
	int i, ret;

	if (swiw_mpa_init(&m[0], SWIW_MPA_INITIATOR, ci, tx[0], sizeof(tx[0]),
			  pd[0], sizeof(pd[0])) ||
	    swiw_mpa_init(&m[1], SWIW_MPA_RESPONDER, cr, tx[1], sizeof(tx[1]),
			  pd[1], sizeof(pd[1])))
		die("swiw_mpa_init", 0);
	if ((ret = swiw_mpa_connect(&m[0], &ulp)))
		die("swiw_mpa_connect", ret);
	o[0] = swiw_mpa_outcome(&m[0]);
	o[1] = swiw_mpa_outcome(&m[1]);
	if (!(swiw_mpa_events(&m[0]) & SWIW_MPA_EV_TX))
		die("no Request", 0);
	tcp_conv_send(&cv->tcp, 0, tx[0], o[0]->tx_len);
	if ((ret = swiw_mpa_input(&m[1], tx[0], o[0]->tx_len, &used)) ||
	    !(swiw_mpa_events(&m[1]) & SWIW_MPA_EV_REQUEST))
		die("responder input", ret);
	if ((ret = swiw_mpa_accept(&m[1], &ulp)) ||
	    !(swiw_mpa_events(&m[1]) & SWIW_MPA_EV_TX))
		die("swiw_mpa_accept", ret);
	tcp_conv_send(&cv->tcp, 1, tx[1], o[1]->tx_len);
	if ((ret = swiw_mpa_input(&m[0], tx[1], o[1]->tx_len, &used)))
		die("initiator input", ret);
	swiw_mpa_events(&m[0]);
	n_mpa_frames += 2;

	for (i = 0; i < 2; i++) {
		cv->side[i].ftx.pos = 0;
		cv->side[i].ftx.markers = o[i]->markers_tx;
		cv->side[i].ftx.crc = o[i]->crc;
		cv->side[i].msn[0] = cv->side[i].msn[1] = 1;
		cv->side[i].msn[2] = cv->side[i].msn[3] = 1;
	}
	if (o[0]->p2p != send_rtr)
		die("peer-to-peer not as configured", o[0]->p2p);
	if (!send_rtr)
		return;
	/* The initiator's first FPDU is the agreed zero-length RTR. */
	if (o[0]->rtr == SWIW_MPA_RTR_WRITE) {
		send_tagged(cv, 0, RDMAP_WRITE, SWIW_MPA_RTR_STAG, 0, 0);
	} else if (o[0]->rtr == SWIW_MPA_RTR_READ) {
		struct swiw_rdmap_msg r = { .opcode = RDMAP_READ_REQ };

		r.u.rreq.sink_stag = SWIW_MPA_RTR_STAG;
		r.u.rreq.src_stag = SWIW_MPA_RTR_STAG;
		send_msg(cv, 0, &r, RDMAP_QN_READ_REQ);
		flush(cv, 0);
		swiw_mpa_rtr_sent(&m[0]);
		if (swiw_mpa_rtr_received(&m[1], SWIW_MPA_RTR_READ))
			die("READ RTR refused", 0);
		send_tagged(cv, 1, RDMAP_READ_RESP, SWIW_MPA_RTR_STAG, 0, 0);
		flush(cv, 1);
		return;
	} else {
		die("unexpected RTR", o[0]->rtr);
	}
	flush(cv, 0);
	swiw_mpa_rtr_sent(&m[0]);
	if (swiw_mpa_rtr_received(&m[1], (enum swiw_mpa_rtr)o[0]->rtr))
		die("RTR refused", 0);
}

static bool flaw(const char *what)
{
	return cut_flaw && !strcmp(cut_flaw, what);
}

/*
 * Sends until one with a marker inside ends exactly on a marker point
 * (--cut): an FPDU Wireshark mis-sizes, which capture_check.sh's walk
 * checks instead.
 */
static void end_on_marker(struct conv *cv, int d)
{
	unsigned int i;

	for (i = 0; i < 1000; i++) {
		send_untagged(cv, d, RDMAP_SEND, 600, RDMAP_QN_SEND);
		flush(cv, d);
		if (cv->side[d].ftx.pos % MPA_MARKER_SPACING == 0) {
			cut_on_marker[d] = cut_len[d];
			return;
		}
	}
	die("--cut: no FPDU ends on a marker point", 0);
}

struct cut_dir {
	size_t len, off, mark[6];
	unsigned int k;
};

/*
 * One segment of direction @d (--cut), of a size that has nothing to do
 * with the FPDUs; the fifth is followed by a retransmission of the last
 * 100 octets of the third through the fifth. Each segment is acked by a
 * bare ACK from the other side, which, sent while that side is itself
 * inside an FPDU, carries a sequence number ahead of that FPDU's start.
 */
static void cut_step(struct conv *cv, int d, struct cut_dir *c)
{
	static const size_t sizes[] = { 1000, 1448, 36, 700, 1448, 516 };
	static u8 again[4096];
	const u8 *b = cut_buf[d];
	size_t n = sizes[c->k % SWIW_ARRAY_SIZE(sizes)];
	u32 next;

	if (n > c->len - c->off)
		n = c->len - c->off;
	if (c->k < SWIW_ARRAY_SIZE(c->mark))
		c->mark[c->k] = c->off;
	if (flaw("hole") && d == 0 && c->k == 7) {
		cv->tcp.seq[d] += (u32)n; /* never captured */
	} else if (flaw("reorder") && d == 0 && c->k == 7 &&
		   c->off + n < c->len) {
		/* Captured after the one behind it, as a receiver may. */
		size_t n2 = sizes[(c->k + 1) % SWIW_ARRAY_SIZE(sizes)];

		if (n2 > c->len - c->off - n)
			n2 = c->len - c->off - n;
		next = cv->tcp.seq[d];
		cv->tcp.seq[d] += (u32)n;
		cv->tcp.gapped[d] = true; /* its ACK: a duplicate */
		cv->tcp.gap[d] = next;
		tcp_conv_send(&cv->tcp, d, b + c->off + n, n2);
		cv->tcp.gapped[d] = false;
		cv->tcp.seq[d] = next;
		tcp_conv_send(&cv->tcp, d, b + c->off, n);
		cv->tcp.seq[d] = next + (u32)(n + n2);
		c->off += n2;
		c->k++;
	} else {
		tcp_conv_send(&cv->tcp, d, b + c->off, n);
	}
	if (c->k == 4) {
		size_t r = c->off + n - (c->mark[2] - 100);

		memcpy(again, b + c->mark[2] - 100, r);
		if (flaw("retx") && d == 1)
			again[r / 2] ^= 1;
		next = cv->tcp.seq[d];
		cv->tcp.seq[d] -= (u32)r;
		tcp_conv_send(&cv->tcp, d, again, r);
		cv->tcp.seq[d] = next;
	}
	c->off += n;
	c->k++;
}

/* Both directions' FPDUs (--cut), their segments interleaved, flawed. */
static void cut_emit(struct conv *cv)
{
	struct cut_dir c[2] = { { .len = cut_len[0] }, { .len = cut_len[1] } };
	int d;

	for (d = 0; d < 2; d++)
		if (c[d].len < 8000)
			die("--cut: too little to cut", (int)c[d].len);
	if (flaw("marker"))
		cut_buf[0][2 * MPA_MARKER_SPACING + 3] ^=
			0x10; /* its FPDUPTR */
	if (flaw("length"))
		c[1].len -= 8;
	if (flaw("crc"))
		cut_buf[0][cut_on_marker[0] - 12] ^= 1; /* in its payload */
	while (c[0].off < c[0].len || c[1].off < c[1].len)
		for (d = 0; d < 2; d++)
			if (c[d].off < c[d].len)
				cut_step(cv, d, &c[d]);
	cut_len[0] = cut_len[1] = 0;
}

/* @emss sizes the FPDUs, @mss the TCP segments that carry them. */
static void conversation(struct pcap_out *out, u16 port, u8 rev, bool p2p,
			 u8 rtr, bool mk_i, bool mk_r, u32 emss, u32 mss,
			 bool batch)
{
	static struct conv cv;
	struct swiw_mpa_cfg ci, cr;
	int d;

	memset(&cv, 0, sizeof(cv));
	tcp_conv_open(&cv.tcp, out, 0x0a000001, port, 0x0a000002, 4791, mss);
	cv.batch = batch;
	cv.cut = cut_flaw != NULL;
	cv.mulpdu = swiw_mpa_mulpdu(emss, mk_i || mk_r);
	swiw_mpa_cfg_init(&ci);
	swiw_mpa_cfg_init(&cr);
	ci.rev = rev;
	ci.crc_required = true;
	ci.p2p = p2p ? SWIW_MPA_P2P_ON : SWIW_MPA_P2P_OFF;
	ci.rtr_offer = rtr;
	ci.markers_wanted = mk_r; /* the responder sends markers to us */
	cr.markers_wanted = mk_i;
	handshake(&cv, &ci, &cr, p2p);

	for (d = 0; d < 2; d++) {
		send_untagged(&cv, d, RDMAP_SEND, 1, RDMAP_QN_SEND);
		send_untagged(&cv, d, RDMAP_SEND, 4100 + 7 * d, RDMAP_QN_SEND);
		send_untagged(&cv, d, RDMAP_SEND_INVAL, 300, RDMAP_QN_SEND);
		send_untagged(&cv, d, RDMAP_SEND_SE, 0, RDMAP_QN_SEND);
		send_untagged(&cv, d, RDMAP_SEND_SE_INVAL, 77, RDMAP_QN_SEND);
		send_imm(&cv, d, RDMAP_IMM_DATA);
		send_imm(&cv, d, RDMAP_IMM_DATA_SE);
		send_tagged(&cv, d, RDMAP_WRITE, 0x5501 + d, 0x10000, 9000);
		send_tagged(&cv, d, RDMAP_WRITE, 0x5501 + d, 0x20000, 0);
		flush(&cv, d);
		send_read_req(&cv, d, 6000 + 13 * d);
		send_atomics(&cv, d);
		if (cv.cut)
			end_on_marker(&cv, d);
	}
	send_terminate(&cv, 1);
	if (cv.cut)
		cut_emit(&cv);
	tcp_conv_close(&cv.tcp);
}

int main(int argc, char **argv)
{
	struct pcap_out out;
	size_t i;

	if (argc == 4 && !strcmp(argv[1], "--cut")) {
		cut_flaw = argv[2];
		if (!flaw("none") && !flaw("reorder") && !flaw("hole") &&
		    !flaw("retx") && !flaw("marker") && !flaw("length") &&
		    !flaw("crc"))
			die("--cut: no such flaw", 0);
		argv += 2;
	} else if (argc != 2) {
		fprintf(stderr,
			"usage: wire_capture [--cut none|reorder|hole|retx|"
			"marker|length|crc] FILE.pcap\n");
		return 2;
	}
	for (i = 0; i < sizeof(payload); i++)
		payload[i] = (u8)(i * 7 + (i >> 8));
	if (pcap_out_open(&out, argv[1]))
		die("cannot write the capture", 0);
	if (cut_flaw) {
		/* An ephemeral port TCP's port table gives to EtherNet/IP: the
		 * judge must still find MPA there (TSHARK_IWARP). */
		conversation(&out, 44818, MPA_REV_2, true, SWIW_MPA_RTR_F_WRITE,
			     true, true, 1460, 1460, true);
	} else {
		conversation(&out, 40001, MPA_REV_1, false, 0, false, false,
			     1460, 1460, false);
		conversation(&out, 40002, MPA_REV_2, true, SWIW_MPA_RTR_F_WRITE,
			     false, false, 1460, 1460, true);
		conversation(&out, 40003, MPA_REV_2, true, SWIW_MPA_RTR_F_READ,
			     true, true, 1460, 1460, false);
		conversation(&out, 40004, MPA_REV_2, true, SWIW_MPA_RTR_F_WRITE,
			     false, false, 1460, 700, false);
	}
	pcap_out_close(&out);

	printf("fpdus %u\nmpa_frames %u\nopcodes", n_fpdus, n_mpa_frames);
	for (i = 0; i < 16; i++)
		if (opcode_seen[i])
			printf(" %zu", i);
	printf("\n");
	return 0;
}
