// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "swiw_broker.h"
#include "swiw_config.h"
#include "swiw_log.h"

#ifndef SWIW_CONFIG_FILE
#define SWIW_CONFIG_FILE "/etc/swiw/swiw.conf"
#endif

static const char *const log_names[] = { "none", "error", "warn", "info",
					 "debug" };

void swiw_config_defaults(struct swiw_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	strcpy(cfg->interfaces, "*");
	cfg->log_level = SWIW_LOG_WARN;
	cfg->broker_port = SWIW_BROKER_PORT_DEFAULT;
	cfg->connect_timeout_ms = SWIW_BROKER_CONNECT_TIMEOUT_MS;
	cfg->mpa_rev = 2;
}

/*
 * "write read", "read,write", "send", "default": RTR types in order of
 * preference, each once. Returns 0, or -1 leaving @cfg unchanged.
 */
static int parse_rtr(struct swiw_config *cfg, const char *v)
{
	static const char *const names[] = { "send", "write", "read" };
	unsigned char list[3] = { 0 };
	size_t n = 0, len, i, k;

	if (!strcmp(v, "default")) {
		memset(cfg->mpa_rtr, 0, sizeof(cfg->mpa_rtr));
		return 0;
	}
	while (*v) {
		len = strcspn(v, " \t,");
		if (!len) {
			v++;
			continue;
		}
		for (i = 0; i < 3; i++)
			if (strlen(names[i]) == len &&
			    !strncmp(v, names[i], len))
				break;
		if (i == 3 || n == 3)
			return -1;
		for (k = 0; k < n; k++)
			if (list[k] == SWIW_CONFIG_RTR_SEND + i)
				return -1;
		list[n++] = (unsigned char)(SWIW_CONFIG_RTR_SEND + i);
		v += len;
	}
	if (!n)
		return -1;
	memcpy(cfg->mpa_rtr, list, sizeof(list));
	return 0;
}

/* yes/no, on/off, true/false, 1/0: 1 or 0, or -1. */
static int parse_bool(const char *v)
{
	static const char *const yes[] = { "yes", "on", "true", "1" };
	static const char *const no[] = { "no", "off", "false", "0" };
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(v, yes[i]))
			return 1;
		if (!strcasecmp(v, no[i]))
			return 0;
	}
	return -1;
}

/* @v among @names, the values of an enum in order: its index, or -1. */
static int parse_choice(const char *v, const char *const *names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(v, names[i]))
			return (int)i;
	return -1;
}

#define PARSE_CHOICE(v, names) \
	parse_choice(v, names, sizeof(names) / sizeof(names[0]))

static int parse_log_level(const char *v)
{
	char *end;
	long n;
	size_t i;

	for (i = 0; i < sizeof(log_names) / sizeof(log_names[0]); i++)
		if (!strcasecmp(v, log_names[i]))
			return (int)i;
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || end == v || *end || n < SWIW_LOG_NONE ||
	    n > SWIW_LOG_DEBUG)
		return -1;
	return (int)n;
}

static int parse_port(const char *v)
{
	char *end;
	long n;

	if (!isdigit((unsigned char)*v))
		return -1;
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || *end || n < 1 || n > 65535)
		return -1;
	return (int)n;
}

/*
 * A duration: seconds with an optional fraction ("10", "2.5", "10s") or
 * milliseconds ("500ms"), from 1 ms to one hour. Parsed by hand: strtod()
 * would follow the program's locale and refuse "2.5" under a comma one.
 */
static long parse_duration_ms(const char *v)
{
	unsigned long long num = 0, den = 1, mult = 1000;
	const char *p = v;

	if (!isdigit((unsigned char)*p))
		return -1;
	while (isdigit((unsigned char)*p)) {
		num = num * 10 + (unsigned long long)(*p++ - '0');
		if (num > 3600000)
			return -1;
	}
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -1;
		for (; isdigit((unsigned char)*p); p++) {
			if (den <
			    1000000) { /* finer than a microsecond: moot */
				num = num * 10 + (unsigned long long)(*p - '0');
				den *= 10;
			}
		}
	}
	if (!strcmp(p, "ms"))
		mult = 1;
	else if (*p && strcmp(p, "s"))
		return -1;
	num = num * mult / den;
	if (num < 1 || num > 3600000)
		return -1;
	return (long)num;
}

/* The names of enum swiw_engine_cfg, swiw_progress and swiw_clock_cfg. */
static const char *const engine_names[] = { "auto", "inprocess", "kernel",
					    "ring" };
static const char *const progress_names[] = { "poll", "thread" };
static const char *const clock_names[] = { "auto", "system", "tsc" };
_Static_assert(sizeof(engine_names) / sizeof(engine_names[0]) ==
		       SWIW_ENGINE_CFG_RING + 1,
	       "a name for each engine");
_Static_assert(sizeof(progress_names) / sizeof(progress_names[0]) ==
		       SWIW_PROGRESS_THREAD + 1,
	       "a name for each progress mode");
_Static_assert(sizeof(clock_names) / sizeof(clock_names[0]) ==
		       SWIW_CLOCK_CFG_TSC + 1,
	       "a name for each clock");

int swiw_config_set(struct swiw_config *cfg, const char *key, const char *value)
{
	int choice;

	if (!strcmp(key, "interfaces")) {
		size_t len = strlen(value);

		if (!len || len >= sizeof(cfg->interfaces))
			return -1;
		memcpy(cfg->interfaces, value, len + 1);
		return 0;
	}
	if (!strcmp(key, "log_level")) {
		int lvl = parse_log_level(value);

		if (lvl < 0)
			return -1;
		cfg->log_level = lvl;
		return 0;
	}
	if (!strcmp(key, "broker_port")) {
		int port = parse_port(value);

		if (port < 0)
			return -1;
		cfg->broker_port = (unsigned int)port;
		return 0;
	}
	if (!strcmp(key, "engine")) {
		choice = PARSE_CHOICE(value, engine_names);
		if (choice < 0)
			return -1;
		cfg->engine = choice;
		return 0;
	}
	if (!strcmp(key, "mpa_crc") || !strcmp(key, "mpa_markers")) {
		int on = parse_bool(value);

		if (on < 0)
			return -1;
		if (key[4] == 'c')
			cfg->mpa_crc = on;
		else
			cfg->mpa_markers = on;
		return 0;
	}
	if (!strcmp(key, "mpa_rev")) {
		if (strcmp(value, "1") && strcmp(value, "2"))
			return -1;
		cfg->mpa_rev = (unsigned int)(value[0] - '0');
		return 0;
	}
	if (!strcmp(key, "mpa_p2p")) {
		int on = parse_bool(value);

		if (!strcmp(value, "required"))
			cfg->mpa_p2p = SWIW_MPA_P2P_CFG_REQUIRED;
		else if (on < 0)
			return -1;
		else
			cfg->mpa_p2p = on ? SWIW_MPA_P2P_CFG_ON :
					    SWIW_MPA_P2P_CFG_OFF;
		return 0;
	}
	if (!strcmp(key, "mpa_rtr"))
		return parse_rtr(cfg, value);
	if (!strcmp(key, "progress")) {
		choice = PARSE_CHOICE(value, progress_names);
		if (choice < 0)
			return -1;
		cfg->progress = choice;
		return 0;
	}
	if (!strcmp(key, "clock")) {
		choice = PARSE_CHOICE(value, clock_names);
		if (choice < 0)
			return -1;
		cfg->clock = choice;
		return 0;
	}
	if (!strcmp(key, "connect_timeout")) {
		long ms = parse_duration_ms(value);

		if (ms < 0)
			return -1;
		cfg->connect_timeout_ms = (unsigned int)ms;
		return 0;
	}
	return -1;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

int swiw_config_parse(struct swiw_config *cfg, const char *text,
		      const char *origin, void (*warn)(const char *msg))
{
	char line[1024], msg[1200];
	const char *p = text;
	int lineno = 0, bad = 0;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char *s, *eq, *hash;
		const char *why = NULL;

		lineno++;
		if (len >= sizeof(line)) {
			why = "line too long";
		} else {
			memcpy(line, p, len);
			line[len] = '\0';
			hash = strchr(line, '#');
			if (hash)
				*hash = '\0';
			s = trim(line);
			if (*s) {
				eq = strchr(s, '=');
				if (!eq) {
					why = "expected key = value";
				} else {
					*eq = '\0';
					if (swiw_config_set(cfg, trim(s),
							    trim(eq + 1)))
						why = "unknown key or bad value";
				}
			}
		}
		if (why) {
			bad++;
			if (warn) {
				snprintf(msg, sizeof(msg), "%s:%d: %s, ignored",
					 origin, lineno, why);
				warn(msg);
			}
		}
		p += len;
		if (*p == '\n')
			p++;
	}
	return bad;
}

bool swiw_config_iface_match(const char *patterns, const char *ifname)
{
	char buf[SWIW_CONFIG_PATTERNS_MAX];
	bool have_include = false, included = false;
	char *tok, *save;

	snprintf(buf, sizeof(buf), "%s", patterns);
	for (tok = strtok_r(buf, " \t,", &save); tok;
	     tok = strtok_r(NULL, " \t,", &save)) {
		if (tok[0] == '!') {
			if (!fnmatch(tok + 1, ifname, 0))
				return false;
			continue;
		}
		have_include = true;
		if (!fnmatch(tok, ifname, 0))
			included = true;
	}
	return have_include ? included : true;
}

static struct swiw_config the_config;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

static void config_warn(const char *msg)
{
	/* The log level is not known yet: configuration errors always show. */
	fprintf(stderr, "swiw: %s\n", msg);
}

static void config_load_file(struct swiw_config *cfg, const char *path,
			     bool must_exist)
{
	static char text[65536];
	FILE *f = fopen(path, "re");
	size_t len;

	if (!f) {
		if (must_exist || errno != ENOENT)
			fprintf(stderr, "swiw: cannot read %s: %s\n", path,
				strerror(errno));
		return;
	}
	len = fread(text, 1, sizeof(text), f);
	if (ferror(f)) {
		fprintf(stderr, "swiw: cannot read %s: %s\n", path,
			strerror(errno));
		fclose(f);
		return;
	}
	fclose(f);
	if (len == sizeof(text)) {
		fprintf(stderr, "swiw: %s is larger than %zu bytes, ignored\n",
			path, sizeof(text) - 1);
		return;
	}
	text[len] = '\0';
	swiw_config_parse(cfg, text, path, config_warn);
}

static void config_env(struct swiw_config *cfg, const char *var,
		       const char *key)
{
	const char *v = secure_getenv(var);

	if (v && swiw_config_set(cfg, key, v))
		fprintf(stderr, "swiw: %s=\"%s\" is not valid, ignored\n", var,
			v);
}

/*
 * The environment overrides the file, except in a program that runs with
 * more privilege than its caller (setuid, file capabilities: AT_SECURE),
 * where secure_getenv() reads nothing: the caller must not choose its
 * configuration file, engine or broker port.
 */
static void config_load(void)
{
	const char *path = secure_getenv("SWIW_CONFIG");

	swiw_config_defaults(&the_config);
	if (path && *path)
		config_load_file(&the_config, path, true);
	else
		config_load_file(&the_config, SWIW_CONFIG_FILE, false);
	config_env(&the_config, "SWIW_INTERFACES", "interfaces");
	config_env(&the_config, "SWIW_LOG_LEVEL", "log_level");
	config_env(&the_config, "SWIW_BROKER_PORT", "broker_port");
	config_env(&the_config, "SWIW_CONNECT_TIMEOUT", "connect_timeout");
	config_env(&the_config, "SWIW_PROGRESS", "progress");
	config_env(&the_config, "SWIW_ENGINE", "engine");
	config_env(&the_config, "SWIW_CLOCK", "clock");
	config_env(&the_config, "SWIW_MPA_CRC", "mpa_crc");
	config_env(&the_config, "SWIW_MPA_MARKERS", "mpa_markers");
	config_env(&the_config, "SWIW_MPA_REV", "mpa_rev");
	config_env(&the_config, "SWIW_MPA_P2P", "mpa_p2p");
	config_env(&the_config, "SWIW_MPA_RTR", "mpa_rtr");
	__atomic_store_n(&swiw_log_max, the_config.log_level, __ATOMIC_RELAXED);
}

const struct swiw_config *swiw_config(void)
{
	pthread_once(&config_once, config_load);
	return &the_config;
}
