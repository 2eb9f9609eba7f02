#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm.boot, the guest side (run.sh runs it in the VM): the lab boots Debian's
# 6.1 kernel with the host root read-only, loads modules from its depmod'ed
# tree, and the host's swiw build carries real traffic in it - ibv_devinfo
# and ibv_rc_pingpong between two processes over swiw_lo - and the kernel
# logs no BUG, WARNING or Oops meanwhile.
. "$(dirname "$0")/guest_lib.sh"

SWIW_RUN=${SWIW_BUILD:?SWIW_BUILD is not set (the swiw build directory)}/bin/swiw-run
[ -x "$SWIW_RUN" ] || lab_fail "$SWIW_RUN is missing: build swiw first"
export SWIW_CONFIG=/dev/null
unset SWIW_INTERFACES SWIW_LOG_LEVEL SWIW_PROVIDER

t_kernel() {
	uname -r | grep -Eq '^6\.1\.0-[0-9]+-amd64$' || lab_fail "kernel $(uname -r)"
	grep -Eq '^hostroot / 9p ro[ ,]' /proc/mounts || lab_fail "/ is not the read-only 9p root"
	touch /tmp/out/probe && rm /tmp/out/probe || lab_fail "labout share not writable"
	touch /tmp/probe || lab_fail "/tmp not writable"
	! touch /etc/swiw-probe 2>/dev/null || lab_fail "/etc is writable"
}

t_modules() {
	lab_lo_up
	lab_dummy dummy0 10.9.0.1/24
	ip -4 addr show dev dummy0 | grep -q '10\.9\.0\.1/24' || lab_fail "dummy0 has no address"
	modinfo -n dummy | grep -q "^/lib/modules/$(uname -r)/" || lab_fail "modinfo -n dummy"
}

t_devinfo() {
	local out

	out=$(lab_run "$SWIW_RUN" ibv_devinfo -d swiw_lo 2>&1) || lab_fail "ibv_devinfo: $out"
	echo "$out"
	grep -q 'hca_id:[[:space:]]*swiw_lo' <<<"$out" || lab_fail "no hca_id swiw_lo"
	grep -q 'transport:[[:space:]]*iWARP' <<<"$out" || lab_fail "transport is not iWARP"
	grep -q 'state:[[:space:]]*PORT_ACTIVE' <<<"$out" || lab_fail "port is not active"
}

# up PID PORT: the server listens, or is gone.
up() {
	lab_listening "$2" || ! kill -0 "$1" 2>/dev/null
}

# pingpong ARGS...: unmodified ibv_rc_pingpong, server and client in two
# processes under swiw-run, QPs connected through the broker.
pingpong() {
	local port=$((10000 + RANDOM % 20000)) pid srv=0 cli=0

	lab_run "$SWIW_RUN" ibv_rc_pingpong -g 0 -d swiw_lo -p "$port" "$@" \
		>"$LAB_TMP/srv.out" 2>&1 &
	pid=$!
	lab_wait 30 "server listening on $port" up "$pid" "$port"
	if ! lab_listening "$port"; then
		kill "$pid" 2>/dev/null
		cat "$LAB_TMP/srv.out"
		lab_fail "ibv_rc_pingpong server $* is not listening"
	fi
	lab_run "$SWIW_RUN" ibv_rc_pingpong -g 0 -d swiw_lo -p "$port" "$@" 127.0.0.1 \
		>"$LAB_TMP/cli.out" 2>&1 || cli=$?
	wait "$pid" || srv=$?
	echo "-- server (exit $srv):"
	cat "$LAB_TMP/srv.out"
	echo "-- client (exit $cli):"
	cat "$LAB_TMP/cli.out"
	[ "$srv" -eq 0 ] && [ "$cli" -eq 0 ] || lab_fail "server exit $srv, client exit $cli"
	grep -Eq '^[0-9]+ bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$' "$LAB_TMP/cli.out" ||
		lab_fail "client printed no bandwidth line"
	grep -Eq '^[0-9]+ iters in [0-9.]+ seconds = [0-9.]+ usec/iter$' "$LAB_TMP/srv.out" ||
		lab_fail "server printed no latency line"
	lab_note "ibv_rc_pingpong $*: $(grep Mbit/sec "$LAB_TMP/cli.out")"
}

lab_note "guest $(uname -r), $(nproc) CPUs, swiw build $SWIW_BUILD"
lab_test kernel t_kernel
lab_test modules t_modules
lab_test swiw.devinfo t_devinfo
lab_test swiw.rc_pingpong pingpong -n 200
lab_test swiw.rc_pingpong.events pingpong -n 200 -e -s 65536
lab_test dmesg lab_dmesg_clean
lab_summary
