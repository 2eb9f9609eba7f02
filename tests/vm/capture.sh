#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm.capture.mixed, the host side: boots the lab with swiw.ko, runs
# tests/e2e/capture.sh in the guest with a kernel-helper peer against an
# in-process peer, each way round (e2e.sh), in four of its settings,
# keeps every capture, then judges them here with tshark
# (tests/wire/capture_check.sh): tshark starts slowly, and under QEMU TCG
# each call would take many seconds.
# SWIW_CAPTURE_KEEP=DIR keeps the captures that fail there, as
# e2e.capture does.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/swiw_test.sh"
: "${SWIW_BUILD:?SWIW_BUILD is not set (the swiw build directory)}"
KO=$SWIW_BUILD/tests/kernel/module/swiw/swiw.ko
keep=$T_TMP/keep
mkdir "$keep" || fail "cannot make $keep"

# The helper frames by the outcome MPA negotiated (in the shared setup
# code, which e2e.capture runs with every setting): so here the settings
# that give it each framing, CRC off and on, markers none, both ways and
# each one way.
. "$HERE/../e2e/capture_sets.sh"
SETTINGS=framing
if bash "$HERE/run.sh" --timeout 1500 --env SWIW_ENGINE=kernel --module "$KO" \
	--keep "$keep" -- bash "$HERE/e2e.sh" SWIW_CAPTURE_DEFER=/tmp/out/keep \
	SWIW_CAPTURE_SETTINGS=$SETTINGS \
	SWIW_CAPTURE_CLIENT_ENV=SWIW_ENGINE=inprocess capture \
	SWIW_CAPTURE_CLIENT_ENV= SWIW_CAPTURE_SERVER_ENV=SWIW_ENGINE=inprocess capture; then
	check_pass "the guest's runs"
else
	check_fail "the guest's runs"
fi
n=$(wc -l <"$keep/manifest" 2>/dev/null || echo 0)
# One capture a setting, and the guest ran capture.sh twice.
want=$((2 * ($(capture_settings $SETTINGS | tr -cd , | wc -c) + 1)))
[ "$n" -eq "$want" ] || check_fail "$n captures kept, $want expected"
# As many checks at once as there are cores (tshark keeps one busy),
# each into FILE.out and its exit status into FILE.rc, read in order.
while read -r file crc addrs; do
	job_slot
	# shellcheck disable=SC2086 # addresses are words
	{
		bash "$HERE/../wire/capture_check.sh" "$keep/$file" "$crc" $addrs \
			>"$keep/$file.out" 2>&1
		echo $? >"$keep/$file.rc"
	} &
done <"$keep/manifest"
wait
while read -r file crc addrs; do
	out=$(cat "$keep/$file.out" 2>&1)
	if [ "$(cat "$keep/$file.rc" 2>/dev/null)" = 0 ]; then
		check_pass "$file: $(tail -1 <<<"$out")"
	else
		echo "$out"
		if [ -n "${SWIW_CAPTURE_KEEP:-}" ]; then
			cp "$keep/$file" "$SWIW_CAPTURE_KEEP/" &&
				note "kept $SWIW_CAPTURE_KEEP/$file"
		fi
		check_fail "$file (crc $crc, markers asked by: $addrs)"
	fi
done <"$keep/manifest"
checks_end
