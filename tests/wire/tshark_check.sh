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
set -u
prog=$1
command -v tshark >/dev/null || { echo "FAIL: tshark is not installed"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/swiw-tshark.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cap=$tmp/iwarp.pcap

"$prog" "$cap" >"$tmp/summary" || { echo "FAIL: $prog failed"; exit 1; }
fpdus=$(awk '$1 == "fpdus" { print $2 }' "$tmp/summary")
opcodes=$(awk '$1 == "opcodes" { $1 = ""; print }' "$tmp/summary")
rr=$(awk '$1 == "mpa_frames" { print $2 }' "$tmp/summary")
cat "$tmp/summary"

ts=(tshark -n -r "$cap" --disable-heuristic rpcrdma_iwarp
	--disable-heuristic smb_direct_iwarp)
"${ts[@]}" -V >"$tmp/decode" 2>"$tmp/err" || { cat "$tmp/err"; echo "FAIL: tshark"; exit 1; }
fail=0
bad=$(grep -c 'Bad CRC32' "$tmp/decode")
good=$(grep -c 'Good CRC32' "$tmp/decode")
mal=$(grep -ci 'malformed' "$tmp/decode")
rrs=$("${ts[@]}" -Y 'iwarp_mpa.req || iwarp_mpa.rep' | wc -l)
echo "tshark: $good Good CRC32, $bad Bad CRC32, $mal malformed, $rrs MPA Request/Reply frames"
[ "$bad" -eq 0 ] || { echo "FAIL: tshark found bad CRCs"; fail=1; }
[ "$mal" -eq 0 ] || { grep -i -B20 malformed "$tmp/decode" | head -60; echo "FAIL: malformed frames"; fail=1; }
[ "$good" -eq "$fpdus" ] || { echo "FAIL: $good good CRCs, the program framed $fpdus FPDUs"; fail=1; }
[ "$rrs" -eq "$rr" ] || { echo "FAIL: $rrs Request/Reply frames decoded, $rr sent"; fail=1; }

"${ts[@]}" -Y iwarp_ddp -T fields -E separator=";" -E occurrence=a -E aggregator=, \
	-e tcp.stream -e tcp.srcport -e iwarp_mpa.ulpdulength -e iwarp_ddp.tagged_flag \
	-e iwarp_ddp.last_flag -e iwarp_rdma.opcode -e iwarp_ddp.qn -e iwarp_ddp.msn \
	-e iwarp_ddp.mo -e iwarp_ddp.stag -e iwarp_ddp.tagged_offset >"$tmp/fields"
python3 "$(dirname "$0")/ddp_sequence.py" "$tmp/fields" "$opcodes" || fail=1
[ $fail -eq 0 ] && echo "ok: tshark decodes the conversation clean"
exit $fail
