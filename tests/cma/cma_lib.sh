# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Shared by the cma tests, after tests/lib/swiw_test.sh and
# tests/e2e/perftest_lib.sh:
# client/server pairs of librdmacm programs, which take the server's
# address rather than a device.

# cm_pair NAME SERVER-CMD... -- CLIENT-CMD...: the server in the background
# (in $PAIR_SNS if set), the client once it listens on $PORT (in
# $PAIR_CNS); both must exit 0. The client's output is $OUT, the server's
# stdout $SRV_OUT.
cm_pair() {
	local name=$1 cpre=()

	shift
	split_args "$@"
	serve "${PAIR_SNS:-}" "$PORT" "${SWIW[@]}" "${BEFORE[@]}" ||
		fail_served "$name: the server did not listen on port $PORT"
	[ -z "${PAIR_CNS:-}" ] || cpre=(ip netns exec "$PAIR_CNS")
	run "${cpre[@]}" "${SWIW[@]}" "${AFTER[@]}"
	served
	[ "$RC" -eq 0 ] && [ "$SRV_RC" -eq 0 ] ||
		fail_served "$name: client exit $RC, server exit $SRV_RC"
	SRV_OUT=$(cat "$T_TMP/srv.out")
}

# rping_pair ADDR [OPTION]: 100 verbose pings (OPTION, e.g. -q, to both); the client must print exactly 100
# well-formed lines, rdma-ping-0 to -99, each with its rotating pattern.
rping_pair() {
	local addr=$1 opt=("${@:2}") bad

	PORT=$((10000 + RANDOM % 20000))
	cm_pair rping rping -s "${opt[@]}" -a "$addr" -p "$PORT" -v -C 100 -- \
		rping -c "${opt[@]}" -a "$addr" -p "$PORT" -v -C 100
	assert_count "$OUT" '^ping data: rdma-ping-[0-9]+: ' 100 "rping -c"
	bad=$(printf '%s\n' "$OUT" | grep '^ping data: ' | awk '
		{
			n = $3; sub(/^rdma-ping-/, "", n); sub(/:$/, "", n)
			if (n != NR - 1) { print "line " NR ": number " n; exit }
			p = ""
			for (i = 0; i < length($4); i++)
				p = p sprintf("%c", 65 + (n + i) % 58)
			if ($4 != p) { print "line " NR ": pattern " $4; exit }
		}')
	[ -z "$bad" ] || fail_last "rping -c: malformed ping data: $bad"
	assert_count "$SRV_OUT" '^server ping data: rdma-ping-' 100 "rping -s"
	pass "rping ${opt[*]} -c -a $addr -C 100 -v: 100 well-formed pings"
}

# cm_perftest PROG REPORT ARGS...: perftest with -R (rdma_cm); the pair
# from perftest_lib.sh, which handles "Can't produce a report".
cm_perftest() {
	local prog=$1 report=$2

	shift 2
	pair "$prog" "$report" -R "$@"
}

ucmatose_pair() {
	local addr=$1

	PORT=$((10000 + RANDOM % 20000))
	cm_pair ucmatose ucmatose -p "$PORT" -c 2 -C 20 -- \
		ucmatose -s "$addr" -p "$PORT" -c 2 -C 20
	out_has '^test complete$'
	assert_has "$SRV_OUT" '^disconnected$' "ucmatose server"
	pass "ucmatose: 2 connections, 20 messages each, to $addr"
}

rdma_server_pair() {
	local addr=$1

	PORT=$((10000 + RANDOM % 20000))
	cm_pair rdma_server rdma_server -p "$PORT" -- \
		rdma_client -s "$addr" -p "$PORT"
	out_has '^rdma_client: end 0$'
	assert_has "$SRV_OUT" '^rdma_server: end 0$' "rdma_server"
	pass "rdma_server/rdma_client (synchronous endpoints) to $addr"
}

# rping_no_rtr [N]: rping as the MPA initiator, offering only a Send RTR,
# against mpa_responder.py, which names a Write RTR as siw does. Each of N
# (default 10) connections must fail in rping with CONNECT_ERROR and
# bring the responder the TERMINATE "No Matching RTR" before the FIN,
# although rping exits on that very CM event.
rping_no_rtr() {
	local n=${1:-10} i

	need_cmd python3
	PORT=$((10000 + RANDOM % 20000))
	serve '' "$PORT" python3 "$(dirname "${BASH_SOURCE[0]}")/mpa_responder.py" \
		"$PORT" "$n" || fail_served "mpa_responder.py did not listen on $PORT"
	for ((i = 0; i < n; i++)); do
		run env SWIW_MPA_RTR=send "${SWIW[@]}" rping -c -a 127.0.0.1 \
			-p "$PORT" -C 1
		[ "$RC" -ne 0 ] && grep -q 'RDMA_CM_EVENT_CONNECT_ERROR' <<<"$ERR" ||
			fail_last "rping against a Write RTR it did not offer: CONNECT_ERROR expected"
	done
	served 10
	[ "$SRV_RC" -eq 0 ] || fail_served "the responder missed a TERMINATE"
	pass "rping, Send RTR only, against a Write RTR Reply: $n TERMINATEs (No Matching RTR) before FIN"
}
