// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * librdmacm for swiw devices: devices and addresses. A swiw device owns
 * the addresses of its interface, which are its GIDs (IPv4-mapped or
 * IPv6), so an address belongs to the device that lists it as a GID. The
 * routing table picks the source address for a destination (a connected
 * UDP socket's name). Each device is opened once per process through
 * libibverbs and that context is id->verbs for every id on it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "swiw_cma.h"

static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cma_dev *devs; /* never freed: contexts stay open */

socklen_t cma_sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					   sizeof(struct sockaddr_in);
}

bool cma_sa_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(
			&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
	       htonl(INADDR_ANY);
}

uint16_t cma_sa_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	return 0;
}

static void sa_gid(const struct sockaddr *sa, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (sa->sa_family == AF_INET6) {
		memcpy(gid->raw, &((const struct sockaddr_in6 *)sa)->sin6_addr,
		       16);
	} else {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(gid->raw + 12,
		       &((const struct sockaddr_in *)sa)->sin_addr, 4);
	}
}

static bool dev_has_gid(struct cma_dev *d, const union ibv_gid *want)
{
	const struct swiw_shim_iface *sw = swiw_shim();
	union ibv_gid gid;
	int i;

	for (i = 0; i < 128; i++) {
		if (sw->query_gid(d->ctx, 1, i, &gid))
			return false;
		if (!memcmp(&gid, want, sizeof(gid)))
			return true;
	}
	return false;
}

/* Opens the swiw devices not seen before; under dev_lock. */
static void devs_refresh(void)
{
	const struct cma_verbs *v = cma_verbs();
	const struct swiw_shim_iface *sw = swiw_shim();
	struct ibv_device **list;
	int n, i;

	if (!v || !sw)
		return;
	list = ibv_get_device_list(&n);
	if (!list)
		return;
	for (i = 0; i < n; i++) {
		struct ibv_device_attr attr;
		struct cma_dev *d;

		if (!swiw_shim_is_dev(list[i]))
			continue;
		for (d = devs; d; d = d->next)
			if (d->dev == list[i])
				break;
		if (d)
			continue;
		d = calloc(1, sizeof(*d));
		if (!d)
			break;
		d->ctx = v->open_device(list[i]);
		if (!d->ctx || v->query_device(d->ctx, &attr)) {
			cma_log("cannot open %s", list[i]->name);
			free(d);
			continue;
		}
		sw->cm_mark_ctx(d->ctx);
		d->dev = list[i]; /* a singleton: the context holds it */
		d->max_ird = (uint8_t)(attr.max_qp_rd_atom > 255 ?
					       255 :
					       attr.max_qp_rd_atom);
		d->max_ord = (uint8_t)(attr.max_qp_init_rd_atom > 255 ?
					       255 :
					       attr.max_qp_init_rd_atom);
		d->next = devs;
		devs = d;
	}
	v->free_device_list(list);
}

struct cma_dev *cma_dev_for_addr(const struct sockaddr *sa)
{
	union ibv_gid gid;
	struct cma_dev *d;
	int pass;

	if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)
		return NULL;
	sa_gid(sa, &gid);
	pthread_mutex_lock(&dev_lock);
	for (pass = 0; pass < 2; pass++) {
		for (d = devs; d; d = d->next)
			if (dev_has_gid(d, &gid))
				goto out;
		devs_refresh();
	}
out:
	pthread_mutex_unlock(&dev_lock);
	return d;
}

struct cma_dev *cma_dev_for_ctx(struct ibv_context *ctx)
{
	struct cma_dev *d;

	pthread_mutex_lock(&dev_lock);
	for (d = devs; d; d = d->next)
		if (d->ctx == ctx)
			break;
	pthread_mutex_unlock(&dev_lock);
	return d;
}

struct ibv_pd *cma_dev_pd(struct cma_dev *d)
{
	struct ibv_pd *pd;

	pthread_mutex_lock(&dev_lock);
	if (!d->pd)
		d->pd = cma_verbs()->alloc_pd(d->ctx);
	pd = d->pd;
	pthread_mutex_unlock(&dev_lock);
	return pd;
}

/* The source address the routing table gives for @dst (port 0). */
int cma_route_src(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	socklen_t len = sizeof(*src);
	int fd, err = 0;

	fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (connect(fd, dst, cma_sa_len(dst)) ||
	    getsockname(fd, (struct sockaddr *)src, &len))
		err = errno;
	close(fd);
	if (!err) {
		if (src->ss_family == AF_INET6)
			((struct sockaddr_in6 *)src)->sin6_port = 0;
		else
			((struct sockaddr_in *)src)->sin_port = 0;
	}
	return err;
}

/*
 * The device of @sa, which becomes the id's (NULL for a wildcard). An
 * address no swiw device owns is the kernel rdma_cm's: ENODEV, with the
 * reason in @why for cma_fwd_attach to say.
 */
int cma_bind_dev(struct cma_id *id, const struct sockaddr *sa, char *why,
		 size_t len)
{
	char buf[INET6_ADDRSTRLEN] = "?";
	struct cma_dev *d;

	if (cma_sa_any(sa))
		return 0;
	d = cma_dev_for_addr(sa);
	if (!d) {
		inet_ntop(
			sa->sa_family,
			sa->sa_family == AF_INET6 ?
				(const void *)&((const struct sockaddr_in6 *)sa)
					->sin6_addr :
				(const void *)&((const struct sockaddr_in *)sa)
					->sin_addr,
			buf, sizeof(buf));
		snprintf(why, len, "%s is not an address of a swiw device",
			 buf);
		return ENODEV;
	}
	if (id->dev && id->dev != d)
		return EINVAL;
	id->dev = d;
	id->id.verbs = d->ctx;
	id->id.port_num = 1;
	return 0;
}

SWIW_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cma_id *cid = (struct cma_id *)id;
	char why[96];
	int err, one = 1;

	CMA_REAL_ID(id, bind_addr, addr);
	if (!id || !addr ||
	    (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return cma_err(EINVAL);
	pthread_mutex_lock(&cma_lock);
	if (cid->state != CMA_IDLE) {
		err = EINVAL;
		goto out;
	}
	err = cma_bind_dev(cid, addr, why, sizeof(why));
	if (err == ENODEV) {
		/* Another device's address: the kernel's rdma_cm. */
		err = cma_fwd_attach(cid, why);
		if (!err && cma_real()->bind_addr(cid->real, addr))
			err = errno;
		cma_fwd_sync(cid);
		if (!err)
			cid->state = CMA_BOUND;
		goto out;
	}
	if (err)
		goto out;
	/* The port is a TCP port: a socket bound to it holds it. */
	cid->fd = socket(addr->sa_family,
			 SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (cid->fd < 0) {
		err = errno;
		goto out;
	}
	/* No TIME_WAIT on rdma_cm ports: a restarted server gets its port
	 * back; a second listener still gets EADDRINUSE at listen. */
	setsockopt(cid->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (addr->sa_family == AF_INET6)
		setsockopt(cid->fd, IPPROTO_IPV6, IPV6_V6ONLY, &cid->afonly,
			   sizeof(int));
	if (bind(cid->fd, addr, cma_sa_len(addr))) {
		err = errno;
		close(cid->fd);
		cid->fd = -1;
		goto out;
	} else {
		socklen_t len = sizeof(id->route.addr.src_storage);

		getsockname(cid->fd, &id->route.addr.src_addr, &len);
	}
	cid->state = CMA_BOUND;
out:
	pthread_mutex_unlock(&cma_lock);
	return err ? cma_err(err) : 0;
}

SWIW_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id,
				  struct sockaddr *src_addr,
				  struct sockaddr *dst_addr, int timeout_ms)
{
	struct cma_id *cid = (struct cma_id *)id;
	struct sockaddr_storage src;
	char why[96] = "";
	int err = 0;

	CMA_REAL_ID(id, resolve_addr, src_addr, dst_addr, timeout_ms);
	/* Answered at once from local tables, for swiw devices. */
	if (!id || !dst_addr ||
	    (dst_addr->sa_family != AF_INET && dst_addr->sa_family != AF_INET6))
		return cma_err(EINVAL);
	if (src_addr && cid->state == CMA_IDLE && rdma_bind_addr(id, src_addr))
		return -1;
	pthread_mutex_lock(&cma_lock);
	if (cid->state != CMA_IDLE && cid->state != CMA_BOUND) {
		pthread_mutex_unlock(&cma_lock);
		return cma_err(EINVAL);
	}
	if (cid->real)
		goto forward;
	memcpy(&id->route.addr.dst_storage, dst_addr, cma_sa_len(dst_addr));
	if (cid->state == CMA_IDLE || cma_sa_any(&id->route.addr.src_addr)) {
		uint16_t port = cma_sa_port(&id->route.addr.src_addr);

		err = cma_route_src(dst_addr, &src);
		if (!err) {
			if (src.ss_family == AF_INET)
				((struct sockaddr_in *)&src)->sin_port =
					htons(port);
			else
				((struct sockaddr_in6 *)&src)->sin6_port =
					htons(port);
			memcpy(&id->route.addr.src_storage, &src, sizeof(src));
		}
	}
	if (!err)
		err = cma_bind_dev(cid, &id->route.addr.src_addr, why,
				   sizeof(why));
	if (!err && !cid->dev) {
		snprintf(why, sizeof(why), "no swiw device routes there");
		err = ENODEV;
	}
	if (err == ENODEV && cid->state == CMA_IDLE) {
		if (!cma_fwd_attach(cid, why))
			goto forward;
	} else if (err == ENODEV) {
		cma_log("%s: ADDR_ERROR", why);
	}
	if (!err)
		cid->state = CMA_ADDR;
	/* As the kernel's: the call succeeds, the event tells. */
	cma_queue(cid, cid,
		  err ? RDMA_CM_EVENT_ADDR_ERROR : RDMA_CM_EVENT_ADDR_RESOLVED,
		  -err, NULL);
	pthread_mutex_unlock(&cma_lock);
	return cma_complete(cid);
forward:
	/* The kernel's rdma_cm resolves; its event comes through. */
	err = cma_real()->resolve_addr(cid->real, NULL, dst_addr, timeout_ms) ?
		      errno :
		      0;
	cma_fwd_sync(cid);
	if (!err)
		cid->state = CMA_ADDR;
	pthread_mutex_unlock(&cma_lock);
	if (err)
		return cma_err(err);
	return cma_complete(cid);
}

SWIW_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cma_id *cid = (struct cma_id *)id;

	CMA_REAL_ID(id, resolve_route, timeout_ms);
	if (!id)
		return cma_err(EINVAL);
	pthread_mutex_lock(&cma_lock);
	if (cid->state != CMA_ADDR) {
		pthread_mutex_unlock(&cma_lock);
		return cma_err(EINVAL);
	}
	if (cid->real) {
		int err = cma_real()->resolve_route(cid->real, timeout_ms) ?
				  errno :
				  0;

		cma_fwd_sync(cid);
		if (!err)
			cid->state = CMA_ROUTE;
		pthread_mutex_unlock(&cma_lock);
		return err ? cma_err(err) : cma_complete(cid);
	}
	/* TCP routes itself: nothing to look up. */
	cid->state = CMA_ROUTE;
	cma_queue(cid, cid, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL);
	pthread_mutex_unlock(&cma_lock);
	return cma_complete(cid);
}

SWIW_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list;
	struct cma_dev *d;
	int n = 0;

	if (!swiw_shim()) {
		errno = ENODEV;
		return NULL;
	}
	pthread_mutex_lock(&dev_lock);
	devs_refresh();
	for (d = devs; d; d = d->next)
		n++;
	list = calloc((size_t)n + 1, sizeof(*list));
	if (list) {
		n = 0;
		for (d = devs; d; d = d->next)
			list[n++] = d->ctx;
	}
	pthread_mutex_unlock(&dev_lock);
	if (list && num_devices)
		*num_devices = n;
	return list;
}

SWIW_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

/* rdma_getaddrinfo ---------------------------------------------------------- */

static struct sockaddr *sa_dup(const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr *p = malloc(len);

	if (p)
		memcpy(p, sa, len);
	return p;
}

SWIW_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	struct rdma_addrinfo *next;

	for (; res; res = next) {
		next = res->ai_next;
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
	}
}

static int gai_errno(int rc)
{
	switch (rc) {
	case EAI_SYSTEM:
		return errno;
	case EAI_MEMORY:
		return ENOMEM;
	case EAI_FAMILY:
	case EAI_SOCKTYPE:
	case EAI_BADFLAGS:
		return EINVAL;
	default:
		return EADDRNOTAVAIL;
	}
}

SWIW_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
				 const struct rdma_addrinfo *hints,
				 struct rdma_addrinfo **res)
{
	struct addrinfo gh = { 0 }, *gr = NULL;
	struct rdma_addrinfo *r;
	int rc, flags = hints ? hints->ai_flags : 0;

	if (!res || (!node && !service))
		return cma_err(EINVAL);
	if (hints && hints->ai_port_space &&
	    hints->ai_port_space != RDMA_PS_TCP) {
		cma_log("port space %d is not supported (RDMA_PS_TCP only)",
			hints->ai_port_space);
		return cma_err(ENOSYS);
	}
	if (hints && hints->ai_qp_type && hints->ai_qp_type != IBV_QPT_RC)
		return cma_err(ENOSYS);
	gh.ai_family = hints ? hints->ai_family : AF_UNSPEC;
	gh.ai_socktype = SOCK_STREAM;
	gh.ai_flags = (flags & RAI_PASSIVE ? AI_PASSIVE : 0) |
		      (flags & RAI_NUMERICHOST ? AI_NUMERICHOST : 0);
	rc = getaddrinfo(node, service, &gh, &gr);
	if (rc)
		return cma_err(gai_errno(rc));
	r = calloc(1, sizeof(*r));
	if (!r) {
		freeaddrinfo(gr);
		return cma_err(ENOMEM);
	}
	r->ai_flags = flags;
	r->ai_family = gr->ai_family;
	r->ai_qp_type = IBV_QPT_RC;
	r->ai_port_space = RDMA_PS_TCP;
	if (flags & RAI_PASSIVE) {
		r->ai_src_len = gr->ai_addrlen;
		r->ai_src_addr = sa_dup(gr->ai_addr, gr->ai_addrlen);
	} else {
		r->ai_dst_len = gr->ai_addrlen;
		r->ai_dst_addr = sa_dup(gr->ai_addr, gr->ai_addrlen);
		if (hints && hints->ai_src_addr && hints->ai_src_len) {
			r->ai_src_len = hints->ai_src_len;
			r->ai_src_addr =
				sa_dup(hints->ai_src_addr, hints->ai_src_len);
			if (!r->ai_src_addr) {
				rdma_freeaddrinfo(r);
				freeaddrinfo(gr);
				return cma_err(ENOMEM);
			}
		}
	}
	freeaddrinfo(gr);
	if (!r->ai_src_addr && !r->ai_dst_addr) {
		rdma_freeaddrinfo(r);
		return cma_err(ENOMEM);
	}
	*res = r;
	return 0;
}
