#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# capture_check.sh PCAP CRC [MARKER-ADDR...]: judges a capture of live
# iWARP connections with Wireshark's own dissectors. CRC (yes|no): whether
# CRC was negotiated. MARKER-ADDR: the IP addresses of the peers that
# asked for markers (so FPDUs towards them carry them). Checked:
# - every MPA Request and Reply has M set exactly when its sender is one
#   of those, and C clear when CRC is off;
# - no FPDU has a bad CRC, none is malformed (the RPC-over-RDMA and SMB
#   Direct heuristics, which misread arbitrary Send payloads, are off:
#   PROTOCOL.md §4); with CRC on, some decode with "Good CRC32";
# - with markers, FPDUs towards a side that asked carry them;
# - the DDP sequences are right (ddp_sequence.py).
# Wireshark's MPA dissector (packet-iwarp-mpa.c, 4.0) reads markers only
# when both directions carry them and each TCP segment is one FPDU: a
# connection with markers one way only is judged on its Request/Reply
# flags alone, and the caller keeps FPDUs one per segment when markers
# are on (small ping-pong messages, segmentation offloads off).
# Prints one summary line; exits 1 on any failure.
here=$(dirname "$0")
. "$here/../lib/swiw_test.sh"
cap=$1 crc=$2
shift 2
maddr=" $* "
need_cmd tshark python3
wants() { [[ "$maddr" == *" $1 "* ]]; }

ts=(tshark -n -r "$cap" --disable-heuristic rpcrdma_iwarp
	--disable-heuristic smb_direct_iwarp)

# The handshakes: stream, request (1) or reply (empty), C, M, source.
"${ts[@]}" -Y 'iwarp_mpa.req || iwarp_mpa.rep' -T fields -E separator=';' \
	-e tcp.stream -e iwarp_mpa.req -e iwarp_mpa.crc_flag -e iwarp_mpa.marker_flag \
	-e ip.src >"$T_TMP/rr" 2>/dev/null
nrr=$(wc -l <"$T_TMP/rr")
[ "$nrr" -ge 2 ] || check_fail "$nrr MPA Request/Reply frames decoded"
declare -A mstreams=() oneway=()
while IFS=';' read -r stream req c m src; do
	what=Reply
	[ -n "$req" ] && what=Request
	case "$c" in True | 1) c=1 ;; *) c=0 ;; esac
	case "$m" in True | 1) m=1 ;; *) m=0 ;; esac
	want=0
	wants "$src" && want=1
	[ "$m" = "$want" ] || check_fail "stream $stream $what from $src: M=$m, expected $want"
	[ "$crc" = yes ] || [ "$c" = 0 ] ||
		check_fail "stream $stream $what from $src: C set, CRC expected off"
	mstreams[$stream]=$((${mstreams[$stream]:-0} + m))
done <"$T_TMP/rr"
judge=()
for s in "${!mstreams[@]}"; do
	if [ "${mstreams[$s]}" -eq 1 ]; then
		oneway[$s]=1
	else
		judge+=("tcp.stream == $s")
	fi
done
if [ "${#judge[@]}" -eq 0 ]; then
	echo "capture: $nrr MPA frames; markers one way only on every stream: flags judged, FPDUs not (see capture_check.sh)"
	[ "$T_FAILED" -eq 0 ]
	exit
fi
filter=$(printf ' || %s' "${judge[@]}")
filter=${filter# || }
# Retransmitted and reordered segments (TCG's slow timers cause spurious
# ones) are left out: the MPA dissector does not reassemble, so it reads
# them from a wrong start; the receiver's own CRC check covered them.
# One line each, with its direction, where ddp_sequence.py takes a
# forward jump as a gap.
"${ts[@]}" -Y "($filter) && (tcp.analysis.retransmission || tcp.analysis.out_of_order)" \
	-T fields -E separator=';' -e tcp.stream -e tcp.srcport >"$T_TMP/retx" 2>/dev/null
retx=$(wc -l <"$T_TMP/retx")
DDP_GAP_SIDES=$(sort -u "$T_TMP/retx" | tr '\n' ' ')
export DDP_GAP_SIDES
filter="($filter) && !tcp.analysis.retransmission && !tcp.analysis.out_of_order"

"${ts[@]}" -Y "$filter" -V >"$T_TMP/decode" 2>"$T_TMP/err" || { cat "$T_TMP/err"; fail "tshark"; }
bad=$(grep -c 'Bad CRC32' "$T_TMP/decode")
good=$(grep -c 'Good CRC32' "$T_TMP/decode")
# Dissector exceptions, and FPDUs whose length does not fit their segment.
mal=$("${ts[@]}" -Y "($filter) && (_ws.malformed || iwarp_mpa.bad_length)" 2>/dev/null | wc -l)
[ "$bad" -eq 0 ] || check_fail "$bad bad CRCs"
[ "$mal" -eq 0 ] || {
	"${ts[@]}" -Y "($filter) && (_ws.malformed || iwarp_mpa.bad_length)" 2>/dev/null | head
	check_fail "$mal malformed"
}
if [ "$crc" = yes ]; then
	[ "$good" -gt 0 ] || check_fail "CRC on, but no FPDU has a good CRC"
fi

# With markers on a stream, FPDUs towards each side carry some.
"${ts[@]}" -Y "($filter) && iwarp_mpa.fpdu" -T fields -E separator=';' -E occurrence=f \
	-e tcp.stream -e ip.dst -e iwarp_mpa.marker_fpduptr >"$T_TMP/fpdus" 2>/dev/null
marked=0
for s in "${!mstreams[@]}"; do
	[ -z "${oneway[$s]:-}" ] && [ "${mstreams[$s]}" -eq 2 ] || continue
	for dst in $(awk -F';' -v s="$s" '$1 == s { print $2 }' "$T_TMP/fpdus" | sort -u); do
		n=$(awk -F';' -v s="$s" -v d="$dst" '$1 == s && $2 == d && $3 != ""' "$T_TMP/fpdus" | wc -l)
		[ "$n" -gt 0 ] || check_fail "stream $s: no marker decoded towards $dst"
		marked=$((marked + n))
	done
done

"${ts[@]}" -Y "($filter) && iwarp_ddp" -T fields -E separator=";" -E occurrence=a -E aggregator=, \
	-e tcp.stream -e tcp.srcport -e iwarp_mpa.ulpdulength -e iwarp_ddp.tagged_flag \
	-e iwarp_ddp.last_flag -e iwarp_rdma.opcode -e iwarp_ddp.qn -e iwarp_ddp.msn \
	-e iwarp_ddp.mo -e iwarp_ddp.stag -e iwarp_ddp.tagged_offset >"$T_TMP/fields" 2>/dev/null
python3 "$here/ddp_sequence.py" "$T_TMP/fields" || check_fail "DDP sequences (above)"

echo "capture: $nrr MPA frames, $good Good CRC32, $bad Bad CRC32, $mal malformed, $marked FPDUs with markers, $retx retransmitted or reordered segments left out (crc $crc, markers asked by:${maddr% })"
[ "$T_FAILED" -eq 0 ]
