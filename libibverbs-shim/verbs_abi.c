// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_abi.h"

int swiw_verbs_release_from_name(const char *file_name)
{
	static const char prefix[] = "libibverbs.so.";
	const char *base = strrchr(file_name, '/');
	long part[3];
	char *end;
	int i;

	base = base ? base + 1 : file_name;
	if (strncmp(base, prefix, sizeof(prefix) - 1))
		return -1;
	/* SONAME major, library minor, then the rdma-core release. */
	base += sizeof(prefix) - 1;
	for (i = 0; i < 3; i++) {
		if (*base < '0' || *base > '9')
			return -1;
		part[i] = strtol(base, &end, 10);
		if (part[i] > 100000 || (*end != '.' && !(i == 2 && !*end)))
			return -1;
		base = *end ? end + 1 : end;
	}
	return part[0] == 1 ? (int)part[2] : -1;
}

int swiw_verbs_abi_check(void *sym, char *why, size_t len)
{
	char path[PATH_MAX];
	Dl_info info;
	int rel;

	if (!sym) {
		snprintf(why, len,
			 "the loaded libibverbs has no %s provider interface",
			 SWIW_VERBS_PABI);
		return -1;
	}
	if (!dladdr(sym, &info) || !info.dli_fname ||
	    !realpath(info.dli_fname, path)) {
		snprintf(why, len, "cannot tell which libibverbs is loaded");
		return -1;
	}
	rel = swiw_verbs_release_from_name(path);
	if (rel < SWIW_VERBS_MIN_RELEASE || rel > SWIW_VERBS_MAX_RELEASE) {
		snprintf(
			why, len,
			"%s is not a libibverbs release swiw was verified with (rdma-core %d to %d)",
			path, SWIW_VERBS_MIN_RELEASE, SWIW_VERBS_MAX_RELEASE);
		return -1;
	}
	return 0;
}
