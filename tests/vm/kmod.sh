#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm.kmod, the guest side: the kernel helper swiw.ko (built by kernel.build,
# added with run.sh --module) loads, its ioctl, mmap, poll and stream fuzz
# test passes as root and as an unprivileged user (RLIMIT_MEMLOCK applies
# then), the provider still opens its device beside it, the module's
# reference count is back where it started, it unloads, sockets that
# were attached and then made to listen keep working after the unload
# (none of swiw's callbacks is left on them or their children), ring
# memory is charged to the memory cgroup, and the kernel logs no BUG, WARNING or Oops.
. "$(dirname "$0")/guest_lib.sh"

need_swiw
TEST=${SWIW_BUILD:?SWIW_BUILD is not set (the swiw build directory)}/bin/swiw_kmod_test
[ -x "$TEST" ] || fail "$TEST is missing: build swiw first"

t_load() {
	lab_lo_up # the test's ATTACH checks use a loopback TCP pair
	lab_swiw_load
	[ "$(cat /sys/module/swiw/refcnt)" -eq 0 ] || fail "refcnt not 0"
}

t_root() {
	T_LIMIT=240 bounded "$TEST" || fail "swiw_kmod_test as root"
}

t_nobody() {
	T_LIMIT=240 bounded setpriv --reuid=65534 --regid=65534 --clear-groups "$TEST" ||
		fail "swiw_kmod_test as nobody"
}

# With the helper loaded, the provider still opens its device (whichever
# engine it picks: that choice is the provider's to test).
t_provider() {
	local out

	out=$(SWIW_LOG_LEVEL=info "$SWIW_RUN" ibv_devinfo -v \
		-d swiw_lo 2>&1) || fail "ibv_devinfo: $out"
	grep -Eq 'fw_ver:[[:space:]]+swiw [0-9.]+' <<<"$out" ||
		fail "no swiw fw_ver: $out"
	note "$(grep -m1 fw_ver <<<"$out" | tr -s '\t ' ' ')"
}

# Ring pages are charged to the memory cgroup of the process that asks
# for them (a cgroup v2 group of its own, mounted here if need be).
t_memcg() {
	local root=/sys/fs/cgroup cg

	if ! grep -q '^cgroup2 /sys/fs/cgroup ' /proc/mounts; then
		root=$(mktemp -d)
		mount -t cgroup2 none "$root" || fail "mount cgroup2"
	fi
	grep -qw memory "$root/cgroup.controllers" || fail "no memory controller"
	echo +memory >"$root/cgroup.subtree_control" || fail "enable memory"
	cg=$root/swiw-kmod
	mkdir -p "$cg"
	T_LIMIT=60 bounded sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" --memcg "$1"' \
		sh "$cg" "$TEST" || fail "rings and the memory cgroup"
	rmdir "$cg"
}

# A socket attached, disconnected by the process and made to listen; the
# module unloads while it and a child it accepted live on; both then take
# data. A callback of swiw's left on them would call unloaded code.
t_after_unload() {
	local dir pid line=

	lab_swiw_load
	dir=$(mktemp -d)
	mkfifo "$dir/in"
	"$TEST" --after-unload <"$dir/in" >"$dir/out" 2>&1 &
	pid=$!
	exec 3>"$dir/in"
	poll 20 grep -q '^ready' "$dir/out" || {
		cat "$dir/out"
		fail "no ready from swiw_kmod_test --after-unload"
	}
	lab_swiw_unload
	echo go >&3
	exec 3>&-
	wait "$pid" || {
		cat "$dir/out"
		fail "sockets after the unload"
	}
	note "$(tail -n1 "$dir/out")"
}

note "guest $(uname -r), swiw.ko from the lab's module tree"
lab_test kmod.load t_load
lab_test kmod.ioctl.root t_root
lab_test kmod.ioctl.nobody t_nobody
lab_test kmod.provider t_provider
lab_test kmod.memcg t_memcg
lab_test kmod.unload lab_swiw_unload
lab_test kmod.children_after_unload t_after_unload
lab_test dmesg lab_dmesg_clean
lab_summary
