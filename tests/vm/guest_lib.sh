# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Helpers for scripts that run inside the VM lab (tests/vm/run.sh): network
# setup, module loading and LAB-TEST/LAB-SUMMARY result lines. Source it
# from bash; it refuses to run anywhere but in the lab's guest, because it
# creates links and loads modules.
#
#   lab_test NAME CMD...   runs CMD (a program or a shell function), prints
#                          "LAB-TEST NAME PASS|FAIL (time)" and, on failure,
#                          what CMD printed (lines starting "# " also on
#                          success); counts the result. CMD runs in a
#                          subshell: lab_fail there ends just that test
#   lab_summary            prints "LAB-SUMMARY: N passed, M failed" and
#                          returns 0 only when something ran and none failed
#
# LAB_TIMEOUT (default 60) bounds each command run by lab_run.

grep -qw 'labscript=[^ ]*' /proc/cmdline 2>/dev/null || {
	echo "guest_lib.sh: not in the VM lab's guest (no labscript= on the kernel command line)" >&2
	exit 1
}

LAB_TIMEOUT=${LAB_TIMEOUT:-60}
LAB_PASS=0
LAB_FAIL=0
LAB_TMP=$(mktemp -d /tmp/lab.XXXXXX) || exit 1

lab_note() {
	echo "# $*"
}

# lab_fail MESSAGE: ends the current lab_test (its subshell) as failed;
# outside one, the whole script.
lab_fail() {
	echo "lab: FAIL: $*" >&2
	exit 1
}

# lab_run CMD...: CMD with the LAB_TIMEOUT bound; a timeout says so.
lab_run() {
	local rc

	timeout -k 5 "$LAB_TIMEOUT" "$@"
	rc=$?
	[ "$rc" -eq 124 ] && echo "lab: timed out after ${LAB_TIMEOUT}s: $*" >&2
	return "$rc"
}

lab_test() {
	local name=$1 start rc ms

	shift
	start=$(date +%s%N)
	("$@") >"$LAB_TMP/test.out" 2>&1
	rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	if [ "$rc" -eq 0 ]; then
		LAB_PASS=$((LAB_PASS + 1))
		printf 'LAB-TEST %s PASS (%d.%02d s)\n' "$name" $((ms / 1000)) $((ms % 1000 / 10))
		grep '^# ' "$LAB_TMP/test.out" | sed 's/^/    /'
	else
		LAB_FAIL=$((LAB_FAIL + 1))
		printf 'LAB-TEST %s FAIL (%d.%02d s, exit %d)\n' "$name" $((ms / 1000)) \
			$((ms % 1000 / 10)) "$rc"
		sed 's/^/    /' "$LAB_TMP/test.out"
	fi
	return "$rc"
}

lab_summary() {
	echo "LAB-SUMMARY: $LAB_PASS passed, $LAB_FAIL failed"
	[ "$LAB_FAIL" -eq 0 ] && [ "$LAB_PASS" -gt 0 ]
}

# --- devices -------------------------------------------------------------
lab_lo_up() {
	ip link set lo up || lab_fail "ip link set lo up"
}

# lab_modprobe MODULE [PARAM=VALUE]...: loads one module from the lab's
# module tree (the kernel's, plus what run.sh --module added).
lab_modprobe() {
	lab_run modprobe "$@" || lab_fail "modprobe $*"
}

# lab_dummy NAME ADDR/PREFIX: a dummy link (it has a MAC address, which
# lo lacks) with one IPv4 address, up.
lab_dummy() {
	[ -d /sys/module/dummy ] || lab_modprobe dummy numdummies=0
	ip link add "$1" type dummy &&
		ip addr add "$2" dev "$1" &&
		ip link set "$1" up || lab_fail "dummy link $1 $2"
}

# lab_veth NAME PEER [NETNS]: a veth pair, both ends up; PEER moves into
# NETNS (created if missing) when one is given. Addresses are the caller's.
lab_veth() {
	local a=$1 b=$2 ns=${3:-}

	[ -d /sys/module/veth ] || lab_modprobe veth
	ip link add "$a" type veth peer name "$b" || lab_fail "veth $a/$b"
	if [ -n "$ns" ]; then
		[ -e "/run/netns/$ns" ] || ip netns add "$ns" || lab_fail "netns $ns"
		ip link set "$b" netns "$ns" &&
			ip -n "$ns" link set lo up &&
			ip -n "$ns" link set "$b" up || lab_fail "veth $b into $ns"
	else
		ip link set "$b" up || lab_fail "veth $b up"
	fi
	ip link set "$a" up || lab_fail "veth $a up"
}

# lab_listening PORT [NETNS]: something listens on TCP PORT.
lab_listening() {
	if [ -n "${2:-}" ]; then
		ip netns exec "$2" ss -Hltn "sport = :$1" | grep -q .
	else
		ss -Hltn "sport = :$1" | grep -q .
	fi
}

# lab_wait SECONDS WHAT CMD...: polls CMD every 0.1 s until it succeeds;
# returns 1 (and says so) after SECONDS.
lab_wait() {
	local limit=$1 what=$2 end=$((SECONDS + $1))

	shift 2
	until "$@"; do
		if [ "$SECONDS" -ge "$end" ]; then
			echo "lab: waited ${limit}s: $what" >&2
			return 1
		fi
		sleep 0.1
	done
}

# lab_dmesg_clean: the kernel log has no BUG, WARNING, Oops or general
# protection fault.
lab_dmesg_clean() {
	local bad

	bad=$(dmesg | grep -E '\<BUG\>|WARNING:|Oops|general protection fault|Call Trace')
	[ -z "$bad" ] || lab_fail "kernel log: $bad"
}

# --- swiw ----------------------------------------------------------------
# lab_swiw_unload: no process holds swiw.ko any more, it unloads, and its
# device goes with it.
lab_swiw_unload() {
	local refs

	refs=$(cat /sys/module/swiw/refcnt)
	[ "$refs" -eq 0 ] || lab_fail "refcnt $refs after the tests"
	rmmod swiw || lab_fail "rmmod swiw"
	[ ! -e /dev/swiw ] || lab_fail "/dev/swiw left behind"
}

# lab_swiw_engine WANT: swiw-run ibv_devinfo -v names the engine WANT
# (in-process, ring, kernel helper) in fw_ver.
lab_swiw_engine() {
	local out

	out=$(lab_run "$SWIW_BUILD/bin/swiw-run" ibv_devinfo -v -d swiw_lo 2>&1) ||
		lab_fail "ibv_devinfo: $out"
	grep -Eq "fw_ver:[[:space:]]+swiw [0-9.]+ $1" <<<"$out" ||
		lab_fail "fw_ver does not say $1: $(grep fw_ver <<<"$out")"
	lab_note "$(grep -E 'fw_ver' <<<"$out" | sed 's/^[[:space:]]*//')"
}
