// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The broker for real: the swiw-broker daemon, started on demand by the
 * client library or by hand, real processes, real TCP on loopback. Every
 * test runs in a network namespace of its own (hence root), so it gets a
 * broker of its own on the default port, as a user would.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "broker_test.h"
#include "swiw_broker.h"
#include "swiw_broker_proto.h"

#define PORT SWIW_BROKER_PORT_DEFAULT
#define LO "127.0.0.1"
/* How long the brokers of these tests hold a Request they do not hand
 * over (SWIW_BROKER_HOLD_MS, set in main). */
#define HOLD_MS 1000

static const char *broker_bin;

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static uint64_t now_ms(void)
{
	return swiw_broker_now_ms();
}

static uint64_t nonce_seq = 0x5eed000000000000ull;

/* --- namespaces and brokers ----------------------------------------------- */

static void reap_strays(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/* A fresh network namespace with lo up: a world without a broker. */
static int new_netns(void **state)
{
	struct ifreq ifr;
	int fd;

	(void)state;
	reap_strays();
	if (unshare(CLONE_NEWNET)) {
		print_error("unshare(CLONE_NEWNET): %s\n", strerror(errno));
		return -1;
	}
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr))
		return -1;
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr))
		return -1;
	close(fd);
	return 0;
}

/* Whether a broker answers on the namespace's abstract name. */
static bool broker_listening(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				    strlen(SWIW_BP_NAME));
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	bool ok;

	memcpy(sun.sun_path + 1, SWIW_BP_NAME, strlen(SWIW_BP_NAME));
	ok = fd >= 0 && !connect(fd, (struct sockaddr *)&sun, len);
	if (fd >= 0)
		close(fd);
	return ok;
}

/* Starts swiw-broker by hand (foreground) with @args, NULL-terminated. */
static pid_t start_broker(const char *arg0, ...)
{
	const char *argv[16];
	va_list ap;
	int n = 0;
	pid_t pid;
	uint64_t end;

	argv[n++] = broker_bin;
	va_start(ap, arg0);
	for (const char *a = arg0; a && n < 15; a = va_arg(ap, const char *))
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		execv(broker_bin, (char **)argv);
		_exit(127);
	}
	end = now_ms() + 3000;
	while (!broker_listening()) {
		assert_true(now_ms() < end);
		sleep_ms(5);
	}
	return pid;
}

static int exit_status(pid_t pid, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) :
					       128 + WTERMSIG(st);
		if (now_ms() >= end)
			return -1;
		sleep_ms(5);
	}
}

static void stop_broker(pid_t pid)
{
	kill(pid, SIGTERM);
	assert_int_equal(exit_status(pid, 3000), 0);
}

static struct swiw_broker *open_ok(void)
{
	struct swiw_broker *b = NULL;

	assert_int_equal(swiw_broker_open(NULL, &b), 0);
	assert_non_null(b);
	assert_int_equal(swiw_broker_port(b), PORT);
	return b;
}

static uint32_t alloc_ok(struct swiw_broker *b)
{
	uint32_t q = 0;

	assert_int_equal(swiw_broker_qp_alloc(b, &q), 0);
	assert_in_range(q, SWIW_BROKER_QPN_MIN, SWIW_BROKER_QPN_MAX);
	return q;
}

static void expect_ok(struct swiw_broker *b, uint32_t q, const char *peer,
		      uint32_t peer_qpn, enum swiw_broker_role role)
{
	uint8_t g[16];

	assert_int_equal(bt_gid(peer, g), 0);
	assert_int_equal(swiw_broker_expect(b, q, g, peer_qpn, BT_PSN_I, role),
			 0);
}

/* --- playing the initiator -------------------------------------------------- */

/* Dials @peer from @bind and sends a Request @src -> @dst. */
static int send_req(const char *peer, const char *bind, uint32_t src,
		    uint32_t dst, struct bt_init *I)
{
	size_t len;
	int fd;

	assert_int_equal(bt_dial(peer, PORT, bind, 3000, &fd), 0);
	assert_int_equal(bt_request(I, src, dst, ++nonce_seq, NULL, 0, &len),
			 0);
	assert_int_equal(bt_send_all(fd, I->tx, len), 0);
	return fd;
}

/* The same with the block's PSN words given (0: not known). */
static int send_req_psn(uint32_t src, uint32_t dst, uint32_t sq_psn,
			uint32_t rq_psn, struct bt_init *I)
{
	size_t len;
	int fd;

	assert_int_equal(bt_dial(LO, PORT, LO, 3000, &fd), 0);
	assert_int_equal(bt_request_psn(I, src, dst, ++nonce_seq, sq_psn,
					rq_psn, &len),
			 0);
	assert_int_equal(bt_send_all(fd, I->tx, len), 0);
	return fd;
}

/* Reads the Reply and closes; BT_*. */
static int reply_of(struct bt_init *I, int fd, int ms,
		    struct swiw_broker_pd *rep)
{
	int r = bt_read_reply(I, fd, ms, rep);

	close(fd);
	return r;
}

/* A Request the broker must refuse for @reason, with the block echoed. */
static void expect_reject(const char *bind, uint32_t src, uint32_t dst,
			  unsigned int reason)
{
	struct swiw_broker_pd rep;
	struct bt_init I;
	int fd = send_req(LO, bind, src, dst, &I);

	assert_int_equal(reply_of(&I, fd, 3000, &rep), BT_REJECTED);
	assert_int_equal(rep.type, SWIW_BROKER_PD_REJECT);
	assert_int_equal(rep.reason, reason);
	assert_int_equal(rep.src_qpn, dst);
	assert_int_equal(rep.dst_qpn, src);
	assert_true(rep.nonce == I.nonce);
}

/*
 * The answer to a Request that does not prove its peer, whatever is wrong
 * with it: NOT_READY at the end of the hold, counted from @t0 (when it
 * was sent), so that neither reason nor timing says which QPs exist.
 */
static void refused_late(struct bt_init *I, int fd, uint64_t t0)
{
	struct swiw_broker_pd rep;
	uint64_t dt;

	assert_int_equal(reply_of(I, fd, HOLD_MS + 3000, &rep), BT_REJECTED);
	dt = now_ms() - t0;
	assert_int_equal(rep.type, SWIW_BROKER_PD_REJECT);
	assert_int_equal(rep.reason, SWIW_BROKER_R_NOT_READY);
	assert_true(rep.nonce == I->nonce);
	if (dt < HOLD_MS - 100 || dt > HOLD_MS + 2000)
		fail_msg("refused after %llu ms, not after the %u ms hold",
			 (unsigned long long)dt, HOLD_MS);
}

/* A stranger's Request, sent from @bind: refused late. */
static void expect_refused(const char *bind, uint32_t src, uint32_t dst)
{
	uint64_t t0 = now_ms();
	struct bt_init I;
	int fd = send_req(LO, bind, src, dst, &I);

	refused_late(&I, fd, t0);
}

/* Takes the one handed-over connection and accepts it as the engine would. */
static void take_and_accept(struct swiw_broker *b, uint32_t q,
			    uint32_t peer_qpn, const char *peer,
			    const struct bt_init *I)
{
	struct swiw_broker_conn c;
	uint8_t g[16];

	assert_true(bt_readable(swiw_broker_event_fd(b), 3000));
	assert_int_equal(swiw_broker_recv_conn(b, &c), 0);
	assert_int_equal(c.qpn, q);
	assert_int_equal(c.peer_qpn, peer_qpn);
	assert_true(c.nonce == I->nonce);
	/* The Request exactly as the initiator sent it, not a byte more. */
	assert_int_equal(c.req_len, swiw_mpa_outcome(&I->m)->tx_len);
	assert_memory_equal(c.req, I->tx, c.req_len);
	assert_int_equal(bt_gid(peer, g), 0);
	assert_memory_equal(&c.peer.sin6_addr, g, 16);
	assert_int_equal(swiw_broker_conn_verify(&c, g, peer_qpn,
						 BT_KNOWN(BT_PSN_I), 0),
			 0);
	assert_int_equal(bt_accept(&c), 0);
	close(c.fd);
	assert_int_equal(swiw_broker_recv_conn(b, &c), EAGAIN);
}

static void expect_accept(struct bt_init *I, int fd, uint32_t src, uint32_t dst)
{
	struct swiw_broker_pd rep;

	assert_int_equal(reply_of(I, fd, 3000, &rep), BT_ACCEPTED);
	assert_int_equal(rep.type, SWIW_BROKER_PD_ACCEPT);
	assert_int_equal(rep.src_qpn, dst);
	assert_int_equal(rep.dst_qpn, src);
	assert_true(rep.nonce == I->nonce);
}

/* --- QP numbers -------------------------------------------------------------- */

#define NPROC 8
#define NQP 100

struct alloc_report {
	uint32_t err;
	uint32_t broker_pid;
	uint32_t qpn[NQP];
};

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void test_qpn_unique_many(void **state)
{
	static uint32_t all[NPROC * NQP];
	struct alloc_report r;
	int res[2], go[2], i, j, st;
	pid_t kids[NPROC], broker = 0;
	char c;

	(void)state;
	assert_int_equal(pipe(res), 0);
	assert_int_equal(pipe(go), 0);
	/* All at once: they race to start the broker, too. */
	for (i = 0; i < NPROC; i++) {
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i])
			continue;
		struct swiw_broker *b = NULL;

		close(go[1]);
		memset(&r, 0, sizeof(r));
		r.err = (uint32_t)swiw_broker_open(NULL, &b);
		for (j = 0; !r.err && j < NQP; j++)
			r.err = (uint32_t)swiw_broker_qp_alloc(b, &r.qpn[j]);
		if (!r.err)
			r.broker_pid = (uint32_t)swiw_broker_pid(b);
		if (write(res[1], &r, sizeof(r)) != sizeof(r))
			_exit(2);
		/* Hold every QP until all have theirs. */
		if (read(go[0], &c, 1) < 0)
			_exit(3);
		swiw_broker_close(b);
		_exit(0);
	}
	close(go[0]);
	close(res[1]);
	for (i = 0; i < NPROC; i++) {
		assert_int_equal(read(res[0], &r, sizeof(r)), sizeof(r));
		assert_int_equal(r.err, 0);
		if (!broker)
			broker = (pid_t)r.broker_pid;
		assert_int_equal(r.broker_pid, broker); /* one broker */
		memcpy(&all[i * NQP], r.qpn, sizeof(r.qpn));
	}
	close(go[1]);
	for (i = 0; i < NPROC; i++) {
		assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
		assert_true(WIFEXITED(st) && !WEXITSTATUS(st));
	}
	close(res[0]);
	qsort(all, NPROC * NQP, sizeof(all[0]), cmp_u32);
	for (i = 0; i < NPROC * NQP; i++) {
		assert_in_range(all[i], SWIW_BROKER_QPN_MIN,
				SWIW_BROKER_QPN_MAX);
		if (i)
			assert_true(all[i] != all[i - 1]);
	}
}

static void test_qpn_not_reused(void **state)
{
	struct swiw_broker *b = open_ok();
	uint32_t seen[64], q;
	int i, k;

	(void)state;
	/* Free each at once: the next is still a new number. */
	for (i = 0; i < 64; i++) {
		q = alloc_ok(b);
		for (k = 0; k < i; k++)
			assert_true(seen[k] != q);
		seen[i] = q;
		assert_int_equal(swiw_broker_qp_free(b, q), 0);
		assert_int_equal(swiw_broker_qp_free(b, q), ENOENT);
	}
	swiw_broker_close(b);
}

/*
 * QP numbers are drawn at random: a program that was given some cannot
 * tell the next one another program gets (a sequential cursor gave
 * n + 1 each time). Still unique, never 0 or 1, within 24 bits.
 */
static void test_qpn_random(void **state)
{
	static uint32_t q[1000];
	struct swiw_broker *b = open_ok();
	unsigned int i, k, next = 0, low_half = 0;

	(void)state;
	for (i = 0; i < 1000; i++) {
		q[i] = alloc_ok(b);
		assert_true(q[i] >= 2 && q[i] <= 0xffffff);
		for (k = 0; k < i; k++)
			assert_true(q[k] != q[i]);
		if (i && q[i] == ((q[i - 1] + 1) & 0xffffff))
			next++;
		low_half += q[i] < 0x800000;
	}
	fprintf(stderr,
		"# 1000 QP numbers: %u followed the one before, %u in the low half\n",
		next, low_half);
	assert_true(next <= 2);
	assert_true(low_half > 400 && low_half < 600);
	swiw_broker_close(b);
}

static void test_control_errors(void **state)
{
	struct swiw_broker *b1 = open_ok(), *b2 = open_ok();
	uint32_t q = alloc_ok(b1);
	uint8_t g[16];

	(void)state;
	assert_int_equal(bt_gid(LO, g), 0);
	/* Another session's QP cannot be touched. */
	assert_int_equal(swiw_broker_qp_free(b2, q), EPERM);
	assert_int_equal(swiw_broker_expect(b2, q, g, 5, 0,
					    SWIW_BROKER_RESPONDER),
			 EPERM);
	assert_int_equal(swiw_broker_unexpect(b2, q), EPERM);
	assert_int_equal(swiw_broker_unexpect(b1, q ^ 0x800000), ENOENT);
	assert_int_equal(swiw_broker_expect(b1, q, g, 0x1000000, 0,
					    SWIW_BROKER_RESPONDER),
			 EINVAL);
	assert_int_equal(swiw_broker_expect(b1, q, g, 5, 0, 7), EINVAL);
	assert_int_equal(
		swiw_broker_expect(b1, q, g, 5, 0, SWIW_BROKER_RESPONDER), 0);
	/* A send PSN: only for one's own QP in RTR, 24 bits. */
	assert_int_equal(swiw_broker_sq_psn(b2, q, 5), EPERM);
	assert_int_equal(swiw_broker_sq_psn(b1, q, 0x1000000), EINVAL);
	assert_int_equal(swiw_broker_expect(b1, q, g, 5, 0x1000000,
					    SWIW_BROKER_RESPONDER),
			 EINVAL);
	assert_int_equal(swiw_broker_sq_psn(b1, q, 5), 0);
	assert_int_equal(swiw_broker_unexpect(b1, q), 0);
	assert_int_equal(swiw_broker_sq_psn(b1, q, 5), EINVAL);
	assert_int_equal(swiw_broker_pid(b1), swiw_broker_pid(b2));
	swiw_broker_close(b2);
	/* b2's end does not disturb b1. */
	assert_int_equal(swiw_broker_qp_free(b1, q), 0);
	swiw_broker_close(b1);
}

/* A raw local client: HELLO with another version, then garbage. */
static void test_local_protocol_abuse(void **state)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				    strlen(SWIW_BP_NAME));
	struct swiw_broker *b = open_ok();
	struct swiw_bp_hello h, rep;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctrl;
	struct iovec iov = { .iov_base = &h, .iov_len = sizeof(h) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctrl.buf,
			     .msg_controllen = sizeof(ctrl.buf) };
	struct cmsghdr *cm;
	int fd, sv[2];
	char junk[100];

	(void)state;
	memcpy(sun.sun_path + 1, SWIW_BP_NAME, strlen(SWIW_BP_NAME));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sun, len), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	memset(&h, 0, sizeof(h));
	h.hdr.type = SWIW_BP_HELLO;
	h.hdr.len = sizeof(h);
	h.hdr.seq = 1;
	h.version = 99;
	memset(&ctrl, 0, sizeof(ctrl));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &sv[1], sizeof(int));
	assert_int_equal(sendmsg(fd, &mh, 0), sizeof(h));
	assert_int_equal(recv(fd, &rep, sizeof(rep), 0), sizeof(rep));
	assert_int_equal(rep.hdr.status, EPROTONOSUPPORT);
	assert_int_equal(rep.version, SWIW_BP_VERSION);
	assert_int_equal(recv(fd, &rep, sizeof(rep), 0), 0); /* closed */
	close(fd);
	close(sv[0]);
	close(sv[1]);

	/* Requests before HELLO, short ones, nonsense: that client goes. */
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sun, len), 0);
	memset(junk, 0xa5, sizeof(junk));
	assert_int_equal(send(fd, junk, sizeof(junk), 0), sizeof(junk));
	assert_int_equal(recv(fd, junk, sizeof(junk), 0), 0);
	close(fd);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sun, len), 0);
	assert_int_equal(send(fd, junk, 3, 0), 3);
	assert_int_equal(recv(fd, junk, sizeof(junk), 0), 0);
	close(fd);

	/* The broker and its other clients carry on. */
	alloc_ok(b);
	swiw_broker_close(b);
}

/* --- the broker's life ---------------------------------------------------------- */

static bool gone(pid_t pid)
{
	return waitpid(pid, NULL, WNOHANG) == pid;
}

static void test_idle_exit(void **state)
{
	struct swiw_broker *b = open_ok();
	pid_t pid = swiw_broker_pid(b);
	uint64_t t0, end;

	(void)state;
	/* A client with no QP keeps it alive past its idle time (3 s). */
	sleep_ms(3500);
	assert_false(gone(pid));
	assert_true(broker_listening());
	swiw_broker_close(b);
	t0 = now_ms();
	assert_false(gone(pid));
	end = t0 + 6000;
	while (!gone(pid)) {
		assert_true(now_ms() < end);
		sleep_ms(20);
	}
	print_message("broker %d exited %llu ms after its last client\n",
		      (int)pid, (unsigned long long)(now_ms() - t0));
	assert_true(now_ms() - t0 >= 2500);
	assert_false(broker_listening());
	/* The next client starts a new one. */
	b = open_ok();
	assert_true(swiw_broker_pid(b) != pid);
	swiw_broker_close(b);
}

/* In a child as nobody: swiw_broker_open's errno and the broker's pid,
 * reported on @res; the session held until a byte comes on @hold (if
 * >= 0). */
static pid_t open_as_nobody(int res, int hold)
{
	pid_t pid = fork();
	struct swiw_broker *b = NULL;
	int r[2] = { 0, 0 };
	char c;

	if (pid)
		return pid;
	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		_exit(2);
	r[0] = swiw_broker_open(NULL, &b);
	if (!r[0])
		r[1] = (int)swiw_broker_pid(b);
	if (write(res, r, sizeof(r)) != sizeof(r))
		_exit(3);
	if (!r[0] && hold >= 0 && read(hold, &c, 1) < 0)
		_exit(4);
	swiw_broker_close(b);
	_exit(0);
}

/* The broker's name and port, bound and listening, as systemd's
 * swiw-broker.socket holds them. */
static void activation_sockets(int *unix_fd, int *tcp_fd)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				    strlen(SWIW_BP_NAME));
	struct sockaddr_in6 a = { .sin6_family = AF_INET6,
				  .sin6_port = htons(PORT),
				  .sin6_addr = IN6ADDR_ANY_INIT };
	int one = 1, zero = 0;

	memcpy(sun.sun_path + 1, SWIW_BP_NAME, strlen(SWIW_BP_NAME));
	*unix_fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	assert_true(*unix_fd >= 0);
	assert_int_equal(bind(*unix_fd, (struct sockaddr *)&sun, len), 0);
	assert_int_equal(listen(*unix_fd, 64), 0);
	*tcp_fd = socket(AF_INET6, SOCK_STREAM, 0);
	assert_true(*tcp_fd >= 0);
	setsockopt(*tcp_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(*tcp_fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	assert_int_equal(bind(*tcp_fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(*tcp_fd, 64), 0);
}

/* Starts the broker as systemd does on activity: the two sockets as
 * descriptors 3 and 4, LISTEN_PID and LISTEN_FDS naming them. */
static pid_t activate_broker(int unix_fd, int tcp_fd)
{
	pid_t pid = fork();
	char n[16];

	assert_true(pid >= 0);
	if (pid)
		return pid;
	if (dup2(unix_fd, 3) != 3 || dup2(tcp_fd, 4) != 4)
		_exit(126);
	snprintf(n, sizeof(n), "%d", (int)getpid());
	setenv("LISTEN_PID", n, 1);
	setenv("LISTEN_FDS", "2", 1);
	execl(broker_bin, broker_bin, "--idle-ms", "300", (char *)NULL);
	_exit(127);
}

/*
 * Threat model, the broker's name: under systemd's socket activation
 * (swiw-broker.socket) the name and the port are held while no broker
 * runs, so no other user can take them; the broker takes both from the
 * service manager, serves, exits when idle, and the next one started on
 * the same sockets serves the clients that came meanwhile.
 */
static void test_socket_activation(void **state)
{
	struct swiw_broker *b;
	struct bt_init I;
	uint32_t q, me;
	int ufd, tfd, fd, st, res[2], r[2];
	pid_t brk, kid;

	(void)state;
	activation_sockets(&ufd, &tfd);
	brk = activate_broker(ufd, tfd);
	b = open_ok();
	assert_int_equal(swiw_broker_pid(b), brk);
	assert_int_equal(swiw_broker_port(b), PORT);
	/* It serves connections on the inherited port. */
	q = alloc_ok(b);
	me = alloc_ok(b);
	expect_ok(b, q, LO, me, SWIW_BROKER_RESPONDER);
	fd = send_req(LO, LO, me, q, &I);
	take_and_accept(b, q, me, LO, &I);
	expect_accept(&I, fd, me, q);
	swiw_broker_close(b);
	/* Idle, it exits; the name stays taken (by the service manager). */
	assert_int_equal(exit_status(brk, 3000), 0);
	assert_int_equal(pipe(res), 0);
	kid = open_as_nobody(res[1], -1);
	/* nobody comes while no broker runs: its client waits in the
	 * held socket's queue and cannot start a broker of its own... */
	sleep_ms(200);
	brk = activate_broker(ufd, tfd); /* systemd: the socket is busy */
	assert_int_equal(read(res[0], r, sizeof(r)), sizeof(r));
	assert_int_equal(r[0], 0);
	/* ...it is served by root's. */
	assert_int_equal(r[1], brk);
	assert_int_equal(waitpid(kid, &st, 0), kid);
	b = open_ok();
	assert_int_equal(swiw_broker_pid(b), brk);
	swiw_broker_close(b);
	kill(brk, SIGTERM);
	assert_int_equal(waitpid(brk, &st, 0), brk);
	close(ufd);
	close(tfd);
	close(res[0]);
	close(res[1]);
}

/*
 * The broker's abstract name is anybody's to take. A broker another
 * user started (nobody here) is not trusted by root's programs: they
 * fail with EACCES and do not talk to it. nobody's other programs use
 * it; and once it is gone, root's broker serves nobody too.
 */
static void test_untrusted_broker(void **state)
{
	int res[2], hold[2], r[2], st;
	struct swiw_broker *b = NULL;
	pid_t p1, p2, theirs;
	uint64_t end;

	(void)state;
	assert_int_equal(pipe(res), 0);
	assert_int_equal(pipe(hold), 0);
	p1 = open_as_nobody(res[1], hold[0]);
	assert_int_equal(read(res[0], r, sizeof(r)), sizeof(r));
	assert_int_equal(r[0], 0);
	theirs = r[1];
	assert_int_equal(swiw_broker_open(NULL, &b), EACCES);
	p2 = open_as_nobody(res[1], -1);
	assert_int_equal(read(res[0], r, sizeof(r)), sizeof(r));
	assert_int_equal(r[0], 0);
	assert_int_equal(r[1], theirs);
	assert_int_equal(waitpid(p2, &st, 0), p2);
	/* nobody lets go: its broker exits (root knocking would keep it
	 * alive: wait for the process), and root starts its own. */
	assert_int_equal(write(hold[1], "x", 1), 1);
	assert_int_equal(waitpid(p1, &st, 0), p1);
	end = now_ms() + 8000;
	while (!gone(theirs)) {
		assert_true(now_ms() < end);
		sleep_ms(20);
	}
	assert_int_equal(swiw_broker_open(NULL, &b), 0);
	assert_true(swiw_broker_pid(b) != theirs);
	p2 = open_as_nobody(res[1], -1);
	assert_int_equal(read(res[0], r, sizeof(r)), sizeof(r));
	assert_int_equal(r[0], 0);
	assert_int_equal(r[1], swiw_broker_pid(b));
	assert_int_equal(waitpid(p2, &st, 0), p2);
	swiw_broker_close(b);
	close(res[0]);
	close(res[1]);
	close(hold[0]);
	close(hold[1]);
}

static void test_second_broker_loses(void **state)
{
	pid_t first = start_broker("--idle-ms", "0", NULL), second;
	struct swiw_broker *b;

	(void)state;
	second = start_broker(NULL);
	assert_int_equal(exit_status(second, 2000), 0); /* quietly, at once */
	assert_false(gone(first));
	b = open_ok();
	assert_int_equal(swiw_broker_pid(b), first);
	alloc_ok(b);
	swiw_broker_close(b);
	stop_broker(first);
	assert_false(broker_listening());
}

static void test_port_taken(void **state)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(PORT) };
	struct swiw_broker *b = NULL;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	(void)state;
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(fd, 1), 0);
	assert_int_equal(swiw_broker_open(NULL, &b), EADDRINUSE);
	assert_false(broker_listening());
	close(fd);
}

static void test_port_mismatch(void **state)
{
	struct swiw_broker_opts o = { .port = PORT + 1 };
	struct swiw_broker *b = open_ok(), *b2 = NULL;

	(void)state;
	assert_int_equal(swiw_broker_open(&o, &b2), EBUSY);
	swiw_broker_close(b);
}

static void test_missing_binary(void **state)
{
	struct swiw_broker_opts o = { .path = "/nonexistent/swiw-broker" };
	struct swiw_broker *b = NULL;

	(void)state;
	assert_int_equal(swiw_broker_open(&o, &b), ENOENT);
}

/* A broker that fails to start is reported at once, not started again. */
static void test_broken_binary(void **state)
{
	struct swiw_broker_opts o = { .path = "/bin/false" };
	struct swiw_broker *b = NULL;
	uint64_t t0 = now_ms();

	(void)state;
	assert_int_equal(swiw_broker_open(&o, &b), EIO);
	assert_true(now_ms() - t0 < 1000);
}

/*
 * A client killed at any time loses its QPs: a Request held for one is
 * refused at once, later ones find no QP, and the broker goes on.
 */
static void test_sigkill_drops(void **state)
{
	struct swiw_broker *b = open_ok();
	uint32_t me = alloc_ok(b), q[2];
	struct bt_init I;
	uint8_t g[16];
	uint64_t t0;
	int p[2], fd;
	pid_t kid;

	(void)state;
	assert_int_equal(bt_gid(LO, g), 0);
	assert_int_equal(pipe(p), 0);
	kid = fork();
	assert_true(kid >= 0);
	if (!kid) {
		struct swiw_broker *k = NULL;

		/* q[0] registered only, q[1] in RTR expecting us. */
		if (swiw_broker_open(NULL, &k) ||
		    swiw_broker_qp_alloc(k, &q[0]) ||
		    swiw_broker_qp_alloc(k, &q[1]) ||
		    swiw_broker_expect(k, q[1], g, me, BT_PSN_I,
				       SWIW_BROKER_RESPONDER) ||
		    write(p[1], q, sizeof(q)) != sizeof(q))
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	assert_int_equal(read(p[0], q, sizeof(q)), sizeof(q));
	close(p[0]);
	t0 = now_ms();
	fd = send_req(LO, LO, me, q[0], &I);
	assert_false(bt_readable(fd, 200)); /* held for its RTR */
	kill(kid, SIGKILL);
	assert_int_equal(waitpid(kid, NULL, 0), kid);
	/* Its QPs went with it: refused as any unknown number is. */
	refused_late(&I, fd, t0);
	expect_refused(LO, me, q[1]);
	expect_refused(LO, me, q[0]);
	alloc_ok(b);
	swiw_broker_close(b);
}

/*
 * Brokers that exit after 10 ms idle, clients that come and go: every
 * open meets a broker that is starting, serving or exiting, and must
 * still succeed.
 */
static void test_exit_race_stress(void **state)
{
	const int nkids = 4, rounds = 30;
	pid_t kids[4];
	int i, st;

	(void)state;
	setenv("SWIW_BROKER_IDLE_MS", "10", 1);
	for (i = 0; i < nkids; i++) {
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i])
			continue;
		srand((unsigned int)getpid());
		for (int r = 0; r < rounds; r++) {
			struct swiw_broker *b = NULL;
			uint32_t q;
			int err = swiw_broker_open(NULL, &b);

			if (!err)
				err = swiw_broker_qp_alloc(b, &q);
			if (err) {
				fprintf(stderr, "round %d: %s\n", r,
					strerror(err));
				_exit(1);
			}
			swiw_broker_close(b);
			sleep_ms((unsigned int)(rand() % 40));
		}
		_exit(0);
	}
	unsetenv("SWIW_BROKER_IDLE_MS");
	for (i = 0; i < nkids; i++) {
		assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
}

/*
 * An owner that does not read its event socket: hand-overs queue in the
 * broker, in order, and reach it once it reads; one whose QP is freed
 * meanwhile is refused instead.
 */
#define NQUEUE 1000
static void test_queued_hand_over(void **state)
{
	static uint32_t q[NQUEUE];
	static int fd[NQUEUE];
	static struct bt_init I[NQUEUE];
	static bool seen[NQUEUE];
	struct swiw_broker *b = open_ok(), *peer = open_ok();
	uint32_t me = alloc_ok(peer);
	struct swiw_broker_conn c;
	struct swiw_broker_pd rep;
	int i, got = 0, err;

	(void)state;
	for (i = 0; i < NQUEUE; i++) {
		q[i] = alloc_ok(b);
		expect_ok(b, q[i], LO, me, SWIW_BROKER_RESPONDER);
	}
	for (i = 0; i < NQUEUE; i++)
		fd[i] = send_req(LO, LO, me, q[i], &I[i]);
	/* Let the broker read them all; far more than the socket holds. */
	sleep_ms(300);
	assert_int_equal(swiw_broker_qp_free(b, q[NQUEUE - 1]), 0);
	assert_int_equal(reply_of(&I[NQUEUE - 1], fd[NQUEUE - 1], 2000, &rep),
			 BT_REJECTED);
	assert_int_equal(rep.reason, SWIW_BROKER_R_UNKNOWN_QPN);
	/* Now read: every other one arrives, each once. */
	while (got < NQUEUE - 1) {
		if (!bt_readable(swiw_broker_event_fd(b), 3000))
			break;
		err = swiw_broker_recv_conn(b, &c);
		if (err == EAGAIN)
			continue;
		assert_int_equal(err, 0);
		for (i = 0; i < NQUEUE - 1 && q[i] != c.qpn; i++)
			;
		assert_true(i < NQUEUE - 1);
		assert_false(seen[i]);
		seen[i] = true;
		assert_int_equal(c.req_len, swiw_mpa_outcome(&I[i].m)->tx_len);
		assert_memory_equal(c.req, I[i].tx, c.req_len);
		close(c.fd);
		got++;
	}
	assert_int_equal(got, NQUEUE - 1);
	assert_false(bt_readable(swiw_broker_event_fd(b), 100));
	for (i = 0; i < NQUEUE - 1; i++)
		close(fd[i]);
	swiw_broker_close(peer);
	swiw_broker_close(b);
}

/* --- hand-over and its refusals ---------------------------------------------------- */

struct kid_report {
	int got; /* connections handed to it */
	int ok; /* checks passed, accepted */
	uint32_t qpn;
};

/*
 * A responder process: allocates a QP, tells it, takes its peer's QPN
 * and the Request the parent will send, expects, then takes what comes
 * within @ms and checks it byte for byte.
 */
static pid_t responder_kid(int *to_kid, int *from_kid, int ms)
{
	int a[2], bp[2];
	pid_t pid;

	assert_int_equal(pipe(a), 0);
	assert_int_equal(pipe(bp), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid) {
		close(a[0]);
		close(bp[1]);
		*to_kid = a[1];
		*from_kid = bp[0];
		return pid;
	}
	close(a[1]);
	close(bp[0]);
	struct kid_report r = { 0 };
	struct swiw_broker *b = NULL;
	struct swiw_broker_conn c;
	struct bt_init I;
	uint32_t peer;
	uint8_t g[16];
	uint64_t end;

	if (swiw_broker_open(NULL, &b) || swiw_broker_qp_alloc(b, &r.qpn))
		_exit(1);
	if (write(bp[1], &r.qpn, sizeof(r.qpn)) != sizeof(r.qpn) ||
	    read(a[0], &peer, sizeof(peer)) != sizeof(peer) ||
	    read(a[0], &I, sizeof(I)) != sizeof(I))
		_exit(1);
	bt_gid(LO, g);
	if (swiw_broker_expect(b, r.qpn, g, peer, BT_PSN_I,
			       SWIW_BROKER_RESPONDER))
		_exit(1);
	if (write(bp[1], &r.qpn, sizeof(r.qpn)) != sizeof(r.qpn))
		_exit(1);
	end = now_ms() + (uint64_t)ms;
	while (now_ms() < end) {
		if (!bt_readable(swiw_broker_event_fd(b), 20))
			continue;
		if (swiw_broker_recv_conn(b, &c))
			continue;
		r.got++;
		r.ok = c.qpn == r.qpn && c.peer_qpn == peer &&
		       c.req_len == swiw_mpa_outcome(&I.m)->tx_len &&
		       !memcmp(c.req, I.tx, c.req_len) &&
		       !swiw_broker_conn_verify(&c, g, peer, BT_KNOWN(BT_PSN_I),
						0) &&
		       !bt_accept(&c);
		close(c.fd);
	}
	if (write(bp[1], &r, sizeof(r)) != sizeof(r))
		_exit(1);
	swiw_broker_close(b);
	_exit(0);
}

static void test_handover_right_process(void **state)
{
	struct swiw_broker *b = open_ok();
	uint32_t me = alloc_ok(b), qa, qb;
	struct kid_report ra, rb;
	int ta, fa, tb, fb, fd;
	pid_t ka, kb;
	struct bt_init I;
	size_t len;

	(void)state;
	ka = responder_kid(&ta, &fa, 1500);
	kb = responder_kid(&tb, &fb, 1500);
	assert_int_equal(read(fa, &qa, sizeof(qa)), sizeof(qa));
	assert_int_equal(read(fb, &qb, sizeof(qb)), sizeof(qb));
	assert_true(qa != qb && qa != me && qb != me);
	/* The Request for A, made now so both kids know its bytes. */
	assert_int_equal(bt_request(&I, me, qa, ++nonce_seq, NULL, 0, &len), 0);
	assert_int_equal(write(ta, &me, sizeof(me)), sizeof(me));
	assert_int_equal(write(ta, &I, sizeof(I)), sizeof(I));
	assert_int_equal(write(tb, &me, sizeof(me)), sizeof(me));
	assert_int_equal(write(tb, &I, sizeof(I)), sizeof(I));
	assert_int_equal(read(fa, &qa, sizeof(qa)), sizeof(qa)); /* in RTR */
	assert_int_equal(read(fb, &qb, sizeof(qb)), sizeof(qb));

	assert_int_equal(bt_dial(LO, PORT, LO, 3000, &fd), 0);
	assert_int_equal(bt_send_all(fd, I.tx, len), 0);
	expect_accept(&I, fd, me, qa);

	assert_int_equal(read(fa, &ra, sizeof(ra)), sizeof(ra));
	assert_int_equal(read(fb, &rb, sizeof(rb)), sizeof(rb));
	assert_int_equal(ra.got, 1);
	assert_int_equal(ra.ok, 1);
	assert_int_equal(rb.got, 0);
	assert_int_equal(exit_status(ka, 3000), 0);
	assert_int_equal(exit_status(kb, 3000), 0);
	close(ta);
	close(fa);
	close(tb);
	close(fb);
	swiw_broker_close(b);
}

/* Both QPs in one process, driven as the engine will: one epoll loop. */
static void test_both_in_one_process(void **state)
{
	struct swiw_broker *b = open_ok();
	uint32_t q1 = alloc_ok(b), q2 = alloc_ok(b), ini, res;
	struct sockaddr_storage peer, local;
	struct epoll_event e, evs[4];
	struct swiw_broker_dial d;
	struct swiw_broker_conn c;
	struct swiw_broker_pd rep;
	struct bt_init I;
	socklen_t pl, ll;
	uint8_t g[16];
	int ep, err, fd = -1, n, i;
	size_t len;
	bool accepted = false;

	(void)state;
	assert_int_equal(bt_gid(LO, g), 0);
	ini = swiw_broker_role(g, q1, g, q2) == SWIW_BROKER_INITIATOR ? q1 : q2;
	res = ini == q1 ? q2 : q1;
	assert_int_equal(swiw_broker_role(g, res, g, ini),
			 SWIW_BROKER_RESPONDER);
	expect_ok(b, ini, LO, res, SWIW_BROKER_INITIATOR);
	expect_ok(b, res, LO, ini, SWIW_BROKER_RESPONDER);

	assert_int_equal(swiw_broker_gid_sockaddr(g, PORT, 0, &peer, &pl), 0);
	assert_int_equal(swiw_broker_gid_sockaddr(g, 0, 0, &local, &ll), 0);
	assert_int_equal(swiw_broker_dial_start(&d, (struct sockaddr *)&peer,
						pl, (struct sockaddr *)&local,
						ll, 3000, now_ms()),
			 0);
	ep = epoll_create1(EPOLL_CLOEXEC);
	e.events = EPOLLIN;
	e.data.fd = swiw_broker_event_fd(b);
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, e.data.fd, &e), 0);
	err = swiw_broker_dial_step(&d, now_ms(), &fd);
	while (err == EINPROGRESS) {
		n = poll(&(struct pollfd){ .fd = swiw_broker_dial_fd(&d),
					   .events = POLLOUT },
			 1, 100);
		(void)n;
		err = swiw_broker_dial_step(&d, now_ms(), &fd);
	}
	assert_int_equal(err, 0);
	assert_int_equal(bt_request(&I, ini, res, ++nonce_seq, NULL, 0, &len),
			 0);
	assert_int_equal(bt_send_all(fd, I.tx, len), 0);
	e.events = EPOLLIN;
	e.data.fd = fd;
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e), 0);
	while (!accepted) {
		n = epoll_wait(ep, evs, 4, 3000);
		assert_true(n > 0);
		for (i = 0; i < n; i++) {
			if (evs[i].data.fd == swiw_broker_event_fd(b)) {
				assert_int_equal(swiw_broker_recv_conn(b, &c),
						 0);
				assert_int_equal(c.qpn, res);
				assert_int_equal(swiw_broker_conn_verify(
							 &c, g, ini,
							 BT_KNOWN(BT_PSN_I), 0),
						 0);
				assert_int_equal(bt_accept(&c), 0);
				close(c.fd);
			} else {
				assert_int_equal(bt_read_reply(&I, fd, 0, &rep),
						 BT_ACCEPTED);
				assert_int_equal(rep.src_qpn, res);
				assert_int_equal(rep.dst_qpn, ini);
				accepted = true;
			}
		}
	}
	close(fd);
	close(ep);
	/* The initiator's own QP takes no Request: roles cannot cross. */
	expect_reject(LO, res, ini, SWIW_BROKER_R_ROLE);
	swiw_broker_close(b);
}

static void test_handover_ipv6(void **state)
{
	struct swiw_broker *b = open_ok();
	uint32_t q = alloc_ok(b), me = alloc_ok(b);
	struct bt_init I;
	int fd;

	(void)state;
	expect_ok(b, q, "::1", me, SWIW_BROKER_RESPONDER);
	fd = send_req("::1", "::1", me, q, &I);
	take_and_accept(b, q, me, "::1", &I);
	expect_accept(&I, fd, me, q);
	swiw_broker_close(b);
}

static void test_reject_wrong_peer(void **state)
{
	struct swiw_broker *b = open_ok();
	uint32_t q = alloc_ok(b), me = alloc_ok(b);
	struct bt_init I;
	int fd;

	(void)state;
	expect_ok(b, q, LO, me, SWIW_BROKER_RESPONDER);
	/* From another address, the right QPNs: a host guessing numbers. */
	/* A stranger hears what an unknown QP number gets. */
	expect_refused("127.0.0.2", me, q);
	/* The right address, another source QP. */
	expect_refused(LO, me + 1, q);
	/* A QP nobody registered. */
	expect_refused(LO, me, q ^ 0x800000);
	/* None of them reached the owner... */
	assert_false(bt_readable(swiw_broker_event_fd(b), 100));
	/* ...and the QP still takes the right one, once. */
	fd = send_req(LO, LO, me, q, &I);
	take_and_accept(b, q, me, LO, &I);
	expect_accept(&I, fd, me, q);
	expect_reject(LO, me, q, SWIW_BROKER_R_CONNECTED);
	/* A QP reset and moved to RTR again takes a new one. */
	assert_int_equal(swiw_broker_unexpect(b, q), 0);
	expect_ok(b, q, LO, me, SWIW_BROKER_RESPONDER);
	fd = send_req(LO, LO, me, q, &I);
	take_and_accept(b, q, me, LO, &I);
	expect_accept(&I, fd, me, q);
	swiw_broker_close(b);
}

/*
 * Item 2 of the threat model: the right address and QP numbers are not
 * enough; the Request must carry a PSN the application gave the QP.
 */
static void test_reject_wrong_psn(void **state)
{
	struct swiw_broker *b = open_ok();
	uint32_t q = alloc_ok(b), q2 = alloc_ok(b), me = alloc_ok(b);
	struct swiw_broker_conn c;
	struct swiw_broker_pd rep;
	struct bt_init I;
	uint8_t g[16], first[SWIW_BROKER_PD_LEN];
	uint64_t t0;
	struct swiw_broker_pd old = { .type = SWIW_BROKER_PD_REQUEST,
				      .src_qpn = me,
				      .dst_qpn = q };
	size_t len;
	int fd;

	(void)state;
	assert_int_equal(bt_gid(LO, g), 0);
	expect_ok(b, q, LO, me, SWIW_BROKER_RESPONDER);
	/* Another send PSN than the QP's receive PSN: what a stranger
	 * hears. */
	t0 = now_ms();
	fd = send_req_psn(me, q, BT_KNOWN(BT_PSN_I + 1), BT_KNOWN(BT_PSN_R),
			  &I);
	refused_late(&I, fd, t0);
	/* The first revision's block, without PSNs: a version refused. */
	assert_int_equal(
		swiw_broker_pd_encode(&old, first, sizeof(first), &len), 0);
	first[7] = 28;
	assert_int_equal(bt_dial(LO, PORT, LO, 3000, &fd), 0);
	assert_int_equal(bt_request(&I, 0, 0, 0, first, 28, &len), 0);
	assert_int_equal(bt_send_all(fd, I.tx, len), 0);
	assert_int_equal(reply_of(&I, fd, 3000, &rep), BT_REJECTED);
	assert_int_equal(rep.reason, SWIW_BROKER_R_VERSION);
	assert_false(bt_readable(swiw_broker_event_fd(b), 100));

	/* An initiator not in RTS yet sends no send PSN: held until the
	 * QP's own send PSN can check its receive PSN. */
	fd = send_req_psn(me, q, 0, BT_KNOWN(BT_PSN_R), &I);
	assert_false(bt_readable(fd, 200));
	assert_false(bt_readable(swiw_broker_event_fd(b), 0));
	assert_int_equal(swiw_broker_sq_psn(b, q, BT_PSN_R), 0);
	assert_true(bt_readable(swiw_broker_event_fd(b), 3000));
	assert_int_equal(swiw_broker_recv_conn(b, &c), 0);
	assert_int_equal(c.qpn, q);
	/* The engine checks the same again, by its own PSNs. */
	assert_int_equal(swiw_broker_conn_verify(&c, g, me, BT_KNOWN(BT_PSN_I),
						 0),
			 EACCES);
	assert_int_equal(swiw_broker_conn_verify(&c, g, me, BT_KNOWN(BT_PSN_I),
						 BT_KNOWN(BT_PSN_R + 1)),
			 EACCES);
	assert_int_equal(swiw_broker_conn_verify(&c, g, me, BT_KNOWN(BT_PSN_I),
						 BT_KNOWN(BT_PSN_R)),
			 0);
	assert_int_equal(bt_accept(&c), 0);
	close(c.fd);
	expect_accept(&I, fd, me, q);

	/* The same held Request against another send PSN: not handed over
	 * when the QP has it, refused at the end of the hold. */
	expect_ok(b, q2, LO, me, SWIW_BROKER_RESPONDER);
	t0 = now_ms();
	fd = send_req_psn(me, q2, 0, BT_KNOWN(BT_PSN_R), &I);
	assert_false(bt_readable(fd, 200));
	assert_int_equal(swiw_broker_sq_psn(b, q2, BT_PSN_R ^ 1), 0);
	refused_late(&I, fd, t0);
	assert_false(bt_readable(swiw_broker_event_fd(b), 0));
	/* In RTS both pairs are checked: the right send PSN with a wrong
	 * receive PSN is refused too. */
	t0 = now_ms();
	fd = send_req_psn(me, q2, BT_KNOWN(BT_PSN_I), BT_KNOWN(BT_PSN_R), &I);
	refused_late(&I, fd, t0);
	fd = send_req_psn(me, q2, BT_KNOWN(BT_PSN_I), BT_KNOWN(BT_PSN_R ^ 1),
			  &I);
	assert_true(bt_readable(swiw_broker_event_fd(b), 3000));
	assert_int_equal(swiw_broker_recv_conn(b, &c), 0);
	assert_int_equal(c.qpn, q2);
	assert_int_equal(swiw_broker_conn_verify(&c, g, me, BT_KNOWN(BT_PSN_I),
						 BT_KNOWN(BT_PSN_R ^ 1)),
			 0);
	assert_int_equal(bt_accept(&c), 0);
	close(c.fd);
	expect_accept(&I, fd, me, q2);
	swiw_broker_close(b);
}

static void test_reject_bad_requests(void **state)
{
	static const uint8_t v2_block[SWIW_BROKER_PD_LEN] = {
		's', 'w', 'i', 'w', 2, 1, 0, 28,
	};
	struct swiw_broker *b = open_ok();
	uint32_t q = alloc_ok(b), me = alloc_ok(b);
	struct swiw_broker_pd rep;
	struct bt_init I;
	uint8_t raw[64];
	size_t len;
	int fd;

	(void)state;
	expect_ok(b, q, LO, me, SWIW_BROKER_RESPONDER);
	/* A plain MPA Request (rping's: no private data). */
	assert_int_equal(bt_dial(LO, PORT, LO, 3000, &fd), 0);
	assert_int_equal(bt_request(&I, 0, 0, 0, "", 0, &len), 0);
	assert_int_equal(bt_send_all(fd, I.tx, len), 0);
	assert_int_equal(reply_of(&I, fd, 3000, &rep), BT_REJECTED);
	assert_int_equal(rep.reason, SWIW_BROKER_R_BAD_PD);
	/* Someone else's private data. */
	assert_int_equal(bt_dial(LO, PORT, LO, 3000, &fd), 0);
	assert_int_equal(bt_request(&I, 0, 0, 0, "hello, world", 12, &len), 0);
	assert_int_equal(bt_send_all(fd, I.tx, len), 0);
	assert_int_equal(reply_of(&I, fd, 3000, &rep), BT_REJECTED);
	assert_int_equal(rep.reason, SWIW_BROKER_R_BAD_PD);
	/* A block of a version this broker does not speak. */
	assert_int_equal(bt_dial(LO, PORT, LO, 3000, &fd), 0);
	assert_int_equal(
		bt_request(&I, 0, 0, 0, v2_block, sizeof(v2_block), &len), 0);
	assert_int_equal(bt_send_all(fd, I.tx, len), 0);
	assert_int_equal(reply_of(&I, fd, 3000, &rep), BT_REJECTED);
	assert_int_equal(rep.reason, SWIW_BROKER_R_VERSION);
	/* MPA revision 3: refused by the MPA layer at the header. */
	assert_int_equal(bt_dial(LO, PORT, LO, 3000, &fd), 0);
	assert_int_equal(bt_request(&I, me, q, 1, NULL, 0, &len), 0);
	memcpy(raw, I.tx, 20);
	raw[17] = 3;
	assert_int_equal(bt_send_all(fd, raw, 20), 0);
	assert_int_equal(reply_of(&I, fd, 3000, &rep), BT_REJECTED);
	assert_int_equal(rep.type, 0); /* an MPA reject: no swiw block */
	/* Garbage instead of a Request: closed without a word. */
	assert_int_equal(bt_dial(LO, PORT, LO, 3000, &fd), 0);
	memcpy(raw, "GET / HTTP/1.1\r\nHost: swiw\r\n\r\n", 30);
	assert_int_equal(bt_send_all(fd, raw, 30), 0);
	assert_int_equal(reply_of(&I, fd, 2000, &rep), BT_CLOSED);
	/* A header announcing more private data than MPA allows. */
	assert_int_equal(bt_dial(LO, PORT, LO, 3000, &fd), 0);
	assert_int_equal(bt_request(&I, me, q, 1, NULL, 0, &len), 0);
	memcpy(raw, I.tx, 20);
	raw[18] = 0x02; /* 512 + */
	assert_int_equal(bt_send_all(fd, raw, 20), 0);
	assert_int_equal(reply_of(&I, fd, 2000, &rep), BT_CLOSED);
	/* Nothing of it reached the QP, which is still waiting. */
	assert_false(bt_readable(swiw_broker_event_fd(b), 100));
	fd = send_req(LO, LO, me, q, &I);
	take_and_accept(b, q, me, LO, &I);
	expect_accept(&I, fd, me, q);
	swiw_broker_close(b);
}

static void test_early_held_then_matched(void **state)
{
	struct swiw_broker *b = open_ok();
	uint32_t q = alloc_ok(b), me = alloc_ok(b);
	struct bt_init I;
	int fd;

	(void)state;
	/* The peer is faster than this QP's RTR. */
	fd = send_req(LO, LO, me, q, &I);
	assert_false(bt_readable(fd, 300)); /* held: no answer */
	assert_false(bt_readable(swiw_broker_event_fd(b), 0));
	expect_ok(b, q, LO, me, SWIW_BROKER_RESPONDER);
	take_and_accept(b, q, me, LO, &I);
	expect_accept(&I, fd, me, q);
	swiw_broker_close(b);
}

static void test_early_held_mismatch(void **state)
{
	struct swiw_broker *b = open_ok();
	uint32_t q = alloc_ok(b), me = alloc_ok(b);
	struct bt_init I1, I2;
	uint64_t t0;
	int f1, f2;

	(void)state;
	t0 = now_ms();
	f1 = send_req(LO, "127.0.0.3", me, q, &I1);
	f2 = send_req(LO, LO, me, q, &I2);
	assert_false(bt_readable(f1, 200));
	/* RTR: the one from the right address is handed over, the other
	 * waits out its hold. */
	expect_ok(b, q, LO, me, SWIW_BROKER_RESPONDER);
	take_and_accept(b, q, me, LO, &I2);
	expect_accept(&I2, f2, me, q);
	refused_late(&I1, f1, t0);
	swiw_broker_close(b);
}

static void test_held_then_freed(void **state)
{
	struct swiw_broker *b = open_ok();
	uint32_t q = alloc_ok(b), me = alloc_ok(b);
	struct bt_init I;
	uint64_t t0;
	int fd;

	(void)state;
	t0 = now_ms();
	fd = send_req(LO, LO, me, q, &I);
	assert_false(bt_readable(fd, 200));
	assert_int_equal(swiw_broker_qp_free(b, q), 0);
	/* Gone before its RTR: as if it never was. */
	refused_late(&I, fd, t0);
	swiw_broker_close(b);
}

static void test_early_held_timeout(void **state)
{
	pid_t brk = start_broker("--idle-ms", "0", "--hold-ms", "300", NULL);
	struct swiw_broker *b = open_ok();
	uint32_t q = alloc_ok(b), me = alloc_ok(b);
	struct swiw_broker_pd rep;
	struct bt_init I;
	uint64_t t0 = now_ms(), dt;
	int fd;

	(void)state;
	fd = send_req(LO, LO, me, q, &I);
	assert_int_equal(reply_of(&I, fd, 3000, &rep), BT_REJECTED);
	dt = now_ms() - t0;
	assert_int_equal(rep.reason, SWIW_BROKER_R_NOT_READY);
	assert_true(swiw_broker_reason_retryable(rep.reason));
	assert_in_range(dt, 250, 1500);
	assert_false(bt_readable(swiw_broker_event_fd(b), 50));
	/* RTR after all: a new attempt gets through. */
	expect_ok(b, q, LO, me, SWIW_BROKER_RESPONDER);
	fd = send_req(LO, LO, me, q, &I);
	take_and_accept(b, q, me, LO, &I);
	expect_accept(&I, fd, me, q);
	swiw_broker_close(b);
	stop_broker(brk);
}

/* True once the broker closed @fd (EOF or reset). */
static bool closed_by_peer(int fd, int ms)
{
	char c;

	if (!bt_readable(fd, ms))
		return false;
	return recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

static void test_slowloris(void **state)
{
	pid_t brk = start_broker("--idle-ms", "0", "--request-ms", "400", NULL);
	struct swiw_broker *b = open_ok();
	uint32_t q = alloc_ok(b), me = alloc_ok(b);
	struct bt_init I;
	uint64_t t0;
	size_t len, sent;
	int stall, trickle, silent;

	(void)state;
	expect_ok(b, q, LO, me, SWIW_BROKER_RESPONDER);
	assert_int_equal(bt_request(&I, me, q, ++nonce_seq, NULL, 0, &len), 0);
	assert_int_equal(bt_dial(LO, PORT, LO, 3000, &stall), 0);
	assert_int_equal(bt_dial(LO, PORT, LO, 3000, &trickle), 0);
	assert_int_equal(bt_dial(LO, PORT, LO, 3000, &silent), 0);
	t0 = now_ms();
	/* Half a header, then nothing. */
	assert_int_equal(bt_send_all(stall, I.tx, 10), 0);
	/* The whole Request, one octet every 50 ms: 2.6 s, if allowed. */
	for (sent = 0; sent < len; sent++) {
		if (send(trickle, I.tx + sent, 1, MSG_NOSIGNAL) != 1)
			break;
		if (closed_by_peer(trickle, 50))
			break;
	}
	assert_true(sent < len);
	assert_in_range(now_ms() - t0, 350, 1500);
	assert_true(closed_by_peer(stall, 1000));
	assert_true(closed_by_peer(silent, 1000));
	assert_in_range(now_ms() - t0, 350, 1500);
	assert_false(bt_readable(swiw_broker_event_fd(b), 50));
	close(stall);
	close(trickle);
	close(silent);
	swiw_broker_close(b);
	stop_broker(brk);
}

/*
 * Threat model, item 6: connections that never finish their Request,
 * from the peer's own address or from others, cannot keep the peer out.
 * At a limit the oldest connection not yet matched makes room (of the
 * address at its share, else of all), instead of the newcomer being
 * refused.
 */
static void test_flood_no_lockout(void **state)
{
	pid_t brk = start_broker("--idle-ms", "0", "--max-pending", "8",
				 "--max-per-peer", "4", NULL);
	static const char *const other[] = { "127.0.0.2", "127.0.0.3" };
	struct swiw_broker *b = open_ok();
	uint32_t q = alloc_ok(b), me = alloc_ok(b);
	struct bt_init I;
	int fl[10], i, fd;

	(void)state;
	expect_ok(b, q, LO, me, SWIW_BROKER_RESPONDER);
	/* Silent ones: four from the peer's address (its share), four
	 * from others (the broker is full). */
	for (i = 0; i < 8; i++) {
		assert_int_equal(bt_dial(LO, PORT, i < 4 ? LO : other[i & 1],
					 3000, &fl[i]),
				 0);
		sleep_ms(5); /* in this order */
	}
	sleep_ms(100);
	/* The real peer gets through; its address's oldest silent one
	 * made room. */
	fd = send_req(LO, LO, me, q, &I);
	take_and_accept(b, q, me, LO, &I);
	expect_accept(&I, fd, me, q);
	assert_true(closed_by_peer(fl[0], 1000));
	for (i = 1; i < 8; i++)
		assert_false(closed_by_peer(fl[i], 0));
	/* A full broker and a new address: the oldest of all goes. */
	assert_int_equal(bt_dial(LO, PORT, "127.0.0.4", 3000, &fl[8]), 0);
	assert_false(closed_by_peer(fl[8], 200));
	assert_int_equal(bt_dial(LO, PORT, "127.0.0.5", 3000, &fl[9]), 0);
	assert_true(closed_by_peer(fl[1], 1000));
	assert_false(closed_by_peer(fl[9], 200));
	for (i = 2; i < 9; i++)
		assert_false(closed_by_peer(fl[i], 0));
	for (i = 0; i < 10; i++)
		close(fl[i]);
	swiw_broker_close(b);
	stop_broker(brk);
}

/* As nobody: opens sessions and takes QP numbers; reports the results. */
struct user_report {
	int open[3]; /* three sessions */
	int alloc[4]; /* four QP numbers over the first two */
};

static void user_child(int res)
{
	struct swiw_broker *s[3] = { NULL, NULL, NULL };
	struct user_report r;
	uint32_t q;
	int i;

	memset(&r, 0, sizeof(r));
	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		_exit(2);
	for (i = 0; i < 3; i++)
		r.open[i] = swiw_broker_open(NULL, &s[i]);
	for (i = 0; i < 4; i++)
		r.alloc[i] = s[i & 1] ? swiw_broker_qp_alloc(s[i & 1], &q) :
					EBADF;
	if (write(res, &r, sizeof(r)) != sizeof(r))
		_exit(3);
	_exit(0);
}

/*
 * Threat model, item 6: one local user cannot take every client slot or
 * QP number of the broker: each uid but root has a share.
 */
static void test_user_limits(void **state)
{
	pid_t brk = start_broker("--idle-ms", "0", "--max-user-clients", "2",
				 "--max-user-qps", "3", NULL);
	struct swiw_broker *b = open_ok();
	struct user_report r;
	int res[2], i, st;
	pid_t kid;

	(void)state;
	assert_int_equal(pipe(res), 0);
	kid = fork();
	assert_true(kid >= 0);
	if (!kid)
		user_child(res[1]);
	assert_int_equal(read(res[0], &r, sizeof(r)), sizeof(r));
	assert_int_equal(waitpid(kid, &st, 0), kid);
	close(res[0]);
	close(res[1]);
	assert_int_equal(r.open[0], 0);
	assert_int_equal(r.open[1], 0);
	assert_int_not_equal(r.open[2], 0); /* a third client of nobody */
	for (i = 0; i < 3; i++)
		assert_int_equal(r.alloc[i], 0);
	assert_int_equal(r.alloc[3], ENOSPC); /* a fourth QP of nobody */
	/* Root is not counted: more clients and QPs than the share. */
	for (i = 0; i < 5; i++)
		alloc_ok(b);
	swiw_broker_close(b);
	b = open_ok();
	swiw_broker_close(b);
	stop_broker(brk);
}

/* --- connecting out ------------------------------------------------------------------- */

static void test_dial_retry_until_broker(void **state)
{
	struct sockaddr_storage peer;
	struct swiw_broker_dial d;
	uint8_t g[16];
	socklen_t pl;
	uint64_t t0;
	int err, fd = -1;
	pid_t kid;

	(void)state;
	assert_false(broker_listening());
	/* The peer's program starts 700 ms after we begin to connect. */
	kid = fork();
	assert_true(kid >= 0);
	if (!kid) {
		struct swiw_broker *b = NULL;

		sleep_ms(700);
		if (swiw_broker_open(NULL, &b))
			_exit(1);
		sleep_ms(1500);
		swiw_broker_close(b);
		_exit(0);
	}
	assert_int_equal(bt_gid(LO, g), 0);
	assert_int_equal(swiw_broker_gid_sockaddr(g, PORT, 0, &peer, &pl), 0);
	t0 = now_ms();
	assert_int_equal(swiw_broker_dial_start(&d, (struct sockaddr *)&peer,
						pl, NULL, 0, 5000, t0),
			 0);
	do {
		uint64_t due = swiw_broker_dial_due(&d), now = now_ms();

		poll(&(struct pollfd){ .fd = swiw_broker_dial_fd(&d),
				       .events = POLLOUT },
		     1, due > now ? (int)(due - now) : 0);
		err = swiw_broker_dial_step(&d, now_ms(), &fd);
	} while (err == EINPROGRESS);
	assert_int_equal(err, 0);
	assert_true(now_ms() - t0 >= 600);
	assert_true(d.attempts > 2);
	assert_int_equal(d.last_err, ECONNREFUSED);
	print_message("connected after %u attempts, %llu ms\n", d.attempts,
		      (unsigned long long)(now_ms() - t0));
	close(fd);
	assert_int_equal(exit_status(kid, 5000), 0);
}

static void test_dial_timeout(void **state)
{
	struct sockaddr_storage peer;
	struct swiw_broker_dial d;
	uint8_t g[16];
	socklen_t pl;
	uint64_t t0 = now_ms();
	int err, fd = -1;

	(void)state;
	assert_int_equal(bt_gid(LO, g), 0);
	assert_int_equal(swiw_broker_gid_sockaddr(g, PORT, 0, &peer, &pl), 0);
	assert_int_equal(swiw_broker_dial_start(&d, (struct sockaddr *)&peer,
						pl, NULL, 0, 400, t0),
			 0);
	do {
		uint64_t due = swiw_broker_dial_due(&d), now = now_ms();

		poll(&(struct pollfd){ .fd = swiw_broker_dial_fd(&d),
				       .events = POLLOUT },
		     1, due > now ? (int)(due - now) : 0);
		err = swiw_broker_dial_step(&d, now_ms(), &fd);
	} while (err == EINPROGRESS);
	assert_int_equal(err, ETIMEDOUT);
	assert_int_equal(d.last_err, ECONNREFUSED);
	assert_true(d.attempts >= 3);
	assert_in_range(now_ms() - t0, 400, 1200);
	assert_int_equal(swiw_broker_dial_fd(&d), -1);

	/* A local address that is not ours fails at once, not after 5 s. */
	assert_int_equal(bt_dial(LO, PORT, "192.0.2.1", 5000, &fd),
			 EADDRNOTAVAIL);
	/* And the blocking form gives up in time as well. */
	t0 = now_ms();
	assert_int_equal(bt_dial(LO, PORT, NULL, 300, &fd), ETIMEDOUT);
	assert_in_range(now_ms() - t0, 300, 1200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_qpn_unique_many, new_netns),
		cmocka_unit_test_setup(test_qpn_not_reused, new_netns),
		cmocka_unit_test_setup(test_qpn_random, new_netns),
		cmocka_unit_test_setup(test_control_errors, new_netns),
		cmocka_unit_test_setup(test_local_protocol_abuse, new_netns),
		cmocka_unit_test_setup(test_second_broker_loses, new_netns),
		cmocka_unit_test_setup(test_port_taken, new_netns),
		cmocka_unit_test_setup(test_port_mismatch, new_netns),
		cmocka_unit_test_setup(test_missing_binary, new_netns),
		cmocka_unit_test_setup(test_broken_binary, new_netns),
		cmocka_unit_test_setup(test_sigkill_drops, new_netns),
		cmocka_unit_test_setup(test_exit_race_stress, new_netns),
		cmocka_unit_test_setup(test_queued_hand_over, new_netns),
		cmocka_unit_test_setup(test_handover_right_process, new_netns),
		cmocka_unit_test_setup(test_both_in_one_process, new_netns),
		cmocka_unit_test_setup(test_handover_ipv6, new_netns),
		cmocka_unit_test_setup(test_reject_wrong_peer, new_netns),
		cmocka_unit_test_setup(test_reject_wrong_psn, new_netns),
		cmocka_unit_test_setup(test_reject_bad_requests, new_netns),
		cmocka_unit_test_setup(test_early_held_then_matched, new_netns),
		cmocka_unit_test_setup(test_early_held_mismatch, new_netns),
		cmocka_unit_test_setup(test_held_then_freed, new_netns),
		cmocka_unit_test_setup(test_early_held_timeout, new_netns),
		cmocka_unit_test_setup(test_slowloris, new_netns),
		cmocka_unit_test_setup(test_flood_no_lockout, new_netns),
		cmocka_unit_test_setup(test_user_limits, new_netns),
		cmocka_unit_test_setup(test_dial_retry_until_broker, new_netns),
		cmocka_unit_test_setup(test_dial_timeout, new_netns),
		cmocka_unit_test_setup(test_idle_exit, new_netns),
		cmocka_unit_test_setup(test_untrusted_broker, new_netns),
		cmocka_unit_test_setup(test_socket_activation, new_netns),
	};

	if (geteuid()) {
		fprintf(stderr,
			"FAIL: broker.live must run as root (a network namespace per test); refusing to skip\n");
		return 1;
	}
	broker_bin = getenv("SWIW_BROKER");
	if (!broker_bin || access(broker_bin, X_OK)) {
		fprintf(stderr,
			"FAIL: SWIW_BROKER must name the swiw-broker executable\n");
		return 1;
	}
	/* The brokers these tests start hold Requests for HOLD_MS. */
	setenv("SWIW_BROKER_HOLD_MS", "1000", 1);
	if (getenv("SWIW_TEST_FILTER"))
		cmocka_set_test_filter(getenv("SWIW_TEST_FILTER"));
	/* A thousand connections at once in test_queued_hand_over. */
	{
		struct rlimit r;

		if (!getrlimit(RLIMIT_NOFILE, &r) && r.rlim_cur < r.rlim_max) {
			r.rlim_cur = r.rlim_max;
			setrlimit(RLIMIT_NOFILE, &r);
		}
	}
	/* Daemons the library starts become our children: we see them exit. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
