// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Device discovery: one swiw device per network interface that is up, has
 * an address and is selected by the configuration. Interfaces are read
 * from rtnetlink (libnl-route-3) of the caller's network namespace every
 * time a device list is built, so devices follow interfaces as they come
 * and go; port state, MTU and GIDs are read live when queried.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <linux/ethtool.h>
#include <linux/if_addr.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>

#include "swiw.h"
#include "swiw_config.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct swiw_device *registry;

/* ETHTOOL_GSET works in any namespace and needs no privilege. */
static unsigned int netif_speed(const char *name)
{
	struct ethtool_cmd ec = { .cmd = ETHTOOL_GSET };
	struct ifreq ifr = {};
	unsigned int speed;
	int fd;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_data = (void *)&ec;
	/* Not ethtool_cmd_speed(): it shifts a promoted int, UB at 0xffff. */
	speed = ioctl(fd, SIOCETHTOOL, &ifr) ?
			0 :
			(uint32_t)ec.speed_hi << 16 | ec.speed;
	close(fd);
	return speed == (unsigned int)SPEED_UNKNOWN ? 0 : speed;
}

static void gid_from_addr(union ibv_gid *gid, int family, const void *a)
{
	memset(gid, 0, sizeof(*gid));
	if (family == AF_INET) {
		/* IPv4-mapped IPv6, ::ffff:a.b.c.d, as iWARP and RoCEv2 use. */
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(&gid->raw[12], a, 4);
	} else {
		memcpy(gid->raw, a, 16);
	}
}

struct addr_walk {
	struct swiw_netif *ifs;
	int n;
	int pass; /* 0: IPv4, 1: global IPv6, 2: link-local IPv6 */
};

static void addr_cb(struct nl_object *obj, void *arg)
{
	struct rtnl_addr *ra = (struct rtnl_addr *)obj;
	struct addr_walk *w = arg;
	int family = rtnl_addr_get_family(ra);
	struct nl_addr *local = rtnl_addr_get_local(ra);
	int ifindex = rtnl_addr_get_ifindex(ra);
	struct swiw_netif *nif = NULL;
	const uint8_t *bin;
	bool ll;
	int i;

	if (!local || (family != AF_INET && family != AF_INET6))
		return;
	if (rtnl_addr_get_flags(ra) & (IFA_F_TENTATIVE | IFA_F_DADFAILED))
		return;
	if (nl_addr_get_len(local) != (family == AF_INET ? 4u : 16u))
		return;
	bin = nl_addr_get_binary_addr(local);
	ll = family == AF_INET6 && bin[0] == 0xfe && (bin[1] & 0xc0) == 0x80;
	if ((w->pass == 0) != (family == AF_INET) || (w->pass == 1 && ll) ||
	    (w->pass == 2 && !ll))
		return;
	for (i = 0; i < w->n; i++)
		if (w->ifs[i].ifindex == ifindex)
			nif = &w->ifs[i];
	if (!nif || nif->ngid >= SWIW_MAX_GID)
		return;
	gid_from_addr(&nif->gid[nif->ngid++], family, bin);
}

static void link_cb(struct nl_object *obj, void *arg)
{
	struct rtnl_link *rl = (struct rtnl_link *)obj;
	struct addr_walk *w = arg;
	struct swiw_netif *nif = &w->ifs[w->n];
	struct nl_addr *ll = rtnl_link_get_addr(rl);
	const char *name = rtnl_link_get_name(rl);

	if (!name || strlen(name) >= sizeof(nif->name))
		return;
	memset(nif, 0, sizeof(*nif));
	nif->ifindex = rtnl_link_get_ifindex(rl);
	snprintf(nif->name, sizeof(nif->name), "%s", name);
	nif->flags = rtnl_link_get_flags(rl);
	nif->mtu = rtnl_link_get_mtu(rl);
	if (ll && nl_addr_get_len(ll) == 6) {
		const uint8_t *mac = nl_addr_get_binary_addr(ll);

		memcpy(nif->mac, mac, 6);
		nif->has_mac = memcmp(mac, "\0\0\0\0\0\0", 6) != 0;
	}
	w->n++;
}

/* Every interface of the caller's namespace, with its addresses as GIDs. */
int swiw_netif_list(struct swiw_netif **out)
{
	struct nl_cache *links = NULL, *addrs = NULL;
	struct addr_walk w = {};
	struct nl_sock *sk;
	int ret, i;

	*out = NULL;
	sk = nl_socket_alloc();
	if (!sk)
		return -ENOMEM;
	ret = nl_connect(sk, NETLINK_ROUTE);
	if (ret)
		goto out;
	ret = rtnl_link_alloc_cache(sk, AF_UNSPEC, &links);
	if (ret)
		goto out;
	ret = rtnl_addr_alloc_cache(sk, &addrs);
	if (ret)
		goto out;
	w.ifs = calloc(nl_cache_nitems(links) + 1, sizeof(*w.ifs));
	if (!w.ifs) {
		ret = -NLE_NOMEM;
		goto out;
	}
	nl_cache_foreach(links, link_cb, &w);
	for (w.pass = 0; w.pass < 3; w.pass++)
		nl_cache_foreach(addrs, addr_cb, &w);
	for (i = 0; i < w.n; i++)
		if (w.ifs[i].flags & IFF_UP)
			w.ifs[i].speed_mbps = netif_speed(w.ifs[i].name);
	*out = w.ifs;
	ret = w.n;
out:
	if (ret < 0) {
		swiw_err("reading network interfaces: %s", nl_geterror(ret));
		ret = -EIO;
	}
	nl_cache_free(addrs);
	nl_cache_free(links);
	nl_socket_free(sk);
	return ret;
}

/* One interface by index; -ENODEV once it is gone. */
int swiw_netif_get(int ifindex, struct swiw_netif *nif)
{
	struct swiw_netif *ifs;
	int n, i, ret = -ENODEV;

	n = swiw_netif_list(&ifs);
	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		if (ifs[i].ifindex == ifindex) {
			*nif = ifs[i];
			ret = 0;
		}
	}
	free(ifs);
	return ret;
}

bool swiw_netif_wanted(const struct swiw_netif *nif)
{
	return (nif->flags & IFF_UP) && nif->ngid &&
	       swiw_config_iface_match(swiw_config()->interfaces, nif->name);
}

/* lo and dummy report oper state UNKNOWN, which the kernel counts as up. */
bool swiw_netif_port_active(const struct swiw_netif *nif)
{
	return (nif->flags & (IFF_UP | IFF_RUNNING)) == (IFF_UP | IFF_RUNNING);
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
	const uint8_t *p = data;

	while (len--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h;
}

/*
 * Node GUID: the modified EUI-64 of the MAC address. Interfaces without one
 * (lo, tunnels) get a stable, locally administered value from the machine
 * id and the interface name, so every run on a host sees the same GUID.
 */
static __be64 netif_guid(const struct swiw_netif *nif)
{
	uint8_t g[8];
	uint64_t v;

	if (nif->has_mac) {
		g[0] = nif->mac[0] ^ 0x02;
		g[1] = nif->mac[1];
		g[2] = nif->mac[2];
		g[3] = 0xff;
		g[4] = 0xfe;
		g[5] = nif->mac[3];
		g[6] = nif->mac[4];
		g[7] = nif->mac[5];
		memcpy(&v, g, 8);
		return v;
	}

	char id[64] = "swiw";
	FILE *f = fopen("/etc/machine-id", "re");
	uint64_t h = 0xcbf29ce484222325ULL;

	if (f) {
		if (!fgets(id, sizeof(id), f))
			strcpy(id, "swiw");
		fclose(f);
	}
	h = fnv1a(h, id, strlen(id));
	h = fnv1a(h, nif->name, strlen(nif->name));
	/* First octet 0x02: locally administered, not multicast. */
	return htobe64((h & 0x00ffffffffffffffULL) | 0x0200000000000000ULL);
}

static struct swiw_device *device_new(const struct swiw_netif *nif)
{
	struct swiw_device *dev = calloc(1, sizeof(*dev));
	struct ibv_device *ib;

	if (!dev)
		return NULL;
	ib = &dev->vdev.device;
	ib->node_type = IBV_NODE_RNIC;
	ib->transport_type = IBV_TRANSPORT_IWARP;
	snprintf(ib->name, sizeof(ib->name), SWIW_NAME_PREFIX "%s", nif->name);
	/* No uverbs character device stands behind a swiw device. */
	snprintf(ib->dev_name, sizeof(ib->dev_name), "%s", ib->name);
	ib->dev_path[0] = '\0';
	ib->ibdev_path[0] = '\0';
	dev->vdev.ops = &swiw_dev_ops;
	dev->vdev.sysfs = NULL;
	dev->vdev.core_support = IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS;
	atomic_init(&dev->vdev.refcount, 1); /* the registry's */
	dev->ifindex = nif->ifindex;
	snprintf(dev->ifname, sizeof(dev->ifname), "%s", nif->name);
	dev->node_guid = netif_guid(nif);
	return dev;
}

void swiw_device_uninit(struct verbs_device *vdev)
{
	free(swiw_container_of(vdev, struct swiw_device, vdev));
}

void swiw_device_put(struct ibv_device *ibdev)
{
	struct verbs_device *vdev = swiw_verbs_device(ibdev);

	if (atomic_fetch_sub(&vdev->refcount, 1) == 1)
		swiw_device_uninit(vdev);
}

__be64 swiw_device_guid(struct ibv_device *ibdev)
{
	return to_swiw_dev(ibdev)->node_guid;
}

/*
 * Brings the registry in line with the interfaces present now and returns
 * the wanted devices, each with a reference the caller owns. A device whose
 * interface went away leaves the registry; open contexts keep it alive.
 */
int swiw_devices_get(struct ibv_device ***out)
{
	struct swiw_device **pp, *dev, **keep;
	struct swiw_netif *ifs;
	struct ibv_device **devs;
	int n, i, cnt = 0;

	*out = NULL;
	n = swiw_netif_list(&ifs);
	if (n < 0)
		return n;
	devs = calloc(n + 1, sizeof(*devs));
	keep = calloc(n + 1, sizeof(*keep));
	if (!devs || !keep) {
		free(devs);
		free(keep);
		free(ifs);
		return -ENOMEM;
	}

	pthread_mutex_lock(&registry_lock);
	for (i = 0; i < n; i++) {
		const struct swiw_netif *nif = &ifs[i];

		if (!swiw_netif_wanted(nif))
			continue;
		for (dev = registry; dev; dev = dev->next)
			if (dev->ifindex == nif->ifindex &&
			    !strcmp(dev->ifname, nif->name))
				break;
		if (!dev) {
			dev = device_new(nif);
			if (!dev)
				continue;
			dev->next = registry;
			registry = dev;
			swiw_dbg("device %s added", dev->vdev.device.name);
		}
		keep[cnt] = dev;
		atomic_fetch_add(&dev->vdev.refcount, 1);
		devs[cnt++] = &dev->vdev.device;
	}
	/* Drop devices whose interface is gone, down or no longer wanted. */
	for (pp = &registry; *pp;) {
		dev = *pp;
		for (i = 0; i < cnt && keep[i] != dev; i++)
			;
		if (i < cnt) {
			pp = &dev->next;
			continue;
		}
		*pp = dev->next;
		swiw_dbg("device %s removed", dev->vdev.device.name);
		swiw_device_put(&dev->vdev.device);
	}
	pthread_mutex_unlock(&registry_lock);

	free(keep);
	free(ifs);
	*out = devs;
	return cnt;
}
