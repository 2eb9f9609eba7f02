// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * librdmacm's API over swiw where the stock tools do not look: private
 * data both ways at the limit and one past it, a reject with private
 * data, a port with no listener, IRD/ORD in the events, a disconnect
 * seen by both sides with every outstanding WR flushed once, a
 * non-blocking channel, destroy_id with unacked events, a port in
 * use, no MPA Reply (UNREACHABLE), a Reply that is not MPA
 * (CONNECT_ERROR), ids that are no ids (any more), a Send posted as
 * rdma_accept returns, and a listener facing hostile peers: a partial
 * Request, Requests beyond the backlog, no descriptor left at accept,
 * and 300 listening ids. Built against the real librdmacm; run under
 * swiw-run, so its calls reach swiw's rdma_cm. Both sides live in this
 * process, on 127.0.0.1 (swiw_lo). Usage: cma_api PORT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

static int port;
static int failures;

#define CHECK(c, ...)                                               \
	do {                                                        \
		if (!(c)) {                                         \
			printf("FAIL %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__);                        \
			printf("\n");                               \
			exit(1);                                    \
		}                                                   \
	} while (0)

static struct sockaddr_in addr_of(int p)
{
	struct sockaddr_in a = { .sin_family = AF_INET };

	a.sin_port = htons((uint16_t)p);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* The next event of @ch within 10 s; it must be @type. */
static struct rdma_cm_event *expect(struct rdma_event_channel *ch,
				    enum rdma_cm_event_type type)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	CHECK(poll(&p, 1, 10000) == 1, "no event (wanted %s)",
	      rdma_event_str(type));
	CHECK(!rdma_get_cm_event(ch, &ev), "rdma_get_cm_event: %s",
	      strerror(errno));
	CHECK(ev->event == type, "got %s (status %d), wanted %s",
	      rdma_event_str(ev->event), ev->status, rdma_event_str(type));
	return ev;
}

static void ack(struct rdma_cm_event *ev)
{
	CHECK(!rdma_ack_cm_event(ev), "ack");
}

struct side {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
};

static struct side listener_backlog(int p, int backlog)
{
	struct sockaddr_in a = addr_of(p);
	struct side s;

	s.ch = rdma_create_event_channel();
	CHECK(s.ch, "channel");
	CHECK(!rdma_create_id(s.ch, &s.id, NULL, RDMA_PS_TCP), "create_id");
	CHECK(!rdma_bind_addr(s.id, (struct sockaddr *)&a), "bind: %s",
	      strerror(errno));
	CHECK(!rdma_listen(s.id, backlog), "listen: %s", strerror(errno));
	return s;
}

static struct side listener(int p)
{
	return listener_backlog(p, 8);
}

static void make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = { 0 };

	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 8;
	qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	CHECK(!rdma_create_qp(id, NULL, &qa), "create_qp: %s", strerror(errno));
}

/* A client id resolved to 127.0.0.1:@p, with a QP. */
static struct side client(int p)
{
	struct sockaddr_in a = addr_of(p);
	struct rdma_cm_event *ev;
	struct side s;

	s.ch = rdma_create_event_channel();
	CHECK(s.ch, "channel");
	CHECK(!rdma_create_id(s.ch, &s.id, NULL, RDMA_PS_TCP), "create_id");
	CHECK(!rdma_resolve_addr(s.id, NULL, (struct sockaddr *)&a, 2000),
	      "resolve_addr: %s", strerror(errno));
	ack(expect(s.ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	CHECK(s.id->verbs, "resolved id has no device");
	CHECK(!rdma_resolve_route(s.id, 2000), "resolve_route");
	ev = expect(s.ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	ack(ev);
	make_qp(s.id);
	return s;
}

static void side_free(struct side *s)
{
	if (s->id->qp)
		rdma_destroy_qp(s->id);
	CHECK(!rdma_destroy_id(s->id), "destroy_id");
	rdma_destroy_event_channel(s->ch);
}

static void fill(uint8_t *b, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)(seed + i * 7);
}

/* Private data of 252 octets both ways (256 with the MPA v2 word); 253 is
 * EINVAL on both calls. IRD/ORD reported as the kernel's iw_cm does. */
static void test_pd_ird_ord(void)
{
	struct side l = listener(port), c = client(port);
	struct rdma_conn_param cp = { 0 }, ap = { 0 };
	uint8_t req[253], rep[253];
	struct rdma_cm_event *ev;
	struct rdma_cm_id *child;

	fill(req, sizeof(req), 1);
	fill(rep, sizeof(rep), 99);
	cp.private_data = req;
	cp.private_data_len = 253;
	cp.responder_resources = 3;
	cp.initiator_depth = 2;
	CHECK(rdma_connect(c.id, &cp) && errno == EINVAL,
	      "253 octets of private data were not EINVAL");
	cp.private_data_len = 252;
	CHECK(!rdma_connect(c.id, &cp), "connect: %s", strerror(errno));
	ev = expect(l.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	CHECK(ev->listen_id == l.id, "listen_id");
	CHECK(ev->id && ev->id != l.id, "a new id");
	CHECK(ev->param.conn.private_data_len == 252 &&
		      !memcmp(ev->param.conn.private_data, req, 252),
	      "request private data (%u octets)",
	      ev->param.conn.private_data_len);
	/* The peer's IRD 3 bounds our ORD, its ORD 2 our IRD. */
	CHECK(ev->param.conn.initiator_depth == 3 &&
		      ev->param.conn.responder_resources == 2,
	      "request IRD/ORD: initiator_depth %u responder_resources %u",
	      ev->param.conn.initiator_depth,
	      ev->param.conn.responder_resources);
	child = ev->id;
	CHECK(child->verbs == c.id->verbs, "one context per device");
	ack(ev);
	make_qp(child);
	ap.private_data = rep;
	ap.private_data_len = 253;
	ap.responder_resources = 2;
	ap.initiator_depth = 3;
	CHECK(rdma_accept(child, &ap) && errno == EINVAL,
	      "253 octets in accept were not EINVAL");
	ap.private_data_len = 252;
	CHECK(!rdma_accept(child, &ap), "accept: %s", strerror(errno));
	ev = expect(c.ch, RDMA_CM_EVENT_ESTABLISHED);
	CHECK(ev->param.conn.private_data_len == 252 &&
		      !memcmp(ev->param.conn.private_data, rep, 252),
	      "reply private data (%u octets)",
	      ev->param.conn.private_data_len);
	/* iw_cm: initiator_depth = IRD, responder_resources = ORD. */
	CHECK(ev->param.conn.initiator_depth == 3 &&
		      ev->param.conn.responder_resources == 2,
	      "client IRD/ORD %u/%u", ev->param.conn.initiator_depth,
	      ev->param.conn.responder_resources);
	ack(ev);
	ev = expect(l.ch, RDMA_CM_EVENT_ESTABLISHED);
	CHECK(ev->id == child, "server ESTABLISHED on the new id");
	CHECK(ev->param.conn.initiator_depth == 2 &&
		      ev->param.conn.responder_resources == 3,
	      "server IRD/ORD %u/%u", ev->param.conn.initiator_depth,
	      ev->param.conn.responder_resources);
	ack(ev);
	CHECK(ntohs(rdma_get_dst_port(c.id)) == port &&
		      ntohs(rdma_get_src_port(child)) == port,
	      "ports");

	/* Disconnect: both sides hear it; the posted receives flush once. */
	{
		struct ibv_mr *mr;
		static char buf[4096];
		struct ibv_recv_wr wr = { 0 }, *bad;
		struct ibv_sge sge;
		struct ibv_wc wc[16];
		int i, n, cn = 0, sn = 0, tries;

		mr = ibv_reg_mr(c.id->pd, buf, sizeof(buf),
				IBV_ACCESS_LOCAL_WRITE);
		CHECK(mr, "reg_mr");
		sge.addr = (uintptr_t)buf;
		sge.length = 64;
		sge.lkey = mr->lkey;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		for (i = 0; i < 4; i++) {
			wr.wr_id = 100 + i;
			CHECK(!ibv_post_recv(c.id->qp, &wr, &bad), "post c");
		}
		{
			struct ibv_mr *smr = ibv_reg_mr(child->pd, buf + 2048,
							2048,
							IBV_ACCESS_LOCAL_WRITE);

			CHECK(smr, "reg_mr s");
			sge.lkey = smr->lkey;
			sge.addr = (uintptr_t)(buf + 2048);
			for (i = 0; i < 3; i++) {
				wr.wr_id = 200 + i;
				CHECK(!ibv_post_recv(child->qp, &wr, &bad),
				      "post s");
			}
			CHECK(!rdma_disconnect(c.id), "disconnect: %s",
			      strerror(errno));
			ack(expect(c.ch, RDMA_CM_EVENT_DISCONNECTED));
			ev = expect(l.ch, RDMA_CM_EVENT_DISCONNECTED);
			CHECK(ev->id == child, "server DISCONNECTED id");
			ack(ev);
			for (tries = 0; tries < 50; tries++) {
				n = ibv_poll_cq(c.id->recv_cq, 16, wc);
				for (i = 0; i < n; i++) {
					CHECK(wc[i].status ==
						      IBV_WC_WR_FLUSH_ERR,
					      "client status %d", wc[i].status);
					CHECK(wc[i].wr_id ==
						      (uint64_t)(100 + cn),
					      "client wr_id order");
					cn++;
				}
				n = ibv_poll_cq(child->recv_cq, 16, wc);
				for (i = 0; i < n; i++) {
					CHECK(wc[i].status ==
						      IBV_WC_WR_FLUSH_ERR,
					      "server status %d", wc[i].status);
					sn++;
				}
				usleep(20000);
			}
			CHECK(cn == 4 && sn == 3,
			      "flushed %d/4 client, %d/3 server WRs", cn, sn);
			ibv_dereg_mr(smr);
		}
		ibv_dereg_mr(mr);
	}
	CHECK(!rdma_disconnect(child), "server disconnect after peer's");
	rdma_destroy_qp(child);
	CHECK(!rdma_destroy_id(child), "destroy child");
	side_free(&c);
	side_free(&l);
	printf("ok - private data 252 both ways, 253 EINVAL; IRD/ORD; "
	       "disconnect both sides, flushed once\n");
}

/*
 * The initiator of test_post_after_accept, in a child process of its own
 * (its own engine, so that stopping it holds back its MPA): receives the
 * Send the server posted; exits 0 when it came whole.
 */
static void post_after_accept_client(int go)
{
	static char buf[64], want[64];
	struct ibv_recv_wr wr = { 0 }, *bad;
	struct ibv_sge sge;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	struct side c;
	char b;
	int tries;

	CHECK(read(go, &b, 1) == 1, "the server did not listen");
	c = client(port + 6);
	mr = ibv_reg_mr(c.id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr, "reg_mr c");
	sge = (struct ibv_sge){ (uintptr_t)buf, sizeof(buf), mr->lkey };
	wr.wr_id = 7;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	CHECK(!ibv_post_recv(c.id->qp, &wr, &bad), "post_recv c");
	CHECK(!rdma_connect(c.id, NULL), "connect: %s", strerror(errno));
	ack(expect(c.ch, RDMA_CM_EVENT_ESTABLISHED));
	for (tries = 0; tries < 1000; tries++) {
		if (ibv_poll_cq(c.id->recv_cq, 1, &wc) == 1)
			break;
		usleep(10000);
	}
	CHECK(tries < 1000, "no Send arrived");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 7 &&
		      wc.byte_len == sizeof(buf),
	      "recv status %d, %u octets", wc.status, wc.byte_len);
	fill((uint8_t *)want, sizeof(want), 42);
	CHECK(!memcmp(buf, want, sizeof(buf)), "received data");
	ack(expect(c.ch, RDMA_CM_EVENT_DISCONNECTED));
	exit(0);
}

/*
 * The passive side posts the moment rdma_accept returns, before its
 * ESTABLISHED (perftest -R's latency servers do): the QP is RTS, as siw's
 * accept leaves it, and the Send goes once MPA is done. The initiator is
 * stopped from the request to the post, so MPA cannot finish first.
 * Runs before anything here opens a device: the child is forked.
 */
static void test_post_after_accept(void)
{
	static char sbuf[64];
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *child;
	struct ibv_sge sge;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	struct side l;
	int go[2], tries, st, err;
	pid_t pid;

	CHECK(!pipe(go), "pipe");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (!pid) {
		close(go[1]);
		post_after_accept_client(go[0]);
	}
	close(go[0]);
	l = listener(port + 6);
	CHECK(write(go[1], "g", 1) == 1, "go");
	ev = expect(l.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	CHECK(!kill(pid, SIGSTOP), "SIGSTOP");
	child = ev->id;
	ack(ev);
	make_qp(child);
	mr = ibv_reg_mr(child->pd, sbuf, sizeof(sbuf), 0);
	CHECK(mr, "reg_mr s");
	fill((uint8_t *)sbuf, sizeof(sbuf), 42);
	sge = (struct ibv_sge){ (uintptr_t)sbuf, sizeof(sbuf), mr->lkey };
	wr.wr_id = 9;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	CHECK(!rdma_accept(child, NULL), "accept: %s", strerror(errno));
	err = ibv_post_send(child->qp, &wr, &bad);
	CHECK(!ibv_query_qp(child->qp, &qa, IBV_QP_STATE, &ia), "query_qp");
	CHECK(!kill(pid, SIGCONT), "SIGCONT");
	CHECK(!err, "post_send right after accept: %s (QP state %d)",
	      strerror(err), qa.qp_state);
	CHECK(qa.qp_state == IBV_QPS_RTS, "accepted QP in state %d, not RTS",
	      qa.qp_state);
	ack(expect(l.ch, RDMA_CM_EVENT_ESTABLISHED));
	for (tries = 0; tries < 1000; tries++) {
		if (ibv_poll_cq(child->send_cq, 1, &wc) == 1)
			break;
		usleep(10000);
	}
	CHECK(tries < 1000 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 9,
	      "send: %s",
	      tries < 1000 ? ibv_wc_status_str(wc.status) : "no completion");
	CHECK(!rdma_disconnect(child), "disconnect: %s", strerror(errno));
	ack(expect(l.ch, RDMA_CM_EVENT_DISCONNECTED));
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st),
	      "the initiator failed (status %#x)", st);
	ibv_dereg_mr(mr);
	rdma_destroy_qp(child);
	CHECK(!rdma_destroy_id(child), "destroy child");
	side_free(&l);
	close(go[1]);
	printf("ok - a Send posted as rdma_accept returns (RTS) arrives\n");
}

static void test_reject(void)
{
	struct side l = listener(port + 1), c = client(port + 1);
	struct rdma_cm_event *ev;
	uint8_t why[40];

	fill(why, sizeof(why), 5);
	CHECK(!rdma_connect(c.id, NULL), "connect: %s", strerror(errno));
	ev = expect(l.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	CHECK(!rdma_reject(ev->id, why, sizeof(why)), "reject: %s",
	      strerror(errno));
	CHECK(!rdma_destroy_id(ev->id), "destroy rejected id");
	ack(ev);
	ev = expect(c.ch, RDMA_CM_EVENT_REJECTED);
	CHECK(ev->status == -ECONNREFUSED, "reject status %d", ev->status);
	CHECK(ev->param.conn.private_data_len == sizeof(why) &&
		      !memcmp(ev->param.conn.private_data, why, sizeof(why)),
	      "reject private data (%u octets)",
	      ev->param.conn.private_data_len);
	ack(ev);
	side_free(&c);
	side_free(&l);
	printf("ok - reject with private data seen by the initiator\n");
}

static void test_no_listener(void)
{
	struct side c = client(port + 2);
	struct rdma_cm_event *ev;

	CHECK(!rdma_connect(c.id, NULL), "connect: %s", strerror(errno));
	ev = expect(c.ch, RDMA_CM_EVENT_REJECTED);
	CHECK(ev->status == -ECONNREFUSED, "status %d", ev->status);
	ack(ev);
	side_free(&c);
	printf("ok - no listener: REJECTED, -ECONNREFUSED\n");
}

/* A plain TCP listener on 127.0.0.1:@p that never speaks MPA. */
static int raw_listener(int p)
{
	struct sockaddr_in a = addr_of(p);
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	CHECK(fd >= 0, "socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	CHECK(!bind(fd, (struct sockaddr *)&a, sizeof(a)) && !listen(fd, 4),
	      "raw listener: %s", strerror(errno));
	return fd;
}

/* TCP connects, no MPA Reply comes: UNREACHABLE, -ETIMEDOUT, bounded. */
static void test_unreachable(void)
{
	int lfd = raw_listener(port + 4);
	struct side c = client(port + 4);
	struct rdma_cm_event *ev;
	struct pollfd p = { .fd = c.ch->fd, .events = POLLIN };

	CHECK(!rdma_connect(c.id, NULL), "connect: %s", strerror(errno));
	/* The MPA Reply timer is 10 s; nothing may come before. */
	CHECK(poll(&p, 1, 8000) == 0, "an event before the Reply timer");
	ev = expect(c.ch, RDMA_CM_EVENT_UNREACHABLE);
	CHECK(ev->status == -ETIMEDOUT, "status %d", ev->status);
	ack(ev);
	side_free(&c);
	close(lfd);
	printf("ok - no MPA Reply: UNREACHABLE, -ETIMEDOUT\n");
}

/* A Reply that is not MPA: CONNECT_ERROR. */
static void test_connect_error(void)
{
	int lfd = raw_listener(port + 5), fd;
	struct side c = client(port + 5);
	struct rdma_cm_event *ev;
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	static const char junk[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
	char buf[512];

	CHECK(!rdma_connect(c.id, NULL), "connect: %s", strerror(errno));
	CHECK(poll(&p, 1, 5000) == 1, "no connection came");
	fd = accept(lfd, NULL, NULL);
	CHECK(fd >= 0, "accept");
	CHECK(read(fd, buf, sizeof(buf)) > 0, "no MPA Request came");
	CHECK(write(fd, junk, sizeof(junk) - 1) == sizeof(junk) - 1, "write");
	ev = expect(c.ch, RDMA_CM_EVENT_CONNECT_ERROR);
	CHECK(ev->status < 0, "status %d", ev->status);
	ack(ev);
	side_free(&c);
	close(fd);
	close(lfd);
	printf("ok - a Reply that is not MPA: CONNECT_ERROR\n");
}

static void test_nonblocking(void)
{
	struct sockaddr_in a = addr_of(port);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev, *ev2;
	struct rdma_cm_id *id, *id2;
	struct pollfd p;

	CHECK(ch, "channel");
	CHECK(!fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK),
	      "O_NONBLOCK");
	CHECK(rdma_get_cm_event(ch, &ev) && errno == EAGAIN,
	      "empty non-blocking channel: not EAGAIN");
	p.fd = ch->fd;
	p.events = POLLIN;
	CHECK(poll(&p, 1, 0) == 0, "empty channel polls readable");
	CHECK(!rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), "create_id");
	CHECK(!rdma_resolve_addr(id, NULL, (struct sockaddr *)&a, 2000),
	      "resolve");
	CHECK(poll(&p, 1, 5000) == 1 && (p.revents & POLLIN),
	      "poll did not wake");
	CHECK(!rdma_get_cm_event(ch, &ev), "get");
	CHECK(ev->event == RDMA_CM_EVENT_ADDR_RESOLVED, "event %s",
	      rdma_event_str(ev->event));
	CHECK(rdma_get_cm_event(ch, &ev2) && errno == EAGAIN, "drained");

	/* destroy_id with an unacked event, and with a queued one. */
	CHECK(!rdma_create_id(ch, &id2, NULL, RDMA_PS_TCP), "create_id 2");
	CHECK(!rdma_resolve_addr(id2, NULL, (struct sockaddr *)&a, 2000),
	      "resolve 2");
	CHECK(!rdma_destroy_id(id), "destroy_id with an unacked event");
	ack(ev);
	CHECK(!rdma_destroy_id(id2), "destroy_id with a queued event");
	CHECK(rdma_get_cm_event(ch, &ev2) && errno == EAGAIN,
	      "a destroyed id's queued event was delivered");
	rdma_destroy_event_channel(ch);
	printf("ok - non-blocking channel: EAGAIN, poll wakes; destroy_id "
	       "with unacked and queued events\n");
}

static void test_port_in_use(void)
{
	struct side l = listener(port + 3);
	struct sockaddr_in a = addr_of(port + 3);
	struct rdma_cm_id *id;
	int rc;

	CHECK(!rdma_create_id(l.ch, &id, NULL, RDMA_PS_TCP), "create_id");
	rc = rdma_bind_addr(id, (struct sockaddr *)&a);
	if (!rc)
		rc = rdma_listen(id, 1);
	CHECK(rc && errno == EADDRINUSE, "second listener: rc %d, %s", rc,
	      strerror(errno));
	CHECK(!rdma_destroy_id(id), "destroy");
	side_free(&l);
	printf("ok - a listening port in use: EADDRINUSE\n");
}

struct late_reader {
	struct rdma_event_channel *ch;
	int rc, err;
	int done; /* atomic: read while the thread may still run */
};

static void *late_get(void *arg)
{
	struct late_reader *r = arg;
	struct rdma_cm_event *ev;

	r->rc = rdma_get_cm_event(r->ch, &ev);
	r->err = errno;
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
}

/*
 * rping's pattern: a thread calls rdma_get_cm_event on a channel main
 * has already destroyed. It must neither touch freed memory (ASan, TSan)
 * nor fail, which rping turns into exit(-1); it blocks, as a reader of a
 * channel with nothing left to deliver, until a signal gives EINTR.
 */
static void test_destroyed_channel(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct late_reader r = { 0 };
	pthread_t t;

	CHECK(!sigaction(SIGUSR1, &sa, NULL), "sigaction");
	r.ch = rdma_create_event_channel();
	CHECK(r.ch, "create_event_channel");
	rdma_destroy_event_channel(r.ch);
	CHECK(!pthread_create(&t, NULL, late_get, &r), "pthread_create");
	usleep(300 * 1000);
	CHECK(!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE),
	      "get_cm_event on a destroyed channel returned %d (%s)", r.rc,
	      strerror(r.err));
	CHECK(!pthread_kill(t, SIGUSR1), "pthread_kill");
	CHECK(!pthread_join(t, NULL), "pthread_join");
	CHECK(r.rc == -1 && r.err == EINTR,
	      "after a signal: rc %d, %s, not EINTR", r.rc, strerror(r.err));
	printf("ok - get_cm_event on a destroyed channel blocks, a signal "
	       "gives EINTR\n");
}

/*
 * perftest -R's retry destroys its ids, then resolves on them again: a
 * pointer that is no id, or no longer one, must give EINVAL and touch
 * nothing. The real librdmacm, which swiw forwards other ids to, would
 * follow it (id->channel->fd here).
 */
static void test_stray_id(void)
{
	static char zeroes[4096]; /* room before and after a fake id */
	struct rdma_cm_id *fake = (struct rdma_cm_id *)(zeroes + 2048);
	struct sockaddr_in dst = addr_of(port);
	struct rdma_event_channel *ch;
	struct rdma_cm_id *gone, *ids[2];
	int i;

	ch = rdma_create_event_channel();
	CHECK(ch, "create_event_channel");
	CHECK(!rdma_create_id(ch, &gone, NULL, RDMA_PS_TCP), "create_id");
	CHECK(!rdma_destroy_id(gone), "destroy_id");
	ids[0] = fake;
	ids[1] = gone;
	for (i = 0; i < 2; i++) {
		struct rdma_cm_id *id = ids[i];

		errno = 0;
		CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst,
					1000) == -1 &&
			      errno == EINVAL,
		      "resolve_addr on a stray id: %s", strerror(errno));
		errno = 0;
		CHECK(rdma_bind_addr(id, (struct sockaddr *)&dst) == -1 &&
			      errno == EINVAL,
		      "bind_addr on a stray id: %s", strerror(errno));
		errno = 0;
		CHECK(rdma_connect(id, NULL) == -1 && errno == EINVAL,
		      "connect on a stray id: %s", strerror(errno));
		rdma_destroy_qp(id);
		errno = 0;
		CHECK(rdma_destroy_id(id) == -1 && errno == EINVAL,
		      "destroy_id on a stray id: %s", strerror(errno));
	}
	rdma_destroy_event_channel(ch);
	printf("ok - a stray or destroyed id: EINVAL, nothing followed\n");
}

/* --- a listener faces hostile peers ------------------------------------ */

/* CPU time of this process (every thread), in ms. */
static long cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000L +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

/* CPU this process used in @ms of doing nothing itself. */
static long idle_cpu_ms(int ms)
{
	long c0 = cpu_ms();

	usleep((useconds_t)ms * 1000);
	return cpu_ms() - c0;
}

/* A plain TCP connection to 127.0.0.1:@p. */
static int raw_connect(int p)
{
	struct sockaddr_in a = addr_of(p);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0 && !connect(fd, (struct sockaddr *)&a, sizeof(a)),
	      "raw connect: %s", strerror(errno));
	return fd;
}

/* An MPA v1 Request (RFC 5044 7.1) with no private data, CRC asked for. */
static const uint8_t mpa_req[20] = { 'M', 'P', 'A',  ' ', 'I', 'D', ' ',
				     'R', 'e', 'q',  ' ', 'F', 'r', 'a',
				     'm', 'e', 0x40, 1,	  0,   0 };

/* A Reply with the Reject flag comes on @fd, then the end. */
static bool rejected(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint8_t r[64];
	ssize_t n;

	if (poll(&p, 1, 5000) != 1 || (n = recv(fd, r, sizeof(r), 0)) < 20)
		return false;
	return !memcmp(r, "MPA ID Rep Frame", 16) && (r[16] & 0x20);
}

/*
 * A Request that stops after one octet is read and held, and does not
 * keep the CM thread busy (it used to peek at it again and again until
 * its deadline); the rest of it, later, makes a CONNECT_REQUEST.
 */
static void test_partial_request(void)
{
	struct side l = listener(port + 7);
	struct rdma_cm_event *ev;
	int fd = raw_connect(port + 7);
	long used;

	CHECK(send(fd, mpa_req, 1, 0) == 1, "send");
	usleep(100000);
	used = idle_cpu_ms(1000);
	CHECK(used < 300, "a 1-octet Request: %ld ms of CPU in 1 s", used);
	CHECK(send(fd, mpa_req + 1, sizeof(mpa_req) - 1, 0) ==
		      sizeof(mpa_req) - 1,
	      "send the rest");
	ev = expect(l.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	CHECK(!rdma_reject(ev->id, NULL, 0), "reject: %s", strerror(errno));
	CHECK(!rdma_destroy_id(ev->id), "destroy rejected id");
	ack(ev);
	CHECK(rejected(fd), "the raw peer got no reject Reply");
	close(fd);
	side_free(&l);
	printf("ok - a partial Request waits without burning CPU (%ld ms in 1 s), then completes\n",
	       used);
}

/*
 * Requests beyond the listener's backlog that nobody accepted yet are
 * rejected, not turned into ids and descriptors without end; once the
 * pending ones are taken, the next gets through.
 */
static void test_backlog(void)
{
	struct side l = listener_backlog(port + 8, 2);
	struct rdma_cm_event *ev[2];
	struct pollfd p = { .fd = l.ch->fd, .events = POLLIN };
	int fd[6], i, nrej = 0;

	for (i = 0; i < 6; i++) {
		fd[i] = raw_connect(port + 8);
		CHECK(send(fd[i], mpa_req, sizeof(mpa_req), 0) ==
			      sizeof(mpa_req),
		      "send");
	}
	for (i = 0; i < 2; i++)
		ev[i] = expect(l.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	for (i = 0; i < 6; i++) {
		struct pollfd q = { .fd = fd[i], .events = POLLIN };

		if (poll(&q, 1, 2000) == 1 && rejected(fd[i]))
			nrej++;
	}
	CHECK(nrej == 4, "%d of 6 Requests rejected with backlog 2", nrej);
	CHECK(poll(&p, 1, 500) == 0, "a third CONNECT_REQUEST over backlog 2");
	for (i = 0; i < 2; i++) {
		CHECK(!rdma_reject(ev[i]->id, NULL, 0), "reject");
		CHECK(!rdma_destroy_id(ev[i]->id), "destroy");
		ack(ev[i]);
	}
	for (i = 0; i < 6; i++)
		close(fd[i]);
	fd[0] = raw_connect(port + 8);
	CHECK(send(fd[0], mpa_req, sizeof(mpa_req), 0) == sizeof(mpa_req),
	      "send");
	ev[0] = expect(l.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	CHECK(!rdma_reject(ev[0]->id, NULL, 0), "reject");
	CHECK(!rdma_destroy_id(ev[0]->id), "destroy");
	ack(ev[0]);
	close(fd[0]);
	side_free(&l);
	printf("ok - backlog 2: 2 CONNECT_REQUESTs, 4 Requests rejected, room again once taken\n");
}

/*
 * Out of descriptors, accept() fails with EMFILE and the connection
 * stays queued: the listener rests instead of spinning, and takes it
 * once descriptors are free again.
 */
static void test_emfile(void)
{
	struct side l = listener(port + 9);
	struct rdma_cm_event *ev;
	struct rlimit old, low;
	int fd = raw_connect(port + 9), lowest;
	long used;

	CHECK(!getrlimit(RLIMIT_NOFILE, &old), "getrlimit");
	lowest = dup(0); /* the lowest free descriptor */
	CHECK(lowest >= 0, "dup");
	close(lowest);
	low = old;
	low.rlim_cur = (rlim_t)lowest;
	CHECK(!setrlimit(RLIMIT_NOFILE, &low), "setrlimit: %s",
	      strerror(errno));
	CHECK(send(fd, mpa_req, sizeof(mpa_req), 0) == sizeof(mpa_req), "send");
	usleep(200000);
	used = idle_cpu_ms(1000);
	CHECK(!setrlimit(RLIMIT_NOFILE, &old), "restore RLIMIT_NOFILE");
	CHECK(used < 300, "accept at EMFILE: %ld ms of CPU in 1 s", used);
	{
		/* A descriptor another thread freed meanwhile may have let
		 * the connection in while the process still had none for
		 * the rest (its devices cannot be listed): it was dropped
		 * then. Descriptors are back: a new one gets through. */
		struct pollfd p = { .fd = l.ch->fd, .events = POLLIN };
		char b;

		if (poll(&p, 1, 3000) == 0 &&
		    recv(fd, &b, 1, MSG_DONTWAIT) == 0) {
			printf("# the first connection was dropped at EMFILE: again\n");
			close(fd);
			fd = raw_connect(port + 9);
			CHECK(send(fd, mpa_req, sizeof(mpa_req), 0) ==
				      sizeof(mpa_req),
			      "send");
		}
	}
	ev = expect(l.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	CHECK(!rdma_reject(ev->id, NULL, 0), "reject");
	CHECK(!rdma_destroy_id(ev->id), "destroy");
	ack(ev);
	close(fd);
	side_free(&l);
	printf("ok - EMFILE at accept: the listener rests (%ld ms of CPU in 1 s), then accepts\n",
	       used);
}

/* No fixed table of ids: 300 listeners at once. */
static void test_many_listeners(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *ids[300];
	int i;

	CHECK(ch, "channel");
	for (i = 0; i < 300; i++) {
		struct sockaddr_in a = addr_of(0);

		CHECK(!rdma_create_id(ch, &ids[i], NULL, RDMA_PS_TCP),
		      "create_id");
		CHECK(!rdma_bind_addr(ids[i], (struct sockaddr *)&a) &&
			      !rdma_listen(ids[i], 4),
		      "listener %d: %s", i, strerror(errno));
	}
	for (i = 0; i < 300; i++)
		CHECK(!rdma_destroy_id(ids[i]), "destroy_id");
	rdma_destroy_event_channel(ch);
	printf("ok - 300 listening ids in one process\n");
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2 || (port = atoi(argv[1])) <= 0 || port > 65000) {
		fprintf(stderr, "usage: cma_api PORT (uses PORT..PORT+9)\n");
		return 2;
	}
	test_post_after_accept();
	test_pd_ird_ord();
	test_reject();
	test_no_listener();
	test_nonblocking();
	test_port_in_use();
	test_unreachable();
	test_connect_error();
	test_destroyed_channel();
	test_stray_id();
	test_partial_request();
	test_backlog();
	test_emfile();
	test_many_listeners();
	return failures ? 1 : 0;
}
