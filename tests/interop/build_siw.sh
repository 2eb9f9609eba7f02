#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# build_siw.sh BUILD_DIR: builds the Linux kernel's siw out of tree from
# Debian's linux-source-6.1, for the kernel ABI the VM lab boots
# (tests/vm/run.sh: SWIW_VM_KVER, else the installed linux-headers', else
# the archive's), as two modules under BUILD_DIR/interop/:
#   siw.ko      stock siw: MPA CRC never negotiated
#   siw_crc.ko  the same source with mpa_crc_required set: 6.1 has no
#               module parameter for it (/work/shared/LAB.md §1, "What
#               breaks" 4); only that constant and the module name differ
# Both are kept and rebuilt only when missing or older than the source
# tarball. Installs what it lacks with apt-get. Prints the two paths.
set -uo pipefail

die() {
	echo "build_siw: FAIL: $*" >&2
	exit 1
}
say() {
	echo "build_siw: $*" >&2
}

[ $# -eq 1 ] || die "usage: build_siw.sh BUILD_DIR"
mkdir -p "$1/interop" || die "cannot make $1/interop"
OUT=$(cd "$1/interop" && pwd -P)
TARBALL=/usr/src/linux-source-6.1.tar.xz

# The ABI: the same choice tests/vm/run.sh makes, so that its --module
# check (vermagic against the booted kernel) accepts what is built here.
dep_abi() {
	apt-cache depends "$1" 2>/dev/null |
		sed -nE "s/^ *Depends: $2-(6\.1\.0-[0-9]+-amd64)$/\1/p" | head -1
}
pick_kver() {
	local h img hdr

	if [ -n "${SWIW_VM_KVER:-}" ]; then
		echo "$SWIW_VM_KVER"
		return
	fi
	h=$(dpkg-query -W -f='${Package} ${Status}\n' 'linux-headers-6.1.0-*-amd64' 2>/dev/null |
		sed -nE 's/^linux-headers-(6\.1\.0-[0-9]+-amd64) install ok installed$/\1/p' |
		sort -V | tail -1)
	if [ -n "$h" ] && apt-cache show "linux-image-$h" >/dev/null 2>&1; then
		echo "$h"
		return
	fi
	img=$(dep_abi linux-image-amd64 linux-image)
	hdr=$(dep_abi linux-headers-amd64 linux-headers)
	if [ -z "$img" ]; then
		apt-get update -qq >&2 || true
		img=$(dep_abi linux-image-amd64 linux-image)
		hdr=$(dep_abi linux-headers-amd64 linux-headers)
	fi
	[ -n "$img" ] || die "apt-cache names no linux-image-6.1.0-*-amd64 (apt-get update?)"
	[ "$img" = "$hdr" ] || die "linux-image-amd64 wants $img, linux-headers-amd64 '$hdr'"
	echo "$img"
}
KVER=$(pick_kver) || exit 1
[[ $KVER =~ ^[0-9][0-9a-z.+-]*$ ]] || die "bad kernel version '$KVER'"

missing=()
for p in linux-source-6.1 "linux-headers-$KVER" make gcc-12 xz-utils kmod; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	[ "$(id -u)" -eq 0 ] || die "run as root to install ${missing[*]} with apt-get"
	say "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || {
		apt-get update -qq >&2
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	} || die "apt-get install ${missing[*]} failed"
fi
KDIR=/usr/src/linux-headers-$KVER
[ -r "$TARBALL" ] || die "$TARBALL is missing after installing linux-source-6.1"
[ -d "$KDIR" ] || die "$KDIR is missing after installing linux-headers-$KVER"

# Fresh: both modules exist, are newer than the tarball and are for KVER.
fresh() {
	local m

	for m in siw siw_crc; do
		[ -f "$OUT/$m.ko" ] && [ "$OUT/$m.ko" -nt "$TARBALL" ] || return 1
		[ "$(modinfo -F vermagic "$OUT/$m.ko" 2>/dev/null | cut -d' ' -f1)" = "$KVER" ] ||
			return 1
	done
}
if fresh; then
	say "cached: $OUT/siw.ko $OUT/siw_crc.ko ($KVER)"
	echo "$OUT/siw.ko"
	echo "$OUT/siw_crc.ko"
	exit 0
fi

# Serialised: two builds in one directory would trample each other.
exec 9>"$OUT/.lock" || die "cannot open $OUT/.lock"
flock -w 600 9 || die "waited 600 s for $OUT/.lock"
fresh && {
	echo "$OUT/siw.ko"
	echo "$OUT/siw_crc.ko"
	exit 0
}

SRC=$OUT/src
rm -rf "$SRC" "$OUT/siw" "$OUT/siw_crc" "$OUT/siw.ko" "$OUT/siw_crc.ko"
mkdir -p "$SRC" || die "cannot make $SRC"
say "extracting drivers/infiniband/sw/siw from $TARBALL"
tar -xJf "$TARBALL" -C "$SRC" --wildcards 'linux-source-6.1/drivers/infiniband/sw/siw/*' ||
	die "tar could not extract the siw directory"
SIW=$SRC/linux-source-6.1/drivers/infiniband/sw/siw
[ -f "$SIW/siw_main.c" ] && [ -f "$SIW/Makefile" ] || die "no siw sources in $TARBALL"

# make_one NAME: copies the source to OUT/NAME and builds NAME.ko there.
make_one() {
	local name=$1 dir=$OUT/$1

	cp -r "$SIW" "$dir" || return 1
	if [ "$name" = siw_crc ]; then
		# The one behavioural change: ask for (and insist on) MPA CRC.
		# (6.1 declares it 'const bool mpa_crc_required;', i.e. false.)
		sed -i -E 's/^const bool mpa_crc_required( = false)?;$/const bool mpa_crc_required = true;/' \
			"$dir/siw_main.c" || return 1
		grep -q '^const bool mpa_crc_required = true;' "$dir/siw_main.c" || {
			echo "siw_main.c has no 'const bool mpa_crc_required;' line" >&2
			return 1
		}
		# The module's name, so that it can sit beside siw.ko.
		sed -i -E 's/^obj-\$\(CONFIG_RDMA_SIW\) \+= siw\.o$/obj-$(CONFIG_RDMA_SIW) += siw_crc.o/;
			s/^siw-y :=/siw_crc-y :=/' "$dir/Makefile" || return 1
		grep -q '^siw_crc-y :=' "$dir/Makefile" || {
			echo "siw's Makefile has no 'siw-y :=' line" >&2
			return 1
		}
	fi
	make -C "$KDIR" M="$dir" CONFIG_RDMA_SIW=m CC=gcc-12 -j2 modules >"$dir/build.log" 2>&1 || {
		tail -30 "$dir/build.log" >&2
		return 1
	}
	# Anything but the known BTF note is a compiler message worth seeing.
	grep -E 'warning:|error:' "$dir/build.log" >&2
	cp "$dir/$name.ko" "$OUT/$name.ko.new" && mv "$OUT/$name.ko.new" "$OUT/$name.ko"
}
for m in siw siw_crc; do
	start=$SECONDS
	make_one "$m" || die "building $m.ko failed"
	say "built $OUT/$m.ko in $((SECONDS - start)) s"
done
rm -rf "$SRC"
fresh || die "the modules built are not for $KVER"
echo "$OUT/siw.ko"
echo "$OUT/siw_crc.ko"
