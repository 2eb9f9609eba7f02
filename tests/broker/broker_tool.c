// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * swiw_broker_tool: the engine's side of connection setup, as a program
 * the shell tests run in network namespaces.
 *
 *   pair --local ADDR --peer ADDR --out FILE --in FILE [--rtr-delay-ms N]
 *	Like one side of ibv_rc_pingpong: takes a QP number, writes it to
 *	FILE --out, reads the peer's from --in (written by the other side),
 *	moves to "RTR" (after --rtr-delay-ms), then connects or waits for
 *	the connection as its role says. Prints "role=...", then
 *	"connected qpn=Q peer_qpn=P peer=ADDR".
 *   request --peer ADDR --src N --dst N [--bind ADDR] [--sq-psn N]
 *	   [--first-block]
 *	One MPA Request with swiw's block (send PSN N instead of the pair's,
 *	or the first revision's block, without PSNs); prints the outcome.
 *   dial --peer ADDR [--bind ADDR]
 *	Connects to the peer's broker port, retrying; prints the attempts.
 *
 * The port is broker_port (SWIW_BROKER_PORT), as the engine's.
 *
 * Common: --timeout-ms N (default 10000). Exit status: 0 connected or
 * accepted, 2 usage or set-up error, 3 rejected, 4 timed out, 5 closed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "broker_test.h"
#include "swiw_config.h"

static const char *o_local, *o_peer, *o_bind, *o_out, *o_in;
static unsigned int o_timeout = 10000, o_rtr_delay;
static unsigned long o_src, o_dst;
static long o_sq_psn = -1;
static bool o_first_block;
static uint64_t deadline;

static int die(const char *what, int err)
{
	fprintf(stderr, "swiw_broker_tool: %s: %s\n", what, strerror(err));
	return 2;
}

static unsigned int left_ms(void)
{
	uint64_t now = swiw_broker_now_ms();

	return now < deadline ? (unsigned int)(deadline - now) : 0;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static int addr_of(const char *a, uint16_t port, struct sockaddr_storage *ss,
		   socklen_t *len)
{
	uint8_t g[16];
	int err = bt_gid(a, g);

	return err ? err : swiw_broker_gid_sockaddr(g, port, 0, ss, len);
}

/* Drives a dial to completion; 0 with *fd, or an errno. */
static int dial_run(struct swiw_broker_dial *d, int *fd)
{
	uint64_t due, now;
	int err;

	for (;;) {
		err = swiw_broker_dial_step(d, swiw_broker_now_ms(), fd);
		if (err != EINPROGRESS)
			return err;
		due = swiw_broker_dial_due(d);
		now = swiw_broker_now_ms();
		poll(&(struct pollfd){ .fd = swiw_broker_dial_fd(d),
				       .events = POLLOUT },
		     1, due > now ? (int)(due - now) : 0);
	}
}

static int outcome_exit(int r)
{
	static const int code[] = { 0, 3, 5, 4, 3 };

	return code[r];
}

/* The initiator: connect, Request, Reply; again after NOT_READY. */
static int initiate(uint32_t qpn, uint32_t peer_qpn, uint16_t port)
{
	struct sockaddr_storage p, l;
	struct swiw_broker_dial d;
	struct swiw_broker_pd rep;
	struct bt_init I;
	socklen_t pl, ll = 0;
	size_t len;
	int err, fd, r;

	if (addr_of(o_peer, port, &p, &pl) ||
	    addr_of(o_bind ? o_bind : o_local, 0, &l, &ll))
		return die("address", EINVAL);
	swiw_broker_dial_start(&d, (struct sockaddr *)&p, pl,
			       (struct sockaddr *)&l, ll, left_ms(),
			       swiw_broker_now_ms());
	for (;;) {
		err = dial_run(&d, &fd);
		if (err) {
			printf("dial failed: %s after %u attempts\n",
			       strerror(err), d.attempts);
			return err == ETIMEDOUT ? 4 : 2;
		}
		bt_request(&I, qpn, peer_qpn, swiw_broker_now_ms(), NULL, 0,
			   &len);
		if (bt_send_all(fd, I.tx, len)) {
			close(fd);
			r = BT_CLOSED;
		} else {
			r = bt_read_reply(&I, fd, (int)left_ms(), &rep);
			close(fd);
		}
		if (r == BT_ACCEPTED) {
			if (rep.type != SWIW_BROKER_PD_ACCEPT ||
			    rep.src_qpn != peer_qpn || rep.dst_qpn != qpn ||
			    rep.nonce != I.nonce) {
				printf("bad accept block\n");
				return 3;
			}
			printf("connected qpn=%u peer_qpn=%u peer=%s attempts=%u\n",
			       qpn, peer_qpn, o_peer, d.attempts);
			return 0;
		}
		if (r == BT_REJECTED &&
		    !swiw_broker_reason_retryable(rep.reason)) {
			printf("rejected reason=%u (%s)\n", rep.reason,
			       swiw_broker_reason_str(rep.reason));
			return 3;
		}
		printf("%s%s: trying again\n", bt_outcome_str(r),
		       r == BT_REJECTED ? " (not ready)" : "");
		err = swiw_broker_dial_retry(
			&d, r == BT_REJECTED ? EAGAIN : ECONNRESET,
			swiw_broker_now_ms());
		if (err != EINPROGRESS)
			return 4;
	}
}

static int respond(struct swiw_broker *b, uint32_t qpn, uint32_t peer_qpn,
		   const uint8_t peer_gid[16])
{
	struct swiw_broker_conn c;
	char a[64];
	int err;

	for (;;) {
		if (!bt_readable(swiw_broker_event_fd(b), (int)left_ms())) {
			printf("timeout waiting for the connection\n");
			return 4;
		}
		err = swiw_broker_recv_conn(b, &c);
		if (err == EAGAIN)
			continue;
		if (err)
			return die("recv_conn", err);
		break;
	}
	if (c.qpn != qpn || swiw_broker_conn_verify(&c, peer_gid, peer_qpn,
						    BT_KNOWN(BT_PSN_I), 0)) {
		printf("handed a wrong connection\n");
		return 3;
	}
	err = bt_accept(&c);
	if (err)
		return die("accept", err);
	if (swiw_broker_gid_is_v4((uint8_t *)&c.peer.sin6_addr))
		inet_ntop(AF_INET, (uint8_t *)&c.peer.sin6_addr + 12, a,
			  sizeof(a));
	else
		inet_ntop(AF_INET6, &c.peer.sin6_addr, a, sizeof(a));
	printf("connected qpn=%u peer_qpn=%u peer=%s req_len=%u\n", qpn,
	       peer_qpn, a, c.req_len);
	/* Let the Reply go before the socket closes. */
	shutdown(c.fd, SHUT_WR);
	bt_readable(c.fd, 1000);
	close(c.fd);
	return 0;
}

static int write_qpn(const char *path, uint32_t q)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%u\n", q) < 0 || fclose(f))
		return errno;
	return rename(tmp, path) ? errno : 0;
}

static int read_qpn(const char *path, uint32_t *q)
{
	FILE *f;
	int n;

	while (left_ms()) {
		f = fopen(path, "r");
		if (f) {
			n = fscanf(f, "%u", q);
			fclose(f);
			if (n == 1)
				return 0;
		}
		sleep_ms(10);
	}
	return ETIMEDOUT;
}

static int pair(void)
{
	struct swiw_broker *b = NULL;
	uint8_t lg[16], pg[16];
	uint32_t q, pq;
	enum swiw_broker_role role;
	int err, rc;

	if (!o_local || !o_peer || !o_out || !o_in || bt_gid(o_local, lg) ||
	    bt_gid(o_peer, pg))
		return die("pair needs --local --peer --out --in", EINVAL);
	err = swiw_broker_open(NULL, &b);
	if (err)
		return die("swiw_broker_open", err);
	err = swiw_broker_qp_alloc(b, &q);
	if (err)
		return die("qp_alloc", err);
	printf("qpn=%u broker_pid=%d\n", q, (int)swiw_broker_pid(b));
	fflush(stdout);
	err = write_qpn(o_out, q);
	if (!err)
		err = read_qpn(o_in, &pq);
	if (err)
		return die("exchanging QP numbers", err);
	sleep_ms(o_rtr_delay);
	role = swiw_broker_role(lg, q, pg, pq);
	err = swiw_broker_expect(b, q, pg, pq, BT_PSN_I, role);
	if (err)
		return die("expect", err);
	printf("role=%s\n",
	       role == SWIW_BROKER_INITIATOR ? "initiator" : "responder");
	fflush(stdout);
	if (role == SWIW_BROKER_INITIATOR)
		rc = initiate(q, pq, swiw_broker_port(b));
	else
		rc = respond(b, q, pq, pg);
	swiw_broker_close(b);
	return rc;
}

static int request(void)
{
	struct swiw_broker_pd rep;
	struct bt_init I;
	size_t len;
	int fd, err, r;

	if (!o_peer)
		return die("request needs --peer", EINVAL);
	err = bt_dial(o_peer, (uint16_t)swiw_config()->broker_port, o_bind,
		      left_ms(), &fd);
	if (err)
		return die("dial", err);
	if (o_first_block) {
		struct swiw_broker_pd pd = { .type = SWIW_BROKER_PD_REQUEST,
					     .src_qpn = (uint32_t)o_src,
					     .dst_qpn = (uint32_t)o_dst,
					     .nonce = 1 };
		uint8_t b[SWIW_BROKER_PD_LEN];

		swiw_broker_pd_encode(&pd, b, sizeof(b), &len);
		b[7] = 28; /* length: the block as it first was */
		bt_request(&I, 0, 0, 1, b, 28, &len);
	} else if (o_sq_psn >= 0) {
		bt_request_psn(&I, (uint32_t)o_src, (uint32_t)o_dst, 1,
			       BT_KNOWN((uint32_t)o_sq_psn & 0xffffff),
			       BT_KNOWN(BT_PSN_R), &len);
	} else {
		bt_request(&I, (uint32_t)o_src, (uint32_t)o_dst, 1, NULL, 0,
			   &len);
	}
	bt_send_all(fd, I.tx, len);
	r = bt_read_reply(&I, fd, (int)left_ms(), &rep);
	close(fd);
	if (r == BT_REJECTED)
		printf("rejected reason=%u (%s)\n", rep.reason,
		       swiw_broker_reason_str(rep.reason));
	else
		printf("%s\n", bt_outcome_str(r));
	return outcome_exit(r);
}

static int dial(void)
{
	struct sockaddr_storage p, l;
	struct swiw_broker_dial d;
	socklen_t pl, ll = 0;
	int err, fd;

	if (!o_peer ||
	    addr_of(o_peer, (uint16_t)swiw_config()->broker_port, &p, &pl) ||
	    (o_bind && addr_of(o_bind, 0, &l, &ll)))
		return die("dial needs --peer", EINVAL);
	swiw_broker_dial_start(&d, (struct sockaddr *)&p, pl,
			       o_bind ? (struct sockaddr *)&l : NULL, ll,
			       o_timeout, swiw_broker_now_ms());
	err = dial_run(&d, &fd);
	if (err) {
		printf("dial failed: %s (last: %s) after %u attempts\n",
		       strerror(err), strerror(d.last_err), d.attempts);
		return err == ETIMEDOUT ? 4 : 2;
	}
	printf("connected attempts=%u\n", d.attempts);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "local", required_argument, NULL, 'l' },
		{ "peer", required_argument, NULL, 'p' },
		{ "bind", required_argument, NULL, 'b' },
		{ "out", required_argument, NULL, 'o' },
		{ "in", required_argument, NULL, 'i' },
		{ "src", required_argument, NULL, 's' },
		{ "dst", required_argument, NULL, 'd' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ "rtr-delay-ms", required_argument, NULL, 'r' },
		{ "sq-psn", required_argument, NULL, 'q' },
		{ "first-block", no_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd;
	int c;

	if (argc < 2)
		return die("usage: swiw_broker_tool pair|request|dial ...",
			   EINVAL);
	cmd = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'l':
			o_local = optarg;
			break;
		case 'p':
			o_peer = optarg;
			break;
		case 'b':
			o_bind = optarg;
			break;
		case 'o':
			o_out = optarg;
			break;
		case 'i':
			o_in = optarg;
			break;
		case 's':
			o_src = strtoul(optarg, NULL, 0);
			break;
		case 'd':
			o_dst = strtoul(optarg, NULL, 0);
			break;
		case 't':
			o_timeout = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'r':
			o_rtr_delay = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'q':
			o_sq_psn = strtol(optarg, NULL, 0);
			break;
		case 'f':
			o_first_block = true;
			break;
		default:
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	deadline = swiw_broker_now_ms() + o_timeout;
	if (!strcmp(cmd, "pair"))
		return pair();
	if (!strcmp(cmd, "request"))
		return request();
	if (!strcmp(cmd, "dial"))
		return dial();
	return die(cmd, EINVAL);
}
