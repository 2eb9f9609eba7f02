// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libswiw-preload.so: makes swiw devices visible to unmodified programs
 * through the distribution's own libibverbs.
 *
 * libibverbs only lists devices the kernel reports, so this library, loaded
 * with LD_PRELOAD (swiw-run does it), interposes ibv_get_device_list and
 * appends swiw's devices, and answers for swiw devices the few exported
 * calls that would read sysfs or a uverbs file (GID, P_Key, GUID,
 * completion channels, import). Devices of any other provider are passed
 * to the real functions untouched. Everything else, opening devices
 * included, is libibverbs' own code running the provider's ops.
 *
 * The library does not link libibverbs: a program that never uses verbs
 * pays nothing for having it preloaded.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "swiw_cma.h"
#include "swiw_shim.h"
#include "verbs_abi.h"

#ifndef SWIW_PROVIDER_PATH
#define SWIW_PROVIDER_PATH "libswiw-rdmav34.so"
#endif
#define SWIW_PROVIDER_FILE "libswiw-rdmav34.so"

#define SWIW_EXPORT __attribute__((visibility("default")))

static const struct swiw_shim_iface *swiw;
static pthread_once_t shim_once = PTHREAD_ONCE_INIT;
/* Set while libibverbs itself must see only kernel devices. */
static __thread int hide_swiw;

/*
 * The real libibverbs function: the next definition after this library, or,
 * when libibverbs was loaded with RTLD_LOCAL (Python extension modules load
 * their libraries that way) and so is outside the global scope, the one in
 * the already loaded libibverbs.so.1 itself.
 */
void *swiw_real_sym(const char *name, const char *version)
{
	static void *verbs;
	void *p = dlvsym(RTLD_NEXT, name, version);

	if (p)
		return p;
	if (!verbs)
		verbs = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
	p = verbs ? dlvsym(verbs, name, version) : NULL;
	if (!p)
		fprintf(stderr, "swiw: %s@%s not found in libibverbs\n", name,
			version);
	return p;
}

/* Declares and resolves real_<name>, once; NULL if libibverbs lacks it. */
#define REAL(name, version)                   \
	static __typeof__(name) *real_##name; \
	if (!real_##name)                     \
	real_##name = (__typeof__(name) *)swiw_real_sym(#name, version)

static void *open_provider(void)
{
	/* Not from the caller of a privileged program (AT_SECURE). */
	const char *env = secure_getenv("SWIW_PROVIDER");
	char here[PATH_MAX];
	Dl_info info;
	void *h;

	if (env && *env)
		return dlopen(env, RTLD_NOW | RTLD_LOCAL);
	/* Beside this library first: a build tree, or a relocated install. */
	if (dladdr((void *)open_provider, &info) && info.dli_fname) {
		const char *slash = strrchr(info.dli_fname, '/');

		if (slash && (size_t)(slash - info.dli_fname) + 1 +
					     sizeof(SWIW_PROVIDER_FILE) <
				     sizeof(here)) {
			snprintf(here, sizeof(here), "%.*s/%s",
				 (int)(slash - info.dli_fname), info.dli_fname,
				 SWIW_PROVIDER_FILE);
			if (!access(here, R_OK)) {
				h = dlopen(here, RTLD_NOW | RTLD_LOCAL);
				if (h)
					return h;
			}
		}
	}
	return dlopen(SWIW_PROVIDER_PATH, RTLD_NOW | RTLD_LOCAL);
}

static void shim_init(void)
{
	const struct swiw_shim_iface *iface;
	swiw_shim_iface_fn get;
	char why[PATH_MAX + 128];
	void *h;

	if (swiw_verbs_abi_check(swiw_real_sym("_verbs_init_and_alloc_context",
					       SWIW_VERBS_PABI),
				 why, sizeof(why))) {
		fprintf(stderr, "swiw: %s; swiw devices are disabled\n", why);
		return;
	}
	h = open_provider();
	if (!h) {
		fprintf(stderr,
			"swiw: cannot load the provider (%s); swiw devices are disabled\n",
			dlerror());
		return;
	}
	get = (swiw_shim_iface_fn)dlsym(h, SWIW_SHIM_IFACE_SYMBOL);
	iface = get ? get() : NULL;
	if (!iface || iface->version != SWIW_SHIM_IFACE_VERSION ||
	    iface->size < sizeof(*iface)) {
		fprintf(stderr,
			"swiw: the provider does not match this preload library; swiw devices are disabled\n");
		return;
	}
	swiw = iface;
}

static bool swiw_on(void)
{
	pthread_once(&shim_once, shim_init);
	return swiw != NULL;
}

static bool is_swiw_dev(struct ibv_device *dev)
{
	return dev && swiw_on() && swiw_verbs_device(dev)->ops == swiw->dev_ops;
}

/* For the CM (swiw_cma*.c): the provider's table, or NULL. */
const struct swiw_shim_iface *swiw_shim(void)
{
	return swiw_on() ? swiw : NULL;
}

bool swiw_shim_is_dev(struct ibv_device *dev)
{
	return is_swiw_dev(dev);
}

static bool is_swiw_ctx(struct ibv_context *ctx)
{
	return ctx && is_swiw_dev(ctx->device);
}

SWIW_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **kdevs, **sdevs = NULL, **all;
	int nk = 0, ns = 0, i, err;

	REAL(ibv_get_device_list, "IBVERBS_1.1");
	if (!real_ibv_get_device_list)
		return NULL;
	kdevs = real_ibv_get_device_list(&nk);
	err = errno;
	if (hide_swiw || !swiw_on()) {
		if (num_devices)
			*num_devices = nk;
		errno = err;
		return kdevs;
	}
	/* No kernel RDMA stack at all is normal here, not an error. */
	if (!kdevs)
		nk = 0;
	ns = swiw->get_devices(&sdevs);
	if (ns < 0) {
		fprintf(stderr, "swiw: listing swiw devices failed: %s\n",
			strerror(-ns));
		ns = 0;
	}
	all = calloc(nk + ns + 1, sizeof(*all));
	if (!all) {
		for (i = 0; i < ns; i++)
			swiw->device_put(sdevs[i]);
		free(sdevs);
		if (num_devices)
			*num_devices = nk;
		return kdevs;
	}
	/* The references move into the new list, which the real
	 * ibv_free_device_list releases: free() the old arrays only. */
	for (i = 0; i < nk; i++)
		all[i] = kdevs[i];
	for (i = 0; i < ns; i++)
		all[nk + i] = sdevs[i];
	free(kdevs);
	free(sdevs);
	if (num_devices)
		*num_devices = nk + ns;
	return all;
}

SWIW_EXPORT int ibv_query_gid(struct ibv_context *ctx, uint8_t port_num,
			      int index, union ibv_gid *gid)
{
	if (is_swiw_ctx(ctx))
		return swiw->query_gid(ctx, port_num, index, gid);
	REAL(ibv_query_gid, "IBVERBS_1.1");
	return real_ibv_query_gid ?
		       real_ibv_query_gid(ctx, port_num, index, gid) :
		       -1;
}

SWIW_EXPORT int _ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port_num,
				  uint32_t gid_index,
				  struct ibv_gid_entry *entry, uint32_t flags,
				  size_t entry_size)
{
	if (is_swiw_ctx(ctx))
		return swiw->query_gid_ex(ctx, port_num, gid_index, entry,
					  flags, entry_size);
	REAL(_ibv_query_gid_ex, "IBVERBS_1.11");
	return real__ibv_query_gid_ex ?
		       real__ibv_query_gid_ex(ctx, port_num, gid_index, entry,
					      flags, entry_size) :
		       ENOSYS;
}

SWIW_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *ctx,
					 struct ibv_gid_entry *entries,
					 size_t max_entries, uint32_t flags,
					 size_t entry_size)
{
	if (is_swiw_ctx(ctx))
		return swiw->query_gid_table(ctx, entries, max_entries, flags,
					     entry_size);
	REAL(_ibv_query_gid_table, "IBVERBS_1.11");
	return real__ibv_query_gid_table ?
		       real__ibv_query_gid_table(ctx, entries, max_entries,
						 flags, entry_size) :
		       -ENOSYS;
}

/* libibverbs' private export; its enum argument is an int in the ABI. */
int ibv_query_gid_type(struct ibv_context *ctx, uint8_t port_num,
		       unsigned int index, int *type);

SWIW_EXPORT int ibv_query_gid_type(struct ibv_context *ctx, uint8_t port_num,
				   unsigned int index, int *type)
{
	if (is_swiw_ctx(ctx))
		return swiw->query_gid_type(ctx, port_num, index, type);
	REAL(ibv_query_gid_type, SWIW_VERBS_PABI);
	return real_ibv_query_gid_type ?
		       real_ibv_query_gid_type(ctx, port_num, index, type) :
		       -1;
}

SWIW_EXPORT int ibv_query_pkey(struct ibv_context *ctx, uint8_t port_num,
			       int index, __be16 *pkey)
{
	if (is_swiw_ctx(ctx))
		return swiw->query_pkey(ctx, port_num, index, pkey);
	REAL(ibv_query_pkey, "IBVERBS_1.1");
	return real_ibv_query_pkey ?
		       real_ibv_query_pkey(ctx, port_num, index, pkey) :
		       -1;
}

SWIW_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	if (is_swiw_dev(device))
		return swiw->get_device_guid(device);
	REAL(ibv_get_device_guid, "IBVERBS_1.1");
	return real_ibv_get_device_guid ? real_ibv_get_device_guid(device) : 0;
}

SWIW_EXPORT struct ibv_comp_channel *
ibv_create_comp_channel(struct ibv_context *ctx)
{
	if (is_swiw_ctx(ctx))
		return swiw->create_comp_channel(ctx);
	REAL(ibv_create_comp_channel, "IBVERBS_1.0");
	return real_ibv_create_comp_channel ?
		       real_ibv_create_comp_channel(ctx) :
		       NULL;
}

SWIW_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	if (channel && is_swiw_ctx(channel->context))
		return swiw->destroy_comp_channel(channel);
	REAL(ibv_destroy_comp_channel, "IBVERBS_1.0");
	return real_ibv_destroy_comp_channel ?
		       real_ibv_destroy_comp_channel(channel) :
		       ENOSYS;
}

/*
 * A swiw channel's wait moves the engine from the waiting thread (one
 * wake-up a message instead of the progress thread's and then this
 * one's); libibverbs's own read then takes the record, unless the wait
 * was handed it in memory (as that read would give it: the CQ and its
 * context; swiw has no cq_event op for it to call).
 */
SWIW_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel,
				 struct ibv_cq **cq, void **cq_context)
{
	/* Threads of one program wait at once: an atomic, not REAL(). */
	static __typeof__(ibv_get_cq_event) *real;
	__typeof__(ibv_get_cq_event) *fn =
		__atomic_load_n(&real, __ATOMIC_ACQUIRE);

	if (channel && is_swiw_ctx(channel->context)) {
		struct ibv_cq *handed = swiw->chan_wait(channel);

		if (handed) {
			*cq = handed;
			*cq_context = handed->cq_context;
			return 0;
		}
	}
	if (!fn) {
		fn = (__typeof__(ibv_get_cq_event) *)swiw_real_sym(
			"ibv_get_cq_event", "IBVERBS_1.1");
		__atomic_store_n(&real, fn, __ATOMIC_RELEASE);
	}
	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	return fn(channel, cq, cq_context);
}

/*
 * The real import walks the device list and reads each device's sysfs
 * record, which swiw devices do not have; a swiw context has no command fd
 * to import anyway. Let it see kernel devices only.
 */
SWIW_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	struct ibv_context *ctx;

	REAL(ibv_import_device, "IBVERBS_1.10");
	if (!real_ibv_import_device)
		return NULL;
	hide_swiw++;
	ctx = real_ibv_import_device(cmd_fd);
	hide_swiw--;
	return ctx;
}
