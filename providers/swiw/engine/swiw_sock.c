// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Letting go of a stream's TCP socket. close() with received data not
 * read makes the kernel reset the connection, and the reset drops what
 * the send queue still holds: the tail of a message whose work request
 * has completed (an iWARP send completes once TCP has the data). A
 * program that destroys its QP right after its last completion (as
 * perftest's latency tests do) could lose that message whenever the
 * peer's last bytes, such as an FPDU's CRC after a payload already
 * placed, were still unread. So the input is read away first. A peer
 * that sends more after that still gets a reset: the look is bounded,
 * so that a peer streaming at us cannot hold a destroy.
 */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "swiw_sock.h"

#define SWIW_SOCK_DRAIN_MAX (4u << 20) /* octets read away at most */

void swiw_sock_drain(int fd)
{
	size_t done = 0;
	ssize_t n;

	while (done < SWIW_SOCK_DRAIN_MAX) {
		/* TCP's MSG_TRUNC discards without copying (tcp(7)). */
		n = recv(fd, NULL, SWIW_SOCK_DRAIN_MAX - done,
			 MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
}

void swiw_sock_close(int fd)
{
	swiw_sock_drain(fd);
	close(fd);
}
