# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Live traffic judged by Wireshark: the stock ibv_rc_pingpong, ib_write_bw
# and ib_read_bw across two network namespaces joined by a veth pair
# (MTU 1500, so FPDUs are cut to the real MSS), captured on the veth with
# dumpcap, for each MPA setting a peer can ask for: CRC off and on,
# markers in neither, one or both directions. tests/wire/capture_check.sh
# decodes each capture: the Request/Reply flags as asked, no bad CRC, no
# malformed frame, markers exactly towards the sides that asked, DDP
# sequences right.
#
# SWIW_CAPTURE_SERVER_ENV / SWIW_CAPTURE_CLIENT_ENV (NAME=VALUE words) add
# to each side's environment: the VM lab runs this with one side on the
# kernel helper (SWIW_ENGINE=kernel) and the other in-process. With
# SWIW_CAPTURE_DEFER=DIR the captures go to DIR with a manifest (file,
# CRC, marker addresses: capture_check.sh's arguments) instead of being
# judged here; tests/vm/capture.sh judges them on the lab's host.
# SWIW_CAPTURE_KEEP=DIR keeps the captures that fail.
# SWIW_CAPTURE_SETTINGS=all (the default), framing, or yynn,...: the
# settings to run (capture_sets.sh).
. "$(dirname "$0")/../lib/swiw_test.sh"
need_swiw

need_cmd ibv_rc_pingpong ib_write_bw ib_read_bw dumpcap tshark mergecap \
	ethtool ip ss
need_root

. "$(dirname "$0")/perftest_lib.sh"

CHECK=$(cd "$(dirname "$0")/../wire" && pwd)/capture_check.sh
pair_netns cap 23
no_offloads "$NSA" capa
no_offloads "$NSB" capb

# capture_start / capture_stop CAP: each side's packets are captured as
# they leave it, on its own end of the veth: received packets can reach
# a capture out of order (the backlog of another CPU), and Wireshark's
# MPA dissector, which does not reassemble, would misread them. Drops
# fail the run. A refused TCP connection to a port (its SYN leaves B, its
# RST leaves A) marks the start and the end in both.
capture_start() {
	dumpcap_start "$NSA" capa "tcp and src host 10.23.0.1" "$T_TMP/a.pcap"
	dumpcap_start "$NSB" capb "tcp and src host 10.23.0.2" "$T_TMP/b.pcap"
	wait_until 60 "dumpcap capturing on capa and capb" dumpcap_probe "$NSB" 10.23.0.1 9
}

capture_stop() {
	wait_until 60 "dumpcap has written the traffic" dumpcap_probe "$NSB" 10.23.0.1 19
	dumpcap_stop || fail "the capture cannot be judged"
	mergecap -F pcap -w "$1" "$T_TMP/a.pcap" "$T_TMP/b.pcap" ||
		fail "mergecap"
}

# pingpong SIZE: ibv_rc_pingpong with -c, which checks every message's
# contents on both sides (and only says so on stderr).
pingpong() {
	pair ibv_rc_pingpong '^[0-9]+ bytes in [0-9.]+ seconds' -g 0 -n 100 -s "$1" -c
	err_lacks 'invalid data'
	! grep -q 'invalid data' "$T_TMP/srv.err" ||
		fail "ibv_rc_pingpong server: $(grep -m1 'invalid data' "$T_TMP/srv.err")"
}

# one CRC_S MARKERS_S CRC_C MARKERS_C: server and client ask for these
# (yes|no); a ping-pong and bulk transfers both ways.
one() {
	local cs=$1 ms=$2 cc=$3 mc=$4 cap crc=no addrs=()

	cap=$T_TMP/cap-$cs$ms$cc$mc.pcap
	{ [ "$cs" = yes ] || [ "$cc" = yes ]; } && crc=yes
	[ "$ms" = yes ] && addrs+=(10.23.0.1)
	[ "$mc" = yes ] && addrs+=(10.23.0.2)
	capture_start
	export PAIR_SENV="SWIW_MPA_CRC=$cs SWIW_MPA_MARKERS=$ms ${SWIW_CAPTURE_SERVER_ENV:-}"
	export PAIR_CENV="SWIW_MPA_CRC=$cc SWIW_MPA_MARKERS=$mc ${SWIW_CAPTURE_CLIENT_ENV:-}"
	pingpong 3000
	pair ib_write_bw "$BW" -x 0 -n 50 -s 65536
	pair ib_read_bw "$BW" -x 0 -n 30 -s 100000
	capture_stop "$cap"
	if [ -n "${SWIW_CAPTURE_DEFER:-}" ]; then
		# Judged elsewhere (the VM lab's host, where tshark is fast).
		mkdir -p "$SWIW_CAPTURE_DEFER" && cp "$cap" "$SWIW_CAPTURE_DEFER/$$-${cap##*/}" &&
			echo "$$-${cap##*/} $crc ${addrs[*]}" >>"$SWIW_CAPTURE_DEFER/manifest" ||
			fail "cannot keep $cap in $SWIW_CAPTURE_DEFER"
		pass "server crc $cs markers $ms, client crc $cc markers $mc: captured, judged later"
		return
	fi
	if ! bash "$CHECK" "$cap" "$crc" "${addrs[@]}" >"$T_TMP/check.out" 2>&1; then
		cat "$T_TMP/check.out" >&2
		if [ -n "${SWIW_CAPTURE_KEEP:-}" ]; then
			cp "$cap" "$SWIW_CAPTURE_KEEP/" && note "kept $SWIW_CAPTURE_KEEP/${cap##*/}"
		fi
		fail "capture (server crc $cs markers $ms, client crc $cc markers $mc)"
	fi
	pass "server crc $cs markers $ms, client crc $cc markers $mc: $(tail -1 "$T_TMP/check.out")"
}

# SETTINGS: each a word of four y/n, the arguments of one() in order.
# Without markers, and with them both ways: every FPDU judged, by
# Wireshark or, where it cannot size one, by capture_check.sh's walk.
# Markers one way: the walk judges the framing and every marker
# (Wireshark 4.0 cannot), and with CRC a marker out of place would fail
# the CRC or the framing at the receiver, and the programs with it.
. "$(dirname "$0")/capture_sets.sh"
settings=$(capture_settings "${SWIW_CAPTURE_SETTINGS:-all}")
[[ $settings =~ ^[yn]{4}(,[yn]{4})*$ ]] ||
	fail "SWIW_CAPTURE_SETTINGS=$settings: all, framing, or words of four y/n, comma-separated"
yn() { [ "$1" = y ] && echo yes || echo no; }
IFS=, read -ra words <<<"$settings"
for w in "${words[@]}"; do
	one "$(yn "${w:0:1}")" "$(yn "${w:1:1}")" "$(yn "${w:2:1}")" "$(yn "${w:3:1}")"
done
