/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The limits swiw advertises, here and in swiw-abi.h. Every verb that creates or sizes
 * an object checks against these, and query_device reports exactly them.
 */
#ifndef SWIW_LIMITS_H
#define SWIW_LIMITS_H

/* Those the engines enforce too (SGEs, IRD/ORD, regions). */
#include <rdma/swiw-abi.h>

#define SWIW_VENDOR_ID 0 /* no IEEE OUI: a software device */
#define SWIW_VENDOR_PART_ID 0x5357 /* "SW" */
#define SWIW_HW_VER 1

#define SWIW_MAX_QP 16384
#define SWIW_MAX_QP_WR 16384
#define SWIW_MAX_SGE_RD 16 /* READ sink */
#define SWIW_MAX_INLINE 512 /* bytes, siw offers 80 */
#define SWIW_MAX_CQ 16384
#define SWIW_MAX_CQE 262144
#define SWIW_MAX_PD 16384
#define SWIW_MAX_SRQ 4096
#define SWIW_MAX_SRQ_WR 65536
#define SWIW_MAX_SRQ_SGE 16
#define SWIW_MAX_GID 16 /* addresses per interface shown as GIDs */
#define SWIW_MAX_PKEY 1
#define SWIW_NUM_COMP_VECTORS 1
#define SWIW_PORT 1

#define SWIW_MAX_MSG_SIZE (1U << 31)

/* What the device does; grows as the data path does. */
#define SWIW_DEVICE_CAP_FLAGS IBV_DEVICE_PORT_ACTIVE_EVENT
#define SWIW_ATOMIC_CAP IBV_ATOMIC_HCA

/* Page sizes memory registration accepts (any: no hardware MTT). */
#define SWIW_PAGE_SIZE_CAP 0xfffff000ULL

#endif /* SWIW_LIMITS_H */
