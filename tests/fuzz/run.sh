#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# run.sh FUZZER CORPUS SECONDS: runs a libFuzzer target for SECONDS from a
# scratch copy of its committed seed corpus. Any crash, sanitizer report,
# leak or timeout fails the test, and the input that caused it is kept.
. "$(dirname "$0")/../lib/swiw_test.sh"
fuzzer=$1 corpus=$2 seconds=$3
[ -d "$corpus" ] && [ -n "$(ls -A "$corpus")" ] || fail "no seed corpus in $corpus"
cp -r "$corpus" "$T_TMP/corpus"
mkdir -p "$T_TMP/artifacts"
# Reports go to the fuzzer's output, where libFuzzer finds them.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
	-print_final_stats=1 -artifact_prefix="$T_TMP/artifacts/" "$T_TMP/corpus"
rc=$?
if [ $rc -ne 0 ] || [ -n "$(ls -A "$T_TMP/artifacts")" ]; then
	keep=${TMPDIR:-/tmp}/swiw-fuzz-failure-$(basename "$fuzzer")-$$
	cp -r "$T_TMP/artifacts" "$keep"
	fail "$(basename "$fuzzer") exit $rc; crashing inputs kept in $keep"
fi
pass "$(basename "$fuzzer") ran ${seconds}s with no finding"
