# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# swiw on a kernel older than the build's: the stock programs with the
# system calls a distribution's older kernels lack (epoll_pwait2, Linux
# 5.11: RHEL 8's 4.18, Ubuntu 20.04's 5.4) failing with ENOSYS, as those
# kernels (and valgrind) answer, through tests/e2e/enosys.c's seccomp
# filter. Each run needs the progress thread, which must then fall back:
# a program blocked on its completion channel (ibv_rc_pingpong -e), and
# the target of ib_write_lat, which spins on its memory while the thread
# places the Writes. Without the fallback both wait for ever.
. "$(dirname "$0")/../lib/swiw_test.sh"
need_swiw

need_cmd ibv_rc_pingpong ib_write_lat ss
ENOSYS=$SWIW_BUILD/bin/enosys
[ -x "$ENOSYS" ] || fail "$ENOSYS is missing; build swiw first"
OLD=("$ENOSYS" epoll_pwait2)

# The filter holds: the call fails in a program run under it.
run "${OLD[@]}" python3 -c 'import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(441, -1, None, 0, None, None, 0)
print(r, os.strerror(ctypes.get_errno()))'
assert_ok
out_has "^-1 Function not implemented$" "epoll_pwait2 fails with ENOSYS"
pass "enosys: epoll_pwait2 answers ENOSYS"

port=$((10000 + RANDOM % 20000))
serve "" "$port" "${OLD[@]}" "${SWIW[@]}" ibv_rc_pingpong -g 0 -d swiw_lo \
	-p "$port" -e -n 200 ||
	fail_served "ibv_rc_pingpong -e server did not listen on $port"
SWIW_LOG_LEVEL=info run "${OLD[@]}" "${SWIW[@]}" ibv_rc_pingpong -g 0 \
	-d swiw_lo -p "$port" -e -n 200 127.0.0.1
served
[ "$RC" -eq 0 ] && [ "$SRV_RC" -eq 0 ] ||
	fail_served "ibv_rc_pingpong -e: client exit $RC, server exit $SRV_RC"
out_has "^200 iters in [0-9.]+ seconds" "the client's latency line"
err_has "no epoll_pwait2 in this kernel" "the engine said it fell back"
pass "ibv_rc_pingpong -e without epoll_pwait2: $(printf '%s\n' "$OUT" | grep iters)"

# perftest through perftest_lib.sh's pair (its leaks, its clock fit),
# under the filter too.
. "$(dirname "$0")/perftest_lib.sh"
SWIW=("${OLD[@]}" "${SWIW[@]}")
pair ib_write_lat "$LAT" -x 0 -F -s 64 -n 500
pass "ib_write_lat without epoll_pwait2: $(printf '%s\n' "$OUT" | grep -E '^ *64 +500 ')"
