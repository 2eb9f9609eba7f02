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
# First mpa_resegment.py walks every FPDU of each MPA connection itself
# (failing on a hole, a retransmission that differs, FPDUs that do not
# end where the data does, or a marker that points elsewhere) and
# rewrites the capture with one FPDU per TCP segment: TCP cuts across
# FPDUs when a window or congestion limit leaves a short segment, and
# the dissector, which does not follow FPDUs through that or through
# retransmissions, then reads headers from inside an FPDU. So every FPDU
# is judged, whatever TCP did with it.
# Wireshark's MPA dissector (packet-iwarp-mpa.c, 4.0) reads markers only
# when both directions carry them: a connection with markers one way only
# is judged by the walk and on its Request/Reply flags. It also miscounts
# the markers of an FPDU that ends on a marker point; the walk leaves
# those FPDUs out, checks their CRC and hands their DDP headers to
# ddp_sequence.py.
# Prints one summary line; exits 1 on any failure.
here=$(dirname "$0")
. "$here/../lib/swiw_test.sh"
cap=$1 crc=$2
shift 2
maddr=" $* "
need_cmd tshark python3
wants() { [[ "$maddr" == *" $1 "* ]]; }

need_cmd editcap
editcap -F pcap "$cap" "$T_TMP/in.pcap" || fail "editcap cannot read $cap"
python3 "$here/mpa_resegment.py" "$T_TMP/in.pcap" "$T_TMP/whole.pcap" >"$T_TMP/walk" ||
	check_fail "the FPDU walk: $(grep -m5 FAIL "$T_TMP/walk")"
[ -s "$T_TMP/whole.pcap" ] || fail "mpa_resegment.py wrote nothing"
ts=("${TSHARK_IWARP[@]}" -r "$T_TMP/whole.pcap")

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
	echo "capture: $(sed -n 's/^resegmented: //p' "$T_TMP/walk"); $nrr MPA frames; markers one way only on every stream: flags and the walk judged, Wireshark's FPDU decode not (see capture_check.sh)"
	[ "$T_FAILED" -eq 0 ]
	exit
fi
filter=$(printf ' || %s' "${judge[@]}")
filter=${filter# || }
# Each judged direction: the FPDUs the walk found, and those it left out
# to read itself. Wireshark must decode every other one; ddp_sequence.py
# takes the walk's rows in their place (DDP_EXTRA).
"${ts[@]}" -Y "tcp.flags.syn == 1" -T fields -E separator=' ' -e ip.src -e tcp.srcport \
	-e ip.dst -e tcp.dstport -e tcp.stream >"$T_TMP/syns" 2>/dev/null
# stream_of SRC SPORT DST DPORT: the TCP stream index of that connection.
stream_of() {
	awk -v c="$*" '$1 " " $2 " " $3 " " $4 == c { print $5; exit }' "$T_TMP/syns"
}
judged() {
	[[ " ${judge[*]} " == *" tcp.stream == $1 "* ]]
}
nwant=0
skipped=0
while read -r _ src sport dst dport n left; do
	s=$(stream_of "$src" "$sport" "$dst" "$dport")
	judged "$s" || continue
	nwant=$((nwant + n - left))
	skipped=$((skipped + left))
done < <(grep '^direction ' "$T_TMP/walk")
: >"$T_TMP/extra"
while read -r _ src sport dst dport seq fields; do
	s=$(stream_of "$src" "$sport" "$dst" "$dport")
	! judged "$s" || echo "$s;$sport;$fields;$seq" >>"$T_TMP/extra"
done < <(grep '^row ' "$T_TMP/walk")
export DDP_EXTRA=$T_TMP/extra

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
	-e iwarp_ddp.mo -e iwarp_ddp.stag -e iwarp_ddp.tagged_offset -e tcp.seq \
	>"$T_TMP/fields" 2>/dev/null
python3 "$here/ddp_sequence.py" "$T_TMP/fields" || check_fail "DDP sequences (above)"
got=$(awk -F';' '{ n += split($6, a, ",") } END { print n + 0 }' "$T_TMP/fields")
[ "$got" -eq "$nwant" ] ||
	check_fail "Wireshark decoded $got DDP segments, the walk found $nwant for it"

echo "capture: $(sed -n 's/^resegmented: //p' "$T_TMP/walk"); $nrr MPA frames, $good Good CRC32, $bad Bad CRC32, $mal malformed, $marked FPDUs with markers, $skipped left to the walk (crc $crc, markers asked by:${maddr% })"
[ "$T_FAILED" -eq 0 ]
