/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef SWIW_LOG_H
#define SWIW_LOG_H

enum swiw_log_level {
	SWIW_LOG_NONE,
	SWIW_LOG_ERR,
	SWIW_LOG_WARN,
	SWIW_LOG_INFO,
	SWIW_LOG_DEBUG,
};

/* Messages go to stderr as "swiw: <text>"; the level is configurable. */
void swiw_log(enum swiw_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define swiw_err(...) swiw_log(SWIW_LOG_ERR, __VA_ARGS__)
#define swiw_warn(...) swiw_log(SWIW_LOG_WARN, __VA_ARGS__)
#define swiw_info(...) swiw_log(SWIW_LOG_INFO, __VA_ARGS__)
/*
 * The configured level once the configuration is loaded, -1 before. Debug
 * lines sit on the data path (one per engine event): with the level below
 * them, they cost a load and a branch, not a call with its arguments.
 */
extern int swiw_log_max;

static inline int swiw_dbg_on(void)
{
	int max = __atomic_load_n(&swiw_log_max, __ATOMIC_RELAXED);

	return __builtin_expect(max >= SWIW_LOG_DEBUG || max < 0, 0);
}

#define swiw_dbg(...)                                          \
	do {                                                   \
		if (swiw_dbg_on())                             \
			swiw_log(SWIW_LOG_DEBUG, __VA_ARGS__); \
	} while (0)

#endif /* SWIW_LOG_H */
