#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm.boot, the guest side (run.sh runs it in the VM): the lab boots Debian's
# 6.1 kernel with the host root read-only, loads modules from its depmod'ed
# tree, and the host's swiw build carries real traffic in it - ibv_devinfo
# and ibv_rc_pingpong between two processes over swiw_lo - and the kernel
# logs no BUG, WARNING or Oops meanwhile.
. "$(dirname "$0")/guest_lib.sh"

need_swiw

t_kernel() {
	uname -r | grep -Eq '^6\.1\.0-[0-9]+-amd64$' || fail "kernel $(uname -r)"
	grep -Eq '^hostroot / 9p ro[ ,]' /proc/mounts || fail "/ is not the read-only 9p root"
	touch /tmp/out/probe && rm /tmp/out/probe || fail "labout share not writable"
	touch /tmp/probe || fail "/tmp not writable"
	! touch /etc/swiw-probe 2>/dev/null || fail "/etc is writable"
}

t_modules() {
	lab_lo_up
	lab_dummy dummy0 10.9.0.1/24
	ip -4 addr show dev dummy0 | grep -q '10\.9\.0\.1/24' || fail "dummy0 has no address"
	modinfo -n dummy | grep -q "^/lib/modules/$(uname -r)/" || fail "modinfo -n dummy"
}

t_devinfo() {
	local out

	out=$(bounded "$SWIW_RUN" ibv_devinfo -d swiw_lo 2>&1) || fail "ibv_devinfo: $out"
	echo "$out"
	grep -q 'hca_id:[[:space:]]*swiw_lo' <<<"$out" || fail "no hca_id swiw_lo"
	grep -q 'transport:[[:space:]]*iWARP' <<<"$out" || fail "transport is not iWARP"
	grep -q 'state:[[:space:]]*PORT_ACTIVE' <<<"$out" || fail "port is not active"
}

# pingpong ARGS...: unmodified ibv_rc_pingpong, server and client in two
# processes under swiw-run, QPs connected through the broker.
pingpong() {
	local port=$((10000 + RANDOM % 20000)) cli=0

	serve '' "$port" "$SWIW_RUN" ibv_rc_pingpong -g 0 -d swiw_lo -p "$port" "$@" ||
		fail_served "ibv_rc_pingpong server $* is not listening"
	bounded "$SWIW_RUN" ibv_rc_pingpong -g 0 -d swiw_lo -p "$port" "$@" 127.0.0.1 \
		>"$T_TMP/cli.out" 2>&1 || cli=$?
	served
	echo "-- server (exit $SRV_RC):"
	cat "$T_TMP/srv.out" "$T_TMP/srv.err"
	echo "-- client (exit $cli):"
	cat "$T_TMP/cli.out"
	[ "$SRV_RC" -eq 0 ] && [ "$cli" -eq 0 ] || fail "server exit $SRV_RC, client exit $cli"
	grep -Eq '^[0-9]+ bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$' "$T_TMP/cli.out" ||
		fail "client printed no bandwidth line"
	grep -Eq '^[0-9]+ iters in [0-9.]+ seconds = [0-9.]+ usec/iter$' "$T_TMP/srv.out" ||
		fail "server printed no latency line"
	note "ibv_rc_pingpong $*: $(grep Mbit/sec "$T_TMP/cli.out")"
}

note "guest $(uname -r), $(nproc) CPUs, swiw build $SWIW_BUILD"
lab_test kernel t_kernel
lab_test modules t_modules
lab_test swiw.devinfo t_devinfo
lab_test swiw.rc_pingpong pingpong -n 200
lab_test swiw.rc_pingpong.events pingpong -n 200 -e -s 65536
lab_test dmesg lab_dmesg_clean
lab_summary
