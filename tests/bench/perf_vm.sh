#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# perf_vm.sh [--build DIR] [--boots N] [--csv FILE] [--plot FILE]
#            [NAME=VALUE...]: boots the VM lab with the swiw.ko of build
# DIR and the kernel's siw (build_siw.sh builds it from Debian's
# linux-source) and prints stock ib_write_bw, ib_read_lat and
# ib_write_lat figures of swiw on the in-process engine and on the kernel
# helper, the kernel's siw and rxe, and plain TCP (tcp_ref), all in the
# same boot (perf_vm_guest.sh), with the target's (server's) CPU time and
# issue 15's aims for the kernel helper against siw per cell. With
# --boots N (default 1) it boots N times and ends with the medians over
# the boots (perf_vm_agg.py), --csv and --plot (gnuplot; rendered for
# .svg/.png when gnuplot is installed) write them. NAME=VALUE goes to the
# guest: PERF_BW_SIZES, PERF_LAT_SIZES, PERF_WLAT_SIZES, PERF_BW_ITERS,
# PERF_LAT_ITERS, PERF_LAT_ROUNDS (runs of each latency cell a boot,
# default 3), PERF_PIN=1 (servers on CPU 1, clients on CPU 0). A
# benchmark, not a test.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${SWIW_BUILD:-}
envs=() BOOTS=1 CSV='' PLOT=''
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--boots) BOOTS=$2; shift 2 ;;
	--csv) CSV=$2; shift 2 ;;
	--plot) PLOT=$2; shift 2 ;;
	-h | --help) sed -n '3,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*=*) envs+=(--env "$1"); shift ;;
	*) echo "perf_vm: unknown argument $1" >&2; exit 2 ;;
	esac
done
[ -n "$BUILD" ] || { echo "perf_vm: --build DIR (or SWIW_BUILD) is required" >&2; exit 2; }
BUILD=$(cd "$BUILD" && pwd)
KO=$BUILD/tests/kernel/module/swiw/swiw.ko
[ -f "$KO" ] || { echo "perf_vm: $KO is missing (ctest -R kernel.build builds it)" >&2; exit 1; }
SIW=$(bash "$HERE/../interop/build_siw.sh" "$BUILD" | grep '/siw\.ko$') ||
	{ echo "perf_vm: build_siw.sh built no siw.ko" >&2; exit 1; }
[[ $BOOTS =~ ^[1-9][0-9]*$ ]] || { echo "perf_vm: --boots takes a count" >&2; exit 2; }
boot() {
	SWIW_BUILD=$BUILD bash "$HERE/../vm/run.sh" --timeout 1500 --module "$KO" \
		--module "$SIW" "${envs[@]}" -- bash "$HERE/perf_vm_guest.sh"
}
if [ "$BOOTS" -eq 1 ] && [ -z "$CSV$PLOT" ]; then
	boot
	exit
fi
out=$(mktemp -d "${TMPDIR:-/tmp}/perf_vm.XXXXXX") || exit 1
trap 'rm -rf "$out"' EXIT
outs=()
for ((b = 1; b <= BOOTS; b++)); do
	echo "== boot $b of $BOOTS"
	boot | tee "$out/boot.$b"
	[ "${PIPESTATUS[0]}" -eq 0 ] || { echo "perf_vm: boot $b failed" >&2; exit 1; }
	outs+=("$out/boot.$b")
done
echo "== over $BOOTS boots"
agg=()
[ -z "$CSV" ] || agg+=(--csv "$CSV")
[ -z "$PLOT" ] || agg+=(--plot "$PLOT")
python3 "$HERE/perf_vm_agg.py" "${agg[@]}" "${outs[@]}"
