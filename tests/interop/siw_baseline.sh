#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# interop.siw_baseline, the host side: builds siw.ko and siw_crc.ko
# (build_siw.sh), boots the VM lab with both (one boot; the guest swaps
# them), runs siw_guest.sh there (rping and perftest -R, siw against siw,
# CRC off and on), keeps every capture and judges each here with tshark
# (tests/wire/capture_check.sh: tshark is slow under TCG). Prints the
# matrix tool x CRC -> pass/fail and figure, then "N passed, N failed".
# This is the baseline the swiw <-> siw runs of issue 6 sit beside.
# SIW_BASELINE_KEEP=DIR: the captures and results are copied to DIR.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
: "${SWIW_BUILD:?SWIW_BUILD is not set (the swiw build directory)}"
CHECK=$HERE/../wire/capture_check.sh
pass=0 failed=0

command -v tshark >/dev/null || {
	echo "FAIL: tshark is not installed"
	echo "0 passed, 1 failed"
	exit 1
}
mods=$(bash "$HERE/build_siw.sh" "$SWIW_BUILD") || {
	echo "FAIL: build_siw.sh"
	echo "0 passed, 1 failed"
	exit 1
}
mapfile -t mods <<<"$mods"
keep=$(mktemp -d "${TMPDIR:-/tmp}/swiw-siwlab.XXXXXX") || exit 1
trap 'rm -rf "$keep"' EXIT

bash "$HERE/../vm/run.sh" --timeout "${SIW_BASELINE_TIMEOUT:-300}" \
	--module "${mods[0]}" --module "${mods[1]}" --keep "$keep" -- \
	bash "$HERE/siw_guest.sh"
rc=$?
if [ "$rc" -eq 0 ]; then
	pass=$((pass + 1))
	echo "ok - guest run"
else
	failed=$((failed + 1))
	echo "FAIL: guest run (exit $rc)"
fi

# Ten runs: five tools, CRC off and on.
n=$(wc -l <"$keep/results" 2>/dev/null || echo 0)
if [ "$n" -ne 10 ]; then
	echo "FAIL: $n results kept, 10 expected"
	failed=$((failed + 1))
fi

declare -A cell=()
while read -r tool crc res fig unit pcap; do
	if [ "$res" = PASS ]; then
		if out=$(bash "$CHECK" "$keep/$pcap" "$crc" 2>&1); then
			echo "ok - $pcap: $(tail -1 <<<"$out")"
		else
			echo "$out"
			echo "FAIL: $pcap: the capture does not decode clean"
			res=FAIL
		fi
	else
		echo "FAIL: $tool crc $crc: the run failed in the guest"
	fi
	if [ "$res" = PASS ]; then pass=$((pass + 1)); else failed=$((failed + 1)); fi
	if [ "$res" = PASS ]; then
		cell[$tool,$crc]="pass $fig $unit"
	else
		cell[$tool,$crc]="FAIL"
	fi
done <"$keep/results"

if [ -n "${SIW_BASELINE_KEEP:-}" ]; then
	mkdir -p "$SIW_BASELINE_KEEP" && cp -r "$keep/." "$SIW_BASELINE_KEEP/" &&
		echo "kept the captures in $SIW_BASELINE_KEEP"
fi
echo
echo "siw <-> siw in the VM lab (QEMU TCG; figures are the client's)"
printf '%-12s %-22s %-22s\n' tool "CRC off (siw.ko)" "CRC on (siw_crc.ko)"
for tool in rping ib_send_bw ib_write_bw ib_read_bw ib_send_lat; do
	printf '%-12s %-22s %-22s\n' "$tool" "${cell[$tool,no]:-missing}" \
		"${cell[$tool,yes]:-missing}"
done
echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
