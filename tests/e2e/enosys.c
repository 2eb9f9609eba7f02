// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * enosys: runs a program as a kernel without some system calls would,
 * each of them failing with ENOSYS (a seccomp filter, inherited across
 * exec and fork): what an older kernel than the build's, or valgrind,
 * answers to a call it does not know.
 *
 *   enosys NAME[,NAME...] PROGRAM [ARG...]
 *
 * NAME: epoll_pwait2 (Linux 5.11), the one swiw has a fallback for.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_CALLS 8

static const struct {
	const char *name;
	int nr;
} calls[] = {
	{ "epoll_pwait2", __NR_epoll_pwait2 },
};

static int call_nr(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (!strcmp(calls[i].name, name))
			return calls[i].nr;
	return -1;
}

int main(int argc, char **argv)
{
	struct sock_filter f[2 + 2 * MAX_CALLS];
	struct sock_fprog prog = { .filter = f };
	char *list, *name, *save = NULL;
	unsigned int n = 0;
	int nr;

	if (argc < 3) {
		fprintf(stderr, "usage: %s NAME[,NAME...] PROGRAM [ARG...]\n",
			argv[0]);
		return 2;
	}
	list = argv[1];
	f[n++] = (struct sock_filter)BPF_STMT(
		BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	for (name = strtok_r(list, ",", &save); name;
	     name = strtok_r(NULL, ",", &save)) {
		nr = call_nr(name);
		if (nr < 0 || n + 3 > sizeof(f) / sizeof(f[0])) {
			fprintf(stderr, "%s: unknown or too many: %s\n",
				argv[0], name);
			return 2;
		}
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						      (unsigned int)nr, 0, 1);
		f[n++] = (struct sock_filter)BPF_STMT(
			BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS);
	}
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
					      SECCOMP_RET_ALLOW);
	prog.len = (unsigned short)n;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("enosys: seccomp");
		return 1;
	}
	execvp(argv[2], argv + 2);
	fprintf(stderr, "enosys: %s: %s\n", argv[2], strerror(errno));
	return 127;
}
