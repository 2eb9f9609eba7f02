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
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/swiw_test.sh"

[ $# -eq 1 ] || fail "usage: build_siw.sh BUILD_DIR"
mkdir -p "$1/interop" || fail "cannot make $1/interop"
OUT=$(cd "$1/interop" && pwd -P)
TARBALL=/usr/src/linux-source-6.1.tar.xz
VARIANTS='siw siw_crc siw_p2p siw_v1'

# The ABI tests/vm/run.sh boots, so that its --module check (vermagic
# against the booted kernel) accepts what is built here.
KVER=$(SWIW_BUILD=$1 bash "$HERE/../vm/run.sh" --kver) || fail "the VM lab cannot pick a kernel"
need_pkgs linux-source-6.1 "linux-headers-$KVER" make gcc-12 xz-utils kmod ||
	fail "cannot install what the build needs"
KDIR=/usr/src/linux-headers-$KVER
[ -r "$TARBALL" ] || fail "$TARBALL is missing after installing linux-source-6.1"
[ -d "$KDIR" ] || fail "$KDIR is missing after installing linux-headers-$KVER"

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
	note "cached: $(paths | tr '\n' ' ')($KVER)" >&2
	paths
	exit 0
fi

# Serialised: two builds in one directory would trample each other.
exec 9>"$OUT/.lock" || fail "cannot open $OUT/.lock"
flock -w 600 9 || fail "waited 600 s for $OUT/.lock"
fresh && {
	paths
	exit 0
}

SRC=$OUT/src
rm -rf "$SRC"
for m in $VARIANTS; do
	rm -rf "${OUT:?}/$m" "$OUT/$m.ko"
done
mkdir -p "$SRC" || fail "cannot make $SRC"
note "extracting drivers/infiniband/sw/siw from $TARBALL" >&2
tar -xJf "$TARBALL" -C "$SRC" --wildcards 'linux-source-6.1/drivers/infiniband/sw/siw/*' ||
	fail "tar could not extract the siw directory"
SIW=$SRC/linux-source-6.1/drivers/infiniband/sw/siw
[ -f "$SIW/siw_main.c" ] && [ -f "$SIW/Makefile" ] || fail "no siw sources in $TARBALL"

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
	make_one "$m" || fail "building $m.ko failed"
	note "built $OUT/$m.ko in $((SECONDS - start)) s" >&2
done
rm -rf "$SRC"
fresh || fail "the modules built are not for $KVER"
paths
