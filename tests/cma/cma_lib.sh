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
