/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the verbs tests share: opening swiw_lo through the stock libibverbs. */
#ifndef SWIW_VERBS_TEST_H
#define SWIW_VERBS_TEST_H

#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>

/* Opens swiw_lo from a fresh device list kept in *list; NULL if absent. */
static inline struct ibv_context *open_swiw_lo(struct ibv_device ***list)
{
	struct ibv_context *ctx = NULL;
	int i;

	*list = ibv_get_device_list(NULL);
	for (i = 0; *list && (*list)[i]; i++)
		if (!strcmp(ibv_get_device_name((*list)[i]), "swiw_lo"))
			ctx = ibv_open_device((*list)[i]);
	if (!ctx)
		fprintf(stderr, "no swiw_lo: run this test through swiw-run\n");
	return ctx;
}

#endif /* SWIW_VERBS_TEST_H */
