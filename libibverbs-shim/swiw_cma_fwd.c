// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * librdmacm for swiw devices: addresses of other devices go to the real
 * librdmacm (the kernel's rdma_cm), unchanged. Such an id of ours has a
 * real id behind it, made on a real channel that belongs to our channel;
 * every call on it is forwarded, and the id's public fields are copied
 * from the real one after each call and event. A thread per channel
 * waits on the real channel, takes each event, acks it, and queues a copy
 * naming our ids on our channel, whose fd therefore wakes for both
 * (CONNECT_REQUEST gets a new id of ours for the real new id).
 *
 * A real id's context is a reference that outlives neither its real id
 * nor the thread's use of it: destroying an id clears the reference under
 * cma_lock, then destroys the real id outside it (librdmacm waits there
 * for the events the thread still holds), then frees the reference.
 *
 * With no kernel rdma_cm, librdmacm cannot make a channel: such addresses
 * fail with ENODEV and a line that says why.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "swiw_cma.h"

struct cma_fwd_ref {
	struct cma_id *w; /* NULL once our id is going */
	struct rdma_cm_id *real;
	struct cma_fwd_ref *next; /* on known, under known_lock */
};

__thread int cma_in_real;

/* Every real id we hold, from its creation to the end of its destroy. */
static struct cma_fwd_ref *known;
static pthread_mutex_t known_lock = PTHREAD_MUTEX_INITIALIZER;

static void known_add(struct cma_fwd_ref *ref, struct rdma_cm_id *real)
{
	ref->real = real;
	pthread_mutex_lock(&known_lock);
	ref->next = known;
	known = ref;
	pthread_mutex_unlock(&known_lock);
}

static void known_del(struct cma_fwd_ref *ref)
{
	struct cma_fwd_ref **pp;

	pthread_mutex_lock(&known_lock);
	for (pp = &known; *pp && *pp != ref; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = ref->next;
	pthread_mutex_unlock(&known_lock);
}

/*
 * True if @id, not one of ours, is librdmacm's: a call from inside it, or
 * a real id one of ours holds. Only compares pointers.
 */
bool cma_fwd_is_real(const struct rdma_cm_id *id)
{
	struct cma_fwd_ref *r;

	if (!cma_real())
		return false;
	if (cma_in_real)
		return true;
	pthread_mutex_lock(&known_lock);
	for (r = known; r && r->real != id; r = r->next)
		;
	pthread_mutex_unlock(&known_lock);
	return r != NULL;
}
static struct cma_real real_v;
static const struct cma_real *real_tab;

#define REAL_SYM(f, name, ver) \
	(*(void **)&real_v.f = dlvsym(RTLD_NEXT, name, ver))

static void real_init(void)
{
	if (REAL_SYM(create_event_channel, "rdma_create_event_channel",
		     "RDMACM_1.0") &&
	    REAL_SYM(destroy_event_channel, "rdma_destroy_event_channel",
		     "RDMACM_1.0") &&
	    REAL_SYM(create_id, "rdma_create_id", "RDMACM_1.0") &&
	    REAL_SYM(destroy_id, "rdma_destroy_id", "RDMACM_1.0") &&
	    REAL_SYM(bind_addr, "rdma_bind_addr", "RDMACM_1.0") &&
	    REAL_SYM(resolve_addr, "rdma_resolve_addr", "RDMACM_1.0") &&
	    REAL_SYM(resolve_route, "rdma_resolve_route", "RDMACM_1.0") &&
	    REAL_SYM(listen, "rdma_listen", "RDMACM_1.0") &&
	    REAL_SYM(connect, "rdma_connect", "RDMACM_1.0") &&
	    REAL_SYM(accept, "rdma_accept", "RDMACM_1.0") &&
	    REAL_SYM(reject, "rdma_reject", "RDMACM_1.0") &&
	    REAL_SYM(disconnect, "rdma_disconnect", "RDMACM_1.0") &&
	    REAL_SYM(get_cm_event, "rdma_get_cm_event", "RDMACM_1.0") &&
	    REAL_SYM(ack_cm_event, "rdma_ack_cm_event", "RDMACM_1.0") &&
	    REAL_SYM(create_qp_ex, "rdma_create_qp_ex", "RDMACM_1.0") &&
	    REAL_SYM(destroy_qp, "rdma_destroy_qp", "RDMACM_1.0") &&
	    REAL_SYM(create_qp, "rdma_create_qp", "RDMACM_1.0") &&
	    REAL_SYM(migrate_id, "rdma_migrate_id", "RDMACM_1.0") &&
	    REAL_SYM(set_option, "rdma_set_option", "RDMACM_1.0") &&
	    REAL_SYM(notify, "rdma_notify", "RDMACM_1.0") &&
	    REAL_SYM(create_srq_ex, "rdma_create_srq_ex", "RDMACM_1.0") &&
	    REAL_SYM(destroy_srq, "rdma_destroy_srq", "RDMACM_1.0") &&
	    REAL_SYM(init_qp_attr, "rdma_init_qp_attr", "RDMACM_1.2") &&
	    REAL_SYM(establish, "rdma_establish", "RDMACM_1.2"))
		real_tab = &real_v;
}

/* librdmacm's own functions, or NULL if the program did not load it. */
const struct cma_real *cma_real(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, real_init);
	return real_tab;
}

/* Our public fields, from the real id's; under cma_lock. */
void cma_fwd_sync(struct cma_id *id)
{
	struct rdma_cm_id *r = id->real;

	if (!r)
		return;
	id->id.verbs = r->verbs;
	id->id.qp = r->qp;
	id->id.route = r->route;
	id->id.ps = r->ps;
	id->id.port_num = r->port_num;
	id->id.send_cq_channel = r->send_cq_channel;
	id->id.send_cq = r->send_cq;
	id->id.recv_cq_channel = r->recv_cq_channel;
	id->id.recv_cq = r->recv_cq;
	id->id.srq = r->srq;
	id->id.pd = r->pd;
	id->id.qp_type = r->qp_type;
}

/*
 * One real event, as ours; under cma_lock. A request nobody can take is
 * rejected, and its real id returned, to be destroyed after the ack
 * (librdmacm counts the event against it).
 */
static struct rdma_cm_id *translate(const struct rdma_cm_event *rev,
				    struct cma_fwd_ref *ref,
				    struct cma_fwd_ref *lref)
{
	struct cma_id *w = ref ? ref->w : NULL, *owner;
	struct cma_event *e;

	if (rev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		struct cma_id *lis = lref ? lref->w : NULL;
		struct cma_fwd_ref *nref;

		if (!lis) {
			/* Nobody listens any more: refuse it. */
			cma_real()->reject(rev->id, NULL, 0);
			return rev->id;
		}
		nref = calloc(1, sizeof(*nref));
		w = nref ? cma_id_new(lis->sync ? NULL : lis->id.channel,
				      lis->id.context) :
			   NULL;
		if (!w) {
			free(nref);
			cma_real()->reject(rev->id, NULL, 0);
			return rev->id;
		}
		nref->w = w;
		known_add(nref, rev->id);
		w->real = rev->id;
		w->ref = nref;
		w->listener = lis;
		w->state = CMA_REQ;
		rev->id->context = nref;
		cma_fwd_sync(w);
		owner = lis;
	} else {
		if (!w)
			return NULL; /* its id is being destroyed */
		cma_fwd_sync(w);
		owner = w;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		cma_log("no memory for a %s event", rdma_event_str(rev->event));
		return NULL;
	}
	e->ev = *rev;
	e->ev.id = &w->id;
	e->ev.listen_id = owner != w ? &owner->id : NULL;
	e->owner = owner;
	/* Both params begin with the private data and its length. */
	if (rev->param.conn.private_data && rev->param.conn.private_data_len) {
		memcpy(e->pd, rev->param.conn.private_data,
		       rev->param.conn.private_data_len);
		e->ev.param.conn.private_data = e->pd;
	}
	cma_queue_event(e);
	return NULL;
}

static void *fwd_main(void *arg)
{
	struct cma_chan *c = arg;
	const struct cma_real *rl = cma_real();

	/* This thread only talks to librdmacm: ids it hears of are its. */
	cma_in_real = 1;
	for (;;) {
		struct pollfd p[2] = {
			{ .fd = c->real->fd, .events = POLLIN },
			{ .fd = c->wake_fd, .events = POLLIN },
		};
		struct rdma_cm_event *rev;
		struct cma_fwd_ref *ref, *lref = NULL;
		struct rdma_cm_id *drop;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break; /* the channel is going */
		if (rl->get_cm_event(c->real, &rev))
			continue; /* EAGAIN: the fd is non-blocking */
		ref = rev->id ? rev->id->context : NULL;
		if (rev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			lref = rev->listen_id ? rev->listen_id->context : NULL;
		pthread_mutex_lock(&cma_lock);
		drop = translate(rev, ref, lref);
		pthread_mutex_unlock(&cma_lock);
		rl->ack_cm_event(rev);
		if (drop)
			rl->destroy_id(drop);
	}
	return NULL;
}

/* Under cma_lock: the channel's real twin and its thread, once. */
int cma_fwd_attach_chan(struct cma_chan *c)
{
	const struct cma_real *rl = cma_real();
	int err;

	if (c->real)
		return 0;
	if (!rl)
		return ENOSYS;
	/* librdmacm's first channel probes AF_IB with rdma_create_id,
	 * which its PLT brings here: see rdma_create_id. */
	cma_in_real++;
	c->real = rl->create_event_channel();
	cma_in_real--;
	if (!c->real)
		return errno ? errno : ENODEV;
	c->wake_fd = eventfd(0, EFD_CLOEXEC);
	if (c->wake_fd < 0 || fcntl(c->real->fd, F_SETFL,
				    fcntl(c->real->fd, F_GETFL) | O_NONBLOCK)) {
		err = errno;
		goto fail;
	}
	err = pthread_create(&c->fwd_thread, NULL, fwd_main, c);
	if (err)
		goto fail;
	return 0;
fail:
	if (c->wake_fd >= 0)
		close(c->wake_fd);
	c->wake_fd = -1;
	rl->destroy_event_channel(c->real);
	c->real = NULL;
	return err;
}

/* Our channel goes: its thread stops, the real channel goes. */
void cma_fwd_chan_free(struct cma_chan *c)
{
	uint64_t one = 1;

	if (!c->real)
		return;
	if (write(c->wake_fd, &one, sizeof(one)) == sizeof(one))
		pthread_join(c->fwd_thread, NULL);
	close(c->wake_fd);
	cma_real()->destroy_event_channel(c->real);
	c->real = NULL;
}

/*
 * Under cma_lock: @id is served by the kernel's rdma_cm from now on. 0,
 * or ENODEV when there is none (said on stderr, with @why).
 */
int cma_fwd_attach(struct cma_id *id, const char *why)
{
	struct cma_fwd_ref *ref;
	int err;

	if (id->real)
		return 0;
	err = cma_fwd_attach_chan((struct cma_chan *)id->id.channel);
	if (err) {
		cma_log("%s; the kernel's rdma_cm would serve it, but %s", why,
			err == ENOSYS ? "the program has not loaded librdmacm" :
					"it is not available here");
		return ENODEV;
	}
	ref = calloc(1, sizeof(*ref));
	if (!ref)
		return ENOMEM;
	ref->w = id;
	cma_in_real++;
	err = cma_real()->create_id(((struct cma_chan *)id->id.channel)->real,
				    &id->real, ref, id->id.ps);
	cma_in_real--;
	if (err) {
		err = errno;
		free(ref);
		id->real = NULL;
		return err;
	}
	known_add(ref, id->real);
	id->ref = ref;
	cma_fwd_sync(id);
	return 0;
}

/* Real ids whose ids of ours are gone, destroyed outside cma_lock. */
struct gone {
	struct rdma_cm_id *real;
	struct cma_fwd_ref *ref;
	struct gone *next;
};
static struct gone *graveyard; /* under cma_lock */

/* Under cma_lock: @id lets go of its real id (cma_fwd_reap ends it). */
void cma_fwd_release(struct cma_id *id)
{
	struct gone *g;

	if (!id->real)
		return;
	id->ref->w = NULL;
	g = calloc(1, sizeof(*g));
	if (g) {
		g->real = id->real;
		g->ref = id->ref;
		g->next = graveyard;
		graveyard = g;
	} else {
		cma_log("no memory: a kernel rdma_cm id is leaked");
	}
	id->real = NULL;
	id->ref = NULL;
}

/* Not under cma_lock: librdmacm may wait for the thread's acks. */
void cma_fwd_reap(void)
{
	struct gone *g;

	for (;;) {
		pthread_mutex_lock(&cma_lock);
		g = graveyard;
		if (g)
			graveyard = g->next;
		pthread_mutex_unlock(&cma_lock);
		if (!g)
			return;
		cma_real()->destroy_id(g->real);
		known_del(g->ref);
		free(g->ref);
		free(g);
	}
}
