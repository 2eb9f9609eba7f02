#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The guest side of perf_vm.sh: stock ib_write_bw and
# ib_read_lat over swiw_lo in the lab's guest, on the in-process engine and
# on the kernel helper (swiw.ko, added with run.sh --module), beside
# tcp_ref doing the same transfer over the same loopback in the same boot.
# Prints one table. A figure, not a test: QEMU TCG emulates every
# instruction, so the numbers compare the engines with each other and with
# TCP on this VM, not with real hardware. It fails only if a run fails.
. "$(dirname "$0")/../vm/guest_lib.sh"

need_swiw
TCP_REF=$SWIW_BUILD/bin/tcp_ref
unset SWIW_ENGINE
BW_SIZES=${PERF_BW_SIZES:-4096 65536 1048576}
LAT_SIZES=${PERF_LAT_SIZES:-8 4096}
BW_ITERS=${PERF_BW_ITERS:-2000}
LAT_ITERS=${PERF_LAT_ITERS:-500}
PORT=20000
T_LIMIT=120

# pair FIELD CMD... -- ARGS...: one server/client run of CMD ARGS on a
# fresh port; prints FIELD of the client's last figure line. Under TCG
# perftest's CPU clock fit can fail after a good run ("Can't produce a
# report"): that alone is retried.
pair() {
	local field=$1 try out cmd=()

	shift
	split_args "$@"
	cmd=("${BEFORE[@]}")
	set -- "${AFTER[@]}"
	for try in 1 2 3 4 5 6 7 8; do
		PORT=$((PORT + 1))
		if serve '' "$PORT" "${cmd[@]}" "$@" -p "$PORT"; then
			out=$(bounded "${cmd[@]}" "$@" -p "$PORT" 127.0.0.1 2>&1)
			served
		else
			out=$(cat "$T_TMP/srv.out" "$T_TMP/srv.err")
		fi
		if grep -Eq "$FIG" <<<"$out"; then
			grep -E "$FIG" <<<"$out" | tail -1 | awk -v f="$field" '{ print $f }'
			return 0
		fi
		grep -q "Can't produce a report" <<<"$out" || break
	done
	echo "perf: run failed: ${cmd[*]} $*" >&2
	echo "$out" >&2
	return 1
}
FIG='^[[:space:]]*[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+'

lab_lo_up
lab_swiw_load

declare -A fig
for s in $BW_SIZES; do
	for e in inprocess kernel; do
		fig[bw,$e,$s]=$(pair 4 env SWIW_ENGINE=$e "$SWIW_RUN" ib_write_bw -- \
			-d swiw_lo -x 0 -s "$s" -n "$BW_ITERS") || exit 1
	done
	fig[bw,tcp,$s]=$(pair 3 "$TCP_REF" bw -- -s "$s" -n "$BW_ITERS") || exit 1
done
for s in $LAT_SIZES; do
	for e in inprocess kernel; do
		fig[lat,$e,$s]=$(pair 5 env SWIW_ENGINE=$e "$SWIW_RUN" ib_read_lat -- \
			-d swiw_lo -x 0 -s "$s" -n "$LAT_ITERS") || exit 1
	done
	# A READ is a whole round trip: compare with TCP's (twice RTT/2).
	t=$(pair 4 "$TCP_REF" lat -- -s "$s" -n "$LAT_ITERS") || exit 1
	fig[lat,tcp,$s]=$(awk -v t="$t" 'BEGIN { printf "%.2f", 2 * t }')
done

# table KIND TITLE SIZE...: one table of the figures fig[KIND,...].
table() {
	local kind=$1 s

	echo "$2"
	printf '%10s %12s %14s %12s %10s\n' size in-process kernel-helper TCP kernel/TCP
	for s in "${@:3}"; do
		printf '%10s %12s %14s %12s %10s\n' "$s" "${fig[$kind,inprocess,$s]}" \
			"${fig[$kind,kernel,$s]}" "${fig[$kind,tcp,$s]}" \
			"$(awk -v a="${fig[$kind,kernel,$s]}" -v b="${fig[$kind,tcp,$s]}" \
				'BEGIN { printf "%.2fx", (b > 0 ? a / b : 0) }')"
	done
}

echo "== swiw in the VM lab: guest $(uname -r), $(nproc) vCPUs, QEMU TCG =="
# shellcheck disable=SC2086 # sizes are words
table bw "ib_write_bw, BW average [MB/s]" $BW_SIZES
# shellcheck disable=SC2086 # sizes are words
table lat "ib_read_lat, t_typical [usec] (TCP: a round trip)" $LAT_SIZES
lab_swiw_unload
