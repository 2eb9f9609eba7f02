// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * swiw-bench: RDMA ping-pong over any verbs device, through librdmacm, for
 * the operations perftest 4.5 has no latency test of (RDMA Write with
 * Immediate) and the same ping for Send, Write and Read beside them.
 *
 *   send       the client Sends S bytes, the server's Receive completes and
 *              it Sends S bytes back;
 *   write_imm  the same with RDMA Write with Immediate into the peer's
 *              buffer: each completes a Receive at the target;
 *   write      the client Writes S bytes whose last byte is a sequence
 *              number; the server polls its buffer for it and Writes back
 *              (ib_write_lat's method; no completion at the target);
 *   read       the client Reads S bytes from the server's buffer; the
 *              server's program takes no part.
 *
 * One-way time is half the round trip (the round trip itself for read), as
 * perftest prints it, in perftest's columns: the figure perf_vs_tcp.sh
 * takes is t_typical, the median. Completions are busy-polled, or waited
 * for on a completion channel with -e (not for write, which polls memory).
 *
 * Each size is one connection. The client names the point in the
 * connection's private data (operation, size, iterations, its buffer) and
 * the server answers with its own buffer; the last point says it is the
 * last, and the server then exits. A request is input from the network:
 * anything outside the limits below is rejected before memory is taken.
 */
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "swiw_bench_util.h"

#define SWIW_BENCH_MAGIC 0x53574250u /* "SWBP" */
#define SWIW_BENCH_VERSION 1
#define SWIW_BENCH_MAX_SIZE (64u << 20)
#define SWIW_BENCH_MAX_ITERS 10000000u
#define SWIW_BENCH_RECVS 8 /* Receives kept posted */
#define SWIW_BENCH_INLINE 256
#define SWIW_BENCH_CM_MS 10000 /* address and route resolution */

enum swiw_bench_op {
	SWIW_BENCH_SEND = 1,
	SWIW_BENCH_WRITE_IMM,
	SWIW_BENCH_WRITE,
	SWIW_BENCH_READ,
};

#define SWIW_BENCH_F_EVENT 0x1u /* wait on a completion channel */
#define SWIW_BENCH_F_LAST 0x2u /* the server exits after this point */
/* write: the waiting side polls its CQ while it polls its memory */
#define SWIW_BENCH_F_PROGRESS 0x4u

/* The client's connect private data, in network byte order. */
struct swiw_bench_req {
	uint32_t magic;
	uint8_t version;
	uint8_t op;
	uint16_t flags;
	uint32_t size;
	uint32_t iters;
	uint32_t warmup;
	uint32_t rkey;
	uint64_t addr;
} __attribute__((packed));

/* The server's accept private data. */
struct swiw_bench_rep {
	uint32_t magic;
	uint32_t rkey;
	uint64_t addr;
} __attribute__((packed));

_Static_assert(sizeof(struct swiw_bench_req) == 32, "request layout");
_Static_assert(sizeof(struct swiw_bench_rep) == 16, "reply layout");

static const char *prog = "swiw-bench";

static const struct {
	const char *name;
	enum swiw_bench_op op;
} ops[] = {
	{ "send", SWIW_BENCH_SEND },
	{ "write_imm", SWIW_BENCH_WRITE_IMM },
	{ "write", SWIW_BENCH_WRITE },
	{ "read", SWIW_BENCH_READ },
};

/* One side of one connection: the point and its verbs objects. */
struct swiw_bench_conn {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char *buf; /* what is sent or read into, then what the peer targets */
	uint32_t max_inline;
	/* the point */
	enum swiw_bench_op op;
	uint32_t flags, size, iters, warmup;
	/* the peer's buffer */
	uint64_t raddr;
	uint32_t rkey;
	/* Send completions not yet reaped */
	unsigned int sends_out;
};

static const char *op_name(enum swiw_bench_op op)
{
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (ops[i].op == op)
			return ops[i].name;
	return "?";
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s --server [options]           serve until a client's last point\n"
		"       %s [options] HOST                run the points against HOST\n"
		"\n"
		"Options (the client's are the ones used):\n"
		"  -o, --op OP         send, write_imm, write or read (default send)\n"
		"  -s, --size LIST     comma-separated sizes in bytes, 1..%u (default 2)\n"
		"  -a, --all           sizes 2^0..2^23, as perftest's -a\n"
		"  -n, --iters N       timed round trips per size (default 1000)\n"
		"  -w, --warmup N      untimed round trips first (default 16)\n"
		"  -e, --event         wait for completions on a completion channel\n"
		"  -P, --progress      write: poll the CQ while polling memory, as\n"
		"                      UCX's ucp_put_lat calls progress while waiting\n"
		"  -p, --port PORT     port (default 18516)\n"
		"  -b, --bind ADDR     server: listen on ADDR only\n"
		"  -h, --help          this text\n",
		prog, prog, SWIW_BENCH_MAX_SIZE);
}

/* Keeps one more Receive posted: S bytes for send, none for write_imm. */
static int post_recv(struct swiw_bench_conn *c)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(c->buf + c->size),
		.length = c->size,
		.lkey = c->mr->lkey,
	};
	struct ibv_recv_wr wr = { .sg_list = &sge }, *bad;
	int err;

	if (c->op == SWIW_BENCH_SEND)
		wr.num_sge = 1;
	err = ibv_post_recv(c->id->qp, &wr, &bad);
	if (err)
		fprintf(stderr, "%s: ibv_post_recv: %s\n", prog, strerror(err));
	return err ? -1 : 0;
}

static void conn_free(struct swiw_bench_conn *c)
{
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->mr)
		ibv_dereg_mr(c->mr);
	free(c->buf);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->ch)
		ibv_destroy_comp_channel(c->ch);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	c->mr = NULL;
	c->buf = NULL;
	c->cq = NULL;
	c->ch = NULL;
	c->pd = NULL;
}

/* The verbs objects of @c on @c->id's device, for the point in @c. */
static int conn_setup(struct swiw_bench_conn *c)
{
	struct ibv_qp_init_attr qa = { 0 };
	size_t len = 2 * (size_t)c->size;
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ;
	unsigned int i;

	c->pd = ibv_alloc_pd(c->id->verbs);
	if (!c->pd) {
		fprintf(stderr, "%s: ibv_alloc_pd: %s\n", prog,
			strerror(errno));
		return -1;
	}
	if (c->flags & SWIW_BENCH_F_EVENT) {
		c->ch = ibv_create_comp_channel(c->id->verbs);
		if (!c->ch) {
			fprintf(stderr, "%s: ibv_create_comp_channel: %s\n",
				prog, strerror(errno));
			return -1;
		}
	}
	c->cq = ibv_create_cq(c->id->verbs, 2 * SWIW_BENCH_RECVS + 4, NULL,
			      c->ch, 0);
	if (!c->cq) {
		fprintf(stderr, "%s: ibv_create_cq: %s\n", prog,
			strerror(errno));
		return -1;
	}
	c->buf = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
	if (!c->buf) {
		fprintf(stderr, "%s: out of memory for %zu bytes\n", prog, len);
		return -1;
	}
	memset(c->buf, 0, len);
	c->mr = ibv_reg_mr(c->pd, c->buf, len, access);
	if (!c->mr) {
		fprintf(stderr, "%s: ibv_reg_mr of %zu bytes: %s\n", prog, len,
			strerror(errno));
		return -1;
	}
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = SWIW_BENCH_RECVS;
	qa.cap.max_recv_wr = SWIW_BENCH_RECVS;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = SWIW_BENCH_INLINE;
	if (rdma_create_qp(c->id, c->pd, &qa)) {
		/* A device without inline data */
		qa.cap.max_inline_data = 0;
		if (rdma_create_qp(c->id, c->pd, &qa)) {
			fprintf(stderr, "%s: rdma_create_qp: %s\n", prog,
				strerror(errno));
			return -1;
		}
	}
	c->max_inline = qa.cap.max_inline_data;
	if (c->op == SWIW_BENCH_SEND || c->op == SWIW_BENCH_WRITE_IMM)
		for (i = 0; i < SWIW_BENCH_RECVS; i++)
			if (post_recv(c))
				return -1;
	if (c->ch && ibv_req_notify_cq(c->cq, 0)) {
		fprintf(stderr, "%s: ibv_req_notify_cq failed\n", prog);
		return -1;
	}
	return 0;
}

/*
 * Takes completions until one of @want's kind: a Receive (send and
 * write_imm), the Read itself (read), or, with @want 0, any Send-side one.
 * Receives are reposted as they complete.
 */
static int reap(struct swiw_bench_conn *c, enum ibv_wc_opcode want,
		bool any_send)
{
	struct ibv_cq *ev_cq;
	struct ibv_wc wc;
	void *ev_ctx;
	int n;

	for (;;) {
		n = ibv_poll_cq(c->cq, 1, &wc);
		if (n < 0) {
			fprintf(stderr, "%s: ibv_poll_cq failed\n", prog);
			return -1;
		}
		if (n == 0) {
			if (!c->ch)
				continue;
			/* Armed before this poll found nothing: wait, re-arm,
			 * then poll again. */
			if (ibv_get_cq_event(c->ch, &ev_cq, &ev_ctx)) {
				fprintf(stderr, "%s: ibv_get_cq_event: %s\n",
					prog, strerror(errno));
				return -1;
			}
			ibv_ack_cq_events(ev_cq, 1);
			if (ibv_req_notify_cq(c->cq, 0)) {
				fprintf(stderr,
					"%s: ibv_req_notify_cq failed\n", prog);
				return -1;
			}
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "%s: %s completion: %s\n", prog,
				op_name(c->op), ibv_wc_status_str(wc.status));
			return -1;
		}
		if (!(wc.opcode & IBV_WC_RECV)) {
			c->sends_out--;
			if (any_send || wc.opcode == want)
				return 0;
			continue;
		}
		if (post_recv(c))
			return -1;
		if (wc.opcode == want)
			return 0;
	}
}

/* Posts the point's operation, its last byte @seq for write. */
static int post_op(struct swiw_bench_conn *c, uint8_t seq)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)c->buf,
		.length = c->size,
		.lkey = c->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = c->raddr, .rkey = c->rkey },
	}, *bad;
	int err;

	/*
	 * The buffer is the source of the last request too: it may change
	 * only once that one has completed (the answer came back, so its
	 * completion is normally waiting already).
	 */
	while (c->sends_out > 0)
		if (reap(c, 0, true))
			return -1;
	/* The answer must carry it back: a check of the data path. */
	c->buf[c->size - 1] = (char)seq;
	switch (c->op) {
	case SWIW_BENCH_SEND:
		wr.opcode = IBV_WR_SEND;
		break;
	case SWIW_BENCH_WRITE_IMM:
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htobe32(seq);
		break;
	case SWIW_BENCH_WRITE:
		wr.opcode = IBV_WR_RDMA_WRITE;
		break;
	case SWIW_BENCH_READ:
		wr.opcode = IBV_WR_RDMA_READ;
		break;
	}
	if (c->op != SWIW_BENCH_READ && c->size <= c->max_inline)
		wr.send_flags |= IBV_SEND_INLINE;
	err = ibv_post_send(c->id->qp, &wr, &bad);
	if (err) {
		fprintf(stderr, "%s: ibv_post_send: %s\n", prog, strerror(err));
		return -1;
	}
	c->sends_out++;
	return 0;
}

/*
 * write: the peer's Write has placed @seq in our buffer's last byte. This
 * is RDMA's memory-polling idiom: the read races with the placement by
 * design, as with an RNIC's DMA, so it is no data race for TSan to judge.
 */
__attribute__((no_sanitize("thread"))) static bool
mem_has(const struct swiw_bench_conn *c, uint8_t seq)
{
	const volatile char *last = c->buf + 2 * (size_t)c->size - 1;

	return (uint8_t)*last == seq;
}

/*
 * With --progress the wait polls the CQ as well, the idiom of UCX's
 * ucp_put_lat (its responder calls ucp_worker_progress while it waits):
 * a library whose progress is the program's own calls places the Write
 * there. The completions it takes are the Writes' own.
 */
static int wait_mem(struct swiw_bench_conn *c, uint8_t seq)
{
	struct ibv_wc wc;
	int n;

	while (!mem_has(c, seq)) {
		if (!(c->flags & SWIW_BENCH_F_PROGRESS))
			continue;
		n = ibv_poll_cq(c->cq, 1, &wc);
		if (n < 0) {
			fprintf(stderr, "%s: ibv_poll_cq failed\n", prog);
			return -1;
		}
		if (!n)
			continue;
		if (wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "%s: write completion: %s\n", prog,
				ibv_wc_status_str(wc.status));
			return -1;
		}
		if (wc.opcode & IBV_WC_RECV) {
			fprintf(stderr,
				"%s: a receive completed in a write point\n",
				prog);
			return -1;
		}
		c->sends_out--;
	}
	return 0;
}

/* The one-way wait of a round trip: the peer's answer has arrived. */
static int wait_answer(struct swiw_bench_conn *c, uint8_t seq)
{
	uint8_t got;
	int err = -1;

	switch (c->op) {
	case SWIW_BENCH_SEND:
		err = reap(c, IBV_WC_RECV, false);
		break;
	case SWIW_BENCH_WRITE_IMM:
		err = reap(c, IBV_WC_RECV_RDMA_WITH_IMM, false);
		break;
	case SWIW_BENCH_WRITE:
		return wait_mem(c, seq);
	case SWIW_BENCH_READ:
		return reap(c, IBV_WC_RDMA_READ, false);
	}
	got = (uint8_t)c->buf[2 * (size_t)c->size - 1];
	if (!err && got != seq) {
		fprintf(stderr,
			"%s: %s: the answer's last byte is %u, %u was due\n",
			prog, op_name(c->op), got, seq);
		err = -1;
	}
	return err;
}

static uint8_t seq_of(uint32_t i)
{
	return (uint8_t)(i % 255 + 1);
}

/* The client's round trips of one point, and its line of figures. */
static int run_client(struct swiw_bench_conn *c)
{
	struct swiw_bu_stats st;
	double *rtt, t0, scale;
	uint32_t i, n = c->iters;

	rtt = malloc(n * sizeof(*rtt));
	if (!rtt) {
		fprintf(stderr, "%s: out of memory for %u samples\n", prog, n);
		return -1;
	}
	for (i = 0; i < c->warmup + n; i++) {
		t0 = swiw_bu_now();
		if (post_op(c, seq_of(i)) || wait_answer(c, seq_of(i))) {
			free(rtt);
			return -1;
		}
		if (i >= c->warmup)
			rtt[i - c->warmup] = swiw_bu_now() - t0;
	}
	swiw_bu_stats(rtt, n, &st);
	free(rtt);
	/* usec; one way is half the round trip, a Read is the round trip */
	scale = c->op == SWIW_BENCH_READ ? 1e6 : 0.5e6;
	printf(" %-7u %-13u %-13.2f %-13.2f %-17.2f %-13.2f %-13.2f %-16.2f %.2f\n",
	       c->size, n, st.min * scale, st.max * scale, st.median * scale,
	       st.avg * scale, st.stdev * scale, st.p99 * scale,
	       st.p999 * scale);
	fflush(stdout);
	return 0;
}

/* The server's half of one point's round trips. */
static int run_server(struct swiw_bench_conn *c)
{
	uint32_t i;

	if (c->op == SWIW_BENCH_READ)
		return 0; /* passive: the device answers */
	for (i = 0; i < c->warmup + c->iters; i++)
		if (wait_answer(c, seq_of(i)) || post_op(c, seq_of(i)))
			return -1;
	return 0;
}

/*
 * The next event on @ec, which must be @want for @id: anything else is
 * an error, except a connection request for another id, which is turned
 * away (one point at a time). The private data, if @pd, is copied to it.
 */
static int get_event(struct rdma_event_channel *ec, struct rdma_cm_id *id,
		     enum rdma_cm_event_type want, void *pd, size_t pd_len)
{
	struct rdma_cm_event *ev;
	int status;

	for (;;) {
		if (rdma_get_cm_event(ec, &ev)) {
			fprintf(stderr, "%s: rdma_get_cm_event: %s\n", prog,
				strerror(errno));
			return -1;
		}
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct rdma_cm_id *other = ev->id;

			rdma_ack_cm_event(ev);
			rdma_reject(other, NULL, 0);
			rdma_destroy_id(other);
			continue;
		}
		break;
	}
	if (ev->event != want || ev->id != id) {
		fprintf(stderr, "%s: %s (status %d) where %s was due\n", prog,
			rdma_event_str(ev->event), ev->status,
			rdma_event_str(want));
		rdma_ack_cm_event(ev);
		return -1;
	}
	status = 0;
	if (pd) {
		if (ev->param.conn.private_data_len < pd_len ||
		    !ev->param.conn.private_data) {
			fprintf(stderr,
				"%s: %s carried %u bytes of private data, %zu due\n",
				prog, rdma_event_str(ev->event),
				ev->param.conn.private_data_len, pd_len);
			status = -1;
		} else {
			memcpy(pd, ev->param.conn.private_data, pd_len);
		}
	}
	rdma_ack_cm_event(ev);
	return status;
}

/* Checks a client's request (network input) and takes its point. */
static int take_request(struct swiw_bench_conn *c,
			const struct swiw_bench_req *r)
{
	uint32_t size = be32toh(r->size), iters = be32toh(r->iters);
	uint32_t warmup = be32toh(r->warmup), flags = be16toh(r->flags);

	if (be32toh(r->magic) != SWIW_BENCH_MAGIC ||
	    r->version != SWIW_BENCH_VERSION)
		return -1;
	if (r->op < SWIW_BENCH_SEND || r->op > SWIW_BENCH_READ)
		return -1;
	if (!size || size > SWIW_BENCH_MAX_SIZE || !iters ||
	    iters > SWIW_BENCH_MAX_ITERS || warmup > SWIW_BENCH_MAX_ITERS)
		return -1;
	if (flags &
	    ~(SWIW_BENCH_F_EVENT | SWIW_BENCH_F_LAST | SWIW_BENCH_F_PROGRESS))
		return -1;
	c->op = r->op;
	c->size = size;
	c->iters = iters;
	c->warmup = warmup;
	c->flags = flags;
	c->raddr = be64toh(r->addr);
	c->rkey = be32toh(r->rkey);
	return 0;
}

static int addr_of(const char *host, const char *port, bool passive,
		   struct addrinfo **ai)
{
	struct addrinfo hints = {
		.ai_family = AF_INET,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = passive ? AI_PASSIVE : 0,
	};
	int err = getaddrinfo(host, port, &hints, ai);

	if (err)
		fprintf(stderr, "%s: %s port %s: %s\n", prog,
			host ? host : "(any)", port, gai_strerror(err));
	return err ? -1 : 0;
}

static struct rdma_event_channel *new_channel(void)
{
	struct rdma_event_channel *ec = rdma_create_event_channel();

	if (!ec)
		fprintf(stderr, "%s: rdma_create_event_channel: %s\n", prog,
			strerror(errno));
	return ec;
}

/* Ends the server's side of a point whose client is done. */
static void end_point(struct swiw_bench_conn *c)
{
	/* The last answers are on their way before the connection goes. */
	while (c->sends_out)
		if (reap(c, 0, true))
			break;
	rdma_disconnect(c->id);
	conn_free(c);
	rdma_destroy_id(c->id);
	c->id = NULL;
}

/* Accepts the point in @c (its request taken) and runs its round trips. */
static int start_point(struct rdma_event_channel *ec, struct swiw_bench_conn *c)
{
	struct swiw_bench_rep rep = { .magic = htobe32(SWIW_BENCH_MAGIC) };
	struct rdma_conn_param cp = {
		.private_data = &rep,
		.private_data_len = sizeof(rep),
		.responder_resources = 1,
		.initiator_depth = 1,
	};

	if (conn_setup(c)) {
		rdma_reject(c->id, NULL, 0);
		return -1;
	}
	rep.addr = htobe64((uintptr_t)(c->buf + c->size));
	rep.rkey = htobe32(c->mr->rkey);
	if (rdma_accept(c->id, &cp)) {
		fprintf(stderr, "%s: rdma_accept: %s\n", prog, strerror(errno));
		return -1;
	}
	if (get_event(ec, c->id, RDMA_CM_EVENT_ESTABLISHED, NULL, 0))
		return -1;
	return run_server(c);
}

/*
 * One point at a time: a client starts the next only once it is done
 * with the last, so a new request also ends the point before it (whose
 * DISCONNECTED may come later). The last point's end ends the server.
 */
static int server(const char *bind_addr, const char *port)
{
	struct rdma_event_channel *ec = new_channel();
	struct swiw_bench_conn cur = { 0 };
	struct rdma_cm_id *lid = NULL;
	struct addrinfo *ai = NULL;
	bool last = false;
	int rc = 1;

	if (!ec)
		return 1;
	if (addr_of(bind_addr, port, true, &ai))
		goto out;
	if (rdma_create_id(ec, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, ai->ai_addr) || rdma_listen(lid, 8)) {
		fprintf(stderr, "%s: cannot listen on port %s: %s\n", prog,
			port, strerror(errno));
		goto out;
	}
	for (;;) {
		struct swiw_bench_conn next = { 0 };
		enum rdma_cm_event_type type;
		struct swiw_bench_req req;
		struct rdma_cm_event *ev;
		bool valid = false;

		if (rdma_get_cm_event(ec, &ev)) {
			fprintf(stderr, "%s: rdma_get_cm_event: %s\n", prog,
				strerror(errno));
			goto out;
		}
		type = ev->event;
		next.id = ev->id;
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST &&
		    ev->param.conn.private_data &&
		    ev->param.conn.private_data_len >= sizeof(req)) {
			memcpy(&req, ev->param.conn.private_data, sizeof(req));
			valid = true;
		}
		rdma_ack_cm_event(ev);
		if (cur.id && next.id == cur.id) {
			if (type != RDMA_CM_EVENT_DISCONNECTED)
				continue;
			end_point(&cur);
			if (last)
				break;
			continue;
		}
		if (type != RDMA_CM_EVENT_CONNECT_REQUEST)
			continue;
		if (!valid || take_request(&next, &req)) {
			fprintf(stderr,
				"%s: turned away a request that is no point\n",
				prog);
			rdma_reject(next.id, NULL, 0);
			rdma_destroy_id(next.id);
			continue;
		}
		if (cur.id)
			end_point(&cur);
		if (start_point(ec, &next)) {
			conn_free(&next);
			rdma_destroy_id(next.id);
			goto out;
		}
		cur = next;
		last = cur.flags & SWIW_BENCH_F_LAST;
	}
	rc = 0;
out:
	if (cur.id)
		end_point(&cur);
	if (ai)
		freeaddrinfo(ai);
	if (lid)
		rdma_destroy_id(lid);
	rdma_destroy_event_channel(ec);
	return rc;
}

/* One point against @ai: connect, run the round trips, disconnect. */
static int client_point(struct rdma_event_channel *ec, struct addrinfo *ai,
			struct swiw_bench_conn *c)
{
	struct swiw_bench_req req = {
		.magic = htobe32(SWIW_BENCH_MAGIC),
		.version = SWIW_BENCH_VERSION,
		.op = (uint8_t)c->op,
		.flags = htobe16((uint16_t)c->flags),
		.size = htobe32(c->size),
		.iters = htobe32(c->iters),
		.warmup = htobe32(c->warmup),
	};
	struct rdma_conn_param cp = {
		.private_data = &req,
		.private_data_len = sizeof(req),
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = 7,
	};
	struct swiw_bench_rep rep;
	int rc = -1;

	if (rdma_create_id(ec, &c->id, NULL, RDMA_PS_TCP)) {
		fprintf(stderr, "%s: rdma_create_id: %s\n", prog,
			strerror(errno));
		return -1;
	}
	if (rdma_resolve_addr(c->id, NULL, ai->ai_addr, SWIW_BENCH_CM_MS) ||
	    get_event(ec, c->id, RDMA_CM_EVENT_ADDR_RESOLVED, NULL, 0) ||
	    rdma_resolve_route(c->id, SWIW_BENCH_CM_MS) ||
	    get_event(ec, c->id, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL, 0)) {
		fprintf(stderr, "%s: cannot resolve the server's address\n",
			prog);
		goto out;
	}
	if (conn_setup(c))
		goto out;
	req.addr = htobe64((uintptr_t)(c->buf + c->size));
	req.rkey = htobe32(c->mr->rkey);
	if (rdma_connect(c->id, &cp)) {
		fprintf(stderr, "%s: rdma_connect: %s\n", prog,
			strerror(errno));
		goto out;
	}
	if (get_event(ec, c->id, RDMA_CM_EVENT_ESTABLISHED, &rep, sizeof(rep)))
		goto out;
	if (be32toh(rep.magic) != SWIW_BENCH_MAGIC) {
		fprintf(stderr, "%s: the server's reply is not swiw-bench's\n",
			prog);
		goto out;
	}
	c->raddr = be64toh(rep.addr);
	c->rkey = be32toh(rep.rkey);
	if (run_client(c))
		goto out;
	rdma_disconnect(c->id);
	if (get_event(ec, c->id, RDMA_CM_EVENT_DISCONNECTED, NULL, 0))
		goto out;
	rc = 0;
out:
	conn_free(c);
	rdma_destroy_id(c->id);
	c->id = NULL;
	return rc;
}

static int client(const char *host, const char *port,
		  const struct swiw_bench_conn *point, const uint32_t *sizes,
		  unsigned int nsizes)
{
	struct rdma_event_channel *ec = new_channel();
	struct addrinfo *ai = NULL;
	unsigned int i;
	int rc = 1;

	if (!ec)
		return 1;
	if (addr_of(host, port, false, &ai))
		goto out;
	printf("swiw-bench ping: %s, %s; %u iterations after %u untimed\n",
	       op_name(point->op),
	       point->flags & SWIW_BENCH_F_EVENT ?
		       "completion events" :
	       point->flags & SWIW_BENCH_F_PROGRESS ?
		       "the target polls its memory and its CQ" :
	       point->op == SWIW_BENCH_WRITE ? "the target polls its memory" :
					       "busy polling",
	       point->iters, point->warmup);
	printf(" %-7s %-13s %-13s %-13s %-17s %-13s %-13s %-16s %s\n", "#bytes",
	       "#iterations", "t_min[usec]", "t_max[usec]", "t_typical[usec]",
	       "t_avg[usec]", "t_stdev[usec]", "99%[usec]", "99.9%[usec]");
	for (i = 0; i < nsizes; i++) {
		struct swiw_bench_conn c = *point;

		c.size = sizes[i];
		if (i + 1 == nsizes)
			c.flags |= SWIW_BENCH_F_LAST;
		if (client_point(ec, ai, &c))
			goto out;
	}
	rc = 0;
out:
	if (ai)
		freeaddrinfo(ai);
	rdma_destroy_event_channel(ec);
	return rc;
}

/* Parses "1,64,4096" into @sizes (at most @max); the count, or 0. */
static unsigned int parse_sizes(char *list, uint32_t *sizes, unsigned int max)
{
	unsigned int n = 0;
	char *tok, *save;

	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == max ||
		    !swiw_bu_parse_u32(tok, 1, SWIW_BENCH_MAX_SIZE, &sizes[n]))
			return 0;
		n++;
	}
	return n;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "server", no_argument, NULL, 'S' },
		{ "op", required_argument, NULL, 'o' },
		{ "size", required_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'a' },
		{ "iters", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "event", no_argument, NULL, 'e' },
		{ "progress", no_argument, NULL, 'P' },
		{ "port", required_argument, NULL, 'p' },
		{ "bind", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct swiw_bench_conn point = {
		.op = SWIW_BENCH_SEND,
		.iters = 1000,
		.warmup = 16,
	};
	const char *port = "18516", *bind_addr = NULL;
	uint32_t sizes[64] = { 2 }, v;
	unsigned int nsizes = 1, i;
	bool is_server = false, found;
	int c;

	if (argc > 0 && argv[0][0])
		prog = argv[0];
	while ((c = getopt_long(argc, argv, "So:s:an:w:ePp:b:h", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'S':
			is_server = true;
			break;
		case 'o':
			found = false;
			for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
				if (!strcmp(optarg, ops[i].name)) {
					point.op = ops[i].op;
					found = true;
				}
			if (!found)
				goto bad_value;
			break;
		case 's':
			nsizes = parse_sizes(optarg, sizes, 64);
			if (!nsizes)
				goto bad_value;
			break;
		case 'a':
			for (nsizes = 0; nsizes <= 23; nsizes++)
				sizes[nsizes] = 1u << nsizes;
			break;
		case 'n':
			if (!swiw_bu_parse_u32(optarg, 1, SWIW_BENCH_MAX_ITERS,
					       &point.iters))
				goto bad_value;
			break;
		case 'w':
			if (!swiw_bu_parse_u32(optarg, 0, SWIW_BENCH_MAX_ITERS,
					       &point.warmup))
				goto bad_value;
			break;
		case 'e':
			point.flags |= SWIW_BENCH_F_EVENT;
			break;
		case 'P':
			point.flags |= SWIW_BENCH_F_PROGRESS;
			break;
		case 'p':
			if (!swiw_bu_parse_u32(optarg, 1, 65535, &v))
				goto bad_value;
			port = optarg;
			break;
		case 'b':
			bind_addr = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (is_server ? optind != argc : optind + 1 != argc) {
		fprintf(stderr, "%s: %s\n", prog,
			is_server ? "a server takes no HOST" :
				    "expected one HOST (or --server)");
		usage(stderr);
		return 2;
	}
	if (point.op == SWIW_BENCH_WRITE &&
	    (point.flags & SWIW_BENCH_F_EVENT)) {
		fprintf(stderr,
			"%s: write polls memory; -e applies to send, write_imm and read\n",
			prog);
		return 2;
	}
	if (point.op != SWIW_BENCH_WRITE &&
	    (point.flags & SWIW_BENCH_F_PROGRESS)) {
		fprintf(stderr, "%s: -P applies to write only\n", prog);
		return 2;
	}
	if (is_server)
		return server(bind_addr, port);
	return client(argv[optind], port, &point, sizes, nsizes);

bad_value:
	fprintf(stderr, "%s: bad value '%s' for -%c\n", prog, optarg, c);
	usage(stderr);
	return 2;
}
