#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The VM lab: boots Debian's own 6.1 kernel under QEMU TCG with the host's
# root shared read-only over virtio-9p, runs one command in it as root and
# exits with that command's exit status (see README.md beside this file and
# /work/shared/LAB.md for why each step is done the way it is).
#
#   run.sh [--module FILE.ko]... [--timeout S] [--env NAME=VALUE]...
#          [--mem MB] [--smp N] [--console] [--interactive] [--keep DIR]
#          -- COMMAND...
#   run.sh --kver
#
#   --keep DIR: what the guest wrote under /tmp/out/keep is copied to DIR
#   --kver: prints the kernel ABI a run would boot (SWIW_VM_KVER's rules)
#
# Environment:
#   SWIW_VM_CACHE  where the kernel, its module trees and the initramfs are
#                  kept between runs (default: $SWIW_BUILD/vm, else build/vm)
#   SWIW_VM_KVER   the kernel ABI to boot, e.g. 6.1.0-56-amd64 (default: the
#                  installed linux-headers' ABI, else the archive's current)
#   SWIW_BUILD     passed on to the guest command, like every --env
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
. "$REPO/tests/lib/swiw_test.sh"
# A failure of the lab itself, not of the guest's command.
T_NAME=vm
T_FAIL_STATUS=125

usage() {
	sed -n '/^#   run.sh/,/^#$/p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

MODULES=()
ENVS=()
TIMEOUT=''
MEM=2048
SMP=2
CONSOLE=0
INTERACTIVE=0
KEEP_DIR=''
PRINT_KVER=0
while [ $# -gt 0 ]; do
	case $1 in
	--kver)
		PRINT_KVER=1
		shift
		;;
	--module)
		[ $# -ge 2 ] || usage
		MODULES+=("$2")
		shift 2
		;;
	--timeout)
		[ $# -ge 2 ] && [[ $2 =~ ^[0-9]+$ ]] || usage
		TIMEOUT=$2
		shift 2
		;;
	--env)
		[ $# -ge 2 ] && [[ $2 =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || usage
		ENVS+=("$2")
		shift 2
		;;
	--mem)
		[ $# -ge 2 ] && [[ $2 =~ ^[0-9]+$ ]] || usage
		MEM=$2
		shift 2
		;;
	--smp)
		[ $# -ge 2 ] && [[ $2 =~ ^[0-9]+$ ]] || usage
		SMP=$2
		shift 2
		;;
	--console)
		CONSOLE=1
		shift
		;;
	--keep)
		[ $# -ge 2 ] && [ -d "$2" ] || usage
		KEEP_DIR=$2
		shift 2
		;;
	-i | --interactive)
		INTERACTIVE=1
		shift
		;;
	--)
		shift
		break
		;;
	-h | --help) usage ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || [ "$INTERACTIVE" -eq 1 ] || [ "$PRINT_KVER" -eq 1 ] || usage
[ $# -gt 0 ] || set -- bash -l
[ -n "$TIMEOUT" ] || [ "$INTERACTIVE" -eq 1 ] || TIMEOUT=600

if [ -n "${SWIW_VM_CACHE:-}" ]; then
	CACHE=$SWIW_VM_CACHE
elif [ -n "${SWIW_BUILD:-}" ]; then
	CACHE=$SWIW_BUILD/vm
else
	CACHE=$REPO/build/vm
fi
mkdir -p "$CACHE" || fail "cannot make the cache directory $CACHE"
CACHE=$(cd "$CACHE" && pwd -P)

# --- packages ------------------------------------------------------------
# Everything comes from Debian's archive; only what is missing is installed.
need_pkgs qemu-system-x86 busybox-static cpio kmod || fail "the lab's packages are missing"
for c in qemu-system-x86_64 busybox cpio gzip depmod modinfo flock apt-get dpkg-deb; do
	command -v "$c" >/dev/null || fail "required command '$c' is missing"
done

# Setting up the cache is serialised: ctest may run several VM tests at once.
exec 9>"$CACHE/.lock" || fail "cannot open $CACHE/.lock"
flock -w 900 9 || fail "waited 900 s for the lock on $CACHE"

# --- the kernel ----------------------------------------------------------
# One ABI for the image and the headers modules are built with: the
# installed headers' when that image is in the archive, else the one the
# archive's linux-image-amd64 and linux-headers-amd64 both name.
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
	[ -n "$img" ] || fail "apt-cache names no linux-image-6.1.0-*-amd64 (apt-get update?)"
	[ "$img" = "$hdr" ] ||
		fail "linux-image-amd64 wants $img but linux-headers-amd64 wants '$hdr'"
	[ -z "$h" ] || note "installed headers $h have no image in the archive; using $img" >&2
	echo "$img"
}
KVER=$(pick_kver) || exit 125
[[ $KVER =~ ^[0-9][0-9a-z.+-]*$ ]] || fail "bad kernel version '$KVER'"
if [ "$PRINT_KVER" -eq 1 ]; then
	echo "$KVER"
	exit 0
fi

KROOT=$CACHE/kernel-$KVER
if [ ! -e "$KROOT/.complete" ]; then
	note "downloading linux-image-$KVER into $KROOT (once)" >&2
	rm -rf "$KROOT" "$CACHE/dl"
	mkdir -p "$CACHE/dl" || fail "cannot make $CACHE/dl"
	# apt's sandbox user _apt may not reach the cache: download as root.
	dl=(apt-get -q -o APT::Sandbox::User=root download "linux-image-$KVER")
	# Stale package lists name a file the archive no longer has: refresh
	# them once.
	(cd "$CACHE/dl" && "${dl[@]}" >/dev/null) || {
		note "apt-get download failed; apt-get update and once more" >&2
		apt-get update -qq >&2
		(cd "$CACHE/dl" && "${dl[@]}" >/dev/null)
	} || fail "apt-get download linux-image-$KVER failed (network? apt-get update?)"
	deb=$(ls "$CACHE"/dl/linux-image-"$KVER"_*.deb 2>/dev/null | head -1)
	[ -n "$deb" ] || fail "apt-get download left no .deb in $CACHE/dl"
	dpkg-deb -x "$deb" "$KROOT" || fail "dpkg-deb -x $deb failed"
	rm -rf "$CACHE/dl"
	[ -r "$KROOT/boot/vmlinuz-$KVER" ] && [ -d "$KROOT/lib/modules/$KVER/kernel" ] ||
		fail "$deb holds no boot/vmlinuz-$KVER or lib/modules/$KVER"
	touch "$KROOT/.complete"
fi
VMLINUZ=$KROOT/boot/vmlinuz-$KVER

# --- module trees --------------------------------------------------------
# The .deb ships no modules.dep. A hard-linked copy of its tree gets the
# caller's modules under updates/ and is indexed by depmod; it is then
# bind-mounted over /lib/modules/$KVER in the guest, so modprobe (and the
# kernel's request_module) find everything.
make_modroot() {
	local dir=$1 tmp=$1.new m
	shift

	rm -rf "$tmp"
	mkdir -p "$tmp/lib/modules" || return 1
	cp -al "$KROOT/lib/modules/$KVER" "$tmp/lib/modules/" || return 1
	if [ $# -gt 0 ]; then
		mkdir -p "$tmp/lib/modules/$KVER/updates" || return 1
		for m in "$@"; do
			cp "$m" "$tmp/lib/modules/$KVER/updates/" || return 1
		done
	fi
	depmod -b "$tmp" "$KVER" || return 1
	rm -rf "$dir"
	mv "$tmp" "$dir"
}

BASE=$CACHE/modroot-$KVER
if [ ! -e "$BASE/lib/modules/$KVER/modules.dep" ]; then
	make_modroot "$BASE" || fail "cannot build the module tree $BASE"
fi
MODROOT=$BASE
if [ ${#MODULES[@]} -gt 0 ]; then
	names=()
	for m in "${MODULES[@]}"; do
		[ -f "$m" ] && [ "${m%.ko}" != "$m" ] || fail "--module $m: not a .ko file"
		vm=$(modinfo -F vermagic "$m" 2>/dev/null) || fail "--module $m: modinfo cannot read it"
		[ "${vm%% *}" = "$KVER" ] ||
			fail "--module $m: built for '${vm%% *}', the guest runs $KVER"
		n=$(basename "$m")
		[[ " ${names[*]-} " != *" $n "* ]] || fail "--module $n given twice"
		names+=("$n")
	done
	# Keyed by content: rebuilding a module gives a fresh tree, the same
	# set reuses one. Only the newest few are kept.
	key=$( (
		printf '%s\n' "${names[@]}"
		cat "${MODULES[@]}"
	) | sha256sum | cut -c1-16)
	MODROOT=$CACHE/modroot-$KVER-$key
	if [ ! -e "$MODROOT/lib/modules/$KVER/modules.dep" ]; then
		make_modroot "$MODROOT" "${MODULES[@]}" || fail "cannot build $MODROOT"
	fi
	touch "$MODROOT"
	ls -dt "$CACHE/modroot-$KVER"-* 2>/dev/null | tail -n +5 | xargs -r rm -rf
fi

# The bind mount needs its target on the (read-only) shared root.
if [ ! -d "/lib/modules/$KVER" ]; then
	[ "$(id -u)" -eq 0 ] || fail "/lib/modules/$KVER must exist (an empty directory will do)"
	mkdir -p "/lib/modules/$KVER" || fail "cannot make /lib/modules/$KVER"
fi

# --- the initramfs -------------------------------------------------------
# busybox, init.sh and the modules that mount 9p, in load order: each one's
# modules.dep list reversed, then itself.
DEP=$BASE/lib/modules/$KVER/modules.dep
order=()
add_mod() {
	local name=$1 line path deps d i

	line=$(grep -E "(^|/)$name\.ko(\.[a-z]+)?:" "$DEP" | head -1)
	if [ -z "$line" ]; then
		grep -qE "/$name\.ko$" "$BASE/lib/modules/$KVER/modules.builtin" && return 0
		fail "module $name is neither in modules.dep nor built in"
	fi
	path=${line%%:*}
	read -r -a deps <<<"${line#*:}"
	for ((i = ${#deps[@]} - 1; i >= 0; i--)); do
		d=$(basename "${deps[i]}")
		add_mod "${d%%.ko*}"
	done
	[[ " ${order[*]-} " == *" $path "* ]] || order+=("$path")
}
for m in virtio_pci 9pnet_virtio 9p; do
	add_mod "$m"
done

stamp=$( (
	cat "$HERE/init.sh" /bin/busybox
	printf '%s\n' "${order[@]}"
) | sha256sum | cut -c1-16)
INITRD=$CACHE/initrd-$KVER-$stamp.cpio.gz
if [ ! -e "$INITRD" ]; then
	st=$CACHE/initrd.new
	rm -rf "$st"
	mkdir -p "$st"/{bin,dev,proc,sys,newroot,keep,mods} || fail "cannot make $st"
	cp /bin/busybox "$st/bin/busybox" || fail "cannot copy busybox"
	cp "$HERE/init.sh" "$st/init" && chmod 0755 "$st/init" || fail "cannot copy init.sh"
	for p in "${order[@]}"; do
		case $p in
		*.ko) cp "$BASE/lib/modules/$KVER/$p" "$st/mods/" ;;
		*) fail "$p is compressed; busybox insmod needs plain .ko files" ;;
		esac || fail "cannot copy $p"
		basename "$p" >>"$st/mods/order"
	done
	echo "$KVER" >"$st/kver"
	(cd "$st" && find . | cpio -o -H newc --quiet | gzip -1) >"$INITRD.tmp" &&
		mv "$INITRD.tmp" "$INITRD" || fail "cannot build $INITRD"
	rm -rf "$st"
	for f in "$CACHE"/initrd-"$KVER"-*.cpio.gz; do
		[ "$f" = "$INITRD" ] || rm -f "$f"
	done
fi
flock -u 9

# --- the run -------------------------------------------------------------
RUN=$(mktemp -d "$CACHE/run.XXXXXX") || fail "cannot make a run directory"
OUT=$RUN/out
mkdir "$OUT" && chmod 0777 "$OUT" || fail "cannot make $OUT"
QPID=''
TPID=''
CPID=''
cleanup() {
	local p

	for p in "$QPID" "$TPID" "$CPID"; do
		[ -n "$p" ] && kill "$p" 2>/dev/null
	done
	rm -rf "$RUN"
}
on_exit cleanup

# The guest hides /tmp, /run, /var/tmp and /dev/shm under tmpfs; any path
# the command needs from there is bind-mounted back (labkeep=).
KEEP=()
need_path() {
	local p

	p=$(cd "$1" 2>/dev/null && pwd -P) || return 0
	case $p in
	/tmp | /tmp/* | /run | /run/* | /var/tmp | /var/tmp/* | /dev/shm | /dev/shm/*)
		[[ " ${KEEP[*]-} " == *" $p "* ]] || KEEP+=("$p")
		;;
	esac
}
for p in "$REPO" "$CACHE" "$PWD" "${SWIW_BUILD:-}"; do
	[ -n "$p" ] && need_path "$p"
done
for p in "$REPO" "$CACHE" "$PWD" "$MODROOT" "${KEEP[@]}"; do
	[[ $p =~ ^[A-Za-z0-9_./+@:-]*$ ]] ||
		fail "path '$p' has characters the kernel command line cannot carry"
done

# The guest command: run from the same directory with the given
# environment; its output and exit status go to the labout share, which
# is mounted at /tmp/out in the guest.
{
	echo '#!/bin/bash'
	echo 'export HOME=/run/lab/home PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
	for v in SWIW_BUILD SWIW_TEST_TIMEOUT; do
		[ -n "${!v:-}" ] && printf 'export %s=%q\n' "$v" "${!v}"
	done
	for e in "${ENVS[@]}"; do
		printf 'export %s=%q\n' "${e%%=*}" "${e#*=}"
	done
	printf 'cd %q || cd /\n' "$PWD"
	if [ "$INTERACTIVE" -eq 1 ]; then
		# A controlling terminal, so that ^C reaches the command.
		printf 'setsid -w -c %s </dev/ttyS0 >/dev/ttyS0 2>&1\n' "$(printf '%q ' "$@")"
	else
		printf '%s >/tmp/out/output 2>&1 </dev/null\n' "$(printf '%q ' "$@")"
	fi
	echo 'echo $? >/tmp/out/rc'
} >"$OUT/cmd.sh"
: >"$OUT/output"

APPEND="console=ttyS0 quiet panic=-1 labscript=/tmp/out/cmd.sh"
APPEND+=" labmods=$MODROOT/lib/modules/$KVER"
[ ${#KEEP[@]} -gt 0 ] && APPEND+=" labkeep=$(
	IFS=:
	echo "${KEEP[*]}"
)"
QEMU=(qemu-system-x86_64 -accel tcg -cpu max -m "$MEM" -smp "$SMP" -nographic
	-no-reboot -nic none -kernel "$VMLINUZ" -initrd "$INITRD" -append "$APPEND"
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap
	-virtfs "local,path=$OUT,mount_tag=labout,security_model=none")

start=$SECONDS
if [ "$INTERACTIVE" -eq 1 ]; then
	note "interactive guest ($KVER); power off with 'exit' (or Ctrl-A x)" >&2
	if [ -n "$TIMEOUT" ]; then
		timeout -k 10 "$TIMEOUT" "${QEMU[@]}"
	else
		"${QEMU[@]}"
	fi
	qrc=$?
else
	: >"$RUN/console"
	timeout -k 10 "$TIMEOUT" "${QEMU[@]}" </dev/null >"$RUN/console" 2>&1 &
	QPID=$!
	# The command's output as it is written (with --console, the guest's
	# console too, on stderr), to the end once QEMU is gone.
	tail --pid="$QPID" -n +1 -s 0.2 -f "$OUT/output" &
	TPID=$!
	if [ "$CONSOLE" -eq 1 ]; then
		tail --pid="$QPID" -n +1 -s 0.2 -f "$RUN/console" |
			sed -uE 's/\x1b(\[[0-9;?]*[A-Za-z]|c)//g; s/\r//g' >&2 &
		CPID=$!
	fi
	wait "$QPID"
	qrc=$?
	QPID=''
	wait "$TPID" ${CPID:+"$CPID"}
	TPID=''
	CPID=''
fi
took=$((SECONDS - start))
if [ -n "$KEEP_DIR" ] && [ -d "$OUT/keep" ]; then
	cp -r "$OUT/keep/." "$KEEP_DIR/" || fail "cannot copy the guest's files to $KEEP_DIR"
fi

console_tail() {
	[ "$CONSOLE" -eq 0 ] && [ -s "$RUN/console" ] || return 0
	echo "---- last lines of the guest console:" >&2
	tail -n 40 "$RUN/console" | sed -E 's/\x1b(\[[0-9;?]*[A-Za-z]|c)//g; s/\r//g' >&2
	echo "----" >&2
}
if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
	console_tail
	T_FAIL_STATUS=124 fail "the guest did not finish within ${TIMEOUT}s; QEMU was killed"
fi
if [ ! -s "$OUT/rc" ]; then
	console_tail
	fail "the guest reported no exit status (QEMU exit $qrc after ${took}s)"
fi
rc=$(cat "$OUT/rc")
[[ $rc =~ ^[0-9]+$ ]] || fail "the guest wrote a bad exit status '$rc'"
[ "$rc" -eq 0 ] || console_tail
note "guest $KVER: exit status $rc after ${took}s" >&2
exit "$rc"
