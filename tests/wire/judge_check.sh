#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# judge_check.sh WIRE_CAPTURE: capture_check.sh, the judge of live
# captures, on conversations cut as a loaded TCP stack cuts them
# (wire_capture --cut): segments ending inside FPDUs, a retransmission
# with other bounds, an FPDU Wireshark 4.0 cannot size; and once more with
# two segments captured in the wrong order, as a receiver's capture may
# hold them. Unflawed, every FPDU must be judged and pass; each flaw must
# fail it, for its reason.
. "$(dirname "$0")/../lib/swiw_test.sh"
prog=$1
check=$(dirname "$0")/capture_check.sh
need_cmd tshark editcap python3

judge() {
	"$prog" --cut "$1" "$T_TMP/$1.pcap" >/dev/null || fail "wire_capture --cut $1"
	bash "$check" "$T_TMP/$1.pcap" yes 10.0.0.1 10.0.0.2 >"$T_TMP/$1.out" 2>&1
}

# unflawed FLAW WHAT: the cut FLAW must pass with every FPDU judged.
unflawed() {
	local summary fpdus good left

	if judge "$1"; then
		summary=$(tail -1 "$T_TMP/$1.out")
		[[ "$summary" =~ ([0-9]+)\ FPDUs.*\ ([0-9]+)\ Good\ CRC32.*\ ([0-9]+)\ left\ to ]] ||
			check_fail "$1: no summary: $summary"
		fpdus=${BASH_REMATCH[1]} good=${BASH_REMATCH[2]} left=${BASH_REMATCH[3]}
		if [ "$left" -gt 0 ] && [ $((good + left)) -eq "$fpdus" ]; then
			check_pass "$2: $summary"
		else
			check_fail "$2: not every FPDU judged: $summary"
		fi
	else
		cat "$T_TMP/$1.out"
		check_fail "$2, no flaw: the judge failed it"
	fi
}
unflawed none "cut across FPDUs"
unflawed reorder "a segment captured after the one behind it"

while read -r flaw why; do
	if judge "$flaw"; then
		cat "$T_TMP/$flaw.out"
		check_fail "$flaw: the judge passed it"
	elif grep -q -- "$why" "$T_TMP/$flaw.out"; then
		check_pass "$flaw: failed, $(grep -m1 -o -- "$why.*" "$T_TMP/$flaw.out")"
	else
		cat "$T_TMP/$flaw.out"
		check_fail "$flaw: failed, but not with \"$why\""
	fi
done <<'FLAWS'
hole are missing from the capture
retx differs from the first transmission
marker the marker at octet
length the FPDUs run to octet
crc has a bad CRC
FLAWS
checks_end
