# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# What the scripts that run inside the VM lab (tests/vm/run.sh) add to
# tests/lib/swiw_test.sh, which this sources: LAB-TEST/LAB-SUMMARY result
# lines, module loading and the kernel's state. Source it from bash; it
# refuses to run anywhere but in the lab's guest, because it creates
# links and loads modules.
#
#   lab_test NAME CMD...   runs CMD (a program or a shell function), prints
#                          "LAB-TEST NAME PASS|FAIL (time)" and, on failure,
#                          what CMD printed (lines starting "# " also on
#                          success); counts the result. CMD runs in a
#                          subshell: fail there ends just that test
#   lab_summary            prints "LAB-SUMMARY: N passed, M failed" and
#                          returns 0 only when something ran and none failed
#
# T_LIMIT (default 60 here) bounds each command run by bounded.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/swiw_test.sh"

grep -qw 'labscript=[^ ]*' /proc/cmdline 2>/dev/null ||
	fail "not in the VM lab's guest (no labscript= on the kernel command line)"

T_LIMIT=60

lab_test() {
	local name=$1 start rc ms

	shift
	start=$(date +%s%N)
	("$@") >"$T_TMP/test.out" 2>&1
	rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	if [ "$rc" -eq 0 ]; then
		T_PASSED=$((T_PASSED + 1))
		printf 'LAB-TEST %s PASS (%d.%02d s)\n' "$name" $((ms / 1000)) $((ms % 1000 / 10))
		grep '^# ' "$T_TMP/test.out" | sed 's/^/    /'
	else
		T_FAILED=$((T_FAILED + 1))
		printf 'LAB-TEST %s FAIL (%d.%02d s, exit %d)\n' "$name" $((ms / 1000)) \
			$((ms % 1000 / 10)) "$rc"
		sed 's/^/    /' "$T_TMP/test.out"
	fi
	return "$rc"
}

lab_summary() {
	echo "LAB-SUMMARY: $T_PASSED passed, $T_FAILED failed"
	[ "$T_FAILED" -eq 0 ] && [ "$T_PASSED" -gt 0 ]
}

# --- devices -------------------------------------------------------------
lab_lo_up() {
	ns_ip '' link set lo up
}

# lab_modprobe MODULE [PARAM=VALUE]...: loads one module from the lab's
# module tree (the kernel's, plus what run.sh --module added).
lab_modprobe() {
	bounded modprobe "$@" || fail "modprobe $*"
}

# lab_dummy NAME ADDR/PREFIX: a dummy link (it has a MAC address, which
# lo lacks) with one IPv4 address, up.
lab_dummy() {
	[ -d /sys/module/dummy ] || lab_modprobe dummy numdummies=0
	ns_ip '' link add "$1" type dummy
	ns_ip '' addr add "$2" dev "$1"
	ns_ip '' link set "$1" up
}

# lab_dmesg_clean: the kernel log has no BUG, WARNING, Oops or general
# protection fault.
lab_dmesg_clean() {
	local bad

	bad=$(dmesg | grep -E '\<BUG\>|WARNING:|Oops|general protection fault|Call Trace')
	[ -z "$bad" ] || fail "kernel log: $bad"
}

# --- swiw ----------------------------------------------------------------
# lab_swiw_load: swiw.ko loads and makes /dev/swiw.
lab_swiw_load() {
	lab_modprobe swiw
	[ -c /dev/swiw ] || fail "no /dev/swiw"
}

# lab_swiw_unload: no process holds swiw.ko any more (a broker exits 3 s
# after its last client: it gets 10 s), it unloads, and its device goes
# with it.
lab_swiw_unload() {
	poll 10 lab_swiw_idle ||
		fail "refcnt $(cat /sys/module/swiw/refcnt) after the tests"
	rmmod swiw || fail "rmmod swiw"
	[ ! -e /dev/swiw ] || fail "/dev/swiw left behind"
}

lab_swiw_idle() {
	[ "$(cat /sys/module/swiw/refcnt)" -eq 0 ]
}

# lab_swiw_engine WANT: swiw-run ibv_devinfo -v names the engine WANT
# (in-process, ring, kernel helper) in fw_ver.
lab_swiw_engine() {
	local out

	out=$(bounded "$SWIW_RUN" ibv_devinfo -v -d swiw_lo 2>&1) ||
		fail "ibv_devinfo: $out"
	grep -Eq "fw_ver:[[:space:]]+swiw [0-9.]+ $1" <<<"$out" ||
		fail "fw_ver does not say $1: $(grep fw_ver <<<"$out")"
	note "$(grep -E 'fw_ver' <<<"$out" | sed 's/^[[:space:]]*//')"
}
