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
need_swiw
export SWIW_E2E_TCG=1
# A whole e2e script per lab_test: give it the time its ctest entry has.
T_LIMIT=900

t_setup() {
	lab_lo_up
	if [ "${SWIW_ENGINE:-}" = kernel ]; then
		lab_swiw_load
	fi
}

# The engine the provider runs is the one asked for, as fw_ver says.
t_engine() {
	case "${SWIW_ENGINE:-auto}" in
	kernel) lab_swiw_engine 'kernel helper' ;;
	ring) lab_swiw_engine ring ;;
	*) lab_swiw_engine in-process ;;
	esac
}

t_script() {
	bounded bash "$E2E/$1.sh"
}

t_unload() {
	[ "${SWIW_ENGINE:-}" != kernel ] || lab_swiw_unload
}

note "guest $(uname -r), $(nproc) CPUs, engine ${SWIW_ENGINE:-auto}"
lab_test setup t_setup || lab_summary
lab_test engine t_engine
for s in "$@"; do
	case "$s" in
	*=*)
		export "${s?}"
		note "$s"
		;;
	*) lab_test "e2e.$s" t_script "$s" ;;
	esac
done
lab_test unload t_unload
lab_test dmesg lab_dmesg_clean
lab_summary
