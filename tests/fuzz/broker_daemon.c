// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * swiw-broker's swiw_broker_main.c for the fuzz targets: the same file,
 * its logging, clock and epoll helpers, with main() renamed, since
 * libFuzzer brings the program's main.
 */
int swiw_broker_main(int argc, char **argv);
#define main swiw_broker_main
#include "swiw_broker_main.c"
