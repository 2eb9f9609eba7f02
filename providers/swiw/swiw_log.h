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
#define swiw_dbg(...) swiw_log(SWIW_LOG_DEBUG, __VA_ARGS__)

#endif /* SWIW_LOG_H */
