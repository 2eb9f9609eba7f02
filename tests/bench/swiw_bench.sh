# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# bench.swiw_bench: swiw-bench's ping over swiw_lo through librdmacm, every
# operation busy-polled and on completion events, two sizes each, a line
# of figures per size; a connection request that is no swiw-bench point
# (rping's) is turned away and the server goes on; bad options are usage
# errors. The figures themselves are not judged.
. "$(dirname "$0")/../lib/swiw_test.sh"
need_swiw
need_cmd rping

BENCH=$SWIW_BUILD/bin/swiw-bench
T_LIMIT=${SWIW_TEST_TIMEOUT:-60}
NUM='[0-9]+\.[0-9]{2}'
# bytes, iterations, then min, max, typical, average, stdev, 99%, 99.9%
ROW="$NUM +$NUM +$NUM +$NUM +$NUM +$NUM +$NUM"

# ping NAME CLIENT-OPTIONS...: a server, then the client with
# CLIENT-OPTIONS against it; both must exit 0.
ping() {
	local name=$1

	shift
	PORT=$((10000 + RANDOM % 20000))
	serve "" "$PORT" "${SWIW[@]}" "$BENCH" --server -b 127.0.0.1 -p "$PORT" ||
		fail_served "$name: the server did not listen on port $PORT"
	run "${SWIW[@]}" "$BENCH" -p "$PORT" "$@" 127.0.0.1
	served 5
	[ "$RC" -eq 0 ] && [ "$SRV_RC" -eq 0 ] ||
		fail_served "$name: client exit $RC, server exit $SRV_RC"
}

for op in send write_imm write read; do
	modes="busy progress"
	[ "$op" = write ] || modes="busy event"
	for mode in $modes; do
		opt=()
		[ "$mode" = event ] && opt=(-e)
		[ "$mode" = progress ] && opt=(-P)
		ping "$op $mode" -o "$op" -s 1,4096 -n 50 "${opt[@]}"
		out_has "^swiw-bench ping: $op, " "$op $mode: the heading"
		[ "$mode" != progress ] ||
			out_has "^swiw-bench ping: write, the target polls its memory and its CQ;" \
				"write -P: the heading"
		for s in 1 4096; do
			out_has "^ +$s +50 +$ROW\$" "$op $mode: the $s-byte row"
		done
		pass "swiw-bench -o $op${opt[*]:+ ${opt[*]}}: a row per size"
	done
done

# A request that is not a point: turned away, and the next one served.
PORT=$((10000 + RANDOM % 20000))
serve "" "$PORT" "${SWIW[@]}" "$BENCH" --server -b 127.0.0.1 -p "$PORT" ||
	fail_served "the server did not listen on port $PORT"
run "${SWIW[@]}" rping -c -a 127.0.0.1 -p "$PORT" -C 1
assert_nonzero "rping -c against swiw-bench --server"
run "${SWIW[@]}" "$BENCH" -p "$PORT" -o send -s 8 -n 20 127.0.0.1
served 5
[ "$RC" -eq 0 ] && [ "$SRV_RC" -eq 0 ] ||
	fail_served "after rping: client exit $RC, server exit $SRV_RC"
out_has "^ +8 +20 +$ROW\$" "the point after rping's request"
assert_has "$(cat "$T_TMP/srv.err")" "turned away a request that is no point" \
	"the server's stderr"
pass "a connection request with no point in it is turned away; the server goes on"

run "$BENCH" -o write -e 127.0.0.1
assert_rc 2 "swiw-bench -o write -e"
err_has "write polls memory"
run "$BENCH" -o send -P 127.0.0.1
assert_rc 2 "swiw-bench -o send -P"
err_has "-P applies to write only"
run "$BENCH" -o bogus 127.0.0.1
assert_rc 2 "swiw-bench -o bogus"
run "$BENCH" -s 0 127.0.0.1
assert_rc 2 "swiw-bench -s 0"
err_has "bad value '0' for -s"
run "$BENCH" --server 127.0.0.1
assert_rc 2 "swiw-bench --server HOST"
pass "bad options are usage errors"
