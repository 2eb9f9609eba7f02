// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The plain-TCP reference for perf_vs_tcp.sh: the transfers perftest makes,
 * over one TCP connection with TCP_NODELAY, reported as perftest reports
 * them, so the two can stand side by side.
 *
 *   lat  ping-pong of S-byte messages, N timed round trips (after a short
 *        warm-up); one-way latency = RTT / 2, as ib_send_lat and
 *        ib_write_lat print it: minimum, typical (median), average, 99th
 *        percentile, in usec.
 *   bw   the client streams S-byte messages for N iterations or D seconds
 *        and then closes its sending side; the server counts the octets up
 *        to the end of the stream (reading up to 64 KiB a call, as TCP
 *        keeps no message boundaries) and answers with the count. MB/s is
 *        octets / 2^20 over the time from the first send to that answer,
 *        as perftest's "BW average" is from the first post to the last
 *        completion (its MB is 2^20, format_factor 0x100000).
 *
 * Both ends poll as perftest polls its CQ: non-blocking calls, spinning
 * on EAGAIN, but yielding the CPU at each turn and only for a spin budget
 * (50 us, as long as swiw's engine spins) before they block in poll().
 * With a CPU each that is busy polling; when both ends share one CPU (two
 * vCPUs shared with other work) a plain spinner would hold the CPU its
 * peer needs for a time slice: 4 ms one-way instead of 6 us for 64 B.
 * -P spins (and yields) for ever, -B blocks in send/recv.
 *
 * lat -T: a second thread on each end receives, blocking in recv(), and
 * places each message; the main thread spins on the count of placed
 * messages (no syscall, no yield) and sends the next. That is how
 * ib_write_lat meets an RDMA engine whose progress thread sleeps until
 * the socket has data: the program spins on its memory and only a
 * thread wake-up places the Write. It is the floor of that design on
 * this machine, beside the busy-polled figure.
 * lat -I: no thread; the kernel signals the spinning main thread as data
 * arrives (O_ASYNC, F_SETSIG) and its handler receives and places the
 * message. It is the other way a user-space engine could place a Write
 * without the program's help, measured so that its cost is known: no
 * context switch, but a signal delivered to a CPU busy in user space.
 * The client tells the server the mode, size and count, so the server
 * needs only its port.
 *
 * Usage: tcp_ref [options] lat|bw            server
 *        tcp_ref [options] lat|bw HOST       client
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "swiw_bench_util.h"

#define SWIW_TR_MAGIC 0x53575452u /* "SWTR" */
#define SWIW_TR_MAX_SIZE (1u << 30)
#define SWIW_TR_MAX_ITERS 100000000u
#define SWIW_TR_RX_CHUNK 65536u

enum swiw_tr_mode {
	SWIW_TR_LAT = 1,
	SWIW_TR_BW = 2
};

struct swiw_tr_opts {
	enum swiw_tr_mode mode;
	const char *host; /* NULL: server */
	const char *port;
	const char *bind_addr;
	uint32_t size;
	uint32_t iters;
	uint32_t warmup;
	double duration; /* bw: seconds instead of iters when > 0 */
};

/* What the client sends first, in network byte order. */
struct swiw_tr_hello {
	uint32_t magic;
	uint32_t mode;
	uint32_t size;
	uint32_t iters;
	uint32_t warmup;
};

static const char *prog = "tcp_ref";
static bool blocking;
static bool placer; /* lat -T */
static bool sigio; /* lat -I */
static double spin_s = 50e-6; /* < 0: for ever */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [options] lat|bw         run the server (one connection)\n"
		"       %s [options] lat|bw HOST    run the client against HOST\n"
		"\n"
		"  lat  ping-pong of SIZE-byte messages; prints one-way latency (RTT/2)\n"
		"       in usec: t_min, t_typical (median), t_avg, 99%% percentile\n"
		"  bw   stream SIZE-byte messages; prints BW average in MB/sec (MB = 2^20)\n"
		"       and the message rate in Mpps\n"
		"\n"
		"Options (the client's -s, -n, -w and -D are the ones used):\n"
		"  -p, --port PORT       TCP port (default 18515)\n"
		"  -b, --bind ADDR       server: listen on ADDR only (default: all)\n"
		"  -s, --size BYTES      message size, 1..%u\n"
		"                        (default 2 for lat, 65536 for bw)\n"
		"  -n, --iters N         timed iterations\n"
		"                        (default 1000 for lat, 5000 for bw)\n"
		"  -w, --warmup N        lat: untimed round trips first (default 16)\n"
		"  -D, --duration SEC    bw: stream for SEC seconds instead of N messages\n"
		"  -S, --spin USEC       spin this long on a socket that is not ready\n"
		"                        before blocking in poll() (default 50)\n"
		"  -P, --busy-poll       spin for ever, never block\n"
		"  -B, --blocking        block in send/recv at once\n"
		"  -T, --placer          lat: a thread receives (blocking) and places\n"
		"                        each message; the main thread spins on the\n"
		"                        placed count, as ib_write_lat's target spins\n"
		"                        on its memory\n"
		"  -I, --sigio           lat: as -T, but no thread: a signal on each\n"
		"                        arrival runs a handler that places it\n"
		"  -h, --help            this text\n",
		prog, prog, SWIW_TR_MAX_SIZE);
}

/*
 * After EAGAIN on @fd: spins until the budget from the first EAGAIN
 * (*@spin_end, 0 when not spinning) is used up, then blocks in poll()
 * for @events. False with errno set if poll() fails.
 */
static bool wait_ready(int fd, short events, double *spin_end)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	double t;

	/* the peer may be waiting for this CPU: let it run first */
	sched_yield();
	if (spin_s < 0)
		return true;
	t = swiw_bu_now();
	if (!*spin_end)
		*spin_end = t + spin_s;
	if (t < *spin_end)
		return true;
	*spin_end = 0;
	return poll(&pfd, 1, -1) >= 0 || errno == EINTR;
}

/* Sends all @len octets; false with errno set on failure. */
static bool send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	double spin_end = 0;
	ssize_t n;

	while (len) {
		n = send(fd, p, len,
			 blocking ? MSG_NOSIGNAL : MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN &&
			    wait_ready(fd, POLLOUT, &spin_end))
				continue;
			return false;
		}
		spin_end = 0;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

/*
 * Receives all @len octets; false with errno set on failure, errno 0 if
 * the peer closed the connection first.
 */
static bool recv_all(int fd, void *buf, size_t len)
{
	double spin_end = 0;
	char *p = buf;
	ssize_t n;

	while (len) {
		n = recv(fd, p, len, blocking ? 0 : MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN &&
			    wait_ready(fd, POLLIN, &spin_end))
				continue;
			return false;
		}
		spin_end = 0;
		if (n == 0) {
			errno = 0;
			return false;
		}
		p += n;
		len -= (size_t)n;
	}
	return true;
}

static void report_io(const char *what, int err)
{
	if (err)
		fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(err));
	else
		fprintf(stderr, "%s: %s: the peer closed the connection\n",
			prog, what);
}

static int set_nodelay(int fd)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one))) {
		fprintf(stderr, "%s: setsockopt(TCP_NODELAY): %s\n", prog,
			strerror(errno));
		return -1;
	}
	return 0;
}

/* A connected (client) or listening (server) socket, or -1. */
static int open_socket(const struct swiw_tr_opts *o)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	const char *node = o->host ? o->host : o->bind_addr;
	int fd = -1, err = 0, rc, one = 1;

	if (!o->host)
		hints.ai_flags = AI_PASSIVE;
	rc = getaddrinfo(node, o->port, &hints, &res);
	if (rc) {
		fprintf(stderr, "%s: %s port %s: %s\n", prog,
			node ? node : "(any)", o->port, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		if (o->host) {
			if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
				break;
		} else if (!setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
				       sizeof(one)) &&
			   !bind(fd, ai->ai_addr, ai->ai_addrlen) &&
			   !listen(fd, 1)) {
			break;
		}
		err = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		fprintf(stderr, "%s: cannot %s %s port %s: %s\n", prog,
			o->host ? "connect to" : "listen on",
			node ? node : "(any)", o->port, strerror(err));
	return fd;
}

/*
 * lat -T: the placing thread. It receives every message of the run into
 * the buffer, blocking, and publishes the count of messages placed.
 */
struct swiw_tr_placer {
	pthread_t thread;
	int fd;
	char *buf;
	uint32_t size;
	uint32_t total;
	atomic_uint placed;
	atomic_int err; /* errno + 1 of a failed recv, -1: the peer closed */
};

static void *placer_main(void *arg)
{
	struct swiw_tr_placer *pl = arg;
	uint32_t i, got;
	ssize_t n;

	for (i = 0; i < pl->total; i++) {
		for (got = 0; got < pl->size; got += (uint32_t)n) {
			n = recv(pl->fd, pl->buf + got, pl->size - got, 0);
			if (n < 0 && errno == EINTR) {
				n = 0;
				continue;
			}
			if (n <= 0) {
				atomic_store(&pl->err, n ? errno + 1 : -1);
				return NULL;
			}
		}
		atomic_store_explicit(&pl->placed, i + 1, memory_order_release);
	}
	return NULL;
}

/*
 * lat -I: the placer without a thread. The kernel sends SIGRTMIN to the
 * main thread as data arrives; the handler takes what is there, without
 * blocking, and counts each whole message.
 */
static struct swiw_tr_placer *sig_pl;
static uint32_t sig_got;

static void sigio_handler(int sig)
{
	struct swiw_tr_placer *pl = sig_pl;
	int saved = errno;
	ssize_t n;

	(void)sig;
	/*
	 * Not past the run's last message: the peer's close after it is no
	 * error, and reading it here could fail a run that had ended well.
	 */
	while (!atomic_load_explicit(&pl->err, memory_order_relaxed) &&
	       atomic_load_explicit(&pl->placed, memory_order_relaxed) <
		       pl->total) {
		n = recv(pl->fd, pl->buf + sig_got, pl->size - sig_got,
			 MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			atomic_store(&pl->err, n ? errno + 1 : -1);
			break;
		}
		sig_got += (uint32_t)n;
		if (sig_got == pl->size) {
			sig_got = 0;
			atomic_fetch_add_explicit(&pl->placed, 1,
						  memory_order_release);
		}
	}
	errno = saved;
}

/* What -T's thread and -I's handler both start from. */
static void placer_init(struct swiw_tr_placer *pl, int fd, char *buf,
			const struct swiw_tr_opts *o)
{
	pl->fd = fd;
	pl->buf = buf;
	pl->size = o->size;
	pl->total = o->warmup + o->iters;
	atomic_init(&pl->placed, 0);
	atomic_init(&pl->err, 0);
}

static int sigio_start(struct swiw_tr_placer *pl, int fd, char *buf,
		       const struct swiw_tr_opts *o)
{
	struct f_owner_ex owner = { F_OWNER_TID, gettid() };
	struct sigaction sa = { .sa_handler = sigio_handler,
				.sa_flags = SA_RESTART };
	int fl;

	placer_init(pl, fd, buf, o);
	sig_pl = pl;
	sigemptyset(&sa.sa_mask);
	fl = fcntl(fd, F_GETFL);
	if (sigaction(SIGRTMIN, &sa, NULL) || fl < 0 ||
	    fcntl(fd, F_SETOWN_EX, &owner) || fcntl(fd, F_SETSIG, SIGRTMIN) ||
	    fcntl(fd, F_SETFL, fl | O_ASYNC)) {
		fprintf(stderr, "%s: cannot arm the signal: %s\n", prog,
			strerror(errno));
		return -1;
	}
	/* what came before the arm raised nothing */
	raise(SIGRTMIN);
	return 0;
}

/*
 * The @i-th message (from 0) has arrived in @buf: received here, or, with
 * @pl, placed by its thread (or signal handler) while this one spins.
 */
static bool lat_wait(int fd, struct swiw_tr_placer *pl, char *buf,
		     uint32_t size, uint32_t i)
{
	int err;

	if (!pl)
		return recv_all(fd, buf, size);
	while (atomic_load_explicit(&pl->placed, memory_order_acquire) <= i) {
		/*
		 * A failure is read after the count: a message placed just
		 * before it (the handler can run between the two loads)
		 * still counts.
		 */
		err = atomic_load_explicit(&pl->err, memory_order_acquire);
		if (err && atomic_load_explicit(&pl->placed,
						memory_order_acquire) <= i) {
			errno = err < 0 ? 0 : err - 1;
			return false;
		}
	}
	return true;
}

static int placer_start(struct swiw_tr_placer *pl, int fd, char *buf,
			const struct swiw_tr_opts *o)
{
	int err;

	placer_init(pl, fd, buf, o);
	err = pthread_create(&pl->thread, NULL, placer_main, pl);
	if (err)
		fprintf(stderr, "%s: pthread_create: %s\n", prog,
			strerror(err));
	return err ? -1 : 0;
}

/* Client side of lat: the timed round trips, then the report. */
static int lat_client(int fd, const struct swiw_tr_opts *o, char *buf,
		      struct swiw_tr_placer *pl)
{
	struct swiw_bu_stats st;
	double *rtt, t0;
	uint32_t i, n = o->iters;

	rtt = malloc(n * sizeof(*rtt));
	if (!rtt) {
		fprintf(stderr, "%s: out of memory for %u samples\n", prog, n);
		return -1;
	}
	for (i = 0; i < o->warmup + n; i++) {
		t0 = swiw_bu_now();
		if (!send_all(fd, buf, o->size)) {
			report_io("send", errno);
			goto fail;
		}
		if (!lat_wait(fd, pl, buf, o->size, i)) {
			report_io("recv", errno);
			goto fail;
		}
		if (i >= o->warmup)
			rtt[i - o->warmup] = swiw_bu_now() - t0;
	}
	swiw_bu_stats(rtt, n, &st);
	/* one-way = RTT/2, in usec */
	printf(" #bytes #iterations t_min[usec] t_typical[usec] t_avg[usec] "
	       "99%%_percentile[usec]\n");
	printf(" %-6u %-11u %-11.2f %-15.2f %-11.2f %.2f\n", o->size, n,
	       st.min * 0.5e6, st.median * 0.5e6, st.avg * 0.5e6,
	       st.p99 * 0.5e6);
	free(rtt);
	return 0;
fail:
	free(rtt);
	return -1;
}

/* Server side of lat: echo every message back. */
static int lat_server(int fd, const struct swiw_tr_opts *o, char *buf,
		      struct swiw_tr_placer *pl)
{
	uint32_t i;

	for (i = 0; i < o->warmup + o->iters; i++) {
		if (!lat_wait(fd, pl, buf, o->size, i)) {
			report_io("recv", errno);
			return -1;
		}
		if (!send_all(fd, buf, o->size)) {
			report_io("send", errno);
			return -1;
		}
	}
	return 0;
}

/* Client side of bw: stream, close the sending side, wait for the count. */
static int bw_client(int fd, const struct swiw_tr_opts *o, char *buf)
{
	uint64_t sent = 0, count, msgs = 0;
	double t0, t, end;

	t0 = swiw_bu_now();
	end = t0 + o->duration;
	for (;;) {
		if (o->duration > 0 ? swiw_bu_now() >= end : msgs == o->iters)
			break;
		if (!send_all(fd, buf, o->size)) {
			report_io("send", errno);
			return -1;
		}
		sent += o->size;
		msgs++;
	}
	if (shutdown(fd, SHUT_WR)) {
		fprintf(stderr, "%s: shutdown: %s\n", prog, strerror(errno));
		return -1;
	}
	if (!recv_all(fd, &count, sizeof(count))) {
		report_io("recv of the server's count", errno);
		return -1;
	}
	t = swiw_bu_now() - t0;
	count = be64toh(count);
	if (count != sent) {
		fprintf(stderr, "%s: the server received %llu octets of %llu\n",
			prog, (unsigned long long)count,
			(unsigned long long)sent);
		return -1;
	}
	printf(" #bytes #iterations BW_average[MB/sec] MsgRate[Mpps]\n");
	printf(" %-6u %-11llu %-18.2f %.6f\n", o->size,
	       (unsigned long long)msgs, (double)sent / t / (1 << 20),
	       (double)msgs / t / 1e6);
	return 0;
}

/* Server side of bw: count octets to the end of the stream, answer. */
static int bw_server(int fd, char *buf, size_t buf_len)
{
	uint64_t count = 0;
	double spin_end = 0;
	ssize_t n;

	for (;;) {
		n = recv(fd, buf, buf_len, blocking ? 0 : MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN &&
			    wait_ready(fd, POLLIN, &spin_end))
				continue;
			report_io("recv", errno);
			return -1;
		}
		if (n == 0)
			break;
		spin_end = 0;
		count += (uint64_t)n;
	}
	count = htobe64(count);
	if (!send_all(fd, &count, sizeof(count))) {
		report_io("send of the count", errno);
		return -1;
	}
	return 0;
}

/* The server learns the parameters from the client's hello. */
static int server_hello(int fd, struct swiw_tr_opts *o)
{
	struct swiw_tr_hello h;
	uint32_t mode;

	if (!recv_all(fd, &h, sizeof(h))) {
		report_io("recv of the client's parameters", errno);
		return -1;
	}
	mode = ntohl(h.mode);
	if (ntohl(h.magic) != SWIW_TR_MAGIC) {
		fprintf(stderr, "%s: the client is not a %s client\n", prog,
			prog);
		return -1;
	}
	if (mode != o->mode) {
		fprintf(stderr, "%s: the client runs %s, this server %s\n",
			prog, mode == SWIW_TR_LAT ? "lat" : "bw",
			o->mode == SWIW_TR_LAT ? "lat" : "bw");
		return -1;
	}
	o->size = ntohl(h.size);
	o->iters = ntohl(h.iters);
	o->warmup = ntohl(h.warmup);
	if (!o->size || o->size > SWIW_TR_MAX_SIZE ||
	    o->iters > SWIW_TR_MAX_ITERS || o->warmup > SWIW_TR_MAX_ITERS) {
		fprintf(stderr,
			"%s: the client's parameters are out of range\n", prog);
		return -1;
	}
	return 0;
}

static int run(struct swiw_tr_opts *o)
{
	struct swiw_tr_placer pl, *wait_pl = NULL;
	struct swiw_tr_hello h;
	int fd, lfd = -1, rc = -1;
	char *buf = NULL, *pbuf = NULL;
	bool started = false, armed = false;
	size_t buf_len;

	fd = open_socket(o);
	if (fd < 0)
		return -1;
	if (!o->host) {
		lfd = fd;
		do
			fd = accept(lfd, NULL, NULL);
		while (fd < 0 && errno == EINTR);
		if (fd < 0) {
			fprintf(stderr, "%s: accept: %s\n", prog,
				strerror(errno));
			goto out;
		}
	}
	if (set_nodelay(fd))
		goto out;
	if (!o->host) {
		if (server_hello(fd, o))
			goto out;
	} else {
		h.magic = htonl(SWIW_TR_MAGIC);
		h.mode = htonl(o->mode);
		h.size = htonl(o->size);
		/* a timed bw run tells no count: the server reads to the end */
		h.iters = htonl(o->iters);
		h.warmup = htonl(o->warmup);
		if (!send_all(fd, &h, sizeof(h))) {
			report_io("send of the parameters", errno);
			goto out;
		}
	}
	/*
	 * TCP keeps no message boundaries: the bw receiver takes whatever has
	 * arrived, up to 64 KiB a call, as a streaming TCP reader would.
	 */
	buf_len = o->size;
	if (o->mode == SWIW_TR_BW && !o->host && buf_len < SWIW_TR_RX_CHUNK)
		buf_len = SWIW_TR_RX_CHUNK;
	buf = malloc(buf_len);
	if (!buf) {
		fprintf(stderr, "%s: out of memory for a %zu-byte buffer\n",
			prog, buf_len);
		goto out;
	}
	memset(buf, 0x5a, buf_len);
	if (o->mode == SWIW_TR_LAT && (placer || sigio)) {
		/* received into its own buffer, as a Write into the target's */
		pbuf = malloc(o->size);
		if (!pbuf)
			fprintf(stderr, "%s: out of memory\n", prog);
		if (!pbuf ||
		    (placer ? placer_start : sigio_start)(&pl, fd, pbuf, o))
			goto out;
		started = placer;
		armed = sigio;
		wait_pl = &pl;
	}
	if (o->mode == SWIW_TR_LAT)
		rc = o->host ? lat_client(fd, o, buf, wait_pl) :
			       lat_server(fd, o, buf, wait_pl);
	else
		rc = o->host ? bw_client(fd, o, buf) :
			       bw_server(fd, buf, buf_len);
out:
	if (started) {
		/* a failed run: the peer's close ends the thread's recv */
		if (rc)
			shutdown(fd, SHUT_RDWR);
		pthread_join(pl.thread, NULL);
	}
	if (armed)
		signal(SIGRTMIN, SIG_IGN);
	free(pbuf);
	free(buf);
	if (fd >= 0)
		close(fd);
	if (lfd >= 0)
		close(lfd);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "bind", required_argument, NULL, 'b' },
		{ "size", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "duration", required_argument, NULL, 'D' },
		{ "spin", required_argument, NULL, 'S' },
		{ "busy-poll", no_argument, NULL, 'P' },
		{ "blocking", no_argument, NULL, 'B' },
		{ "placer", no_argument, NULL, 'T' },
		{ "sigio", no_argument, NULL, 'I' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct swiw_tr_opts o = { .port = "18515", .warmup = 16 };
	bool have_size = false, have_iters = false;
	uint32_t port, spin_us;
	char *end;
	int c;

	if (argc > 0 && argv[0][0])
		prog = argv[0];
	while ((c = getopt_long(argc, argv, "p:b:s:n:w:D:S:PBTIh", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'p':
			if (!swiw_bu_parse_u32(optarg, 1, 65535, &port))
				goto bad_value;
			o.port = optarg;
			break;
		case 'b':
			o.bind_addr = optarg;
			break;
		case 's':
			if (!swiw_bu_parse_u32(optarg, 1, SWIW_TR_MAX_SIZE,
					       &o.size))
				goto bad_value;
			have_size = true;
			break;
		case 'n':
			if (!swiw_bu_parse_u32(optarg, 1, SWIW_TR_MAX_ITERS,
					       &o.iters))
				goto bad_value;
			have_iters = true;
			break;
		case 'w':
			if (!swiw_bu_parse_u32(optarg, 0, SWIW_TR_MAX_ITERS,
					       &o.warmup))
				goto bad_value;
			break;
		case 'D':
			errno = 0;
			o.duration = strtod(optarg, &end);
			if (errno || *end || end == optarg ||
			    !(o.duration > 0 && o.duration <= 3600))
				goto bad_value;
			break;
		case 'S':
			if (!swiw_bu_parse_u32(optarg, 0, 10000000, &spin_us))
				goto bad_value;
			spin_s = spin_us * 1e-6;
			break;
		case 'P':
			spin_s = -1;
			break;
		case 'B':
			blocking = true;
			break;
		case 'T':
			placer = true;
			break;
		case 'I':
			sigio = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc || optind + 2 < argc) {
		fprintf(stderr,
			"%s: expected lat or bw, then HOST for a client\n",
			prog);
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[optind], "lat")) {
		o.mode = SWIW_TR_LAT;
	} else if (!strcmp(argv[optind], "bw")) {
		o.mode = SWIW_TR_BW;
	} else {
		fprintf(stderr, "%s: unknown mode '%s' (lat or bw)\n", prog,
			argv[optind]);
		return 2;
	}
	if (optind + 1 < argc)
		o.host = argv[optind + 1];
	if (o.duration > 0 && o.mode != SWIW_TR_BW) {
		fprintf(stderr, "%s: -D applies to bw only\n", prog);
		return 2;
	}
	if ((placer || sigio) && (o.mode != SWIW_TR_LAT || blocking)) {
		fprintf(stderr, "%s: -T and -I apply to lat without -B only\n",
			prog);
		return 2;
	}
	if (placer && sigio) {
		fprintf(stderr, "%s: give -T or -I, not both\n", prog);
		return 2;
	}
	if (o.duration > 0 && have_iters) {
		fprintf(stderr, "%s: give -n or -D, not both\n", prog);
		return 2;
	}
	if (!have_size)
		o.size = o.mode == SWIW_TR_LAT ? 2 : 65536;
	if (!have_iters)
		o.iters = o.mode == SWIW_TR_LAT ? 1000 : 5000;
	if (o.duration > 0)
		o.iters = 0;
	return run(&o) ? 1 : 0;

bad_value:
	fprintf(stderr, "%s: bad value '%s' for -%c\n", prog, optarg, c);
	usage(stderr);
	return 2;
}
