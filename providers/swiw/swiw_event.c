// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Asynchronous events and completion channels.
 *
 * With no uverbs file behind a context, swiw makes the two event files
 * itself, as pipes whose read ends libibverbs reads with its own, unmodified
 * code: the async fd carries 16-byte records {u64 element; u32 type;
 * u32 reserved}, a completion channel 8-byte records holding the ibv_cq
 * pointer. Write ends are non-blocking: a stuck reader costs events (which
 * are counted and logged), never a stuck provider.
 *
 * Port events come from a monitor thread listening to rtnetlink link and
 * address notifications; it runs while the process has a swiw context open.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "swiw.h"

struct async_rec {
	uint64_t element;
	uint32_t event_type;
	uint32_t reserved;
};

static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct swiw_context *open_ctxs; /* under ev_lock */
static bool mon_running; /* under ev_lock, with the three below */
static pthread_t mon_thread;
static int mon_stop_wfd = -1;
static atomic_ulong events_dropped;

static int pipe_pair(int fds[2])
{
	if (pipe2(fds, O_CLOEXEC))
		return errno;
	/* The reader decides whether it blocks; the writer never does. */
	if (fcntl(fds[1], F_SETFL, O_NONBLOCK)) {
		int err = errno;

		close(fds[0]);
		close(fds[1]);
		return err;
	}
	return 0;
}

static void post_record(int wfd, const void *rec, size_t len)
{
	ssize_t n = write(wfd, rec, len);

	if (n == (ssize_t)len)
		return;
	/* Pipe writes of <= PIPE_BUF bytes are atomic: all or nothing. */
	if (atomic_fetch_add(&events_dropped, 1) == 0)
		swiw_warn("event queue full, events are being dropped: %s",
			  n < 0 ? strerror(errno) : "short write");
}

void swiw_post_async(struct swiw_context *ctx, enum ibv_event_type type,
		     uint64_t element)
{
	struct async_rec rec = { .element = element, .event_type = type };

	post_record(ctx->async_wfd, &rec, sizeof(rec));
}

static void ctx_update_port(struct swiw_context *ctx, bool active)
{
	if (ctx->port_active == active)
		return;
	ctx->port_active = active;
	swiw_post_async(ctx,
			active ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR,
			SWIW_PORT);
}

static int ctx_ifindex(struct swiw_context *ctx)
{
	return to_swiw_dev(ctx->ibv_ctx.context.device)->ifindex;
}

/* After lost notifications (ENOBUFS), re-read every open device. */
static void mon_resync(void)
{
	struct swiw_context *ctx;
	struct swiw_netif nif;

	pthread_mutex_lock(&ev_lock);
	for (ctx = open_ctxs; ctx; ctx = ctx->next_open)
		ctx_update_port(ctx, !swiw_netif_get(ctx_ifindex(ctx), &nif) &&
					     swiw_netif_port_active(&nif));
	pthread_mutex_unlock(&ev_lock);
}

static int mon_msg(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *nh = nlmsg_hdr(msg);
	struct swiw_context *ctx;
	int ifindex;

	(void)arg;
	switch (nh->nlmsg_type) {
	case RTM_NEWLINK:
	case RTM_DELLINK: {
		struct ifinfomsg *ifi = nlmsg_data(nh);
		bool gone = nh->nlmsg_type == RTM_DELLINK;
		bool up = !gone && (ifi->ifi_flags & IFF_UP) &&
			  (ifi->ifi_flags & IFF_RUNNING);

		if (nlmsg_datalen(nh) < (int)sizeof(*ifi))
			return NL_OK;
		pthread_mutex_lock(&ev_lock);
		for (ctx = open_ctxs; ctx; ctx = ctx->next_open) {
			if (ctx_ifindex(ctx) != ifi->ifi_index)
				continue;
			ctx_update_port(ctx, up);
			if (gone)
				swiw_post_async(ctx, IBV_EVENT_DEVICE_FATAL, 0);
		}
		pthread_mutex_unlock(&ev_lock);
		break;
	}
	case RTM_NEWADDR:
	case RTM_DELADDR: {
		struct ifaddrmsg *ifa = nlmsg_data(nh);

		if (nlmsg_datalen(nh) < (int)sizeof(*ifa))
			return NL_OK;
		ifindex = (int)ifa->ifa_index;
		pthread_mutex_lock(&ev_lock);
		for (ctx = open_ctxs; ctx; ctx = ctx->next_open)
			if (ctx_ifindex(ctx) == ifindex)
				swiw_post_async(ctx, IBV_EVENT_GID_CHANGE,
						SWIW_PORT);
		pthread_mutex_unlock(&ev_lock);
		break;
	}
	}
	return NL_OK;
}

struct mon_arg {
	struct nl_sock *sk;
	int stop_rfd;
};

static void *mon_main(void *arg)
{
	struct mon_arg *ma = arg;
	struct nl_sock *sk = ma->sk;
	struct pollfd pfd[2] = {
		{ .fd = nl_socket_get_fd(sk), .events = POLLIN },
		{ .fd = ma->stop_rfd, .events = POLLIN },
	};

	for (;;) {
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents)
			break;
		if (!(pfd[0].revents & POLLIN))
			continue;
		int ret = nl_recvmsgs_default(sk);

		if (ret == -NLE_NOMEM || ret == -NLE_OBJ_NOTFOUND)
			continue;
		if (ret < 0) /* overrun (ENOBUFS) and friends */
			mon_resync();
	}
	nl_socket_free(sk);
	close(ma->stop_rfd);
	free(ma);
	return NULL;
}

/* Under ev_lock. Without a monitor, port state is still right on query. */
static void mon_start(void)
{
	struct mon_arg *ma = calloc(1, sizeof(*ma));
	int stop[2] = { -1, -1 };

	if (!ma)
		goto fail;
	ma->sk = nl_socket_alloc();
	if (!ma->sk)
		goto fail;
	nl_socket_disable_seq_check(ma->sk);
	nl_socket_modify_cb(ma->sk, NL_CB_VALID, NL_CB_CUSTOM, mon_msg, NULL);
	if (nl_connect(ma->sk, NETLINK_ROUTE) ||
	    nl_socket_add_memberships(ma->sk, RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR,
				      RTNLGRP_IPV6_IFADDR, 0) ||
	    nl_socket_set_nonblocking(ma->sk) || pipe_pair(stop))
		goto fail;
	ma->stop_rfd = stop[0];
	if (pthread_create(&mon_thread, NULL, mon_main, ma))
		goto fail;
	mon_stop_wfd = stop[1];
	mon_running = true;
	return;
fail:
	if (stop[0] >= 0) {
		close(stop[0]);
		close(stop[1]);
	}
	if (ma && ma->sk)
		nl_socket_free(ma->sk);
	free(ma);
	swiw_warn("no port event monitor: port events will not be reported");
}

/*
 * Under ev_lock, which is dropped for the join: the monitor takes it for
 * every notification. A monitor started meanwhile owns fresh resources.
 */
static void mon_stop_and_join(void)
{
	pthread_t t = mon_thread;
	int wfd = mon_stop_wfd;

	mon_running = false;
	mon_stop_wfd = -1;
	(void)!write(wfd, "x", 1);
	pthread_mutex_unlock(&ev_lock);
	pthread_join(t, NULL);
	close(wfd);
	pthread_mutex_lock(&ev_lock);
}

int swiw_events_open(struct swiw_context *ctx)
{
	struct ibv_context *ibctx = &ctx->ibv_ctx.context;
	struct swiw_netif nif;
	int fds[2], err;

	err = pipe_pair(fds);
	if (err)
		return err;
	ibctx->async_fd = fds[0];
	ctx->async_wfd = fds[1];
	ctx->port_active = !swiw_netif_get(ctx_ifindex(ctx), &nif) &&
			   swiw_netif_port_active(&nif);

	pthread_mutex_lock(&ev_lock);
	ctx->next_open = open_ctxs;
	open_ctxs = ctx;
	if (!mon_running)
		mon_start();
	pthread_mutex_unlock(&ev_lock);
	return 0;
}

/* The read end is closed by libibverbs (verbs_uninit_context). */
void swiw_events_close(struct swiw_context *ctx)
{
	struct swiw_context **pp;

	pthread_mutex_lock(&ev_lock);
	for (pp = &open_ctxs; *pp; pp = &(*pp)->next_open) {
		if (*pp == ctx) {
			*pp = ctx->next_open;
			break;
		}
	}
	if (!open_ctxs && mon_running)
		mon_stop_and_join();
	pthread_mutex_unlock(&ev_lock);
	close(ctx->async_wfd);
	ctx->async_wfd = -1;
}

struct ibv_comp_channel *swiw_create_comp_channel(struct ibv_context *ctx)
{
	struct swiw_comp_channel *ch = calloc(1, sizeof(*ch));
	int fds[2], err;

	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	err = pipe_pair(fds);
	if (err) {
		free(ch);
		errno = err;
		return NULL;
	}
	ch->ibv_ch.context = ctx;
	ch->ibv_ch.fd = fds[0];
	ch->ibv_ch.refcnt = 0;
	ch->wfd = fds[1];
	return &ch->ibv_ch;
}

/*
 * ibv_get_cq_event is about to read @ibch (the preload library calls this
 * first): for a moment this thread runs the engine and looks for a record
 * before the read sleeps (swiw_engine_chan_wait). A channel the program
 * made non-blocking is its to poll, and the read answers at once.
 */
struct ibv_cq *swiw_chan_wait(struct ibv_comp_channel *ibch)
{
	int fl = fcntl(ibch->fd, F_GETFL);

	if (fl < 0 || (fl & O_NONBLOCK))
		return NULL;
	return swiw_engine_chan_wait(
		swiw_container_of(ibch, struct swiw_comp_channel, ibv_ch));
}

/* As libibverbs does: refused while a CQ still uses the channel. */
int swiw_destroy_comp_channel(struct ibv_comp_channel *ibch)
{
	struct swiw_comp_channel *ch =
		swiw_container_of(ibch, struct swiw_comp_channel, ibv_ch);
	struct ibv_context *ctx = ibch->context;

	pthread_mutex_lock(&ctx->mutex);
	if (ibch->refcnt) {
		pthread_mutex_unlock(&ctx->mutex);
		return EBUSY;
	}
	pthread_mutex_unlock(&ctx->mutex);
	close(ch->ibv_ch.fd);
	close(ch->wfd);
	free(ch);
	return 0;
}
