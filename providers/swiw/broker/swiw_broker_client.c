// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The client side of the connection broker (swiw_broker.h): finding or
 * starting the broker of this network namespace, the session's requests,
 * handed-over connections, and connecting out with retries.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "swiw_broker.h"
#include "swiw_broker_proto.h"
#include "swiw_config.h"
#include "swiw_log.h"
#include "swiw_mpa.h"

#ifndef SWIW_BROKER_PATH
#define SWIW_BROKER_PATH "/usr/libexec/swiw/swiw-broker"
#endif
#define SWIW_BROKER_FILE "swiw-broker"

/* Exit status of "swiw-broker --spawned" (broker/swiw_broker_main.c). */
#define BROKER_EXIT_READY 0 /* a broker serves the namespace now */
#define BROKER_EXIT_USAGE 2
#define BROKER_EXIT_PORT 3 /* the TCP port is taken */

/* How long a request may wait for its reply. */
#define BROKER_REPLY_TIMEOUT_MS 5000
/* How long a started broker has to accept the first connection. */
#define BROKER_START_TIMEOUT_MS 3000
/*
 * How long an open keeps trying when brokers close under it (idle exit):
 * each refusal means one exited, so a count of attempts would be used up
 * by a busy machine's scheduling, not by a fault.
 */
#define BROKER_OPEN_TIMEOUT_MS 5000

#define DIAL_BACKOFF_MIN_MS 20
#define DIAL_BACKOFF_MAX_MS 500

extern char **environ;

struct swiw_broker {
	pthread_mutex_t lock; /* one request at a time on ctl */
	int ctl; /* control socket: requests and replies */
	int evt; /* event socket: CONN messages, non-blocking */
	uint32_t seq;
	uint16_t port;
	pid_t broker_pid;
};

uint64_t swiw_broker_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void set_timeouts(int fd, unsigned int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000,
			      .tv_usec = (suseconds_t)(ms % 1000) * 1000 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* --- finding and starting the broker ---------------------------------- */

/* The uid of the last broker this thread found untrusted, for the message. */
static __thread uid_t broker_uid;

/*
 * The abstract name is anybody's to take: a broker is trusted only if it
 * runs as this process's user or as root (EACCES, with its uid in
 * *@uid, otherwise), so another user cannot stand in for it.
 */
static int ctl_trusted(int fd, uid_t *uid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return errno;
	*uid = cred.uid;
	return cred.uid == geteuid() || cred.uid == 0 ? 0 : EACCES;
}

/* Connects a control socket to the namespace's broker: 0 or an errno. */
static int ctl_connect(int *out)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				    strlen(SWIW_BP_NAME));
	int fd, err;

	memcpy(sun.sun_path + 1, SWIW_BP_NAME, strlen(SWIW_BP_NAME));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	set_timeouts(fd, BROKER_REPLY_TIMEOUT_MS);
	if (connect(fd, (struct sockaddr *)&sun, len)) {
		err = errno;
		close(fd);
		return err == EAGAIN ? ETIMEDOUT : err;
	}
	err = ctl_trusted(fd, &broker_uid);
	if (err) {
		close(fd);
		return err;
	}
	*out = fd;
	return 0;
}

/* "<dir of the object holding this code>/<rel>" if executable. */
static bool path_beside_us(const char *rel, char *buf, size_t size)
{
	Dl_info info;
	const char *slash;
	int n;

	if (!dladdr((void *)swiw_broker_open, &info) || !info.dli_fname)
		return false;
	slash = strrchr(info.dli_fname, '/');
	if (!slash)
		return false;
	n = snprintf(buf, size, "%.*s/%s", (int)(slash - info.dli_fname),
		     info.dli_fname, rel);
	return n > 0 && (size_t)n < size && !access(buf, X_OK);
}

static int broker_path(const struct swiw_broker_opts *o, char *buf, size_t size)
{
	/* Not from the caller of a privileged program (AT_SECURE). */
	const char *env = secure_getenv("SWIW_BROKER");

	if (o && o->path) {
		snprintf(buf, size, "%s", o->path);
	} else if (env && *env) {
		snprintf(buf, size, "%s", env);
	} else if (path_beside_us(SWIW_BROKER_FILE, buf, size) ||
		   path_beside_us("../bin/" SWIW_BROKER_FILE, buf, size)) {
		return 0;
	} else {
		snprintf(buf, size, "%s", SWIW_BROKER_PATH);
	}
	if (access(buf, X_OK)) {
		swiw_err(
			"cannot start the connection broker: %s: %s (set SWIW_BROKER to the swiw-broker executable)",
			buf, strerror(errno));
		return ENOENT;
	}
	return 0;
}

/* The environment without LD_PRELOAD: the broker needs no interposer. */
static char **broker_env(void)
{
	size_t n = 0, i, j = 0;
	char **env;

	while (environ && environ[n])
		n++;
	env = calloc(n + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11))
			env[j++] = environ[i];
	return env;
}

/*
 * Starts "swiw-broker --spawned --port N" detached: its own session,
 * default signal handling, stdio on /dev/null, no inherited descriptors.
 * That process binds the broker's names, forks the daemon and exits; its
 * exit status says whether a broker now serves the namespace. Returns 0
 * (*@known false if that status could not be read), or an errno after
 * logging why.
 */
static int broker_spawn(const char *path, uint16_t port, bool *known)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	char portstr[8], *argv[5];
	sigset_t none, all;
	char **env;
	pid_t pid;
	int err, st = 0;

	snprintf(portstr, sizeof(portstr), "%u", port);
	argv[0] = (char *)path;
	argv[1] = (char *)"--spawned";
	argv[2] = (char *)"--port";
	argv[3] = portstr;
	argv[4] = NULL;
	env = broker_env();
	if (!env)
		return ENOMEM;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF |
					      POSIX_SPAWN_SETSID);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
#if defined(__GLIBC__) && \
	(__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
#endif
	*known = false;
	err = posix_spawn(&pid, path, &fa, &at, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	free(env);
	if (err) {
		swiw_err("cannot start the connection broker %s: %s", path,
			 strerror(err));
		return err;
	}
	swiw_info("started the connection broker %s (port %u)", path, port);
	/*
	 * It exits as soon as the daemon listens. ECHILD: the program reaps
	 * children itself (or ignores SIGCHLD); connecting will tell.
	 */
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			return 0;
	}
	*known = true;
	if (WIFEXITED(st) && WEXITSTATUS(st) == BROKER_EXIT_READY)
		return 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == BROKER_EXIT_PORT) {
		swiw_err(
			"the connection broker cannot listen on TCP port %u: another program uses it; choose another port with broker_port in swiw.conf or SWIW_BROKER_PORT, the same on every host",
			port);
		return EADDRINUSE;
	}
	if (WIFEXITED(st))
		swiw_err(
			"the connection broker %s failed to start (exit status %d)",
			path, WEXITSTATUS(st));
	else
		swiw_err("the connection broker %s failed to start (signal %d)",
			 path, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	/* Not ECONNREFUSED: starting it again would fail again. */
	return EIO;
}

/* --- the session ------------------------------------------------------ */

static int map_io_err(int err)
{
	switch (err) {
	case EPIPE:
	case ECONNRESET:
	case ENOTCONN:
		return ENOTCONN;
	case EAGAIN:
		return ETIMEDOUT;
	default:
		return err;
	}
}

/*
 * Sends HELLO with the event socket's other end and reads the reply.
 * Returns 0, or an errno (ENOTCONN: the broker closed the session, as an
 * exiting one does).
 */
static int hello(struct swiw_broker *b, uint16_t port)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctrl;
	struct swiw_bp_hello req, rep;
	struct iovec iov = { .iov_base = &req, .iov_len = sizeof(req) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctrl.buf,
			     .msg_controllen = sizeof(ctrl.buf) };
	struct cmsghdr *cm;
	int sv[2], err = 0;
	ssize_t n;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return errno;
	memset(&req, 0, sizeof(req));
	req.hdr.type = SWIW_BP_HELLO;
	req.hdr.len = sizeof(req);
	req.hdr.seq = ++b->seq;
	req.version = SWIW_BP_VERSION;
	req.pid = (uint32_t)getpid();
	req.port = port;
	memset(&ctrl, 0, sizeof(ctrl));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &sv[1], sizeof(int));
	if (sendmsg(b->ctl, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(req))
		err = map_io_err(errno);
	close(sv[1]);
	if (err)
		goto fail;
	n = recv(b->ctl, &rep, sizeof(rep), 0);
	if (n <= 0) {
		err = n ? map_io_err(errno) : ENOTCONN;
		goto fail;
	}
	if ((size_t)n < sizeof(rep) || rep.hdr.type != SWIW_BP_HELLO ||
	    rep.hdr.seq != req.hdr.seq) {
		err = EPROTO;
		goto fail;
	}
	if (rep.hdr.status || rep.version != SWIW_BP_VERSION) {
		swiw_err(
			"the connection broker of this network namespace (pid %u) speaks protocol version %u, this library %u; it exits once idle, or stop it",
			rep.pid, rep.version, SWIW_BP_VERSION);
		err = EPROTONOSUPPORT;
		goto fail;
	}
	if (rep.port != port) {
		swiw_err(
			"the connection broker of this network namespace (pid %u) serves TCP port %u, this program wants %u (broker_port, SWIW_BROKER_PORT): use the same port everywhere",
			rep.pid, rep.port, port);
		err = EBUSY;
		goto fail;
	}
	b->evt = sv[0];
	b->port = rep.port;
	b->broker_pid = (pid_t)rep.pid;
	fcntl(b->evt, F_SETFL, fcntl(b->evt, F_GETFL) | O_NONBLOCK);
	return 0;
fail:
	close(sv[0]);
	return err;
}

/*
 * Connects a control socket, starting a broker if none answers: 0 or an
 * errno. ECONNREFUSED after a start means the broker that made ours
 * step aside was exiting itself: the caller goes round again.
 */
static int session_connect(const struct swiw_broker_opts *o, uint16_t port,
			   int *fd)
{
	char path[PATH_MAX];
	bool known;
	uint64_t end;
	int err;

	err = ctl_connect(fd);
	if (err != ECONNREFUSED)
		return err;
	err = broker_path(o, path, sizeof(path));
	if (!err)
		err = broker_spawn(path, port, &known);
	if (err)
		return err;
	err = ctl_connect(fd);
	if (known)
		return err;
	/* Its exit status was not ours to see: give it time to listen. */
	end = swiw_broker_now_ms() + BROKER_START_TIMEOUT_MS;
	while (err == ECONNREFUSED && swiw_broker_now_ms() < end) {
		sleep_ms(10);
		err = ctl_connect(fd);
	}
	return err;
}

int swiw_broker_open(const struct swiw_broker_opts *opts,
		     struct swiw_broker **out)
{
	uint16_t port = opts && opts->port ?
				opts->port :
				(uint16_t)swiw_config()->broker_port;
	struct swiw_broker *b;
	uint64_t end = swiw_broker_now_ms() + BROKER_OPEN_TIMEOUT_MS;
	unsigned int attempt;
	int err;

	if (!out)
		return EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return ENOMEM;
	pthread_mutex_init(&b->lock, NULL);
	b->evt = -1;
	for (attempt = 0;; attempt++) {
		/* After two misses, let the exiting broker finish. */
		if (attempt >= 2)
			sleep_ms(attempt < 10 ? 5 * attempt : 50);
		err = session_connect(opts, port, &b->ctl);
		if (!err) {
			err = hello(b, port);
			if (!err) {
				*out = b;
				return 0;
			}
			close(b->ctl);
		}
		/* A broker closing as we came (idle exit): go again. */
		if ((err != ECONNREFUSED && err != ENOTCONN) ||
		    swiw_broker_now_ms() >= end)
			break;
	}
	if (err == ECONNREFUSED || err == ENOTCONN || err == ETIMEDOUT)
		swiw_err(
			"cannot reach the connection broker of this network namespace: %s",
			strerror(err));
	else if (err == EACCES)
		swiw_err(
			"the connection broker of this network namespace runs as uid %u, neither this user nor root: not trusted (have root run swiw-broker for every user, swiw(7))",
			(unsigned int)broker_uid);
	pthread_mutex_destroy(&b->lock);
	free(b);
	return err;
}

void swiw_broker_close(struct swiw_broker *b)
{
	if (!b)
		return;
	close(b->ctl);
	close(b->evt);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

int swiw_broker_event_fd(const struct swiw_broker *b)
{
	return b->evt;
}

uint16_t swiw_broker_port(const struct swiw_broker *b)
{
	return b->port;
}

pid_t swiw_broker_pid(const struct swiw_broker *b)
{
	return b->broker_pid;
}

/* One request, one reply of at least @rep_len octets. */
static int request(struct swiw_broker *b, void *req, size_t req_len, void *rep,
		   size_t rep_len)
{
	struct swiw_bp_hdr *rq = req, *rp = rep;
	ssize_t n;
	int err = 0;

	pthread_mutex_lock(&b->lock);
	rq->len = (uint16_t)req_len;
	rq->seq = ++b->seq;
	if (send(b->ctl, req, req_len, MSG_NOSIGNAL) != (ssize_t)req_len) {
		err = map_io_err(errno);
		goto out;
	}
	n = recv(b->ctl, rep, rep_len, 0);
	if (n <= 0) {
		err = n ? map_io_err(errno) : ENOTCONN;
		goto out;
	}
	if ((size_t)n < sizeof(*rp) || rp->type != rq->type ||
	    rp->seq != rq->seq) {
		err = EPROTO;
		goto out;
	}
	err = rp->status;
	if (!err && (size_t)n < rep_len)
		err = EPROTO;
	if (err < 0)
		err = EPROTO;
out:
	pthread_mutex_unlock(&b->lock);
	return err;
}

int swiw_broker_qp_alloc(struct swiw_broker *b, uint32_t *qpn)
{
	struct swiw_bp_hdr req = { .type = SWIW_BP_QP_ALLOC };
	struct swiw_bp_qp rep;
	int err;

	if (!b || !qpn)
		return EINVAL;
	err = request(b, &req, sizeof(req), &rep, sizeof(rep));
	if (err)
		return err;
	if (rep.qpn < SWIW_BROKER_QPN_MIN || rep.qpn > SWIW_BROKER_QPN_MAX)
		return EPROTO;
	*qpn = rep.qpn;
	return 0;
}

static int qp_request(struct swiw_broker *b, uint16_t type, uint32_t qpn)
{
	struct swiw_bp_qp req = { .hdr.type = type, .qpn = qpn };
	struct swiw_bp_hdr rep;

	if (!b)
		return EINVAL;
	return request(b, &req, sizeof(req), &rep, sizeof(rep));
}

int swiw_broker_qp_free(struct swiw_broker *b, uint32_t qpn)
{
	return qp_request(b, SWIW_BP_QP_FREE, qpn);
}

int swiw_broker_unexpect(struct swiw_broker *b, uint32_t qpn)
{
	return qp_request(b, SWIW_BP_UNEXPECT, qpn);
}

int swiw_broker_expect(struct swiw_broker *b, uint32_t qpn,
		       const uint8_t peer_gid[16], uint32_t peer_qpn,
		       uint32_t rq_psn, enum swiw_broker_role role)
{
	struct swiw_bp_expect req = { .hdr.type = SWIW_BP_EXPECT };
	struct swiw_bp_hdr rep;

	if (!b || !peer_gid || peer_qpn > SWIW_BROKER_QPN_MAX ||
	    rq_psn > SWIW_BROKER_PSN_MASK ||
	    (role != SWIW_BROKER_INITIATOR && role != SWIW_BROKER_RESPONDER))
		return EINVAL;
	req.qpn = qpn;
	req.peer_qpn = peer_qpn;
	req.rq_psn = rq_psn;
	memcpy(req.peer_gid, peer_gid, 16);
	req.role = (uint8_t)role;
	return request(b, &req, sizeof(req), &rep, sizeof(rep));
}

int swiw_broker_sq_psn(struct swiw_broker *b, uint32_t qpn, uint32_t sq_psn)
{
	struct swiw_bp_psn req = { .hdr.type = SWIW_BP_SQ_PSN };
	struct swiw_bp_hdr rep;

	if (!b || sq_psn > SWIW_BROKER_PSN_MASK)
		return EINVAL;
	req.qpn = qpn;
	req.sq_psn = sq_psn;
	return request(b, &req, sizeof(req), &rep, sizeof(rep));
}

static void bp_addr_get(const struct swiw_bp_addr *a, struct sockaddr_in6 *s)
{
	memset(s, 0, sizeof(*s));
	s->sin6_family = AF_INET6;
	memcpy(&s->sin6_addr, a->addr, 16);
	s->sin6_port = htons(a->port);
	s->sin6_scope_id = a->scope_id;
}

int swiw_broker_recv_conn(struct swiw_broker *b, struct swiw_broker_conn *c)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} ctrl;
	struct swiw_bp_conn m;
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctrl.buf,
			     .msg_controllen = sizeof(ctrl.buf) };
	struct cmsghdr *cm;
	int fd = -1, extra;
	size_t i, nfd;
	ssize_t n;

	if (!b || !c)
		return EINVAL;
	n = recvmsg(b->evt, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return errno == EAGAIN ? EAGAIN : map_io_err(errno);
	if (n == 0)
		return ENOTCONN;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < nfd; i++) {
			memcpy(&extra, CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(int));
			if (fd < 0)
				fd = extra;
			else
				close(extra);
		}
	}
	if (fd < 0 || (size_t)n < sizeof(m) || (mh.msg_flags & MSG_CTRUNC) ||
	    m.hdr.type != SWIW_BP_CONN || m.req_len > sizeof(m.req) ||
	    m.req_len < 20) {
		if (fd >= 0)
			close(fd);
		swiw_warn("connection broker: malformed hand-over dropped");
		return EPROTO;
	}
	c->fd = fd;
	c->qpn = m.qpn;
	c->peer_qpn = m.peer_qpn;
	c->nonce = (uint64_t)m.nonce_hi << 32 | m.nonce_lo;
	bp_addr_get(&m.peer, &c->peer);
	bp_addr_get(&m.local, &c->local);
	c->req_len = m.req_len;
	memcpy(c->req, m.req, m.req_len);
	return 0;
}

static void addr_str(const void *a16, char *buf, size_t size)
{
	const uint8_t *a = a16;

	if (swiw_broker_gid_is_v4(a))
		inet_ntop(AF_INET, a + 12, buf, (socklen_t)size);
	else
		inet_ntop(AF_INET6, a, buf, (socklen_t)size);
}

int swiw_broker_conn_req(const struct swiw_broker_conn *c,
			 struct swiw_broker_pd *pd)
{
	const u8 *p;
	u16 plen;

	if (swiw_mpa_frame_ulp_pd(c->req, c->req_len, true, &p, &plen) ||
	    swiw_broker_pd_decode(p, plen, pd) ||
	    pd->type != SWIW_BROKER_PD_REQUEST)
		return EBADMSG;
	return 0;
}

int swiw_broker_conn_verify(const struct swiw_broker_conn *c,
			    const uint8_t peer_gid[16], uint32_t peer_qpn,
			    uint32_t rq_psn, uint32_t sq_psn)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	uint8_t real[16];
	struct swiw_broker_pd pd;
	char a[INET6_ADDRSTRLEN], w[INET6_ADDRSTRLEN];

	if (!c || !peer_gid)
		return EINVAL;
	if (getpeername(c->fd, (struct sockaddr *)&ss, &sl)) {
		swiw_warn("QP %u: handed connection has no peer: %s", c->qpn,
			  strerror(errno));
		return EACCES;
	}
	memset(real, 0, sizeof(real));
	if (ss.ss_family == AF_INET) {
		real[10] = real[11] = 0xff;
		memcpy(real + 12, &((struct sockaddr_in *)&ss)->sin_addr, 4);
	} else if (ss.ss_family == AF_INET6) {
		memcpy(real, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
	}
	if (memcmp(real, peer_gid, 16)) {
		addr_str(real, a, sizeof(a));
		addr_str(peer_gid, w, sizeof(w));
		swiw_warn(
			"QP %u: handed connection comes from %s, the QP expects %s: refused",
			c->qpn, a, w);
		return EACCES;
	}
	if (swiw_broker_conn_req(c, &pd) || pd.src_qpn != peer_qpn ||
	    pd.dst_qpn != c->qpn || pd.nonce != c->nonce ||
	    c->peer_qpn != peer_qpn) {
		swiw_warn(
			"QP %u: handed connection's Request does not name QP %u as its source: refused",
			c->qpn, peer_qpn);
		return EACCES;
	}
	if (swiw_broker_psn_check(&pd, rq_psn, sq_psn)) {
		swiw_warn(
			"QP %u: handed connection's Request does not carry the PSNs the QP was given: refused",
			c->qpn);
		return EACCES;
	}
	return 0;
}

/* --- connecting out ---------------------------------------------------- */

static void sockaddr_str(const struct sockaddr_storage *ss, char *buf,
			 size_t size)
{
	char a[INET6_ADDRSTRLEN] = "?";
	unsigned int port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &s->sin_addr, a, sizeof(a));
		port = ntohs(s->sin_port);
		snprintf(buf, size, "%s port %u", a, port);
	} else {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &s->sin6_addr, a, sizeof(a));
		port = ntohs(s->sin6_port);
		snprintf(buf, size, "%s port %u", a, port);
	}
}

int swiw_broker_dial_start(struct swiw_broker_dial *d,
			   const struct sockaddr *peer, socklen_t peer_len,
			   const struct sockaddr *local, socklen_t local_len,
			   unsigned int timeout_ms, uint64_t now_ms)
{
	if (!d || !peer || !peer_len || peer_len > sizeof(d->peer) ||
	    local_len > sizeof(d->local) || (local && !local_len) ||
	    (peer->sa_family != AF_INET && peer->sa_family != AF_INET6) ||
	    (local && local->sa_family != peer->sa_family))
		return EINVAL;
	memset(d, 0, sizeof(*d));
	d->fd = -1;
	memcpy(&d->peer, peer, peer_len);
	d->peer_len = peer_len;
	if (local) {
		memcpy(&d->local, local, local_len);
		d->local_len = local_len;
	}
	d->timeout_ms = timeout_ms;
	d->deadline_ms = now_ms + timeout_ms;
	d->next_ms = now_ms;
	d->backoff_ms = DIAL_BACKOFF_MIN_MS;
	return 0;
}

uint64_t swiw_broker_dial_due(const struct swiw_broker_dial *d)
{
	if (d->fd >= 0 || d->next_ms > d->deadline_ms)
		return d->deadline_ms;
	return d->next_ms;
}

void swiw_broker_dial_cancel(struct swiw_broker_dial *d)
{
	if (d && d->fd >= 0) {
		close(d->fd);
		d->fd = -1;
	}
}

static bool dial_retryable(int err)
{
	switch (err) {
	case ECONNREFUSED: /* no broker there (yet) */
	case ECONNRESET:
	case ECONNABORTED:
	case ETIMEDOUT:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case EHOSTDOWN:
	case ENETDOWN:
	case EAGAIN: /* no local port left for the moment */
	case EADDRNOTAVAIL: /* from connect(): the same */
		return true;
	default:
		return false;
	}
}

static int dial_give_up(struct swiw_broker_dial *d, int err)
{
	char p[INET6_ADDRSTRLEN + 16];

	swiw_broker_dial_cancel(d);
	sockaddr_str(&d->peer, p, sizeof(p));
	if (err == ETIMEDOUT)
		swiw_err(
			"cannot connect to the peer's swiw broker at %s: %s (%u attempts in %u ms); is the peer's QP there and is broker_port the same on both hosts?",
			p, strerror(d->last_err ? d->last_err : ETIMEDOUT),
			d->attempts, d->timeout_ms);
	else
		swiw_err("cannot connect to the peer's swiw broker at %s: %s",
			 p, strerror(err));
	return err;
}

/* The next attempt after a failure, with jittered exponential backoff. */
static int dial_backoff(struct swiw_broker_dial *d, int err, uint64_t now_ms)
{
	unsigned int jitter = 0, wait = d->backoff_ms;

	swiw_broker_dial_cancel(d);
	d->last_err = err;
	if (now_ms >= d->deadline_ms)
		return dial_give_up(d, ETIMEDOUT);
	if (getrandom(&jitter, sizeof(jitter), GRND_NONBLOCK) != sizeof(jitter))
		jitter = (unsigned int)now_ms * 2654435761u;
	wait += jitter % (wait / 2 + 1);
	d->next_ms = now_ms + wait;
	d->backoff_ms = d->backoff_ms * 2 > DIAL_BACKOFF_MAX_MS ?
				DIAL_BACKOFF_MAX_MS :
				d->backoff_ms * 2;
	return EINPROGRESS;
}

static int dial_attempt(struct swiw_broker_dial *d, uint64_t now_ms, int *out)
{
	int one = 1, fd, err;

	fd = socket(d->peer.ss_family,
		    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
	if (fd < 0)
		return dial_give_up(d, errno);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (d->local_len &&
	    bind(fd, (struct sockaddr *)&d->local, d->local_len)) {
		char l[INET6_ADDRSTRLEN + 16];

		err = errno;
		close(fd);
		sockaddr_str(&d->local, l, sizeof(l));
		swiw_err(
			"cannot bind the connection to the local GID's address %s: %s",
			l, strerror(err));
		return err;
	}
	d->attempts++;
	if (!connect(fd, (struct sockaddr *)&d->peer, d->peer_len)) {
		*out = fd;
		return 0;
	}
	err = errno;
	if (err == EINPROGRESS) {
		d->fd = fd;
		return EINPROGRESS;
	}
	close(fd);
	if (!dial_retryable(err))
		return dial_give_up(d, err);
	return dial_backoff(d, err, now_ms);
}

int swiw_broker_dial_step(struct swiw_broker_dial *d, uint64_t now_ms, int *fd)
{
	struct pollfd pfd;
	socklen_t sl;
	int err = 0;

	if (!d || !fd)
		return EINVAL;
	if (d->fd < 0) {
		if (now_ms >= d->deadline_ms)
			return dial_give_up(d, ETIMEDOUT);
		if (now_ms < d->next_ms)
			return EINPROGRESS;
		return dial_attempt(d, now_ms, fd);
	}
	pfd.fd = d->fd;
	pfd.events = POLLOUT;
	if (poll(&pfd, 1, 0) <= 0) {
		if (now_ms >= d->deadline_ms) {
			d->last_err = ETIMEDOUT;
			return dial_give_up(d, ETIMEDOUT);
		}
		return EINPROGRESS;
	}
	sl = sizeof(err);
	if (getsockopt(d->fd, SOL_SOCKET, SO_ERROR, &err, &sl))
		err = errno;
	if (!err) {
		*fd = d->fd;
		d->fd = -1;
		return 0;
	}
	if (!dial_retryable(err))
		return dial_give_up(d, err);
	return dial_backoff(d, err, now_ms);
}

int swiw_broker_dial_retry(struct swiw_broker_dial *d, int err, uint64_t now_ms)
{
	if (!d)
		return EINVAL;
	return dial_backoff(d, err, now_ms);
}

int swiw_broker_dial_blocking(const struct sockaddr *peer, socklen_t peer_len,
			      const struct sockaddr *local, socklen_t local_len,
			      unsigned int timeout_ms, int *fd)
{
	struct swiw_broker_dial d;
	struct pollfd pfd;
	uint64_t now = swiw_broker_now_ms(), due;
	int err;

	err = swiw_broker_dial_start(&d, peer, peer_len, local, local_len,
				     timeout_ms, now);
	if (err)
		return err;
	for (;;) {
		err = swiw_broker_dial_step(&d, now, fd);
		if (err != EINPROGRESS)
			return err;
		due = swiw_broker_dial_due(&d);
		now = swiw_broker_now_ms();
		pfd.fd = swiw_broker_dial_fd(&d);
		pfd.events = POLLOUT;
		poll(&pfd, 1, due > now ? (int)(due - now) : 0);
		now = swiw_broker_now_ms();
	}
}
