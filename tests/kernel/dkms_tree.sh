#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# dkms_tree.sh SRCDIR OUTDIR VERSION: `make dkms-src` makes a source tree that
# builds on its own, as DKMS will build it (its dkms.conf MAKE line, with
# nothing of the checkout around it), without a warning.
set -u
src=$1 out=$2 version=$3
kdir=${KDIR:-$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -1)}
if [ -z "$kdir" ] || [ ! -f "$kdir/Makefile" ]; then
	echo "FAIL: no kernel headers: install linux-headers-amd64 (.ci/deps does)"
	exit 1
fi
rm -rf "$out" && mkdir -p "$out"
make -s -C "$src/kernel/swiw" dkms-src DESTDIR="$out/root" || {
	echo "FAIL: make dkms-src"
	exit 1
}
tree=$(ls -d "$out"/root/usr/src/swiw-* 2>/dev/null)
if [ "$(wc -w <<<"$tree")" -ne 1 ] || [ ! -f "$tree/dkms.conf" ]; then
	echo "FAIL: no single /usr/src/swiw-VERSION with a dkms.conf: $tree"
	exit 1
fi
# Built where DKMS builds it (its tree/NAME/VERSION/build), moved away
# from the checkout, with dkms.conf's own MAKE line and DKMS's variables.
kernel_source_dir=$kdir
dkms_tree=$out/dkms
# shellcheck disable=SC1091
. "$tree/dkms.conf"
if [ "$PACKAGE_VERSION" != "$version" ]; then
	echo "FAIL: dkms.conf says version $PACKAGE_VERSION, the project $version"
	exit 1
fi
build=$dkms_tree/$PACKAGE_NAME/$PACKAGE_VERSION/build
mkdir -p "$(dirname "$build")" && mv "$tree" "$build"
make_line=${MAKE[0]}
log=$(cd "$build" && $make_line 2>&1)
rc=$?
if [ $rc -ne 0 ] || grep -E ': (warning|error):|^WARNING: |^ERROR: ' <<<"$log"; then
	printf '%s\n' "$log"
	echo "FAIL: the DKMS tree does not build cleanly ($make_line)"
	exit 1
fi
[ -f "$build/swiw.ko" ] || { echo "FAIL: no swiw.ko"; exit 1; }
echo "ok: the DKMS tree $(basename "$tree") builds swiw.ko on its own"
