// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * swiw-broker: the connection broker of one network namespace (see
 * swiw_broker.h for its place and swiw(7), CONNECTING QUEUE PAIRS, for
 * the user's view).
 *
 * Start-up order makes the races harmless:
 * 1. bind the abstract unix name: the lock. If it is taken, another
 *    broker serves the namespace and this one exits 0 at once;
 * 2. listen on the TCP port on every address (one dual-stack socket, or
 *    IPv4 alone where the namespace has no IPv6), retrying for two
 *    seconds in case the previous broker is still closing it;
 * 3. with --spawned (a client started us), fork: the parent exits 0 once
 *    both listen, which tells the client to connect; the child, in its
 *    own session, is the daemon.
 * It exits when it has had no client and no pending connection for
 * idle_ms: it closes the unix name first, so a client arriving then
 * starts the next broker, whose TCP bind waits for ours to close.
 *
 * Under systemd (swiw-broker.socket) it binds neither: it takes both
 * sockets from the service manager (LISTEN_FDS), which holds them while
 * no broker runs and starts one when a client or a peer comes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "swiw_broker_daemon.h"
#include "swiw_config.h"
#include "swiw_log.h"

_Static_assert((int)BRK_LOG_ERR == (int)SWIW_LOG_ERR &&
		       (int)BRK_LOG_DEBUG == (int)SWIW_LOG_DEBUG,
	       "log levels follow swiw_log.h");

#define DEFAULT_IDLE_MS 3000
#define DEFAULT_REQUEST_MS 5000 /* SWIW_MPA_REQUEST_TIMEOUT_MS */
#define DEFAULT_HOLD_MS 5000
#define DEFAULT_HELLO_MS 5000
#define DEFAULT_MAX_PENDING 16384
#define DEFAULT_MAX_PER_PEER 4096
#define DEFAULT_MAX_QPS (1u << 20)
#define DEFAULT_MAX_SESSION_QPS (1u << 18)
#define DEFAULT_MAX_SESSIONS 4096
/* A quarter each: it takes four local users to crowd out a fifth. */
#define DEFAULT_MAX_USER_QPS (DEFAULT_MAX_QPS / 4)
#define DEFAULT_MAX_USER_SESSIONS (DEFAULT_MAX_SESSIONS / 4)
#define TCP_BIND_WAIT_MS 2000

/* --- logging ------------------------------------------------------------- */

static int log_level = BRK_LOG_WARN;
static bool log_syslog;
static FILE *log_file; /* NULL: stderr */

void brk_log(int level, const char *fmt, ...)
{
	static const int prio[] = { LOG_ERR, LOG_ERR, LOG_WARNING, LOG_INFO,
				    LOG_DEBUG };
	char buf[512];
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (log_syslog) {
		syslog(prio[level], "%s", buf);
		return;
	}
	fprintf(log_file ? log_file : stderr, "swiw-broker[%d]: %s\n",
		(int)getpid(), buf);
	if (log_file)
		fflush(log_file);
}

void brk_log_peer(int level, const char *fmt, ...)
{
	/* A burst of 20, then 5 a second; the rest are counted. */
	static uint64_t last;
	static unsigned int tokens = 20, dropped;
	uint64_t now = brk_now();
	char buf[512];
	va_list ap;

	if (level > log_level)
		return;
	if (now - last >= 200) {
		tokens += (unsigned int)((now - last) / 200);
		if (tokens > 20)
			tokens = 20;
		last = now;
	}
	if (!tokens) {
		dropped++;
		return;
	}
	tokens--;
	if (dropped) {
		brk_log(level, "(%u messages about peers suppressed)", dropped);
		dropped = 0;
	}
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	brk_log(level, "%s", buf);
}

void brk_addr_str(const uint8_t a[16], char *buf, size_t size)
{
	static const uint8_t v4[12] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
	};

	if (!memcmp(a, v4, sizeof(v4)))
		inet_ntop(AF_INET, a + 12, buf, (socklen_t)size);
	else
		inet_ntop(AF_INET6, a, buf, (socklen_t)size);
}

uint64_t brk_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* --- epoll ----------------------------------------------------------------- */

int brk_epoll_add(struct brk *b, int fd, uint32_t events, struct brk_ev *ev)
{
	struct epoll_event e = { .events = events, .data.ptr = ev };

	if (epoll_ctl(b->ep, EPOLL_CTL_ADD, fd, &e)) {
		brk_log(BRK_LOG_ERR, "epoll_ctl: %s", strerror(errno));
		return errno;
	}
	return 0;
}

int brk_epoll_mod(struct brk *b, int fd, uint32_t events, struct brk_ev *ev)
{
	struct epoll_event e = { .events = events, .data.ptr = ev };

	if (fd < 0)
		return 0;
	return epoll_ctl(b->ep, EPOLL_CTL_MOD, fd, &e) ? errno : 0;
}

void brk_epoll_del(struct brk *b, int fd)
{
	if (fd >= 0)
		epoll_ctl(b->ep, EPOLL_CTL_DEL, fd, NULL);
}

void brk_pause_listeners(struct brk *b)
{
	b->paused = true;
	b->resume_at = brk_now() + 100;
	brk_epoll_mod(b, b->unix_fd, 0, &b->unix_ev);
	brk_epoll_mod(b, b->tcp_fd, 0, &b->tcp_ev);
}

static void resume_listeners(struct brk *b)
{
	b->paused = false;
	brk_epoll_mod(b, b->unix_fd, EPOLLIN, &b->unix_ev);
	brk_epoll_mod(b, b->tcp_fd, EPOLLIN, &b->tcp_ev);
}

/* --- start-up ---------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: swiw-broker [OPTION]...\n"
		"The swiw connection broker of this network namespace: hands out QP\n"
		"numbers and passes incoming connections to the QPs that expect them.\n"
		"Programs using swiw start it when they need it; see swiw(7).\n"
		"\n"
		"  --port N          TCP port (default: broker_port, %u)\n"
		"  --idle-ms N       exit after N ms without clients; 0: never\n"
		"                    (default: $SWIW_BROKER_IDLE_MS, else %u)\n"
		"  --request-ms N    time to receive an MPA Request (%u)\n"
		"  --hold-ms N       time a Request not handed over is held\n"
		"                    (default: $SWIW_BROKER_HOLD_MS, else %u)\n"
		"  --max-pending N   connections not yet handed over (%u)\n"
		"  --max-per-peer N  of those, from one address (%u)\n"
		"  --max-user-qps N  QP numbers of one user but root (%u)\n"
		"  --max-user-clients N  clients of one user but root (%u)\n"
		"  --spawned         started by a client: detach, log to syslog\n"
		"  --help, --version\n"
		"\n"
		"Exit status: 0 serving, or another broker serves this namespace;\n"
		"2 usage; 3 the TCP port is taken; 4 other failure.\n",
		SWIW_BROKER_PORT_DEFAULT, DEFAULT_IDLE_MS, DEFAULT_REQUEST_MS,
		DEFAULT_HOLD_MS, DEFAULT_MAX_PENDING, DEFAULT_MAX_PER_PEER,
		DEFAULT_MAX_USER_QPS, DEFAULT_MAX_USER_SESSIONS);
}

static bool parse_uint(const char *s, unsigned long max, unsigned int *v)
{
	char *end;
	unsigned long n;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	n = strtoul(s, &end, 10);
	if (errno || *end || n > max)
		return false;
	*v = (unsigned int)n;
	return true;
}

static int parse_opts(struct brk_opts *o, int argc, char **argv)
{
	enum {
		O_PORT = 1,
		O_IDLE,
		O_REQ,
		O_HOLD,
		O_PEND,
		O_PEER,
		O_UQPS,
		O_USESS,
		O_SPAWN,
		O_HELP,
		O_VER
	};
	static const struct option lo[] = {
		{ "port", required_argument, NULL, O_PORT },
		{ "idle-ms", required_argument, NULL, O_IDLE },
		{ "request-ms", required_argument, NULL, O_REQ },
		{ "hold-ms", required_argument, NULL, O_HOLD },
		{ "max-pending", required_argument, NULL, O_PEND },
		{ "max-per-peer", required_argument, NULL, O_PEER },
		{ "max-user-qps", required_argument, NULL, O_UQPS },
		{ "max-user-clients", required_argument, NULL, O_USESS },
		{ "spawned", no_argument, NULL, O_SPAWN },
		{ "help", no_argument, NULL, O_HELP },
		{ "version", no_argument, NULL, O_VER },
		{ NULL, 0, NULL, 0 },
	};
	/* Brokers started on demand take their idle and hold times from
	 * here (tests shorten them). */
	const char *idle = secure_getenv("SWIW_BROKER_IDLE_MS");
	const char *hold = secure_getenv("SWIW_BROKER_HOLD_MS");
	unsigned int port = 0;
	bool ok = true;
	int c;

	memset(o, 0, sizeof(*o));
	o->idle_ms = DEFAULT_IDLE_MS;
	if (idle && !parse_uint(idle, 86400000, &o->idle_ms))
		fprintf(stderr,
			"swiw-broker: SWIW_BROKER_IDLE_MS is not a number of ms, ignored\n");
	o->request_ms = DEFAULT_REQUEST_MS;
	o->hold_ms = DEFAULT_HOLD_MS;
	if (hold && (!parse_uint(hold, 600000, &o->hold_ms) || !o->hold_ms)) {
		o->hold_ms = DEFAULT_HOLD_MS;
		fprintf(stderr,
			"swiw-broker: SWIW_BROKER_HOLD_MS is not a number of ms, ignored\n");
	}
	o->hello_ms = DEFAULT_HELLO_MS;
	o->max_pending = DEFAULT_MAX_PENDING;
	o->max_per_peer = DEFAULT_MAX_PER_PEER;
	o->max_qps = DEFAULT_MAX_QPS;
	o->max_session_qps = DEFAULT_MAX_SESSION_QPS;
	o->max_sessions = DEFAULT_MAX_SESSIONS;
	o->max_user_qps = DEFAULT_MAX_USER_QPS;
	o->max_user_sessions = DEFAULT_MAX_USER_SESSIONS;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case O_PORT:
			ok = parse_uint(optarg, 65535, &port) && port;
			break;
		case O_IDLE:
			ok = parse_uint(optarg, 86400000, &o->idle_ms);
			break;
		case O_REQ:
			ok = parse_uint(optarg, 600000, &o->request_ms) &&
			     o->request_ms;
			break;
		case O_HOLD:
			ok = parse_uint(optarg, 600000, &o->hold_ms) &&
			     o->hold_ms;
			break;
		case O_PEND:
			ok = parse_uint(optarg, 1u << 20, &o->max_pending) &&
			     o->max_pending;
			break;
		case O_PEER:
			ok = parse_uint(optarg, 1u << 20, &o->max_per_peer) &&
			     o->max_per_peer;
			break;
		case O_UQPS:
			ok = parse_uint(optarg, DEFAULT_MAX_QPS,
					&o->max_user_qps) &&
			     o->max_user_qps;
			break;
		case O_USESS:
			ok = parse_uint(optarg, DEFAULT_MAX_SESSIONS,
					&o->max_user_sessions) &&
			     o->max_user_sessions;
			break;
		case O_SPAWN:
			o->spawned = true;
			break;
		case O_HELP:
			usage(stdout);
			exit(0);
		case O_VER:
			printf("swiw-broker %s (protocol %u)\n", SWIW_VERSION,
			       SWIW_BP_VERSION);
			exit(0);
		default:
			ok = false;
		}
		if (!ok)
			break;
	}
	if (!ok || optind != argc) {
		if (ok)
			fprintf(stderr,
				"swiw-broker: unexpected argument '%s'\n",
				argv[optind]);
		else if (c != '?')
			fprintf(stderr, "swiw-broker: bad value '%s'\n",
				optarg);
		usage(stderr);
		return BRK_EXIT_USAGE;
	}
	o->port = (uint16_t)(port ? port : swiw_config()->broker_port);
	return 0;
}

/* Descriptors a careless parent left open are not ours to hold. */
static void close_inherited(void)
{
#ifdef SYS_close_range
	if (!syscall(SYS_close_range, 3U, ~0U, 0U))
		return;
#endif
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
}

static void raise_fd_limit(void)
{
	struct rlimit r;

	if (!getrlimit(RLIMIT_NOFILE, &r) && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

/* 0, EADDRINUSE (another broker), or another errno. */
static int unix_listen(struct brk *b)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				    strlen(SWIW_BP_NAME));
	int fd, err;

	memcpy(sun.sun_path + 1, SWIW_BP_NAME, strlen(SWIW_BP_NAME));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (bind(fd, (struct sockaddr *)&sun, len) || listen(fd, 256)) {
		err = errno;
		close(fd);
		return err;
	}
	b->unix_fd = fd;
	return 0;
}

/* Is @ss (of @len) the broker's abstract name? */
static bool is_broker_name(const struct sockaddr_storage *ss, socklen_t len)
{
	const struct sockaddr_un *sun = (const struct sockaddr_un *)ss;
	size_t n = strlen(SWIW_BP_NAME);

	return ss->ss_family == AF_UNIX &&
	       len == offsetof(struct sockaddr_un, sun_path) + 1 + n &&
	       !sun->sun_path[0] && !memcmp(sun->sun_path + 1, SWIW_BP_NAME, n);
}

/*
 * Sockets a service manager opened for us (systemd's socket activation:
 * LISTEN_PID is ours, LISTEN_FDS of them from descriptor 3). The name
 * and the port then stay bound while no broker runs, so that no other
 * user can take them first (swiw-security(7)).
 */
static void inherited_sockets(struct brk *b)
{
	const char *lpid = secure_getenv("LISTEN_PID");
	const char *lfds = secure_getenv("LISTEN_FDS");
	unsigned int pid, n, i;
	struct sockaddr_storage ss;
	socklen_t sl, tl;
	int fd, type;

	if (!lpid || !lfds || !parse_uint(lpid, INT_MAX, &pid) ||
	    pid != (unsigned int)getpid() || !parse_uint(lfds, 64, &n))
		return;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	for (i = 0; i < n; i++) {
		fd = 3 + (int)i;
		sl = sizeof(ss);
		tl = sizeof(type);
		memset(&ss, 0, sizeof(ss));
		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) ||
		    getsockname(fd, (struct sockaddr *)&ss, &sl)) {
			brk_log(BRK_LOG_WARN,
				"inherited descriptor %d is not a socket: ignored",
				fd);
			continue;
		}
		fcntl(fd, F_SETFD, FD_CLOEXEC);
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		if (type == SOCK_SEQPACKET && b->unix_fd < 0 &&
		    is_broker_name(&ss, sl)) {
			b->unix_fd = fd;
		} else if (type == SOCK_STREAM && b->tcp_fd < 0 &&
			   (ss.ss_family == AF_INET ||
			    ss.ss_family == AF_INET6)) {
			b->tcp_fd = fd;
			/* Clients learn the port in HELLO's reply. */
			b->o.port = ntohs(
				ss.ss_family == AF_INET ?
					((struct sockaddr_in *)&ss)->sin_port :
					((struct sockaddr_in6 *)&ss)->sin6_port);
		} else {
			brk_log(BRK_LOG_WARN,
				"inherited socket %d is neither @%s nor a TCP listener: closed",
				fd, SWIW_BP_NAME);
			close(fd);
		}
	}
	brk_log(BRK_LOG_INFO, "socket activated:%s%s",
		b->unix_fd >= 0 ? " @" SWIW_BP_NAME : "",
		b->tcp_fd >= 0 ? " and the TCP port" : "");
}

static int tcp_socket(int family, uint16_t port, int *out)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1, zero = 0, err;

	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;

		s->sin6_family = AF_INET6;
		s->sin6_addr = in6addr_any;
		s->sin6_port = htons(port);
		len = sizeof(*s);
	} else {
		struct sockaddr_in *s = (struct sockaddr_in *)&ss;

		s->sin_family = AF_INET;
		s->sin_addr.s_addr = htonl(INADDR_ANY);
		s->sin_port = htons(port);
		len = sizeof(*s);
	}
	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* One socket for both families: IPv4 peers as ::ffff:a.b.c.d. */
	if (family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, SOMAXCONN)) {
		err = errno;
		close(fd);
		return err;
	}
	*out = fd;
	return 0;
}

static int tcp_listen(struct brk *b)
{
	uint64_t end = brk_now() + TCP_BIND_WAIT_MS;
	struct timespec ts = { 0, 20 * 1000000 };
	int err;

	for (;;) {
		err = tcp_socket(AF_INET6, b->o.port, &b->tcp_fd);
		if (err == EAFNOSUPPORT || err == EADDRNOTAVAIL)
			err = tcp_socket(AF_INET, b->o.port, &b->tcp_fd);
		if (err != EADDRINUSE || brk_now() >= end)
			return err;
		nanosleep(&ts, NULL);
	}
}

static void log_open(const struct brk_opts *o)
{
	const char *path = secure_getenv("SWIW_BROKER_LOG");

	log_level = swiw_config()->log_level;
	if (path && *path) {
		log_file = fopen(path, "ae");
		if (log_file)
			return;
	}
	if (o->spawned) {
		openlog("swiw-broker", LOG_PID | LOG_NDELAY, LOG_DAEMON);
		log_syslog = true;
	}
}

static int signals_open(struct brk *b)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	b->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (b->sig_fd < 0)
		return errno;
	b->sig_ev.kind = BRK_SIGNAL;
	return brk_epoll_add(b, b->sig_fd, EPOLLIN, &b->sig_ev);
}

static void on_signal(struct brk *b)
{
	struct signalfd_siginfo si;

	while (read(b->sig_fd, &si, sizeof(si)) == sizeof(si)) {
		brk_log(BRK_LOG_INFO, "signal %u: exiting", si.ssi_signo);
		b->stop = true;
	}
}

/* --- the loop ---------------------------------------------------------------- */

int brk_setup(struct brk *b)
{
	b->unix_ev.kind = BRK_UNIX_LISTEN;
	b->tcp_ev.kind = BRK_TCP_LISTEN;
	b->ep = epoll_create1(EPOLL_CLOEXEC);
	if (b->ep < 0 || brk_qp_table_init(b) ||
	    brk_epoll_add(b, b->unix_fd, EPOLLIN, &b->unix_ev) ||
	    brk_epoll_add(b, b->tcp_fd, EPOLLIN, &b->tcp_ev))
		return errno ? errno : ENOMEM;
	if (getrandom(b->peer_key, sizeof(b->peer_key), 0) !=
	    sizeof(b->peer_key))
		b->peer_key[0] = brk_now() ^ (uint64_t)getpid() << 32;
	return 0;
}

void brk_timeouts(struct brk *b, uint64_t now, uint64_t *next)
{
	brk_session_timeouts(b, now, next);
	brk_conn_timeouts(b, now, next);
}

static void run(struct brk *b)
{
	struct epoll_event evs[64];
	uint64_t now, next;
	int n, i, timeout;

	while (!b->stop) {
		now = brk_now();
		next = UINT64_MAX;
		brk_timeouts(b, now, &next);
		if (b->paused) {
			if (now >= b->resume_at)
				resume_listeners(b);
			else if (b->resume_at < next)
				next = b->resume_at;
		}
		brk_reap(b);
		if (!b->nsessions && !b->nconns) {
			if (!b->idle_since)
				b->idle_since = now;
			if (b->o.idle_ms) {
				if (now - b->idle_since >= b->o.idle_ms) {
					brk_log(BRK_LOG_INFO,
						"idle for %u ms: exiting",
						b->o.idle_ms);
					return;
				}
				if (b->idle_since + b->o.idle_ms < next)
					next = b->idle_since + b->o.idle_ms;
			}
		} else {
			b->idle_since = 0;
		}
		if (next == UINT64_MAX)
			timeout = -1;
		else
			timeout = next - now > INT_MAX ? INT_MAX :
							 (int)(next - now);
		n = epoll_wait(b->ep, evs, 64, timeout);
		if (n < 0 && errno != EINTR) {
			brk_log(BRK_LOG_ERR, "epoll_wait: %s", strerror(errno));
			return;
		}
		for (i = 0; i < n; i++)
			if (!brk_dispatch(b, &evs[i]))
				on_signal(b);
	}
}

static void shutdown_all(struct brk *b)
{
	/* The name first: a client arriving now starts the next broker. */
	if (b->unix_fd >= 0) {
		close(b->unix_fd);
		b->unix_fd = -1;
	}
	if (b->tcp_fd >= 0) {
		close(b->tcp_fd);
		b->tcp_fd = -1;
	}
	brk_close_all(b);
	if (b->sig_fd >= 0)
		close(b->sig_fd);
	close(b->ep);
}

int main(int argc, char **argv)
{
	struct brk b;
	pid_t pid;
	int err;

	memset(&b, 0, sizeof(b));
	b.unix_fd = b.tcp_fd = b.sig_fd = -1;
	err = parse_opts(&b.o, argc, argv);
	if (err)
		return err;
	if (b.o.spawned) {
		close_inherited();
		if (chdir("/"))
			return BRK_EXIT_FAIL;
	}
	log_open(&b.o);
	raise_fd_limit();

	inherited_sockets(&b);
	err = b.unix_fd >= 0 ? 0 : unix_listen(&b);
	if (err == EADDRINUSE) {
		brk_log(BRK_LOG_INFO,
			"another broker serves this network namespace");
		return BRK_EXIT_READY;
	}
	if (err) {
		brk_log(BRK_LOG_ERR, "cannot bind @%s: %s", SWIW_BP_NAME,
			strerror(err));
		return BRK_EXIT_FAIL;
	}
	err = b.tcp_fd >= 0 ? 0 : tcp_listen(&b);
	if (err) {
		brk_log(BRK_LOG_ERR, "cannot listen on TCP port %u: %s",
			b.o.port, strerror(err));
		close(b.unix_fd);
		return err == EADDRINUSE ? BRK_EXIT_PORT : BRK_EXIT_FAIL;
	}
	if (b.o.spawned) {
		pid = fork();
		if (pid < 0) {
			brk_log(BRK_LOG_ERR, "fork: %s", strerror(errno));
			return BRK_EXIT_FAIL;
		}
		if (pid > 0)
			_exit(BRK_EXIT_READY); /* both listen: clients may come */
	}
	err = brk_setup(&b);
	if (err || signals_open(&b)) {
		brk_log(BRK_LOG_ERR, "cannot set up: %s",
			strerror(err ? err : errno));
		return BRK_EXIT_FAIL;
	}
	brk_log(BRK_LOG_INFO, "serving TCP port %u, protocol %u", b.o.port,
		SWIW_BP_VERSION);

	run(&b);
	shutdown_all(&b);
	if (log_file)
		fclose(log_file);
	return 0;
}
