#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# clang-format holds on every C file, and every file carries an SPDX line.
set -u
cd "$(dirname "$0")/../.."
fail=0

if git rev-parse --git-dir >/dev/null 2>&1; then
	files=$(git ls-files --cached --others --exclude-standard)
else
	files=$(find . -path ./build\* -prune -o -type f -print | sed 's|^\./||')
fi

c_files=$(printf '%s\n' "$files" | grep -E '\.(c|h)$')
if ! out=$(printf '%s\n' "$c_files" | xargs clang-format --dry-run --Werror 2>&1); then
	echo "clang-format would change these files (run clang-format -i):"
	printf '%s\n' "$out" | grep -E '^[^ ].*: (error|warning)' | cut -d: -f1 | sort -u
	fail=1
fi

# Files that cannot carry a comment are exempt.
for f in $files; do
	case "$f" in
	*.md | .gitignore | */corpus/* | debian/changelog | debian/copyright | debian/source/format) continue ;;
	esac
	[ -f "$f" ] || continue
	if ! head -n 3 "$f" | grep -q 'SPDX-License-Identifier: '; then
		echo "no SPDX line in the first lines of $f"
		fail=1
	fi
done

[ $fail -eq 0 ] && echo "format and SPDX: ok ($(printf '%s\n' "$c_files" | wc -l) C files)"
exit $fail
