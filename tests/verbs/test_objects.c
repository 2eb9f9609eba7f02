// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Object verbs on swiw_lo through the stock libibverbs, run under swiw-run:
 * every verb's success path and its failure paths, with the errno values
 * libibverbs documents.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

struct fixture {
	struct ibv_device **list;
	struct ibv_device *dev;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
};

static struct ibv_device *find_dev(struct ibv_device **list, const char *name)
{
	for (; list && *list; list++)
		if (!strcmp(ibv_get_device_name(*list), name))
			return *list;
	return NULL;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	f->list = ibv_get_device_list(NULL);
	f->dev = find_dev(f->list, "swiw_lo");
	if (!f->dev) {
		fprintf(stderr, "no swiw_lo: run this test through swiw-run\n");
		return -1;
	}
	f->ctx = ibv_open_device(f->dev);
	if (!f->ctx)
		return -1;
	f->pd = ibv_alloc_pd(f->ctx);
	if (!f->pd)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (f->pd && ibv_dealloc_pd(f->pd))
		return -1;
	if (f->ctx && ibv_close_device(f->ctx))
		return -1;
	ibv_free_device_list(f->list);
	free(f);
	return 0;
}

static void test_device_list(void **state)
{
	struct fixture *f = *state;
	struct ibv_device **again;
	int n = -1, i, swiw = 0;

	again = ibv_get_device_list(&n);
	assert_non_null(again);
	for (i = 0; i < n; i++)
		if (!strncmp(ibv_get_device_name(again[i]), "swiw_", 5))
			swiw++;
	assert_null(again[n]);
	assert_true(swiw >= 1);
	/* The same device object in every list: librdmacm compares them. */
	assert_ptr_equal(find_dev(again, "swiw_lo"), f->dev);
	ibv_free_device_list(again);

	assert_int_equal(f->dev->node_type, IBV_NODE_RNIC);
	assert_int_equal(f->dev->transport_type, IBV_TRANSPORT_IWARP);
	assert_string_equal(ibv_node_type_str(f->dev->node_type), "iWARP NIC");
	/* lo has no MAC: a stable, locally administered GUID. */
	assert_int_not_equal(ibv_get_device_guid(f->dev), 0);
	assert_int_equal(
		((uint8_t *)&(uint64_t){ ibv_get_device_guid(f->dev) })[0] &
			0x03,
		0x02);
}

static void test_query_device(void **state)
{
	struct fixture *f = *state;
	struct ibv_device_attr attr;
	struct ibv_device_attr_ex ex;
	struct ibv_query_device_ex_input in = {};

	assert_int_equal(ibv_query_device(f->ctx, &attr), 0);
	assert_int_equal(attr.phys_port_cnt, 1);
	assert_int_equal(attr.node_guid, ibv_get_device_guid(f->dev));
	assert_true(attr.max_qp > 0 && attr.max_cqe > 0 && attr.max_mr > 0);
	assert_true(attr.max_sge >= 2);
	assert_true(attr.max_qp_rd_atom > 0 && attr.max_qp_init_rd_atom > 0);
	assert_int_equal(attr.max_pkeys, 1);
	assert_non_null(strstr(attr.fw_ver, "swiw"));

	assert_int_equal(ibv_query_device_ex(f->ctx, NULL, &ex), 0);
	assert_memory_equal(&ex.orig_attr, &attr, sizeof(attr));
	assert_int_equal(ex.phys_port_cnt_ex, 1);
	assert_int_equal(ibv_query_device_ex(f->ctx, &in, &ex), 0);
	in.comp_mask = 1;
	assert_int_equal(ibv_query_device_ex(f->ctx, &in, &ex), EINVAL);
	assert_int_equal(f->ctx->num_comp_vectors, 1);
}

static void test_query_port(void **state)
{
	struct fixture *f = *state;
	struct ibv_port_attr pa;

	assert_int_equal(ibv_query_port(f->ctx, 1, &pa), 0);
	assert_int_equal(pa.state, IBV_PORT_ACTIVE);
	assert_int_equal(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	assert_int_equal(pa.phys_state, 5);
	assert_int_equal(pa.max_mtu, IBV_MTU_4096);
	assert_int_equal(pa.active_mtu, IBV_MTU_4096); /* lo: 65536 */
	assert_int_equal(pa.pkey_tbl_len, 1);
	assert_true(pa.gid_tbl_len >= 1);
	assert_int_equal(ibv_query_port(f->ctx, 0, &pa), EINVAL);
	assert_int_equal(ibv_query_port(f->ctx, 2, &pa), EINVAL);
}

static void test_gid_pkey(void **state)
{
	struct fixture *f = *state;
	static const uint8_t v4mapped_lo[16] = {
		[10] = 0xff, [11] = 0xff, [12] = 127, [15] = 1
	};
	struct ibv_port_attr pa;
	struct ibv_gid_entry ent, table[64];
	union ibv_gid gid;
	__be16 pkey;
	ssize_t n;

	assert_int_equal(ibv_query_port(f->ctx, 1, &pa), 0);
	assert_int_equal(ibv_query_gid(f->ctx, 1, 0, &gid), 0);
	assert_memory_equal(gid.raw, v4mapped_lo, 16);
	/* Past the addresses but inside the table: a zero GID. */
	assert_int_equal(ibv_query_gid(f->ctx, 1, pa.gid_tbl_len - 1, &gid), 0);
	assert_int_equal(ibv_query_gid(f->ctx, 1, pa.gid_tbl_len, &gid), -1);
	assert_int_equal(ibv_query_gid(f->ctx, 1, -1, &gid), -1);
	assert_int_equal(ibv_query_gid(f->ctx, 2, 0, &gid), -1);

	assert_int_equal(ibv_query_gid_ex(f->ctx, 1, 0, &ent, 0), 0);
	assert_memory_equal(ent.gid.raw, v4mapped_lo, 16);
	assert_int_equal(ent.gid_index, 0);
	assert_int_equal(ent.port_num, 1);
	assert_int_equal(ent.ndev_ifindex, if_nametoindex("lo"));
	assert_int_equal(ibv_query_gid_ex(f->ctx, 1, pa.gid_tbl_len - 1, &ent,
					  0),
			 ENODATA);
	assert_int_equal(ibv_query_gid_ex(f->ctx, 1, pa.gid_tbl_len, &ent, 0),
			 EINVAL);
	assert_int_equal(ibv_query_gid_ex(f->ctx, 3, 0, &ent, 0), EINVAL);
	assert_int_equal(ibv_query_gid_ex(f->ctx, 1, 0, &ent, 1), EINVAL);

	n = ibv_query_gid_table(f->ctx, table, 64, 0);
	assert_true(n >= 1);
	assert_memory_equal(table[0].gid.raw, v4mapped_lo, 16);
	assert_int_equal(ibv_query_gid_table(f->ctx, table, 0, 0), -EINVAL);

	assert_int_equal(ibv_query_pkey(f->ctx, 1, 0, &pkey), 0);
	assert_int_equal(ntohs(pkey), 0xffff);
	assert_int_equal(ibv_query_pkey(f->ctx, 1, 1, &pkey), -1);
	assert_int_equal(ibv_query_pkey(f->ctx, 2, 0, &pkey), -1);
	/* ibv_get_pkey_index goes through ibv_query_pkey inside libibverbs. */
	assert_int_equal(ibv_get_pkey_index(f->ctx, 1, htons(0xffff)), 0);
	assert_int_equal(ibv_get_pkey_index(f->ctx, 1, htons(0x1234)), -1);
}

static void test_pd(void **state)
{
	struct fixture *f = *state;
	struct ibv_pd *a = ibv_alloc_pd(f->ctx), *b = ibv_alloc_pd(f->ctx);
	struct ibv_mr *mr;
	char buf[64];

	assert_non_null(a);
	assert_non_null(b);
	assert_ptr_equal(a->context, f->ctx);
	assert_int_not_equal(a->handle, b->handle);
	/* A PD still named by an MR cannot go. */
	mr = ibv_reg_mr(a, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	assert_int_equal(ibv_dealloc_pd(a), EBUSY);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dealloc_pd(a), 0);
	assert_int_equal(ibv_dealloc_pd(b), 0);
}

static struct ibv_mr *reg(struct fixture *f, void *p, size_t len, int access,
			  int *err)
{
	struct ibv_mr *mr;

	errno = 0;
	mr = ibv_reg_mr(f->pd, p, len, access);
	*err = mr ? 0 : errno;
	return mr;
}

static void test_mr(void **state)
{
	struct fixture *f = *state;
	const int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct ibv_mr *a, *b;
	char *buf = malloc(8192), *ro, *hole;
	int err;

	assert_non_null(buf);
	a = reg(f, buf, 8192, all, &err);
	assert_non_null(a);
	b = reg(f, buf, 100, IBV_ACCESS_REMOTE_READ, &err);
	assert_non_null(b);
	assert_ptr_equal(a->addr, buf);
	assert_int_equal(a->length, 8192);
	assert_ptr_equal(a->pd, f->pd);
	/* iWARP has one STag: lkey == rkey; never 0; distinct per MR. */
	assert_int_equal(a->lkey, a->rkey);
	assert_int_not_equal(a->lkey, 0);
	assert_int_not_equal(a->lkey, b->lkey);
	assert_int_equal(ibv_dereg_mr(b), 0);
	assert_int_equal(ibv_dereg_mr(a), 0);

	/* Optional flags (relaxed ordering) are accepted and ignored. */
	a = reg(f, buf, 64,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING, &err);
	assert_non_null(a);
	assert_int_equal(ibv_dereg_mr(a), 0);

	/* Remote write or atomic without local write: EINVAL. */
	assert_null(reg(f, buf, 64, IBV_ACCESS_REMOTE_WRITE, &err));
	assert_int_equal(err, EINVAL);
	assert_null(reg(f, buf, 64, IBV_ACCESS_REMOTE_ATOMIC, &err));
	assert_int_equal(err, EINVAL);
	assert_null(reg(f, buf, 64, 1 << 12, &err));
	assert_int_equal(err, EINVAL);
	assert_null(reg(f, buf, 0, IBV_ACCESS_LOCAL_WRITE, &err));
	assert_int_equal(err, EINVAL);
	assert_null(reg(f, buf, 64, IBV_ACCESS_ON_DEMAND, &err));
	assert_int_equal(err, EOPNOTSUPP);
	assert_null(reg(f, buf, 64, IBV_ACCESS_ZERO_BASED, &err));
	assert_int_equal(err, EOPNOTSUPP);

	/* Memory that is not mapped, or not writable, cannot be registered
	 * for writing: EFAULT, as the kernel's pinning would say. */
	hole = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(hole != MAP_FAILED);
	assert_int_equal(munmap(hole + pg, pg), 0);
	assert_null(reg(f, hole, 3 * pg, IBV_ACCESS_LOCAL_WRITE, &err));
	assert_int_equal(err, EFAULT);
	a = reg(f, hole, pg, IBV_ACCESS_LOCAL_WRITE, &err);
	assert_non_null(a);
	assert_int_equal(ibv_dereg_mr(a), 0);
	munmap(hole, pg);
	munmap(hole + 2 * pg, pg);
	assert_null(reg(f, (void *)8, 64, 0, &err));
	assert_int_equal(err, EFAULT);

	ro = mmap(NULL, pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(ro != MAP_FAILED);
	assert_null(reg(f, ro, pg, IBV_ACCESS_LOCAL_WRITE, &err));
	assert_int_equal(err, EFAULT);
	a = reg(f, ro, pg, IBV_ACCESS_REMOTE_READ, &err);
	assert_non_null(a);
	assert_int_equal(ibv_dereg_mr(a), 0);
	munmap(ro, pg);
	free(buf);
}

static void test_cq(void **state)
{
	struct fixture *f = *state;
	struct ibv_device_attr attr;
	struct ibv_cq *cq;
	struct ibv_wc wc[4];

	assert_int_equal(ibv_query_device(f->ctx, &attr), 0);
	cq = ibv_create_cq(f->ctx, 16, NULL, NULL, 0);
	assert_non_null(cq);
	assert_true(cq->cqe >= 16);
	assert_int_equal(ibv_poll_cq(cq, 4, wc), 0);
	assert_int_equal(ibv_req_notify_cq(cq, 0), 0);
	assert_int_equal(ibv_req_notify_cq(cq, 1), 0);
	assert_int_equal(ibv_resize_cq(cq, 64), 0);
	assert_true(cq->cqe >= 64);
	assert_int_equal(ibv_resize_cq(cq, 0), EINVAL);
	assert_int_equal(ibv_resize_cq(cq, attr.max_cqe + 1), EINVAL);
	assert_int_equal(ibv_destroy_cq(cq), 0);

	cq = ibv_create_cq(f->ctx, attr.max_cqe, NULL, NULL, 0);
	assert_non_null(cq);
	assert_int_equal(ibv_destroy_cq(cq), 0);

	errno = 0;
	assert_null(ibv_create_cq(f->ctx, 0, NULL, NULL, 0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(ibv_create_cq(f->ctx, attr.max_cqe + 1, NULL, NULL, 0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(ibv_create_cq(f->ctx, 4, NULL, NULL, 1));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(ibv_create_cq(f->ctx, 4, NULL, NULL, -1));
	assert_int_equal(errno, EINVAL);
}

static void test_comp_channel(void **state)
{
	struct fixture *f = *state;
	struct ibv_comp_channel *ch;
	struct ibv_context *other;
	struct ibv_cq *cq, *evcq;
	struct pollfd pfd;
	void *evctx;
	int flags;

	ch = ibv_create_comp_channel(f->ctx);
	assert_non_null(ch);
	assert_ptr_equal(ch->context, f->ctx);
	assert_true(ch->fd >= 0);
	assert_true(fcntl(ch->fd, F_GETFD) & FD_CLOEXEC);

	cq = ibv_create_cq(f->ctx, 8, (void *)0x1234, ch, 0);
	assert_non_null(cq);
	assert_ptr_equal(cq->channel, ch);
	assert_ptr_equal(cq->cq_context, (void *)0x1234);
	assert_int_equal(ch->refcnt, 1);
	assert_int_equal(ibv_req_notify_cq(cq, 0), 0);
	/* In use by a CQ: the channel stays. */
	assert_int_equal(ibv_destroy_comp_channel(ch), EBUSY);

	/* Nothing completed, nothing to read: poll says so, and a
	 * non-blocking ibv_get_cq_event fails with EAGAIN. */
	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 0), 0);
	flags = fcntl(ch->fd, F_GETFL);
	assert_int_equal(fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK), 0);
	errno = 0;
	assert_int_equal(ibv_get_cq_event(ch, &evcq, &evctx), -1);
	assert_int_equal(errno, EAGAIN);

	/* A channel of another context does not fit this one's CQs. */
	other = ibv_open_device(f->dev);
	assert_non_null(other);
	errno = 0;
	assert_null(ibv_create_cq(other, 8, NULL, ch, 0));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(ibv_close_device(other), 0);

	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ch->refcnt, 0);
	assert_int_equal(ibv_destroy_comp_channel(ch), 0);
}

static void test_async_fd(void **state)
{
	struct fixture *f = *state;
	struct ibv_async_event ev;
	struct pollfd pfd = { .fd = f->ctx->async_fd, .events = POLLIN };
	int flags;

	assert_true(f->ctx->async_fd >= 0);
	assert_true(fcntl(f->ctx->async_fd, F_GETFD) & FD_CLOEXEC);
	/* lo does not change under us: no event is pending. */
	assert_int_equal(poll(&pfd, 1, 0), 0);
	flags = fcntl(f->ctx->async_fd, F_GETFL);
	assert_int_equal(fcntl(f->ctx->async_fd, F_SETFL, flags | O_NONBLOCK),
			 0);
	errno = 0;
	assert_int_equal(ibv_get_async_event(f->ctx, &ev), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(fcntl(f->ctx->async_fd, F_SETFL, flags), 0);
}

static void test_unsupported(void **state)
{
	struct fixture *f = *state;
	struct ibv_ah_attr ah = { .is_global = 1, .port_num = 1 };
	struct ibv_xrcd_init_attr xa = {};
	struct ibv_alloc_dm_attr dm = { .length = 64 };
	char buf[64];

	/* iWARP has no address handles, memory windows, XRC or device
	 * memory: each says EOPNOTSUPP, none crashes. */
	errno = 0;
	assert_null(ibv_create_ah(f->pd, &ah));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_alloc_mw(f->pd, IBV_MW_TYPE_1));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_open_xrcd(f->ctx, &xa));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_alloc_dm(f->ctx, &dm));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_alloc_null_mr(f->pd));
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(
		ibv_advise_mr(f->pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0,
			      &(struct ibv_sge){ (uintptr_t)buf, 64, 0 }, 1),
		EOPNOTSUPP);
}

static void test_import(void **state)
{
	int fd = open("/dev/null", O_RDWR);

	(void)state;
	/* Not a uverbs file: refused, and the swiw devices in the list do
	 * not trip the real import (they have no sysfs record). */
	assert_true(fd >= 0);
	errno = 0;
	assert_null(ibv_import_device(fd));
	assert_int_not_equal(errno, 0);
	close(fd);
}

static void test_many_contexts(void **state)
{
	struct fixture *f = *state;
	struct ibv_context *c[8];
	int i;

	for (i = 0; i < 8; i++) {
		c[i] = ibv_open_device(f->dev);
		assert_non_null(c[i]);
	}
	for (i = 0; i < 8; i++)
		assert_int_equal(ibv_close_device(c[i]), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device_list),
		cmocka_unit_test(test_query_device),
		cmocka_unit_test(test_query_port),
		cmocka_unit_test(test_gid_pkey),
		cmocka_unit_test(test_pd),
		cmocka_unit_test(test_mr),
		cmocka_unit_test(test_cq),
		cmocka_unit_test(test_comp_channel),
		cmocka_unit_test(test_async_fd),
		cmocka_unit_test(test_unsupported),
		cmocka_unit_test(test_import),
		cmocka_unit_test(test_many_contexts),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
