#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm.kdp, the guest side: the kernel helper's data path. swiw_kdp_test
# attaches both ends of loopback TCP pairs to swiw.ko and runs SEND, WRITE,
# READ and atomics through it (CRC, markers), against a stopped and a
# killed owner and under RLIMIT_MEMLOCK; then the module's reference count
# is back to 0, it unloads, and the kernel logs no BUG, WARNING or Oops.
. "$(dirname "$0")/guest_lib.sh"

TEST=${SWIW_BUILD:?SWIW_BUILD is not set (the swiw build directory)}/bin/swiw_kdp_test
[ -x "$TEST" ] || fail "$TEST is missing: build swiw first"

t_load() {
	lab_lo_up
	lab_swiw_load
}

t_datapath() {
	T_LIMIT=240 bounded "$TEST" || fail "swiw_kdp_test"
}


note "guest $(uname -r), swiw.ko from the lab's module tree"
lab_test kdp.load t_load
lab_test kdp.datapath t_datapath
lab_test kdp.unload lab_swiw_unload
lab_test dmesg lab_dmesg_clean
lab_summary
