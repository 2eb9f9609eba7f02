#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# pkg.install, the guest side (install.sh runs it in the VM lab): the clean
# Debian root install.sh made, with swiw installed, gets a writable
# overlay (tmpfs over the read-only 9p view, so the host's copy stays
# as it was); swiw-dkms is installed in it, and DKMS built swiw.ko for
# this kernel there (install.sh). In it, as a user would: dkms status
# names the module installed for the running kernel; modprobe swiw; the
# package's autopkgtest debian/tests/smoke runs on the kernel helper
# (ibv_devinfo names it, an ibv_rc_pingpong pair); the module unloads and
# the kernel log is clean.
#
#   install_guest.sh ROOT VERSION
. "$(dirname "$0")/../vm/guest_lib.sh"
. "$(dirname "$0")/pkg_lib.sh"

LOWER=$1
VERSION=$2
ROOT=/run/pkg/root
T_LIMIT=120

t_root() {
	lab_lo_up
	lab_modprobe overlay
	mkdir -p /run/pkg/upper /run/pkg/work "$ROOT" &&
		mount -t overlay overlay \
			-o "lowerdir=$LOWER,upperdir=/run/pkg/upper,workdir=/run/pkg/work" "$ROOT" ||
		fail "cannot mount the overlay on $LOWER"
	# The lab's devtmpfs lacks what udev would add; DKMS needs /dev/fd.
	[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd || fail "no /dev/fd"
	mount_root
	# The kernel's own modules, as linux-image would have installed them,
	# so that DKMS's depmod and modprobe see swiw.ko's dependencies.
	local K=/lib/modules/$(uname -r)
	mkdir -p "$ROOT$K/kernel" && mount --bind "$K/kernel" "$ROOT$K/kernel" &&
		cp "$K"/modules.order "$K"/modules.builtin "$K"/modules.builtin.modinfo "$ROOT$K/" ||
		fail "cannot put the kernel's modules into the root"
	# DKMS's depmod ran before they were there; linux-image's would run
	# once they are.
	in_root depmod -a "$(uname -r)" || fail "depmod -a $(uname -r) in the root"
	in_root dpkg-query -W -f='${Package} ${Version} ${Status}\n' swiw dkms \
		"linux-headers-$(uname -r)" | sed 's/^/# /'
	[ -e "$ROOT/lib/modules/$(uname -r)/build" ] ||
		fail "no headers for $(uname -r) in the root"
}

t_dkms() {
	local out

	out=$(in_root dkms status swiw 2>&1)
	echo "# dkms status: $out"
	grep -q "swiw/$VERSION, $(uname -r), .*: installed" <<<"$out" ||
		fail "DKMS did not install swiw for $(uname -r)"
}

t_load() {
	local ko v

	ko=$(in_root modinfo -n swiw 2>&1)
	[ "$ko" = "/lib/modules/$(uname -r)/updates/dkms/swiw.ko" ] ||
		fail "modinfo -n swiw: $ko"
	v=$(in_root modinfo -F version swiw 2>&1)
	[ "$v" = "$VERSION" ] || fail "modinfo -F version swiw: '$v', not $VERSION"
	bounded chroot "$ROOT" modprobe swiw || fail "modprobe swiw"
	[ -c /dev/swiw ] || fail "no /dev/swiw after modprobe"
	echo "# $ko, version $v"
}

# debian/tests/smoke (install.sh put it in the root): ibv_devinfo names
# the kernel helper, and an ibv_rc_pingpong pair runs on it.
t_smoke() {
	local out

	out=$(T_LIMIT=300 bounded chroot "$ROOT" "${PKG_ROOT_ENV[@]}" \
		/root/swiw-smoke 'kernel helper' 2>&1)
	rc=$?
	echo "$out"
	[ $rc -eq 0 ] || fail "smoke: exit $rc"
	grep -E 'fw_ver|^client: 8192000 bytes' <<<"$out" | sed 's/^[[:space:]]*/# /'
}

note "guest $(uname -r), root $LOWER"
lab_test root t_root || lab_summary || exit 1
lab_test dkms t_dkms || lab_summary || exit 1
lab_test modprobe t_load || lab_summary || exit 1
lab_test smoke.kernel t_smoke
lab_test unload lab_swiw_unload
lab_test dmesg lab_dmesg_clean
lab_summary
