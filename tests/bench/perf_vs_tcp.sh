#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# perf_vs_tcp.sh: the stock perftest programs over swiw beside a plain TCP
# socket doing the same transfer on the same path in the same run.
#
# For every size, a perftest server/client pair runs through swiw-run,
# then tcp_ref (a plain TCP ping-pong or stream with TCP_NODELAY, both ends
# busy-polling as perftest does, or blocking for event mode) on the same
# addresses. One table per metric, the ratio swiw/TCP, each cell's aim
# (issue 15's goals) and whether it is met, and a verdict over all cells.
# A benchmark, not a test: it fails only if a run fails, never on figures.
# Run with --help for the options.
set -u -o pipefail
. "$(dirname "$0")/../lib/swiw_test.sh"

ME=perf_vs_tcp
SMALL_MAX=4096
ALL_TESTS="send_lat send_lat_ev write_lat write_imm_lat read_lat atomic_lat write_bw send_bw read_bw atomic_bw"

usage() {
	cat <<EOF
Usage: $ME [options]

Runs perftest over swiw, each size followed by tcp_ref on the same path,
and prints per metric: size | swiw | TCP | swiw/TCP | aim | MET or MISSED,
then a verdict over every cell that has an aim.

Tests (-t; default: send_lat,write_lat,write_bw,send_bw; "all" is every one):
  send_lat     ib_send_lat, one-way; TCP ping-pong, busy-polled
  send_lat_ev  ib_send_lat -e (sleeps on CQ events); TCP ping-pong blocking
  write_lat    ib_write_lat (the target polls its memory), one-way; also
               against tcp_ref -T, TCP whose messages a thread sleeping in
               recv() places while the program spins on memory: the floor
               of placement by a progress thread (a table and a line
               "floor:" after the verdict); with --peers also
               swiw-bench -o write -P, whose target polls its CQ while it
               polls its memory: UCX's ucp_put_lat is that idiom (its
               target calls progress; with -o, not calling it, UCX over
               tcp never completes), so the peers are judged against it
  write_imm_lat  swiw-bench -o write_imm (RDMA Write with Immediate ping-pong;
               perftest has none), one-way; TCP ping-pong, busy-polled
  read_lat     ib_read_lat, round trip; TCP: two one-way hops
  atomic_lat   ib_atomic_lat (fetch and add, 8 B), round trip; two hops
  write_bw, send_bw, read_bw   ib_*_bw; TCP stream
  atomic_bw    ib_atomic_bw (8 B); TCP stream of 8-byte messages
Latency is perftest's t_typical (median; one-way for Send and Write, the
round trip for Read and atomics) in usec; bandwidth perftest's BW average
in MB/s (MB = 2^20).

Aims, swiw/TCP (issue 15), for messages of 1 B-$SMALL_MAX B: send_lat and
write_imm_lat <= 1.2x,
send_lat_ev <= 1.1x, write_lat <= 1.5x, read_lat and atomic_lat <= 1.15x;
bandwidth at 4 KiB >= 0.7x, at 64 KiB and 1 MiB >= 0.9x with CRC off
(the default) and >= 0.8x with SWIW_MPA_CRC=yes in the environment.
Other cells have no aim ("-").

Options:
  -n, --iters N         iterations of every run (sets both below)
      --lat-iters N     iterations of the latency runs (default 1000)
      --bw-iters N      iterations of the bandwidth runs (default 5000)
  -s, --sizes LIST      sizes of all tests, comma separated (bytes, or with
                        a K or M suffix for KiB, MiB)
      --lat-sizes LIST  latency sizes (default 1,2,4,...,65536)
      --bw-sizes LIST   bandwidth sizes (default 4K,8K,...,1M)
  -t, --tests LIST      which of send_lat,write_lat,write_bw,send_bw (default:
                        all four)
  -r, --repeat R        run every pair R times, interleaved, TCP first in
                        every second round, and take the medians (default
                        1); swiw/TCP (and fi/TCP, UCX/TCP) is then the
                        median of the R rounds' own ratios
      --peers           also run, where they have the operation, libfabric's tcp
                        provider (fi_pingpong, msg endpoint: send_lat) and UCX
                        over tcp (ucx_perftest: tag_lat, tag_bw, ucp_put_lat,
                        ucp_put_bw, ucp_get, ucp_fadd) on the same path, each as
                        a ratio to TCP, and say per cell whether swiw is ahead
                        of both (Debian's libfabric-bin and ucx-utils)
      --netns           across two network namespaces joined by a veth pair
                        instead of over swiw_lo (root only)
      --pin SRV,CLI     run the server on CPU SRV and the client on CPU CLI
                        (taskset), swiw's and TCP's alike, with their
                        threads: the scheduler then moves nothing between
                        runs, which steadies the figures of a small machine
      --device DEV      the swiw device of the loopback path (default swiw_lo)
      --addr ADDR       the server's IPv4 address on DEV (default 127.0.0.1)
      --timeout SEC     limit of every single program run (default 120)
      --csv FILE        also write the figures as CSV
      --plot FILE       write a gnuplot script; with FILE ending in .svg or
                        .png and gnuplot installed, render it to FILE (the
                        script goes to FILE.gp)
      --build DIR       swiw build directory (its bin/ holds swiw-run and
                        tcp_ref; default \$SWIW_BUILD, else both from PATH)
      --swiw-run PATH   swiw-run to use
      --tcp-ref PATH    tcp_ref to use
      --swiw-bench PATH swiw-bench to use (write_imm_lat)
  -q, --quiet           no progress lines on stderr
  -h, --help            this text

Environment: SWIW_TEST_PRELOAD, a library put first in LD_PRELOAD of the
programs run under swiw-run (a sanitizer runtime for a sanitizer build).
Exit status: 0 if every run succeeded (whatever the figures), 1 if a run
failed ("FAIL: $ME: ..." on stderr), 2 on a usage error.
EOF
}

usage_error() {
	echo "$ME: $*" >&2
	echo "Try '$ME --help'." >&2
	exit 2
}

progress() {
	[ -n "$QUIET" ] || note "$*" >&2
}

# size_list LIST: LIST as bytes, one a line; fails on a bad entry.
size_list() {
	local s n mult IFS=,

	for s in $1; do
		case "$s" in
		*[kK]) n=${s%?} mult=1024 ;;
		*[mM]) n=${s%?} mult=1048576 ;;
		*) n=$s mult=1 ;;
		esac
		[[ "$n" =~ ^[0-9]+$ ]] && [ "$((n * mult))" -ge 1 ] &&
			[ "$((n * mult))" -le 1073741824 ] || return 1
		echo "$((n * mult))"
	done
}

LAT_ITERS=1000
BW_ITERS=5000
LAT_SIZES=$(for ((i = 1; i <= 65536; i *= 2)); do echo $i; done)
BW_SIZES=$(for ((i = 4096; i <= 1048576; i *= 2)); do echo $i; done)
TESTS="send_lat write_lat write_bw send_bw"
REPEAT=1
NETNS=''
PEERS=''
PIN=''
DEVICE=swiw_lo
ADDR=127.0.0.1
LIMIT=120
CSV=''
PLOT=''
BUILD=${SWIW_BUILD:-}
SWIW_RUN=''
TCP_REF=''
SWIW_BENCH=''
QUIET=''
PATH_GIVEN=''

need_arg() {
	[ "$#" -ge 2 ] || usage_error "option $1 needs a value"
}
is_count() {
	[[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge "$2" ] && [ "$1" -le 100000000 ]
}

while [ "$#" -gt 0 ]; do
	case "$1" in
	-n | --iters)
		need_arg "$@"
		is_count "$2" 5 || usage_error "bad iteration count '$2' (5 or more)"
		LAT_ITERS=$2 BW_ITERS=$2
		shift
		;;
	--lat-iters)
		need_arg "$@"
		is_count "$2" 5 || usage_error "bad iteration count '$2' (5 or more)"
		LAT_ITERS=$2
		shift
		;;
	--bw-iters)
		need_arg "$@"
		is_count "$2" 5 || usage_error "bad iteration count '$2' (5 or more)"
		BW_ITERS=$2
		shift
		;;
	-s | --sizes)
		need_arg "$@"
		LAT_SIZES=$(size_list "$2") || usage_error "bad size list '$2'"
		BW_SIZES=$LAT_SIZES
		shift
		;;
	--lat-sizes)
		need_arg "$@"
		LAT_SIZES=$(size_list "$2") || usage_error "bad size list '$2'"
		shift
		;;
	--bw-sizes)
		need_arg "$@"
		BW_SIZES=$(size_list "$2") || usage_error "bad size list '$2'"
		shift
		;;
	-t | --tests)
		need_arg "$@"
		TESTS=${2//,/ }
		[ "$TESTS" = all ] && TESTS=$ALL_TESTS
		for t in $TESTS; do
			[[ " $ALL_TESTS " == *" $t "* ]] || usage_error "unknown test '$t'"
		done
		[ -n "$TESTS" ] || usage_error "no test given"
		shift
		;;
	-r | --repeat)
		need_arg "$@"
		is_count "$2" 1 || usage_error "bad repeat count '$2'"
		REPEAT=$2
		shift
		;;
	--netns) NETNS=1 ;;
	--peers) PEERS=1 ;;
	--pin)
		need_arg "$@"
		[[ $2 =~ ^[0-9]+,[0-9]+$ ]] || usage_error "bad --pin '$2' (want SRV,CLI)"
		PIN=$2
		shift
		;;
	--device)
		need_arg "$@"
		DEVICE=$2 PATH_GIVEN=1
		shift
		;;
	--addr)
		need_arg "$@"
		ADDR=$2 PATH_GIVEN=1
		shift
		;;
	--timeout)
		need_arg "$@"
		is_count "$2" 1 || usage_error "bad timeout '$2'"
		LIMIT=$2
		shift
		;;
	--csv)
		need_arg "$@"
		CSV=$2
		shift
		;;
	--plot)
		need_arg "$@"
		PLOT=$2
		shift
		;;
	--build)
		need_arg "$@"
		BUILD=$2
		shift
		;;
	--swiw-run)
		need_arg "$@"
		SWIW_RUN=$2
		shift
		;;
	--tcp-ref)
		need_arg "$@"
		TCP_REF=$2
		shift
		;;
	--swiw-bench)
		need_arg "$@"
		SWIW_BENCH=$2
		shift
		;;
	-q | --quiet) QUIET=1 ;;
	-h | --help)
		usage
		exit 0
		;;
	*) usage_error "unknown argument '$1'" ;;
	esac
	shift
done

[ -n "$NETNS" ] && [ -n "$PATH_GIVEN" ] &&
	usage_error "--netns makes its own devices and addresses: no --device or --addr"

# --- the programs ---------------------------------------------------------------
find_prog() {
	local name=$1 given=$2

	if [ -n "$given" ]; then
		echo "$given"
	elif [ -n "$BUILD" ]; then
		echo "$BUILD/bin/$name"
	else
		command -v "$name" || echo "$name"
	fi
}
SWIW_RUN=$(find_prog swiw-run "$SWIW_RUN")
TCP_REF=$(find_prog tcp_ref "$TCP_REF")
SWIW_BENCH=$(find_prog swiw-bench "${SWIW_BENCH:-}")
[ -x "$SWIW_RUN" ] ||
	fail "swiw-run not found or not executable: '$SWIW_RUN' (use --build or --swiw-run)"
[ -x "$TCP_REF" ] ||
	fail "tcp_ref not found or not executable: '$TCP_REF' (use --build or --tcp-ref)"
T_LIMIT=$LIMIT
need_cmd ss sort
SRV_PIN=() CLI_PIN=()
if [ -n "$PIN" ]; then
	need_cmd taskset
	SRV_PIN=(taskset -c "${PIN%,*}") CLI_PIN=(taskset -c "${PIN#*,}")
fi
for t in $TESTS; do
	# write_imm_lat runs swiw-bench, and so does --peers for write_lat
	# (swiw-bench -o write -P); perftest has the rest.
	if [ "$t" = write_imm_lat ] || { [ "$t" = write_lat ] && [ -n "$PEERS" ]; }; then
		[ -x "$SWIW_BENCH" ] ||
			fail "swiw-bench not found or not executable: '$SWIW_BENCH' (use --build or --swiw-bench)"
	fi
	[ "$t" = write_imm_lat ] || need_cmd "ib_${t%_ev}"
done
[ -z "$PEERS" ] || need_cmd fi_pingpong ucx_perftest
AIM_BIG=0.9
case "${SWIW_MPA_CRC:-no}" in
yes | 1 | on | true) AIM_BIG=0.8 ;;
esac

# The programs under swiw get the preload, not timeout, ip or ss; perftest
# leaks some of its own allocations, which LeakSanitizer must not report.
swiw_prefix "$SWIW_RUN"
[ -z "${SWIW_TEST_PRELOAD:-}" ] ||
	SWIW=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "${SWIW[@]}")

# --- the path ---------------------------------------------------------------------
# SRV_NS/CLI_NS: the network namespaces of the server's and the client's
# side ("" for this one); SRV_DEV/CLI_DEV their swiw devices; ADDR the
# server's.
SRV_NS='' CLI_NS=''
SRV_DEV=$DEVICE CLI_DEV=$DEVICE
PATH_NOTE="$DEVICE ($ADDR), server and client in one network namespace"

if [ -n "$NETNS" ]; then
	need_cmd ibv_devinfo
	SRV_NS=swiw-bench-$$-srv CLI_NS=swiw-bench-$$-cli
	veth_pair "$SRV_NS" bench0 10.201.0.1 "$CLI_NS" bench1 10.201.0.2
	SRV_DEV=swiw_bench0 CLI_DEV=swiw_bench1 ADDR=10.201.0.1
	PATH_NOTE="a veth pair between two network namespaces: server $SRV_DEV"
	PATH_NOTE+=" (10.201.0.1), client $CLI_DEV (10.201.0.2)"
	wait_active "$SRV_NS" "$SRV_DEV"
	wait_active "$CLI_NS" "$CLI_DEV"
fi

# --- one server/client pair -------------------------------------------------------
# A free port for every run, so that no run meets an earlier one's socket:
# below the ephemeral range (where no outgoing connection takes it), and
# with no socket of any state on it.
PORT_LO=10000 PORT_N=20000
read -r eph _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null &&
	[ "${eph:-0}" -gt $((PORT_LO + 1000)) ] && PORT_N=$((eph - PORT_LO))
PORT=0
next_port() {
	local i

	for ((i = 0; i < 100; i++)); do
		PORT=$((PORT_LO + (RANDOM * 32768 + RANDOM) % PORT_N))
		in_ns "$SRV_NS" ss -Htan "sport = :$PORT" 2>/dev/null | grep -q . ||
			return 0
	done
	fail "no free TCP port found"
}

show_file() {
	echo "---- $1:"
	tail -n 25 "$2"
}

# why_failed RC: the reason an exit status means.
why_failed() {
	case "$1" in
	124 | 137) echo "timed out after ${LIMIT}s" ;;
	143) echo "ended (SIGTERM) 5 s after the client failed" ;;
	*) echo "exit status $1" ;;
	esac
}

# pair WHAT LEAK-OK SERVER-CMD... -- CLIENT-CMD...: runs the server on the
# server's side, waits until it listens on $PORT, runs the client on the
# client's side; both must succeed. The client's stdout is left in
# $T_TMP/cli.out. The commands take the port as the word @PORT@; if another
# program took it first, the pair runs again on another one.
pair() {
	local what=$1 leak_ok=$2 try w
	local -a srv_args=() cli_args=() srv_cmd=() cli_cmd=()

	shift 2
	split_args "$@"
	srv_args=("${BEFORE[@]}") cli_args=("${AFTER[@]}")

	for ((try = 0; ; try++)); do
		next_port
		srv_cmd=() cli_cmd=()
		for w in "${srv_args[@]}"; do srv_cmd+=("${w/#@PORT@/$PORT}"); done
		for w in "${cli_args[@]}"; do cli_cmd+=("${w/#@PORT@/$PORT}"); done
		serve "$SRV_NS" "$PORT" "${srv_cmd[@]}" && break
		[ "$try" -lt 3 ] && grep -Eqi 'in use|bind|listen to port' "$T_TMP/srv.err" || {
			pair_output
			fail "$what: the server did not listen on port $PORT ($(why_failed "$SRV_RC"))"
		}
		progress "$what: port $PORT was taken, again on another port"
	done
	pair_client
}

# pair_client: the client of the pair whose server listens.
pair_client() {
	local cli_rc pre=()

	[ -z "$CLI_NS" ] || pre=(ip netns exec "$CLI_NS")
	bounded "${pre[@]}" "${cli_cmd[@]}" >"$T_TMP/cli.out" 2>"$T_TMP/cli.err" </dev/null
	cli_rc=$?
	CLOCK_UNFIT=''
	clock_unfit "$cli_rc" "$T_TMP/cli.err" && cli_rc=0
	[ -n "$leak_ok" ] && pd_leak_ok "$cli_rc" "$(cat "$T_TMP/cli.err")" && cli_rc=0
	# A client that failed can leave the server waiting for ever.
	if [ "$cli_rc" -eq 0 ]; then
		served
	else
		served 5
	fi
	clock_unfit "$SRV_RC" "$T_TMP/srv.err" && SRV_RC=0
	[ -n "$leak_ok" ] && pd_leak_ok "$SRV_RC" "$(cat "$T_TMP/srv.err")" && SRV_RC=0
	if [ "$cli_rc" -ne 0 ] || [ "$SRV_RC" -ne 0 ]; then
		pair_output client
		fail "$what failed: client $(why_failed "$cli_rc"), server $(why_failed "$SRV_RC")"
	fi
}

# perftest's clock fit failed (perftest_clock_unfit): not a failure of
# the transfer, the caller runs it again. clock_unfit RC STDERR-FILE:
# true, with CLOCK_UNFIT set, if that is all that went wrong (besides
# perftest's PD leak, where the pair allows it).
CLOCK_UNFIT=''
clock_unfit() {
	local rest

	perftest_clock_unfit "$(cat "$2")" || return 1
	rest=$(grep -Ev "$PERFTEST_CLOCK_RE" "$2")
	if { [ "$1" -eq 0 ] || [ "$1" -eq 1 ]; } &&
		[ -z "$(grep -v -e '^[[:space:]]*$' -e '^swiw: ' <<<"$rest")" ]; then
		CLOCK_UNFIT=1
		return 0
	fi
	[ -n "$leak_ok" ] && pd_leak_ok "$1" "$rest" && CLOCK_UNFIT=1
}

# pair_output [client]: what the pair's server (and client) printed.
pair_output() {
	{
		echo "---- server: ${srv_cmd[*]}"
		show_file "server stdout" "$T_TMP/srv.out"
		show_file "server stderr" "$T_TMP/srv.err"
		if [ -n "${1:-}" ]; then
			echo "---- client: ${cli_cmd[*]}"
			show_file "client stdout" "$T_TMP/cli.out"
			show_file "client stderr" "$T_TMP/cli.err"
		fi
	} >&2
}

# figure WHAT KEY FIELD: field FIELD of the client's figure line for KEY
# (the line whose first field is KEY, a size or a label such as "Final:",
# and whose second is an iteration count) into VALUE.
VALUE=''
figure() {
	if ! figure_try "$2" "$3"; then
		{
			echo "$ME: error: $1 printed no \"$2\" line with a figure"
			show_file "client stdout" "$T_TMP/cli.out"
		} >&2
		exit 1
	fi
}

# figure_try KEY FIELD: as figure, but only says (by its status) whether
# there was one. The first field is the size, the second a count:
# fi_pingpong writes them in units of 1024 (1k, 64k, 1m).
figure_try() {
	VALUE=$(awk -v k="$1" -v f="$2" '
		function n(x) {
			if (x !~ /^[0-9]+[kmg]?$/) return -1
			return x * (x ~ /k$/ ? 1024 : x ~ /m$/ ? 1048576 : x ~ /g$/ ? 1073741824 : 1)
		}
		($1 == k || n($1) == k) && n($2) >= 0 && $f ~ /^[0-9]+(\.[0-9]+)?$/ { v = $f }
		END { if (v != "") print v }' "$T_TMP/cli.out")
	[ -n "$VALUE" ]
}

# prog_of TEST: the perftest program and its extra options, into PROG and
# PROG_ARGS.
prog_of() {
	PROG=ib_${1%_ev} PROG_ARGS=()
	case "$1" in
	*_ev) PROG_ARGS=(-e) ;;
	atomic_*) PROG_ARGS=(-A FETCH_AND_ADD) ;;
	esac
}

# swiw_once TEST SIZE: one perftest pair over swiw; its figure in VALUE.
swiw_once() {
	local size=$2 iters leak='' field try sz=()

	prog_of "$1"
	case "$1" in
	*_lat*) iters=$LAT_ITERS field=5 ;; # t_typical
	*_bw) iters=$BW_ITERS field=4 ;;    # BW average
	esac
	case "$1" in
	*_bw) leak=1 ;;
	esac
	if [ "$1" = write_imm_lat ]; then
		pair "swiw-bench -o write_imm -s $size over swiw" '' \
			"${SRV_PIN[@]}" "${SWIW[@]}" "$SWIW_BENCH" --server -b "$ADDR" -p @PORT@ -- \
			"${CLI_PIN[@]}" "${SWIW[@]}" "$SWIW_BENCH" -o write_imm -s "$size" \
			-n "$iters" -p @PORT@ "$ADDR"
		figure swiw-bench "$size" "$field"
		return
	fi
	# perftest's atomics are 8 bytes, and take no -s.
	[[ "$1" == atomic_* ]] || sz=(-s "$size")
	# On a loaded host perftest's fit of its CPU clock can fail after a
	# good run: it says so (clock_unfit), or the row says "inf" or
	# "-nan". That alone runs again.
	for try in 1 2 3; do
		pair "$PROG${PROG_ARGS[*]:+ ${PROG_ARGS[*]}} -s $size over swiw" "$leak" \
			"${SRV_PIN[@]}" "${SWIW[@]}" "$PROG" -d "$SRV_DEV" -x 0 -F -p @PORT@ \
			"${PROG_ARGS[@]}" "${sz[@]}" -n "$iters" -- \
			"${CLI_PIN[@]}" "${SWIW[@]}" "$PROG" -d "$CLI_DEV" -x 0 -F -p @PORT@ \
			"${PROG_ARGS[@]}" "${sz[@]}" -n "$iters" "$ADDR"
		[ -z "$CLOCK_UNFIT" ] && figure_try "$size" "$field" && return
		[ -n "$CLOCK_UNFIT" ] ||
			grep -Eq "^ *$size +[0-9]+ .*(inf|nan)" "$T_TMP/cli.out" || break
		progress "$PROG -s $size: perftest's clock gave no figure, again"
	done
	[ -z "$CLOCK_UNFIT" ] ||
		fail "$PROG -s $size: perftest could not fit its clock in 3 runs"
	figure "$PROG" "$size" "$field"
}

# tcp_once TEST SIZE: the same transfer over plain TCP; figure in VALUE.
# Event mode blocks in recv() as a program sleeping on CQ events would;
# a Read or an atomic is compared with two one-way hops.
tcp_once() {
	local mode iters field opt=()

	case "$1" in
	*_lat*) mode=lat iters=$LAT_ITERS field=4 ;; # t_typical
	*_bw) mode=bw iters=$BW_ITERS field=3 ;;     # BW average
	esac
	[[ "$1" == *_ev ]] && opt=(-B)
	pair "tcp_ref $mode${opt[*]:+ ${opt[*]}} -s $2" '' \
		"${SRV_PIN[@]}" "$TCP_REF" "${opt[@]}" -p @PORT@ "$mode" -- \
		"${CLI_PIN[@]}" "$TCP_REF" "${opt[@]}" -p @PORT@ -s "$2" -n "$iters" "$mode" "$ADDR"
	figure tcp_ref "$2" "$field"
	case "$1" in
	read_lat | atomic_lat) VALUE=$(awk -v v="$VALUE" 'BEGIN { printf "%.2f", 2 * v }') ;;
	esac
}

# floor_once SIZE: tcp_ref lat -T, the same ping-pong with each message
# placed by a thread that sleeps in recv() while the program spins on
# memory, as ib_write_lat's target spins while swiw's progress thread
# places the Write: that design's floor on this machine. Figure in VALUE.
floor_once() {
	pair "tcp_ref lat -T -s $1" '' \
		"${SRV_PIN[@]}" "$TCP_REF" -T -p @PORT@ lat -- \
		"${CLI_PIN[@]}" "$TCP_REF" -T -p @PORT@ -s "$1" -n "$LAT_ITERS" lat "$ADDR"
	figure tcp_ref "$1" 4
}

# progress_once SIZE: swiw-bench -o write -P, a Write ping-pong whose
# target polls its CQ while it polls its memory, as the target of UCX's
# ucp_put_lat calls ucp_worker_progress: the idiom UCX's write_lat figure
# is of, which --peers compares it with. Figure in VALUE.
progress_once() {
	pair "swiw-bench -o write -P -s $1 over swiw" '' \
		"${SRV_PIN[@]}" "${SWIW[@]}" "$SWIW_BENCH" --server -b "$ADDR" -p @PORT@ -- \
		"${CLI_PIN[@]}" "${SWIW[@]}" "$SWIW_BENCH" -o write -P -s "$1" \
		-n "$LAT_ITERS" -p @PORT@ "$ADDR"
	figure swiw-bench "$1" 5
}

# fi_once TEST SIZE: libfabric's tcp provider doing the same, where
# libfabric-bin has a program for it (fi_pingpong: Send latency, one way,
# the average); its figure in VALUE, or "-".
fi_once() {
	VALUE=-
	[ "$1" = send_lat ] || return 0
	pair "fi_pingpong -S $2" '' \
		"${SRV_PIN[@]}" fi_pingpong -p tcp -e msg -S "$2" -I "$LAT_ITERS" -B @PORT@ -- \
		"${CLI_PIN[@]}" fi_pingpong -p tcp -e msg -S "$2" -I "$LAT_ITERS" -P @PORT@ "$ADDR"
	figure fi_pingpong "$2" 7 # usec/xfer
}

# ucx_once TEST SIZE: UCX over tcp doing the same (ucx_perftest; latency
# the median, one way for ping-pongs, the round trip for get and fadd;
# bandwidth overall MB/s); its figure in VALUE, or "-".
ucx_once() {
	local test iters=$LAT_ITERS field=3 sz=$2

	VALUE=-
	case "$1" in
	send_lat) test=tag_lat ;;
	write_lat) test=ucp_put_lat ;;
	read_lat) test=ucp_get ;;
	atomic_lat) test=ucp_fadd sz=8 ;;
	send_bw) test=tag_bw ;;
	write_bw) test=ucp_put_bw ;;
	read_bw) test=ucp_get ;;
	*) return 0 ;;
	esac
	[[ "$1" == *_bw ]] && iters=$BW_ITERS field=6
	pair "ucx_perftest -t $test -s $sz" '' \
		"${SRV_PIN[@]}" env UCX_TLS=tcp ucx_perftest -p @PORT@ -- \
		"${CLI_PIN[@]}" env UCX_TLS=tcp ucx_perftest -p @PORT@ -t "$test" -s "$sz" \
		-n "$iters" "$ADDR"
	figure "ucx_perftest -t $test -s $sz" Final: "$field"
}

# aim_of TEST SIZE: the cell's aim as "<= R" or ">= R", or "-" for none.
aim_of() {
	case "$1" in
	*_lat*)
		if [ "$2" -gt "$SMALL_MAX" ]; then
			echo -
			return
		fi
		case "$1" in
		send_lat | write_imm_lat) echo "<= 1.2" ;;
		send_lat_ev) echo "<= 1.1" ;;
		write_lat) echo "<= 1.5" ;;
		*) echo "<= 1.15" ;;
		esac
		;;
	atomic_bw) echo - ;;
	*)
		case "$2" in
		4096) echo ">= 0.7" ;;
		65536 | 1048576) echo ">= $AIM_BIG" ;;
		*) echo - ;;
		esac
		;;
	esac
}

# pair_ratio FILE TCP-FILE: the median of FILE/TCP over the runs paired
# line by line (swiw's, libfabric's or UCX's run and the TCP run of the
# same round, which comes right after swiw's). The speed of
# a shared host drifts over seconds to minutes, often by 1.5x: a drift
# between pairs moves both figures of a pair alike and cancels in their
# ratio, where a ratio of the two medians could take them from different
# phases.
pair_ratio() {
	paste -d ' ' "$1" "$2" | awk '{ print ($2 > 0) ? $1 / $2 : 0 }' | median %.4f
}

# print_peers TEST: the table with libfabric's and UCX's ratios to TCP
# beside swiw's, and whether swiw is ahead of both ("-": they have no
# such operation).
print_peers() {
	awk -v t="$1" '
		function r(v) { return v == "-" ? "-" : sprintf("%.2fx", v) }
		BEGIN { printf "%10s %12s %12s %10s %10s %10s %8s %-7s %s\n", "bytes", "swiw",
			"TCP", "swiw/TCP", "fi/TCP", "UCX/TCP", "aim", "", "peers" }
		$1 == t {
			aim = $6 == "-" ? "-" : $6 $7 "x"
			printf "%10d %12.2f %12.2f %9.2fx %10s %10s %8s %-7s %s\n", $2, $3, $4, $5,
				r($12), r($13), aim, $8 == "-" ? "" : $8, substr($11, 1, 6)
		}' "$RESULTS"
}

# peers_of TEST SWIW LIBFABRIC UCX: "AHEAD" when swiw's figure beats both
# peers' that exist, "BEHIND:NAME[,NAME]" naming those it does not beat,
# "-" when neither peer has the operation. The figures are each one's
# ratio to the TCP runs it was paired with (pair_ratio), so that the
# host's drift between runs weighs on none of them.
peers_of() {
	awk -v t="$1" -v s="$2" -v f="$3" -v u="$4" 'BEGIN {
		if (f == "-" && u == "-") {
			print "-"
			exit
		}
		lat = t ~ /_lat/
		b = ""
		if (f != "-" && (lat ? s + 0 >= f + 0 : s + 0 <= f + 0))
			b = b ",libfabric"
		if (u != "-" && (lat ? s + 0 >= u + 0 : s + 0 <= u + 0))
			b = b ",UCX"
		print b == "" ? "AHEAD" : "BEHIND:" substr(b, 2)
	}'
}

# --- the runs ---------------------------------------------------------------------
# One a line: test size swiw tcp swiw/tcp aim-op aim met libfabric UCX
# peers (peers_of) libfabric/tcp UCX/tcp floor swiw/floor floor/tcp
# swiw-progress swiw-progress/tcp ("-" where there is none; the floor and
# swiw-progress are write_lat's, floor_once and progress_once); the ratios
# are medians of paired runs' ratios (pair_ratio).
RESULTS=$T_TMP/results
: >"$RESULTS"

title_of() {
	case "$1" in
	send_lat) echo "ib_$1 vs TCP ping-pong: one-way latency, t_typical (median), usec" \
		"(lower is better)" ;;
	send_lat_ev) echo "ib_$1 (ib_send_lat -e, CQ events) vs blocking TCP ping-pong:" \
		"one-way latency, t_typical (median), usec (lower is better)" ;;
	write_imm_lat) echo "swiw-bench -o write_imm (RDMA Write with Immediate ping-pong) vs" \
		"TCP ping-pong: one-way latency, t_typical (median), usec (lower is better)" ;;
	write_lat) echo "ib_$1 (the target polls its memory) vs TCP ping-pong: one-way" \
		"latency, t_typical (median), usec (lower is better)" ;;
	read_lat | atomic_lat) echo "ib_$1 vs two TCP one-way hops: round trip," \
		"t_typical (median), usec (lower is better)" ;;
	atomic_bw) echo "ib_$1 (8 B) vs TCP stream of 8-byte messages: BW average," \
		"MB/s (MB = 2^20; higher is better)" ;;
	*_bw) echo "ib_$1 vs TCP stream: BW average, MB/s (MB = 2^20; higher is better)" ;;
	esac
}

# print_floor TEST: the table of swiw against the floor of a placing
# thread (floor_once), where the test has one.
print_floor() {
	awk '$14 != "-"' "$RESULTS" | grep -q "^$1 " || return 0
	echo
	echo "ib_$1 vs TCP placed by a thread (tcp_ref -T: the floor of placement by a" \
		"progress thread that sleeps until data arrives): one-way latency," \
		"t_typical (median), usec (lower is better)"
	awk -v t="$1" '
		BEGIN { printf "%10s %12s %12s %11s %10s\n", "bytes", "swiw", "TCP+thread",
			"swiw/floor", "floor/TCP" }
		$1 == t && $14 != "-" {
			printf "%10d %12.2f %12.2f %10.2fx %9.2fx\n", $2, $3, $14, $15, $16
		}' "$RESULTS"
}

# print_progress TEST: with --peers, write_lat's like-for-like figure
# (progress_once) beside UCX's, which the peers column judges.
print_progress() {
	awk '$17 != "-"' "$RESULTS" | grep -q "^$1 " || return 0
	echo
	echo "swiw-bench -o write -P (the target polls its CQ and its memory, as" \
		"UCX's ucp_put_lat's target calls progress) vs TCP ping-pong:" \
		"one-way latency, t_typical (median), usec; the peers column of" \
		"ib_$1 judges this figure against UCX's"
	awk -v t="$1" '
		function r(v) { return v == "-" ? "-" : sprintf("%.2fx", v) }
		BEGIN { printf "%10s %12s %12s %10s %10s\n", "bytes", "swiw -P", "TCP",
			"swiw-P/TCP", "UCX/TCP" }
		$1 == t && $17 != "-" {
			printf "%10d %12.2f %12.2f %9.2fx %10s\n", $2, $17, $4, $18, r($13)
		}' "$RESULTS"
}

# Rows: bytes, swiw, TCP, swiw/TCP, the aim and whether the cell meets it.
print_table() {
	local t=$1

	echo
	title_of "$t"
	if [ -n "$PEERS" ]; then
		print_peers "$t"
		return
	fi
	awk -v t="$t" '
		BEGIN { printf "%10s %12s %12s %10s %8s\n", "bytes", "swiw", "TCP",
			"swiw/TCP", "aim" }
		$1 == t {
			aim = $6 == "-" ? "-" : $6 $7 "x"
			printf "%10d %12.2f %12.2f %9.2fx %8s", $2, $3, $4, $5, aim
			print $8 == "-" ? "" : "  " $8
		}' "$RESULTS"
}

echo "swiw vs plain TCP on $PATH_NOTE"
[ -z "$PIN" ] || echo "server on CPU ${PIN%,*}, client on CPU ${PIN#*,} (--pin)"
echo "iterations per run: ${LAT_ITERS} latency, ${BW_ITERS} bandwidth; median of $REPEAT" \
	"interleaved pair(s) per size (TCP first in every second round), swiw/TCP the median of the pairs' ratios;" \
	"$(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n)"
for t in $TESTS; do
	case "$t" in
	atomic_*) sizes=8 ;;
	*_lat*) sizes=$LAT_SIZES ;;
	*_bw) sizes=$BW_SIZES ;;
	esac
	for size in $sizes; do
		: >"$T_TMP/swiw.v"
		: >"$T_TMP/tcp.v"
		: >"$T_TMP/fi.v"
		: >"$T_TMP/ucx.v"
		: >"$T_TMP/floor.v"
		: >"$T_TMP/prog.v"
		for ((r = 0; r < REPEAT; r++)); do
			# Odd repeats run TCP first: on this kind of host the
			# second run of a pair reads slower more often than not,
			# whichever program it is, so the order alternates.
			if ((r % 2)); then
				tcp_once "$t" "$size"
				tv=$VALUE
				swiw_once "$t" "$size"
				sv=$VALUE
			else
				swiw_once "$t" "$size"
				sv=$VALUE
				tcp_once "$t" "$size"
				tv=$VALUE
			fi
			echo "$sv" >>"$T_TMP/swiw.v"
			echo "$tv" >>"$T_TMP/tcp.v"
			if [ "$t" = write_lat ]; then
				floor_once "$size"
				echo "$VALUE" >>"$T_TMP/floor.v"
			fi
			[ -n "$PEERS" ] || continue
			if [ "$t" = write_lat ]; then
				progress_once "$size"
				echo "$VALUE" >>"$T_TMP/prog.v"
			fi
			fi_once "$t" "$size"
			[ "$VALUE" = - ] || echo "$VALUE" >>"$T_TMP/fi.v"
			ucx_once "$t" "$size"
			[ "$VALUE" = - ] || echo "$VALUE" >>"$T_TMP/ucx.v"
		done
		sv=$(median <"$T_TMP/swiw.v")
		tv=$(median <"$T_TMP/tcp.v")
		fv=- uv=-
		[ ! -s "$T_TMP/fi.v" ] || fv=$(median <"$T_TMP/fi.v")
		[ ! -s "$T_TMP/ucx.v" ] || uv=$(median <"$T_TMP/ucx.v")
		ratio=$(pair_ratio "$T_TMP/swiw.v" "$T_TMP/tcp.v")
		fr=- ur=-
		[ ! -s "$T_TMP/fi.v" ] || fr=$(pair_ratio "$T_TMP/fi.v" "$T_TMP/tcp.v")
		[ ! -s "$T_TMP/ucx.v" ] || ur=$(pair_ratio "$T_TMP/ucx.v" "$T_TMP/tcp.v")
		fl=- flr=- ftr=-
		if [ -s "$T_TMP/floor.v" ]; then
			fl=$(median <"$T_TMP/floor.v")
			flr=$(pair_ratio "$T_TMP/swiw.v" "$T_TMP/floor.v")
			ftr=$(pair_ratio "$T_TMP/floor.v" "$T_TMP/tcp.v")
		fi
		pv=- pr=- peer_r=$ratio
		if [ -s "$T_TMP/prog.v" ]; then
			pv=$(median <"$T_TMP/prog.v")
			pr=$(pair_ratio "$T_TMP/prog.v" "$T_TMP/tcp.v")
			peer_r=$pr
		fi
		aim=$(aim_of "$t" "$size")
		met=-
		if [ "$aim" != - ]; then
			met=$(awk -v r="$ratio" -v op="${aim% *}" -v a="${aim#* }" 'BEGIN {
				r = sprintf("%.2f", r) + 0
				print (op == "<=" ? r <= a : r >= a) ? "MET" : "MISSED" }')
		fi
		[ "$aim" != - ] || aim='- -'
		echo "$t $size $sv $tv $ratio $aim $met $fv $uv" \
			"$(peers_of "$t" "$peer_r" "$fr" "$ur") $fr $ur $fl $flr $ftr $pv $pr" >>"$RESULTS"
		fnote=''
		[ "$fl" = - ] || fnote=", TCP placed by a thread $fl, swiw/floor $flr"
		# Each round's pair too: a median of few rounds on a noisy host
		# is read back from them.
		progress "$t $size B: swiw $sv, TCP $tv, swiw/TCP ${ratio}$fnote;" \
			"rounds (swiw/TCP): $(paste -d / "$T_TMP/swiw.v" "$T_TMP/tcp.v" | tr '\n' ' ' | sed 's/ $//')"
	done
	print_table "$t"
	print_floor "$t"
	print_progress "$t"
done

# --- verdict ----------------------------------------------------------------------
verdict=$(awk '
	$8 != "-" {
		n++
		if ($8 == "MET")
			met++
		else
			missed = missed sprintf("%s ib_%s %d B %.2fx (aim %s %sx)",
					       missed == "" ? "" : ",", $1, $2, $5, $6, $7)
	}
	END {
		if (!n)
			print "verdict: no cell with an aim measured"
		else if (met == n)
			printf "verdict: all %d cells with an aim MET\n", n
		else
			printf "verdict: %d of %d cells with an aim MET; MISSED:%s\n", met, n, missed
	}' "$RESULTS")
if [ -n "$PEERS" ]; then
	verdict+=$'\n'$(awk '
		$11 != "-" {
			n++
			if ($11 == "AHEAD") {
				ahead++
				next
			}
			behind = substr($11, 8)
			gsub(",", " ", behind)
			list = list sprintf("%s ib_%s %d B (behind %s)", list == "" ? "" : ",",
					    $1, $2, behind)
		}
		END {
			if (!n)
				print "peers: no cell has a libfabric or UCX figure"
			else if (ahead == n)
				printf "peers: swiw ahead of libfabric tcp and UCX tcp in all %d cells\n", n
			else
				printf "peers: swiw ahead of libfabric tcp and UCX tcp in %d of %d cells; BEHIND:%s\n",
					ahead, n, list
		}' "$RESULTS")
fi
# Where write_lat misses its aim, what the floor says of it: the aim is
# out of reach of any design that places from a sleeping thread when the
# floor itself is above it.
floor_line=$(awk '
	$1 == "write_lat" && $14 != "-" && $8 != "-" {
		n++
		if (n == 1 || $16 < flo) flo = $16
		if (n == 1 || $16 > fhi) fhi = $16
		if (n == 1 || $15 < slo) slo = $15
		if (n == 1 || $15 > shi) shi = $15
	}
	END {
		if (n)
			printf "floor: ib_write_lat, TCP placed by a thread is %.2f-%.2fx busy-polled TCP;" \
				" swiw is %.2f-%.2fx that floor (%d cells)\n", flo, fhi, slo, shi, n
	}' "$RESULTS")
[ -z "$floor_line" ] || verdict+=$'\n'$floor_line
echo
echo "$verdict"

# --- CSV and plot -----------------------------------------------------------------
if [ -n "$CSV" ]; then
	awk -v peers="$PEERS" '
		BEGIN {
			printf "test,bytes,metric,unit,swiw,tcp,ratio,aim,met"
			print peers ? ",libfabric,ucx" : ""
		}
		{
			lat = $1 ~ /_lat/
			printf "ib_%s,%d,%s,%s,%s,%s,%s,%s,%s", $1, $2,
				lat ? "t_typical" : "bw_average",
				lat ? "usec" : "MiB/s", $3, $4, $5,
				$6 == "-" ? "" : $6 " " $7, $8 == "-" ? "" : $8
			if (peers)
				printf ",%s,%s", $9 == "-" ? "" : $9, $10 == "-" ? "" : $10
			print ""
		}' "$RESULTS" >"$CSV" || fail "cannot write $CSV"
	progress "figures written to $CSV"
fi

# write_plot FILE [OUTPUT TERMINAL]: a gnuplot script with the data inline.
write_plot() {
	local t n=0 cols=1

	for t in $TESTS; do n=$((n + 1)); done
	[ "$n" -gt 1 ] && cols=2
	{
		echo "# swiw vs plain TCP, $PATH_NOTE"
		echo "# Written by $ME; run: gnuplot $(basename "$1")"
		if [ -n "${2:-}" ]; then
			echo "set terminal $3 size 1200,$((450 * ((n + 1) / 2)))"
			echo "set output '$2'"
		fi
		for t in $TESTS; do
			echo "\$$t << EOD"
			awk -v t="$t" '$1 == t { print $2, $3, $4, $9, $10 }' "$RESULTS"
			echo "EOD"
		done
		echo "set multiplot layout $(((n + cols - 1) / cols)),$cols"
		echo "set logscale x 2"
		echo "set xlabel 'message size (bytes)'"
		echo "set key top left"
		echo "set grid"
		echo "set datafile missing '-'"
		for t in $TESTS; do
			case "$t" in
			*_lat*)
				echo "set logscale y"
				echo "set ylabel 'latency, median (usec)'"
				;;
			*_bw)
				echo "unset logscale y"
				echo "set ylabel 'BW average (MB/s, 2^20)'"
				;;
			esac
			echo "set title 'ib_$t vs TCP'"
			if [ -n "$PEERS" ]; then
				echo "plot \$$t using 1:2 with linespoints title 'swiw', \\"
				echo "     \$$t using 1:3 with linespoints title 'TCP', \\"
				echo "     \$$t using 1:4 with linespoints title 'libfabric tcp', \\"
				echo "     \$$t using 1:5 with linespoints title 'UCX tcp'"
			else
				echo "plot \$$t using 1:2 with linespoints title 'swiw', \\"
				echo "     \$$t using 1:3 with linespoints title 'TCP'"
			fi
		done
		echo "unset multiplot"
	} >"$1"
}

if [ -n "$PLOT" ]; then
	case "$PLOT" in
	*.svg | *.png)
		term=svg
		[[ "$PLOT" == *.png ]] && term=pngcairo
		write_plot "$PLOT.gp" "$PLOT" "$term" || fail "cannot write $PLOT.gp"
		if command -v gnuplot >/dev/null 2>&1; then
			gnuplot "$PLOT.gp" || fail "gnuplot failed on $PLOT.gp"
			progress "plot written to $PLOT (script $PLOT.gp)"
		else
			progress "gnuplot is not installed: wrote the script $PLOT.gp;" \
				"'gnuplot $PLOT.gp' makes $PLOT"
		fi
		;;
	*)
		write_plot "$PLOT" || fail "cannot write $PLOT"
		progress "gnuplot script written to $PLOT"
		;;
	esac
fi
exit 0
