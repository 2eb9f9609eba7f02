#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm.e2e.*, the guest side: the host's end-to-end scripts (tests/e2e, the
# stock ibv_rc_pingpong and perftest programs) run unchanged in the lab's
# guest, on the engine the environment asks for. With SWIW_ENGINE=kernel
# the kernel helper swiw.ko (added with run.sh --module) is loaded first,
# so every QP's data moves through /dev/swiw, and the test checks that
# the provider really chose it.
#
#   e2e.sh [NAME=VALUE | SCRIPT]...   SCRIPT: a name in tests/e2e without
#                                     .sh (rc_pingpong ...); NAME=VALUE is
#                                     exported for the scripts after it
. "$(dirname "$0")/guest_lib.sh"

E2E=$(cd "$(dirname "$0")/../e2e" && pwd)
: "${SWIW_BUILD:?SWIW_BUILD is not set (the swiw build directory)}"
export SWIW_CONFIG=/dev/null SWIW_E2E_TCG=1
unset SWIW_INTERFACES SWIW_LOG_LEVEL
# A whole e2e script per lab_test: give it the time its ctest entry has.
LAB_TIMEOUT=900

t_setup() {
	lab_lo_up
	if [ "${SWIW_ENGINE:-}" = kernel ]; then
		lab_modprobe swiw
		[ -c /dev/swiw ] || lab_fail "no /dev/swiw"
	fi
}

# The engine the provider runs is the one asked for, as fw_ver says.
t_engine() {
	local out want

	case "${SWIW_ENGINE:-auto}" in
	kernel) want='kernel helper' ;;
	ring) want='ring' ;;
	*) want='in-process' ;;
	esac
	out=$(lab_run "$SWIW_BUILD/bin/swiw-run" ibv_devinfo -v -d swiw_lo 2>&1) ||
		lab_fail "ibv_devinfo: $out"
	grep -Eq "fw_ver:[[:space:]]+swiw [0-9.]+ $want" <<<"$out" ||
		lab_fail "fw_ver does not say $want: $(grep fw_ver <<<"$out")"
	lab_note "$(grep -E 'fw_ver' <<<"$out" | sed 's/^[[:space:]]*//')"
}

t_script() {
	lab_run bash "$E2E/$1.sh"
}

t_unload() {
	local refs

	[ "${SWIW_ENGINE:-}" = kernel ] || return 0
	refs=$(cat /sys/module/swiw/refcnt)
	[ "$refs" -eq 0 ] || lab_fail "refcnt $refs after the tests"
	rmmod swiw || lab_fail "rmmod swiw"
}

lab_note "guest $(uname -r), $(nproc) CPUs, engine ${SWIW_ENGINE:-auto}"
lab_test setup t_setup || lab_summary
lab_test engine t_engine
for s in "$@"; do
	case "$s" in
	*=*)
		export "${s?}"
		lab_note "$s"
		;;
	*) lab_test "e2e.$s" t_script "$s" ;;
	esac
done
lab_test unload t_unload
lab_test dmesg lab_dmesg_clean
lab_summary
