/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the broker tests need to play the engine's part for real: an MPA
 * initiator that sends a Request carrying swiw's block and reads the
 * Reply, and a responder that accepts a handed-over connection. Both use
 * the wire core's MPA machine, as the engine will.
 */
#ifndef SWIW_BROKER_TEST_H
#define SWIW_BROKER_TEST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "swiw_broker.h"
#include "swiw_mpa.h"

/* Outcomes of bt_read_reply(). */
#define BT_ACCEPTED 0
#define BT_REJECTED 1 /* a Reply with R; *pd filled if it had a block */
#define BT_CLOSED 2 /* closed (or reset) without a Reply */
#define BT_TIMEOUT 3 /* nothing within the time given */
#define BT_BAD 4 /* a Reply the initiator machine refused */

struct bt_init {
	struct swiw_mpa m;
	uint8_t tx[SWIW_MPA_FRAME_MAX];
	uint8_t pd[SWIW_MPA_PD_MAX];
	uint64_t nonce;
};

/*
 * The PSNs the tests' QPs exchanged "out of band": the initiator's send
 * PSN (the responder's receive PSN, given to expect) and the responder's
 * send PSN (the initiator's receive PSN).
 */
#define BT_PSN_I 0x1a2b3cu
#define BT_PSN_R 0x4d5e6fu
#define BT_KNOWN(psn) (SWIW_BROKER_PSN_KNOWN | (psn))

/*
 * Builds a Request from QP @src to QP @dst in I->tx (length in *@len):
 * the swiw block, with send PSN BT_PSN_I and receive PSN BT_PSN_R, unless
 * @pd is given (then @pd_len octets of it).
 */
int bt_request(struct bt_init *I, uint32_t src, uint32_t dst, uint64_t nonce,
	       const void *pd, uint16_t pd_len, size_t *len);

/* The same with the block's PSN words given (0: not known). */
int bt_request_psn(struct bt_init *I, uint32_t src, uint32_t dst,
		   uint64_t nonce, uint32_t sq_psn, uint32_t rq_psn,
		   size_t *len);

/* Writes all of @buf; 0 or an errno. */
int bt_send_all(int fd, const void *buf, size_t len);

/* Reads the Reply for up to @ms; BT_*; the swiw block of it into *@pd. */
int bt_read_reply(struct bt_init *I, int fd, int ms, struct swiw_broker_pd *pd);

/*
 * Responder: runs the MPA machine on the handed-over Request and answers
 * with an Accept block (src c->qpn, dst c->peer_qpn, the nonce, receive
 * PSN BT_PSN_I). 0 or an errno.
 */
int bt_accept(const struct swiw_broker_conn *c);

/* True if @fd becomes readable within @ms. */
bool bt_readable(int fd, int ms);

/* GID of a textual IPv4 or IPv6 address (IPv4 as ::ffff:a.b.c.d). */
int bt_gid(const char *addr, uint8_t gid[16]);

/* Dials @addr at @port, bound to @bind (NULL: any); 0 or an errno. */
int bt_dial(const char *addr, uint16_t port, const char *bind,
	    unsigned int timeout_ms, int *fd);

const char *bt_outcome_str(int outcome);

#endif /* SWIW_BROKER_TEST_H */
