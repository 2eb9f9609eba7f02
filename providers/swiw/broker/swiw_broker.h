/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Connecting QPs by (GID, QP number): the client side of swiw's broker.
 *
 * ibv_rc_pingpong, perftest without -R and rdma-core's tests connect a QP
 * with ibv_modify_qp(RTR) naming the peer's GID and QP number. swiw maps
 * that to one TCP connection and an MPA exchange:
 *
 * - One broker per network namespace (the executable swiw-broker, started
 *   on demand by the first process that needs it, gone a few seconds after
 *   its last client) hands out QP numbers unique in the namespace and
 *   listens on one TCP port (broker_port, default 7949) on every address.
 * - Of the two QPs, the one whose (GID, QPN) is smaller is the initiator
 *   (swiw_broker_role()): its engine connects straight to the peer's
 *   address at the broker port and sends an MPA Request whose private
 *   data is swiw's block (swiw_broker_pd_encode(): its QPN, the peer's
 *   QPN, a nonce).
 * - The responder's broker reads that Request and nothing more, checks it
 *   against what the addressed QP expects (swiw_broker_expect(): the peer
 *   address must be the GID it was given, the source QPN the dest_qp_num
 *   it was given), and passes the socket with the Request's bytes to the
 *   owning process (swiw_broker_recv_conn()). Anything else gets an MPA
 *   Reply with R set and a reason (enum swiw_broker_reason), and is never
 *   handed to a QP. A Request that comes before the QP's RTR is held for
 *   a bounded time.
 * - The responder's engine runs its MPA responder on the handed bytes and
 *   answers with an Accept block; the initiator checks that block.
 *
 * The engine's sequence:
 *
 *   process/context:  swiw_broker_open(); add swiw_broker_event_fd() to
 *                     the epoll set (EPOLLIN)
 *   ibv_create_qp:    swiw_broker_qp_alloc() -> qp_num
 *   modify_qp(RTR):   role = swiw_broker_role(sgid, qpn, dgid, dqpn);
 *                     swiw_broker_expect(qpn, dgid, dqpn, rq_psn, role)
 *   modify_qp(RTS):   responder: swiw_broker_sq_psn(qpn, sq_psn)
 *   initiator:        swiw_broker_dial_start(dgid:port, from sgid:0) and
 *                     swiw_broker_dial_step() from the loop until 0;
 *                     MPA initiator with ulp.pd = a REQUEST block (src
 *                     qpn, dst dqpn, random nonce, its PSNs); on the
 *                     Reply: an
 *                     ACCEPT block naming (dqpn -> qpn, nonce) or fail;
 *                     a Reject whose reason is retryable, or a close
 *                     before any Reply: close, swiw_broker_dial_retry()
 *   responder:        event fd readable: swiw_broker_recv_conn() until
 *                     EAGAIN; find the QP by c.qpn (none, or not in RTR:
 *                     close c.fd); swiw_broker_conn_verify(); MPA
 *                     responder fed c.req; accept with ulp.pd = an
 *                     ACCEPT block (src qpn, dst c.peer_qpn, c.nonce)
 *   reset/error:      swiw_broker_unexpect();  destroy: _qp_free()
 *
 * Errors are positive errno values. The handle is safe to use from several
 * threads, except swiw_broker_recv_conn(), which one thread (the engine's)
 * calls at a time. A handle does not survive fork(): a child opens its
 * own.
 */
#ifndef SWIW_BROKER_H
#define SWIW_BROKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>

/* Defaults of the configuration keys broker_port and connect_timeout. */
#define SWIW_BROKER_PORT_DEFAULT 7949 /* "SWIW" on a phone keypad */
#define SWIW_BROKER_CONNECT_TIMEOUT_MS 10000

/* QP numbers the broker hands out: 24 bits, never 0 or 1. */
#define SWIW_BROKER_QPN_MIN 2u
#define SWIW_BROKER_QPN_MAX 0xffffffu

/* The largest MPA Request: header and 256 octets of private data. */
#define SWIW_BROKER_REQ_MAX 276

enum swiw_broker_role {
	SWIW_BROKER_ROLE_NONE = 0,
	SWIW_BROKER_INITIATOR = 1, /* connects to the peer's broker */
	SWIW_BROKER_RESPONDER = 2, /* gets the connection from its broker */
};

/* Why a connection was rejected: the Reject block's reason. */
enum swiw_broker_reason {
	SWIW_BROKER_R_NONE = 0,
	SWIW_BROKER_R_UNKNOWN_QPN = 1, /* no such QP at the responder */
	SWIW_BROKER_R_WRONG_PEER_ADDR = 2, /* the QP expects another GID */
	SWIW_BROKER_R_WRONG_PEER_QPN = 3, /* the QP expects another QPN */
	SWIW_BROKER_R_NOT_READY = 4, /* not in RTR in time: retry */
	SWIW_BROKER_R_ROLE = 5, /* the QP connects out itself */
	SWIW_BROKER_R_CONNECTED = 6, /* the QP has its connection */
	SWIW_BROKER_R_BAD_PD = 7, /* no or malformed swiw block */
	SWIW_BROKER_R_VERSION = 8, /* block version not spoken */
	SWIW_BROKER_R_REFUSED = 9, /* the responder's engine refused */
	/* Logged only: the peer hears UNKNOWN_QPN. */
	SWIW_BROKER_R_WRONG_PSN = 10, /* the PSNs are not the QP's */
	SWIW_BROKER_R_MAX = 10,
};

/* --- swiw's MPA private-data block (swiw_broker_proto.h has the layout) */

#define SWIW_BROKER_PD_LEN 36

/* A PSN word of the block: the PSN is known (bits 0..23 hold it). */
#define SWIW_BROKER_PSN_KNOWN 0x80000000u
#define SWIW_BROKER_PSN_MASK 0xffffffu

enum swiw_broker_pd_type {
	SWIW_BROKER_PD_REQUEST = 1, /* initiator -> responder */
	SWIW_BROKER_PD_ACCEPT = 2, /* responder -> initiator, Reply */
	SWIW_BROKER_PD_REJECT = 3, /* Reply with R set */
};

struct swiw_broker_pd {
	uint8_t version; /* decode: the block's; encode: ignored */
	uint8_t type; /* enum swiw_broker_pd_type */
	uint32_t src_qpn; /* the sender's QP */
	uint32_t dst_qpn; /* the QP it addresses */
	uint64_t nonce; /* the initiator's, echoed */
	uint16_t reason; /* REJECT: enum swiw_broker_reason */
	/* SWIW_BROKER_PSN_KNOWN | PSN, or 0: the sender's send PSN (once in
	 * RTS) and the PSN it expects to receive. */
	uint32_t sq_psn, rq_psn;
	bool psns; /* decode: the block has them (not the first revision) */
};

/*
 * Writes @pd as a version-1 block into @buf (@size >= SWIW_BROKER_PD_LEN)
 * and its length into *@len. Returns 0, or EINVAL for an unknown type, a
 * QPN above 24 bits, a reason outside REJECT, a PSN word with bits other
 * than KNOWN and the PSN's, or a short buffer.
 */
int swiw_broker_pd_encode(const struct swiw_broker_pd *pd, void *buf,
			  size_t size, size_t *len);

/*
 * Reads the block at the start of @buf (the ULP private data of an MPA
 * frame, after the RFC 6581 word). Returns 0; EBADMSG if it is not a swiw
 * block or is malformed (short, length field wrong, unknown type, QPN
 * above 24 bits, a PSN word with other bits set); EPROTONOSUPPORT for a
 * version other than 1 (version is filled in then). A block of the first
 * revision decodes with psns false and both PSNs 0.
 */
int swiw_broker_pd_decode(const void *buf, size_t len,
			  struct swiw_broker_pd *pd);

/*
 * The PSN rule, the same in the broker and the responder's engine. A
 * Request (@req, with PSNs) may reach a QP whose receive PSN is @rq_psn
 * and send PSN @sq_psn (PSN words, 0 while unknown) only if every pair
 * that can be compared matches: the Request's send PSN with @rq_psn, its
 * receive PSN with @sq_psn. The out-of-band exchange gave the true peer
 * both; a stranger who knows the QP number and address still lacks them.
 * Returns 0 (matched), EACCES (a pair differs) or EAGAIN (no pair can be
 * compared yet: the QP is not in RTS and the initiator was not).
 */
int swiw_broker_psn_check(const struct swiw_broker_pd *req, uint32_t rq_psn,
			  uint32_t sq_psn);

/* A short text for a reason ("unknown QP number", ...); never NULL. */
const char *swiw_broker_reason_str(unsigned int reason);

/*
 * True for reasons that may go away if the initiator tries again before
 * its connect timeout: only NOT_READY (the responder's QP had not reached
 * RTR while the Request was held).
 */
bool swiw_broker_reason_retryable(unsigned int reason);

/*
 * The role of the local QP in a pair: the smaller (GID, QPN), GIDs
 * compared as 16 octets in network order, then QPNs, is the initiator.
 * Both sides compute the same answer from the same two tuples. Returns
 * SWIW_BROKER_ROLE_NONE if both tuples are equal.
 */
enum swiw_broker_role swiw_broker_role(const uint8_t local_gid[16],
				       uint32_t local_qpn,
				       const uint8_t peer_gid[16],
				       uint32_t peer_qpn);

/* True for an IPv4-mapped GID (::ffff:a.b.c.d). */
bool swiw_broker_gid_is_v4(const uint8_t gid[16]);

/*
 * The socket address of @gid at @port: sockaddr_in for an IPv4-mapped
 * GID, sockaddr_in6 otherwise (with @scope_id, the interface index, for a
 * link-local one). @port 0 leaves the port 0 (for bind). Returns 0, or
 * EINVAL for the unspecified address or a multicast GID.
 */
int swiw_broker_gid_sockaddr(const uint8_t gid[16], uint16_t port,
			     uint32_t scope_id, struct sockaddr_storage *ss,
			     socklen_t *len);

/* --- the broker session ---------------------------------------------- */

struct swiw_broker;

struct swiw_broker_opts {
	/*
	 * The swiw-broker executable to start if none runs; NULL: $SWIW_BROKER,
	 * else beside the library that holds this code (or ../bin of it, a
	 * build tree), else the installed one (libexecdir/swiw/swiw-broker).
	 */
	const char *path;
	/* The TCP port the broker serves; 0: broker_port of swiw_config(). */
	uint16_t port;
};

/*
 * Connects to the broker of the caller's network namespace, starting one
 * (posix_spawn, detached, stdio on /dev/null) if none runs, and returns
 * the session in *@out. A session holds two sockets with close-on-exec.
 * Returns 0, or:
 *   ENOENT      no swiw-broker executable was found (the paths tried are
 *               logged);
 *   EADDRINUSE  the broker could not listen on its TCP port (another
 *               program has it: choose broker_port / SWIW_BROKER_PORT);
 *   EBUSY       a broker serving another port runs in this namespace;
 *   EPROTONOSUPPORT  the running broker speaks another protocol version
 *               (an older one still serving other processes);
 *   EIO         the broker started but failed (its exit status is logged);
 *   ETIMEDOUT, ECONNREFUSED  the broker did not answer (brokers exiting
 *               as we came are tried again for five seconds);
 *   ENOMEM, EMFILE, ...
 * Every failure is also logged once with what to do about it.
 */
int swiw_broker_open(const struct swiw_broker_opts *opts,
		     struct swiw_broker **out);

/*
 * Ends the session: the broker drops its QPs and closes connections it
 * still holds for them. Handed-over sockets are the caller's already.
 */
void swiw_broker_close(struct swiw_broker *b);

/*
 * The event socket: readable when a connection was handed over (call
 * swiw_broker_recv_conn() until EAGAIN); EPOLLHUP when the broker is gone
 * (swiw_broker_recv_conn() then says ENOTCONN). Non-blocking.
 */
int swiw_broker_event_fd(const struct swiw_broker *b);

uint16_t swiw_broker_port(const struct swiw_broker *b);
pid_t swiw_broker_pid(const struct swiw_broker *b);

/*
 * Requests, each one round trip to the broker (tens of microseconds);
 * they return 0 or ENOTCONN (broker gone), ETIMEDOUT (no answer in 5 s),
 * EPROTO (a reply that makes no sense), or as listed.
 *
 * qp_alloc: a QPN unique in the namespace, registered to this session
 *   (ENOSPC: the session or the broker holds too many).
 * qp_free: forgets it; connections held for it are rejected (ENOENT: not
 *   registered; EPERM: another session's).
 * expect: the QP is in RTR with (@peer_gid, @peer_qpn) and receive PSN
 *   @rq_psn. As RESPONDER it takes one matching connection, now or held
 *   from before; as INITIATOR incoming Requests for it are rejected
 *   (ROLE). Calling it again replaces the expectation (a QP that was
 *   reset and connects anew). EINVAL: bad role, peer QPN or PSN.
 * sq_psn: the QP has its send PSN (RTS): Requests that could not be
 *   checked without it are settled (swiw_broker_psn_check()).
 * unexpect: back to registered without expectation (QP reset): later
 *   Requests are held again.
 */
int swiw_broker_qp_alloc(struct swiw_broker *b, uint32_t *qpn);
int swiw_broker_qp_free(struct swiw_broker *b, uint32_t qpn);
int swiw_broker_expect(struct swiw_broker *b, uint32_t qpn,
		       const uint8_t peer_gid[16], uint32_t peer_qpn,
		       uint32_t rq_psn, enum swiw_broker_role role);
int swiw_broker_sq_psn(struct swiw_broker *b, uint32_t qpn, uint32_t sq_psn);
int swiw_broker_unexpect(struct swiw_broker *b, uint32_t qpn);

/* A connection the broker handed over. */
struct swiw_broker_conn {
	int fd; /* connected TCP socket: non-blocking, close-on-exec, NODELAY */
	uint32_t qpn; /* the local QP it is for */
	uint32_t peer_qpn; /* the Request's src_qpn */
	uint64_t nonce; /* the Request's nonce: echo it in the Accept */
	struct sockaddr_in6 peer; /* IPv4 as ::ffff:a.b.c.d */
	struct sockaddr_in6 local;
	uint16_t req_len; /* the MPA Request, exactly as received */
	uint8_t req[SWIW_BROKER_REQ_MAX];
};

/*
 * Takes one handed-over connection; the caller owns c->fd afterwards.
 * Returns 0, EAGAIN (none now), ENOTCONN (the broker is gone: no more will
 * come; reopen for new QPs), or EPROTO (a malformed message, dropped).
 */
int swiw_broker_recv_conn(struct swiw_broker *b, struct swiw_broker_conn *c);

/*
 * The engine's own check of a handed connection against its QP, so that
 * a broker is not trusted blindly: the socket's real peer address is
 * @peer_gid, and the Request in c->req is a well-formed MPA Request whose
 * swiw block names @peer_qpn as source, c->qpn as destination and
 * c->nonce, and passes swiw_broker_psn_check() against the QP's PSN
 * words @rq_psn and @sq_psn. Returns 0, or EACCES (logged with the
 * mismatch).
 */
int swiw_broker_conn_verify(const struct swiw_broker_conn *c,
			    const uint8_t peer_gid[16], uint32_t peer_qpn,
			    uint32_t rq_psn, uint32_t sq_psn);
/* The swiw block of the Request in c->req into *@pd: 0, or EBADMSG. */
int swiw_broker_conn_req(const struct swiw_broker_conn *c,
			 struct swiw_broker_pd *pd);

/* --- connecting out (the initiator) ----------------------------------- */

/*
 * A non-blocking connect that retries (with backoff from 20 ms to 500 ms)
 * until it succeeds or @timeout_ms pass, so that a peer that starts a
 * little later is still reached. It never blocks, so the engine drives it
 * from its epoll loop:
 *
 *   swiw_broker_dial_start(&d, ...);
 *   for (;;) {
 *	err = swiw_broker_dial_step(&d, swiw_broker_now_ms(), &fd);
 *	if (err != EINPROGRESS)
 *		break;       0: fd is connected and the caller's
 *	wait for EPOLLOUT on swiw_broker_dial_fd(&d) (if >= 0), at most
 *	until swiw_broker_dial_due(&d);
 *   }
 *
 * The fd changes from one attempt to the next. After a retryable Reject
 * (swiw_broker_reason_retryable()) the caller closes the connection and
 * calls swiw_broker_dial_retry() to try again within the same deadline.
 */
struct swiw_broker_dial {
	int fd; /* attempt in progress, or -1 */
	int last_err; /* why the last attempt failed */
	unsigned int attempts;
	unsigned int backoff_ms;
	unsigned int timeout_ms;
	uint64_t deadline_ms; /* CLOCK_MONOTONIC, as swiw_broker_now_ms() */
	uint64_t next_ms; /* next attempt, while fd < 0 */
	socklen_t peer_len, local_len;
	struct sockaddr_storage peer;
	struct sockaddr_storage local;
};

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t swiw_broker_now_ms(void);

/*
 * Prepares @d to connect to @peer (the peer's GID at the broker port),
 * from @local if not NULL (the local GID, port 0: the responder checks
 * the source address, so bind it). Starts nothing yet: call
 * swiw_broker_dial_step(). Returns 0, or EINVAL.
 */
int swiw_broker_dial_start(struct swiw_broker_dial *d,
			   const struct sockaddr *peer, socklen_t peer_len,
			   const struct sockaddr *local, socklen_t local_len,
			   unsigned int timeout_ms, uint64_t now_ms);

/*
 * Makes progress. Returns 0 with the connected socket in *@fd (TCP_NODELAY,
 * non-blocking, close-on-exec; the caller's from now on); EINPROGRESS to
 * be called again; ETIMEDOUT when the time is up (d->last_err says why the
 * attempts failed, e.g. ECONNREFUSED; the failure is logged); or the
 * errno of a failure that retrying cannot fix (EADDRNOTAVAIL binding the
 * local address, EAFNOSUPPORT, EMFILE, ...).
 */
int swiw_broker_dial_step(struct swiw_broker_dial *d, uint64_t now_ms, int *fd);

/* The socket to wait on for EPOLLOUT, or -1 to wait for the time only. */
static inline int swiw_broker_dial_fd(const struct swiw_broker_dial *d)
{
	return d->fd;
}

/* When swiw_broker_dial_step() must be called at the latest. */
uint64_t swiw_broker_dial_due(const struct swiw_broker_dial *d);

/*
 * Schedules another attempt after the connection it returned failed for a
 * reason @err worth retrying (ECONNRESET, or a NOT_READY Reject). Returns
 * EINPROGRESS (continue with swiw_broker_dial_step()) or ETIMEDOUT.
 */
int swiw_broker_dial_retry(struct swiw_broker_dial *d, int err,
			   uint64_t now_ms);

/* Abandons an attempt in progress. */
void swiw_broker_dial_cancel(struct swiw_broker_dial *d);

/* The same, blocking the calling thread: for tools and tests. */
int swiw_broker_dial_blocking(const struct sockaddr *peer, socklen_t peer_len,
			      const struct sockaddr *local, socklen_t local_len,
			      unsigned int timeout_ms, int *fd);

#endif /* SWIW_BROKER_H */
