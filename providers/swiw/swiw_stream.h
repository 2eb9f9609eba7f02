/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The in-process engine's streams: one connected TCP socket per QP, MPA
 * setup, then FPDUs both ways. Private to swiw_engine.c and
 * swiw_stream.c; everything here runs under the engine lock.
 */
#ifndef SWIW_STREAM_H
#define SWIW_STREAM_H

#include "swiw.h"

struct swiw_stream;

void swiw_eng_lock(void);
void swiw_eng_unlock(void);
void swiw_eng_assert_held(void);
int swiw_eng_start(void);
int swiw_eng_epoll_ctl(int op, int fd, uint32_t events, void *ptr);
void swiw_eng_doorbell(void);

/* swiw_stream.c */
void swiw_stream_event(struct swiw_stream *s, uint32_t events);
bool swiw_stream_pump(struct swiw_stream *s);
bool swiw_streams_pump_all(void);
void swiw_streams_reap(void);
int swiw_streams_timers(void);
void swiw_stream_qp_error(struct swiw_qp *qp);
void swiw_stream_detach(struct swiw_qp *qp);

/* swiw_connect.c, from the engine loop */
bool swiw_conn_is_broker(const void *ptr);
void swiw_conn_broker_event(void *ptr);
void swiw_conn_run(void);
int swiw_conn_timeout_ms(void);
bool swiw_conn_redial(struct swiw_qp *qp, int err);

#endif /* SWIW_STREAM_H */
