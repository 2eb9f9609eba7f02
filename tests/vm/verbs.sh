#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm.verbs.kernel, the guest side: the verbs C suites (tests/verbs) with
# engine = kernel, so every QP's data moves through swiw.ko (run.sh
# --module): test_data (poll and thread progress), test_ex, test_robust,
# test_rogue (a misbehaving peer against the helper's lower half) and
# each test_procs case, as the host runs them on the other engines.
# The provider must really have chosen the helper (fw_ver), and the module
# must unload clean afterwards.
. "$(dirname "$0")/guest_lib.sh"

need_swiw
export SWIW_ENGINE=kernel
unset SWIW_PROGRESS
BIN=$SWIW_BUILD/bin
# TCG is slow: a suite gets what its host timeout is, several times over.
T_LIMIT=600

t_setup() {
	lab_lo_up
	lab_swiw_load
	for t in test_data test_ex test_robust test_rogue test_procs; do
		[ -x "$BIN/$t" ] || fail "$BIN/$t is missing: build swiw first"
	done
}

# A cmocka suite: every test must pass, none skipped.
t_suite() {
	local out rc

	out=$(bounded env "$@" 2>&1)
	rc=$?
	echo "$out"
	[ "$rc" -eq 0 ] || fail "$* exited $rc"
	! grep -q '^\[  SKIPPED \]' <<<"$out" || fail "$*: tests were skipped"
	grep -Eq '^\[  PASSED  \] [1-9][0-9]* test' <<<"$out" ||
		fail "$*: no test passed"
}

note "guest $(uname -r), $(nproc) CPUs, engine kernel"
lab_test setup t_setup || lab_summary || exit 1
lab_test engine lab_swiw_engine "kernel helper"
lab_test verbs.data t_suite "$SWIW_RUN" "$BIN/test_data"
lab_test verbs.data_thread t_suite SWIW_PROGRESS=thread "$SWIW_RUN" "$BIN/test_data"
lab_test verbs.ex t_suite "$SWIW_RUN" "$BIN/test_ex"
lab_test verbs.robust t_suite "$SWIW_RUN" "$BIN/test_robust"
lab_test verbs.rogue t_suite "$SWIW_RUN" "$BIN/test_rogue"
for t in write_read_paused peer_sigkill peer_sigkill_sender hundred_qps; do
	lab_test "verbs.procs.$t" t_suite "$SWIW_RUN" "$BIN/test_procs" "test_$t"
done
lab_test unload lab_swiw_unload
lab_test dmesg lab_dmesg_clean
lab_summary
