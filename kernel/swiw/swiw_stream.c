// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Streams: SWIW_IOC_ATTACH hands the helper a connected TCP socket and the
 * queues of its QP. This skeleton checks every argument as the data path
 * will, then answers EOPNOTSUPP (and SWIW_IOC_VERSION leaves
 * SWIW_VERSION_DATAPATH clear): the provider learns that this helper pins
 * and maps but does not move data, and keeps its in-process engine.
 */
#include <linux/net.h>
#include <linux/file.h>
#include <linux/uaccess.h>
#include <net/sock.h>
#include <net/tcp_states.h>

#include "swiw_kmod.h"

#define SWIW_ATTACH_KNOWN \
	(SWIW_ATTACH_CRC | SWIW_ATTACH_MARKERS_TX | SWIW_ATTACH_MARKERS_RX)

/* 0 if @fd is a connected TCP socket (IPv4 or IPv6), else why not. */
static int swiw_check_socket(int fd)
{
	struct socket *sock;
	struct sock *sk;
	int ret = 0;

	sock = sockfd_lookup(fd, &ret); /* EBADF, ENOTSOCK */
	if (!sock)
		return ret;
	sk = sock->sk;
	if (!sk || (sk->sk_family != AF_INET && sk->sk_family != AF_INET6) ||
	    sk->sk_type != SOCK_STREAM || sk->sk_protocol != IPPROTO_TCP)
		ret = -EPROTONOSUPPORT;
	else if (READ_ONCE(sk->sk_state) != TCP_ESTABLISHED)
		ret = -ENOTCONN;
	sockfd_put(sock);
	return ret;
}

int swiw_stream_attach(struct swiw_kfile *f, void __user *arg)
{
	struct swiw_ioc_attach req;
	int ret;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (req.flags & ~SWIW_ATTACH_KNOWN || req.rsvd[0] || req.rsvd[1] ||
	    req.stream_id || req.ird > SWIW_MAX_IRD || req.ord > SWIW_MAX_ORD)
		return -EINVAL;
	/* Each id must name a ring of this file, of the right kind. */
	if (!swiw_queue_find(f, req.sq_id, SWIW_QUEUE_SQ) ||
	    !swiw_queue_find(f, req.rq_id, SWIW_QUEUE_RQ) ||
	    !swiw_queue_find(f, req.cq_id, SWIW_QUEUE_CQ) ||
	    !swiw_queue_find(f, req.tx_id, SWIW_QUEUE_TX) ||
	    !swiw_queue_find(f, req.rxev_id, SWIW_QUEUE_RXEV))
		return -EINVAL;
	ret = swiw_check_socket(req.sock_fd);
	if (ret)
		return ret;
	return -EOPNOTSUPP; /* the skeleton: no data path yet */
}

/*
 * DOORBELL and DETACH name a stream ATTACH returned; the skeleton never
 * returns one, so after the argument check there is nothing to find.
 */
int swiw_stream_cmd(struct swiw_kfile *f, unsigned int cmd, void __user *arg)
{
	struct swiw_ioc_stream req;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (req.rsvd)
		return -EINVAL;
	return -EOPNOTSUPP;
}
