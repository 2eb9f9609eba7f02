#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# san_logs.sh COMMAND [ARGS...]: runs a test of a sanitizer build with the
# reports of every process it starts written to files in a scratch
# directory, and fails if there is any. A broker the test starts on demand
# has its stderr on /dev/null and its exit status seen by nobody: without
# this, its reports would be lost.
set -u
dir=$(mktemp -d "${TMPDIR:-/tmp}/swiw-san.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
for v in ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS; do
	export "$v=${!v:+${!v}:}log_path=$dir/report"
done
"$@"
rc=$?
for f in "$dir"/report*; do
	[ -e "$f" ] || break
	echo "FAIL: sanitizer report in ${f##*/} (of $*):" >&2
	cat "$f" >&2
	rc=1
done
exit "$rc"
