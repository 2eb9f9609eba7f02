# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Shared by the cma tests, after tests/e2e/lib.sh and perftest_lib.sh:
# client/server pairs of librdmacm programs, which take the server's
# address rather than a device.

# cm_pair NAME SERVER-CMD... -- CLIENT-CMD...: the server in the
# background (in $PAIR_SNS if set), the client once it listens on $PORT
# (in $PAIR_CNS); both must exit 0. The client's output is $OUT.
cm_pair() {
	local name=$1 pid srv_rc spre=() cpre=() srv=()

	shift
	while [ "$1" != -- ]; do
		srv+=("$1")
		shift
	done
	shift
	[ -n "${PAIR_SNS:-}" ] && spre=(ip netns exec "$PAIR_SNS")
	[ -n "${PAIR_CNS:-}" ] && cpre=(ip netns exec "$PAIR_CNS")
	timeout -k 5 "$T_LIMIT" "${spre[@]}" "${SWIW[@]}" "${srv[@]}" \
		>"$T_TMP/srv.out" 2>"$T_TMP/srv.err" &
	pid=$!
	on_exit "kill $pid"
	SRV_PID=$pid
	wait_until 20 "$name server listening on $PORT" server_up \
		"${PAIR_SNS:-}" "$PORT"
	run "${cpre[@]}" "${SWIW[@]}" "$@"
	wait "$pid"
	srv_rc=$?
	if [ "$RC" -ne 0 ] || [ "$srv_rc" -ne 0 ]; then
		cat "$T_TMP/srv.out" "$T_TMP/srv.err" >&2
		show_last >&2
		fail "$name: client exit $RC, server exit $srv_rc"
	fi
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
