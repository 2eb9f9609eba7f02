# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# perf_vs_tcp.sh runs end to end over swiw_lo with few iterations and two
# sizes per metric: every table is printed with numbers for both sizes, the
# verdict, the CSV and the gnuplot script; a run that fails makes it fail
# loudly. It asserts nothing about the figures themselves.
. "$(dirname "$0")/../lib/swiw_test.sh"
need_swiw

BENCH=$(dirname "$0")/perf_vs_tcp.sh
T_LIMIT=${SWIW_TEST_TIMEOUT:-90}
NUM='[0-9]+\.[0-9]{2}'
# A row: bytes, swiw, TCP, swiw/TCP, then the aim and its verdict, or "-".
AIM="(-|(<=|>=)[0-9.]+x  (MET|MISSED))"

run bash "$BENCH" --build "$SWIW_BUILD" -n 20 --lat-sizes 1,4K --bw-sizes 4K,64K \
	--csv "$T_TMP/figures.csv" --plot "$T_TMP/figures.gp" --timeout 30
assert_ok "perf_vs_tcp.sh with two sizes"
for t in send_lat write_lat write_bw send_bw; do
	case "$t" in
	*_lat) sizes="1 4096" ;;
	*_bw) sizes="4096 65536" ;;
	esac
	TABLE=$(printf '%s\n' "$OUT" | awk -v t="ib_$t " \
		'index($0, t) == 1 { on = 1; next } on && NF == 0 { exit } on')
	assert_has "$TABLE" "^ +bytes +swiw +TCP +swiw/TCP +aim\$" "header of the ib_$t table"
	assert_count "$TABLE" "^ +[0-9]+ +$NUM +$NUM +${NUM}x +$AIM\$" 2 "rows of the ib_$t table"
	for s in $sizes; do
		assert_has "$TABLE" "^ +$s +$NUM +$NUM +${NUM}x +$AIM\$" "the $s-byte row of ib_$t"
	done
done
# Every cell of these sizes has an aim: 1 B and 4 KiB latency, 4 and 64
# KiB bandwidth.
out_has "^ +1 +$NUM +$NUM +${NUM}x +<=1\.2x  (MET|MISSED)\$" "send_lat's aim at 1 B"
out_has "^ +65536 +$NUM +$NUM +${NUM}x +>=0\.9x  (MET|MISSED)\$" "the aim at 64 KiB"
out_has "^verdict: (all 8 cells with an aim MET|[0-7] of 8 cells with an aim MET; MISSED: ib_.*)\$"
pass "four tables with two sizes each, each cell's aim, and the verdict"
# write_lat beside its floor, TCP placed by a thread (tcp_ref -T).
TABLE=$(printf '%s\n' "$OUT" | awk 'index($0, "ib_write_lat vs TCP placed by a thread") == 1 {
	on = 1; next } on && NF == 0 { exit } on')
assert_has "$TABLE" "^ +bytes +swiw +TCP\+thread +swiw/floor +floor/TCP\$" "header of the floor table"
assert_count "$TABLE" "^ +(1|4096) +$NUM +$NUM +${NUM}x +${NUM}x\$" 2 "rows of the floor table"
out_has "^floor: ib_write_lat, TCP placed by a thread is $NUM-${NUM}x busy-polled TCP; swiw is $NUM-${NUM}x that floor \(2 cells\)\$"
pass "write_lat's floor: a table and a line after the verdict"

CSV=$(cat "$T_TMP/figures.csv")
assert_eq "$(printf '%s\n' "$CSV" | head -1)" "test,bytes,metric,unit,swiw,tcp,ratio,aim,met" \
	"CSV header"
assert_count "$CSV" \
	"^ib_[a-z]+_(lat,[0-9]+,t_typical,usec|bw,[0-9]+,bw_average,MiB/s),$NUM,$NUM,[0-9.]+,(<=|>=) [0-9.]+,(MET|MISSED)\$" \
	8 "CSV rows"
assert_has "$(cat "$T_TMP/figures.gp")" '^\$write_bw << EOD$' "gnuplot script"
pass "CSV with 8 rows, gnuplot script with the data"

# The other operations, one size each: event mode against blocking TCP,
# Read and atomics against two TCP hops, atomics at 8 bytes whatever the
# sizes asked.
run bash "$BENCH" --build "$SWIW_BUILD" -n 20 \
	-t send_lat_ev,write_imm_lat,read_lat,atomic_lat,read_bw,atomic_bw \
	--lat-sizes 1 --bw-sizes 4K --timeout 30
assert_ok "perf_vs_tcp.sh with the other operations"
out_has "^ib_send_lat_ev \(ib_send_lat -e, CQ events\) vs blocking TCP ping-pong:"
out_has "^swiw-bench -o write_imm \(RDMA Write with Immediate ping-pong\) vs TCP ping-pong:"
out_has "^ib_read_lat vs two TCP one-way hops: round trip,"
out_has "^ib_atomic_lat vs two TCP one-way hops: round trip,"
out_has "^ib_read_bw vs TCP stream:"
out_has "^ib_atomic_bw \(8 B\) vs TCP stream of 8-byte messages:"
assert_count "$OUT" "^ +1 +$NUM +$NUM +${NUM}x +<=1\.(1|15|2)x  (MET|MISSED)\$" 3 "1-byte rows"
assert_count "$OUT" "^ +8 +$NUM +$NUM +${NUM}x +$AIM\$" 2 "8-byte atomic rows"
out_has "^ +4096 +$NUM +$NUM +${NUM}x +>=0\.7x  (MET|MISSED)\$"
out_has "^verdict: "
pass "event mode, Write with Immediate, Read and atomics: a table each, with the aims"

# --peers: libfabric's and UCX's ratios beside swiw's where they have the
# operation, "-" where not, and whether swiw is ahead of both. 1000 runs
# of 1 KiB: fi_pingpong then writes count and size as "1k", as in a real run.
run bash "$BENCH" --build "$SWIW_BUILD" -n 1000 -t send_lat,send_lat_ev,write_bw --peers \
	--lat-sizes 1,1K --bw-sizes 4K --csv "$T_TMP/peers.csv" --timeout 30
assert_ok "perf_vs_tcp.sh --peers"
out_has "^ +bytes +swiw +TCP +swiw/TCP +fi/TCP +UCX/TCP +aim +peers\$"
out_has "^ +1 +$NUM +$NUM +${NUM}x +${NUM}x +${NUM}x +<=1\.2x (MET|MISSED) +(AHEAD|BEHIND)\$" \
	"send_lat with both peers"
out_has "^ +1024 +$NUM +$NUM +${NUM}x +${NUM}x +${NUM}x +<=1\.2x (MET|MISSED) +(AHEAD|BEHIND)\$" \
	"send_lat 1 KiB with both peers (fi_pingpong's 1k)"
out_has "^ +1 +$NUM +$NUM +${NUM}x +- +- +<=1\.1x (MET|MISSED) +-\$" \
	"event mode, which neither peer runs"
out_has "^ +4096 +$NUM +$NUM +${NUM}x +- +${NUM}x +>=0\.7x (MET|MISSED) +(AHEAD|BEHIND)\$" \
	"write_bw with UCX only"
out_has "^peers: swiw ahead of libfabric tcp and UCX tcp in (all 3 cells|[0-2] of 3 cells; BEHIND: ib_.*)\$"
assert_eq "$(head -1 "$T_TMP/peers.csv")" "test,bytes,metric,unit,swiw,tcp,ratio,aim,met,libfabric,ucx" \
	"CSV header with the peers"
assert_has "$(cat "$T_TMP/peers.csv")" "^ib_send_lat,1,t_typical,usec,$NUM,$NUM,[0-9.]+,<= 1\.2,(MET|MISSED),$NUM,$NUM\$" \
	"the CSV's send_lat row with both peers"
pass "--peers: libfabric and UCX beside swiw, as ratios to TCP, and the verdict on them"

run bash "$BENCH" --build "$SWIW_BUILD" -t send_lat,bogus_lat
assert_rc 2 "perf_vs_tcp.sh -t bogus_lat"
err_has "unknown test 'bogus_lat'"
pass "an unknown test is a usage error"

# A run that fails must fail the benchmark, saying which.
run bash "$BENCH" --build "$SWIW_BUILD" -n 5 -t send_lat -s 1 --device swiw_nosuch --timeout 20
assert_rc 1 "perf_vs_tcp.sh on a device that does not exist"
err_has "^FAIL: perf_vs_tcp: ib_send_lat -s 1 over swiw"
out_lacks "^verdict:"
pass "a failed perftest run fails the benchmark with a clear message"

run bash "$BENCH" --build "$SWIW_BUILD" --sizes 0
assert_rc 2 "perf_vs_tcp.sh --sizes 0"
err_has "bad size list '0'"
pass "a bad size list is a usage error"

# --pin: both programs of every pair on the CPUs named, and said so. A
# tcp_ref that notes its CPUs first (server: no -s) shows where it ran.
last=$(($(nproc) - 1))
cat >"$T_TMP/tcp_ref" <<EOF
#!/bin/bash
case " \$* " in
*" -s "*) side=cli ;;
*) side=srv ;;
esac
sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status >>"$T_TMP/cpus.\$side"
exec "$SWIW_BUILD/bin/tcp_ref" "\$@"
EOF
chmod +x "$T_TMP/tcp_ref"
run bash "$BENCH" --build "$SWIW_BUILD" -n 20 -t send_lat,write_bw --lat-sizes 1 \
	--bw-sizes 4K --pin "0,$last" --tcp-ref "$T_TMP/tcp_ref" --timeout 30
assert_ok "perf_vs_tcp.sh --pin 0,$last"
out_has "^server on CPU 0, client on CPU $last \(--pin\)\$"
out_has "^ +4096 +$NUM +$NUM +${NUM}x +$AIM\$"
assert_eq "$(sort -u "$T_TMP/cpus.srv")" 0 "the CPUs of tcp_ref's servers"
assert_eq "$(sort -u "$T_TMP/cpus.cli")" "$last" "the CPUs of tcp_ref's clients"
run bash "$BENCH" --build "$SWIW_BUILD" --pin 0
assert_rc 2 "perf_vs_tcp.sh --pin 0"
err_has "bad --pin '0'"
pass "--pin runs every pair on the CPUs named; a bad value is a usage error"

# swiw/TCP is the median of the pairs' ratios, not the ratio of the
# medians: stand-ins for swiw-run and tcp_ref (each server listens and
# takes one connection, each client connects and prints the next figure
# of its list) give swiw 1, 5, 9 and TCP 1, 10, 3 in three pairs. The
# pairs' ratios are 1, 0.5 and 3: median 1.00x, MET; the medians' ratio
# would be 5/3, 1.67x, MISSED.
cat >"$T_TMP/stand_in" <<'EOF'
#!/bin/bash
# stand_in FIGURES FIELD ARGS...: FIELD 5 prints as perftest, 4 as tcp_ref,
# fi as fi_pingpong, ucx as ucx_perftest.
list=$1 field=$2 port='' size='' last=''
shift 2
while [ $# -gt 0 ]; do
	case "$1" in
	-p | -B | -P) port=$2 ;;
	-s | -S) size=$2 ;;
	esac
	last=$1
	shift
done
if [ "$last" != 127.0.0.1 ]; then
	exec python3 -c 'import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(1)
s.accept()[0].recv(1)' "$port"
fi
python3 -c 'import socket, sys
socket.create_connection(("127.0.0.1", int(sys.argv[1]))).close()' "$port"
v=$(head -1 "$list")
sed -i 1d "$list"
# unfit: perftest's clock fit failed (unfitpd: with its iWARP PD leak).
if [[ "$v" == unfit* ]]; then
	echo "Correlation coefficient r^2: 0.61 < 0.9" >&2
	echo " $size 20 0.00 0.00 0.00 0.00 0.00 0.00 0.00"
	if [ "$v" = unfitpd ]; then
		echo "Failed to deallocate PD - No such file or directory" >&2
		echo "Couldn't destroy all SEND resources" >&2
	fi
	exit 1
fi
if [ "$field" = fi ]; then
	echo "$size 20 0 0 0 0 $v"
elif [ "$field" = ucx ]; then
	echo "Final: 20 $v"
elif [ "$field" = 5 ]; then
	echo " $size 20 0.50 99.00 $v $v 0.00 $v $v"
else
	echo " $size 20 0.50 $v $v $v"
fi
EOF
chmod +x "$T_TMP/stand_in"
printf '%s\n' 1.00 5.00 9.00 >"$T_TMP/swiw.figures"
printf '%s\n' 1.00 10.00 3.00 >"$T_TMP/tcp.figures"
printf '#!/bin/bash\nexec "%s" "%s" 5 "$@"\n' "$T_TMP/stand_in" "$T_TMP/swiw.figures" \
	>"$T_TMP/swiw-run"
printf '#!/bin/bash\nexec "%s" "%s" 4 "$@"\n' "$T_TMP/stand_in" "$T_TMP/tcp.figures" \
	>"$T_TMP/tcp_ref_fixed"
chmod +x "$T_TMP/swiw-run" "$T_TMP/tcp_ref_fixed"
# No swiw runs here: a sanitizer's runtime has nothing to be mapped in.
run env -u SWIW_TEST_PRELOAD bash "$BENCH" --swiw-run "$T_TMP/swiw-run" \
	--tcp-ref "$T_TMP/tcp_ref_fixed" -n 20 -r 3 -t send_lat --lat-sizes 1 --timeout 30
assert_ok "perf_vs_tcp.sh -r 3 with stand-ins"
out_has "^ +1 +5\.00 +3\.00 +1\.00x +<=1\.2x  MET\$" "the median of the pairs' ratios"
out_has "^verdict: all 1 cells with an aim MET\$"
err_has "^# send_lat 1 B: swiw 5\.00, TCP 3\.00, swiw/TCP 1\.0000; rounds \(swiw/TCP\): 1\.00/1\.00 5\.00/10\.00 9\.00/3\.00\$" \
	"each round's pair in the progress line"
pass "swiw/TCP is the median of the interleaved pairs' own ratios, each pair shown"

# A run whose clock fit failed (perftest says so, reports 0 and exits 1)
# runs again, latency and bandwidth (with the PD leak bandwidth allows);
# a fit failed three times fails.
printf '%s\n' unfit 7.00 unfitpd 99.00 >"$T_TMP/swiw.figures"
# (tcp_ref's stand-in prints its bandwidth as 0.50)
printf '%s\n' 7.00 99.00 >"$T_TMP/tcp.figures"
run env -u SWIW_TEST_PRELOAD bash "$BENCH" --swiw-run "$T_TMP/swiw-run" \
	--tcp-ref "$T_TMP/tcp_ref_fixed" -n 20 -t send_lat,write_bw --lat-sizes 1 \
	--bw-sizes 4K --timeout 30
assert_ok "perf_vs_tcp.sh with a clock that did not fit once each"
out_has "^ +1 +7\.00 +7\.00 +1\.00x +<=1\.2x +MET\$" "send_lat's second run counted"
out_has "^ +4096 +99\.00 +0\.50 +198\.00x +>=0\.7x +MET\$" "write_bw's second run counted"
err_has "ib_send_lat -s 1: perftest's clock gave no figure, again"
printf '%s\n' unfit unfit unfit >"$T_TMP/swiw.figures"
printf '%s\n' 7.00 >"$T_TMP/tcp.figures"
run env -u SWIW_TEST_PRELOAD bash "$BENCH" --swiw-run "$T_TMP/swiw-run" \
	--tcp-ref "$T_TMP/tcp_ref_fixed" -n 20 -t send_lat --lat-sizes 1 --timeout 30
assert_rc 1 "perf_vs_tcp.sh with a clock that never fits"
err_has "perftest could not fit its clock in 3 runs"
pass "a failed fit of perftest's clock runs again, three times at most"

# So are the peers' ratios, and the verdict on them compares ratios:
# libfabric 3, 20, 2 and UCX 0.5, 2, 6 against TCP 1, 10, 3 make 2.00x
# and 0.50x (the medians' ratios: 1.00x and 0.67x), and swiw's 1.00x is
# behind UCX alone (by the medians, 5 against 3 and 2: behind both).
printf '%s\n' 1.00 5.00 9.00 >"$T_TMP/swiw.figures"
printf '%s\n' 1.00 10.00 3.00 >"$T_TMP/tcp.figures"
printf '%s\n' 3.00 20.00 2.00 >"$T_TMP/fi.figures"
printf '%s\n' 0.50 2.00 6.00 >"$T_TMP/ucx.figures"
mkdir "$T_TMP/peers"
printf '#!/bin/bash\nexec "%s" "%s" fi "$@"\n' "$T_TMP/stand_in" "$T_TMP/fi.figures" \
	>"$T_TMP/peers/fi_pingpong"
printf '#!/bin/bash\nexec "%s" "%s" ucx "$@"\n' "$T_TMP/stand_in" "$T_TMP/ucx.figures" \
	>"$T_TMP/peers/ucx_perftest"
chmod +x "$T_TMP/peers/fi_pingpong" "$T_TMP/peers/ucx_perftest"
run env -u SWIW_TEST_PRELOAD PATH="$T_TMP/peers:$PATH" bash "$BENCH" \
	--swiw-run "$T_TMP/swiw-run" --tcp-ref "$T_TMP/tcp_ref_fixed" -n 20 -r 3 \
	-t send_lat --lat-sizes 1 --peers --timeout 30
assert_ok "perf_vs_tcp.sh -r 3 --peers with stand-ins"
out_has "^ +1 +5\.00 +3\.00 +1\.00x +2\.00x +0\.50x +<=1\.2x MET +BEHIND\$" \
	"the peers' ratios: medians of the rounds' own"
out_has "^peers: swiw ahead of libfabric tcp and UCX tcp in 0 of 1 cells; BEHIND: ib_send_lat 1 B \(behind UCX\)\$" \
	"the verdict on the peers by the ratios"
pass "--peers: fi/TCP and UCX/TCP are medians of the rounds' own ratios too"

# write_lat's peers are judged by swiw-bench -o write -P, the idiom of
# UCX's ucp_put_lat (its target calls progress): swiw's ib_write_lat 9.00
# against TCP 3.00 is behind UCX's 4.50, its -P figure 2.40 ahead. The
# stand-in swiw-run gives both swiw figures; tcp_ref's second is the floor.
printf '%s\n' 9.00 2.40 >"$T_TMP/swiw.figures"
printf '%s\n' 3.00 6.00 >"$T_TMP/tcp.figures"
printf '%s\n' 4.50 >"$T_TMP/ucx.figures"
run env -u SWIW_TEST_PRELOAD PATH="$T_TMP/peers:$PATH" bash "$BENCH" \
	--swiw-run "$T_TMP/swiw-run" --tcp-ref "$T_TMP/tcp_ref_fixed" \
	--swiw-bench "$T_TMP/swiw-run" -n 20 -t write_lat --lat-sizes 1 --peers --timeout 30
assert_ok "perf_vs_tcp.sh -t write_lat --peers with stand-ins"
out_has "^ +1 +9\.00 +3\.00 +3\.00x +- +1\.50x +<=1\.5x MISSED +AHEAD\$" \
	"ib_write_lat's row, its peers judged by the -P figure"
out_has "^ +bytes +swiw -P +TCP +swiw-P/TCP +UCX/TCP\$"
out_has "^ +1 +2\.40 +3\.00 +0\.80x +1\.50x\$" "swiw-bench -o write -P's row"
out_has "^peers: swiw ahead of libfabric tcp and UCX tcp in all 1 cells\$"
pass "--peers: write_lat's peers against swiw-bench -o write -P, UCX's idiom"

# tcp_ref -I, the floor of placement by a signal (the note of issue 15):
# the ping-pong runs to its end and prints a row, with 2 KiB messages that
# may take more than one signal each.
port=$((10000 + RANDOM % 20000))
serve "" "$port" "$SWIW_BUILD/bin/tcp_ref" -I -p "$port" lat ||
	fail_served "tcp_ref -I: the server did not listen on port $port"
run "$SWIW_BUILD/bin/tcp_ref" -I -p "$port" -s 2048 -n 500 lat 127.0.0.1
served 5
[ "$RC" -eq 0 ] && [ "$SRV_RC" -eq 0 ] ||
	fail_served "tcp_ref -I: client exit $RC, server exit $SRV_RC"
out_has "^ +2048 +500 +$NUM +$NUM +$NUM +$NUM\$" "tcp_ref -I's row"
pass "tcp_ref -I: a ping-pong placed by a signal handler"
