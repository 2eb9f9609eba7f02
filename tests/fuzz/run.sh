#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# run.sh FUZZER CORPUS SECONDS: runs a libFuzzer target for SECONDS from a
# scratch copy of its committed seed corpus. Any crash, sanitizer report,
# leak or timeout fails the test, and the input that caused it is kept.
set -u
fuzzer=$1 corpus=$2 seconds=$3
[ -d "$corpus" ] && [ -n "$(ls -A "$corpus")" ] ||
	{ echo "FAIL: no seed corpus in $corpus"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/swiw-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -r "$corpus" "$work/corpus"
mkdir -p "$work/artifacts"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
	-print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus"
rc=$?
if [ $rc -ne 0 ] || [ -n "$(ls -A "$work/artifacts")" ]; then
	keep=${TMPDIR:-/tmp}/swiw-fuzz-failure-$(basename "$fuzzer")-$$
	cp -r "$work/artifacts" "$keep"
	echo "FAIL: $(basename "$fuzzer") exit $rc; crashing inputs kept in $keep"
	exit 1
fi
echo "ok: $(basename "$fuzzer") ran ${seconds}s with no finding"
