#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# dkms_tree.sh SRCDIR OUTDIR VERSION: `make dkms-src` makes a source tree that
# builds on its own, as DKMS will build it (its dkms.conf MAKE line, with
# nothing of the checkout around it), without a warning.
. "$(dirname "$0")/../lib/swiw_test.sh"
src=$1 out=$2 version=$3
need_kernel_headers
rm -rf "$out" && mkdir -p "$out"
make -s -C "$src/kernel/swiw" dkms-src DESTDIR="$out/root" || fail "make dkms-src"
tree=$(ls -d "$out"/root/usr/src/swiw-* 2>/dev/null)
[ "$(wc -w <<<"$tree")" -eq 1 ] && [ -f "$tree/dkms.conf" ] ||
	fail "no single /usr/src/swiw-VERSION with a dkms.conf: $tree"
# Built where DKMS builds it (its tree/NAME/VERSION/build), moved away
# from the checkout, with dkms.conf's own MAKE line and DKMS's variables.
kernel_source_dir=$KDIR
dkms_tree=$out/dkms
# shellcheck disable=SC1091
. "$tree/dkms.conf"
[ "$PACKAGE_VERSION" = "$version" ] ||
	fail "dkms.conf says version $PACKAGE_VERSION, the project $version"
build=$dkms_tree/$PACKAGE_NAME/$PACKAGE_VERSION/build
mkdir -p "$(dirname "$build")" && mv "$tree" "$build"
make_line=${MAKE[0]}
log=$(cd "$build" && $make_line 2>&1)
rc=$?
if [ $rc -ne 0 ] || grep -E ': (warning|error):|^WARNING: |^ERROR: ' <<<"$log"; then
	printf '%s\n' "$log"
	fail "the DKMS tree does not build cleanly ($make_line)"
fi
[ -f "$build/swiw.ko" ] || fail "no swiw.ko"
pass "the DKMS tree $(basename "$tree") builds swiw.ko on its own"
