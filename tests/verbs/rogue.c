// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The rogue peer (rogue.h): the wire core's MPA machine, segmenter,
 * framer and deframer over a TCP socket, every wait bounded by poll().
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "rogue.h"

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Waits for @ev on @fd until @end: 0, or -ETIMEDOUT. */
static int wait_fd(int fd, short ev, long end)
{
	struct pollfd p = { .fd = fd, .events = ev };
	long left;

	for (;;) {
		left = end - now_ms();
		if (left < 0)
			left = 0;
		if (poll(&p, 1, (int)left) > 0)
			return 0;
		if (!left)
			return -ETIMEDOUT;
	}
}

/* Writes all of @iov; swiw may have closed, hence no SIGPIPE. */
static int write_all(int fd, struct iovec *iov, int n)
{
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
	long end = now_ms() + 10000;
	ssize_t w;

	while (mh.msg_iovlen) {
		w = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno != EAGAIN && errno != EINTR)
				return -errno;
			if (wait_fd(fd, POLLOUT, end))
				return -ETIMEDOUT;
			continue;
		}
		while (mh.msg_iovlen && (size_t)w >= mh.msg_iov->iov_len) {
			w -= (ssize_t)mh.msg_iov->iov_len;
			mh.msg_iov++;
			mh.msg_iovlen--;
		}
		if (mh.msg_iovlen) {
			mh.msg_iov->iov_base = (u8 *)mh.msg_iov->iov_base + w;
			mh.msg_iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* More octets into r->in within @ms: 0, -ETIMEDOUT, -ENODATA at FIN. */
static int fill(struct rogue *r, int ms)
{
	long end = now_ms() + ms;
	ssize_t n;

	if (r->in_head) {
		memmove(r->in, r->in + r->in_head, r->in_tail - r->in_head);
		r->in_tail -= r->in_head;
		r->in_head = 0;
	}
	for (;;) {
		n = recv(r->fd, r->in + r->in_tail, sizeof(r->in) - r->in_tail,
			 MSG_DONTWAIT);
		if (n > 0) {
			r->in_tail += (size_t)n;
			return 0;
		}
		if (!n)
			return -ENODATA;
		if (errno == ECONNRESET)
			return -ENODATA; /* a FIN with unread data of ours */
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		if (wait_fd(r->fd, POLLIN, end))
			return -ETIMEDOUT;
	}
}

int rogue_connect(struct rogue *r, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct swiw_mpa_ulp ulp = { .ird = ROGUE_IRD_ORD,
				    .ord = ROGUE_IRD_ORD };
	struct swiw_mpa_cfg cfg;
	struct iovec iov;
	int one = 1;

	memset(r, 0, sizeof(*r));
	r->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (r->fd < 0)
		return -errno;
	setsockopt(r->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	a.sin_port = htons(port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(r->fd, (struct sockaddr *)&a, sizeof(a)))
		return -errno;
	/* CRC on, so that every FPDU either way is checked; one RTR kind
	 * so that the rogue always opens with a zero-length Write. */
	swiw_mpa_cfg_init(&cfg);
	cfg.crc_required = true;
	cfg.rtr_offer = SWIW_MPA_RTR_F_WRITE;
	if (swiw_mpa_init(&r->mpa, SWIW_MPA_INITIATOR, &cfg, r->mpa_tx,
			  sizeof(r->mpa_tx), r->mpa_pd, sizeof(r->mpa_pd)) ||
	    swiw_mpa_connect(&r->mpa, &ulp) ||
	    !(swiw_mpa_events(&r->mpa) & SWIW_MPA_EV_TX))
		return -EINVAL;
	iov.iov_base = r->mpa_tx;
	iov.iov_len = swiw_mpa_outcome(&r->mpa)->tx_len;
	return write_all(r->fd, &iov, 1);
}

int rogue_establish(struct rogue *r, int ms)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&r->mpa);
	struct swiw_rdmap_msg rtr = { .opcode = RDMAP_WRITE,
				      .stag = SWIW_MPA_RTR_STAG };
	struct swiw_fpdu_rx_cfg rc = { 0 };
	long end = now_ms() + ms;
	size_t used;
	u32 ev = 0;
	int err;

	while (!(ev & (SWIW_MPA_EV_SEND_RTR | SWIW_MPA_EV_CLOSED))) {
		if (r->in_head == r->in_tail) {
			err = fill(r, (int)(end - now_ms()));
			if (err)
				return err;
		}
		if (swiw_mpa_input(&r->mpa, r->in + r->in_head,
				   r->in_tail - r->in_head, &used))
			return -EINVAL;
		r->in_head += used;
		ev |= swiw_mpa_events(&r->mpa);
	}
	if ((ev & SWIW_MPA_EV_CLOSED) || o->markers_tx || o->markers_rx ||
	    o->rtr != SWIW_MPA_RTR_WRITE)
		return -EPROTO;
	r->crc = o->crc;
	r->ftx.crc = o->crc;
	rc.crc = o->crc;
	rc.min_ulpdu = SWIW_FPDU_MIN_ULPDU;
	rc.peek = SWIW_FPDU_PEEK_MAX;
	if (swiw_fpdu_rx_init(&r->frx, &rc))
		return -EINVAL;
	err = rogue_send(r, &rtr, NULL, 1024);
	if (err)
		return err;
	if (swiw_mpa_rtr_sent(&r->mpa))
		return -EPROTO;
	swiw_mpa_events(&r->mpa);
	return 0;
}

/* One FPDU as the socket takes it. */
struct fpdu_out {
	struct swiw_fpdu_frame f;
	struct swiw_iov fiov[8];
	struct iovec iov[8];
};

/* Frames @hdr and @payload as the stream's next FPDU in @o: its pieces,
 * or a negative errno. */
static int frame(struct rogue *r, const void *hdr, u32 hdr_len,
		 const void *payload, u32 payload_len, struct fpdu_out *o)
{
	struct swiw_iov piece[2];
	u32 i;
	int rc;

	piece[0].base = hdr;
	piece[0].len = hdr_len;
	piece[1].base = payload_len ? payload : NULL;
	piece[1].len = payload_len;
	o->f.iov = o->fiov;
	o->f.max_iov = SWIW_ARRAY_SIZE(o->fiov);
	rc = swiw_fpdu_tx_build(&r->ftx, piece, 2, &o->f);
	if (rc)
		return rc;
	for (i = 0; i < o->f.n_iov; i++) {
		o->iov[i].iov_base = (void *)o->fiov[i].base;
		o->iov[i].iov_len = o->fiov[i].len;
	}
	return (int)o->f.n_iov;
}

int rogue_send_ulpdu(struct rogue *r, const void *hdr, u32 hdr_len,
		     const void *payload, u32 payload_len)
{
	struct fpdu_out o;
	int n = frame(r, hdr, hdr_len, payload, payload_len, &o);

	return n < 0 ? n : write_all(r->fd, o.iov, n);
}

int rogue_frame(struct rogue *r, const void *hdr, u32 hdr_len,
		const void *payload, u32 payload_len, u8 *out, size_t max,
		size_t *len)
{
	struct fpdu_out o;
	int i, n = frame(r, hdr, hdr_len, payload, payload_len, &o);

	if (n < 0)
		return n;
	*len = 0;
	for (i = 0; i < n; i++) {
		if (o.iov[i].iov_len > max - *len)
			return -ENOSPC;
		memcpy(out + *len, o.iov[i].iov_base, o.iov[i].iov_len);
		*len += o.iov[i].iov_len;
	}
	return 0;
}

int rogue_write_raw(struct rogue *r, const void *buf, size_t len)
{
	struct iovec iov = { (void *)buf, len };

	return write_all(r->fd, &iov, 1);
}

int rogue_send(struct rogue *r, const struct swiw_rdmap_msg *m,
	       const void *payload, u32 mulpdu)
{
	const struct swiw_rdmap_op *op = swiw_rdmap_op(m->opcode);
	struct swiw_rdmap_msg msg = *m;
	struct swiw_ddp_txseg s;
	struct swiw_ddp_tx tx;
	u8 hdr[SWIW_DDP_HDR_MAX];
	int rc;

	if (!op)
		return -EINVAL;
	if (!(op->flags & SWIW_OPF_TAGGED) && !msg.msn)
		msg.msn = ++r->msn[op->qn];
	else if (!(op->flags & SWIW_OPF_TAGGED))
		r->msn[op->qn] = msg.msn;
	rc = swiw_ddp_tx_init(&tx, &msg);
	if (rc)
		return rc;
	r->nhdr = 0;
	while ((rc = swiw_ddp_tx_next(&tx, mulpdu, hdr, sizeof(hdr), &s)) ==
	       1) {
		if (r->nhdr < ROGUE_HDR_LOG) {
			memcpy(r->hdr[r->nhdr], hdr, s.hdr_len);
			r->seg_len[r->nhdr++] = s.hdr_len + s.payload_len;
		}
		rc = rogue_send_ulpdu(r, hdr, s.hdr_len,
				      s.payload_len ? (const u8 *)payload +
							      s.payload_off :
						      NULL,
				      s.payload_len);
		if (rc)
			return rc;
	}
	return rc;
}

static int on_hdr(void *ctx, const struct swiw_fpdu_rx *rx)
{
	struct rogue *r = ctx;
	const u8 *h;
	u32 hl;

	h = swiw_fpdu_rx_hdr(rx, &hl);
	memcpy(r->ulpdu, h, hl);
	r->ulpdu_len = swiw_fpdu_rx_ulpdu_len(rx);
	return 0;
}

static int on_payload(void *ctx, u32 off, const u8 *data, u32 len)
{
	struct rogue *r = ctx;

	if (off > sizeof(r->ulpdu) || len > sizeof(r->ulpdu) - off)
		return -EMSGSIZE;
	memcpy(r->ulpdu + off, data, len);
	return 0;
}

/* Stops the push after each FPDU: the caller takes one at a time. */
static int on_end(void *ctx, const struct swiw_fpdu_rx *rx)
{
	struct rogue *r = ctx;

	(void)rx;
	r->whole = true;
	return 1;
}

int rogue_recv(struct rogue *r, struct rogue_msg *msg, int ms)
{
	static const struct swiw_fpdu_rx_ops ops = {
		.hdr = on_hdr,
		.payload = on_payload,
		.end = on_end,
	};
	long end = now_ms() + ms;
	size_t used;
	int rc;

	r->whole = false;
	for (;;) {
		if (r->in_head < r->in_tail) {
			rc = swiw_fpdu_rx_push(&r->frx, r->in + r->in_head,
					       r->in_tail - r->in_head, &ops, r,
					       &used);
			r->in_head += used;
			if (rc < 0)
				return -EPROTO;
			if (r->whole)
				break;
		}
		rc = fill(r, (int)(end - now_ms()));
		if (rc)
			return rc;
	}
	memset(msg, 0, sizeof(*msg));
	swiw_ddp_parse(r->ulpdu, r->ulpdu_len, SWIW_DDP_RX_RFC7306, &msg->seg,
		       &msg->v);
	msg->ulpdu = r->ulpdu;
	msg->len = r->ulpdu_len;
	msg->payload = r->ulpdu + msg->seg.hdr_len;
	return 0;
}

int rogue_wait_eof(struct rogue *r, int ms)
{
	struct rogue_msg m;
	int rc = rogue_recv(r, &m, ms);

	if (!rc)
		return -EBADMSG;
	return rc == -ENODATA ? 0 : rc;
}

void rogue_close(struct rogue *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}
