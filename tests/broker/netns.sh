# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Connecting QPs by (GID, QPN) between two network namespaces joined by a
# veth link, each with the broker its first process starts: roles, IPv4
# and IPv6, a peer whose RTR comes late (held, then past the hold time and
# retried), a host guessing numbers, a broker that is not there yet, and
# the error when nobody answers.
#
#   $NS1: v1 10.77.0.1/24, 10.77.0.3/24, fd00:77::1/64
#   $NS2: v2 10.77.0.2/24, fd00:77::2/64
. "$(dirname "$0")/../lib/swiw_test.sh"
need_swiw

TOOL=${SWIW_BROKER_TOOL:-}
[ -x "$TOOL" ] || fail "SWIW_BROKER_TOOL must name the swiw_broker_tool executable"
[ -x "${SWIW_BROKER:-}" ] || fail "SWIW_BROKER must name the swiw-broker executable"
export SWIW_BROKER
# Brokers hold a Request they do not hand over this long (default 5 s).
export SWIW_BROKER_HOLD_MS=2500

NS1=swiw-brk-$$-$RANDOM
NS2=$NS1-peer
# The brokers our programs start in them go with the namespaces.
veth_pair "$NS1" v1 10.77.0.1 "$NS2" v2 10.77.0.2
note "namespaces $NS1 and $NS2"
ns_ip "$NS1" addr add 10.77.0.3/24 dev v1
ns_ip "$NS1" addr add fd00:77::1/64 dev v1 nodad
ns_ip "$NS2" addr add fd00:77::2/64 dev v2 nodad

# tool NS OUTFILE ARGS...: runs the tool in NS in the background; $! is it.
tool_bg() {
	local ns=$1 out=$2

	shift 2
	timeout -k 5 "$T_LIMIT" ip netns exec "$ns" "$TOOL" "$@" \
		>"$out" 2>&1 &
}

# wait_tool PID OUTFILE: its exit status in $RC, its output in $OUT.
wait_tool() {
	wait "$1"
	RC=$?
	OUT=$(cat "$2")
	ERR='' LAST="swiw_broker_tool ($2)"
	[ "$RC" -ne 124 ] || fail_last "timed out"
}

# field NAME TEXT: the value of NAME=... in TEXT.
field() {
	printf '%s\n' "$2" | sed -n "s/.*\<$1=\([^ ]*\).*/\1/p" | head -n 1
}

# pair TAG ADDR1 ADDR2 [ARGS2...]: both sides of a pair, $NS1 with ADDR1,
# $NS2 with ADDR2 (and ARGS2); their outputs in $OUT1 and $OUT2.
pair() {
	local tag=$1 a1=$2 a2=$3 p1 p2 rc1

	shift 3
	rm -f "$T_TMP/$tag".*
	tool_bg "$NS1" "$T_TMP/$tag.1" pair --local "$a1" --peer "$a2" \
		--out "$T_TMP/$tag.q1" --in "$T_TMP/$tag.q2"
	p1=$!
	tool_bg "$NS2" "$T_TMP/$tag.2" pair --local "$a2" --peer "$a1" \
		--out "$T_TMP/$tag.q2" --in "$T_TMP/$tag.q1" "$@"
	p2=$!
	wait_tool $p1 "$T_TMP/$tag.1"
	rc1=$RC OUT1=$OUT
	wait_tool $p2 "$T_TMP/$tag.2"
	OUT2=$OUT
	OUT="[$NS1]
$OUT1
[$NS2]
$OUT2"
	[ "$rc1" -eq 0 ] && [ "$RC" -eq 0 ] ||
		fail_last "$tag: a side failed (exit $rc1 and $RC)"
	assert_has "$OUT1" "^role=initiator$" "$tag: role of the smaller GID"
	assert_has "$OUT2" "^role=responder$" "$tag: role of the larger GID"
	Q1=$(field qpn "$OUT1") Q2=$(field qpn "$OUT2")
	assert_has "$OUT1" "^connected qpn=$Q1 peer_qpn=$Q2 " "$tag: initiator"
	assert_has "$OUT2" "^connected qpn=$Q2 peer_qpn=$Q1 peer=$(re_quote "$a1") " \
		"$tag: responder"
}

# --- a broker that is not there yet -------------------------------------------
# Nothing runs in $NS2 yet; its program (here the broker alone) starts 1 s
# after the initiator begins to connect.
tool_bg "$NS1" "$T_TMP/dial" dial --peer 10.77.0.2 --timeout-ms 8000
DIAL=$!
sleep 1
ip netns exec "$NS2" "$SWIW_BROKER" --idle-ms 3000 &
BRK=$!
wait_tool $DIAL "$T_TMP/dial"
assert_ok "dial while the peer's broker starts"
assert_has "$OUT" "^connected attempts=([3-9]|[1-9][0-9]+)$" "attempts"
pass "the initiator retries until the peer's broker is there ($(field attempts "$OUT") attempts)"
kill "$BRK" 2>/dev/null
wait "$BRK"

# --- pairs across the link --------------------------------------------------------
pair v4 10.77.0.1 10.77.0.2
B1=$(field broker_pid "$OUT1") B2=$(field broker_pid "$OUT2")
[ -n "$B1" ] && [ -n "$B2" ] && [ "$B1" != "$B2" ] ||
	fail_last "one broker per namespace: got '$B1' and '$B2'"
pass "IPv4 pair between namespaces: 10.77.0.1 QP $Q1 initiates to 10.77.0.2 QP $Q2 (brokers $B1, $B2)"

pair v6 fd00:77::1 fd00:77::2
pass "IPv6 pair between namespaces: fd00:77::1 QP $Q1 to fd00:77::2 QP $Q2"

# The responder's RTR comes 1.5 s after the initiator's: held, then matched.
pair late 10.77.0.1 10.77.0.2 --rtr-delay-ms 1500
assert_lacks "$OUT1" "trying again" "late: a held Request needs no retry"
pass "a Request that comes before the peer's RTR is held, then handed over"

# 6 s: past the 2.5 s hold, refused as not ready, retried, then connected.
pair later 10.77.0.1 10.77.0.2 --rtr-delay-ms 6000 --timeout-ms 15000
assert_has "$OUT1" "^rejected \(not ready\): trying again$" "later: retry"
pass "an RTR later than the hold time: NOT_READY, retried, connected"

# --- a host guessing numbers ------------------------------------------------------
# The real pair, with the initiator's RTR 1.5 s late; meanwhile others
# try the responder's QP with the right numbers from the wrong address,
# the wrong numbers from the right one, and a QP that does not exist.
rm -f "$T_TMP"/spoof.*
tool_bg "$NS1" "$T_TMP/spoof.1" pair --local 10.77.0.1 --peer 10.77.0.2 \
	--out "$T_TMP/spoof.q1" --in "$T_TMP/spoof.q2" --rtr-delay-ms 1500
P1=$!
tool_bg "$NS2" "$T_TMP/spoof.2" pair --local 10.77.0.2 --peer 10.77.0.1 \
	--out "$T_TMP/spoof.q2" --in "$T_TMP/spoof.q1"
P2=$!
have_qpns() { [ -s "$T_TMP/spoof.q1" ] && [ -s "$T_TMP/spoof.q2" ]; }
wait_until 10 "both sides to take QP numbers" have_qpns
Q1=$(cat "$T_TMP/spoof.q1") Q2=$(cat "$T_TMP/spoof.q2")
sleep 0.3 # the responder is in RTR now
# A stranger hears, after the same hold, what a QP number nobody has
# gets: neither the reason nor the time tells it which QPs exist (the
# broker's log says what was wrong). The four run at once.
stranger() { # NAME ARGS...: a request in the background, timed
	local name=$1
	shift
	(
		t0=$(date +%s%N)
		ip netns exec "$NS1" "$TOOL" request --peer 10.77.0.2 "$@" \
			--timeout-ms 8000 >"$T_TMP/$name.out" 2>&1
		echo "rc=$? ms=$((($(date +%s%N) - t0) / 1000000))" \
			>>"$T_TMP/$name.out"
	) &
}
stranger s_addr --bind 10.77.0.3 --src "$Q1" --dst "$Q2"
stranger s_qpn --bind 10.77.0.1 --src $((Q1 + 1)) --dst "$Q2"
stranger s_none --bind 10.77.0.1 --src "$Q1" --dst $(((Q2 + 4096) % 16777216))
stranger s_psn --bind 10.77.0.1 --src "$Q1" --dst "$Q2" --sq-psn 0x123
wait_strangers() { [ "$(cat "$T_TMP"/s_*.out 2>/dev/null | grep -c '^rc=')" = 4 ]; }
wait_until 20 "the four strangers' answers" wait_strangers
for s in s_addr s_qpn s_none s_psn; do
	OUT=$(cat "$T_TMP/$s.out")
	out_has "^rejected reason=4 "
	out_has "^rc=3 ms=(2[4-9][0-9][0-9]|3[0-9][0-9][0-9]|4[0-4][0-9][0-9])$"
done
# The first revision of the block carries no PSN: refused as a version.
run ip netns exec "$NS1" "$TOOL" request --peer 10.77.0.2 --bind 10.77.0.1 \
	--src "$Q1" --dst "$Q2" --first-block --timeout-ms 3000
assert_rc 3 "request with the first revision's block"
out_has "^rejected reason=8 "
wait_tool $P1 "$T_TMP/spoof.1"
assert_ok "the real initiator after the attempts"
assert_has "$OUT" "^connected qpn=$Q1 peer_qpn=$Q2 " "the real initiator"
wait_tool $P2 "$T_TMP/spoof.2"
assert_ok "the responder after the attempts"
assert_has "$OUT" "^connected qpn=$Q2 peer_qpn=$Q1 peer=10\.77\.0\.1 " \
	"the responder got the real one"
pass "wrong address, wrong QPN, unknown QPN, wrong PSN: refused alike, after the same hold; the real peer connects"

# --- nobody answers -----------------------------------------------------------------
# No broker on port 7950 anywhere: a clear error after the timeout.
run ip netns exec "$NS1" env SWIW_BROKER_PORT=7950 "$TOOL" dial \
	--peer 10.77.0.2 --timeout-ms 1000
assert_rc 4 "dial to a port without a broker"
out_has "^dial failed: Connection timed out \(last: Connection refused\)"
err_has "^swiw: cannot connect to the peer's swiw broker at 10\.77\.0\.2 port 7950: Connection refused \([0-9]+ attempts in 1000 ms\)"
pass "nobody listening: gives up after connect_timeout with a clear error"
