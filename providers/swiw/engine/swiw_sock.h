/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef SWIW_SOCK_H
#define SWIW_SOCK_H

/* Reads and drops what @fd has received, up to a bound. */
void swiw_sock_drain(int fd);

/* Closes a stream's socket so that what it queued to send still goes. */
void swiw_sock_close(int fd);

#endif /* SWIW_SOCK_H */
