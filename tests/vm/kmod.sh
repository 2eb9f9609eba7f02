#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm.kmod, the guest side: the kernel helper swiw.ko (built by kernel.build,
# added with run.sh --module) loads, its ioctl and mmap test passes as root
# and as an unprivileged user (RLIMIT_MEMLOCK applies then), the module's
# reference count is back where it started, it unloads, and the kernel
# logs no BUG, WARNING or Oops.
. "$(dirname "$0")/guest_lib.sh"

TEST=${SWIW_BUILD:?SWIW_BUILD is not set (the swiw build directory)}/bin/swiw_kmod_test
[ -x "$TEST" ] || lab_fail "$TEST is missing: build swiw first"

t_load() {
	lab_lo_up # the test's ATTACH checks use a loopback TCP pair
	lab_modprobe swiw
	[ -c /dev/swiw ] || lab_fail "no /dev/swiw"
	[ "$(cat /sys/module/swiw/refcnt)" -eq 0 ] || lab_fail "refcnt not 0"
}

t_root() {
	"$TEST" || lab_fail "swiw_kmod_test as root"
}

t_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups "$TEST" ||
		lab_fail "swiw_kmod_test as nobody"
}

# With the skeleton loaded, the provider finds /dev/swiw, sees it has no
# data path, and runs in-process; engine = kernel refuses to open.
t_provider() {
	local run=$SWIW_BUILD/bin/swiw-run out

	out=$(SWIW_CONFIG=/dev/null SWIW_LOG_LEVEL=info "$run" ibv_devinfo -v \
		-d swiw_lo 2>&1) || lab_fail "ibv_devinfo: $out"
	grep -q 'has no data path (the skeleton helper)' <<<"$out" ||
		lab_fail "no reason logged: $out"
	grep -Eq 'fw_ver:[[:space:]]+swiw [0-9.]+ in-process' <<<"$out" ||
		lab_fail "fw_ver does not say in-process: $out"
	if out=$(SWIW_CONFIG=/dev/null SWIW_ENGINE=kernel "$run" ibv_devinfo \
		-d swiw_lo 2>&1); then
		lab_fail "engine = kernel opened a device: $out"
	fi
	grep -q 'engine = kernel, but the kernel helper cannot be used' <<<"$out" ||
		lab_fail "engine = kernel: no reason: $out"
}

t_unload() {
	local refs

	refs=$(cat /sys/module/swiw/refcnt)
	[ "$refs" -eq 0 ] || lab_fail "refcnt $refs after the tests"
	rmmod swiw || lab_fail "rmmod swiw"
	[ ! -e /dev/swiw ] || lab_fail "/dev/swiw left behind"
}

lab_note "guest $(uname -r), swiw.ko from the lab's module tree"
lab_test kmod.load t_load
lab_test kmod.ioctl.root t_root
lab_test kmod.ioctl.nobody t_nobody
lab_test kmod.provider t_provider
lab_test kmod.unload t_unload
lab_test dmesg lab_dmesg_clean
lab_summary
