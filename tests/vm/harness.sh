#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm.harness: what run.sh promises its callers, checked from the host. The
# guest's exit status and output come back; a hung guest is killed at the
# timeout with a clear failure; --module puts a .ko into the guest's
# depmod'ed tree (ahead of the kernel's own) and refuses one built for
# another kernel; a checkout under /tmp stays visible in the guest.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/swiw_test.sh"
RUN=$HERE/run.sh
T_LIMIT=300

# vm EXPECTED-RC RUN-ARGS...: run.sh's output goes to $T_TMP/out and $T_TMP/err.
vm() {
	local want=$1 rc

	shift
	bounded bash "$RUN" "$@" >"$T_TMP/out" 2>"$T_TMP/err"
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		echo "---- run.sh $* (exit $rc) stdout:" >&2
		cat "$T_TMP/out" >&2
		echo "---- stderr:" >&2
		cat "$T_TMP/err" >&2
		fail "run.sh $*: exit $rc, expected $want"
	fi
}

# 1. Exit status and both output streams of the guest command.
vm 7 --timeout 120 -- sh -c 'echo to-stdout; echo to-stderr >&2; exit 7'
grep -qx to-stdout "$T_TMP/out" && grep -qx to-stderr "$T_TMP/out" ||
	fail "the guest command's output did not come back: $(cat "$T_TMP/out")"
grep -q 'exit status 7' "$T_TMP/err" || fail "no exit status line: $(cat "$T_TMP/err")"
pass "guest exit status 7 and its output came back"

# 2. A guest that never finishes is killed at the timeout.
start=$SECONDS
vm 124 --timeout 10 -- sleep 1000
grep -q 'did not finish within 10s' "$T_TMP/err" || fail "no timeout message: $(cat "$T_TMP/err")"
[ $((SECONDS - start)) -lt 60 ] || fail "the 10 s timeout took $((SECONDS - start)) s"
pass "a hung guest is killed after its timeout"

# 3. --module: a copy of the kernel's own dummy.ko goes under updates/,
# which modprobe prefers; the guest loads that copy.
KVER_DIR=$(ls -d "${SWIW_VM_CACHE:-${SWIW_BUILD:?}/vm}"/kernel-*/lib/modules/* | head -1)
[ -d "$KVER_DIR" ] || fail "no kernel tree in the cache after a run"
ko=$(find "$KVER_DIR/kernel/drivers/net" -name dummy.ko | head -1)
[ -n "$ko" ] || fail "no dummy.ko in $KVER_DIR"
cp "$ko" "$T_TMP/dummy.ko" && mkdir "$T_TMP/foreign" || fail "cannot copy $ko"
vm 0 --module "$T_TMP/dummy.ko" --timeout 120 -- sh -c \
	'modinfo -n dummy && modprobe dummy && grep -q "^dummy " /proc/modules && echo loaded'
grep -q "^/lib/modules/.*/updates/dummy.ko$" "$T_TMP/out" ||
	fail "modinfo -n dummy is not the --module copy: $(cat "$T_TMP/out")"
grep -qx loaded "$T_TMP/out" || fail "the --module copy did not load: $(cat "$T_TMP/out")"
pass "--module dummy.ko is in updates/ and loads"

# 4. A module built for another kernel is refused before the boot (the
# copy's vermagic rewritten in place, same length), and so is a non-module.
perl -0777 -pe 's/vermagic=(6\.1\.0-\d+)/"vermagic=" . ("9" x length($1))/e' \
	"$T_TMP/dummy.ko" >"$T_TMP/foreign/dummy.ko" || fail "cannot make a foreign dummy.ko"
modinfo -F vermagic "$T_TMP/foreign/dummy.ko" | grep -q '^9999' || fail "vermagic not rewritten"
vm 125 --module "$T_TMP/foreign/dummy.ko" -- true
grep -q "built for '9999" "$T_TMP/err" || fail "no refusal of a foreign module: $(cat "$T_TMP/err")"
vm 125 --module "$HERE/run.sh" -- true
grep -q 'not a .ko file' "$T_TMP/err" || fail "run.sh accepted a non-.ko: $(cat "$T_TMP/err")"
pass "--module refuses a module for another kernel and a non-module"

# 5. A directory under /tmp (hidden by the guest's tmpfs) is bind-mounted
# back when it is the working directory.
mkdir "$T_TMP/cwd" && echo marker-$$ >"$T_TMP/cwd/file"
(cd "$T_TMP/cwd" && vm 0 --timeout 120 -- cat file) || exit 1
grep -qx "marker-$$" "$T_TMP/out" || fail "the /tmp working directory was not visible"
pass "a working directory under /tmp is visible in the guest"
