// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* swiw configuration: file syntax, keys, interface selection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "swiw_config.h"
#include "swiw_log.h"

static int warnings;
static char last_warning[256];

static void record_warning(const char *msg)
{
	warnings++;
	snprintf(last_warning, sizeof(last_warning), "%s", msg);
}

static void test_defaults(void **state)
{
	struct swiw_config cfg;

	(void)state;
	swiw_config_defaults(&cfg);
	assert_string_equal(cfg.interfaces, "*");
	assert_int_equal(cfg.log_level, SWIW_LOG_WARN);
	assert_int_equal(cfg.broker_port, 7949);
	assert_int_equal(cfg.connect_timeout_ms, 10000);
	assert_int_equal(cfg.progress, SWIW_PROGRESS_POLL);
	assert_int_equal(cfg.engine, SWIW_ENGINE_CFG_AUTO);
}

static void test_parse_keys(void **state)
{
	struct swiw_config cfg;
	int bad;

	(void)state;
	swiw_config_defaults(&cfg);
	warnings = 0;
	bad = swiw_config_parse(&cfg,
				"# comment\n"
				"\n"
				"  interfaces =  lo, eth*  # trailing comment\n"
				"log_level=debug\n",
				"t.conf", record_warning);
	assert_int_equal(bad, 0);
	assert_int_equal(warnings, 0);
	assert_string_equal(cfg.interfaces, "lo, eth*");
	assert_int_equal(cfg.log_level, SWIW_LOG_DEBUG);

	/* A number is a level too; the last line without newline counts. */
	bad = swiw_config_parse(&cfg, "log_level = 1", "t.conf",
				record_warning);
	assert_int_equal(bad, 0);
	assert_int_equal(cfg.log_level, SWIW_LOG_ERR);
}

static void test_parse_errors(void **state)
{
	struct swiw_config cfg;
	char longline[1500];
	int bad;

	(void)state;
	swiw_config_defaults(&cfg);
	warnings = 0;
	bad = swiw_config_parse(&cfg,
				"interfaces = lo\n"
				"no equals sign here\n"
				"colour = blue\n"
				"log_level = loud\n"
				"log_level = 9\n"
				"interfaces =\n",
				"t.conf", record_warning);
	assert_int_equal(bad, 5);
	assert_int_equal(warnings, 5);
	assert_string_equal(last_warning,
			    "t.conf:6: unknown key or bad value, ignored");
	/* Good lines still apply, bad ones change nothing. */
	assert_string_equal(cfg.interfaces, "lo");
	assert_int_equal(cfg.log_level, SWIW_LOG_WARN);

	memset(longline, 'x', sizeof(longline) - 1);
	longline[sizeof(longline) - 1] = '\0';
	bad = swiw_config_parse(&cfg, longline, "t.conf", NULL);
	assert_int_equal(bad, 1);
}

static void test_set(void **state)
{
	struct swiw_config cfg;
	char big[SWIW_CONFIG_PATTERNS_MAX + 10];

	(void)state;
	swiw_config_defaults(&cfg);
	assert_int_equal(swiw_config_set(&cfg, "interfaces", "veth*"), 0);
	assert_int_equal(swiw_config_set(&cfg, "log_level", "none"), 0);
	assert_int_equal(cfg.log_level, SWIW_LOG_NONE);
	assert_int_equal(swiw_config_set(&cfg, "nope", "1"), -1);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(swiw_config_set(&cfg, "interfaces", big), -1);
	assert_string_equal(cfg.interfaces, "veth*");
}

static void test_broker_keys(void **state)
{
	static const struct {
		const char *v;
		unsigned int ms;
	} good[] = {
		{ "10", 10000 },    { "2.5", 2500 },	   { "0.25s", 250 },
		{ "500ms", 500 },   { "1ms", 1 },	   { "3600", 3600000 },
		{ "1.5ms", 1 },	    { "0.0015", 1 },	   { "7s", 7000 },
		{ "00012", 12000 }, { "1.0000001", 1000 },
	};
	static const char *const bad[] = {
		"",	     "0",    "0ms", "0.0001", "-1",
		"1e3",	     "10 s", "1.",  ".5",     "3601",
		"3600001ms", "ten",  "5m",  "1,5",    "99999999999999999999",
	};
	struct swiw_config cfg;
	size_t i;

	(void)state;
	swiw_config_defaults(&cfg);
	assert_int_equal(swiw_config_set(&cfg, "broker_port", "18516"), 0);
	assert_int_equal(cfg.broker_port, 18516);
	assert_int_equal(swiw_config_set(&cfg, "broker_port", "65535"), 0);
	assert_int_equal(swiw_config_set(&cfg, "broker_port", "1"), 0);
	assert_int_equal(cfg.broker_port, 1);
	assert_int_equal(swiw_config_set(&cfg, "broker_port", "0"), -1);
	assert_int_equal(swiw_config_set(&cfg, "broker_port", "65536"), -1);
	assert_int_equal(swiw_config_set(&cfg, "broker_port", "-5"), -1);
	assert_int_equal(swiw_config_set(&cfg, "broker_port", "80x"), -1);
	assert_int_equal(swiw_config_set(&cfg, "broker_port", ""), -1);
	assert_int_equal(cfg.broker_port, 1);

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cfg.connect_timeout_ms = 0;
		assert_int_equal(
			swiw_config_set(&cfg, "connect_timeout", good[i].v), 0);
		assert_int_equal(cfg.connect_timeout_ms, good[i].ms);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cfg.connect_timeout_ms = 42;
		assert_int_equal(
			swiw_config_set(&cfg, "connect_timeout", bad[i]), -1);
		assert_int_equal(cfg.connect_timeout_ms, 42);
	}

	/* In a file, as a user writes them. */
	swiw_config_defaults(&cfg);
	assert_int_equal(
		swiw_config_parse(&cfg,
				  "broker_port = 9000\n"
				  "connect_timeout = 30 # a slow peer\n"
				  "progress = thread\n",
				  "t.conf", NULL),
		0);
	assert_int_equal(cfg.broker_port, 9000);
	assert_int_equal(cfg.connect_timeout_ms, 30000);
	assert_int_equal(cfg.progress, SWIW_PROGRESS_THREAD);
	assert_int_equal(swiw_config_set(&cfg, "progress", "poll"), 0);
	assert_int_equal(cfg.progress, SWIW_PROGRESS_POLL);
	assert_int_equal(swiw_config_set(&cfg, "progress", "busy"), -1);
	assert_int_equal(cfg.progress, SWIW_PROGRESS_POLL);
	assert_int_equal(swiw_config_set(&cfg, "engine", "kernel"), 0);
	assert_int_equal(cfg.engine, SWIW_ENGINE_CFG_KERNEL);
	assert_int_equal(swiw_config_set(&cfg, "engine", "ring"), 0);
	assert_int_equal(cfg.engine, SWIW_ENGINE_CFG_RING);
	assert_int_equal(swiw_config_set(&cfg, "engine", "inprocess"), 0);
	assert_int_equal(cfg.engine, SWIW_ENGINE_CFG_INPROCESS);
	assert_int_equal(swiw_config_set(&cfg, "engine", "auto"), 0);
	assert_int_equal(cfg.engine, SWIW_ENGINE_CFG_AUTO);
	assert_int_equal(swiw_config_set(&cfg, "engine", "gpu"), -1);
	assert_int_equal(cfg.engine, SWIW_ENGINE_CFG_AUTO);
	assert_int_equal(cfg.clock, SWIW_CLOCK_CFG_AUTO);
	assert_int_equal(swiw_config_set(&cfg, "clock", "tsc"), 0);
	assert_int_equal(cfg.clock, SWIW_CLOCK_CFG_TSC);
	assert_int_equal(swiw_config_set(&cfg, "clock", "system"), 0);
	assert_int_equal(cfg.clock, SWIW_CLOCK_CFG_SYSTEM);
	assert_int_equal(swiw_config_set(&cfg, "clock", "hpet"), -1);
	assert_int_equal(cfg.clock, SWIW_CLOCK_CFG_SYSTEM);
	assert_int_equal(swiw_config_set(&cfg, "clock", "auto"), 0);
	assert_int_equal(cfg.clock, SWIW_CLOCK_CFG_AUTO);

	/* MPA: what this side asks for. */
	assert_false(cfg.mpa_crc);
	assert_false(cfg.mpa_markers);
	assert_int_equal(cfg.mpa_rev, 2);
	assert_int_equal(swiw_config_set(&cfg, "mpa_crc", "yes"), 0);
	assert_true(cfg.mpa_crc);
	assert_int_equal(swiw_config_set(&cfg, "mpa_crc", "Off"), 0);
	assert_false(cfg.mpa_crc);
	assert_int_equal(swiw_config_set(&cfg, "mpa_markers", "1"), 0);
	assert_true(cfg.mpa_markers);
	assert_int_equal(swiw_config_set(&cfg, "mpa_markers", "maybe"), -1);
	assert_true(cfg.mpa_markers);
	assert_int_equal(swiw_config_set(&cfg, "mpa_rev", "1"), 0);
	assert_int_equal(cfg.mpa_rev, 1);
	assert_int_equal(swiw_config_set(&cfg, "mpa_rev", "0"), -1);
	assert_int_equal(swiw_config_set(&cfg, "mpa_rev", "12"), -1);
	assert_int_equal(cfg.mpa_rev, 1);

	/* Peer-to-peer and the RTR types, in order of preference. */
	assert_int_equal(cfg.mpa_p2p, SWIW_MPA_P2P_CFG_ON);
	assert_int_equal(cfg.mpa_rtr[0], 0);
	assert_int_equal(swiw_config_set(&cfg, "mpa_p2p", "no"), 0);
	assert_int_equal(cfg.mpa_p2p, SWIW_MPA_P2P_CFG_OFF);
	assert_int_equal(swiw_config_set(&cfg, "mpa_p2p", "required"), 0);
	assert_int_equal(cfg.mpa_p2p, SWIW_MPA_P2P_CFG_REQUIRED);
	assert_int_equal(swiw_config_set(&cfg, "mpa_p2p", "yes"), 0);
	assert_int_equal(cfg.mpa_p2p, SWIW_MPA_P2P_CFG_ON);
	assert_int_equal(swiw_config_set(&cfg, "mpa_p2p", "often"), -1);
	assert_int_equal(cfg.mpa_p2p, SWIW_MPA_P2P_CFG_ON);
	assert_int_equal(swiw_config_set(&cfg, "mpa_rtr", "read"), 0);
	assert_int_equal(cfg.mpa_rtr[0], SWIW_CONFIG_RTR_READ);
	assert_int_equal(cfg.mpa_rtr[1], 0);
	assert_int_equal(swiw_config_set(&cfg, "mpa_rtr", "read, send write"),
			 0);
	assert_int_equal(cfg.mpa_rtr[0], SWIW_CONFIG_RTR_READ);
	assert_int_equal(cfg.mpa_rtr[1], SWIW_CONFIG_RTR_SEND);
	assert_int_equal(cfg.mpa_rtr[2], SWIW_CONFIG_RTR_WRITE);
	/* Unknown, repeated or no type: refused, the list stands. */
	assert_int_equal(swiw_config_set(&cfg, "mpa_rtr", "write,atomic"), -1);
	assert_int_equal(swiw_config_set(&cfg, "mpa_rtr", "write,write"), -1);
	assert_int_equal(swiw_config_set(&cfg, "mpa_rtr", " , "), -1);
	assert_int_equal(swiw_config_set(&cfg, "mpa_rtr", "writeread"), -1);
	assert_int_equal(cfg.mpa_rtr[0], SWIW_CONFIG_RTR_READ);
	assert_int_equal(cfg.mpa_rtr[2], SWIW_CONFIG_RTR_WRITE);
	assert_int_equal(swiw_config_set(&cfg, "mpa_rtr", "default"), 0);
	assert_int_equal(cfg.mpa_rtr[0], 0);
}

static void test_iface_match(void **state)
{
	(void)state;
	assert_true(swiw_config_iface_match("*", "lo"));
	assert_true(swiw_config_iface_match("lo", "lo"));
	assert_false(swiw_config_iface_match("lo", "eth0"));
	assert_true(swiw_config_iface_match("lo eth*", "eth0"));
	assert_true(swiw_config_iface_match("lo,eth*", "eth12"));
	assert_false(swiw_config_iface_match("lo,eth*", "veth0"));
	/* Exclusions alone: everything else is in. */
	assert_false(swiw_config_iface_match("!lo", "lo"));
	assert_true(swiw_config_iface_match("!lo", "dummy0"));
	/* An exclusion beats an inclusion, in any order. */
	assert_false(swiw_config_iface_match("!docker* *", "docker0"));
	assert_false(swiw_config_iface_match("* !docker*", "docker0"));
	assert_true(swiw_config_iface_match("* !docker*", "eth0"));
	assert_true(swiw_config_iface_match("veth[0-9]", "veth3"));
	assert_false(swiw_config_iface_match("veth[0-9]", "veth10"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_parse_keys),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_set),
		cmocka_unit_test(test_broker_keys),
		cmocka_unit_test(test_iface_match),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
