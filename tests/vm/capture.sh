#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm.capture.mixed, the host side: boots the lab with swiw.ko, runs
# tests/e2e/capture.sh in the guest with a kernel-helper peer against an
# in-process peer, each way round (e2e.sh), keeps every capture, then
# judges them here with tshark (tests/wire/capture_check.sh): tshark
# starts slowly, and under QEMU TCG each call would take many seconds.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
: "${SWIW_BUILD:?SWIW_BUILD is not set (the swiw build directory)}"
KO=$SWIW_BUILD/tests/kernel/module/swiw/swiw.ko
keep=$(mktemp -d "${TMPDIR:-/tmp}/swiw-vmcap.XXXXXX") || exit 1
trap 'rm -rf "$keep"' EXIT
pass=0 failed=0

bash "$HERE/run.sh" --timeout 1500 --env SWIW_ENGINE=kernel --module "$KO" \
	--keep "$keep" -- bash "$HERE/e2e.sh" SWIW_CAPTURE_DEFER=/tmp/out/keep \
	SWIW_CAPTURE_CLIENT_ENV=SWIW_ENGINE=inprocess capture \
	SWIW_CAPTURE_CLIENT_ENV= SWIW_CAPTURE_SERVER_ENV=SWIW_ENGINE=inprocess capture
rc=$?
if [ "$rc" -eq 0 ]; then pass=$((pass + 1)); else failed=$((failed + 1)); fi
n=$(wc -l <"$keep/manifest" 2>/dev/null || echo 0)
# capture.sh captures seven settings a run, and the guest ran it twice.
if [ "$n" -ne 14 ]; then
	echo "FAIL: $n captures kept, 14 expected"
	failed=$((failed + 1))
fi
while read -r file crc addrs; do
	# shellcheck disable=SC2086 # addresses are words
	if out=$(bash "$HERE/../wire/capture_check.sh" "$keep/$file" "$crc" $addrs 2>&1); then
		pass=$((pass + 1))
		echo "ok - $file: $(tail -1 <<<"$out")"
	else
		failed=$((failed + 1))
		echo "$out"
		echo "FAIL: $file (crc $crc, markers asked by: $addrs)"
	fi
done <"$keep/manifest"
echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
