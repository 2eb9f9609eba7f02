#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# /init of the VM lab's initramfs (built by run.sh): loads the virtio-9p
# modules, mounts the host's root read-only with writable tmpfs where
# programs expect to write, the caller's module tree over /lib/modules and
# the labout share at /tmp/out, then runs $labscript on the host's root.
# The kernel passes labscript=, labmods= and labkeep= from its command line
# as environment variables.
BB=/bin/busybox
R=/newroot

# Any failure here powers the guest off at once: the host then reports
# that no exit status came back, with this message on the console.
fatal() {
	echo "lab-init: FAIL: $*"
	$BB sleep 1
	echo o >/proc/sysrq-trigger
	$BB sleep 10
}

$BB mount -t proc proc /proc
$BB mount -t sysfs sys /sys
$BB mount -t devtmpfs dev /dev
KVER=$($BB cat /kver)

for m in $($BB cat /mods/order); do
	$BB insmod "/mods/$m" || fatal "insmod $m"
done

$BB mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 hostroot $R ||
	fatal "cannot mount the host root over 9p"

# The module tree replaces the (empty) /lib/modules/$KVER of the host.
[ -n "$labmods" ] && [ -d "$R$labmods" ] || fatal "module tree '$labmods' not visible"
$BB mount --bind "$R$labmods" "$R/lib/modules/$KVER" ||
	fatal "cannot bind $labmods over /lib/modules/$KVER"

# Paths under the directories tmpfs hides are set aside, then put back.
i=0
for p in $(echo "$labkeep" | $BB tr : ' '); do
	$BB mkdir -p /keep/$i && $BB mount --bind "$R$p" /keep/$i || fatal "cannot keep $p"
	i=$((i + 1))
done

for d in tmp run var/tmp; do
	[ -d "$R/$d" ] || continue
	$BB mount -t tmpfs -o mode=1777 tmpfs "$R/$d" || fatal "cannot mount tmpfs on /$d"
done
$BB mount -t devtmpfs dev "$R/dev" || fatal "cannot mount /dev"
$BB mkdir -p "$R/dev/pts" "$R/dev/shm"
$BB mount -t devpts -o gid=5,mode=620 devpts "$R/dev/pts"
$BB mount -t tmpfs -o mode=1777 tmpfs "$R/dev/shm"
$BB mount -t proc proc "$R/proc" || fatal "cannot mount /proc"
$BB mount -t sysfs sys "$R/sys" || fatal "cannot mount /sys"

i=0
for p in $(echo "$labkeep" | $BB tr : ' '); do
	$BB mkdir -p "$R$p" && $BB mount --bind /keep/$i "$R$p" || fatal "cannot put back $p"
	$BB umount /keep/$i
	i=$((i + 1))
done

$BB mkdir -p "$R/tmp/out" "$R/run/lab/home"
$BB mount -t 9p -o trans=virtio,version=9p2000.L labout "$R/tmp/out" ||
	fatal "cannot mount the labout share"
[ -n "$labscript" ] && [ -r "$R$labscript" ] || fatal "labscript '$labscript' not readable"

$BB umount /proc /sys /dev 2>/dev/null
# Power off after the script. PID 1 then waits on a FIFO with bash's own
# read: no program can be run from 9p any more, and if init exited the
# kernel would panic.
exec $BB switch_root $R /bin/bash -c "/bin/bash \"$labscript\"; mkfifo /run/lab/halt;
	echo o >/proc/sysrq-trigger; read -r -t 60 <>/run/lab/halt"
