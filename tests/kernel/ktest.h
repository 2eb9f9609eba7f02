/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What swiw_kmod_test and swiw_kdp_test share: the device, the pass/fail
 * counting of their checks, and small wrappers. Include after the system
 * headers (ioctl, syscall, capabilities, stdio).
 */
#ifndef SWIW_KTEST_H
#define SWIW_KTEST_H

/* libibverbs' IBV_ACCESS_* values (the same as the kernel's uverbs ABI). */
enum {
	ACC_LOCAL_WRITE = 1 << 0,
	ACC_REMOTE_WRITE = 1 << 1,
	ACC_REMOTE_READ = 1 << 2,
	ACC_REMOTE_ATOMIC = 1 << 3,
	ACC_ZERO_BASED = 1 << 5,
	ACC_ON_DEMAND = 1 << 6,
	ACC_RELAXED_ORDERING = 1 << 20,
};

static const char *dev_path = "/dev/swiw";
static int passed, failed;

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (cond) {                                                 \
			passed++;                                           \
		} else {                                                    \
			failed++;                                           \
			printf("FAIL %s:%d: ", __func__, __LINE__);         \
			printf(__VA_ARGS__);                                \
			printf(" (errno %d %s)\n", errno, strerror(errno)); \
		}                                                           \
	} while (0)

static inline int ioc(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? errno : 0;
}

static inline int open_dev(void)
{
	int fd = open(dev_path, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		printf("FAIL: open %s: %s\n", dev_path, strerror(errno));
		exit(1);
	}
	return fd;
}

static inline int dereg_mr(int fd, uint32_t stag)
{
	struct swiw_ioc_dereg_mr d = { .stag = stag };

	return ioc(fd, SWIW_IOC_DEREG_MR, &d);
}

static inline int drop_ipc_lock(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3
	};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[CAP_IPC_LOCK / 32].effective &= ~(1U << (CAP_IPC_LOCK % 32));
	return (int)syscall(SYS_capset, &h, d);
}

static inline long module_refcnt(void)
{
	long n = -1;
	FILE *f = fopen("/sys/module/swiw/refcnt", "re");

	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

/* kB in VmPin of /proc/self/status (mm->pinned_vm), or -1. */
static inline long vm_pin_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

#endif /* SWIW_KTEST_H */
