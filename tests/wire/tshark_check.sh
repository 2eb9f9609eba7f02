#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# tshark_check.sh CAPTURE-PROGRAM: writes swiw's synthetic iWARP
# conversation to a pcap and has Wireshark's own dissectors judge it:
# - every FPDU's CRC is "Good CRC32", none "Bad CRC32";
# - no frame is malformed (the RPC-over-RDMA and SMB Direct heuristics,
#   which misread arbitrary Send payloads, are off: PROTOCOL.md §4);
# - the DDP sequences are right, checked here from `tshark -T fields`,
#   independently of the program: per stream, direction and queue the MSN
#   starts at 1 and rises by one per message, MO runs on from 0 inside a
#   message, L marks exactly the last segment, tagged TOs run on;
# - every RDMAP opcode the program claims to have sent was decoded.
. "$(dirname "$0")/../lib/swiw_test.sh"
prog=$1
need_cmd tshark python3
cap=$T_TMP/iwarp.pcap

"$prog" "$cap" >"$T_TMP/summary" || fail "$prog failed"
fpdus=$(awk '$1 == "fpdus" { print $2 }' "$T_TMP/summary")
opcodes=$(awk '$1 == "opcodes" { $1 = ""; print }' "$T_TMP/summary")
rr=$(awk '$1 == "mpa_frames" { print $2 }' "$T_TMP/summary")
cat "$T_TMP/summary"

ts=("${TSHARK_IWARP[@]}" -r "$cap")
"${ts[@]}" -V >"$T_TMP/decode" 2>"$T_TMP/err" || { cat "$T_TMP/err"; fail "tshark"; }
bad=$(grep -c 'Bad CRC32' "$T_TMP/decode")
good=$(grep -c 'Good CRC32' "$T_TMP/decode")
mal=$(grep -ci 'malformed' "$T_TMP/decode")
rrs=$("${ts[@]}" -Y 'iwarp_mpa.req || iwarp_mpa.rep' | wc -l)
echo "tshark: $good Good CRC32, $bad Bad CRC32, $mal malformed, $rrs MPA Request/Reply frames"
[ "$bad" -eq 0 ] || check_fail "tshark found bad CRCs"
[ "$mal" -eq 0 ] || { grep -i -B20 malformed "$T_TMP/decode" | head -60; check_fail "malformed frames"; }
[ "$good" -eq "$fpdus" ] || check_fail "$good good CRCs, the program framed $fpdus FPDUs"
[ "$rrs" -eq "$rr" ] || check_fail "$rrs Request/Reply frames decoded, $rr sent"

"${ts[@]}" -Y iwarp_ddp -T fields -E separator=";" -E occurrence=a -E aggregator=, \
	-e tcp.stream -e tcp.srcport -e iwarp_mpa.ulpdulength -e iwarp_ddp.tagged_flag \
	-e iwarp_ddp.last_flag -e iwarp_rdma.opcode -e iwarp_ddp.qn -e iwarp_ddp.msn \
	-e iwarp_ddp.mo -e iwarp_ddp.stag -e iwarp_ddp.tagged_offset >"$T_TMP/fields"
python3 "$(dirname "$0")/ddp_sequence.py" "$T_TMP/fields" "$opcodes" ||
	check_fail "DDP sequences (above)"
[ "$T_FAILED" -eq 0 ] || exit 1
pass "tshark decodes the conversation clean"
