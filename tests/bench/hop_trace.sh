#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# hop_trace.sh: where a small message's one-way time goes, swiw beside
# plain TCP, read off the system calls of both ping-pongs.
#
# ib_send_lat over swiw, then tcp_ref's busy-polled ping-pong, each run
# while perf records every system call's entry and exit for a short
# window. Per hop (one message received, the answer sent), it prints:
#   user    the time from the receive that returned the message to the
#           send of the answer, in the same thread: the user-space path
#           (deframe, place, complete, poll_cq, the program, post_send,
#           frame); TCP's is the program alone
#   wire    from one side's send to the other side's receive returning
#           the message: the kernel's path and the time the receiver
#           takes to look again (its empty-poll cycle)
#   calls   system calls per message received, by kind, of the program's
#           threads and of swiw's progress thread
# The tracing adds some 0.2-0.4 us to every call, and perf's own work
# competes for the CPUs, more so with the program that makes more calls:
# the user time per hop is the figure to compare; the wire time, the
# tails and the calls per message are those of the traced run. A
# benchmark: it fails only if a run fails. x86_64 system call numbers.
# Needs root and perf.
set -u -o pipefail
. "$(dirname "$0")/../lib/swiw_test.sh"

ME=hop_trace
SIZE=64
WINDOW=0.3
WARM=1
PORT=18720
BUILD=${SWIW_BUILD:-}

usage() {
	cat <<EOF
Usage: $ME [--build DIR] [-s SIZE] [--window SEC] [--warm SEC] [--port P]

  --build DIR     swiw build directory (its bin/ has swiw-run and tcp_ref;
                  default \$SWIW_BUILD, else swiw-run and tcp_ref on PATH)
  -s SIZE         message size in bytes (default $SIZE)
  --window SEC    how long perf records each ping-pong (default $WINDOW)
  --warm SEC      how long each runs before that (default $WARM)
  --port P        first TCP port (default $PORT; P and P+1 are used)

HOP_KEEP=1 in the environment keeps the traces (the directory is named
on standard error).
EOF
}

while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2 && shift ;;
	-s) SIZE=$2 && shift ;;
	--window) WINDOW=$2 && shift ;;
	--warm) WARM=$2 && shift ;;
	--port) PORT=$2 && shift ;;
	-h | --help) usage && exit 0 ;;
	*) usage >&2 && exit 2 ;;
	esac
	shift
done
case "$SIZE$PORT" in
*[!0-9]*) fail "-s and --port take numbers" ;;
esac

prog() {
	if [ -n "$BUILD" ] && [ -x "$BUILD/bin/$1" ]; then
		echo "$BUILD/bin/$1"
	else
		command -v "$1" || echo "$1"
	fi
}
SWIW_RUN=$(prog swiw-run)
TCP_REF=$(prog tcp_ref)
[ -x "$SWIW_RUN" ] || fail "swiw-run not found (use --build)"
[ -x "$TCP_REF" ] || fail "tcp_ref not found (use --build)"
need_root
need_cmd perf ib_send_lat awk
[ "$(uname -m)" = x86_64 ] || fail "system call numbers are x86_64's; this is $(uname -m)"
swiw_prefix "$SWIW_RUN"

TMP=$(mktemp -d /tmp/hop_trace.XXXXXX)
PIDS=()
cleanup() {
	local p

	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
	if [ -n "${HOP_KEEP:-}" ]; then
		echo "$ME: traces kept in $TMP" >&2
	else
		rm -rf "$TMP"
	fi
}
trap cleanup EXIT

# start NAME SERVER... -- CLIENT...: runs the pair in the background.
start() {
	local name=$1 srv=() cli=()

	shift
	while [ "$1" != -- ]; do srv+=("$1") && shift; done
	shift
	cli=("$@")
	PIDS=()
	"${srv[@]}" >"$TMP/$name.srv" 2>&1 &
	PIDS+=($!)
	sleep 0.5
	"${cli[@]}" >"$TMP/$name.cli" 2>&1 &
	PIDS+=($!)
}

# window NAME: perf records the window; the trace in $TMP/NAME.txt.
window() {
	kill -0 "${PIDS[1]}" 2>/dev/null ||
		fail "$1: the ping-pong ended early: $(tail -n 3 "$TMP/$1.cli")"
	perf record -q -a -m 8192 -e raw_syscalls:sys_enter,raw_syscalls:sys_exit \
		-o "$TMP/$1.data" -- sleep "$WINDOW" >/dev/null 2>&1 ||
		fail "$1: perf record failed (perf_event_paranoid, tracefs?)"
	perf script -i "$TMP/$1.data" --ns -F comm,tid,time,event,trace \
		>"$TMP/$1.txt" 2>/dev/null ||
		fail "$1: perf script failed"
	rm -f "$TMP/$1.data"
}

stop() {
	kill "${PIDS[@]}" 2>/dev/null
	wait 2>/dev/null
	PIDS=()
}

# summarize FILE PROGRAM: "key value" lines for the program's threads and
# swiw's progress threads.
summarize() {
	rm -f "$1.samples"
	awk -v prog="$2" -v out="$1.samples" '
	function nm(n) {
		if (n == 44 || n == 46) return "send"
		if (n == 45 || n == 47) return "recv"
		if (n == 232 || n == 281 || n == 441) return "epoll_wait"
		if (n == 0) return "read"
		if (n == 1) return "write"
		if (n == 7) return "poll"
		if (n == 24) return "sched_yield"
		if (n == 35 || n == 230) return "nanosleep"
		if (n == 202) return "futex"
		if (n == 271) return "ppoll"
		return "other"
	}
	$1 != prog && $1 != "swiw-engine" { next }
	{
		tid = $2; t = $3; sub(":", "", t); t *= 1e6
		kind = $4; nr = $6 + 0
		side = ($1 == prog) ? "app" : "thread"
	}
	kind == "raw_syscalls:sys_enter:" {
		calls[side "." nm(nr)]++
		if (side == "app" && (nr == 44 || nr == 46)) {
			if (tid in rx) { print "user", t - rx[tid] > out; nu++; delete rx[tid] }
			last_tx = t; last_tx_tid = tid
		}
		next
	}
	kind == "raw_syscalls:sys_exit:" && side == "app" && (nr == 45 || nr == 47) {
		ret = $NF + 0
		if (ret <= 0)
			next
		msgs++
		rx[tid] = t
		if (last_tx_tid != "" && last_tx_tid != tid) {
			print "wire", t - last_tx > out; nw++; last_tx_tid = ""
		}
	}
	END {
		if (!msgs || !nu || !nw) { print "none"; exit }
		printf "messages %d\n", msgs
		for (k in calls)
			printf "calls.%s %.2f\n", k, calls[k] / msgs
	}' "$1"
	# Quantiles of every kind of sample: "kind.p10 x" and so on.
	[ -s "$1.samples" ] || return 0
	sort -k1,1 -k2,2g "$1.samples" | awk '
	function flush() {
		if (!n) return
		printf "%s.p10 %.3f\n%s.median %.3f\n%s.p90 %.3f\n",
		       k, v[int(n * 0.1) + 1], k, v[int(n * 0.5) + 1],
		       k, v[int(n * 0.9) + 1]
	}
	$1 != k { flush(); k = $1; n = 0 }
	{ v[++n] = $2 }
	END { flush() }'
}

# trace NAME PROGRAM SERVER... -- CLIENT...: the pair's summary in
# $TMP/NAME.sum, from the first window that saw messages (a sanitizer
# build may take seconds to connect).
trace() {
	local name=$1 prog=$2 try

	shift 2
	note "$name: $WINDOW s traced after $WARM s"
	start "$name" "$@"
	sleep "$WARM"
	for try in 1 2 3 4 5 6; do
		window "$name"
		summarize "$TMP/$name.txt" "$prog" >"$TMP/$name.sum"
		grep -q '^messages' "$TMP/$name.sum" && break
		note "$name: no message yet, again"
		sleep 1
	done
	stop
	grep -q '^messages' "$TMP/$name.sum" ||
		fail "$name: no message in $try windows: $(tail -n 3 "$TMP/$name.cli")"
}

trace swiw ib_send_lat \
	"${SWIW[@]}" ib_send_lat -d swiw_lo -x 0 -F -p "$PORT" -s "$SIZE" -n 100000000 -- \
	"${SWIW[@]}" ib_send_lat -d swiw_lo -x 0 -F -p "$PORT" -s "$SIZE" -n 100000000 127.0.0.1
trace tcp tcp_ref \
	"$TCP_REF" -p $((PORT + 1)) lat -- \
	"$TCP_REF" -p $((PORT + 1)) -s "$SIZE" -n 100000000 lat 127.0.0.1

# val FILE KEY: the summary's figure (0 if it has none).
val() {
	awk -v k="$2" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }' "$1"
}

echo
echo "one message of $SIZE B, per hop, microseconds (traced: compare the columns)"
printf "%-26s %10s %10s %10s\n" "" swiw TCP swiw-TCP
for k in user.p10 user.median user.p90 wire.p10 wire.median wire.p90; do
	a=$(val "$TMP/swiw.sum" "$k")
	b=$(val "$TMP/tcp.sum" "$k")
	printf "%-26s %10.3f %10.3f %+10.3f\n" "$k" "$a" "$b" \
		"$(awk -v a="$a" -v b="$b" 'BEGIN { print a - b }')"
done
echo
echo "system calls per message received (app: the program's threads; thread: swiw's)"
printf "%-26s %10s %10s\n" "" swiw TCP
for k in $(cat "$TMP/swiw.sum" "$TMP/tcp.sum" | awk '$1 ~ /^calls\./ { print $1 }' | sort -u); do
	a=$(val "$TMP/swiw.sum" "$k")
	b=$(val "$TMP/tcp.sum" "$k")
	[ "$a" = 0.00 ] && [ "$b" = 0.00 ] && continue
	printf "%-26s %10.2f %10.2f\n" "${k#calls.}" "$a" "$b"
done
echo
echo "messages traced: swiw $(val "$TMP/swiw.sum" messages), TCP $(val "$TMP/tcp.sum" messages)"
