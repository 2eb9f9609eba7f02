#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# swiw-security(7) names, for each promise, the tests that hold swiw to
# it ("*Tests:*" paragraphs, each name in backquotes). Every name must
# still exist: a ctest test of this build or named in tests/ (the VM
# lab's exist in one build only), a fuzz target (fuzz.NAME,
# tests/fuzz/fuzz_NAME.c, built only with SWIW_FUZZ), or a test function
# or step defined under tests/. A test renamed or removed fails here
# until the page says what holds the promise now.
. "$(dirname "$0")/../lib/swiw_test.sh"
src=$(cd "$(dirname "$0")/../.." && pwd)
page=$src/providers/swiw/man/swiw-security.7.md
build=${SWIW_BUILD:?}

[ -r "$page" ] || fail "no $page"
ctests=$(cd "$build" && ctest -N | sed -n 's/^ *Test *#[0-9]*: //p')
[ -n "$ctests" ] || fail "ctest -N listed nothing in $build"

names=$(awk '/^\*Tests:\*/ { on = 1 } /^$/ { on = 0 } on' "$page" |
	grep -o '`[^`]*`' | tr -d '`' | sort -u)
[ -n "$names" ] || fail "no test named in $page"
for t in $names; do
	if grep -qxF "$t" <<<"$ctests"; then
		check_pass "$t: a ctest test"
	elif grep -rqF "add_test(NAME $t" "$src/tests" --include=CMakeLists.txt; then
		check_pass "$t: a ctest test of another build, named in tests/"
	elif [[ $t == fuzz.* ]] && [ -f "$src/tests/fuzz/fuzz_${t#fuzz.}.c" ]; then
		check_pass "$t: a fuzz target"
	elif grep -rqE "^(static [a-z].*[ *]|)${t}\(" "$src/tests" --include='*.c' ||
		grep -rqE "^${t}\(\) *\{" "$src/tests" --include='*.sh'; then
		check_pass "$t: defined under tests/"
	else
		check_fail "swiw-security(7) names '$t', which is no test here"
	fi
done
checks_end
