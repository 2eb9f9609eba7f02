#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# clang-format holds on every C file, and every file carries an SPDX line.
. "$(dirname "$0")/../lib/swiw_test.sh"
cd "$(dirname "$0")/../.." || fail "no source tree"
need_cmd clang-format

if git rev-parse --git-dir >/dev/null 2>&1; then
	files=$(git ls-files --cached --others --exclude-standard)
else
	files=$(find . -path ./build\* -prune -o -type f -print | sed 's|^\./||')
fi

c_files=$(printf '%s\n' "$files" | grep -E '\.(c|h)$')
if ! out=$(printf '%s\n' "$c_files" | xargs clang-format --dry-run --Werror 2>&1); then
	printf '%s\n' "$out" | grep -E '^[^ ].*: (error|warning)' | cut -d: -f1 | sort -u
	check_fail "clang-format would change these files (above; run clang-format -i)"
fi

# Files that cannot carry a comment are exempt.
for f in $files; do
	case "$f" in
	*.md | .gitignore | */corpus/* | debian/changelog | debian/copyright | debian/source/format) continue ;;
	esac
	[ -f "$f" ] || continue
	head -n 3 "$f" | grep -q 'SPDX-License-Identifier: ' ||
		check_fail "no SPDX line in the first lines of $f"
done

[ "$T_FAILED" -eq 0 ] || exit 1
pass "format and SPDX ($(printf '%s\n' "$c_files" | wc -l) C files)"
