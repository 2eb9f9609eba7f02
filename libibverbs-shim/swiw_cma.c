// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * librdmacm for swiw devices: event channels, ids and events (see
 * swiw_cma.h). A channel's fd is an eventfd in semaphore mode holding one
 * count per queued event, so poll, epoll and O_NONBLOCK (EAGAIN) behave
 * as with the kernel's rdma_cm; rdma_get_cm_event reads one count and
 * takes one event.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "swiw_cma.h"

pthread_mutex_t cma_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;

int cma_err(int err)
{
	errno = err;
	return -1;
}

uint64_t cma_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void cma_log(const char *fmt, ...)
{
	va_list ap;

	fputs("swiw: rdma_cm: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static const struct cma_verbs *verbs_tab;
static struct cma_verbs verbs_v;

#define CMA_SYM(field, name) \
	(*(void **)&verbs_v.field = swiw_real_sym(name, "IBVERBS_1.1"))

static void verbs_init(void)
{
	if (CMA_SYM(open_device, "ibv_open_device") &&
	    CMA_SYM(query_device, "ibv_query_device") &&
	    CMA_SYM(alloc_pd, "ibv_alloc_pd") &&
	    CMA_SYM(dealloc_pd, "ibv_dealloc_pd") &&
	    CMA_SYM(create_cq, "ibv_create_cq") &&
	    CMA_SYM(destroy_cq, "ibv_destroy_cq") &&
	    CMA_SYM(create_qp, "ibv_create_qp") &&
	    CMA_SYM(destroy_qp, "ibv_destroy_qp") &&
	    CMA_SYM(modify_qp, "ibv_modify_qp") &&
	    CMA_SYM(create_srq, "ibv_create_srq") &&
	    CMA_SYM(destroy_srq, "ibv_destroy_srq") &&
	    CMA_SYM(free_device_list, "ibv_free_device_list"))
		verbs_tab = &verbs_v;
}

const struct cma_verbs *cma_verbs(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, verbs_init);
	return verbs_tab;
}

/* Channels ---------------------------------------------------------------- */

static struct cma_chan *chan_new(void)
{
	struct cma_chan *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->ch.fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (c->ch.fd < 0) {
		free(c);
		return NULL;
	}
	c->tail = &c->head;
	c->wake_fd = -1;
	return c;
}

static struct cma_chan *to_chan(struct rdma_event_channel *ch)
{
	return (struct cma_chan *)ch;
}

SWIW_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cma_chan *c;

	if (!swiw_shim()) {
		errno = ENODEV;
		return NULL;
	}
	c = chan_new();
	return c ? &c->ch : NULL;
}

/*
 * A destroyed channel's memory outlives it by CHAN_GRAVE more destroys:
 * programs such as rping leave a thread looping on rdma_get_cm_event
 * while main destroys the channel, and its next call must find the
 * channel marked dead, not freed memory.
 */
#define CHAN_GRAVE 64

static void chan_free(struct cma_chan *c)
{
	static struct cma_chan *grave[CHAN_GRAVE];
	static unsigned int next;
	struct cma_chan *old;
	struct cma_event *e;

	cma_fwd_chan_free(c);
	pthread_mutex_lock(&ev_lock);
	c->dead = true;
	while ((e = c->head)) {
		c->head = e->next;
		free(e);
	}
	close(c->ch.fd);
	old = grave[next];
	grave[next] = c;
	next = (next + 1) % CHAN_GRAVE;
	pthread_mutex_unlock(&ev_lock);
	free(old);
}

SWIW_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *ch)
{
	if (ch)
		chan_free(to_chan(ch));
}

/* Events -------------------------------------------------------------------- */

static void drain_one(struct cma_chan *c);

/* Under ev_lock: one more event on its owner's channel (a request's
 * goes to the listener's). */
static void queue_locked(struct cma_event *e)
{
	struct cma_chan *c = to_chan(e->owner->id.channel);
	uint64_t one = 1;

	e->next = NULL;
	*c->tail = e;
	c->tail = &e->next;
	if (write(c->ch.fd, &one, sizeof(one)) != sizeof(one))
		cma_log("event channel %d: %s", c->ch.fd, strerror(errno));
}

void cma_queue_event(struct cma_event *e)
{
	pthread_mutex_lock(&ev_lock);
	queue_locked(e);
	pthread_mutex_unlock(&ev_lock);
}

void cma_queue(struct cma_id *id, struct cma_id *owner,
	       enum rdma_cm_event_type type, int status,
	       const struct rdma_conn_param *param)
{
	struct cma_event *e = calloc(1, sizeof(*e));

	if (!e) {
		cma_log("no memory for a %s event", rdma_event_str(type));
		return;
	}
	e->ev.id = &id->id;
	e->ev.listen_id = owner != id ? &owner->id : NULL;
	e->ev.event = type;
	e->ev.status = status;
	e->owner = owner;
	if (param) {
		e->ev.param.conn = *param;
		if (param->private_data_len) {
			memcpy(e->pd, param->private_data,
			       param->private_data_len);
			e->ev.param.conn.private_data = e->pd;
		} else {
			e->ev.param.conn.private_data = NULL;
		}
	}
	pthread_mutex_lock(&ev_lock);
	queue_locked(e);
	pthread_mutex_unlock(&ev_lock);
}

static uint8_t u8_of(uint16_t v)
{
	return v > 255 ? 255 : (uint8_t)v;
}

/*
 * The engine's report on an id's QP (swiw_shim.h); in the engine thread
 * under its lock: queue, nothing else. ESTABLISHED carries IRD and ORD
 * as the kernel's iw_cm does (initiator_depth = IRD, responder_resources
 * = ORD).
 */
void cma_engine_cb(void *arg, const struct swiw_cm_event *ev)
{
	static const enum rdma_cm_event_type types[] = {
		[SWIW_CM_ESTABLISHED] = RDMA_CM_EVENT_ESTABLISHED,
		[SWIW_CM_REJECTED] = RDMA_CM_EVENT_REJECTED,
		[SWIW_CM_UNREACHABLE] = RDMA_CM_EVENT_UNREACHABLE,
		[SWIW_CM_CONNECT_ERROR] = RDMA_CM_EVENT_CONNECT_ERROR,
		[SWIW_CM_DISCONNECTED] = RDMA_CM_EVENT_DISCONNECTED,
	};
	struct cma_id *id = arg;
	struct rdma_conn_param p = { 0 };

	if (ev->type < SWIW_CM_ESTABLISHED || ev->type > SWIW_CM_DISCONNECTED)
		return;
	if (ev->type == SWIW_CM_ESTABLISHED) {
		p.initiator_depth = u8_of(ev->ird);
		p.responder_resources = u8_of(ev->ord);
	}
	p.private_data = ev->pd;
	p.private_data_len = ev->pd_len > 255 ? 255 : (uint8_t)ev->pd_len;
	cma_queue(id, id, types[ev->type], ev->status, &p);
}

/*
 * The count in the fd always equals the queue's length outside ev_lock:
 * an event and its count are taken together, under the lock, so a reader
 * never wakes for an event that a destroy_id withdrew, and one blocked on
 * a channel that goes away stays blocked, as on the kernel's. One that
 * comes to a destroyed channel blocks too (until a signal: EINTR), so a
 * thread left looping on it cannot turn the program's clean exit into an
 * error exit.
 */
SWIW_EXPORT int rdma_get_cm_event(struct rdma_event_channel *ch,
				  struct rdma_cm_event **event)
{
	struct cma_chan *c;
	struct cma_event *e;
	int fd, fl;

	if (!ch || !event)
		return cma_err(EINVAL);
	c = to_chan(ch);
	for (;;) {
		struct pollfd p = { .events = POLLIN };

		pthread_mutex_lock(&ev_lock);
		if (c->dead) {
			pthread_mutex_unlock(&ev_lock);
			pause();
			return cma_err(EINTR);
		}
		fd = c->ch.fd;
		p.fd = fd;
		e = c->head;
		if (e) {
			c->head = e->next;
			if (!c->head)
				c->tail = &c->head;
			drain_one(c);
			e->owner->events_out++;
			pthread_mutex_unlock(&ev_lock);
			break;
		}
		fl = fcntl(fd, F_GETFL);
		pthread_mutex_unlock(&ev_lock);
		if (fl < 0)
			return -1;
		if (fl & O_NONBLOCK)
			return cma_err(EAGAIN);
		if (poll(&p, 1, -1) < 0)
			return -1; /* EINTR, as a read would */
		if (p.revents & POLLNVAL) {
			/* Closed between the unlock and poll(): by
			 * destroy_event_channel, whose dead mark the next
			 * turn finds (rping's CM thread under load), or
			 * by the program itself. */
			pthread_mutex_lock(&ev_lock);
			fl = c->dead;
			pthread_mutex_unlock(&ev_lock);
			if (!fl)
				return cma_err(EBADF);
		}
	}
	*event = &e->ev;
	return 0;
}

SWIW_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cma_event *e = (struct cma_event *)event;
	struct cma_id *owner;
	bool last;

	if (!event)
		return cma_err(EINVAL);
	owner = e->owner;
	pthread_mutex_lock(&ev_lock);
	last = !--owner->events_out && owner->destroyed;
	pthread_mutex_unlock(&ev_lock);
	free(e);
	if (last)
		free(owner);
	return 0;
}

/*
 * Under ev_lock: one count out of the fd, for an event taken from or
 * withdrawn from the queue. Never blocks: the count is there (see
 * rdma_get_cm_event); O_NONBLOCK only for this read.
 */
static void drain_one(struct cma_chan *c)
{
	int fl = fcntl(c->ch.fd, F_GETFL);
	uint64_t v;

	if (fl < 0)
		return;
	if (!(fl & O_NONBLOCK))
		fcntl(c->ch.fd, F_SETFL, fl | O_NONBLOCK);
	if (read(c->ch.fd, &v, sizeof(v)) < 0)
		(void)0; /* EAGAIN: a reader has it */
	if (!(fl & O_NONBLOCK))
		fcntl(c->ch.fd, F_SETFL, fl);
}

/* Queued events of @id leave its channel (the id is going, or moving). */
static struct cma_event *withdraw_locked(struct cma_id *id)
{
	struct cma_chan *c = to_chan(id->id.channel);
	struct cma_event *out = NULL, **op = &out, **pp = &c->head, *e;

	while ((e = *pp)) {
		if (e->ev.id == &id->id || e->owner == id) {
			*pp = e->next;
			drain_one(c);
			e->next = NULL;
			*op = e;
			op = &e->next;
		} else {
			pp = &e->next;
		}
	}
	c->tail = pp;
	return out;
}

bool cma_has_queued(struct cma_id *id)
{
	struct cma_event *e;
	bool found = false;

	pthread_mutex_lock(&ev_lock);
	for (e = to_chan(id->id.channel)->head; e && !found; e = e->next)
		found = e->ev.id == &id->id;
	pthread_mutex_unlock(&ev_lock);
	return found;
}

SWIW_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST] =
			"RDMA_CM_EVENT_CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] =
			"RDMA_CM_EVENT_CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR] =
			"RDMA_CM_EVENT_MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	if ((unsigned int)event < sizeof(names) / sizeof(names[0]) &&
	    names[event])
		return names[event];
	return "UNKNOWN EVENT";
}

/* Ids ----------------------------------------------------------------------- */

/* Channels of destroyed synchronous ids that have a real twin. */
static struct cma_chan_gone {
	struct cma_chan *c;
	struct cma_chan_gone *next;
} * chans_gone; /* under cma_lock */

static void chan_defer(struct cma_chan *c)
{
	struct cma_chan_gone *g = calloc(1, sizeof(*g));

	if (!g) {
		cma_log("no memory: an event channel is leaked");
		return;
	}
	g->c = c;
	g->next = chans_gone;
	chans_gone = g;
}

/* Not under cma_lock: real ids, then the channels they were on. */
static void reap(void)
{
	struct cma_chan_gone *g;

	cma_fwd_reap();
	for (;;) {
		pthread_mutex_lock(&cma_lock);
		g = chans_gone;
		if (g)
			chans_gone = g->next;
		pthread_mutex_unlock(&cma_lock);
		if (!g)
			return;
		chan_free(g->c);
		free(g);
	}
}

/* Every id of ours; ids_lock is a leaf, taken under any other. */
static struct cma_id *all_ids;

unsigned int cma_requests(const struct cma_id *lis, unsigned int *all)
{
	unsigned int n = 0;
	struct cma_id *p;

	*all = 0;
	for (p = all_ids; p; p = p->next) {
		if (p->state != CMA_REQ || p->destroyed)
			continue;
		++*all;
		n += p->listener == lis;
	}
	return n;
}
static pthread_mutex_t ids_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * The real librdmacm calls its own exports through its PLT, so a call
 * forwarded to it can come back here with one of its ids: those go back
 * to it.
 */
bool cma_ours(const struct rdma_cm_id *id)
{
	struct cma_id *p;

	pthread_mutex_lock(&ids_lock);
	for (p = all_ids; p && &p->id != id; p = p->next)
		;
	pthread_mutex_unlock(&ids_lock);
	return p != NULL;
}

/* Under cma_lock. A NULL channel makes a synchronous id. */
struct cma_id *cma_id_new(struct rdma_event_channel *ch, void *context)
{
	struct cma_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	if (!ch) {
		struct cma_chan *c = chan_new();

		if (!c) {
			free(id);
			return NULL;
		}
		ch = &c->ch;
		id->sync = true;
	}
	id->id.channel = ch;
	id->id.context = context;
	id->id.ps = RDMA_PS_TCP;
	id->id.qp_type = IBV_QPT_RC;
	id->fd = -1;
	id->tos = -1;
	pthread_mutex_lock(&ids_lock);
	id->next = all_ids;
	all_ids = id;
	pthread_mutex_unlock(&ids_lock);
	return id;
}

/* Under cma_lock: unlisted, the socket closed, events withdrawn. */
void cma_id_free(struct cma_id *id)
{
	struct cma_id **pp;
	struct cma_event *gone, *e;
	struct cma_chan *own = NULL;
	bool now;

	pthread_mutex_lock(&ids_lock);
	for (pp = &all_ids; *pp; pp = &(*pp)->next)
		if (*pp == id) {
			*pp = id->next;
			break;
		}
	pthread_mutex_unlock(&ids_lock);
	cma_conn_release(id);
	cma_fwd_release(id);
	pthread_mutex_lock(&ev_lock);
	gone = withdraw_locked(id);
	if (id->sync)
		own = to_chan(id->id.channel);
	id->destroyed = true;
	now = !id->events_out;
	pthread_mutex_unlock(&ev_lock);
	/* Requests nobody took: their ids go with the listener. */
	while ((e = gone)) {
		struct cma_id *child = (struct cma_id *)e->ev.id;

		gone = e->next;
		if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && child != id)
			cma_id_free(child);
		free(e);
	}
	if (own && own->real) {
		/* Its thread may wait for cma_lock: after the unlock. */
		chan_defer(own);
	} else if (own) {
		chan_free(own);
	}
	if (now)
		free(id);
}

SWIW_EXPORT int rdma_create_id(struct rdma_event_channel *channel,
			       struct rdma_cm_id **id, void *context,
			       enum rdma_port_space ps)
{
	struct cma_id *cid;

	if (cma_in_real && cma_real())
		return cma_real()->create_id(channel, id, context, ps);
	if (!id)
		return cma_err(EINVAL);
	if (!swiw_shim())
		return cma_err(ENODEV);
	if (ps != RDMA_PS_TCP) {
		/* iWARP is connected TCP only: no UD, no IB port spaces. */
		cma_log("port space %d is not supported (RDMA_PS_TCP only)",
			(int)ps);
		return cma_err(ENOSYS);
	}
	pthread_mutex_lock(&cma_lock);
	cid = cma_id_new(channel, context);
	pthread_mutex_unlock(&cma_lock);
	if (!cid)
		return cma_err(ENOMEM);
	*id = &cid->id;
	return 0;
}

SWIW_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cma_id *cid = (struct cma_id *)id;

	CMA_REAL_ID(id, destroy_id);
	if (!id)
		return cma_err(EINVAL);
	if (id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	pthread_mutex_lock(&cma_lock);
	cma_id_free(cid);
	pthread_mutex_unlock(&cma_lock);
	reap();
	return 0;
}

/*
 * A synchronous id waits for the event its call caused; the previous one
 * is acked then, as librdmacm does. 0, or -1 with errno from the status.
 */
int cma_complete(struct cma_id *id)
{
	struct rdma_cm_event *ev;
	int st;

	if (!id->sync)
		return 0;
	if (rdma_get_cm_event(id->id.channel, &ev))
		return -1;
	if (id->id.event)
		rdma_ack_cm_event(id->id.event);
	id->id.event = ev;
	st = ev->status;
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		return cma_err(ECONNREFUSED);
	if (ev->event == RDMA_CM_EVENT_UNREACHABLE ||
	    ev->event == RDMA_CM_EVENT_ADDR_ERROR ||
	    ev->event == RDMA_CM_EVENT_ROUTE_ERROR ||
	    ev->event == RDMA_CM_EVENT_CONNECT_ERROR)
		return cma_err(st < 0 ? -st : st ? st : EIO);
	if (st)
		return cma_err(st < 0 ? -st : st);
	return 0;
}

SWIW_EXPORT int rdma_migrate_id(struct rdma_cm_id *id,
				struct rdma_event_channel *channel)
{
	struct cma_id *cid = (struct cma_id *)id;
	struct cma_chan *own = NULL, *nc = NULL;
	struct cma_event *moved, *e;

	CMA_REAL_ID(id, migrate_id, channel);
	if (!id)
		return cma_err(EINVAL);
	if (!channel) {
		nc = chan_new();
		if (!nc)
			return cma_err(ENOMEM);
		channel = &nc->ch;
	}
	if (cid->real) {
		/* The real id moves to the new channel's twin, outside
		 * cma_lock: librdmacm waits for our thread's acks. */
		int err;

		pthread_mutex_lock(&cma_lock);
		err = cma_fwd_attach_chan(to_chan(channel));
		pthread_mutex_unlock(&cma_lock);
		if (!err &&
		    cma_real()->migrate_id(cid->real, to_chan(channel)->real))
			err = errno;
		if (err) {
			if (nc)
				chan_free(nc);
			return cma_err(err);
		}
	}
	pthread_mutex_lock(&cma_lock);
	pthread_mutex_lock(&ev_lock);
	moved = withdraw_locked(cid);
	if (cid->sync)
		own = to_chan(id->channel);
	id->channel = channel;
	cid->sync = nc != NULL;
	while ((e = moved)) {
		moved = e->next;
		queue_locked(e);
	}
	pthread_mutex_unlock(&ev_lock);
	pthread_mutex_unlock(&cma_lock);
	if (own)
		chan_free(own);
	return 0;
}

/* Options and the rest -------------------------------------------------- */

SWIW_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname,
				void *optval, size_t optlen)
{
	struct cma_id *cid = (struct cma_id *)id;
	int v, err = 0;

	CMA_REAL_ID(id, set_option, level, optname, optval, optlen);
	if (!id || !optval)
		return cma_err(EINVAL);
	if (cid->real)
		return cma_real()->set_option(cid->real, level, optname, optval,
					      optlen);
	if (level != RDMA_OPTION_ID) {
		cma_log("option level %d is InfiniBand's: not supported",
			level);
		return cma_err(ENOSYS);
	}
	pthread_mutex_lock(&cma_lock);
	switch (optname) {
	case RDMA_OPTION_ID_TOS:
		if (optlen != sizeof(uint8_t)) {
			err = EINVAL;
			break;
		}
		cid->tos = *(uint8_t *)optval;
		if (cid->fd >= 0) {
			v = cid->tos;
			setsockopt(cid->fd, IPPROTO_IP, IP_TOS, &v, sizeof(v));
		}
		break;
	case RDMA_OPTION_ID_REUSEADDR:
		if (optlen != sizeof(int)) {
			err = EINVAL;
			break;
		}
		cid->reuseaddr = *(int *)optval != 0;
		break;
	case RDMA_OPTION_ID_AFONLY:
		if (optlen != sizeof(int)) {
			err = EINVAL;
			break;
		}
		cid->afonly = *(int *)optval != 0;
		break;
	default:
		cma_log("option %d is not supported", optname);
		err = ENOSYS;
	}
	pthread_mutex_unlock(&cma_lock);
	return err ? cma_err(err) : 0;
}

/* iWARP has no out-of-band establishment to be told about. */
SWIW_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	CMA_REAL_ID(id, notify, event);
	if (id && ((struct cma_id *)id)->real)
		return cma_real()->notify(((struct cma_id *)id)->real, event);
	return id ? 0 : cma_err(EINVAL);
}

/* With a QP the connection is established by MPA: nothing to do. */
SWIW_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	CMA_REAL_ID(id, establish);
	if (id && ((struct cma_id *)id)->real) {
		struct cma_id *cid = (struct cma_id *)id;
		int ret = cma_real()->establish(cid->real);

		pthread_mutex_lock(&cma_lock);
		cma_fwd_sync(cid);
		pthread_mutex_unlock(&cma_lock);
		return ret;
	}
	return id ? 0 : cma_err(EINVAL);
}

SWIW_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return htons(cma_sa_port(&id->route.addr.src_addr));
}

SWIW_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return htons(cma_sa_port(&id->route.addr.dst_addr));
}

SWIW_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id,
				  struct ibv_qp_attr *qp_attr,
				  int *qp_attr_mask)
{
	CMA_REAL_ID(id, init_qp_attr, qp_attr, qp_attr_mask);
	if (!id || !qp_attr || !qp_attr_mask)
		return cma_err(EINVAL);
	if (((struct cma_id *)id)->real)
		return cma_real()->init_qp_attr(((struct cma_id *)id)->real,
						qp_attr, qp_attr_mask);
	switch (qp_attr->qp_state) {
	case IBV_QPS_INIT:
		qp_attr->qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
					   IBV_ACCESS_REMOTE_WRITE |
					   IBV_ACCESS_REMOTE_READ;
		qp_attr->pkey_index = 0;
		qp_attr->port_num = id->port_num ? id->port_num : 1;
		*qp_attr_mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS |
				IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		return 0;
	case IBV_QPS_RTR:
	case IBV_QPS_RTS:
		/* MPA connects the QP; the state alone may be set. */
		*qp_attr_mask = IBV_QP_STATE;
		return 0;
	default:
		return cma_err(EINVAL);
	}
}

static int no_multicast(void)
{
	cma_log("multicast needs UD QPs, which iWARP does not have");
	return cma_err(ENOSYS);
}

SWIW_EXPORT int rdma_join_multicast(struct rdma_cm_id *id,
				    struct sockaddr *addr, void *context)
{
	(void)id, (void)addr, (void)context;
	return no_multicast();
}

SWIW_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id,
				       struct rdma_cm_join_mc_attr_ex *attr,
				       void *context)
{
	(void)id, (void)attr, (void)context;
	return no_multicast();
}

SWIW_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id,
				     struct sockaddr *addr)
{
	(void)id, (void)addr;
	return no_multicast();
}

static int no_ece(void)
{
	cma_log("ECE is InfiniBand's: not supported");
	return cma_err(ENOSYS);
}

SWIW_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id, (void)ece;
	return no_ece();
}

SWIW_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id, (void)ece;
	return no_ece();
}

SWIW_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *pd,
				uint8_t pd_len)
{
	(void)id, (void)pd, (void)pd_len;
	return no_ece();
}
