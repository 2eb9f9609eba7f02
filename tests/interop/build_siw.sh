#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# build_siw.sh BUILD_DIR: builds the Linux kernel's siw out of tree from
# Debian's linux-source-6.1, for the kernel ABI the VM lab boots
# (tests/vm/run.sh: SWIW_VM_KVER, else the installed linux-headers', else
# the archive's), as modules under BUILD_DIR/interop/, each from the same
# source with one constant changed (6.1 has no module parameters for them:
# /work/shared/LAB.md §1, "What breaks" 4) and the module's name:
#   siw.ko      stock siw: MPA rev 2, CRC never asked for, no peer-to-peer
#   siw_crc.ko  mpa_crc_required = true: asks for (and insists on) CRC
#   siw_p2p.ko  peer_to_peer = true: its Requests set Control Flag A and
#               offer RDMA Write and Read RTRs (siw_cm.c rtr_type)
#   siw_v1.ko   mpa_version = MPA_REVISION_1: its Requests are MPA rev 1
# (As responder every variant answers in the Request's revision and takes
# peer-to-peer whatever its own constants say.) All are kept and rebuilt
# only when missing or older than the source tarball. Installs what it
# lacks with apt-get. Prints the paths, in that order.
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
VARIANTS='siw siw_crc siw_p2p siw_v1'

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

	for m in $VARIANTS; do
		[ -f "$OUT/$m.ko" ] && [ "$OUT/$m.ko" -nt "$TARBALL" ] || return 1
		[ "$(modinfo -F vermagic "$OUT/$m.ko" 2>/dev/null | cut -d' ' -f1)" = "$KVER" ] ||
			return 1
	done
}
paths() {
	local m

	for m in $VARIANTS; do
		echo "$OUT/$m.ko"
	done
}
if fresh; then
	say "cached: $(paths | tr '\n' ' ')($KVER)"
	paths
	exit 0
fi

# Serialised: two builds in one directory would trample each other.
exec 9>"$OUT/.lock" || die "cannot open $OUT/.lock"
flock -w 600 9 || die "waited 600 s for $OUT/.lock"
fresh && {
	paths
	exit 0
}

SRC=$OUT/src
rm -rf "$SRC"
for m in $VARIANTS; do
	rm -rf "${OUT:?}/$m" "$OUT/$m.ko"
done
mkdir -p "$SRC" || die "cannot make $SRC"
say "extracting drivers/infiniband/sw/siw from $TARBALL"
tar -xJf "$TARBALL" -C "$SRC" --wildcards 'linux-source-6.1/drivers/infiniband/sw/siw/*' ||
	die "tar could not extract the siw directory"
SIW=$SRC/linux-source-6.1/drivers/infiniband/sw/siw
[ -f "$SIW/siw_main.c" ] && [ -f "$SIW/Makefile" ] || die "no siw sources in $TARBALL"

# patch_one FILE FROM TO: FROM (an ERE matching one whole line of FILE)
# becomes TO; fails when the line is not there (another source version).
patch_one() {
	sed -i -E "s/^$2\$/$3/" "$1" || return 1
	grep -qxF "$3" "$1" || {
		echo "${1##*/} has no line matching '$2'" >&2
		return 1
	}
}

# make_one NAME: copies the source to OUT/NAME and builds NAME.ko there.
make_one() {
	local name=$1 dir=$OUT/$1

	cp -r "$SIW" "$dir" || return 1
	# The one behavioural change of each variant.
	case $name in
	siw) ;;
	siw_crc)
		# 6.1: 'const bool mpa_crc_required;', i.e. false.
		patch_one "$dir/siw_main.c" 'const bool mpa_crc_required( = false)?;' \
			'const bool mpa_crc_required = true;' || return 1
		;;
	siw_p2p)
		patch_one "$dir/siw_main.c" 'const bool peer_to_peer( = false)?;' \
			'const bool peer_to_peer = true;' || return 1
		;;
	siw_v1)
		patch_one "$dir/siw_main.c" 'u_char mpa_version = MPA_REVISION_2;' \
			'u_char mpa_version = MPA_REVISION_1;' || return 1
		;;
	*) return 1 ;;
	esac
	if [ "$name" != siw ]; then
		# The module's name, so that it can sit beside siw.ko.
		sed -i -E "s/^obj-\\\$\(CONFIG_RDMA_SIW\) \+= siw\.o\$/obj-\$(CONFIG_RDMA_SIW) += $name.o/;
			s/^siw-y :=/$name-y :=/" "$dir/Makefile" || return 1
		grep -q "^$name-y :=" "$dir/Makefile" && grep -q "+= $name.o\$" "$dir/Makefile" || {
			echo "siw's Makefile has no 'siw-y :=' or 'obj-... += siw.o' line" >&2
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
for m in $VARIANTS; do
	start=$SECONDS
	make_one "$m" || die "building $m.ko failed"
	say "built $OUT/$m.ko in $((SECONDS - start)) s"
done
rm -rf "$SRC"
fresh || die "the modules built are not for $KVER"
paths
