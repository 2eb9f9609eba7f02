/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A connected TCP pair over loopback, for the C tests that need real TCP. */
#ifndef SWIW_TCP_PAIR_H
#define SWIW_TCP_PAIR_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

/*
 * *a dialed, *b accepted on 127.0.0.1, both blocking and close-on-exec.
 * @rcvbuf > 0: b's receive buffer (set on the listener, so that the
 * window is small from the handshake on); @nodelay: TCP_NODELAY on both.
 * 0, or -1 with nothing left open.
 */
static inline int swiw_tcp_pair(int *a, int *b, int rcvbuf, bool nodelay)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int lsn, one = 1;

	*a = *b = -1;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lsn = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lsn < 0)
		return -1;
	*a = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*a < 0 ||
	    (rcvbuf > 0 &&
	     setsockopt(lsn, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf))) ||
	    bind(lsn, (struct sockaddr *)&sin, sizeof(sin)) || listen(lsn, 1) ||
	    getsockname(lsn, (struct sockaddr *)&sin, &sl) ||
	    connect(*a, (struct sockaddr *)&sin, sizeof(sin)))
		goto fail;
	*b = accept4(lsn, NULL, NULL, SOCK_CLOEXEC);
	if (*b < 0)
		goto fail;
	close(lsn);
	if (nodelay) {
		setsockopt(*a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		setsockopt(*b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	return 0;
fail:
	if (*a >= 0)
		close(*a);
	close(lsn);
	*a = -1;
	return -1;
}

#endif /* SWIW_TCP_PAIR_H */
