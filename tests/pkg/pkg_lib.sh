# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Sourced by the package tests (deb.sh, rpm.sh, install.sh,
# install_guest.sh), on tests/lib/swiw_test.sh: a check that fails
# (check_fail) lets the test go on, and it fails at the end (pkg_end);
# what it cannot go on without fails it at once (fail).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/swiw_test.sh"

# A command in the test's Debian root ($ROOT) gets this environment and
# no other.
PKG_ROOT_ENV=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
	DEBIAN_FRONTEND=noninteractive)

# in_root CMD...: CMD in the root with that environment.
in_root() {
	chroot "$ROOT" "${PKG_ROOT_ENV[@]}" "$@"
}

# mount_root: /proc, /sys, /dev, /run and /tmp in the root, as a booted
# system has them.
mount_root() {
	mount -t proc proc "$ROOT/proc" && mount -t sysfs sys "$ROOT/sys" &&
		mount --bind /dev "$ROOT/dev" && mount --bind /dev/pts "$ROOT/dev/pts" &&
		mount -t tmpfs tmpfs "$ROOT/run" && mount -t tmpfs tmpfs "$ROOT/tmp" ||
		fail "cannot mount /proc, /sys, /dev, /run, /tmp in the root"
}

pkg_end() {
	checks_end
	exit
}

# The version CMakeLists.txt gives the project.
pkg_version() {
	sed -nE 's/^project\(swiw VERSION ([0-9.]+) .*/\1/p' "$1/CMakeLists.txt"
}

# pkg_args SRC OUT: sets SRC (absolute), OUT and VERSION for a test.
pkg_args() {
	[ $# -ge 2 ] || fail "usage: $0 SRC OUT"
	SRC=$(cd "$1" && pwd) || fail "no source tree $1"
	OUT=$2
	VERSION=$(pkg_version "$SRC")
	[ -n "$VERSION" ] || fail "no project version in $SRC/CMakeLists.txt"
}

# pkg_same_version VERSION WHERE: WHERE gives the version CMakeLists.txt
# and kernel/swiw/dkms.conf give (the module's and the packages' are one).
pkg_same_version() {
	local dkms

	dkms=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$SRC/kernel/swiw/dkms.conf")
	[ "$dkms" = "$VERSION" ] ||
		check_fail "kernel/swiw/dkms.conf says $dkms, CMakeLists.txt $VERSION"
	[ "$1" = "$VERSION" ] || check_fail "$2 says $1, CMakeLists.txt $VERSION"
}

# export_tree SRC DEST: what a clean clone of SRC's working state holds
# (tracked files and new ones git does not ignore), so that uncommitted
# work is tested too and nothing built in SRC leaks in.
pkg_export_tree() {
	local src=$1 dest=$2

	rm -rf "$dest" && mkdir -p "$dest" || return 1
	if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
		(cd "$src" && git ls-files -z --cached --others --exclude-standard |
			xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
			tar --null -cf - -T -) | tar -xf - -C "$dest"
	else
		(cd "$src" && find . -path './build*' -prune -o -type f -print0 |
			tar --null -cf - -T -) | tar -xf - -C "$dest"
	fi
}

# The module's sources as DKMS gets them, under /usr/src/swiw-VERSION.
pkg_dkms_sources() {
	local src=$1 version=$2 f

	for f in "$src"/kernel/swiw/*.[ch]; do
		echo "/usr/src/swiw-$version/${f##*/}"
	done
	for f in "$src"/providers/swiw/wire/*.[ch]; do
		echo "/usr/src/swiw-$version/providers/swiw/wire/${f##*/}"
	done
	echo "/usr/src/swiw-$version/kernel-headers/rdma/swiw-abi.h"
}

# expand LIST SRC VERSION: the expected paths (shell patterns), one a line.
pkg_expand() {
	local list=$1 src=$2 version=$3 multiarch

	multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)
	grep -v '^#' "$list" | grep -v '^$' | while IFS= read -r line; do
		if [ "$line" = @DKMS_SOURCES@ ]; then
			pkg_dkms_sources "$src" "$version"
			continue
		fi
		line=${line//@VERSION@/$version}
		echo "${line//@MULTIARCH@/$multiarch}"
	done
}

# pkg_matches WORD PATTERN...: some PATTERN matches WORD.
pkg_matches() {
	local w=$1 p

	shift
	for p; do
		# shellcheck disable=SC2053
		[[ $w == $p ]] && return 0
	done
	return 1
}

# pkg_compare NAME EXPECTED ACTUAL: every file shipped is expected and
# every expected pattern matches a file shipped.
pkg_compare() {
	local name=$1 f p ok=1
	local -a pats files

	mapfile -t pats <"$2"
	mapfile -t files <"$3"
	for f in "${files[@]}"; do
		pkg_matches "$f" "${pats[@]}" && continue
		check_fail "$name ships $f, which is not in its list"
		ok=0
	done
	for p in "${pats[@]}"; do
		for f in "${files[@]}"; do
			# shellcheck disable=SC2053
			[[ $f == $p ]] && continue 2
		done
		check_fail "$name does not ship $p"
		ok=0
	done
	[ $ok -eq 1 ] && check_pass "$name ships exactly its ${#files[@]} listed files"
	return 0
}
