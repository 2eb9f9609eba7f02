// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * swiw_sock_close() over real loopback TCP: a socket with input it never
 * read and output its peer has not taken yet closes with a FIN after all
 * of that output, where a plain close() resets the connection and the
 * peer loses the tail (ECONNRESET). And a peer that keeps sending cannot
 * hold the close: the look at its input is bounded.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "swiw_sock.h"
#include "../lib/swiw_tcp_pair.h"

/* A connected pair on 127.0.0.1: *a dialed, *b accepted; b's receive
 * buffer small, so that a's output waits in a's send queue. */
static void tcp_pair(int *a, int *b)
{
	assert_int_equal(swiw_tcp_pair(a, b, 4096, false), 0);
}

/* Fills a's send path without blocking; returns the octets it took. */
static size_t fill(int a)
{
	static uint8_t chunk[65536];
	size_t total = 0;
	ssize_t n;

	for (;;) {
		n = send(a, chunk, sizeof(chunk), MSG_DONTWAIT);
		if (n <= 0)
			break;
		total += (size_t)n;
	}
	assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
	return total;
}

/* Reads b to its end; returns the octets, *err the error that ended it
 * (0: end of stream). */
static size_t read_all(int b, int *err)
{
	static uint8_t buf[65536];
	size_t total = 0;
	ssize_t n;

	for (;;) {
		n = recv(b, buf, sizeof(buf), 0);
		if (n > 0) {
			total += (size_t)n;
			continue;
		}
		*err = n ? errno : 0;
		return total;
	}
}

/* Unread input at a, output still queued at a: plain close() resets. */
static size_t close_with_input(void (*close_fn)(int), int *err)
{
	size_t sent, got;
	int a, b;

	tcp_pair(&a, &b);
	assert_int_equal(send(b, "peer's last bytes", 17, 0), 17);
	usleep(20000); /* in a's receive queue */
	sent = fill(a);
	assert_true(sent > 0);
	close_fn(a);
	got = read_all(b, err);
	close(b);
	return sent - got;
}

static void plain_close(int fd)
{
	close(fd);
}

static void test_close_keeps_output(void **state)
{
	int err = -1;

	(void)state;
	/* Without the drain, the kernel resets: the test can fail. */
	assert_true(close_with_input(plain_close, &err) > 0);
	assert_int_equal(err, ECONNRESET);
	err = -1;
	assert_int_equal(close_with_input(swiw_sock_close, &err), 0);
	assert_int_equal(err, 0);
}

struct flood {
	int fd;
	int stop; /* atomic */
};

static void *flood_main(void *arg)
{
	static uint8_t chunk[65536];
	struct flood *f = arg;

	while (!__atomic_load_n(&f->stop, __ATOMIC_RELAXED))
		if (send(f->fd, chunk, sizeof(chunk), MSG_NOSIGNAL) < 0)
			break;
	return NULL;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void test_flood_bounded(void **state)
{
	struct flood f;
	pthread_t t;
	double t0;
	int a, b, big = 8 << 20;

	(void)state;
	tcp_pair(&a, &b);
	setsockopt(a, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	f.fd = b;
	f.stop = 0;
	assert_int_equal(pthread_create(&t, NULL, flood_main, &f), 0);
	usleep(50000);
	t0 = now_s();
	swiw_sock_close(a);
	assert_true(now_s() - t0 < 1.0);
	__atomic_store_n(&f.stop, 1, __ATOMIC_RELAXED);
	shutdown(b, SHUT_RDWR);
	pthread_join(t, NULL);
	close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_close_keeps_output),
		cmocka_unit_test(test_flood_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
