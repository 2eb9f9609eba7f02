#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The guest side of perf_vm.sh: stock ib_write_bw, ib_read_lat and
# ib_write_lat (the target spins on its memory) in the lab's guest over
#  - swiw_lo, on the in-process engine and on the kernel helper (swiw.ko,
#    added with run.sh --module);
#  - the kernel's siw (siw.ko from build_siw.sh), siw0 on a dummy link
#    (10.9.1.1; never lo: LAB.md "What breaks" 1), through rdma_cm (-R);
#  - the kernel's rxe (Debian's rdma_rxe), rxe0 on another dummy link
#    (10.9.0.1), through rdma_cm;
# and tcp_ref doing the same transfer over loopback, all in the same boot.
# PERF_LAT_ROUNDS=R (default 3) runs each latency cell R times, the
# stacks in turn and in reverse order every second round, and reports
# the median: under TCG one ib_write_lat run of a stack moves by a third
# from the next (perftest reads the emulated HPET on every turn of its
# wait loop), more than the stacks differ.
# PERF_PIN=1 runs each server on CPU 1 and each client on CPU 0 (taskset;
# threads inherit it), the figures of a CPU that is not shared between
# the two sides, which the scheduler otherwise decides run by run.
# Prints two tables, each row with the kernel helper's ratio to TCP and to
# siw and issue 15's aim for it: at least siw's bandwidth, at most siw's
# latency. Figures, not a test: QEMU TCG emulates every instruction, so the
# numbers compare the stacks with each other on this VM, not with real
# hardware. It fails only if a run fails.
. "$(dirname "$0")/../vm/guest_lib.sh"

need_swiw
TCP_REF=$SWIW_BUILD/bin/tcp_ref
unset SWIW_ENGINE
BW_SIZES=${PERF_BW_SIZES:-4096 65536 1048576}
LAT_SIZES=${PERF_LAT_SIZES:-8 4096}
WLAT_SIZES=${PERF_WLAT_SIZES:-8}
BW_ITERS=${PERF_BW_ITERS:-2000}
LAT_ITERS=${PERF_LAT_ITERS:-500}
LAT_ROUNDS=${PERF_LAT_ROUNDS:-3}
[[ $LAT_ROUNDS =~ ^[1-9][0-9]*$ ]] || fail "PERF_LAT_ROUNDS takes a count"
SIW_ADDR=10.9.1.1
RXE_ADDR=10.9.0.1
PORT=20000
T_LIMIT=120
SRV_PIN=() CLI_PIN=()
if [ "${PERF_PIN:-0}" = 1 ]; then
	[ "$(nproc)" -ge 2 ] || fail "PERF_PIN=1 needs 2 CPUs"
	SRV_PIN=(taskset -c 1) CLI_PIN=(taskset -c 0)
fi

# pair FIELD ADDR CMD... -- ARGS...: one server/client run of CMD ARGS on
# a fresh port, the client to ADDR; prints FIELD of the client's last
# figure line. The server is the passive side (the target of the WRITEs
# and READs): its CPU time (user + system, getrusage of its children by
# bash's times, which must run in that shell, not in a pipe's subshell)
# and wall time, in ms, go to $T_TMP/srv.cpu. Under TCG perftest's CPU clock fit can fail after a good
# run ("Can't produce a report"), and the kernel's siw, starved, has
# failed a run of its own (a flushed WR, then no data exchange): a failed
# run is said on stderr and runs again, three times at most.
pair() {
	local field=$1 addr=$2 try out cmd=()

	shift 2
	split_args "$@"
	cmd=("${BEFORE[@]}")
	set -- "${AFTER[@]}"
	for try in 1 2 3 4 5 6 7 8; do
		PORT=$((PORT + 1))
		rm -f "$T_TMP/srv.cpu"
		# shellcheck disable=SC2016 # the inner shell expands them
		if serve '' "$PORT" bash -c 's=$(date +%s%N); "${@:2}"; r=$?
			e=$(date +%s%N); times >"$1.t"
			awk -v w=$(((e - s) / 1000000)) "
				function ms(t) { split(t, a, /[ms]/); return (a[1] * 60 + a[2]) * 1000 }
				NR == 2 { printf \"%.0f %d\n\", ms(\$1) + ms(\$2), w }" "$1.t" >"$1"
			exit $r' _ "$T_TMP/srv.cpu" "${SRV_PIN[@]}" "${cmd[@]}" "$@" -p "$PORT"; then
			out=$(bounded "${CLI_PIN[@]}" "${cmd[@]}" "$@" -p "$PORT" "$addr" 2>&1)
			served
		else
			out=$(cat "$T_TMP/srv.out" "$T_TMP/srv.err")
		fi
		if grep -Eq "$FIG" <<<"$out"; then
			grep -E "$FIG" <<<"$out" | tail -1 | awk -v f="$field" '{ print $f }'
			return 0
		fi
		perftest_clock_unfit "$out" && continue
		[ "$try" -lt 3 ] || break
		echo "perf: run failed, again: ${cmd[*]} $* (to $addr)" >&2
		echo "$out" | tail -5 >&2
	done
	echo "perf: run failed: ${cmd[*]} $* (to $addr)" >&2
	echo "$out" >&2
	return 1
}
FIG='^[[:space:]]*[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+'

port_active() {
	ibv_devinfo -d "$1" 2>/dev/null | grep -q PORT_ACTIVE
}

lab_lo_up
lab_swiw_load
# rxe's ICRC needs the crc32 algorithm, which the kernel would load on
# demand (LAB.md, the self-contained initramfs).
for m in ib_core ib_uverbs iw_cm rdma_cm rdma_ucm crc32_generic siw rdma_rxe; do
	lab_modprobe "$m"
done
[[ $(modinfo -n siw) == */updates/* ]] || fail "modprobe siw would not load the one built"
lab_dummy siwd "$SIW_ADDR/24"
bounded rdma link add siw0 type siw netdev siwd || fail "rdma link add siw0"
lab_dummy rxed "$RXE_ADDR/24"
bounded rdma link add rxe0 type rxe netdev rxed || fail "rdma link add rxe0"
wait_until 20 "siw0 PORT_ACTIVE" port_active siw0
wait_until 20 "rxe0 PORT_ACTIVE" port_active rxe0

# got KIND STACK SIZE FIGURE: fig (the median of the cell's runs so far)
# and cpu of one run, and the lines perf_vm.sh gathers over boots:
# "PERF-FIG kind stack size figure" and "PERF-CPU kind stack size cpu-ms
# wall-ms" (the passive side's).
declare -A fig cpu runs
got() {
	local c

	runs[$1,$2,$3]+="$4 "
	# shellcheck disable=SC2086 # the figures are words
	fig[$1,$2,$3]=$(printf '%s\n' ${runs[$1,$2,$3]} | median)
	c=$(cat "$T_TMP/srv.cpu" 2>/dev/null)
	cpu[$1,$2,$3]=${c:-- -}
	echo "PERF-FIG $1 $2 $3 $4"
	echo "PERF-CPU $1 $2 $3 ${cpu[$1,$2,$3]}"
}

# run_all KIND PROG FIELD ITERS SIZE [ORDER]: the figure of each stack,
# in ORDER (default: in-process, kernel helper, siw, rxe).
run_all() {
	local kind=$1 prog=$2 field=$3 n=$4 s=$5 e f

	for e in ${6:-inprocess kernel siw rxe}; do
		case $e in
		inprocess | kernel)
			f=$(pair "$field" 127.0.0.1 env SWIW_ENGINE=$e "$SWIW_RUN" \
				"$prog" -- -d swiw_lo -x 0 -s "$s" -n "$n") || exit 1
			;;
		siw) f=$(pair "$field" "$SIW_ADDR" "$prog" -- -R -d siw0 -s "$s" -n "$n") || exit 1 ;;
		rxe) f=$(pair "$field" "$RXE_ADDR" "$prog" -- -R -d rxe0 -s "$s" -n "$n") || exit 1 ;;
		esac
		got "$kind" "$e" "$s" "$f"
	done
}
for s in $BW_SIZES; do
	run_all bw ib_write_bw 4 "$BW_ITERS" "$s"
	f=$(pair 3 127.0.0.1 "$TCP_REF" bw -- -s "$s" -n "$BW_ITERS") || exit 1
	got bw tcp "$s" "$f"
done
for ((round = 0; round < LAT_ROUNDS; round++)); do
	order="inprocess kernel siw rxe"
	((round % 2 == 0)) || order="rxe siw kernel inprocess"
	for s in $LAT_SIZES; do
		run_all lat ib_read_lat 5 "$LAT_ITERS" "$s" "$order"
		# A READ is a whole round trip: compare with TCP's (twice RTT/2).
		t=$(pair 4 127.0.0.1 "$TCP_REF" lat -- -s "$s" -n "$LAT_ITERS") || exit 1
		got lat tcp "$s" "$(awk -v t="$t" 'BEGIN { printf "%.2f", 2 * t }')"
	done
	for s in $WLAT_SIZES; do
		run_all wlat ib_write_lat 5 "$LAT_ITERS" "$s" "$order"
		# One way, as perftest's figure.
		t=$(pair 4 127.0.0.1 "$TCP_REF" lat -- -s "$s" -n "$LAT_ITERS") || exit 1
		got wlat tcp "$s" "$t"
	done
	echo "perf: latency round $((round + 1)) of $LAT_ROUNDS done"
done

# table KIND TITLE AIM SIZE...: one table of the figures fig[KIND,...];
# AIM ("ge" or "le") is how the kernel helper must stand to siw.
table() {
	local kind=$1 aim=$3 s k

	echo "$2"
	printf '%10s %11s %14s %10s %10s %10s %11s %11s  %s\n' size in-process \
		kernel-helper siw rxe TCP kernel/TCP kernel/siw \
		"aim: kernel helper $([ "$aim" = ge ] && echo '>=' || echo '<=') siw"
	for s in "${@:4}"; do
		k=${fig[$kind,kernel,$s]}
		printf '%10s %11s %14s %10s %10s %10s %11s %11s  %s\n' "$s" \
			"${fig[$kind,inprocess,$s]}" "$k" "${fig[$kind,siw,$s]}" \
			"${fig[$kind,rxe,$s]}" "${fig[$kind,tcp,$s]}" \
			"$(awk -v a="$k" -v b="${fig[$kind,tcp,$s]}" \
				'BEGIN { printf "%.2fx", (b > 0 ? a / b : 0) }')" \
			"$(awk -v a="$k" -v b="${fig[$kind,siw,$s]}" \
				'BEGIN { printf "%.2fx", (b > 0 ? a / b : 0) }')" \
			"$(awk -v a="$k" -v b="${fig[$kind,siw,$s]}" -v aim="$aim" \
				'BEGIN { ok = aim == "ge" ? a >= b : a <= b
					 print ok ? "met" : "not met" }')"
	done
}

# cpu_table KIND TITLE SIZE...: the passive side's CPU of each run, with
# the aim that the kernel helper's target spends no more than siw's, whose
# data path is all in the kernel: what either spends is setting up.
cpu_table() {
	local kind=$1 s e

	echo "$2"
	printf '%10s %16s %16s %16s %16s %16s  %s\n' size in-process kernel-helper \
		siw rxe TCP "aim: kernel helper's target <= siw's (+10 %)"
	for s in "${@:3}"; do
		printf '%10s' "$s"
		for e in inprocess kernel siw rxe tcp; do
			# shellcheck disable=SC2086 # "cpu wall"
			printf ' %16s' "$(printf '%s/%s' ${cpu[$kind,$e,$s]})"
		done
		# shellcheck disable=SC2086 # "cpu wall"
		printf '  %s\n' "$(awk -v k="${cpu[$kind,kernel,$s]%% *}" \
			-v s="${cpu[$kind,siw,$s]%% *}" 'BEGIN {
				if (k == "-" || s == "-") print "-"
				else print k <= 1.1 * s ? "met" : "not met" }')"
	done
}

echo "== swiw in the VM lab: guest $(uname -r), $(nproc) vCPUs, QEMU TCG$([ ${#SRV_PIN[@]} -eq 0 ] || echo ", servers on CPU 1, clients on CPU 0") =="
# shellcheck disable=SC2086 # sizes are words
table bw "ib_write_bw, BW average [MB/s]" ge $BW_SIZES
# shellcheck disable=SC2086 # sizes are words
table lat "ib_read_lat, t_typical [usec] (TCP: a round trip)" le $LAT_SIZES
# shellcheck disable=SC2086 # sizes are words
table wlat "ib_write_lat, t_typical [usec] (TCP: one way)" le $WLAT_SIZES
# shellcheck disable=SC2086 # sizes are words
cpu_table bw "ib_write_bw, the target's (server's) CPU/wall [ms]" $BW_SIZES
# shellcheck disable=SC2086 # sizes are words
cpu_table lat "ib_read_lat, the target's (server's) CPU/wall [ms]" $LAT_SIZES
bounded rdma link del siw0 && bounded rdma link del rxe0 || fail "rdma link del"
lab_swiw_unload
