// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * swiw_kdp_test [DEVICE]: the data path of swiw.ko (helper streams,
 * swiw-abi.h), against the real module in the VM lab. Both ends of a TCP
 * loopback pair are attached to the helper right after connect/accept (no
 * MPA: the marker origin is the attach point); this program plays the
 * upper half of each side: it cuts DDP segments with the wire core
 * (swiw_ddp_tx_*) into the transmit ring, posts RQEs and reads the event
 * rings, while the helper frames, places and answers in the kernel.
 *
 * Then what only a helper can do: place and answer for a process that is
 * stopped (SIGSTOP), and clean up after one killed mid-transfer (pins,
 * module references, RLIMIT_MEMLOCK charge).
 *
 * Prints one line per failed check and "N passed, N failed"; exits 0 only
 * if none failed, 77 if the device is absent. Needs lo up; run as root
 * (the RLIMIT_MEMLOCK part drops CAP_IPC_LOCK in a child).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>
#include <rdma/swiw-abi.h>

#include "swiw_ddp.h"
#include "swiw_fpdu.h"
#include "ktest.h"
#include "../lib/swiw_tcp_pair.h"

#define RING_NUM 64
#define RQ_STRIDE (SWIW_RQE_HDR_SIZE + 4 * sizeof(struct swiw_sge))
#define TX_STRIDE ((sizeof(struct swiw_txd) + 15) / 16 * 16)
#define RXEV_STRIDE ((sizeof(struct swiw_rxev) + 15) / 16 * 16)
#define WAIT_MS 5000

/* FPDU octets send_msg() queued (without markers), for plain peers. */
static uint64_t wire_octets;
static long page;

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One side's view of a ring (swiw-abi.h): the flags word is at 8. */
struct ring {
	uint8_t *base;
	uint32_t num, stride, pos, id;
	size_t size;
};

static uint16_t *slot_flags(struct ring *r, uint32_t pos)
{
	return (uint16_t *)(r->base + (size_t)(pos & (r->num - 1)) * r->stride +
			    8);
}

/* A side of a stream: its file, rings and the upper half's counters. */
struct ep {
	int fd, sock;
	uint32_t stream;
	struct ring rq, tx, rxev;
	uint32_t msn_send, msn_req; /* next MSN on QN 0 and QN 1 */
	uint32_t drained; /* events taken since the last doorbell */
	uint32_t mulpdu;
};

static int make_ring(int fd, uint32_t kind, uint32_t stride, struct ring *r)
{
	struct swiw_ioc_queue q = { .kind = kind,
				    .num = RING_NUM,
				    .stride = stride };
	int err = ioc(fd, SWIW_IOC_QUEUE, &q);

	if (err)
		return err;
	r->base = mmap(NULL, q.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, q.mmap_offset);
	if (r->base == MAP_FAILED)
		return errno;
	r->num = q.num;
	r->stride = q.stride;
	r->pos = 0;
	r->id = q.id;
	r->size = q.mmap_size;
	return 0;
}

/* The PD every stream and region is in, unless a test says otherwise. */
#define PD_MAIN 7
#define PD_OTHER 8

static int reg_mr_pd(int fd, void *addr, uint64_t len, uint32_t access,
		     uint32_t pd, uint32_t *stag)
{
	struct swiw_ioc_reg_mr r = {
		.addr = (uintptr_t)addr,
		.length = len,
		.access = access,
		.pd = pd,
		.iova = (uintptr_t)addr,
	};
	int err = ioc(fd, SWIW_IOC_REG_MR, &r);

	*stag = err ? 0 : r.stag;
	return err;
}

static int reg_mr(int fd, void *addr, uint64_t len, uint32_t access,
		  uint32_t *stag)
{
	return reg_mr_pd(fd, addr, len, access, PD_MAIN, stag);
}

/* Opens a file, makes the rings and attaches @sock: 0 or an errno. */
static int ep_open(struct ep *e, int sock, uint32_t flags)
{
	struct swiw_ioc_attach a = { .sock_fd = sock,
				     .flags = flags,
				     .ird = 16,
				     .ord = 16,
				     .pd = PD_MAIN,
				     .access = SWIW_ACCESS_REMOTE_WRITE |
					       SWIW_ACCESS_REMOTE_READ |
					       SWIW_ACCESS_REMOTE_ATOMIC };
	int mss = 0, err;
	socklen_t sl = sizeof(mss);

	memset(e, 0, sizeof(*e));
	e->fd = open_dev();
	e->sock = sock;
	e->msn_send = e->msn_req = 1;
	if ((err = make_ring(e->fd, SWIW_QUEUE_RQ, RQ_STRIDE, &e->rq)) ||
	    (err = make_ring(e->fd, SWIW_QUEUE_TX, TX_STRIDE, &e->tx)) ||
	    (err = make_ring(e->fd, SWIW_QUEUE_RXEV, RXEV_STRIDE, &e->rxev)))
		return err;
	if (getsockopt(sock, IPPROTO_TCP, TCP_MAXSEG, &mss, &sl))
		return errno;
	e->mulpdu =
		swiw_mpa_mulpdu((uint32_t)mss, flags & SWIW_ATTACH_MARKERS_TX);
	a.rq_id = e->rq.id;
	a.tx_id = e->tx.id;
	a.rxev_id = e->rxev.id;
	err = ioc(e->fd, SWIW_IOC_ATTACH, &a);
	e->stream = a.stream_id;
	return err;
}

static int ep_doorbell(struct ep *e)
{
	struct swiw_ioc_stream s = { .stream_id = e->stream };

	e->drained = 0;
	return ioc(e->fd, SWIW_IOC_DOORBELL, &s);
}

static int ep_detach(struct ep *e)
{
	struct swiw_ioc_stream s = { .stream_id = e->stream };

	return ioc(e->fd, SWIW_IOC_DETACH, &s);
}

static void ep_close(struct ep *e)
{
	struct ring *r[] = { &e->rq, &e->tx, &e->rxev };

	for (int i = 0; i < 3; i++)
		if (r[i]->base && r[i]->base != MAP_FAILED)
			munmap(r[i]->base, r[i]->size);
	close(e->fd);
	if (e->sock >= 0)
		close(e->sock);
	e->fd = e->sock = -1;
}

/* Producer: waits (ringing the doorbell) for the slot, fills it. */
static int ring_put(struct ep *e, struct ring *r, const void *elem, size_t len,
		    uint16_t flags)
{
	uint16_t *f = slot_flags(r, r->pos);
	long end = now_ms() + WAIT_MS;

	while (__atomic_load_n(f, __ATOMIC_ACQUIRE) & SWIW_SLOT_VALID) {
		if (now_ms() > end)
			return ETIMEDOUT;
		ep_doorbell(e);
		usleep(1000);
	}
	memcpy((uint8_t *)f - 8, elem, len);
	__atomic_store_n(f, flags | SWIW_SLOT_VALID, __ATOMIC_RELEASE);
	r->pos++;
	return 0;
}

static int post_rqe(struct ep *e, uint64_t id, void *addr, uint32_t len,
		    uint32_t lkey)
{
	struct {
		struct swiw_rqe h;
		struct swiw_sge sge;
	} q = {
		.h = { .id = id, .num_sge = 1 },
		.sge = { .laddr = (uintptr_t)addr, .length = len, .lkey = lkey }
	};

	return ring_put(e, &e->rq, &q, sizeof(q), 0);
}

static int post_txd(struct ep *e, const struct swiw_txd *t)
{
	int err = ring_put(e, &e->tx, t, sizeof(*t), t->flags);

	return err ?: ep_doorbell(e);
}

/* The next event, within @ms: 0, or ETIMEDOUT. */
static int get_event(struct ep *e, struct swiw_rxev *ev, int ms)
{
	long end = now_ms() + ms;

	for (;;) {
		uint16_t *f = slot_flags(&e->rxev, e->rxev.pos);
		struct pollfd p = { .fd = e->fd, .events = POLLIN };
		long left;

		if (__atomic_load_n(f, __ATOMIC_ACQUIRE) & SWIW_SLOT_VALID) {
			memcpy(ev, (uint8_t *)f - 8, sizeof(*ev));
			__atomic_store_n(f, 0, __ATOMIC_RELEASE);
			e->rxev.pos++;
			if (++e->drained >= e->rxev.num / 2)
				ep_doorbell(e);
			return 0;
		}
		left = end - now_ms();
		if (left <= 0)
			return ETIMEDOUT;
		poll(&p, 1, (int)left);
	}
}

/* Waits for an event of @type (others are reported and skipped). */
static int want_event(struct ep *e, uint8_t type, struct swiw_rxev *ev)
{
	for (;;) {
		int err = get_event(e, ev, WAIT_MS);

		if (err)
			return err;
		if (ev->type == type)
			return 0;
		/* Requests' own SENT events, when waiting for answers. */
		if (ev->type == SWIW_RXEV_SENT && !ev->status)
			continue;
		printf("note: event type %u (violation %u status %u) while waiting for %u\n",
		       ev->type, ev->violation, ev->status, type);
		if (ev->type == SWIW_RXEV_VIOLATION ||
		    ev->type == SWIW_RXEV_CLOSED)
			return EPROTO;
	}
}

/*
 * Cuts @m into segments of at most @seg octets (and the stream's
 * MULPDU), payload from @laddr (@lkey), into the transmit ring; the
 * last asks for a SENT event with @id. Returns 0 or an errno.
 */
static int send_msg(struct ep *e, const struct swiw_rdmap_msg *m,
		    const void *laddr, uint32_t lkey, uint32_t seg, uint64_t id,
		    bool stop_before_last)
{
	struct swiw_ddp_tx tx;
	struct swiw_ddp_txseg s;
	int ret;

	if (swiw_ddp_tx_init(&tx, m))
		return EINVAL;
	if (seg > e->mulpdu)
		seg = e->mulpdu;
	for (;;) {
		struct swiw_txd t = { .id = id };

		ret = swiw_ddp_tx_next(&tx, seg, t.hdr, sizeof(t.hdr), &s);
		if (ret == 0)
			break;
		if (ret != 1)
			return EINVAL;
		if (s.last && stop_before_last)
			return 0;
		t.hdr_len = (uint8_t)s.hdr_len;
		t.payload_len = s.payload_len;
		if (s.payload_len) {
			/* Two SGEs when it splits evenly: gather is tested. */
			uint32_t half = s.payload_len > 64 ? s.payload_len / 2 :
							     s.payload_len;

			t.num_sge = half == s.payload_len ? 1 : 2;
			t.sge[0] =
				(struct swiw_sge){ .laddr = (uintptr_t)laddr +
							    s.payload_off,
						   .length = half,
						   .lkey = lkey };
			t.sge[1] = (struct swiw_sge){
				.laddr =
					(uintptr_t)laddr + s.payload_off + half,
				.length = s.payload_len - half,
				.lkey = lkey
			};
		}
		t.flags = s.last ? SWIW_TXD_EVENT : 0;
		wire_octets +=
			swiw_mpa_fpdu_len(s.hdr_len + s.payload_len, 0, false);
		ret = post_txd(e, &t);
		if (ret)
			return ret;
	}
	return 0;
}

/* memcmp that says where the first difference is. */
static int differ(const uint8_t *got, const uint8_t *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (got[i] != want[i]) {
			printf("# differ at %zu of %zu: 0x%02x, want 0x%02x\n",
			       i, n, got[i], want[i]);
			return 1;
		}
	return 0;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7 + (i >> 9));
}

/* A connected TCP pair over loopback, both ends with TCP_NODELAY. */
static int tcp_pair(int *a, int *b)
{
	return swiw_tcp_pair(a, b, 0, true);
}

static void *map_anon(size_t len, bool shared)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS, -1,
		       0);

	return p == MAP_FAILED ? NULL : p;
}

/* --- the operations, as the upper half issues them ------------------ */

static int op_send(struct ep *e, const void *buf, uint32_t len, uint32_t lkey,
		   uint32_t seg, uint64_t id)
{
	struct swiw_rdmap_msg m = { .opcode = RDMAP_SEND,
				    .len = len,
				    .msn = e->msn_send++ };

	return send_msg(e, &m, buf, lkey, seg, id, false);
}

static int op_write(struct ep *e, const void *buf, uint32_t len, uint32_t lkey,
		    uint32_t rkey, uint64_t raddr, uint32_t seg)
{
	struct swiw_rdmap_msg m = {
		.opcode = RDMAP_WRITE, .len = len, .stag = rkey, .to = raddr
	};

	return send_msg(e, &m, buf, lkey, seg, 0, false);
}

static int op_read(struct ep *e, void *sink, uint32_t sink_stag, uint32_t len,
		   uint32_t rkey, uint64_t raddr)
{
	struct swiw_rdmap_msg m = { .opcode = RDMAP_READ_REQ,
				    .msn = e->msn_req++ };

	m.u.rreq = (struct swiw_rdmap_read_req){ .sink_stag = sink_stag,
						 .sink_to = (uintptr_t)sink,
						 .size = len,
						 .src_stag = rkey,
						 .src_to = raddr };
	return send_msg(e, &m, NULL, 0, 1U << 16, 0, false);
}

/* @ev is the segment event of a Read Response. */
static bool is_read_resp(const struct swiw_rxev *ev)
{
	return ev->type == SWIW_RXEV_SEGMENT &&
	       ev->hdr_len >= sizeof(struct ddp_tagged_hdr) &&
	       (ev->hdr[1] & 0xf) == RDMAP_READ_RESP;
}

/* A READ, to completion: the Read Response event names the sink. */
static int read_wait(struct ep *e, void *sink, uint32_t sink_stag, uint32_t len,
		     uint32_t rkey, uint64_t raddr)
{
	struct swiw_rxev ev;
	int err = op_read(e, sink, sink_stag, len, rkey, raddr);

	while (!err) {
		err = want_event(e, SWIW_RXEV_SEGMENT, &ev);
		if (!err && is_read_resp(&ev)) {
			uint32_t stag = (uint32_t)ev.hdr[2] << 24 |
					(uint32_t)ev.hdr[3] << 16 |
					(uint32_t)ev.hdr[4] << 8 | ev.hdr[5];

			if (stag != sink_stag || ev.len != len) {
				printf("Read Response: STag 0x%x len %u, want 0x%x %u\n",
				       stag, ev.len, sink_stag, len);
				return EPROTO;
			}
			return 0;
		}
	}
	return err;
}

/* An atomic, to completion: *@orig from the Atomic Response. */
static int atomic_wait(struct ep *e, uint32_t op, uint32_t rkey, uint64_t raddr,
		       uint64_t add_swap, uint64_t compare, uint64_t *orig)
{
	struct swiw_rdmap_msg m = { .opcode = RDMAP_ATOMIC_REQ,
				    .msn = e->msn_req++ };
	struct swiw_rxev ev;
	int err;

	m.u.areq = (struct swiw_rdmap_atomic_req){
		.op = op,
		.req_id = m.msn,
		.stag = rkey,
		.to = raddr,
		.add_swap = add_swap,
		.add_swap_mask = op == RDMAP_ATOMIC_FETCH_ADD ? 0 : ~0ULL,
		.compare = compare,
		.compare_mask = ~0ULL,
	};
	err = send_msg(e, &m, NULL, 0, 1U << 16, 0, false);
	while (!err) {
		err = want_event(e, SWIW_RXEV_SEGMENT, &ev);
		if (!err && (ev.hdr[1] & 0xf) == RDMAP_ATOMIC_RESP &&
		    ev.hdr_len >= sizeof(struct rdmap_atomic_resp)) {
			struct swiw_rdmap_atomic_resp r;

			swiw_rdmap_atomic_resp_get(
				ev.hdr + sizeof(struct ddp_untagged_hdr), &r);
			*orig = r.orig;
			return 0;
		}
	}
	return err;
}

/* Waits for the SENT event of txd @id. */
static int sent_wait(struct ep *e, uint64_t id)
{
	struct swiw_rxev ev;
	int err = want_event(e, SWIW_RXEV_SENT, &ev);

	if (!err && (ev.id != id || ev.status)) {
		printf("SENT id %llu status %u, want %llu 0\n",
		       (unsigned long long)ev.id, ev.status,
		       (unsigned long long)id);
		return EPROTO;
	}
	return err;
}

/* Waits for the Send that went into RQE @id: *@len its octets. */
static int recv_wait(struct ep *e, uint64_t id, uint32_t *len)
{
	struct swiw_rxev ev;
	int err = want_event(e, SWIW_RXEV_SEGMENT, &ev);

	if (!err && (!(ev.flags & SWIW_RXEV_RQE) || ev.id != id)) {
		printf("SEGMENT flags 0x%x id %llu, want an RQE %llu\n",
		       ev.flags, (unsigned long long)ev.id,
		       (unsigned long long)id);
		return EPROTO;
	}
	*len = ev.len;
	return err;
}

/* --- tests ---------------------------------------------------------- */

static bool settles(long (*fn)(void), long want);

/* SEND, WRITE, READ and atomics between two attached ends. */
static void test_ops(uint32_t flags, const char *what)
{
	size_t len = 64 * page;
	uint8_t *src = map_anon(len, false), *dst = map_anon(len, false);
	uint8_t *rbuf = map_anon(len, false), *sink = map_anon(len, false);
	uint32_t s_src = 0, s_dst = 0, s_rbuf = 0, s_sink = 0, s_atom = 0,
		 got = 0;
	uint64_t *atom = map_anon(page, false), orig = 0;
	struct ep a, b;
	struct pollfd p;
	int sa, sb;

	printf("# ops, %s\n", what);
	if (!src || !dst || !rbuf || !sink || !atom || tcp_pair(&sa, &sb)) {
		CHECK(0, "setup");
		return;
	}
	CHECK(!ep_open(&a, sa, flags), "attach a (%s)", what);
	CHECK(!ep_open(&b, sb, flags), "attach b (%s)", what);
	CHECK(!reg_mr(a.fd, src, len, 0, &s_src), "reg src");
	CHECK(!reg_mr(a.fd, sink, len, ACC_LOCAL_WRITE | ACC_REMOTE_WRITE,
		      &s_sink),
	      "reg sink");
	CHECK(!reg_mr(b.fd, dst, len,
		      ACC_LOCAL_WRITE | ACC_REMOTE_WRITE | ACC_REMOTE_READ,
		      &s_dst),
	      "reg dst");
	CHECK(!reg_mr(b.fd, rbuf, len, ACC_LOCAL_WRITE, &s_rbuf), "reg rbuf");
	CHECK(!reg_mr(b.fd, atom, page, ACC_LOCAL_WRITE | ACC_REMOTE_ATOMIC,
		      &s_atom),
	      "reg atomic");
	p = (struct pollfd){ .fd = b.fd, .events = POLLIN };
	CHECK(poll(&p, 1, 0) == 0, "no event yet: not readable");

	/* SEND into an RQE, in several segments. */
	fill(src, len, 1);
	CHECK(!post_rqe(&b, 0x5e4d, rbuf, 8192, s_rbuf), "post RQE");
	CHECK(!ep_doorbell(&b), "doorbell b");
	CHECK(!op_send(&a, src, 5000, s_src, 1000, 77), "send");
	CHECK(!sent_wait(&a, 77), "SENT event for the send");
	p = (struct pollfd){ .fd = b.fd, .events = POLLIN };
	CHECK(poll(&p, 1, WAIT_MS) == 1 && (p.revents & POLLIN),
	      "the receiver's file polls readable");
	CHECK(!recv_wait(&b, 0x5e4d, &got) && got == 5000,
	      "receive event, len %u", got);
	CHECK(!differ(rbuf, src, 5000), "sent data placed");

	/* WRITE (no event at the target), then a Send after it. */
	fill(src, len, 2);
	CHECK(!post_rqe(&b, 0x5e4e, rbuf, 8192, s_rbuf), "post RQE 2");
	CHECK(!op_write(&a, src, 20000, s_src, s_dst, (uintptr_t)dst + 100,
			4000),
	      "write");
	CHECK(!op_send(&a, src, 16, s_src, 1000, 78), "send after write");
	CHECK(!sent_wait(&a, 0), "SENT of the write");
	CHECK(!sent_wait(&a, 78), "SENT of the send");
	CHECK(!recv_wait(&b, 0x5e4e, &got) && got == 16, "send after write");
	CHECK(!differ(dst + 100, src, 20000) && dst[99] == 0 && dst[20100] == 0,
	      "written data placed, nothing around it");

	/* A large WRITE: TCP's send buffer fills, write_space goes on. */
	fill(src, len, 4);
	CHECK(!post_rqe(&b, 0x5e4f, rbuf, 8192, s_rbuf), "post RQE 3");
	CHECK(!op_write(&a, src, (uint32_t)len, s_src, s_dst, (uintptr_t)dst,
			1U << 16),
	      "large write");
	CHECK(!op_send(&a, src, 8, s_src, 1000, 79), "send after it");
	CHECK(!recv_wait(&b, 0x5e4f, &got) && got == 8, "send after write");
	CHECK(!differ(dst, src, len), "large write placed");

	/* READ: b's helper answers from dst into a's sink. */
	fill(dst, len, 3);
	CHECK(!read_wait(&a, sink + 8, s_sink, 30000, s_dst,
			 (uintptr_t)dst + 12),
	      "read");
	CHECK(!differ(sink + 8, dst + 12, 30000) && sink[7] == 0,
	      "read data placed");
	/* A large one: 48 pages, more than one segment at any MULPDU. */
	CHECK(!read_wait(&a, sink, s_sink, 48 * page, s_dst, (uintptr_t)dst),
	      "large read");
	CHECK(!differ(sink, dst, 48 * page), "large read data");

	/* Atomics. */
	atom[1] = 100;
	CHECK(!atomic_wait(&a, RDMAP_ATOMIC_FETCH_ADD, s_atom,
			   (uintptr_t)&atom[1], 5, 0, &orig) &&
		      orig == 100 && atom[1] == 105,
	      "fetch-add: orig %llu now %llu", (unsigned long long)orig,
	      (unsigned long long)atom[1]);
	CHECK(!atomic_wait(&a, RDMAP_ATOMIC_CMP_SWAP, s_atom,
			   (uintptr_t)&atom[1], 7, 105, &orig) &&
		      orig == 105 && atom[1] == 7,
	      "cmp-swap hit: orig %llu now %llu", (unsigned long long)orig,
	      (unsigned long long)atom[1]);
	CHECK(!atomic_wait(&a, RDMAP_ATOMIC_CMP_SWAP, s_atom,
			   (uintptr_t)&atom[1], 9, 1, &orig) &&
		      orig == 7 && atom[1] == 7,
	      "cmp-swap miss: orig %llu now %llu", (unsigned long long)orig,
	      (unsigned long long)atom[1]);

	/* A WRITE to a read-only region: b reports a VIOLATION. */
	CHECK(!op_write(&a, src, 100, s_src, s_rbuf, (uintptr_t)rbuf, 4000),
	      "write to a region without remote write");
	{
		struct swiw_rxev ev;

		CHECK(!get_event(&b, &ev, WAIT_MS) &&
			      ev.type == SWIW_RXEV_VIOLATION,
		      "violation at the target (type %u)", ev.type);
	}
	CHECK(!ep_detach(&a) && !ep_detach(&b), "detach");
	CHECK(ep_detach(&a) == EINVAL, "second detach");
	CHECK(!dereg_mr(b.fd, s_dst), "dereg after detach");
	ep_close(&a);
	ep_close(&b);
	munmap(src, len);
	munmap(dst, len);
	munmap(rbuf, len);
	munmap(sink, len);
	munmap(atom, page);
}

/* A plain TCP peer: garbage is a VIOLATION, a FIN is CLOSED status 0. */
static void test_plain_peer(void)
{
	uint8_t junk[256];
	struct swiw_rxev ev;
	struct ep b;
	int sa, sb;

	printf("# plain peer\n");
	if (tcp_pair(&sa, &sb)) {
		CHECK(0, "tcp pair");
		return;
	}
	/* Octets queued before ATTACH are processed at ATTACH. */
	memset(junk, 0, sizeof(junk));
	junk[1] = 2; /* ULPDU_LENGTH 2: shorter than any DDP header */
	CHECK(write(sa, junk, sizeof(junk)) == sizeof(junk), "write junk");
	usleep(50000);
	CHECK(!ep_open(&b, sb, SWIW_ATTACH_CRC), "attach");
	CHECK(!get_event(&b, &ev, WAIT_MS) && ev.type == SWIW_RXEV_VIOLATION,
	      "junk is a violation (type %u)", ev.type);
	CHECK(!ep_detach(&b), "detach");
	ep_close(&b);
	close(sa);

	if (tcp_pair(&sa, &sb)) {
		CHECK(0, "tcp pair");
		return;
	}
	CHECK(!ep_open(&b, sb, 0), "attach");
	shutdown(sa, SHUT_WR);
	CHECK(!get_event(&b, &ev, WAIT_MS) && ev.type == SWIW_RXEV_CLOSED &&
		      ev.status == 0,
	      "FIN is CLOSED 0 (type %u status %u)", ev.type, ev.status);
	CHECK(!ep_detach(&b), "detach");
	ep_close(&b);
	close(sa);

	/* Urgent data: TCP will not hand it over in order; the end. */
	if (tcp_pair(&sa, &sb)) {
		CHECK(0, "tcp pair");
		return;
	}
	CHECK(!ep_open(&b, sb, 0), "attach");
	CHECK(send(sa, "!", 1, MSG_OOB) == 1, "send urgent data");
	CHECK(!get_event(&b, &ev, WAIT_MS) && ev.type == SWIW_RXEV_CLOSED &&
		      ev.status == EPROTO,
	      "urgent data is CLOSED EPROTO (type %u status %u)", ev.type,
	      ev.status);
	CHECK(!ep_detach(&b), "detach");
	ep_close(&b);
	close(sa);
}

/*
 * SWIW_ATTACH_RTR_EVENT: the first message (RFC 6581's RTR, here a
 * zero-length Write) is reported with id 0 before anything else; the
 * messages after it as usual.
 */
static void test_rtr(void)
{
	size_t len = page;
	uint8_t *src = map_anon(len, false), *rbuf = map_anon(len, false);
	uint32_t s_src = 0, s_rbuf = 0, got = 0;
	struct swiw_rxev ev;
	struct ep a, b;
	int sa, sb;

	printf("# RTR event\n");
	if (!src || !rbuf || tcp_pair(&sa, &sb)) {
		CHECK(0, "setup");
		return;
	}
	CHECK(!ep_open(&a, sa, SWIW_ATTACH_CRC) &&
		      !ep_open(&b, sb, SWIW_ATTACH_CRC | SWIW_ATTACH_RTR_EVENT),
	      "attach");
	CHECK(!reg_mr(a.fd, src, len, 0, &s_src) &&
		      !reg_mr(b.fd, rbuf, len, ACC_LOCAL_WRITE, &s_rbuf),
	      "reg");
	CHECK(!post_rqe(&b, 0x99, rbuf, (uint32_t)len, s_rbuf) &&
		      !ep_doorbell(&b),
	      "post RQE");
	CHECK(!op_write(&a, NULL, 0, 0, 0, 0, 1000), "zero-length write");
	CHECK(!op_send(&a, src, 100, s_src, 1000, 5), "send");
	CHECK(!get_event(&b, &ev, WAIT_MS) && ev.type == SWIW_RXEV_SEGMENT &&
		      ev.id == 0 && !(ev.flags & SWIW_RXEV_RQE) &&
		      ev.hdr_len >= 2 && (ev.hdr[1] & 0xf) == RDMAP_WRITE,
	      "the RTR first: type %u id %llu flags 0x%x", ev.type,
	      (unsigned long long)ev.id, ev.flags);
	CHECK(!recv_wait(&b, 0x99, &got) && got == 100, "then the send");
	CHECK(!ep_detach(&a) && !ep_detach(&b), "detach");
	ep_close(&a);
	ep_close(&b);
	munmap(src, len);
	munmap(rbuf, len);
}

/* DETACH with an RQE taken for a message not complete: CLOSED, ECANCELED. */
static void test_detach_rqe(void)
{
	size_t len = 4 * page;
	uint8_t *src = map_anon(len, false), *rbuf = map_anon(len, false);
	uint32_t s_src = 0, s_rbuf = 0;
	struct swiw_rdmap_msg m = { .opcode = RDMAP_SEND,
				    .len = 3000,
				    .msn = 1 };
	struct swiw_rxev ev;
	struct ep a, b;
	int sa, sb;

	printf("# detach mid-message\n");
	if (!src || !rbuf || tcp_pair(&sa, &sb)) {
		CHECK(0, "setup");
		return;
	}
	CHECK(!ep_open(&a, sa, SWIW_ATTACH_CRC) &&
		      !ep_open(&b, sb, SWIW_ATTACH_CRC),
	      "attach");
	CHECK(!reg_mr(a.fd, src, len, 0, &s_src) &&
		      !reg_mr(b.fd, rbuf, len, ACC_LOCAL_WRITE, &s_rbuf),
	      "reg");
	CHECK(!post_rqe(&b, 0xabc, rbuf, len, s_rbuf) && !ep_doorbell(&b),
	      "post RQE");
	/* Every segment but the last: the message stays incomplete. */
	CHECK(!send_msg(&a, &m, src, s_src, 1000, 1, true), "first segments");
	usleep(300000);
	CHECK(!ep_detach(&b), "detach b");
	CHECK(!get_event(&b, &ev, 0) && ev.type == SWIW_RXEV_CLOSED &&
		      ev.status == ECANCELED && (ev.flags & SWIW_RXEV_RQE) &&
		      ev.id == 0xabc,
	      "the RQE comes back: type %u status %u flags 0x%x id 0x%llx",
	      ev.type, ev.status, ev.flags, (unsigned long long)ev.id);
	CHECK(!ep_detach(&a), "detach a");
	ep_close(&a);
	ep_close(&b);
	munmap(src, len);
	munmap(rbuf, len);
}

/*
 * More Sends than the event ring holds, the receiver not looking: its
 * helper stops on the full ring, TCP keeps the rest, and the doorbells
 * of the drain resume it; every message arrives, in order, intact.
 */
static void test_stall(void)
{
	enum {
		N = 200,
		SZ = 300
	};
	size_t len = (size_t)N * SZ;
	uint8_t *src = map_anon(len, false), *rbuf = map_anon(len, false);
	uint32_t s_src = 0, s_rbuf = 0, got = 0, posted = 0, nsent = 0, i;
	struct swiw_rxev ev;
	struct ep a, b;
	int sa, sb, bad = 0;

	printf("# stall\n");
	if (!src || !rbuf || tcp_pair(&sa, &sb)) {
		CHECK(0, "setup");
		return;
	}
	CHECK(!ep_open(&a, sa, SWIW_ATTACH_CRC) &&
		      !ep_open(&b, sb, SWIW_ATTACH_CRC),
	      "attach");
	CHECK(!reg_mr(a.fd, src, len, 0, &s_src) &&
		      !reg_mr(b.fd, rbuf, len, ACC_LOCAL_WRITE, &s_rbuf),
	      "reg");
	fill(src, len, 5);
	for (; posted < RING_NUM; posted++)
		post_rqe(&b, posted, rbuf + (size_t)posted * SZ, SZ, s_rbuf);
	ep_doorbell(&b);
	/* a takes its SENT events as they come, so that it never stalls. */
	for (i = 0; i < N && !bad; i++) {
		if (op_send(&a, src + (size_t)i * SZ, SZ, s_src, 1000,
			    1000 + i))
			bad++;
		while (!bad && !get_event(&a, &ev, 0))
			if (ev.type != SWIW_RXEV_SENT ||
			    ev.id != 1000 + nsent++)
				bad++;
	}
	usleep(300000); /* b's ring fills meanwhile */
	for (i = 0; i < N && !bad; i++) {
		if (recv_wait(&b, i, &got) || got != SZ) {
			bad++;
			break;
		}
		if (posted < N)
			post_rqe(&b, posted, rbuf + (size_t)posted * SZ, SZ,
				 s_rbuf),
				posted++;
	}
	CHECK(!bad && i == N, "%u of %u Sends arrived in order", i, N);
	CHECK(!differ(rbuf, src, len), "every Send's data");
	while (!bad && nsent < N)
		if (want_event(&a, SWIW_RXEV_SENT, &ev) ||
		    ev.id != 1000 + nsent++)
			bad++;
	CHECK(!bad, "every SENT event, in order");
	CHECK(!ep_detach(&a) && !ep_detach(&b), "detach");
	ep_close(&a);
	ep_close(&b);
	munmap(src, len);
	munmap(rbuf, len);
}

/*
 * A peer that does not read: TCP fills and the helper waits; when the
 * peer reads, write_space resumes it and every octet arrives.
 */
static void test_backpressure(void)
{
	size_t len = 2048 * 1024, got = 0;
	uint8_t *src = map_anon(len, false), *junk = map_anon(1 << 16, false);
	uint32_t s_src = 0;
	struct swiw_rxev ev;
	struct ep a;
	int sa, sb;
	long end;

	printf("# backpressure\n");
	if (!src || !junk || tcp_pair(&sa, &sb)) {
		CHECK(0, "setup");
		return;
	}
	/* Small buffers: loopback autotuning would take 2 MiB at once. */
	{
		int sz = 64 * 1024;

		setsockopt(sa, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
		setsockopt(sb, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	}
	CHECK(!ep_open(&a, sa, SWIW_ATTACH_CRC), "attach");
	CHECK(!reg_mr(a.fd, src, len, 0, &s_src), "reg");
	wire_octets = 0;
	CHECK(!op_write(&a, src, (uint32_t)len, s_src, 0x1234, 0, 1U << 16),
	      "2 MiB write queued");
	usleep(300000);
	ev.type = 0;
	CHECK(get_event(&a, &ev, 0) == ETIMEDOUT,
	      "not all on the socket while the peer does not read (event %u)",
	      ev.type);
	end = now_ms() + WAIT_MS;
	while (got < wire_octets && now_ms() < end) {
		ssize_t n = recv(sb, junk, 1 << 16, MSG_DONTWAIT);

		if (n > 0)
			got += (size_t)n;
		else
			usleep(1000);
	}
	CHECK(got == wire_octets, "the peer read %zu octets of %llu", got,
	      (unsigned long long)wire_octets);
	CHECK(!sent_wait(&a, 0), "SENT once the peer read it all");
	CHECK(!ep_detach(&a), "detach");
	ep_close(&a);
	close(sb);
	munmap(src, len);
	munmap(junk, 1 << 16);
}

/* Doorbells from another thread while the stream is detached. */
struct bell {
	struct ep *e;
	volatile bool stop;
	int odd;
};

static void *bell_main(void *arg)
{
	struct bell *b = arg;

	while (!b->stop) {
		int err = ep_doorbell(b->e);

		if (err && err != EINVAL)
			b->odd++;
	}
	return NULL;
}

/*
 * DETACH in the middle of a large transfer, with doorbells racing it:
 * it returns at once, and the other side sees the stream end.
 */
static void test_detach_race(void)
{
	size_t len = 64 * page;
	uint8_t *src = map_anon(len, false), *dst = map_anon(len, false);
	uint32_t s_src = 0, s_dst = 0;
	struct bell bell = { 0 };
	pthread_t tid;
	struct ep a, b;
	int sa, sb, i, err = 0;

	printf("# detach race\n");
	if (!src || !dst || tcp_pair(&sa, &sb)) {
		CHECK(0, "setup");
		return;
	}
	CHECK(!ep_open(&a, sa, SWIW_ATTACH_CRC) &&
		      !ep_open(&b, sb, SWIW_ATTACH_CRC),
	      "attach");
	CHECK(!reg_mr(a.fd, src, len, 0, &s_src) &&
		      !reg_mr(b.fd, dst, len,
			      ACC_LOCAL_WRITE | ACC_REMOTE_WRITE, &s_dst),
	      "reg");
	bell.e = &b;
	CHECK(!pthread_create(&tid, NULL, bell_main, &bell), "thread");
	for (i = 0; i < 6 && !err; i++)
		err = op_write(&a, src, (uint32_t)len, s_src, s_dst,
			       (uintptr_t)dst, 1U << 16);
	CHECK(!err, "writes queued");
	CHECK(!ep_detach(&b), "detach mid-transfer");
	bell.stop = true;
	pthread_join(tid, NULL);
	CHECK(!bell.odd, "%d doorbells failed oddly", bell.odd);
	/* The socket is b's own again: closing it ends a's stream. */
	ep_close(&b);
	for (;;) {
		struct swiw_rxev ev;

		if (get_event(&a, &ev, WAIT_MS)) {
			CHECK(0, "a saw no CLOSED");
			break;
		}
		if (ev.type == SWIW_RXEV_CLOSED)
			break;
	}
	CHECK(!ep_detach(&a), "detach a");
	ep_close(&a);
	munmap(src, len);
	munmap(dst, len);
}

/* The Read Response to a READ just posted, if it comes within @ms. */
static bool read_resp(struct ep *e, int ms)
{
	struct swiw_rxev ev;

	while (!get_event(e, &ev, ms)) {
		if (is_read_resp(&ev))
			return true;
		if (ev.type != SWIW_RXEV_SENT)
			return false;
	}
	return false;
}

/* READs to completion from another thread, until stopped or one fails. */
struct reader {
	struct ep *e;
	void *sink;
	uint32_t s_sink, s_src;
	uint64_t src;
	volatile bool stop, ended;
	volatile int done;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;

	while (!r->stop &&
	       !op_read(r->e, r->sink, r->s_sink, 64, r->s_src, r->src) &&
	       read_resp(r->e, WAIT_MS))
		r->done++;
	r->ended = true;
	return NULL;
}

/*
 * On loopback the responder's receive runs inside the requester's
 * sendmsg: its Read Response is sent by the requester's DOORBELL (the
 * kick) and placed before that ioctl returns, with no worker to wake
 * (a Read's round trip in the VM lab: 2.3x siw's with tx_work, 1x with
 * the kick). Then the responder detaches while READs stream at it: the
 * detach waits out a DOORBELL that holds the stream, and nothing hangs.
 */
static void test_read_inline(void)
{
	size_t len = 4 * page;
	uint8_t *src = map_anon(len, false), *sink = map_anon(len, false);
	uint32_t s_src = 0, s_sink = 0;
	struct reader rd = { 0 };
	int sa, sb, i, now = 0;
	pthread_t tid;
	struct ep a, b;

	printf("# read answered within the doorbell\n");
	if (!src || !sink || tcp_pair(&sa, &sb)) {
		CHECK(0, "setup");
		return;
	}
	CHECK(!ep_open(&a, sa, SWIW_ATTACH_CRC) &&
		      !ep_open(&b, sb, SWIW_ATTACH_CRC),
	      "attach");
	CHECK(!reg_mr(a.fd, sink, len, ACC_LOCAL_WRITE | ACC_REMOTE_WRITE,
		      &s_sink) &&
		      !reg_mr(b.fd, src, len, ACC_REMOTE_READ, &s_src),
	      "reg");
	fill(src, len, 5);
	for (i = 0; i < 20; i++) {
		if (op_read(&a, sink, s_sink, 64, s_src, (uintptr_t)src))
			break;
		if (read_resp(&a, 0))
			now++;
		else if (!read_resp(&a, WAIT_MS))
			break;
	}
	CHECK(i == 20, "20 reads (%d)", i);
	printf("# %d of 20 Read Responses placed within the doorbell\n", now);
	/* A softirq may be left to ksoftirqd now and then: most, not all. */
	CHECK(now >= 16, "%d of 20 Read Responses placed within the doorbell",
	      now);
	CHECK(!differ(sink, src, 64), "read data");

	rd = (struct reader){ .e = &a,
			      .sink = sink,
			      .s_sink = s_sink,
			      .s_src = s_src,
			      .src = (uintptr_t)src };
	CHECK(!pthread_create(&tid, NULL, reader_main, &rd), "thread");
	while (rd.done < 200 && !rd.ended)
		usleep(1000);
	CHECK(rd.done >= 200, "%d reads before the detach", rd.done);
	CHECK(!ep_detach(&b), "detach the responder mid-stream");
	rd.stop = true;
	/* b's socket is b's own again: closing it ends a's wait. */
	ep_close(&b);
	pthread_join(tid, NULL);
	CHECK(!ep_detach(&a), "detach a");
	ep_close(&a);
	munmap(src, len);
	munmap(sink, len);
}

/*
 * A region deregistered while the helper holds it (a tagged segment half
 * received): its pages stay pinned and charged until the helper lets go,
 * but nothing more is written to them once DEREG_MR has returned (the
 * program may reuse the memory): the rest of the segment is dropped. Then
 * the STag is dead for the peer.
 */
static void test_dereg_held(void)
{
	size_t len = 8 * page;
	uint8_t *dst = map_anon(len, false), *pl = map_anon(len, false);
	uint8_t fpdu[2 + SWIW_DDP_HDR_MAX + 8000 + 8];
	struct swiw_rdmap_msg m = { .opcode = RDMAP_WRITE, .len = 8000 };
	struct swiw_ddp_txseg seg;
	struct swiw_ddp_tx tx;
	struct swiw_rxev ev;
	uint32_t s_dst = 0, n;
	long base = vm_pin_kb();
	struct ep b;
	int sa, sb;

	printf("# dereg while held\n");
	if (!dst || !pl || tcp_pair(&sa, &sb)) {
		CHECK(0, "setup");
		return;
	}
	CHECK(!ep_open(&b, sb, 0), "attach (no CRC, no markers)");
	CHECK(!reg_mr(b.fd, dst, len, ACC_LOCAL_WRITE | ACC_REMOTE_WRITE,
		      &s_dst),
	      "reg");
	CHECK(vm_pin_kb() == base + (long)(len / 1024), "VmPin %ld",
	      vm_pin_kb());
	/* One FPDU by hand: length, tagged header, payload, pad, CRC 0. */
	fill(pl, 8000, 6);
	m.stag = s_dst;
	m.to = (uintptr_t)dst + 16;
	CHECK(!swiw_ddp_tx_init(&tx, &m) &&
		      swiw_ddp_tx_next(&tx, 1U << 16, fpdu + 2,
				       SWIW_DDP_HDR_MAX, &seg) == 1 &&
		      seg.last && seg.payload_len == 8000,
	      "one segment");
	n = seg.hdr_len + 8000;
	fpdu[0] = (uint8_t)(n >> 8);
	fpdu[1] = (uint8_t)n;
	memcpy(fpdu + 2 + seg.hdr_len, pl, 8000);
	n = swiw_mpa_fpdu_len(n, 0, false);
	memset(fpdu + n - 4 - swiw_mpa_pad(seg.hdr_len + 8000), 0,
	       4 + swiw_mpa_pad(seg.hdr_len + 8000));
	CHECK(write(sa, fpdu, 3000) == 3000, "first part");
	usleep(200000);
	CHECK(!dereg_mr(b.fd, s_dst), "dereg while the segment is half in");
	CHECK(vm_pin_kb() == base + (long)(len / 1024),
	      "still pinned and charged while held: VmPin %ld", vm_pin_kb());
	CHECK(write(sa, fpdu + 3000, n - 3000) == (ssize_t)(n - 3000),
	      "the rest");
	CHECK(settles(vm_pin_kb, base), "VmPin %ld back to %ld", vm_pin_kb(),
	      base);
	/* 3000 octets: the length, the header, then payload. */
	n = 3000 - 2 - seg.hdr_len;
	CHECK(!differ(dst + 16, pl, n), "the part before placed");
	CHECK(all_zero(dst + 16 + n, 8000 - n),
	      "nothing placed after the deregistration returned");
	/* The same STag again: the region is gone. */
	CHECK(write(sa, fpdu, n) == (ssize_t)n, "again");
	CHECK(!get_event(&b, &ev, WAIT_MS) && ev.type == SWIW_RXEV_VIOLATION,
	      "a dead STag is a violation (type %u)", ev.type);
	CHECK(!ep_detach(&b), "detach");
	ep_close(&b);
	close(sa);
	munmap(dst, len);
	munmap(pl, len);
}

/*
 * Send with Invalidate, and the local invalidate txd: the STag stops
 * working for the peer; invalidating it again is ENOENT.
 */
static void test_invalidate(void)
{
	size_t len = 4 * page;
	uint8_t *src = map_anon(len, false), *dst = map_anon(len, false);
	uint8_t *rbuf = map_anon(len, false);
	uint32_t s_src = 0, s_dst = 0, s_dst2 = 0, s_rbuf = 0, got = 0;
	struct swiw_rdmap_msg m = { .opcode = RDMAP_SEND_INVAL,
				    .len = 64,
				    .msn = 1 };
	struct swiw_txd t = { .id = 9,
			      .flags = SWIW_TXD_INVALIDATE | SWIW_TXD_EVENT,
			      .hdr_len = 4 };
	struct swiw_rxev ev;
	struct ep a, b;
	int sa, sb;

	printf("# invalidate\n");
	if (!src || !dst || !rbuf || tcp_pair(&sa, &sb)) {
		CHECK(0, "setup");
		return;
	}
	CHECK(!ep_open(&a, sa, SWIW_ATTACH_CRC) &&
		      !ep_open(&b, sb, SWIW_ATTACH_CRC),
	      "attach");
	CHECK(!reg_mr(a.fd, src, len, 0, &s_src) &&
		      !reg_mr(b.fd, dst, len,
			      ACC_LOCAL_WRITE | ACC_REMOTE_WRITE, &s_dst) &&
		      !reg_mr(b.fd, dst, len,
			      ACC_LOCAL_WRITE | ACC_REMOTE_WRITE, &s_dst2) &&
		      !reg_mr(b.fd, rbuf, len, ACC_LOCAL_WRITE, &s_rbuf),
	      "reg");
	/* Local invalidate by b, in ring order: 0, then ENOENT. */
	memcpy(t.hdr, &s_dst2, 4);
	CHECK(!post_txd(&b, &t) && !want_event(&b, SWIW_RXEV_SENT, &ev) &&
		      ev.id == 9 && ev.status == 0,
	      "local invalidate: status %u", ev.status);
	t.id = 10;
	CHECK(!post_txd(&b, &t) && !want_event(&b, SWIW_RXEV_SENT, &ev) &&
		      ev.id == 10 && ev.status == ENOENT,
	      "invalidate again: status %u", ev.status);
	/* Send with Invalidate of s_dst from a. */
	CHECK(!post_rqe(&b, 0x77, rbuf, (uint32_t)len, s_rbuf) &&
		      !ep_doorbell(&b),
	      "post RQE");
	m.inval_stag = s_dst;
	CHECK(!send_msg(&a, &m, src, s_src, 1000, 1, false),
	      "send with invalidate");
	CHECK(!recv_wait(&b, 0x77, &got) && got == 64, "received");
	/* A WRITE through either STag now fails at b. */
	CHECK(!op_write(&a, src, 16, s_src, s_dst, (uintptr_t)dst, 1000),
	      "write to the invalidated STag");
	CHECK(!get_event(&b, &ev, WAIT_MS) && ev.type == SWIW_RXEV_VIOLATION,
	      "it is a violation (type %u)", ev.type);
	CHECK(!ep_detach(&a) && !ep_detach(&b), "detach");
	CHECK(!dereg_mr(b.fd, s_dst) && !dereg_mr(b.fd, s_dst2),
	      "invalidated regions still deregister");
	ep_close(&a);
	ep_close(&b);
	munmap(src, len);
	munmap(dst, len);
	munmap(rbuf, len);
}

static int send_u32(int fd, uint32_t v)
{
	return write(fd, &v, sizeof(v)) == sizeof(v) ? 0 : -1;
}

static int recv_u32(int fd, uint32_t *v)
{
	return read(fd, v, sizeof(*v)) == sizeof(*v) ? 0 : -1;
}

/*
 * A child owns the target (its file, regions and stream) and is stopped:
 * WRITE, READ and an atomic against it still complete, because the
 * helper places and answers in the kernel.
 */
static void test_stopped_owner(void)
{
	size_t len = 32 * page;
	uint8_t *shared = map_anon(len, true), *src = map_anon(len, false);
	uint8_t *sink = map_anon(len, false);
	uint32_t stag = 0, s_src = 0, s_sink = 0;
	uint64_t orig = 0;
	int sa, sb, pfd[2], status;
	struct ep a;
	pid_t pid;

	printf("# stopped owner\n");
	if (!shared || !src || !sink || tcp_pair(&sa, &sb) || pipe(pfd)) {
		CHECK(0, "setup");
		return;
	}
	pid = fork();
	if (!pid) {
		struct ep b;

		close(sa);
		if (ep_open(&b, sb,
			    SWIW_ATTACH_CRC | SWIW_ATTACH_MARKERS_TX |
				    SWIW_ATTACH_MARKERS_RX) ||
		    reg_mr(b.fd, shared, len,
			   ACC_LOCAL_WRITE | ACC_REMOTE_WRITE |
				   ACC_REMOTE_READ | ACC_REMOTE_ATOMIC,
			   &stag) ||
		    send_u32(pfd[1], stag))
			_exit(1);
		raise(SIGSTOP);
		/* Continued: the helper did it all, detach and go. */
		_exit(ep_detach(&b) ? 2 : 0);
	}
	close(sb);
	close(pfd[1]);
	CHECK(!recv_u32(pfd[0], &stag), "child's STag");
	CHECK(waitpid(pid, &status, WUNTRACED) == pid && WIFSTOPPED(status),
	      "child stopped");
	CHECK(!ep_open(&a, sa,
		       SWIW_ATTACH_CRC | SWIW_ATTACH_MARKERS_TX |
			       SWIW_ATTACH_MARKERS_RX),
	      "attach a");
	CHECK(!reg_mr(a.fd, src, len, 0, &s_src) &&
		      !reg_mr(a.fd, sink, len,
			      ACC_LOCAL_WRITE | ACC_REMOTE_WRITE, &s_sink),
	      "reg");
	fill(src, len, 9);
	CHECK(!op_write(&a, src, 24 * page, s_src, stag, (uintptr_t)shared + 40,
			9000),
	      "write to the stopped child");
	CHECK(!sent_wait(&a, 0), "write sent");
	/* The READ follows the WRITE: its data shows the WRITE placed. */
	CHECK(!read_wait(&a, sink, s_sink, 24 * page, stag,
			 (uintptr_t)shared + 40),
	      "read from the stopped child");
	CHECK(!differ(sink, src, 24 * page), "read returns the written data");
	CHECK(!differ(shared + 40, src, 24 * page) && shared[39] == 0,
	      "the child's memory holds it");
	memset(shared + 24 * page + 64, 0, 8);
	CHECK(!atomic_wait(&a, RDMAP_ATOMIC_FETCH_ADD, stag,
			   (uintptr_t)shared + 24 * page + 64, 42, 0, &orig) &&
		      orig == 0 && *(uint64_t *)(shared + 24 * page + 64) == 42,
	      "atomic on the stopped child");
	CHECK(waitpid(pid, &status, WNOHANG | WUNTRACED) == 0,
	      "the child is still stopped");
	kill(pid, SIGCONT);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		      WEXITSTATUS(status) == 0,
	      "child exits 0 (status 0x%x)", status);
	CHECK(!ep_detach(&a), "detach a");
	ep_close(&a);
	close(pfd[0]);
	munmap(shared, len);
	munmap(src, len);
	munmap(sink, len);
}

/* Pages pinned system-wide (FOLL_PIN), from /proc/vmstat. */
static long pins(void)
{
	char name[64];
	long v, acq = -1, rel = -1;
	FILE *f = fopen("/proc/sys/vm/stat_refresh", "we");

	/* Fold the per-CPU deltas in first, or the sum lags (root only). */
	if (f) {
		fputs("1\n", f);
		fclose(f);
	}
	f = fopen("/proc/vmstat", "re");

	if (!f)
		return -1;
	while (fscanf(f, "%63s %ld", name, &v) == 2) {
		if (!strcmp(name, "nr_foll_pin_acquired"))
			acq = v;
		else if (!strcmp(name, "nr_foll_pin_released"))
			rel = v;
	}
	fclose(f);
	return acq < 0 || rel < 0 ? -1 : acq - rel;
}

/* Polls @fn until it returns @want, for up to 5 s. */
static bool settles(long (*fn)(void), long want)
{
	long end = now_ms() + WAIT_MS;

	while (fn() != want && now_ms() < end)
		usleep(10000);
	return fn() == want;
}

/*
 * A child killed while the parent WRITEs into it: its pins and module
 * references go, and the parent's stream reports CLOSED.
 */
static void test_killed_owner(void)
{
	size_t len = 256 * page;
	uint8_t *src = map_anon(len, false), *dst;
	long base_pins, base_refs;
	uint32_t stag = 0, s_src = 0;
	int sa, sb, pfd[2], status, i, err = 0;
	struct swiw_rxev ev;
	struct ep a;
	pid_t pid;

	printf("# killed owner\n");
	/* The child's region, at an address the parent knows. */
	dst = map_anon(len, false);
	if (!src || !dst || tcp_pair(&sa, &sb) || pipe(pfd)) {
		CHECK(0, "setup");
		return;
	}
	CHECK(!ep_open(&a, sa, SWIW_ATTACH_CRC), "attach a");
	CHECK(!reg_mr(a.fd, src, len, 0, &s_src), "reg src");
	base_pins = pins();
	base_refs = module_refcnt();
	CHECK(base_pins >= 0 && base_refs > 0, "pins %ld refs %ld readable",
	      base_pins, base_refs);
	pid = fork();
	if (!pid) {
		struct ep b;

		close(pfd[0]);
		close(a.fd);
		close(sa);
		if (ep_open(&b, sb, SWIW_ATTACH_CRC) ||
		    reg_mr(b.fd, dst, len, ACC_LOCAL_WRITE | ACC_REMOTE_WRITE,
			   &stag) ||
		    send_u32(pfd[1], stag))
			_exit(1);
		for (;;)
			pause();
	}
	close(sb);
	close(pfd[1]);
	CHECK(!recv_u32(pfd[0], &stag), "child's STag");
	CHECK(pins() == base_pins + 256, "the child pinned 256 pages (%ld)",
	      pins() - base_pins);
	/* Keep WRITEs in flight; kill the child among them. */
	for (i = 0; i < 40 && !err; i++) {
		err = op_write(&a, src, (uint32_t)len, s_src, stag,
			       (uintptr_t)dst, 1 << 16);
		if (i == 8)
			kill(pid, SIGKILL);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status),
	      "child killed");
	CHECK(settles(module_refcnt, base_refs), "module refcnt %ld, want %ld",
	      module_refcnt(), base_refs);
	CHECK(settles(pins, base_pins), "pins %ld, want %ld", pins(),
	      base_pins);
	/* The parent's stream ends: its peer went away. */
	for (;;) {
		if (get_event(&a, &ev, WAIT_MS)) {
			CHECK(0, "no CLOSED event after the peer died");
			break;
		}
		if (ev.type == SWIW_RXEV_CLOSED) {
			printf("# CLOSED status %u\n", ev.status);
			CHECK(1, "CLOSED");
			break;
		}
		/* SENT (WRITEs' events) or a failed one: go on. */
		if (ev.type != SWIW_RXEV_SENT) {
			CHECK(0, "unexpected event type %u", ev.type);
			break;
		}
	}
	CHECK(!ep_detach(&a), "detach a");
	ep_close(&a);
	close(pfd[0]);
	CHECK(settles(module_refcnt, base_refs - 1), "refcnt after close");
	munmap(src, len);
	munmap(dst, len);
}

/*
 * A child killed while its helper sends WRITEs to the parent: the same
 * cleanup on the transmitting side, with frames half on the socket.
 */
static void test_killed_sender(void)
{
	size_t len = 256 * page;
	uint8_t *dst = map_anon(len, false), *src = map_anon(len, false);
	uint32_t s_dst = 0;
	long base_pins, base_refs, end;
	int sa, sb, pfd[2], status;
	struct swiw_rxev ev;
	struct ep b;
	pid_t pid;
	char c;

	printf("# killed sender\n");
	if (!dst || !src || tcp_pair(&sa, &sb) || pipe(pfd)) {
		CHECK(0, "setup");
		return;
	}
	CHECK(!ep_open(&b, sb,
		       SWIW_ATTACH_CRC | SWIW_ATTACH_MARKERS_TX |
			       SWIW_ATTACH_MARKERS_RX),
	      "attach b");
	CHECK(!reg_mr(b.fd, dst, len, ACC_LOCAL_WRITE | ACC_REMOTE_WRITE,
		      &s_dst),
	      "reg dst");
	base_pins = pins();
	base_refs = module_refcnt();
	pid = fork();
	if (!pid) {
		uint32_t s_src;
		struct ep a;

		close(pfd[0]);
		close(b.fd);
		close(sb);
		memset(src, 0x6b, len);
		if (ep_open(&a, sa,
			    SWIW_ATTACH_CRC | SWIW_ATTACH_MARKERS_TX |
				    SWIW_ATTACH_MARKERS_RX) ||
		    reg_mr(a.fd, src, len, 0, &s_src) ||
		    write(pfd[1], "r", 1) != 1)
			_exit(1);
		/* WRITEs until killed (ring_put doorbells when full). */
		for (;;) {
			if (op_write(&a, src, (uint32_t)len, s_src, s_dst,
				     (uintptr_t)dst, 1U << 15))
				_exit(2);
			while (!get_event(&a, &ev, 0))
				;
		}
	}
	close(sa);
	close(pfd[1]);
	CHECK(read(pfd[0], &c, 1) == 1, "child ready");
	/* Data arriving: the child's helper is sending. */
	end = now_ms() + WAIT_MS;
	while (dst[len - 1] != 0x6b && now_ms() < end)
		usleep(1000);
	CHECK(dst[len - 1] == 0x6b, "the child's WRITEs arrive");
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) &&
		      WTERMSIG(status) == SIGKILL,
	      "child killed mid-transfer (status 0x%x)", status);
	CHECK(settles(module_refcnt, base_refs), "module refcnt %ld, want %ld",
	      module_refcnt(), base_refs);
	CHECK(settles(pins, base_pins), "pins %ld, want %ld", pins(),
	      base_pins);
	/* b's stream ends: cut mid-FPDU (CLOSED) or garbled (VIOLATION). */
	for (;;) {
		if (get_event(&b, &ev, WAIT_MS)) {
			CHECK(0, "b's stream did not end");
			break;
		}
		if (ev.type == SWIW_RXEV_CLOSED ||
		    ev.type == SWIW_RXEV_VIOLATION) {
			printf("# b: event %u status %u\n", ev.type, ev.status);
			CHECK(1, "b's stream ended");
			break;
		}
	}
	CHECK(!ep_detach(&b), "detach b");
	ep_close(&b);
	close(pfd[0]);
	munmap(dst, len);
	munmap(src, len);
}

/*
 * A child killed while its helper answers a large Read whose requester
 * keeps its window shut (the parent detaches after sending the Request
 * and reads nothing): the rest of the response must not go out after
 * the child's pages are unpinned and freed. What TCP had taken before
 * arrives, the stream then ends, and far less than the Read comes.
 */
static void test_killed_responder_window_shut(void)
{
	size_t len = 32u << 20, got = 0;
	uint8_t *src = map_anon(len, false), *buf = malloc(1 << 16);
	struct timeval tv = { .tv_sec = 3 };
	long base_pins, base_refs;
	int sa, sb, pfd[2], status, end_err = 0;
	uint32_t stag = 0;
	struct swiw_rxev ev;
	struct ep a;
	ssize_t n;
	pid_t pid;

	printf("# killed responder, window shut\n");
	if (!src || !buf || tcp_pair(&sa, &sb) || pipe(pfd)) {
		CHECK(0, "setup");
		return;
	}
	base_pins = pins();
	base_refs = module_refcnt();
	pid = fork();
	if (!pid) {
		struct ep b;

		close(pfd[0]);
		close(sa);
		memset(src, 0x6b, len);
		if (ep_open(&b, sb, SWIW_ATTACH_CRC) ||
		    reg_mr(b.fd, src, len, ACC_REMOTE_READ, &stag) ||
		    send_u32(pfd[1], stag))
			_exit(1);
		for (;;)
			pause();
	}
	close(sb);
	close(pfd[1]);
	CHECK(!recv_u32(pfd[0], &stag), "child's STag");
	CHECK(!ep_open(&a, sa, SWIW_ATTACH_CRC), "attach a");
	CHECK(!op_read(&a, buf, 0x1234, (uint32_t)len, stag, (uintptr_t)src) &&
		      !ep_doorbell(&a) && !want_event(&a, SWIW_RXEV_SENT, &ev),
	      "the Read Request went out");
	/* The socket is ours again: nobody reads it, the window shuts. */
	CHECK(!ep_detach(&a), "detach a");
	a.sock = -1;
	ep_close(&a);
	usleep(500000);
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status),
	      "child killed");
	CHECK(settles(pins, base_pins), "pins %ld, want %ld", pins(),
	      base_pins);
	CHECK(settles(module_refcnt, base_refs), "module refcnt %ld, want %ld",
	      module_refcnt(), base_refs);
	setsockopt(sa, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while ((n = recv(sa, buf, 1 << 16, 0)) > 0)
		got += (size_t)n;
	end_err = n < 0 ? errno : 0;
	printf("# %zu of %zu octets came after the child died; the stream ended: %s\n",
	       got, len, end_err ? strerror(end_err) : "EOF");
	CHECK(got < len / 2, "%zu octets: the response went on", got);
	CHECK(end_err != EAGAIN && end_err != EWOULDBLOCK,
	      "the stream did not end");
	close(sa);
	close(pfd[0]);
	free(buf);
	munmap(src, len);
}

/*
 * Under RLIMIT_MEMLOCK, without CAP_IPC_LOCK: regions used by streams
 * and deregistered (while held, or after) give their charge back each
 * time, so the same registrations succeed round after round.
 */
static void test_memlock(void)
{
	int status;
	pid_t pid = fork();

	if (!pid) {
		struct rlimit rl = { .rlim_cur = 48 * page,
				     .rlim_max = 48 * page };
		size_t dlen = 32 * page, slen = 8 * page;
		uint8_t *dst = map_anon(dlen, false),
			*src = map_anon(slen, false);
		int code = 0;

		if (!dst || !src || drop_ipc_lock() ||
		    setrlimit(RLIMIT_MEMLOCK, &rl))
			_exit(3);
		for (int round = 0; round < 3 && !code; round++) {
			uint32_t s_dst = 0, s_src = 0, s_x = 0;
			struct ep a, b;
			int sa, sb;

			if (tcp_pair(&sa, &sb) || ep_open(&a, sa, 0) ||
			    ep_open(&b, sb, 0))
				_exit(4);
			if (reg_mr(b.fd, dst, dlen,
				   ACC_LOCAL_WRITE | ACC_REMOTE_WRITE,
				   &s_dst) ||
			    reg_mr(a.fd, src, slen, 0, &s_src))
				code |= 8; /* the charge came back */
			if (reg_mr(a.fd, dst, dlen, 0, &s_x) != ENOMEM)
				code |= 16; /* the limit holds */
			fill(src, slen, (unsigned int)round);
			for (uint32_t off = 0; !code && off < dlen; off += slen)
				if (op_write(&a, src, (uint32_t)slen, s_src,
					     s_dst, (uintptr_t)dst + off,
					     1 << 16) ||
				    sent_wait(&a, 0))
					code |= 32;
			/* Deregistered while the stream may hold it. */
			if (dereg_mr(b.fd, s_dst) || ep_detach(&b) ||
			    ep_detach(&a) || dereg_mr(a.fd, s_src))
				code |= 64;
			ep_close(&a);
			ep_close(&b);
			if (vm_pin_kb() != 0)
				code |= 128;
		}
		_exit(code);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status),
	      "memlock child");
	CHECK(WEXITSTATUS(status) == 0,
	      "RLIMIT_MEMLOCK charge returns (child code 0x%x)",
	      WEXITSTATUS(status));
}

/* A fresh attached pair for one violation (reception then ends at b). */
static bool pd_pair(struct ep *a, struct ep *b)
{
	int sa, sb;

	if (tcp_pair(&sa, &sb))
		return false;
	return !ep_open(a, sa, SWIW_ATTACH_CRC) &&
	       !ep_open(b, sb, SWIW_ATTACH_CRC);
}

/*
 * Protection domains: a stream finds only the regions of its own PD
 * (ATTACH's pd), in one file. Another PD's region is not associated:
 * tagged access is a violation (the memory untouched), an RQE or txd SGE
 * in it fails, and it cannot be invalidated.
 */
static void test_other_pd(void)
{
	size_t len = 4 * page;
	uint8_t *src = map_anon(len, false), *dst = map_anon(len, false);
	uint8_t *sink = map_anon(len, false);
	uint32_t s_src = 0, s_other = 0, s_osrc = 0, s_sink = 0, s_rq = 0;
	struct swiw_txd t = { .id = 21,
			      .flags = SWIW_TXD_INVALIDATE | SWIW_TXD_EVENT,
			      .hdr_len = 4 };
	struct swiw_rxev ev = { 0 };
	struct ep a, b;

	printf("# other PD\n");
	if (!src || !dst || !sink) {
		CHECK(0, "setup");
		return;
	}
	fill(src, len, 3);

	/* RDMA Write to b's region of another PD. */
	CHECK(pd_pair(&a, &b), "attach");
	CHECK(!reg_mr(a.fd, src, len, 0, &s_src) &&
		      !reg_mr_pd(b.fd, dst, len,
				 ACC_LOCAL_WRITE | ACC_REMOTE_WRITE |
					 ACC_REMOTE_READ,
				 PD_OTHER, &s_other),
	      "reg");
	CHECK(!op_write(&a, src, 4096, s_src, s_other, (uintptr_t)dst, 1000),
	      "write");
	CHECK(!get_event(&b, &ev, WAIT_MS) && ev.type == SWIW_RXEV_VIOLATION &&
		      ev.violation == SWIW_V_DDP_T_STAG_NOT_ASSOC,
	      "write: STag not associated (type %u violation %u)", ev.type,
	      ev.violation);
	CHECK(all_zero(dst, len), "nothing placed in the other PD's region");
	/* Invalidating it from this PD's stream: EPERM, it stays valid. */
	memcpy(t.hdr, &s_other, 4);
	CHECK(!post_txd(&b, &t) && !want_event(&b, SWIW_RXEV_SENT, &ev) &&
		      ev.id == 21 && ev.status == EPERM,
	      "invalidate another PD's: status %u", ev.status);
	CHECK(!ep_detach(&a) && !ep_detach(&b), "detach");
	ep_close(&a);
	ep_close(&b);

	/* RDMA Read from it. */
	CHECK(pd_pair(&a, &b), "attach");
	CHECK(!reg_mr(a.fd, sink, len, ACC_LOCAL_WRITE, &s_sink) &&
		      !reg_mr_pd(b.fd, dst, len,
				 ACC_LOCAL_WRITE | ACC_REMOTE_READ, PD_OTHER,
				 &s_other),
	      "reg");
	CHECK(!op_read(&a, sink, s_sink, 4096, s_other, (uintptr_t)dst),
	      "read request");
	CHECK(!get_event(&b, &ev, WAIT_MS) && ev.type == SWIW_RXEV_VIOLATION &&
		      ev.violation == SWIW_V_RDMAP_STAG_NOT_ASSOC,
	      "read: STag not associated (type %u violation %u)", ev.type,
	      ev.violation);
	CHECK(!ep_detach(&a) && !ep_detach(&b), "detach");
	ep_close(&a);
	ep_close(&b);

	/* A Send into an RQE whose SGE is in another PD's region. */
	memset(dst, 0, len);
	CHECK(pd_pair(&a, &b), "attach");
	CHECK(!reg_mr(a.fd, src, len, 0, &s_src) &&
		      !reg_mr_pd(b.fd, dst, len, ACC_LOCAL_WRITE, PD_OTHER,
				 &s_rq),
	      "reg");
	CHECK(!post_rqe(&b, 0x55, dst, (uint32_t)len, s_rq) && !ep_doorbell(&b),
	      "post RQE");
	CHECK(!op_send(&a, src, 256, s_src, 1000, 0), "send");
	CHECK(!get_event(&b, &ev, WAIT_MS) && ev.type == SWIW_RXEV_VIOLATION &&
		      (ev.flags & SWIW_RXEV_RQE) && ev.id == 0x55,
	      "send: the RQE fails (type %u flags 0x%x id %llu)", ev.type,
	      ev.flags, (unsigned long long)ev.id);
	CHECK(all_zero(dst, len), "nothing placed through the RQE");
	CHECK(!ep_detach(&a) && !ep_detach(&b), "detach");
	ep_close(&a);
	ep_close(&b);

	/* A txd gathering from a region of another PD is not sent. */
	CHECK(pd_pair(&a, &b), "attach");
	CHECK(!reg_mr_pd(a.fd, src, len, 0, PD_OTHER, &s_osrc), "reg");
	CHECK(!op_send(&a, src, 256, s_osrc, 1000, 33) &&
		      !want_event(&a, SWIW_RXEV_SENT, &ev) && ev.id == 33 &&
		      ev.status == ENOENT,
	      "gather from another PD's: status %u", ev.status);
	CHECK(!ep_detach(&a) && !ep_detach(&b), "detach");
	ep_close(&a);
	ep_close(&b);
	munmap(src, len);
	munmap(dst, len);
	munmap(sink, len);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc > 1)
		dev_path = argv[1];
	page = sysconf(_SC_PAGESIZE);
	if (access(dev_path, F_OK)) {
		printf("SKIP: %s does not exist: load swiw.ko first (tests/vm)\n",
		       dev_path);
		return 77;
	}
	test_ops(SWIW_ATTACH_CRC, "CRC");
	test_ops(0, "no CRC, no markers");
	test_ops(SWIW_ATTACH_CRC | SWIW_ATTACH_MARKERS_TX |
			 SWIW_ATTACH_MARKERS_RX,
		 "markers and CRC");
	test_plain_peer();
	test_rtr();
	test_stall();
	test_backpressure();
	test_detach_race();
	test_read_inline();
	test_detach_rqe();
	test_dereg_held();
	test_invalidate();
	test_other_pd();
	test_stopped_owner();
	test_killed_owner();
	test_killed_sender();
	test_killed_responder_window_shut();
	test_memlock();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
