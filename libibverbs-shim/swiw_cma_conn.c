// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * librdmacm for swiw devices: connections. One CM thread per process
 * (started by the first listen or connect) waits on the listening
 * sockets, the connections whose MPA Request is still being read, and the
 * TCP connects in flight, all under cma_lock. A Request is read into a
 * buffer of its connection, header first, and not an octet past it; read
 * whole, it gives the listener a CONNECT_REQUEST with a new id, as long
 * as the listener's backlog and the process have room (else it is
 * rejected); rdma_accept and a
 * completed connect hand the socket to the QP (swiw_shim.h cm_attach),
 * whose stream runs MPA in the engine and reports through cma_engine_cb.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/rdma_verbs.h>

#include "swiw_cma.h"

/* A connection to a listener whose MPA Request is still coming. */
struct cma_pend {
	int fd;
	struct cma_id *listener;
	uint64_t due_ms;
	uint16_t got, need; /* octets of the Request read, and wanted */
	uint8_t buf[CMA_REQ_MAX];
	struct cma_pend *next;
};

/* Connections whose Request may still come, at most: more are closed. */
#define CMA_PEND_MAX 1024
/* Requests of the process not accepted or rejected yet, at most. */
#define CMA_REQ_PROC_MAX 4096
/* An MPA Request's header: what is read before its length is known. */
#define CMA_REQ_HDR 20
/* Out of descriptors: a listener rests this long before it accepts. */
#define CMA_MUTE_MS 100

static int cm_epfd = -1;
static struct cma_pend *pends; /* under cma_lock */
static unsigned int npends;

/* Under cma_lock: ids in the epoll set (listening or connecting); an
 * event's pointer is used only if it is still here. */
static struct cma_id **watched;
static unsigned int nwatched; /* slots */

static void conn_fail(struct cma_id *id, int err);

static void pend_close(struct cma_pend *p)
{
	struct cma_pend **pp;

	for (pp = &pends; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	epoll_ctl(cm_epfd, EPOLL_CTL_DEL, p->fd, NULL);
	close(p->fd);
	free(p);
	npends--;
}

/* The CM's parameters, from conn_param, librdmacm's defaults and checks. */
static int conn_params(struct cma_id *id, const struct rdma_conn_param *cp,
		       uint16_t *ird, uint16_t *ord)
{
	uint8_t mi = id->dev->max_ird, mo = id->dev->max_ord;

	*ird = mi;
	*ord = mo;
	if (!cp)
		return 0;
	if (cp->private_data_len > CMA_PD_MAX ||
	    (cp->private_data_len && !cp->private_data))
		return EINVAL;
	if (cp->responder_resources != RDMA_MAX_RESP_RES) {
		if (cp->responder_resources > mi)
			return EINVAL;
		*ird = cp->responder_resources;
	}
	if (cp->initiator_depth != RDMA_MAX_INIT_DEPTH) {
		if (cp->initiator_depth > mo)
			return EINVAL;
		*ord = cp->initiator_depth;
	}
	return 0;
}

/* The QP a connection runs on: the id's, or conn_param's number. */
static struct ibv_qp *conn_qp(struct cma_id *id,
			      const struct rdma_conn_param *cp)
{
	if (id->id.qp)
		return id->id.qp;
	if (!cp || !id->id.verbs)
		return NULL;
	return swiw_shim()->qp_lookup(id->id.verbs, cp->qp_num);
}

static int attach(struct cma_id *id, struct ibv_qp *qp, int fd, bool resp)
{
	struct swiw_cm_params p = {
		.responder = resp,
		.pd = id->pd,
		.pd_len = id->pd_len,
		.ird = id->ird,
		.ord = id->ord,
		.req = resp ? id->req : NULL,
		.req_len = resp ? id->req_len : 0,
		.cb = cma_engine_cb,
		.arg = id,
	};
	int err;

	err = swiw_shim()->cm_attach(qp, fd, &p);
	if (!err) {
		id->attached = true;
		id->state = CMA_MPA;
	}
	return err;
}

/* CM thread ------------------------------------------------------------- */

static void conn_done(struct cma_id *id)
{
	socklen_t len = sizeof(int);
	struct ibv_qp *qp;
	int err = 0, fd = id->fd;

	cma_thread_unwatch(id);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		err = errno;
	if (err) {
		conn_fail(id, err);
		return;
	}
	len = sizeof(id->id.route.addr.src_storage);
	getsockname(fd, &id->id.route.addr.src_addr, &len);
	/* By number again: the QP may have been destroyed meanwhile. */
	qp = swiw_shim()->qp_lookup(id->id.verbs, id->qpn);
	if (!qp) {
		conn_fail(id, EINVAL);
		return;
	}
	id->fd = -1;
	err = attach(id, qp, fd, false);
	if (err) {
		id->fd = fd;
		conn_fail(id, err);
	}
}

/* A TCP connect failed: the event the kernel's iw_cm would give. */
static void conn_fail(struct cma_id *id, int err)
{
	enum rdma_cm_event_type t = RDMA_CM_EVENT_CONNECT_ERROR;

	cma_thread_unwatch(id);
	if (id->fd >= 0)
		close(id->fd);
	id->fd = -1;
	id->state = CMA_DONE;
	if (err == ECONNREFUSED || err == ECONNRESET) {
		t = RDMA_CM_EVENT_REJECTED;
	} else if (err == ETIMEDOUT || err == EHOSTUNREACH ||
		   err == ENETUNREACH) {
		t = RDMA_CM_EVENT_UNREACHABLE;
		err = ETIMEDOUT;
	}
	cma_queue(id, id, t, -err, NULL);
}

/* A Request may be whole: then the listener hears of it. */
static void pend_read(struct cma_pend *p)
{
	struct sockaddr_storage la, ra;
	socklen_t ll = sizeof(la), rl = sizeof(ra);
	struct rdma_conn_param cp = { 0 };
	struct swiw_cm_req req;
	struct cma_id *lis = p->listener, *c;
	unsigned int all;
	struct cma_dev *d;
	ssize_t n;
	int err;

	/* What TCP holds is taken (the socket does not stay readable), up
	 * to what the header says the Request is: a partial one waits in
	 * our buffer for its deadline without waking us again. */
	for (;;) {
		n = recv(p->fd, p->buf + p->got, p->need - p->got,
			 MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			pend_close(p);
			return;
		}
		p->got += (uint16_t)n;
		if (p->got < p->need)
			continue;
		err = swiw_shim()->cm_parse_request(p->buf, p->got, &req);
		if (err != EAGAIN)
			break;
		if (req.frame_len <= p->got || req.frame_len > sizeof(p->buf)) {
			pend_close(p);
			return;
		}
		p->need = req.frame_len;
	}
	if (err || getsockname(p->fd, (struct sockaddr *)&la, &ll) ||
	    getpeername(p->fd, (struct sockaddr *)&ra, &rl)) {
		pend_close(p);
		return;
	}
	/* The backlog bounds what waits for rdma_accept, as iw_cm's does. */
	if (cma_requests(lis, &all) >= (unsigned int)lis->backlog ||
	    all >= CMA_REQ_PROC_MAX) {
		cma_log("a connection request beyond the listener's backlog (%d) was rejected",
			lis->backlog);
		swiw_shim()->cm_reject(p->fd, p->buf, req.frame_len, NULL, 0);
		shutdown(p->fd, SHUT_WR);
		pend_close(p);
		return;
	}
	d = cma_dev_for_addr((struct sockaddr *)&la);
	c = d ? cma_id_new(lis->sync ? NULL : lis->id.channel,
			   lis->id.context) :
		NULL;
	if (!c) {
		cma_log("a connection request to no swiw device was dropped");
		pend_close(p);
		return;
	}
	c->dev = d;
	c->id.verbs = d->ctx;
	c->id.port_num = 1;
	c->listener = lis;
	memcpy(&c->id.route.addr.src_storage, &la, ll);
	memcpy(&c->id.route.addr.dst_storage, &ra, rl);
	memcpy(c->req, p->buf, req.frame_len);
	c->req_len = req.frame_len;
	c->fd = p->fd;
	c->state = CMA_REQ;
	p->fd = -1;
	epoll_ctl(cm_epfd, EPOLL_CTL_DEL, c->fd, NULL);
	{
		struct cma_pend **pp;

		for (pp = &pends; *pp; pp = &(*pp)->next)
			if (*pp == p) {
				*pp = p->next;
				break;
			}
		free(p);
		npends--;
	}
	/* Our IRD must cover the peer's ORD, our ORD fit its IRD. */
	cp.responder_resources = req.peer_ord == 0x3fff ? d->max_ird :
				 req.peer_ord > d->max_ird ?
							  d->max_ird :
							  (uint8_t)req.peer_ord;
	cp.initiator_depth = req.peer_ird == 0x3fff    ? d->max_ord :
			     req.peer_ird > d->max_ord ? d->max_ord :
							 (uint8_t)req.peer_ird;
	cp.private_data = req.pd;
	cp.private_data_len = (uint8_t)(req.pd_len > 255 ? 255 : req.pd_len);
	cma_queue(c, lis, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &cp);
}

/* Out of descriptors or memory: the connection stays in TCP's queue,
 * and the listener, still readable, would wake us at once, again and
 * again. It rests for CMA_MUTE_MS (timers() resumes it). */
static void listener_mute(struct cma_id *lis, int err)
{
	struct epoll_event ev = { .events = 0, .data.ptr = lis };

	if (epoll_ctl(cm_epfd, EPOLL_CTL_MOD, lis->fd, &ev))
		return;
	lis->muted = true;
	lis->due_ms = cma_now_ms() + CMA_MUTE_MS;
	cma_log("listener cannot accept (%s): resting %d ms", strerror(err),
		CMA_MUTE_MS);
}

static void listener_ready(struct cma_id *lis)
{
	for (;;) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
		struct cma_pend *p;
		int fd = accept4(lis->fd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM)
				listener_mute(lis, errno);
			return;
		}
		if (npends >= CMA_PEND_MAX) {
			close(fd); /* a flood: the initiator sees a reset */
			continue;
		}
		p = calloc(1, sizeof(*p));
		if (!p) {
			close(fd);
			continue;
		}
		p->fd = fd;
		p->listener = lis;
		p->need = CMA_REQ_HDR;
		p->due_ms = cma_now_ms() + CMA_REQUEST_TIMEOUT_MS;
		ev.data.ptr = p;
		if (epoll_ctl(cm_epfd, EPOLL_CTL_ADD, fd, &ev)) {
			close(fd);
			free(p);
			continue;
		}
		p->next = pends;
		pends = p;
		npends++;
	}
}

/* The objects in the epoll set: ids (listening, watched) or pends. */
static bool is_id(void *ptr)
{
	unsigned int i;

	for (i = 0; i < nwatched; i++)
		if (watched[i] == ptr)
			return true;
	return false;
}

static int timers(void)
{
	uint64_t now = cma_now_ms(), best = UINT64_MAX;
	struct cma_pend *p, *next;
	unsigned int i;

	for (p = pends; p; p = next) {
		next = p->next;
		if (now >= p->due_ms)
			pend_close(p); /* no Request in time */
		else if (p->due_ms < best)
			best = p->due_ms;
	}
	for (i = 0; i < nwatched; i++) {
		struct cma_id *id = watched[i];

		if (!id || (id->state != CMA_CONNECTING && !id->muted))
			continue;
		if (now < id->due_ms) {
			if (id->due_ms < best)
				best = id->due_ms;
		} else if (id->state == CMA_CONNECTING) {
			conn_fail(id, ETIMEDOUT);
		} else {
			struct epoll_event ev = { .events = EPOLLIN,
						  .data.ptr = id };

			if (!epoll_ctl(cm_epfd, EPOLL_CTL_MOD, id->fd, &ev))
				id->muted = false;
			else
				id->due_ms = now + CMA_MUTE_MS;
		}
	}
	if (best == UINT64_MAX)
		return 1000;
	return best - now > 1000 ? 1000 : (int)(best - now) + 1;
}

static void *cm_main(void *arg)
{
	struct epoll_event evs[32];
	int n, i, wait_ms = 1000;

	(void)arg;
	for (;;) {
		n = epoll_wait(cm_epfd, evs, 32, wait_ms);
		pthread_mutex_lock(&cma_lock);
		for (i = 0; i < n; i++) {
			void *ptr = evs[i].data.ptr;

			if (!ptr)
				continue; /* the wake-up eventfd */
			if (is_id(ptr)) {
				struct cma_id *id = ptr;

				if (id->state == CMA_LISTEN)
					listener_ready(id);
				else if (id->state == CMA_CONNECTING)
					conn_done(id);
			} else {
				struct cma_pend *p;

				/* Still open? An earlier event may have
				 * closed it. */
				for (p = pends; p && p != ptr; p = p->next)
					;
				if (p)
					pend_read(p);
			}
		}
		wait_ms = timers();
		pthread_mutex_unlock(&cma_lock);
	}
	return NULL;
}

/* Under cma_lock: the thread, once. */
static int thread_start(void)
{
	pthread_t t;
	int err;

	if (cm_epfd >= 0)
		return 0;
	cm_epfd = epoll_create1(EPOLL_CLOEXEC);
	if (cm_epfd < 0)
		return errno;
	err = pthread_create(&t, NULL, cm_main, NULL);
	if (err) {
		close(cm_epfd);
		cm_epfd = -1;
		return err;
	}
	pthread_detach(t);
	return 0;
}

int cma_thread_watch(struct cma_id *id, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = id };
	unsigned int i;
	int err = thread_start();

	if (err)
		return err;
	for (i = 0; i < nwatched; i++)
		if (!watched[i])
			break;
	if (i == nwatched) {
		unsigned int n = nwatched ? 2 * nwatched : 64;
		struct cma_id **w = realloc(watched, n * sizeof(*w));

		if (!w)
			return ENOMEM;
		memset(w + nwatched, 0, (n - nwatched) * sizeof(*w));
		watched = w;
		nwatched = n;
	}
	if (epoll_ctl(cm_epfd, EPOLL_CTL_ADD, id->fd, &ev))
		return errno;
	watched[i] = id;
	id->in_epoll = true;
	return 0;
}

void cma_thread_unwatch(struct cma_id *id)
{
	unsigned int i;

	if (!id->in_epoll)
		return;
	epoll_ctl(cm_epfd, EPOLL_CTL_DEL, id->fd, NULL);
	for (i = 0; i < nwatched; i++)
		if (watched[i] == id)
			watched[i] = NULL;
	id->in_epoll = false;
	id->muted = false;
}

/* Under cma_lock: the id's sockets and engine callbacks go. */
void cma_conn_release(struct cma_id *id)
{
	struct cma_pend *p, *next;

	if (id->attached) {
		swiw_shim()->cm_forget(id);
		id->attached = false;
	}
	cma_thread_unwatch(id);
	for (p = pends; p; p = next) {
		next = p->next;
		if (p->listener == id)
			pend_close(p);
	}
	if (id->fd >= 0)
		close(id->fd);
	id->fd = -1;
}

/* Listen, connect, accept, reject, disconnect --------------------------- */

SWIW_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cma_id *cid = (struct cma_id *)id;
	int err;

	CMA_REAL_ID(id, listen, backlog);
	if (!id)
		return cma_err(EINVAL);
	pthread_mutex_lock(&cma_lock);
	if (cid->state != CMA_BOUND) {
		pthread_mutex_unlock(&cma_lock);
		return cma_err(EINVAL);
	}
	if (cid->real) {
		err = cma_real()->listen(cid->real, backlog) ? errno : 0;
		if (!err)
			cid->state = CMA_LISTEN;
		pthread_mutex_unlock(&cma_lock);
		return err ? cma_err(err) : 0;
	}
	/* librdmacm's 0 (or less): the default, as the kernel's. */
	cid->backlog = backlog > 0 ? backlog : 128;
	err = listen(cid->fd, cid->backlog) ? errno : 0;
	if (!err)
		err = cma_thread_watch(cid, EPOLLIN);
	if (!err)
		cid->state = CMA_LISTEN;
	pthread_mutex_unlock(&cma_lock);
	return err ? cma_err(err) : 0;
}

static void keep_pd(struct cma_id *id, const struct rdma_conn_param *cp)
{
	id->pd_len = cp ? cp->private_data_len : 0;
	if (id->pd_len)
		memcpy(id->pd, cp->private_data, id->pd_len);
}

/* Forwarded connect or accept of an id with a real one behind it. */
static int fwd_conn(struct cma_id *cid,
		    int (*fn)(struct rdma_cm_id *, struct rdma_conn_param *),
		    struct rdma_conn_param *cp)
{
	int err = fn(cid->real, cp) ? errno : 0;

	cma_fwd_sync(cid);
	if (!err)
		cid->state = CMA_MPA;
	return err;
}

/* Both sides: the QP MPA runs on (iWARP has no QP-less connect or accept),
 * IRD/ORD and the private data to send. */
static int conn_prepare(struct cma_id *cid, const struct rdma_conn_param *cp,
			struct ibv_qp **qp)
{
	int err;

	*qp = conn_qp(cid, cp);
	if (!*qp)
		return EINVAL;
	err = conn_params(cid, cp, &cid->ird, &cid->ord);
	if (!err)
		keep_pd(cid, cp);
	return err;
}

SWIW_EXPORT int rdma_connect(struct rdma_cm_id *id,
			     struct rdma_conn_param *conn_param)
{
	struct cma_id *cid = (struct cma_id *)id;
	struct sockaddr *dst = &id->route.addr.dst_addr;
	struct ibv_qp *qp;
	int err, one = 1;

	CMA_REAL_ID(id, connect, conn_param);
	if (!id)
		return cma_err(EINVAL);
	pthread_mutex_lock(&cma_lock);
	if (cid->real) {
		err = fwd_conn(cid, cma_real()->connect, conn_param);
		goto out;
	}
	if ((cid->state != CMA_ROUTE && cid->state != CMA_ADDR) || !cid->dev) {
		err = EINVAL;
		goto out;
	}
	err = conn_prepare(cid, conn_param, &qp);
	if (err)
		goto out;
	cid->qpn = qp->qp_num;
	if (cid->fd < 0) {
		struct sockaddr_storage src = id->route.addr.src_storage;

		cid->fd = socket(dst->sa_family,
				 SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (cid->fd < 0) {
			err = errno;
			goto out;
		}
		setsockopt(cid->fd, SOL_SOCKET, SO_REUSEADDR, &one,
			   sizeof(one));
		if (bind(cid->fd, (struct sockaddr *)&src,
			 cma_sa_len((struct sockaddr *)&src))) {
			err = errno;
			close(cid->fd);
			cid->fd = -1;
			goto out;
		}
	}
	if (cid->tos >= 0)
		setsockopt(cid->fd, IPPROTO_IP, IP_TOS, &cid->tos, sizeof(int));
	if (connect(cid->fd, dst, cma_sa_len(dst)) && errno != EINPROGRESS) {
		err = errno;
		goto out;
	}
	cid->due_ms = cma_now_ms() + CMA_CONNECT_TIMEOUT_MS;
	cid->state = CMA_CONNECTING;
	/* Completion (or failure) is the CM thread's: EPOLLOUT. */
	err = cma_thread_watch(cid, EPOLLOUT);
	if (err)
		cid->state = CMA_ROUTE;
out:
	pthread_mutex_unlock(&cma_lock);
	if (err)
		return cma_err(err);
	return cma_complete(cid);
}

SWIW_EXPORT int rdma_accept(struct rdma_cm_id *id,
			    struct rdma_conn_param *conn_param)
{
	struct cma_id *cid = (struct cma_id *)id;
	struct ibv_qp *qp;
	int err, fd;

	CMA_REAL_ID(id, accept, conn_param);
	if (!id)
		return cma_err(EINVAL);
	pthread_mutex_lock(&cma_lock);
	if (cid->real) {
		err = fwd_conn(cid, cma_real()->accept, conn_param);
		goto out;
	}
	if (cid->state != CMA_REQ) {
		err = EINVAL;
		goto out;
	}
	err = conn_prepare(cid, conn_param, &qp);
	if (err)
		goto out;
	if (cid->tos >= 0)
		setsockopt(cid->fd, IPPROTO_IP, IP_TOS, &cid->tos, sizeof(int));
	fd = cid->fd;
	cid->fd = -1;
	err = attach(cid, qp, fd, true);
	if (err)
		cid->fd = fd;
out:
	pthread_mutex_unlock(&cma_lock);
	if (err)
		return cma_err(err);
	return cma_complete(cid);
}

SWIW_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			    uint8_t private_data_len)
{
	struct cma_id *cid = (struct cma_id *)id;
	int err;

	CMA_REAL_ID(id, reject, private_data, private_data_len);
	if (!id || private_data_len > CMA_PD_MAX ||
	    (private_data_len && !private_data))
		return cma_err(EINVAL);
	pthread_mutex_lock(&cma_lock);
	if (cid->real) {
		err = cma_real()->reject(cid->real, private_data,
					 private_data_len) ?
			      errno :
			      0;
		cid->state = CMA_DONE;
		pthread_mutex_unlock(&cma_lock);
		return err ? cma_err(err) : 0;
	}
	if (cid->state != CMA_REQ) {
		pthread_mutex_unlock(&cma_lock);
		return cma_err(EINVAL);
	}
	err = swiw_shim()->cm_reject(cid->fd, cid->req, cid->req_len,
				     private_data, private_data_len);
	/* FIN after the Reply, as MPA wants it closed. */
	shutdown(cid->fd, SHUT_WR);
	close(cid->fd);
	cid->fd = -1;
	cid->state = CMA_DONE;
	pthread_mutex_unlock(&cma_lock);
	return err ? cma_err(err) : 0;
}

SWIW_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cma_id *cid = (struct cma_id *)id;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	bool wait = false;

	CMA_REAL_ID(id, disconnect);
	if (!id)
		return cma_err(EINVAL);
	pthread_mutex_lock(&cma_lock);
	if (cid->real) {
		int err = cma_real()->disconnect(cid->real) ? errno : 0;

		cma_fwd_sync(cid);
		cid->state = CMA_DONE;
		pthread_mutex_unlock(&cma_lock);
		if (err)
			return cma_err(err);
		if (cid->sync && cma_has_queued(cid))
			return cma_complete(cid);
		return 0;
	}
	switch (cid->state) {
	case CMA_MPA:
		/* The stream ends, the QP goes to error, DISCONNECTED. */
		if (swiw_shim()->cm_disconnect(cid) && id->qp)
			cma_verbs()->modify_qp(id->qp, &a, IBV_QP_STATE);
		wait = true;
		break;
	case CMA_CONNECTING:
		cma_thread_unwatch(cid);
		close(cid->fd);
		cid->fd = -1;
		cid->state = CMA_DONE;
		break;
	case CMA_DONE:
		break;
	default:
		pthread_mutex_unlock(&cma_lock);
		return cma_err(EINVAL);
	}
	cid->state = CMA_DONE;
	pthread_mutex_unlock(&cma_lock);
	/* Synchronous: the DISCONNECTED this caused, if one is due. */
	if (wait && cid->sync && cma_has_queued(cid))
		return cma_complete(cid);
	return 0;
}

/* QPs ------------------------------------------------------------------ */

static int qp_to_init(struct rdma_cm_id *id, struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT };
	int mask;

	if (rdma_init_qp_attr(id, &a, &mask))
		return errno;
	return cma_verbs()->modify_qp(qp, &a, mask);
}

static void own_cqs_free(struct cma_id *cid)
{
	struct rdma_cm_id *id = &cid->id;
	const struct swiw_shim_iface *sw = swiw_shim();

	if (cid->own_send_cq && id->send_cq)
		cma_verbs()->destroy_cq(id->send_cq);
	if (cid->own_recv_cq && id->recv_cq)
		cma_verbs()->destroy_cq(id->recv_cq);
	if (cid->own_send_cq && id->send_cq_channel)
		sw->destroy_comp_channel(id->send_cq_channel);
	if (cid->own_recv_cq && id->recv_cq_channel)
		sw->destroy_comp_channel(id->recv_cq_channel);
	if (cid->own_send_cq) {
		id->send_cq = NULL;
		id->send_cq_channel = NULL;
	}
	if (cid->own_recv_cq) {
		id->recv_cq = NULL;
		id->recv_cq_channel = NULL;
	}
	cid->own_send_cq = cid->own_recv_cq = false;
}

/* librdmacm's rule: missing CQs are made, each with its channel. */
static int own_cq(struct rdma_cm_id *id, uint32_t size, bool send)
{
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;

	ch = swiw_shim()->create_comp_channel(id->verbs);
	if (!ch)
		return errno ? errno : ENOMEM;
	cq = cma_verbs()->create_cq(id->verbs, size ? (int)size : 1, id, ch, 0);
	if (!cq) {
		int err = errno;

		swiw_shim()->destroy_comp_channel(ch);
		return err;
	}
	if (send) {
		id->send_cq_channel = ch;
		id->send_cq = cq;
		((struct cma_id *)id)->own_send_cq = true;
	} else {
		id->recv_cq_channel = ch;
		id->recv_cq = cq;
		((struct cma_id *)id)->own_recv_cq = true;
	}
	return 0;
}

SWIW_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id,
				  struct ibv_qp_init_attr_ex *attr)
{
	struct cma_id *cid = (struct cma_id *)id;
	struct ibv_qp *qp;
	int err = 0;

	CMA_REAL_ID(id, create_qp_ex, attr);
	if (id && attr && cid->real) {
		err = cma_real()->create_qp_ex(cid->real, attr) ? errno : 0;
		pthread_mutex_lock(&cma_lock);
		cma_fwd_sync(cid);
		pthread_mutex_unlock(&cma_lock);
		return err ? cma_err(err) : 0;
	}
	if (!id || !attr || !cid->dev || id->qp)
		return cma_err(EINVAL);
	if (attr->qp_type != IBV_QPT_RC) {
		cma_log("QP type %d: iWARP has RC QPs only", attr->qp_type);
		return cma_err(ENOSYS);
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = cma_dev_pd(cid->dev);
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
	}
	if (!attr->pd || attr->pd->context != id->verbs)
		return cma_err(EINVAL);
	id->pd = attr->pd;
	if (!attr->send_cq && !id->send_cq)
		err = own_cq(id, attr->cap.max_send_wr, true);
	if (!err && !attr->recv_cq && !id->recv_cq)
		err = own_cq(id, attr->cap.max_recv_wr, false);
	if (err)
		goto fail;
	if (!attr->send_cq)
		attr->send_cq = id->send_cq;
	if (!attr->recv_cq)
		attr->recv_cq = id->recv_cq;
	if (!attr->srq)
		attr->srq = id->srq;
	if (attr->comp_mask == IBV_QP_INIT_ATTR_PD) {
		/* The leading members are ibv_qp_init_attr's. */
		qp = cma_verbs()->create_qp(attr->pd,
					    (struct ibv_qp_init_attr *)attr);
	} else {
		struct verbs_context *vc =
			verbs_get_ctx_op(id->verbs, create_qp_ex);

		qp = vc ? vc->create_qp_ex(id->verbs, attr) : NULL;
		if (!vc)
			errno = EOPNOTSUPP;
	}
	if (!qp) {
		err = errno;
		goto fail;
	}
	swiw_shim()->cm_mark_qp(qp);
	err = qp_to_init(id, qp);
	if (err) {
		cma_verbs()->destroy_qp(qp);
		goto fail;
	}
	id->qp = qp;
	return 0;
fail:
	own_cqs_free(cid);
	return cma_err(err);
}

SWIW_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			       struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex a = { 0 };
	int ret;

	CMA_REAL_ID(id, create_qp, pd, qp_init_attr);
	if (!id || !qp_init_attr)
		return cma_err(EINVAL);
	a.qp_context = qp_init_attr->qp_context;
	a.send_cq = qp_init_attr->send_cq;
	a.recv_cq = qp_init_attr->recv_cq;
	a.srq = qp_init_attr->srq;
	a.cap = qp_init_attr->cap;
	a.qp_type = qp_init_attr->qp_type;
	a.sq_sig_all = qp_init_attr->sq_sig_all;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	ret = rdma_create_qp_ex(id, &a);
	if (!ret) {
		qp_init_attr->cap = a.cap;
		qp_init_attr->send_cq = a.send_cq;
		qp_init_attr->recv_cq = a.recv_cq;
	}
	return ret;
}

/*
 * A destroy call for an id the kernel's rdma_cm serves (a real id, or
 * ours with a real one behind it) goes to librdmacm's @fn; true if so.
 */
static bool fwd_destroy(struct rdma_cm_id *id, void (*fn)(struct rdma_cm_id *))
{
	struct cma_id *cid = (struct cma_id *)id;

	if (!id)
		return false;
	if (!cma_ours(id)) {
		/* As CMA_REAL_ID: a stray pointer is left alone. */
		if (fn && cma_fwd_is_real(id))
			fn(id);
		return true;
	}
	if (!fn || !cid->real)
		return false;
	fn(cid->real);
	pthread_mutex_lock(&cma_lock);
	cma_fwd_sync(cid);
	pthread_mutex_unlock(&cma_lock);
	return true;
}

SWIW_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct cma_id *cid = (struct cma_id *)id;

	if (fwd_destroy(id, cma_real() ? cma_real()->destroy_qp : NULL))
		return;
	if (!id || !id->qp)
		return;
	pthread_mutex_lock(&cma_lock);
	if (cid->attached) {
		swiw_shim()->cm_forget(cid);
		cid->attached = false;
	}
	pthread_mutex_unlock(&cma_lock);
	cma_verbs()->destroy_qp(id->qp);
	id->qp = NULL;
	own_cqs_free(cid);
}

SWIW_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id,
				   struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq_init_attr a = { 0 };
	struct cma_id *cid = (struct cma_id *)id;
	struct ibv_pd *pd;

	CMA_REAL_ID(id, create_srq_ex, attr);
	if (id && attr && cid->real) {
		int err = cma_real()->create_srq_ex(cid->real, attr) ? errno :
								       0;

		pthread_mutex_lock(&cma_lock);
		cma_fwd_sync(cid);
		pthread_mutex_unlock(&cma_lock);
		return err ? cma_err(err) : 0;
	}
	if (!id || !attr || !cid->dev || id->srq)
		return cma_err(EINVAL);
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	    attr->srq_type != IBV_SRQT_BASIC)
		return cma_err(ENOSYS);
	pd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) && attr->pd ?
		     attr->pd :
		     cma_dev_pd(cid->dev);
	a.srq_context = attr->srq_context;
	a.attr = attr->attr;
	id->srq = pd ? cma_verbs()->create_srq(pd, &a) : NULL;
	if (!id->srq)
		return -1;
	id->pd = pd;
	return 0;
}

SWIW_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex a = { 0 };

	if (!attr)
		return cma_err(EINVAL);
	a.srq_context = attr->srq_context;
	a.attr = attr->attr;
	a.comp_mask = IBV_SRQ_INIT_ATTR_PD;
	a.pd = pd;
	return rdma_create_srq_ex(id, &a);
}

SWIW_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (fwd_destroy(id, cma_real() ? cma_real()->destroy_srq : NULL))
		return;
	if (!id || !id->srq)
		return;
	cma_verbs()->destroy_srq(id->srq);
	id->srq = NULL;
}

/* Synchronous endpoints -------------------------------------------------- */

SWIW_EXPORT int rdma_create_ep(struct rdma_cm_id **id,
			       struct rdma_addrinfo *res, struct ibv_pd *pd,
			       struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm;
	struct cma_id *cid;

	if (!id || !res)
		return cma_err(EINVAL);
	if (rdma_create_id(NULL, &cm, NULL, RDMA_PS_TCP))
		return -1;
	cid = (struct cma_id *)cm;
	/* As librdmacm: the QP type is the address info's. */
	if (qp_init_attr)
		qp_init_attr->qp_type = IBV_QPT_RC;
	if (res->ai_flags & RAI_PASSIVE) {
		if (!res->ai_src_addr || rdma_bind_addr(cm, res->ai_src_addr))
			goto fail;
		if (qp_init_attr) {
			cid->has_qp_init = true;
			cid->qp_init = *qp_init_attr;
			cid->qp_init_pd = pd;
		}
		*id = cm;
		return 0;
	}
	if (!res->ai_dst_addr ||
	    rdma_resolve_addr(cm, res->ai_src_addr, res->ai_dst_addr, 2000) ||
	    rdma_resolve_route(cm, 2000))
		goto fail;
	if (qp_init_attr && rdma_create_qp(cm, pd, qp_init_attr))
		goto fail;
	*id = cm;
	return 0;
fail : {
	int err = errno;

	rdma_destroy_id(cm);
	return cma_err(err);
}
}

SWIW_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

SWIW_EXPORT int rdma_get_request(struct rdma_cm_id *listen,
				 struct rdma_cm_id **id)
{
	struct cma_id *lis = (struct cma_id *)listen;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *child;
	int err;

	if (!listen || !id || !cma_ours(listen) || !lis->sync)
		return cma_err(EINVAL);
	if (rdma_get_cm_event(listen->channel, &ev))
		return -1;
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST || ev->status) {
		err = ev->status ? (ev->status < 0 ? -ev->status : ev->status) :
				   EINVAL;
		rdma_ack_cm_event(ev);
		return cma_err(err);
	}
	child = ev->id;
	if (lis->has_qp_init) {
		struct ibv_qp_init_attr a = lis->qp_init;

		if (rdma_create_qp(child, lis->qp_init_pd, &a)) {
			err = errno;
			rdma_ack_cm_event(ev);
			rdma_destroy_id(child);
			return cma_err(err);
		}
	}
	child->event = ev;
	*id = child;
	return 0;
}
