#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# pkg.install: the .debs pkg.deb built, installed as a user would into a
# clean Debian 12 root (debootstrap --variant=minbase), then used from the
# installed files only:
#  1. on the host, in the root and a network namespace of its own (so
#     no swiw broker or build of the host's is reachable): `apt-get
#     install ./swiw_*.deb ./swiw-dev_*.deb` (ibverbs-utils comes as a
#     Recommends), then the package's autopkgtest debian/tests/smoke:
#     `swiw-run ibv_devinfo` and an `ibv_rc_pingpong` pair on the
#     in-process engine;
#  2. in the VM lab's guest (Debian's kernel KVER under QEMU), over a
#     writable overlay of the same root: `dpkg -i swiw-dkms_*.deb`, DKMS
#     builds swiw.ko against linux-headers-KVER, modprobe loads it, and
#     the smoke test runs on the kernel helper, which then unloads with a
#     clean kernel log;
#  3. back on the host: `apt-get purge swiw swiw-dev` leaves no file of
#     theirs behind.
#
#   install.sh SRC DEBS OUT
# Environment: SWIW_BUILD (the VM lab's cache is under it), SWIW_PKG_MIRROR
# (default: the host's first Debian archive in its apt sources).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/pkg_lib.sh"

pkg_args "$1" "$3"
DEBS=$(cd "$2" && pwd) || pkg_die "no .deb directory $2 (pkg.deb makes it)"
ARCH=$(dpkg --print-architecture)
[ "$(id -u)" -eq 0 ] || pkg_die "needs root (debootstrap, chroot, mounts)"
pkg_need debootstrap chroot ip
for f in "swiw_${VERSION}_$ARCH" "swiw-dev_${VERSION}_all" "swiw-dkms_${VERSION}_all"; do
	[ -r "$DEBS/$f.deb" ] || pkg_die "$DEBS/$f.deb is missing (pkg.deb builds it)"
done

mkdir -p "$OUT" || pkg_die "cannot make $OUT"
OUT=$(cd "$OUT" && pwd -P)
ROOT=$OUT/root
CACHE=$OUT/../debootstrap-cache
mkdir -p "$CACHE" && CACHE=$(cd "$CACHE" && pwd -P)
NS=swiw-pkg-$$

# Processes left in the root (a broker exits 3 s after its last client):
# waited for up to 10 s, then killed.
root_procs() {
	local p

	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$ROOT" ] && echo "${p#/proc/}"
	done
}
leave_root() {
	local i

	for i in $(seq 100); do
		[ -z "$(root_procs)" ] && return 0
		sleep 0.1
	done
	root_procs | xargs -r kill -9 2>/dev/null
	sleep 0.5
}

# Nothing may stay mounted under the root: removing it would reach /dev.
unmount_root() {
	local m

	[ -d "$ROOT" ] || return 0
	leave_root
	for m in $(awk -v r="$ROOT" 'index($2, r "/") == 1 { print $2 }' /proc/mounts | sort -r); do
		umount -l "$m" 2>/dev/null
	done
	! awk -v r="$ROOT" 'index($2, r "/") == 1 { f = 1 } END { exit !f }' /proc/mounts
}
cleanup() {
	unmount_root
	ip netns del "$NS" 2>/dev/null
}
trap cleanup EXIT

unmount_root || pkg_die "something is still mounted under $ROOT"
rm -rf --one-file-system "$ROOT" || pkg_die "cannot remove the old $ROOT"

mirror=${SWIW_PKG_MIRROR:-}
if [ -z "$mirror" ]; then
	mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
		sed -nE 's|^URIs:[[:space:]]+(https?://[^ ]*/debian)/?$|\1|p' | head -1)
fi
if [ -z "$mirror" ]; then
	mirror=$(cat /etc/apt/sources.list 2>/dev/null |
		sed -nE 's|^deb[[:space:]]+(https?://[^ ]*/debian)/?[[:space:]]+bookworm[[:space:]].*|\1|p' | head -1)
fi
mirror=${mirror:-http://deb.debian.org/debian}

pkg_say "debootstrap --variant=minbase bookworm from $mirror (log: $OUT/debootstrap.log)"
start=$(date +%s)
debootstrap --variant=minbase --cache-dir="$CACHE" bookworm "$ROOT" "$mirror" \
	>"$OUT/debootstrap.log" 2>&1 || {
	tail -20 "$OUT/debootstrap.log"
	pkg_die "debootstrap failed"
}
pkg_say "clean root in $(($(date +%s) - start)) s"
# The archive the host uses, security updates included (linux-headers).
rm -f "$ROOT"/etc/apt/sources.list "$ROOT"/etc/apt/sources.list.d/*
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
	[ -f "$f" ] && cp "$f" "$ROOT$f"
done
[ -n "$(ls "$ROOT"/etc/apt/sources.list* 2>/dev/null)" ] ||
	echo "deb $mirror bookworm main" >"$ROOT/etc/apt/sources.list"
mkdir -p "$ROOT/var/cache/swiw-debs"
cp "$DEBS"/swiw*_"$VERSION"_*.deb "$ROOT/var/cache/swiw-debs/"
rm -f "$ROOT"/var/cache/swiw-debs/swiw-dbgsym_*

mount -t proc proc "$ROOT/proc" && mount -t sysfs sys "$ROOT/sys" &&
	mount --bind /dev "$ROOT/dev" && mount --bind /dev/pts "$ROOT/dev/pts" &&
	mount -t tmpfs tmpfs "$ROOT/run" && mount -t tmpfs tmpfs "$ROOT/tmp" ||
	pkg_die "cannot mount /proc, /sys, /dev, /run, /tmp in the root"

# in_root CMD...: CMD in the root with a minimal environment of its own.
in_root() {
	chroot "$ROOT" "${PKG_ROOT_ENV[@]}" "$@"
}

pkg_say "apt-get install ./swiw_${VERSION}_$ARCH.deb ./swiw-dev_${VERSION}_all.deb"
in_root apt-get -q update >"$OUT/apt.log" 2>&1 || {
	tail -20 "$OUT/apt.log"
	pkg_die "apt-get update in the root failed"
}
if ! in_root sh -c "cd /var/cache/swiw-debs && apt-get install -y -q \
	./swiw_${VERSION}_$ARCH.deb ./swiw-dev_${VERSION}_all.deb" >>"$OUT/apt.log" 2>&1; then
	tail -30 "$OUT/apt.log"
	pkg_die "apt-get install of swiw failed"
fi
in_root dpkg-query -W -f='    ${Package} ${Version} ${Status}\n' swiw swiw-dev ibverbs-utils libibverbs1

# swiw's own files, for the purge check at the end.
in_root dpkg -L swiw swiw-dev | sort >"$OUT/installed.files"

# The host part runs in a network namespace of its own.
ip netns add "$NS" && ip -n "$NS" link set lo up || pkg_die "cannot make netns $NS"
in_ns() {
	ip netns exec "$NS" chroot "$ROOT" "${PKG_ROOT_ENV[@]}" "$@"
}

# debian/tests/smoke, the package's autopkgtest: ibv_devinfo and an
# ibv_rc_pingpong pair, here on the in-process engine.
install -m 755 "$SRC/debian/tests/smoke" "$ROOT/root/swiw-smoke"
if in_ns /root/swiw-smoke in-process >"$OUT/smoke.txt" 2>&1; then
	grep -E 'hca_id|fw_ver|bytes in|smoke:' "$OUT/smoke.txt" | sed 's/^/    /'
	pkg_say "installed swiw-run ibv_devinfo and ibv_rc_pingpong pair, in-process engine: ok"
else
	sed 's/^/    /' "$OUT/smoke.txt"
	pkg_fail "the installed swiw on the in-process engine (debian/tests/smoke)"
fi

# --- the kernel helper, in the VM ----------------------------------------
KVER=$(SWIW_BUILD=${SWIW_BUILD:-} bash "$SRC/tests/vm/run.sh" --kver) ||
	pkg_die "the VM lab cannot pick a kernel"
pkg_say "apt-get install dkms linux-headers-$KVER (the guest's kernel)"
if ! in_root apt-get install -y -q --no-install-recommends dkms "linux-headers-$KVER" \
	>>"$OUT/apt.log" 2>&1; then
	tail -30 "$OUT/apt.log"
	pkg_die "apt-get install dkms linux-headers-$KVER failed"
fi
unmount_root || pkg_die "cannot unmount the root's /proc, /sys, /dev"

pkg_say "in the VM: dpkg -i swiw-dkms, DKMS build, modprobe, the pair on the helper"
SWIW_BUILD=${SWIW_BUILD:-} bash "$SRC/tests/vm/run.sh" --timeout 1200 -- \
	bash "$HERE/install_guest.sh" "$ROOT" "$VERSION" 2>&1 | tee "$OUT/vm.log"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || pkg_fail "the VM part (exit $rc; log $OUT/vm.log)"

# --- removal ---------------------------------------------------------------
mount -t proc proc "$ROOT/proc" && mount --bind /dev "$ROOT/dev" ||
	pkg_die "cannot mount /proc, /dev in the root"
if ! in_root apt-get purge -y -q swiw swiw-dev >>"$OUT/apt.log" 2>&1; then
	tail -20 "$OUT/apt.log"
	pkg_fail "apt-get purge swiw swiw-dev failed"
else
	left=0
	while IFS= read -r f; do
		[ -f "$ROOT$f" ] || [ -L "$ROOT$f" ] || continue
		echo "    left behind: $f"
		left=1
	done <"$OUT/installed.files"
	[ -e "$ROOT/etc/swiw" ] && echo "    left behind: /etc/swiw" && left=1
	[ $left -eq 0 ] && pkg_say "apt-get purge swiw swiw-dev: nothing left behind" ||
		pkg_fail "files left behind after the purge"
fi

pkg_end
