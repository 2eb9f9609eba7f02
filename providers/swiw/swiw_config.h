/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * swiw's configuration: /etc/swiw/swiw.conf (or $SWIW_CONFIG), then the
 * environment, which wins. See swiw(7) for the keys.
 */
#ifndef SWIW_CONFIG_H
#define SWIW_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define SWIW_CONFIG_PATTERNS_MAX 512

struct swiw_config {
	/* Whitespace or comma separated fnmatch(3) patterns; "!" excludes. */
	char interfaces[SWIW_CONFIG_PATTERNS_MAX];
	int log_level; /* enum swiw_log_level */
	/* TCP port of the connection broker, on every host (swiw_broker.h). */
	unsigned int broker_port;
	/* How long an initiator keeps trying to reach its peer, in ms. */
	unsigned int connect_timeout_ms;
	/* Who drives the engine (swiw(7), PROGRESS). */
	int progress; /* enum swiw_progress */
	/* The engine's clock (swiw(7), CONFIGURATION). */
	int clock; /* enum swiw_clock_cfg */
	/* Which engine runs the queues (swiw(7), KERNEL HELPER). */
	int engine; /* enum swiw_engine_cfg */
	/* What this side asks for in MPA (swiw(7), WIRE PROTOCOL). */
	bool mpa_crc; /* set C: CRC in both directions */
	bool mpa_markers; /* set M: markers towards us */
	unsigned int mpa_rev; /* 1 or 2 */
	int mpa_p2p; /* enum swiw_mpa_p2p_cfg */
	/*
	 * RTR types (enum swiw_config_rtr) in order of preference, 0 ends;
	 * all 0: the MPA machine's defaults. Initiator: the set offered;
	 * responder: the types accepted, first listed first.
	 */
	unsigned char mpa_rtr[3];
};

/* Peer-to-peer (RFC 6581 Control Flag A): the MPA machine's modes. */
enum swiw_mpa_p2p_cfg {
	SWIW_MPA_P2P_CFG_ON, /* initiator asks; responder takes either */
	SWIW_MPA_P2P_CFG_OFF, /* never; a Request with A is rejected */
	SWIW_MPA_P2P_CFG_REQUIRED, /* no connection without it */
};

/* RTR message types, numbered as enum swiw_mpa_rtr (wire/swiw_mpa.h). */
enum swiw_config_rtr {
	SWIW_CONFIG_RTR_SEND = 1,
	SWIW_CONFIG_RTR_WRITE = 2,
	SWIW_CONFIG_RTR_READ = 3,
};

enum swiw_engine_cfg {
	SWIW_ENGINE_CFG_AUTO, /* the kernel helper if usable, else in-process */
	SWIW_ENGINE_CFG_INPROCESS,
	SWIW_ENGINE_CFG_KERNEL, /* the kernel helper, or no device opens */
	SWIW_ENGINE_CFG_RING, /* the helper's lower half, in the process */
};

enum swiw_clock_cfg {
	SWIW_CLOCK_CFG_AUTO, /* the TSC where clock_gettime is a syscall */
	SWIW_CLOCK_CFG_SYSTEM,
	SWIW_CLOCK_CFG_TSC,
};

enum swiw_progress {
	/* ibv_poll_cq and ibv_post_send run the engine when they can; the
	 * progress thread covers the time the application makes no call. */
	SWIW_PROGRESS_POLL,
	/* Only the progress thread does. */
	SWIW_PROGRESS_THREAD,
};

/* The process-wide configuration, loaded on first use. */
const struct swiw_config *swiw_config(void);

void swiw_config_defaults(struct swiw_config *cfg);

/*
 * Applies "key = value" lines of @text to @cfg. Problems are reported
 * through @warn (one call per bad line, naming @origin and the line) and the
 * line is skipped. Returns the number of bad lines.
 */
int swiw_config_parse(struct swiw_config *cfg, const char *text,
		      const char *origin, void (*warn)(const char *msg));

/* Applies one key; returns 0 or -1 if the key or value is not valid. */
int swiw_config_set(struct swiw_config *cfg, const char *key,
		    const char *value);

/*
 * True if @ifname is selected by @patterns: it must match some include
 * pattern (no include pattern means "all") and no "!" pattern.
 */
bool swiw_config_iface_match(const char *patterns, const char *ifname);

#endif /* SWIW_CONFIG_H */
