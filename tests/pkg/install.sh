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
#  2. in the root, with dkms and linux-headers-KVER (the VM lab's kernel)
#     installed: `dpkg -i swiw-dkms_*.deb`, whose postinst has DKMS build
#     swiw.ko for KVER, as it does when an image is made in a chroot (the
#     running kernel is the host's, so DKMS builds for every kernel with
#     headers). It runs at the host's speed: the same build under the
#     guest's TCG took seven minutes of the lab's time;
#  3. in the VM lab's guest (Debian's kernel KVER under QEMU), over a
#     writable overlay of the same root: DKMS names the module installed
#     for the running kernel, modprobe loads it, and the smoke test runs
#     on the kernel helper, which then unloads with a clean kernel log;
#  4. back on the host: `apt-get purge swiw swiw-dev swiw-dkms` leaves no
#     file of theirs behind, and DKMS's build and module are gone.
#
#   install.sh SRC DEBS OUT
# Environment: SWIW_BUILD (the VM lab's cache is under it), SWIW_PKG_MIRROR
# (default: the host's first Debian archive in its apt sources).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/pkg_lib.sh"

pkg_args "$1" "$3"
DEBS=$(cd "$2" && pwd) || fail "no .deb directory $2 (pkg.deb makes it)"
ARCH=$(dpkg --print-architecture)
need_root
need_cmd debootstrap chroot ip
for f in "swiw_${VERSION}_$ARCH" "swiw-dev_${VERSION}_all" "swiw-dkms_${VERSION}_all"; do
	[ -r "$DEBS/$f.deb" ] || fail "$DEBS/$f.deb is missing (pkg.deb builds it)"
done

mkdir -p "$OUT" || fail "cannot make $OUT"
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
root_left() {
	[ -z "$(root_procs)" ]
}
leave_root() {
	poll 10 root_left && return 0
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
on_exit unmount_root

unmount_root || fail "something is still mounted under $ROOT"
rm -rf --one-file-system "$ROOT" || fail "cannot remove the old $ROOT"

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

note "debootstrap --variant=minbase bookworm from $mirror (log: $OUT/debootstrap.log)"
start=$(date +%s)
debootstrap --variant=minbase --cache-dir="$CACHE" bookworm "$ROOT" "$mirror" \
	>"$OUT/debootstrap.log" 2>&1 || {
	tail -20 "$OUT/debootstrap.log"
	fail "debootstrap failed"
}
note "clean root in $(($(date +%s) - start)) s"
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

mount_root

note "apt-get install ./swiw_${VERSION}_$ARCH.deb ./swiw-dev_${VERSION}_all.deb"
in_root apt-get -q update >"$OUT/apt.log" 2>&1 || {
	tail -20 "$OUT/apt.log"
	fail "apt-get update in the root failed"
}
if ! in_root sh -c "cd /var/cache/swiw-debs && apt-get install -y -q \
	./swiw_${VERSION}_$ARCH.deb ./swiw-dev_${VERSION}_all.deb" >>"$OUT/apt.log" 2>&1; then
	tail -30 "$OUT/apt.log"
	fail "apt-get install of swiw failed"
fi
in_root dpkg-query -W -f='    ${Package} ${Version} ${Status}\n' swiw swiw-dev ibverbs-utils libibverbs1

# swiw's own files, for the purge check at the end.
in_root dpkg -L swiw swiw-dev | sort >"$OUT/installed.files"
# The broker's socket unit is enabled, as Debian enables services.
WANTS=/etc/systemd/system/sockets.target.wants/swiw-broker.socket
if [ -L "$ROOT$WANTS" ]; then
	check_pass "swiw-broker.socket is enabled ($WANTS)"
else
	check_fail "swiw-broker.socket was not enabled on install"
fi

# The host part runs in a network namespace of its own.
netns_add "$NS"

# debian/tests/smoke, the package's autopkgtest: ibv_devinfo and an
# ibv_rc_pingpong pair, here on the in-process engine.
install -m 755 "$SRC/debian/tests/smoke" "$ROOT/root/swiw-smoke"
if in_ns "$NS" chroot "$ROOT" "${PKG_ROOT_ENV[@]}" /root/swiw-smoke in-process \
	>"$OUT/smoke.txt" 2>&1; then
	grep -E 'hca_id|fw_ver|bytes in|smoke:' "$OUT/smoke.txt" | sed 's/^/    /'
	check_pass "installed swiw-run ibv_devinfo and ibv_rc_pingpong pair, in-process engine"
else
	sed 's/^/    /' "$OUT/smoke.txt"
	check_fail "the installed swiw on the in-process engine (debian/tests/smoke)"
fi

# --- the kernel helper, in the VM ----------------------------------------
KVER=$(SWIW_BUILD=${SWIW_BUILD:-} bash "$SRC/tests/vm/run.sh" --kver) ||
	fail "the VM lab cannot pick a kernel"
note "apt-get install dkms linux-headers-$KVER (the guest's kernel)"
if ! in_root apt-get install -y -q --no-install-recommends dkms "linux-headers-$KVER" \
	>>"$OUT/apt.log" 2>&1; then
	tail -30 "$OUT/apt.log"
	fail "apt-get install dkms linux-headers-$KVER failed"
fi
note "dpkg -i swiw-dkms_${VERSION}_all.deb: DKMS builds swiw.ko for $KVER"
start=$(date +%s)
if ! timeout 600 chroot "$ROOT" "${PKG_ROOT_ENV[@]}" \
	dpkg -i "/var/cache/swiw-debs/swiw-dkms_${VERSION}_all.deb" >"$OUT/dkms.log" 2>&1; then
	tail -30 "$OUT/dkms.log"
	fail "dpkg -i swiw-dkms failed (log: $OUT/dkms.log)"
fi
status=$(in_root dkms status swiw 2>&1)
echo "    dkms status: $status ($(($(date +%s) - start)) s)"
DKMS_KO=/lib/modules/$KVER/updates/dkms/swiw.ko
if grep -q "swiw/$VERSION, $KVER, .*: installed" <<<"$status" && [ -f "$ROOT$DKMS_KO" ]; then
	check_pass "swiw-dkms: DKMS built and installed $DKMS_KO"
else
	tail -30 "$OUT/dkms.log"
	fail "DKMS did not install swiw for $KVER (log: $OUT/dkms.log)"
fi
{ cat "$OUT/installed.files" && in_root dpkg -L swiw-dkms; } | sort -u -o "$OUT/installed.files"
unmount_root || fail "cannot unmount the root's /proc, /sys, /dev"

note "in the VM: DKMS's module for the guest's kernel, modprobe, the pair on the helper"
SWIW_BUILD=${SWIW_BUILD:-} bash "$SRC/tests/vm/run.sh" --timeout 480 -- \
	bash "$HERE/install_guest.sh" "$ROOT" "$VERSION" 2>&1 | tee "$OUT/vm.log"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || check_fail "the VM part (exit $rc; log $OUT/vm.log)"

# --- removal ---------------------------------------------------------------
mount -t proc proc "$ROOT/proc" && mount --bind /dev "$ROOT/dev" ||
	fail "cannot mount /proc, /dev in the root"
if ! in_root apt-get purge -y -q swiw swiw-dev swiw-dkms >>"$OUT/apt.log" 2>&1; then
	tail -20 "$OUT/apt.log"
	check_fail "apt-get purge swiw swiw-dev swiw-dkms failed"
else
	left=0
	while IFS= read -r f; do
		# Files and links the packages shipped; not directories (the
		# unit path's /lib is the system's usrmerge link).
		[ -f "$ROOT$f" ] || [ -L "$ROOT$f" ] || continue
		[ -d "$ROOT$f" ] && continue
		echo "    left behind: $f"
		left=1
	done <"$OUT/installed.files"
	for f in /etc/swiw /var/lib/dkms/swiw "$DKMS_KO" "$WANTS"; do
		[ -e "$ROOT$f" ] && echo "    left behind: $f" && left=1
	done
	[ $left -eq 0 ] && check_pass "apt-get purge swiw swiw-dev swiw-dkms: nothing left behind" ||
		check_fail "files left behind after the purge"
fi

pkg_end
