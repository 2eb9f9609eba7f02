#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# build_module.sh SRCDIR OUTDIR: builds kernel/swiw (swiw.ko, the wire core
# compiled in) out of tree in OUTDIR against Debian's linux-headers, with
# W=1 and sparse (C=1). Fails on any compiler or sparse warning, and shows
# first that it would: a canary module with one of each must fail the same
# check. KDIR=... picks the headers (default: the newest installed
# /usr/src/linux-headers-*-amd64).
set -u
src=$1 out=$2
mod=$src/kernel/swiw

kdir=${KDIR:-$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -1)}
if [ -z "$kdir" ] || [ ! -f "$kdir/Makefile" ]; then
	echo "FAIL: no kernel headers: install linux-headers-amd64 (.ci/deps does)"
	exit 1
fi
command -v sparse >/dev/null || { echo "FAIL: sparse is not installed"; exit 1; }
# The compiler the kernel was built with (Debian: gcc-12), as Kbuild expects.
cc=$(sed -nE 's/^CONFIG_CC_VERSION_TEXT="([^ ]+) .*/\1/p' "$kdir/.config" 2>/dev/null)
command -v "${cc:-gcc}" >/dev/null || cc=gcc
release=$(sed -nE 's/^#define UTS_RELEASE "(.*)"/\1/p' "$kdir/include/generated/utsrelease.h")

# kbuild OUTPUT-DIR: builds the Kbuild in OUTPUT-DIR, prints its log.
kbuild() {
	make -C "$kdir" M="$1" SWIW_TOP="$src" CC="${cc:-gcc}" W=1 C=1 -j2 modules 2>&1
}

# The warnings that fail the build: compiler and sparse diagnostics, and
# modpost's (undefined or mismatched symbols).
warnings() {
	grep -E ': (warning|error):|^WARNING: |^ERROR: |undefined!' <<<"$1"
}

# The canary: a check that cannot fail is no check.
canary=$out/canary
rm -rf "$canary" && mkdir -p "$canary"
cat >"$canary/Kbuild" <<'EOF'
obj-m += swiw_canary.o
EOF
cat >"$canary/swiw_canary.c" <<'EOF'
#include <linux/module.h>
static int swiw_canary_unused(void) /* gcc: defined but not used */
{
	return 0;
}
__be32 swiw_canary_be(u32 v); /* sparse: a u32 returned as __be32 */
__be32 swiw_canary_be(u32 v)
{
	return v;
}
EXPORT_SYMBOL_GPL(swiw_canary_be);
MODULE_LICENSE("GPL");
EOF
log=$(kbuild "$canary")
found=$(warnings "$log")
if ! grep -q 'defined but not used' <<<"$found" ||
	! grep -q 'incorrect type in return expression' <<<"$found"; then
	printf '%s\n' "$log"
	echo "FAIL: the canary's gcc and sparse warnings were not both caught"
	exit 1
fi
echo "ok: the warning check catches the canary's gcc and sparse warnings"

# The module, from scratch each time (an object kept from an earlier run
# would hide its warnings): a copy of its own sources; the wire core stays
# where it is, Kbuild compiles it from SWIW_TOP.
build=$out/swiw
rm -rf "$build" && mkdir -p "$build"
cp -p "$mod"/Kbuild "$mod"/dkms.conf "$mod"/*.[ch] "$build"/
start=$SECONDS
log=$(kbuild "$build")
rc=$?
printf '%s\n' "$log"
fail=0
if [ $rc -ne 0 ]; then
	echo "FAIL: make exited $rc"
	fail=1
fi
if found=$(warnings "$log"); then
	printf '%s\n' "$found"
	echo "FAIL: the build printed warnings (above)"
	fail=1
fi
ko=$build/swiw.ko
if [ ! -f "$ko" ]; then
	echo "FAIL: no $ko"
	exit 1
fi
# It is the module for these headers, and the whole wire core is in it.
info=$(modinfo "$ko" 2>/dev/null || /sbin/modinfo "$ko")
if ! grep -q "^vermagic: *$release " <<<"$info"; then
	echo "FAIL: vermagic is not $release:"
	grep vermagic <<<"$info"
	fail=1
fi
# Its version is dkms.conf's, which the packages and CMake share.
want=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$src/kernel/swiw/dkms.conf")
if ! grep -q "^version: *$want\$" <<<"$info"; then
	echo "FAIL: modinfo version is not dkms.conf's $want: $(grep '^version' <<<"$info")"
	fail=1
fi
nwire=$(ls "$src"/providers/swiw/wire/*.c | wc -l)
nobj=$(ls "$build"/wire/*.o 2>/dev/null | wc -l)
if [ "$nwire" -eq 0 ] || [ "$nobj" -ne "$nwire" ]; then
	echo "FAIL: $nobj wire-core objects built for $nwire sources"
	fail=1
fi
for sym in swiw_crc32c_table swiw_fpdu_tx_build swiw_mpa_input swiw_ddp_rx_segment; do
	if ! nm "$ko" | grep -q " T $sym\$"; then
		echo "FAIL: $sym is not in swiw.ko"
		fail=1
	fi
done
[ $fail -eq 0 ] &&
	echo "ok: swiw.ko for $release ($nobj wire-core objects), W=1 and sparse clean, $((SECONDS - start)) s"
exit $fail
