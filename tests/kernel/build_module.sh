#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# build_module.sh SRCDIR OUTDIR: builds kernel/swiw (swiw.ko, the wire core
# compiled in) out of tree in OUTDIR against Debian's linux-headers, with
# W=1 and sparse (C=1). Fails on any compiler or sparse warning, and shows
# first that it would: a canary module with one of each must fail the same
# check. KDIR=... picks the headers (default: the newest installed
# /usr/src/linux-headers-*-amd64).
. "$(dirname "$0")/../lib/swiw_test.sh"
src=$1 out=$2
mod=$src/kernel/swiw

need_kernel_headers
need_cmd sparse make nm
# The compiler the kernel was built with (Debian: gcc-12), as Kbuild expects.
cc=$(sed -nE 's/^CONFIG_CC_VERSION_TEXT="([^ ]+) .*/\1/p' "$KDIR/.config" 2>/dev/null)
command -v "${cc:-gcc}" >/dev/null || cc=gcc
release=$(sed -nE 's/^#define UTS_RELEASE "(.*)"/\1/p' "$KDIR/include/generated/utsrelease.h")

# kbuild OUTPUT-DIR: builds the Kbuild in OUTPUT-DIR, prints its log.
kbuild() {
	make -C "$KDIR" M="$1" SWIW_TOP="$src" CC="${cc:-gcc}" W=1 C=1 -j2 modules 2>&1
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
	fail "the canary's gcc and sparse warnings were not both caught"
fi
pass "the warning check catches the canary's gcc and sparse warnings"

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
[ $rc -eq 0 ] || check_fail "make exited $rc"
if found=$(warnings "$log"); then
	printf '%s\n' "$found"
	check_fail "the build printed warnings (above)"
fi
ko=$build/swiw.ko
[ -f "$ko" ] || fail "no $ko"
# It is the module for these headers, and the whole wire core is in it.
info=$(modinfo "$ko" 2>/dev/null || /sbin/modinfo "$ko")
grep -q "^vermagic: *$release " <<<"$info" ||
	check_fail "vermagic is not $release: $(grep vermagic <<<"$info")"
# Its version is dkms.conf's, which the packages and CMake share.
want=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$src/kernel/swiw/dkms.conf")
grep -q "^version: *$want\$" <<<"$info" ||
	check_fail "modinfo version is not dkms.conf's $want: $(grep '^version' <<<"$info")"
nwire=$(ls "$src"/providers/swiw/wire/*.c | wc -l)
nobj=$(ls "$build"/wire/*.o 2>/dev/null | wc -l)
[ "$nwire" -gt 0 ] && [ "$nobj" -eq "$nwire" ] ||
	check_fail "$nobj wire-core objects built for $nwire sources"
for sym in swiw_crc32c_table swiw_fpdu_tx_build swiw_mpa_input swiw_ddp_rx_segment; do
	nm "$ko" | grep -q " T $sym\$" || check_fail "$sym is not in swiw.ko"
done
[ "$T_FAILED" -eq 0 ] || exit 1
pass "swiw.ko for $release ($nobj wire-core objects), W=1 and sparse clean, $((SECONDS - start)) s"
