// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Prints what the provider's configuration loader made of the file and
 * the environment, and whether the process runs with more privilege than
 * its caller (AT_SECURE). tests/unit/secure_env.sh runs it as it is and
 * setuid root under another user.
 */
#include <stdio.h>
#include <sys/auxv.h>

#include "swiw_config.h"

int main(void)
{
	const struct swiw_config *c = swiw_config();

	printf("at_secure=%lu broker_port=%u mpa_rev=%u\n",
	       getauxval(AT_SECURE), c->broker_port, c->mpa_rev);
	return 0;
}
