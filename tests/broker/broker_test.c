// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "broker_test.h"

static int request(struct bt_init *I, const struct swiw_broker_pd *req,
		   const void *pd, uint16_t pd_len, size_t *len);

int bt_request(struct bt_init *I, uint32_t src, uint32_t dst, uint64_t nonce,
	       const void *pd, uint16_t pd_len, size_t *len)
{
	struct swiw_broker_pd req = { .type = SWIW_BROKER_PD_REQUEST,
				      .src_qpn = src,
				      .dst_qpn = dst,
				      .nonce = nonce,
				      .sq_psn = BT_KNOWN(BT_PSN_I),
				      .rq_psn = BT_KNOWN(BT_PSN_R) };

	return request(I, &req, pd, pd_len, len);
}

int bt_request_psn(struct bt_init *I, uint32_t src, uint32_t dst,
		   uint64_t nonce, uint32_t sq_psn, uint32_t rq_psn,
		   size_t *len)
{
	struct swiw_broker_pd req = { .type = SWIW_BROKER_PD_REQUEST,
				      .src_qpn = src,
				      .dst_qpn = dst,
				      .nonce = nonce,
				      .sq_psn = sq_psn,
				      .rq_psn = rq_psn };

	return request(I, &req, NULL, 0, len);
}

static int request(struct bt_init *I, const struct swiw_broker_pd *req,
		   const void *pd, uint16_t pd_len, size_t *len)
{
	uint8_t block[SWIW_BROKER_PD_LEN];
	struct swiw_mpa_ulp ulp = { .ird = 16, .ord = 16 };
	struct swiw_mpa_cfg cfg;
	size_t blen;
	int err;

	swiw_mpa_cfg_init(&cfg);
	err = -swiw_mpa_init(&I->m, SWIW_MPA_INITIATOR, &cfg, I->tx,
			     sizeof(I->tx), I->pd, sizeof(I->pd));
	if (err)
		return err;
	I->nonce = req->nonce;
	if (pd) {
		ulp.pd = pd;
		ulp.pd_len = pd_len;
	} else {
		err = swiw_broker_pd_encode(req, block, sizeof(block), &blen);
		if (err)
			return err;
		ulp.pd = block;
		ulp.pd_len = (uint16_t)blen;
	}
	err = -swiw_mpa_connect(&I->m, &ulp);
	if (err)
		return err;
	swiw_mpa_events(&I->m);
	*len = swiw_mpa_outcome(&I->m)->tx_len;
	return 0;
}

int bt_send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EAGAIN) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };

			poll(&pfd, 1, 1000);
			continue;
		}
		if (n <= 0)
			return n ? errno : EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

bool bt_readable(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, ms) == 1;
}

int bt_read_reply(struct bt_init *I, int fd, int ms, struct swiw_broker_pd *pd)
{
	const struct swiw_mpa_outcome *o = swiw_mpa_outcome(&I->m);
	uint8_t buf[SWIW_MPA_FRAME_MAX];
	size_t used;
	ssize_t n;
	uint32_t ev;

	memset(pd, 0, sizeof(*pd));
	for (;;) {
		if (!bt_readable(fd, ms))
			return BT_TIMEOUT;
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && errno == EAGAIN)
			continue;
		if (n <= 0)
			return BT_CLOSED;
		swiw_mpa_input(&I->m, buf, (size_t)n, &used);
		ev = swiw_mpa_events(&I->m);
		if (ev & (SWIW_MPA_EV_CLOSED | SWIW_MPA_EV_SEND_RTR |
			  SWIW_MPA_EV_TX_FPDU))
			break;
	}
	swiw_broker_pd_decode(o->peer_pd, o->peer_pd_len, pd);
	if (swiw_mpa_state(&I->m) == SWIW_MPA_S_CLOSED)
		return o->reject == SWIW_MPA_REJ_BY_PEER ? BT_REJECTED : BT_BAD;
	return BT_ACCEPTED;
}

int bt_accept(const struct swiw_broker_conn *c)
{
	struct swiw_broker_pd acc = { .type = SWIW_BROKER_PD_ACCEPT,
				      .src_qpn = c->qpn,
				      .dst_qpn = c->peer_qpn,
				      .nonce = c->nonce,
				      .rq_psn = BT_KNOWN(BT_PSN_I) };
	uint8_t tx[SWIW_MPA_FRAME_MAX], pdb[SWIW_MPA_PD_MAX];
	uint8_t block[SWIW_BROKER_PD_LEN];
	struct swiw_mpa_ulp ulp = { .ird = 16, .ord = 16 };
	struct swiw_mpa_cfg cfg;
	struct swiw_mpa m;
	struct swiw_broker_pd req;
	size_t used, blen;
	int err;

	swiw_mpa_cfg_init(&cfg);
	err = -swiw_mpa_init(&m, SWIW_MPA_RESPONDER, &cfg, tx, sizeof(tx), pdb,
			     sizeof(pdb));
	if (err)
		return err;
	swiw_mpa_input(&m, c->req, c->req_len, &used);
	if (used != c->req_len || !(swiw_mpa_events(&m) & SWIW_MPA_EV_REQUEST))
		return EPROTO;
	/* The block as the engine reads it, from the handed bytes alone. */
	err = swiw_broker_pd_decode(swiw_mpa_outcome(&m)->peer_pd,
				    swiw_mpa_outcome(&m)->peer_pd_len, &req);
	if (err || req.src_qpn != c->peer_qpn || req.dst_qpn != c->qpn)
		return EPROTO;
	err = swiw_broker_pd_encode(&acc, block, sizeof(block), &blen);
	if (err)
		return err;
	ulp.pd = block;
	ulp.pd_len = (uint16_t)blen;
	err = -swiw_mpa_accept(&m, &ulp);
	if (err)
		return err;
	if (!(swiw_mpa_events(&m) & SWIW_MPA_EV_TX))
		return EPROTO;
	return bt_send_all(c->fd, tx, swiw_mpa_outcome(&m)->tx_len);
}

int bt_gid(const char *addr, uint8_t gid[16])
{
	memset(gid, 0, 16);
	if (inet_pton(AF_INET, addr, gid + 12) == 1) {
		gid[10] = gid[11] = 0xff;
		return 0;
	}
	return inet_pton(AF_INET6, addr, gid) == 1 ? 0 : EINVAL;
}

int bt_dial(const char *addr, uint16_t port, const char *bind,
	    unsigned int timeout_ms, int *fd)
{
	struct sockaddr_storage p, l;
	socklen_t pl, ll = 0;
	uint8_t gid[16];
	int err;

	err = bt_gid(addr, gid);
	if (!err)
		err = swiw_broker_gid_sockaddr(gid, port, 0, &p, &pl);
	if (!err && bind) {
		err = bt_gid(bind, gid);
		if (!err)
			err = swiw_broker_gid_sockaddr(gid, 0, 0, &l, &ll);
	}
	if (err)
		return err;
	return swiw_broker_dial_blocking((struct sockaddr *)&p, pl,
					 bind ? (struct sockaddr *)&l : NULL,
					 ll, timeout_ms, fd);
}

const char *bt_outcome_str(int outcome)
{
	static const char *const s[] = { "accepted", "rejected", "closed",
					 "timeout", "bad reply" };

	return outcome >= 0 && outcome <= BT_BAD ? s[outcome] : "?";
}
