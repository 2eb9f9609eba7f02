# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# cma_api.c under swiw-run: librdmacm's API where the tools do not look
# (private data limits, reject, no listener, IRD/ORD, disconnect and
# flushes, a non-blocking channel, destroy with unacked events, EADDRINUSE,
# UNREACHABLE, CONNECT_ERROR, a read of a destroyed channel, stray ids,
# a Send posted as rdma_accept returns, a listener facing a partial
# Request, a full backlog and EMFILE, 300 listening ids).
. "$(dirname "$0")/../lib/swiw_test.sh"
need_swiw

[ -x "${CMA_API:-}" ] || fail "CMA_API (the cma_api program) is not set"
T_LIMIT=120
PORT=$((10000 + RANDOM % 20000))
swiw_run "$CMA_API" "$PORT"
[ "$RC" -eq 0 ] || fail_last "cma_api failed"
printf '%s\n' "$OUT"
assert_count "$OUT" '^ok - ' 14 "cma_api"
