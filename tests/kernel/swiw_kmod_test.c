// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * swiw_kmod_test [DEVICE]: every /dev/swiw ioctl, mmap and poll path of
 * the helper, with good and bad arguments, against the real module (it
 * needs swiw.ko loaded: the VM lab, tests/vm), and a fuzz loop over all of
 * them with attached streams fed garbage from both sides (the data path
 * itself is swiw_kdp_test's). Prints one line per
 * failed check and "N passed, N failed"; exits 0 only if none failed,
 * 77 if the device is absent. Needs lo up. Run it as root, which covers
 * the queue-memory limit too (it lowers the module parameter for a
 * moment; RLIMIT_MEMLOCK is checked in a child without CAP_IPC_LOCK), and
 * again as an unprivileged user.
 *
 * swiw_kmod_test --fuzz SECONDS: only the fuzz tests, pass after pass with
 * new seeds, for SECONDS (a campaign by hand, longer than the suite's).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>
#include <rdma/swiw-abi.h>

#include "ktest.h"

static long page;

/* ioctl that returns 0 or the errno, for one-line expectations. */
#define EXPECT_ERR(call, want)                                   \
	do {                                                     \
		int got_ = (call);                               \
		errno = got_;                                    \
		CHECK(got_ == (want), "%s: want %s, got", #call, \
		      strerror(want));                           \
	} while (0)

/* @n octets in kB, as VmPin counts them. */
static long kb(size_t n)
{
	return (long)(n / 1024);
}

/* The module's reference count (open files), or -1. */
static int reg_mr(int fd, void *addr, uint64_t len, uint32_t access,
		  uint32_t *stag)
{
	struct swiw_ioc_reg_mr r = {
		.addr = (uintptr_t)addr,
		.length = len,
		.access = access,
		.iova = (uintptr_t)addr,
	};
	int err = ioc(fd, SWIW_IOC_REG_MR, &r);

	if (stag)
		*stag = err ? 0 : r.stag;
	return err;
}

static int queue(int fd, uint32_t kind, uint32_t num, uint32_t stride,
		 struct swiw_ioc_queue *out)
{
	struct swiw_ioc_queue q = { .kind = kind,
				    .num = num,
				    .stride = stride };
	int err = ioc(fd, SWIW_IOC_QUEUE, &q);

	if (out)
		*out = q;
	return err;
}

static int queue_free(int fd, uint32_t id)
{
	struct swiw_ioc_queue_free q = { .id = id };

	return ioc(fd, SWIW_IOC_QUEUE_FREE, &q);
}

static void test_version(int fd)
{
	struct swiw_ioc_version v;

	memset(&v, 0xff, sizeof(v));
	CHECK(!ioc(fd, SWIW_IOC_VERSION, &v), "VERSION");
	CHECK(v.abi_version == SWIW_ABI_VERSION, "abi_version %u",
	      v.abi_version);
	CHECK(v.flags == SWIW_VERSION_DATAPATH, "flags 0x%x, want DATAPATH",
	      v.flags);
	printf("helper ABI %u, flags 0x%x\n", v.abi_version, v.flags);
	EXPECT_ERR(ioc(fd, SWIW_IOC_VERSION, NULL), EFAULT);
	EXPECT_ERR(ioc(fd, SWIW_IOC_VERSION, (void *)8), EFAULT);
	/* Unknown commands, and known numbers with the wrong size. */
	EXPECT_ERR(ioc(fd, _IO(SWIW_IOC_MAGIC, 7), NULL), ENOTTY);
	EXPECT_ERR(ioc(fd, _IOR(SWIW_IOC_MAGIC, 0, uint64_t[2]), &v), ENOTTY);
	EXPECT_ERR(ioc(fd, _IOR('x', 0, struct swiw_ioc_version), &v), ENOTTY);
	EXPECT_ERR(ioc(fd, TCGETS, &v), ENOTTY);
	CHECK(lseek(fd, 0, SEEK_SET) < 0 && errno == ESPIPE,
	      "lseek is refused");
}

static void test_reg_mr(int fd)
{
	size_t len = 16 * page;
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *ro = mmap(NULL, 4 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0);
	char *hole = mmap(NULL, 4 * page, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint32_t s1, s2, s3, s4;
	long base = vm_pin_kb();

	if (buf == MAP_FAILED || ro == MAP_FAILED || hole == MAP_FAILED) {
		CHECK(0, "mmap test buffers");
		return;
	}
	munmap(hole, 4 * page); /* unmapped, until the next mmap reuses it */
	CHECK(base >= 0, "VmPin readable");
	EXPECT_ERR(reg_mr(fd, hole, page, 0, NULL), EFAULT);
	EXPECT_ERR(reg_mr(fd, hole + 3 * page, 2 * page, 0, NULL),
		   EFAULT); /* partly */

	/* Good registrations: writable, read-only, unaligned, twice. */
	CHECK(!reg_mr(fd, buf, len, ACC_LOCAL_WRITE | ACC_REMOTE_WRITE, &s1),
	      "reg rw");
	CHECK(s1 >> 8 != 0, "STag 0x%x has an index", s1);
	CHECK(vm_pin_kb() == base + kb(len),
	      "VmPin %ld after pinning %zu kB over %ld", vm_pin_kb(),
	      len / 1024, base);
	CHECK(!reg_mr(fd, ro, 4 * page, ACC_REMOTE_READ, &s2),
	      "reg read-only memory read-only");
	CHECK(!reg_mr(fd, buf + 100, page,
		      ACC_LOCAL_WRITE | ACC_RELAXED_ORDERING, &s3),
	      "reg unaligned, optional access bit");
	CHECK(vm_pin_kb() == base + kb(len) + kb(4 * page) + kb(2 * page),
	      "VmPin %ld counts every page of each region", vm_pin_kb());
	CHECK(!reg_mr(fd, buf, page, 0, &s4), "reg the same pages again");
	CHECK(s1 != s2 && s1 != s3 && s1 != s4 && s2 != s3 && s3 != s4,
	      "distinct STags");

	/* Bad arguments. */
	EXPECT_ERR(reg_mr(fd, ro, page, ACC_LOCAL_WRITE, NULL), EFAULT);
	EXPECT_ERR(reg_mr(fd, (void *)0xffff888000000000ULL, page, 0, NULL),
		   EFAULT);
	EXPECT_ERR(reg_mr(fd, NULL, page, 0, NULL), EFAULT);
	EXPECT_ERR(reg_mr(fd, buf, 0, 0, NULL), EINVAL);
	EXPECT_ERR(reg_mr(fd, (void *)-page, 2 * page, 0, NULL), EINVAL);
	EXPECT_ERR(reg_mr(fd, buf, (1ULL << 40) + 1, 0, NULL), EINVAL);
	/* The largest length: its page table (2 GiB) passes every cap
	 * (the user's, and RLIMIT_MEMLOCK first for the unprivileged) and
	 * is refused without a kernel warning (vm.kmod's dmesg step). */
	EXPECT_ERR(reg_mr(fd, buf, 1ULL << 40, 0, NULL), ENOMEM);
	EXPECT_ERR(reg_mr(fd, buf, (1ULL << 40) - (1 << 20), 0, NULL), ENOMEM);
	EXPECT_ERR(reg_mr(fd, buf, page, 1 << 15, NULL), EINVAL);
	EXPECT_ERR(reg_mr(fd, buf, page, ACC_REMOTE_WRITE, NULL), EINVAL);
	EXPECT_ERR(reg_mr(fd, buf, page, ACC_REMOTE_ATOMIC, NULL), EINVAL);
	EXPECT_ERR(reg_mr(fd, buf, page, ACC_ZERO_BASED, NULL), EOPNOTSUPP);
	EXPECT_ERR(reg_mr(fd, buf, page, ACC_ON_DEMAND, NULL), EOPNOTSUPP);
	EXPECT_ERR(ioc(fd, SWIW_IOC_REG_MR, NULL), EFAULT);
	{
		/* ABI 2: any PD number; the reserved word must be 0. */
		struct swiw_ioc_reg_mr r = { .addr = (uintptr_t)buf,
					     .length = page,
					     .pd = 0xffffffff,
					     .rsvd = 1,
					     .iova = (uintptr_t)buf };
		struct swiw_ioc_dereg_mr d = { 0 };

		EXPECT_ERR(ioc(fd, SWIW_IOC_REG_MR, &r), EINVAL);
		r.rsvd = 0;
		/* ABI 4: an iova whose region would wrap around. */
		r.iova = ~0ULL - page + 2;
		EXPECT_ERR(ioc(fd, SWIW_IOC_REG_MR, &r), EINVAL);
		r.iova = (uintptr_t)buf;
		CHECK(!ioc(fd, SWIW_IOC_REG_MR, &r), "reg with PD 0xffffffff");
		d.stag = r.stag;
		CHECK(!ioc(fd, SWIW_IOC_DEREG_MR, &d), "dereg it");
	}
	/* Read-only argument memory: pinned, then the reply cannot land. */
	{
		struct swiw_ioc_reg_mr *r =
			mmap(NULL, page, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		long before = vm_pin_kb();

		r->addr = (uintptr_t)buf;
		r->length = page;
		mprotect(r, page, PROT_READ);
		EXPECT_ERR(ioc(fd, SWIW_IOC_REG_MR, r), EFAULT);
		CHECK(vm_pin_kb() == before,
		      "a failed REG_MR leaves nothing pinned");
		munmap(r, page);
	}

	/* Deregistration: key and index must match; each works once. */
	EXPECT_ERR(dereg_mr(fd, s1 ^ 0x01), EINVAL);
	EXPECT_ERR(dereg_mr(fd, s1 ^ 0x100), EINVAL);
	EXPECT_ERR(dereg_mr(fd, 0), EINVAL);
	EXPECT_ERR(dereg_mr(fd, 0xffffffff), EINVAL);
	{
		struct swiw_ioc_dereg_mr d = { .stag = s1, .rsvd = 1 };

		EXPECT_ERR(ioc(fd, SWIW_IOC_DEREG_MR, &d), EINVAL);
	}
	EXPECT_ERR(ioc(fd, SWIW_IOC_DEREG_MR, NULL), EFAULT);
	CHECK(!dereg_mr(fd, s1), "dereg rw");
	EXPECT_ERR(dereg_mr(fd, s1), EINVAL);
	CHECK(!dereg_mr(fd, s2), "dereg ro");
	CHECK(!dereg_mr(fd, s3), "dereg unaligned");
	CHECK(!dereg_mr(fd, s4), "dereg second");
	CHECK(vm_pin_kb() == base, "VmPin %ld back to %ld", vm_pin_kb(), base);

	/* The pages stay the process's: still readable and writable. */
	buf[0] = 1;
	CHECK(buf[0] == 1, "memory usable after dereg");
	munmap(buf, len);
	munmap(ro, 4 * page);
}

/* Registered memory, a mapped ring: closing the file releases both. */
static void test_release(void)
{
	size_t len = 8 * page;
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long base = vm_pin_kb(), refs = module_refcnt();
	struct swiw_ioc_queue q;
	void *ring;
	int fd = open_dev();

	CHECK(module_refcnt() == refs + 1, "an open file holds the module");
	CHECK(!reg_mr(fd, buf, len, ACC_LOCAL_WRITE, NULL), "reg");
	CHECK(!queue(fd, SWIW_QUEUE_CQ, 64, 32, &q), "queue");
	ring = mmap(NULL, q.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    q.mmap_offset);
	CHECK(ring != MAP_FAILED, "map ring");
	close(fd);
	CHECK(vm_pin_kb() == base + kb(len), "the mapping keeps the file open");
	if (ring != MAP_FAILED)
		munmap(ring, q.mmap_size);
	CHECK(vm_pin_kb() == base,
	      "VmPin %ld back to %ld after the last reference", vm_pin_kb(),
	      base);
	CHECK(module_refcnt() == refs, "module refcnt %ld back to %ld",
	      module_refcnt(), refs);
	munmap(buf, len);
}

/* A process killed with regions pinned and rings mapped leaves nothing. */
static void test_sigkill(void)
{
	long refs = module_refcnt();
	int sync[2], status;
	pid_t pid;
	char c;

	if (pipe(sync)) {
		CHECK(0, "pipe");
		return;
	}
	pid = fork();
	if (!pid) {
		size_t len = 64 * page;
		char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct swiw_ioc_queue q;
		int fd = open_dev();

		if (reg_mr(fd, buf, len, ACC_LOCAL_WRITE, NULL) ||
		    queue(fd, SWIW_QUEUE_SQ, 256, 128, &q) ||
		    mmap(NULL, q.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 fd, q.mmap_offset) == MAP_FAILED)
			_exit(1);
		c = vm_pin_kb() >= kb(len) ? 'y' : 'n';
		if (write(sync[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(sync[1]);
	CHECK(read(sync[0], &c, 1) == 1 && c == 'y', "child pinned its region");
	close(sync[0]);
	CHECK(module_refcnt() == refs + 1, "the child's file holds the module");
	kill(pid, SIGSTOP);
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status),
	      "child killed");
	CHECK(module_refcnt() == refs,
	      "module refcnt %ld back to %ld after SIGKILL", module_refcnt(),
	      refs);
}

/* capset(2) without libcap: drop CAP_IPC_LOCK from the effective set. */
/* RLIMIT_MEMLOCK holds for a process without CAP_IPC_LOCK. */
static void test_memlock(void)
{
	int status;
	pid_t pid = fork();

	if (!pid) {
		struct rlimit rl = { .rlim_cur = 64 * page,
				     .rlim_max = 64 * page };
		size_t len = 128 * page;
		char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint32_t s1, s2;
		int fd = open_dev(), code = 0;

		if (drop_ipc_lock() || setrlimit(RLIMIT_MEMLOCK, &rl))
			_exit(3);
		if (reg_mr(fd, buf, len, ACC_LOCAL_WRITE, NULL) != ENOMEM)
			code |= 4; /* over the limit at once */
		if (reg_mr(fd, buf, 48 * page, ACC_LOCAL_WRITE, &s1))
			code |= 8; /* within it */
		if (reg_mr(fd, buf, 32 * page, ACC_LOCAL_WRITE, &s2) != ENOMEM)
			code |= 16; /* the sum over it */
		if (vm_pin_kb() != kb(48 * page))
			code |= 32; /* a refused request charged nothing */
		if (dereg_mr(fd, s1) ||
		    reg_mr(fd, buf, 32 * page, ACC_LOCAL_WRITE, &s2))
			code |= 64; /* room again */
		_exit(code);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status),
	      "memlock child");
	CHECK(WEXITSTATUS(status) != 3,
	      "drop CAP_IPC_LOCK and set RLIMIT_MEMLOCK");
	CHECK(WEXITSTATUS(status) == 0,
	      "RLIMIT_MEMLOCK enforced (child code 0x%x)", WEXITSTATUS(status));
}

static void test_queue(int fd)
{
	static const struct {
		uint32_t kind, num, stride;
	} good[] = {
		{ SWIW_QUEUE_SQ, 128, 64 },
		{ SWIW_QUEUE_SQ, 1, 576 },
		{ SWIW_QUEUE_RQ, 1024, 16 },
		{ SWIW_QUEUE_CQ, 128, 32 }, /* + the arm word */
		{ SWIW_QUEUE_TX, 64, 160 },
		{ SWIW_QUEUE_RXEV, 64, 96 },
	};
	struct swiw_ioc_queue q, q2;
	unsigned int i;
	uint32_t last = 0;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		uint64_t want = (uint64_t)good[i].num * good[i].stride;
		volatile uint8_t *a, *b;

		if (good[i].kind == SWIW_QUEUE_CQ)
			want += sizeof(struct swiw_cq_ctrl);
		want = (want + page - 1) / page * page;
		CHECK(!queue(fd, good[i].kind, good[i].num, good[i].stride, &q),
		      "queue %u", i);
		CHECK(q.id && q.id != last, "queue %u id %u", i, q.id);
		last = q.id;
		CHECK(q.mmap_size == want, "queue %u size %llu, want %llu", i,
		      (unsigned long long)q.mmap_size,
		      (unsigned long long)want);
		CHECK(q.mmap_offset % page == 0, "queue %u offset aligned", i);
		a = mmap(NULL, q.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 fd, q.mmap_offset);
		b = mmap(NULL, q.mmap_size, PROT_READ, MAP_SHARED, fd,
			 q.mmap_offset);
		CHECK(a != MAP_FAILED && b != MAP_FAILED, "map queue %u twice",
		      i);
		if (a == MAP_FAILED || b == MAP_FAILED)
			continue;
		CHECK(a[0] == 0 && a[q.mmap_size - 1] == 0, "ring %u zeroed",
		      i);
		a[q.mmap_size - 1] = 0x5a;
		CHECK(b[q.mmap_size - 1] == 0x5a,
		      "both mappings are the same ring");
		CHECK(mprotect((void *)a, q.mmap_size, PROT_READ | PROT_EXEC) &&
			      errno == EACCES,
		      "ring %u can never become executable", i);
		munmap((void *)a, q.mmap_size);
		munmap((void *)b, q.mmap_size);
	}

	/* Bad requests. */
	EXPECT_ERR(queue(fd, 0, 64, 64, NULL), EINVAL);
	EXPECT_ERR(queue(fd, 6, 64, 64, NULL), EINVAL);
	EXPECT_ERR(queue(fd, SWIW_QUEUE_SQ, 0, 64, NULL), EINVAL);
	EXPECT_ERR(queue(fd, SWIW_QUEUE_SQ, 3, 64, NULL), EINVAL);
	EXPECT_ERR(queue(fd, SWIW_QUEUE_RQ, 1U << 21, 16, NULL), EINVAL);
	EXPECT_ERR(queue(fd, SWIW_QUEUE_RQ, 1U << 31, 16, NULL), EINVAL);
	EXPECT_ERR(queue(fd, SWIW_QUEUE_SQ, 64, 48, NULL),
		   EINVAL); /* < SQE header */
	EXPECT_ERR(queue(fd, SWIW_QUEUE_SQ, 64, 72, NULL),
		   EINVAL); /* not 16-aligned */
	EXPECT_ERR(queue(fd, SWIW_QUEUE_CQ, 64, 16, NULL), EINVAL);
	EXPECT_ERR(queue(fd, SWIW_QUEUE_TX, 64, 144, NULL), EINVAL);
	EXPECT_ERR(queue(fd, SWIW_QUEUE_RXEV, 64, 80, NULL), EINVAL);
	EXPECT_ERR(queue(fd, SWIW_QUEUE_SQ, 64, 8192, NULL), EINVAL);
	EXPECT_ERR(queue(fd, SWIW_QUEUE_RQ, 1U << 20, 128, NULL),
		   EINVAL); /* 128 MiB */
	EXPECT_ERR(queue(fd, SWIW_QUEUE_SQ, 64, 0, NULL), EINVAL);
	EXPECT_ERR(ioc(fd, SWIW_IOC_QUEUE, NULL), EFAULT);

	/* Bad mappings of a good ring. */
	CHECK(!queue(fd, SWIW_QUEUE_RQ, 512, 32, &q), "queue for mmap checks");
	CHECK(!queue(fd, SWIW_QUEUE_RQ, 512, 32, &q2), "second queue");
	CHECK(q2.mmap_offset != q.mmap_offset, "distinct offsets");
	{
		struct {
			size_t len;
			off_t off;
			int prot, flags;
			const char *what;
		} bad[] = {
			{ q.mmap_size - page, q.mmap_offset, PROT_READ,
			  MAP_SHARED, "short" },
			{ q.mmap_size + page, q.mmap_offset, PROT_READ,
			  MAP_SHARED, "long" },
			{ page, q.mmap_offset + page, PROT_READ, MAP_SHARED,
			  "inside" },
			{ q.mmap_size, 0, PROT_READ, MAP_SHARED, "offset 0" },
			{ q.mmap_size,
			  q2.mmap_offset +
				  (q2.mmap_offset - q.mmap_offset) * 100,
			  PROT_READ, MAP_SHARED, "no such ring" },
			{ q.mmap_size, q.mmap_offset, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE, "private" },
		};

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			void *p = mmap(NULL, bad[i].len, bad[i].prot,
				       bad[i].flags, fd, bad[i].off);

			CHECK(p == MAP_FAILED && errno == EINVAL,
			      "mmap %s refused", bad[i].what);
			if (p != MAP_FAILED)
				munmap(p, bad[i].len);
		}
		/* EPERM if /dev is mounted noexec: refused either way. */
		void *p = mmap(NULL, q.mmap_size, PROT_READ | PROT_EXEC,
			       MAP_SHARED, fd, q.mmap_offset);

		CHECK(p == MAP_FAILED && (errno == EINVAL || errno == EPERM),
		      "executable mapping refused");
	}
}

/* The per-file ring budget (module parameter max_queue_mb), as root. */
static void test_queue_budget(void)
{
	const char *param = "/sys/module/swiw/parameters/max_queue_mb";
	char old[32] = "";
	FILE *f = fopen(param, "re");
	int fd;

	if (f) {
		if (!fgets(old, sizeof(old), f))
			old[0] = 0;
		fclose(f);
	}
	f = fopen(param, "we");
	if (!f || !old[0] || fputs("1\n", f) < 0 || fclose(f)) {
		printf("note: %s not writable (not root?): budget not checked\n",
		       param);
		return;
	}
	fd = open_dev();
	EXPECT_ERR(queue(fd, SWIW_QUEUE_RQ, 1U << 17, 16, NULL),
		   ENOMEM); /* 2 MiB */
	CHECK(!queue(fd, SWIW_QUEUE_RQ, 1U << 15, 16, NULL), "512 KiB fits");
	CHECK(!queue(fd, SWIW_QUEUE_RQ, 1U << 14, 16, NULL),
	      "256 KiB more fits");
	EXPECT_ERR(queue(fd, SWIW_QUEUE_RQ, 1U << 15, 16, NULL), ENOMEM);
	close(fd);
	/* A freed ring counts until its last mapping goes. */
	fd = open_dev();
	{
		struct swiw_ioc_queue q;
		void *p;

		CHECK(!queue(fd, SWIW_QUEUE_RQ, 1U << 15, 16, &q), "512 KiB");
		p = mmap(NULL, q.mmap_size, PROT_READ, MAP_SHARED, fd,
			 q.mmap_offset);
		CHECK(p != MAP_FAILED, "map it");
		CHECK(!queue_free(fd, q.id), "free it, mapped");
		EXPECT_ERR(queue(fd, SWIW_QUEUE_RQ, 1U << 15, 32, NULL),
			   ENOMEM); /* 1 MiB more */
		if (p != MAP_FAILED)
			munmap(p, q.mmap_size);
		CHECK(!queue(fd, SWIW_QUEUE_RQ, 1U << 15, 32, NULL),
		      "1 MiB fits once the mapping is gone");
	}
	close(fd);
	f = fopen(param, "we");
	CHECK(f && fputs(old, f) >= 0 && !fclose(f), "restore max_queue_mb");
}

/*
 * max_user_mb caps what all the files of one user hold (root's too),
 * whatever the per-file budget: /dev/swiw is 0666 and files are many.
 */
static void test_user_cap(void)
{
	const char *param = "/sys/module/swiw/parameters/max_user_mb";
	char old[32] = "";
	FILE *f = fopen(param, "re");
	int fd1, fd2, st = -1;
	pid_t pid;

	if (f) {
		if (!fgets(old, sizeof(old), f))
			old[0] = 0;
		fclose(f);
	}
	if (geteuid()) {
		printf("note: not root: max_user_mb %s, not changed\n",
		       old[0] ? "present" : "missing");
		CHECK(old[0], "the module has max_user_mb");
		return;
	}
	f = fopen(param, "we");
	CHECK(f && old[0] && fputs("2\n", f) >= 0 && !fclose(f),
	      "max_user_mb set to 2");
	if (!old[0])
		return;
	fd1 = open_dev();
	fd2 = open_dev();
	CHECK(!queue(fd1, SWIW_QUEUE_RQ, 1U << 16, 16, NULL),
	      "1 MiB in one file");
	EXPECT_ERR(queue(fd2, SWIW_QUEUE_RQ, 1U << 16, 16, NULL), ENOMEM);
	CHECK(!queue(fd2, SWIW_QUEUE_RQ, 1U << 14, 16, NULL),
	      "256 KiB in another file of the same user");
	/* Region tables count: 1 GiB of pages is a 2 MiB table. */
	EXPECT_ERR(reg_mr(fd2, (void *)(1UL << 30), 1UL << 30, 0, NULL),
		   ENOMEM);
	/* Another user has a cap of its own. */
	pid = fork();
	if (pid == 0) {
		int fd;

		if (setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(2);
		fd = open_dev();
		_exit(queue(fd, SWIW_QUEUE_RQ, 1U << 16, 16, NULL) ? 1 : 0);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		      WEXITSTATUS(st) == 0,
	      "nobody's 1 MiB fits beside root's (status %d)", st);
	close(fd1);
	CHECK(!queue(fd2, SWIW_QUEUE_RQ, 1U << 16, 16, NULL),
	      "1 MiB fits once the first file is closed");
	close(fd2);
	f = fopen(param, "we");
	CHECK(f && fputs(old, f) >= 0 && !fclose(f), "restore max_user_mb");
}

struct rings {
	uint32_t sq, rq, cq, tx, rxev;
};

static void make_rings(int fd, struct rings *r)
{
	struct swiw_ioc_queue q;

	CHECK(!queue(fd, SWIW_QUEUE_SQ, 64, 64, &q), "SQ");
	r->sq = q.id;
	CHECK(!queue(fd, SWIW_QUEUE_RQ, 64, 32, &q), "RQ");
	r->rq = q.id;
	CHECK(!queue(fd, SWIW_QUEUE_CQ, 128, 32, &q), "CQ");
	r->cq = q.id;
	CHECK(!queue(fd, SWIW_QUEUE_TX, 64, 160, &q), "TX");
	r->tx = q.id;
	CHECK(!queue(fd, SWIW_QUEUE_RXEV, 64, 96, &q), "RXEV");
	r->rxev = q.id;
}

/* ATTACH with @r's RQ and stream rings (SQ and CQ ids 0, as required). */
static int attach(int fd, const struct rings *r, int sock,
		  void (*tweak)(struct swiw_ioc_attach *), uint32_t *stream)
{
	struct swiw_ioc_attach a = {
		.sock_fd = sock,
		.flags = SWIW_ATTACH_CRC,
		.rq_id = r->rq,
		.tx_id = r->tx,
		.rxev_id = r->rxev,
		.ird = 16,
		.ord = 16,
	};
	int err;

	if (tweak)
		tweak(&a);
	err = ioc(fd, SWIW_IOC_ATTACH, &a);
	if (stream)
		*stream = err ? 0 : a.stream_id;
	return err;
}

static int stream_cmd(int fd, unsigned long cmd, uint32_t id)
{
	struct swiw_ioc_stream s = { .stream_id = id };

	return ioc(fd, cmd, &s);
}

/* The rings of the last make_rings(), for tweaks that swap ids. */
static struct rings cur;

static void t_flags(struct swiw_ioc_attach *a)
{
	a->flags = 0x10;
}
static void t_access(struct swiw_ioc_attach *a)
{
	a->access = 0x1; /* LOCAL_WRITE is no remote right */
}
static void t_stream(struct swiw_ioc_attach *a)
{
	a->stream_id = 5;
}
static void t_ird(struct swiw_ioc_attach *a)
{
	a->ird = 129;
}
static void t_ord(struct swiw_ioc_attach *a)
{
	a->ord = 0x10000;
}
static void t_sq_set(struct swiw_ioc_attach *a)
{
	a->sq_id = cur.sq; /* the provider keeps its SQ */
}
static void t_cq_set(struct swiw_ioc_attach *a)
{
	a->cq_id = cur.cq; /* and its CQ */
}
static void t_cq_unknown(struct swiw_ioc_attach *a)
{
	a->cq_id = 30000;
}
static void t_rq_zero(struct swiw_ioc_attach *a)
{
	a->rq_id = 0;
}
static void t_rq_is_cq(struct swiw_ioc_attach *a)
{
	a->rq_id = cur.cq;
}
static void t_tx_is_rxev(struct swiw_ioc_attach *a)
{
	a->tx_id = a->rxev_id;
}
static void t_rxev_is_tx(struct swiw_ioc_attach *a)
{
	a->rxev_id = a->tx_id;
}
static void t_rxev_huge(struct swiw_ioc_attach *a)
{
	a->rxev_id = 0xffffffff;
}
static void t_all_flags(struct swiw_ioc_attach *a)
{
	a->flags = SWIW_ATTACH_CRC | SWIW_ATTACH_MARKERS_TX |
		   SWIW_ATTACH_MARKERS_RX | SWIW_ATTACH_RTR_EVENT;
	a->ird = 128;
	a->ord = 0;
}

/* A connected TCP pair over loopback: *a connected, *b accepted. */
static int tcp_pair(int *a, int *b, int *lsn)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*lsn = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	*a = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*lsn < 0 || *a < 0 ||
	    bind(*lsn, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(*lsn, 4) ||
	    getsockname(*lsn, (struct sockaddr *)&sin, &sl) ||
	    connect(*a, (struct sockaddr *)&sin, sizeof(sin)))
		return -1;
	*b = accept4(*lsn, NULL, NULL, SOCK_CLOEXEC);
	return *b < 0 ? -1 : 0;
}

static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void test_attach(int fd)
{
	int a = -1, b = -1, lsn = -1, udp, unconn, usp[2], pfd[2], other;
	int c = -1, d = -1, lsn2 = -1;
	struct rings r, r2, ro;
	uint32_t sa = 0, sc = 0;
	struct swiw_ioc_stream s = { 0 };

	make_rings(fd, &r);
	cur = r;
	CHECK(!tcp_pair(&a, &b, &lsn), "TCP pair over loopback");
	CHECK(!tcp_pair(&c, &d, &lsn2), "second TCP pair");
	udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	unconn = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(udp >= 0 && unconn >= 0 &&
		      !socketpair(AF_UNIX, SOCK_STREAM, 0, usp) && !pipe(pfd),
	      "other descriptors");

	/* The socket. */
	EXPECT_ERR(attach(fd, &r, -1, NULL, NULL), EBADF);
	EXPECT_ERR(attach(fd, &r, 100000, NULL, NULL), EBADF);
	EXPECT_ERR(attach(fd, &r, pfd[0], NULL, NULL), ENOTSOCK);
	EXPECT_ERR(attach(fd, &r, fd, NULL, NULL), ENOTSOCK);
	EXPECT_ERR(attach(fd, &r, udp, NULL, NULL), EPROTONOSUPPORT);
	EXPECT_ERR(attach(fd, &r, usp[0], NULL, NULL), EPROTONOSUPPORT);
	EXPECT_ERR(attach(fd, &r, unconn, NULL, NULL), ENOTCONN);
	EXPECT_ERR(attach(fd, &r, lsn, NULL, NULL), ENOTCONN);
	/* The parameters. */
	EXPECT_ERR(attach(fd, &r, a, t_flags, NULL), EINVAL);
	EXPECT_ERR(attach(fd, &r, a, t_access, NULL), EINVAL);
	EXPECT_ERR(attach(fd, &r, a, t_stream, NULL), EINVAL);
	EXPECT_ERR(attach(fd, &r, a, t_ird, NULL), EINVAL);
	EXPECT_ERR(attach(fd, &r, a, t_ord, NULL), EINVAL);
	EXPECT_ERR(attach(fd, &r, a, t_sq_set, NULL), EINVAL);
	EXPECT_ERR(attach(fd, &r, a, t_cq_set, NULL), EINVAL);
	EXPECT_ERR(attach(fd, &r, a, t_cq_unknown, NULL), EINVAL);
	EXPECT_ERR(attach(fd, &r, a, t_rq_zero, NULL), EINVAL);
	EXPECT_ERR(attach(fd, &r, a, t_rq_is_cq, NULL), EINVAL);
	EXPECT_ERR(attach(fd, &r, a, t_tx_is_rxev, NULL), EINVAL);
	EXPECT_ERR(attach(fd, &r, a, t_rxev_is_tx, NULL), EINVAL);
	EXPECT_ERR(attach(fd, &r, a, t_rxev_huge, NULL), EINVAL);
	EXPECT_ERR(ioc(fd, SWIW_IOC_ATTACH, NULL), EFAULT);
	/* Rings of another file are not this file's. */
	other = open_dev();
	for (int i = 0; i < 40; i++) /* ids this file does not have */
		queue(other, SWIW_QUEUE_CQ, 1, 32, NULL);
	make_rings(other, &ro);
	CHECK(ro.sq > r.rxev, "other file's ids %u.. above this file's", ro.sq);
	EXPECT_ERR(attach(fd, &ro, a, NULL, NULL), EINVAL);
	close(other);

	/* Attached: the rings are the stream's, the RQ may be shared. */
	CHECK(!readable(fd), "no stream: not readable");
	CHECK(!attach(fd, &r, a, t_all_flags, &sa) && sa, "attach, stream %u",
	      sa);
	EXPECT_ERR(attach(fd, &r, c, NULL, NULL), EBUSY);
	make_rings(fd, &r2);
	EXPECT_ERR(attach(fd, &r2, a, NULL, NULL), EBUSY); /* the socket */
	r2.rq = r.rq;
	CHECK(!attach(fd, &r2, c, NULL, &sc) && sc && sc != sa,
	      "a second stream on the same RQ, stream %u", sc);
	EXPECT_ERR(queue_free(fd, r.tx), EBUSY);
	EXPECT_ERR(queue_free(fd, r.rxev), EBUSY);
	EXPECT_ERR(queue_free(fd, r.rq), EBUSY);
	CHECK(!queue_free(fd, r.cq), "free an unused ring");
	EXPECT_ERR(queue_free(fd, r.cq), EINVAL);
	CHECK(!stream_cmd(fd, SWIW_IOC_DOORBELL, sa), "doorbell");
	CHECK(!readable(fd), "nothing received: not readable");
	EXPECT_ERR(stream_cmd(fd, SWIW_IOC_DOORBELL, 12345), EINVAL);
	EXPECT_ERR(stream_cmd(fd, SWIW_IOC_DOORBELL, 0), EINVAL);
	EXPECT_ERR(stream_cmd(fd, SWIW_IOC_DETACH, 12345), EINVAL);
	/* The peer closes: an event, and the file polls readable. */
	close(b);
	{
		struct pollfd p = { .fd = fd, .events = POLLIN };

		CHECK(poll(&p, 1, 5000) == 1 && (p.revents & POLLIN),
		      "the peer's FIN makes the file readable");
	}
	CHECK(!stream_cmd(fd, SWIW_IOC_DETACH, sa), "detach");
	EXPECT_ERR(stream_cmd(fd, SWIW_IOC_DETACH, sa), EINVAL);
	EXPECT_ERR(stream_cmd(fd, SWIW_IOC_DOORBELL, sa), EINVAL);
	EXPECT_ERR(queue_free(fd, r.rq), EBUSY); /* still the second's */
	CHECK(!queue_free(fd, r.tx) && !queue_free(fd, r.rxev),
	      "rings free after detach");
	EXPECT_ERR(attach(fd, &r, d, NULL, NULL), EINVAL); /* freed rings */
	CHECK(!stream_cmd(fd, SWIW_IOC_DETACH, sc), "detach the second");
	CHECK(!queue_free(fd, r.rq), "RQ free after the last detach");
	/* The socket is the provider's again, and no longer established. */
	shutdown(a, SHUT_RDWR);
	usleep(100000);
	make_rings(fd, &r2);
	EXPECT_ERR(attach(fd, &r2, a, NULL, NULL), ENOTCONN);

	s.rsvd = 1;
	EXPECT_ERR(ioc(fd, SWIW_IOC_DOORBELL, &s), EINVAL);
	EXPECT_ERR(ioc(fd, SWIW_IOC_DETACH, &s), EINVAL);
	EXPECT_ERR(ioc(fd, SWIW_IOC_DOORBELL, NULL), EFAULT);
	EXPECT_ERR(ioc(fd, SWIW_IOC_DETACH, (void *)8), EFAULT);
	{
		struct swiw_ioc_queue_free q = { .id = r2.tx, .rsvd = 1 };

		EXPECT_ERR(ioc(fd, SWIW_IOC_QUEUE_FREE, &q), EINVAL);
		EXPECT_ERR(ioc(fd, SWIW_IOC_QUEUE_FREE, NULL), EFAULT);
		EXPECT_ERR(queue_free(fd, 0), EINVAL);
		EXPECT_ERR(queue_free(fd, 30000), EINVAL);
	}

	close(a);
	close(c);
	close(d);
	close(lsn);
	close(lsn2);
	close(udp);
	close(unconn);
	close(usp[0]);
	close(usp[1]);
	close(pfd[0]);
	close(pfd[1]);
}

struct late {
	int fd;
	char c;
};

static void *late_write(void *arg)
{
	struct late *l = arg;

	usleep(100000);
	return (void *)(long)(write(l->fd, &l->c, 1) == 1);
}

/*
 * @c is written to @w 0.1 s after a poll of @r has gone to sleep (on
 * loopback, data written first is queued before the poll looks, and no
 * wake-up would be needed): @r's data_ready must wake it, and @c is read.
 */
static bool passes(int w, int r, char c)
{
	struct pollfd p = { .fd = r, .events = POLLIN };
	struct late l = { .fd = w, .c = c };
	void *wrote = NULL;
	pthread_t t;
	bool ok;
	char got = 0;

	if (pthread_create(&t, NULL, late_write, &l))
		return false;
	ok = poll(&p, 1, 2000) == 1 && (p.revents & POLLIN) &&
	     read(r, &got, 1) == 1 && got == c;
	pthread_join(t, &wrote);
	return ok && wrote;
}

/* A new connection to the listening @lsn: *c connected, *d accepted. */
static int join(int lsn, int *c, int *d)
{
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);

	*d = -1;
	*c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*c < 0 || getsockname(lsn, (struct sockaddr *)&sin, &sl) ||
	    connect(*c, (struct sockaddr *)&sin, sizeof(sin)))
		return -1;
	*d = accept4(lsn, NULL, NULL, SOCK_CLOEXEC);
	return *d < 0 ? -1 : 0;
}

/*
 * The process keeps its own descriptor of an attached socket: after a
 * disconnect (connect(AF_UNSPEC)), with the peer's reset first when
 * @reset, it may listen on it. The disconnect ends the stream, and the
 * sockets that listen accepts must have TCP's own callbacks and no
 * pointer to the stream: with swiw's, they would call into the stream
 * after DETACH frees it, and into the module after it is unloaded
 * (after_unload; the kernel panicked there before the callbacks were
 * given back at the disconnect). Returns the listening socket, detached,
 * with a joined pair in *@c, *@d when @keep.
 */
static int listen_after_attach(int fd, bool reset, bool keep, int *c, int *d)
{
	struct sockaddr sa_unspec = { .sa_family = AF_UNSPEC };
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	const char *how = reset ? "reset, " : "";
	int a = -1, b = -1, lsn = -1;
	struct rings r, r2;
	uint32_t sa = 0;

	*c = *d = -1;
	make_rings(fd, &r);
	CHECK(!tcp_pair(&a, &b, &lsn), "TCP pair over loopback");
	CHECK(!attach(fd, &r, a, NULL, &sa) && sa, "attach, stream %u", sa);
	if (reset) {
		setsockopt(b, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(b);
		b = -1;
		usleep(100000);
	}
	CHECK(!connect(a, &sa_unspec, sizeof(sa_unspec)),
	      "%sdisconnect the attached socket", how);
	{
		struct pollfd p = { .fd = fd, .events = POLLIN };

		CHECK(poll(&p, 1, 5000) == 1 && (p.revents & POLLIN),
		      "%sthe disconnect ends the stream (an event)", how);
	}
	CHECK(!listen(a, 4), "%slisten on it", how);
	make_rings(fd, &r2);
	EXPECT_ERR(attach(fd, &r2, a, NULL, NULL), ENOTCONN);
	CHECK(!join(a, c, d), "%sa connection to it, accepted", how);
	CHECK(passes(*c, *d, 'x'), "%sthe accepted socket wakes its reader",
	      how);
	CHECK(!stream_cmd(fd, SWIW_IOC_DETACH, sa), "%sdetach", how);
	CHECK(passes(*c, *d, 'y'), "%sand after the detach", how);
	if (!keep) {
		close(*c);
		close(*d);
		close(a);
		a = -1;
	}
	if (b >= 0)
		close(b);
	close(lsn);
	return a;
}

/*
 * --after-unload: listen_after_attach, /dev/swiw closed, "ready" said;
 * once a line comes on stdin (the module unloaded meanwhile), the
 * accepted socket and a new one take data: no swiw code is called.
 */
static int after_unload(void)
{
	int fd = open_dev(), lsn, c, d, e, g;
	char line[16];

	lsn = listen_after_attach(fd, false, true, &c, &d);
	close(fd);
	printf("ready\n");
	if (!fgets(line, sizeof(line), stdin))
		return 2;
	CHECK(passes(c, d, 'z'),
	      "after the unload, the accepted socket takes data");
	CHECK(!join(lsn, &e, &g) && passes(e, g, 'w'),
	      "and a socket accepted after the unload");
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

static long cg_current(const char *cg)
{
	char path[512];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/memory.current", cg);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/*
 * --memcg CGROUP (run inside that cgroup v2 group by vm.kmod): the pages
 * of 16 MiB of rings are charged to it, and uncharged when they go.
 */
static int memcg(const char *cg)
{
	long before = cg_current(cg), during, after;
	int fd = open_dev();

	for (int i = 0; i < 8; i++)
		CHECK(!queue(fd, SWIW_QUEUE_RQ, 1U << 17, 16, NULL),
		      "2 MiB ring %d", i);
	during = cg_current(cg);
	close(fd);
	after = cg_current(cg);
	printf("# memory.current: %ld before, %ld with 16 MiB of rings, %ld after\n",
	       before, during, after);
	CHECK(before >= 0 && during - before >= 15L << 20,
	      "the rings are charged to the memory cgroup");
	CHECK(during - after >= 15L << 20, "and uncharged when they go");
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

/* A ring freed while mapped: the mapping stays good until munmap. */
static void test_queue_free_mapped(int fd)
{
	struct swiw_ioc_queue q;
	volatile uint8_t *p;

	CHECK(!queue(fd, SWIW_QUEUE_RXEV, 64, 96, &q), "queue");
	p = mmap(NULL, q.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 q.mmap_offset);
	CHECK(p != MAP_FAILED, "map");
	if (p == MAP_FAILED)
		return;
	p[0] = 0x11;
	CHECK(!queue_free(fd, q.id), "free while mapped");
	p[q.mmap_size - 1] = 0x22;
	CHECK(p[0] == 0x11 && p[q.mmap_size - 1] == 0x22,
	      "the mapping still works");
	CHECK(mmap(NULL, q.mmap_size, PROT_READ, MAP_SHARED, fd,
		   q.mmap_offset) == MAP_FAILED &&
		      errno == EINVAL,
	      "a freed ring cannot be mapped again");
	/* Split the mapping: both halves hold the ring. */
	if (q.mmap_size >= 2 * (size_t)page) {
		munmap((void *)p, page);
		p[q.mmap_size - 1] = 0x33;
		CHECK(p[q.mmap_size - 1] == 0x33, "the rest still works");
		munmap((void *)(p + page), q.mmap_size - page);
	} else {
		munmap((void *)p, q.mmap_size);
	}
}

/*
 * Random commands, arguments and mappings on one file, then close: the
 * module must answer every one and release what they made (VmPin back).
 */
/* The fuzz tests' seed: fixed in the suite, new for each pass of a
 * campaign (--fuzz). */
static unsigned int fuzz_seed = 5;

static void test_random(void)
{
	static const unsigned long cmds[] = {
		SWIW_IOC_VERSION, SWIW_IOC_REG_MR,     SWIW_IOC_DEREG_MR,
		SWIW_IOC_QUEUE,	  SWIW_IOC_ATTACH,     SWIW_IOC_DOORBELL,
		SWIW_IOC_DETACH,  SWIW_IOC_QUEUE_FREE,
	};
	size_t len = 32 * page;
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long base = vm_pin_kb();
	uint32_t arg[16], stags[64] = { 0 };
	int fd = open_dev(), i, j, odd = 0;

	srandom(fuzz_seed);
	for (i = 0; i < 20000; i++) {
		unsigned long cmd = cmds[random() % 8];

		for (j = 0; j < 16; j++)
			arg[j] = random() % 4 ? (uint32_t)random() :
						(uint32_t)random() % 64;
		if (cmd == SWIW_IOC_REG_MR && random() % 2) {
			/* Often a real range, so pins happen. */
			uint64_t off = (uint64_t)(random() % len);
			uint64_t addr = (uintptr_t)buf + off,
				 n = 1 + random() % (len - off);

			memcpy(&arg[0], &addr, 8);
			memcpy(&arg[2], &n, 8);
			arg[4] &= 0xf;
		}
		if (cmd == SWIW_IOC_DEREG_MR && random() % 2) {
			arg[0] = stags[random() % 64];
			arg[1] = 0;
		}
		if (cmd == SWIW_IOC_QUEUE) {
			arg[1] &= 0xff; /* keep the rings small */
			arg[2] &= 0x3ff;
		}
		if (ioctl(fd, cmd, arg) == 0) {
			if (cmd == SWIW_IOC_REG_MR)
				stags[random() % 64] = arg[5];
		} else if (errno != EINVAL && errno != EFAULT &&
			   errno != ENOMEM && errno != EOPNOTSUPP &&
			   errno != EBADF && errno != ENOTSOCK &&
			   errno != ENOTCONN && errno != EPROTONOSUPPORT &&
			   errno != EBUSY) {
			odd++;
		}
		if (i % 64 == 0) {
			/* Mostly at a ring's offset window, sometimes inside. */
			off_t off = ((off_t)(random() % 16) << 16 |
				     (random() % 4 ? 0 : random() % 8)) *
				    page;
			size_t n = (size_t)(1 + random() % 8) * page;
			void *p = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, off);

			if (p != MAP_FAILED)
				munmap(p, n);
		}
	}
	CHECK(!odd, "%d random commands failed with an unexpected errno", odd);
	close(fd);
	CHECK(vm_pin_kb() == base, "VmPin %ld back to %ld after close",
	      vm_pin_kb(), base);
	munmap(buf, len);
}

/* A ring of the fuzz loop, mapped. */
struct fring {
	uint8_t *p;
	uint32_t id, num, stride, pos;
	size_t size;
};

static bool fring_make(int fd, uint32_t kind, uint32_t num, uint32_t stride,
		       struct fring *r)
{
	struct swiw_ioc_queue q;

	if (queue(fd, kind, num, stride, &q))
		return false;
	r->p = mmap(NULL, q.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    q.mmap_offset);
	r->id = q.id;
	r->num = num;
	r->stride = stride;
	r->pos = 0;
	r->size = q.mmap_size;
	return r->p != MAP_FAILED;
}

static uint16_t *fring_flags(struct fring *r, uint32_t pos)
{
	return (uint16_t *)(r->p + (size_t)(pos & (r->num - 1)) * r->stride +
			    8);
}

static void rand_bytes(void *p, size_t n)
{
	uint8_t *b = p;

	while (n--)
		*b++ = (uint8_t)random();
}

/*
 * Attached streams under fire from both sides: garbage (and half-right)
 * txds and RQEs with doorbells, random octets (and plausible FPDU
 * lengths) from a plain TCP peer, regions deregistered under them, events
 * taken or left, and every way of ending: detach, close with the stream
 * attached, the peer first, mappings first. The module must survive it
 * all and give back every pin and reference.
 */
static void test_stream_fuzz(void)
{
	size_t len = 16 * page;
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long base = vm_pin_kb(), refs = module_refcnt();
	int round, odd = 0;

	memset(buf, 0x5a, len);
	srandom(fuzz_seed + 2);
	for (round = 0; round < 150; round++) {
		struct fring rq, tx, rxev;
		struct rings r;
		uint32_t stag = 0, stream = 0;
		uint8_t junk[2048];
		int fd = open_dev(), a, b, lsn, step, one = 1;
		int kid[2] = { -1, -1 };
		static const uint32_t accs[] = {
			0,
			ACC_LOCAL_WRITE,
			ACC_LOCAL_WRITE | ACC_REMOTE_WRITE,
			ACC_REMOTE_READ,
			ACC_LOCAL_WRITE | ACC_REMOTE_WRITE | ACC_REMOTE_READ |
				ACC_REMOTE_ATOMIC,
		};

		if (!fring_make(fd, SWIW_QUEUE_RQ, 16, 80, &rq) ||
		    !fring_make(fd, SWIW_QUEUE_TX, 16, 160, &tx) ||
		    !fring_make(fd, SWIW_QUEUE_RXEV, 8 << (random() % 3), 96,
				&rxev) ||
		    tcp_pair(&a, &b, &lsn)) {
			CHECK(0, "fuzz round %d setup", round);
			close(fd);
			break;
		}
		close(lsn);
		setsockopt(b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		reg_mr(fd, buf, len, accs[random() % 5], &stag);
		r = (struct rings){ .rq = rq.id, .tx = tx.id, .rxev = rxev.id };
		cur = r;
		{
			struct swiw_ioc_attach at = {
				.sock_fd = a,
				.flags = (uint32_t)random() % 16,
				.rq_id = rq.id,
				.tx_id = tx.id,
				.rxev_id = rxev.id,
				.ird = (uint32_t)random() % 129,
				.ord = (uint32_t)random() % 129,
			};

			if (ioc(fd, SWIW_IOC_ATTACH, &at)) {
				odd++;
				printf("fuzz: attach failed: %s\n",
				       strerror(errno));
			}
			stream = at.stream_id;
		}
		for (step = 0; step < 60; step++) {
			switch (random() % 10) {
			case 0: /* random octets from the peer */
				rand_bytes(junk, sizeof(junk));
				send(b, junk, 1 + random() % sizeof(junk),
				     MSG_DONTWAIT | MSG_NOSIGNAL);
				break;
			case 1: { /* an FPDU length that may be right */
				uint16_t n = (uint16_t)(14 + random() % 80);

				rand_bytes(junk, sizeof(junk));
				junk[0] = (uint8_t)(n >> 8);
				junk[1] = (uint8_t)n;
				send(b, junk, (size_t)n + 8,
				     MSG_DONTWAIT | MSG_NOSIGNAL);
				break;
			}
			case 2:
			case 3: { /* a txd: garbage, or half right */
				uint8_t *slot =
					(uint8_t *)fring_flags(&tx, tx.pos) - 8;
				struct swiw_txd *t = (struct swiw_txd *)slot;

				if (__atomic_load_n(fring_flags(&tx, tx.pos),
						    __ATOMIC_ACQUIRE) &
				    SWIW_SLOT_VALID)
					break;
				rand_bytes(slot, tx.stride);
				if (random() % 2) {
					t->hdr_len =
						(uint8_t)(14 + random() % 60);
					t->num_sge = (uint8_t)(random() % 3);
					t->payload_len = 0;
					for (int i = 0; i < t->num_sge; i++) {
						t->sge[i].lkey = stag;
						t->sge[i].laddr =
							(uintptr_t)buf +
							random() % len;
						t->sge[i].length =
							(uint32_t)(random() %
								   3000);
						t->payload_len +=
							t->sge[i].length;
					}
				}
				__atomic_store_n(fring_flags(&tx, tx.pos),
						 (uint16_t)(random() |
							    SWIW_SLOT_VALID),
						 __ATOMIC_RELEASE);
				tx.pos++;
				stream_cmd(fd, SWIW_IOC_DOORBELL, stream);
				break;
			}
			case 4: { /* an RQE: garbage, or half right */
				uint8_t *slot =
					(uint8_t *)fring_flags(&rq, rq.pos) - 8;
				struct swiw_rqe *q = (struct swiw_rqe *)slot;
				struct swiw_sge *g = (struct swiw_sge *)(q + 1);

				if (__atomic_load_n(fring_flags(&rq, rq.pos),
						    __ATOMIC_ACQUIRE) &
				    SWIW_SLOT_VALID)
					break;
				rand_bytes(slot, rq.stride);
				if (random() % 2) {
					q->num_sge = (uint8_t)(random() % 5);
					for (int i = 0; i < 4; i++) {
						g[i].lkey = stag;
						g[i].laddr = (uintptr_t)buf +
							     random() % len;
						g[i].length =
							(uint32_t)(random() %
								   len);
					}
				}
				__atomic_store_n(fring_flags(&rq, rq.pos),
						 (uint16_t)(random() |
							    SWIW_SLOT_VALID),
						 __ATOMIC_RELEASE);
				rq.pos++;
				break;
			}
			case 5: /* take events, or not */
				while (random() % 4 &&
				       (__atomic_load_n(fring_flags(&rxev,
								    rxev.pos),
							__ATOMIC_ACQUIRE) &
					SWIW_SLOT_VALID))
					__atomic_store_n(
						fring_flags(&rxev, rxev.pos++),
						0, __ATOMIC_RELEASE);
				stream_cmd(fd, SWIW_IOC_DOORBELL, stream);
				break;
			case 6: /* the region goes, and maybe comes back */
				dereg_mr(fd, stag);
				if (random() % 2)
					reg_mr(fd, buf, len, accs[random() % 5],
					       &stag);
				break;
			case 7: /* read what the helper sent */
				recv(b, junk, sizeof(junk), MSG_DONTWAIT);
				break;
			case 8: { /* the process's own descriptor: disconnect,
				   * listen, accept; the children outlive all */
				struct sockaddr un = { .sa_family = AF_UNSPEC };

				connect(a, &un, sizeof(un));
				if (random() % 2 || listen(a, 2))
					break;
				close(kid[0]);
				close(kid[1]);
				if (!join(a, &kid[0], &kid[1]))
					send(kid[0], junk, 1 + random() % 64,
					     MSG_DONTWAIT | MSG_NOSIGNAL);
				break;
			}
			default:
				readable(fd);
				usleep(random() % 2000);
			}
		}
		switch (random() % 4) {
		case 0:
			stream_cmd(fd, SWIW_IOC_DETACH, stream);
			close(b);
			break;
		case 1: /* release() detaches */
			break;
		case 2: /* the peer first */
			close(b);
			usleep(random() % 5000);
			break;
		default: /* the mappings first */
			munmap(rq.p, rq.size);
			munmap(tx.p, tx.size);
			munmap(rxev.p, rxev.size);
			rq.p = tx.p = rxev.p = NULL;
		}
		if (rq.p) {
			munmap(rq.p, rq.size);
			munmap(tx.p, tx.size);
			munmap(rxev.p, rxev.size);
		}
		close(a);
		close(fd);
		close(b); /* EBADF when closed above: harmless */
		/* Data on a child of a socket that was attached. */
		if (kid[0] >= 0)
			send(kid[0], junk, 64, MSG_DONTWAIT | MSG_NOSIGNAL);
		close(kid[0]);
		close(kid[1]);
	}
	CHECK(!odd, "%d fuzz attaches failed", odd);
	CHECK(vm_pin_kb() == base, "VmPin %ld back to %ld after the fuzz",
	      vm_pin_kb(), base);
	CHECK(module_refcnt() == refs, "module refcnt %ld back to %ld",
	      module_refcnt(), refs);
	munmap(buf, len);
}

/*
 * Threads attaching, ringing and detaching streams on one file at once,
 * each also detaching and ringing its neighbour's: every stream goes
 * exactly once, ids are never given twice, rings are busy exactly while
 * attached, and the file's release finds whatever is left.
 */
struct sthr {
	int fd, id, bad, line;
	uint32_t *ids; /* one slot per thread, atomic */
};

static void *sthr_main(void *arg)
{
	struct sthr *t = arg;
	unsigned int seed = (unsigned int)t->id + 100;
	int i;

	for (i = 0; i < 150; i++) {
		struct rings r = { 0 };
		struct swiw_ioc_queue q;
		uint32_t id = 0, other;
		int a, b, lsn, err;

		if (queue(t->fd, SWIW_QUEUE_RQ, 64, 32, &q))
			goto bad;
		r.rq = q.id;
		if (queue(t->fd, SWIW_QUEUE_TX, 64, 160, &q))
			goto bad;
		r.tx = q.id;
		if (queue(t->fd, SWIW_QUEUE_RXEV, 64, 96, &q))
			goto bad;
		r.rxev = q.id;
		if (tcp_pair(&a, &b, &lsn))
			goto bad;
		close(lsn);
		if (attach(t->fd, &r, a, NULL, &id) || !id)
			t->bad++, t->line = __LINE__;
		/* Busy until published: then a neighbour may detach it. */
		if (queue_free(t->fd, r.tx) != EBUSY)
			t->bad++, t->line = __LINE__;
		__atomic_store_n(&t->ids[t->id], id, __ATOMIC_RELAXED);
		other = __atomic_load_n(&t->ids[(t->id + 1) % 3],
					__ATOMIC_RELAXED);
		err = stream_cmd(t->fd, SWIW_IOC_DOORBELL, other);
		if (err && err != EINVAL)
			t->bad++, t->line = __LINE__;
		if (rand_r(&seed) % 3 == 0) {
			/* The neighbour's, if still there; then maybe ours. */
			err = stream_cmd(t->fd, SWIW_IOC_DETACH, other);
			if (err && err != EINVAL)
				t->bad++, t->line = __LINE__;
		}
		if (rand_r(&seed) % 4) {
			err = stream_cmd(t->fd, SWIW_IOC_DETACH, id);
			if (err && err != EINVAL)
				t->bad++, t->line = __LINE__;
			__atomic_store_n(&t->ids[t->id], 0, __ATOMIC_RELAXED);
		}
		/* Free once the stream is gone; left to release() if not. */
		if (!queue_free(t->fd, r.tx)) {
			if (queue_free(t->fd, r.rxev) ||
			    queue_free(t->fd, r.rq))
				t->bad++, t->line = __LINE__;
		}
		close(a);
		close(b);
		continue;
bad:
		t->bad++, t->line = __LINE__;
		break;
	}
	return NULL;
}

static void test_stream_threads(void)
{
	uint32_t ids[3] = { 0 };
	long refs = module_refcnt();
	struct sthr t[3];
	pthread_t tid[3];
	int fd = open_dev(), i, bad = 0;

	for (i = 0; i < 3; i++) {
		t[i] = (struct sthr){ .fd = fd, .id = i, .ids = ids };
		CHECK(!pthread_create(&tid[i], NULL, sthr_main, &t[i]),
		      "thread %d", i);
	}
	for (i = 0; i < 3; i++) {
		pthread_join(tid[i], NULL);
		bad += t[i].bad;
	}
	CHECK(!bad,
	      "%d unexpected results from racing stream threads (line %d)", bad,
	      t[0].line | t[1].line | t[2].line);
	close(fd);
	CHECK(module_refcnt() == refs, "module refcnt %ld back to %ld",
	      module_refcnt(), refs);
}

/*
 * Threads registering and deregistering on one file at once, each also
 * trying its neighbours' STags: every STag works exactly once, and
 * nothing stays pinned.
 */
struct thr {
	int fd, id, bad;
	char *buf;
	uint32_t *stags; /* one slot per thread, atomic */
};

static void *thr_main(void *arg)
{
	struct thr *t = arg;
	unsigned int seed = (unsigned int)t->id;
	int i;

	for (i = 0; i < 3000; i++) {
		uint32_t s, other;
		int err;

		err = reg_mr(t->fd, t->buf + (rand_r(&seed) % 8) * page, page,
			     ACC_LOCAL_WRITE, &s);
		if (err) {
			t->bad++;
			continue;
		}
		__atomic_store_n(&t->stags[t->id], s, __ATOMIC_RELAXED);
		/* A neighbour's current STag: it may be freed under us. */
		other = __atomic_load_n(&t->stags[(t->id + 1) % 4],
					__ATOMIC_RELAXED);
		if (other && (err = dereg_mr(t->fd, other)) && err != EINVAL)
			t->bad++;
		/* Ours, unless a neighbour freed it first: then EINVAL. */
		err = dereg_mr(t->fd, s);
		if (err && err != EINVAL)
			t->bad++;
		__atomic_store_n(&t->stags[t->id], 0, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void test_threads(void)
{
	uint32_t stags[4] = { 0 };
	size_t len = 16 * page;
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long base = vm_pin_kb();
	struct thr t[4];
	pthread_t tid[4];
	int fd = open_dev(), i, bad = 0;

	for (i = 0; i < 4; i++) {
		t[i] = (struct thr){
			.fd = fd, .id = i, .buf = buf, .stags = stags
		};
		CHECK(!pthread_create(&tid[i], NULL, thr_main, &t[i]),
		      "thread %d", i);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(tid[i], NULL);
		bad += t[i].bad;
	}
	CHECK(!bad, "%d unexpected results from racing threads", bad);
	CHECK(vm_pin_kb() == base, "VmPin %ld back to %ld after the race",
	      vm_pin_kb(), base);
	close(fd);
	CHECK(vm_pin_kb() == base, "VmPin %ld back to %ld after close",
	      vm_pin_kb(), base);
	munmap(buf, len);
}

/*
 * --fuzz SECONDS: the two fuzz tests again and again, each pass with seeds
 * of its own, for a campaign longer than the suite can afford. Every pass
 * checks what the suite checks (answers, pins, module references).
 */
static int fuzz_campaign(long seconds)
{
	time_t start = time(NULL), end = start + seconds;
	unsigned int first = (unsigned int)getpid() * 1000u;
	unsigned long passes = 0;

	do {
		fuzz_seed = first + (unsigned int)passes * 4;
		test_random();
		test_stream_fuzz();
		passes++;
		printf("fuzz: pass %lu (seed %u) at %ld s, %d failed\n", passes,
		       fuzz_seed, (long)(time(NULL) - start), failed);
	} while (time(NULL) < end && !failed);
	printf("fuzz campaign: %lu passes, %lu commands, %lu stream rounds in %ld s\n",
	       passes, passes * 20000, passes * 150,
	       (long)(time(NULL) - start));
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	int fd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && argv[1][0] != '-')
		dev_path = argv[1];
	page = sysconf(_SC_PAGESIZE);
	if (access(dev_path, F_OK)) {
		printf("SKIP: %s does not exist: load swiw.ko first (tests/vm)\n",
		       dev_path);
		return 77;
	}
	if (argc > 1 && !strcmp(argv[1], "--after-unload"))
		return after_unload();
	if (argc > 2 && !strcmp(argv[1], "--memcg"))
		return memcg(argv[2]);
	if (argc > 2 && !strcmp(argv[1], "--fuzz"))
		return fuzz_campaign(atol(argv[2]));
	fd = open_dev();
	test_version(fd);
	test_reg_mr(fd);
	test_queue(fd);
	test_attach(fd);
	test_queue_free_mapped(fd);
	for (int i = 0; i < 2; i++) {
		int c, d;

		listen_after_attach(fd, i, false, &c, &d);
	}
	CHECK(!readable(fd), "a file without streams is not readable");
	close(fd);
	test_release();
	test_sigkill();
	test_memlock();
	test_queue_budget();
	test_user_cap();
	test_random();
	test_stream_fuzz();
	test_stream_threads();
	test_threads();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
