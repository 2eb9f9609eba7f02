#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# interop.matrix, the guest side (tests/vm/run.sh with siw.ko, siw_crc.ko,
# siw_p2p.ko, siw_v1.ko from build_siw.sh and this build's swiw.ko):
# swiw against the kernel's siw, and siw against itself, through rdma_cm
# with the stock rping and perftest -R.
#
# The link: a veth pair, siwv (10.9.2.1) here with siw0 on it, swv
# (10.9.2.2) in the network namespace swns, where the swiw peers of siw
# run (never lo for siw: LAB.md "What breaks" 1). siw <-> siw runs on
# 10.9.2.1 itself (its traffic crosses lo); swiw <-> swiw runs between
# swiw_siwv here and swiw_swv in swns. Segmentation offloads are off, so
# the capture holds TCP's real segments (Wireshark finds markers only
# there, tests/wire/capture_check.sh).
#
# One capture per loaded siw variant (dumpcap -i any, this namespace:
# every packet of both links once); each run has its own ports, by which
# the host cuts the capture into one file per run (pcap_ports.py split)
# and judges each with capture_check.sh. keep/results gets a line a run:
#   NAME|GROUP|TOOL|SERVER|CLIENT|MPA|RESULT|FIGURE|UNIT|PCAP|PORTS|CRC|MADDRS|NOTE
#
# MATRIX_ROWS (an ERE) runs only the rows whose NAME matches it.
. "$(dirname "$0")/../vm/guest_lib.sh"

need_swiw
KEEP=/tmp/out/keep
SIWA=10.9.2.1
SWA=10.9.2.2
NS=swns
ROWS=${MATRIX_ROWS:-.}
# Small runs: the whole matrix must fit in a few minutes of TCG.
BW_N=${MATRIX_BW_N:-100}
READ_N=${MATRIX_READ_N:-100}
LAT_N=${MATRIX_LAT_N:-200}
PING_N=${MATRIX_PING_N:-100}
# shellcheck disable=SC2034 # bounded reads it
T_LIMIT=60
mkdir -p "$KEEP" || fail "cannot make $KEEP"
: >"$KEEP/results"
: >"$KEEP/plan"

t_setup() {
	local d

	lab_lo_up
	veth_pair '' siwv "$SIWA" "$NS" swv "$SWA"
	no_offloads '' siwv
	no_offloads "$NS" swv
	for d in ib_core ib_uverbs iw_cm rdma_cm rdma_ucm; do
		lab_modprobe "$d"
	done
	[[ $(modinfo -n swiw) == */updates/* ]] || fail "modprobe swiw would not load this build's"
	lab_swiw_load
}

siw0_active() {
	ibv_devinfo -d siw0 2>/dev/null | grep -q PORT_ACTIVE
}

# t_load MODULE: siw or a variant from the lab's updates/, siw0 on siwv.
t_load() {
	local path

	path=$(modinfo -n "$1") || fail "modinfo $1"
	[[ $path == */updates/* ]] || fail "modprobe $1 would load $path, not the one built"
	lab_modprobe "$1"
	bounded rdma link add siw0 type siw netdev siwv || fail "rdma link add siw0"
	wait_until 20 "siw0 PORT_ACTIVE" siw0_active
	note "$1 from $path"
}

t_unload() {
	bounded rdma link del siw0 || fail "rdma link del siw0"
	bounded rmmod "$1" || fail "rmmod $1"
}

# --- the capture ---------------------------------------------------------
# Two captures a phase: here on every link (-i any) and in swns on swv.
# A capture holds a link's received packets in the order the CPUs handed
# them over, which under load is not the wire's: a bulk stream is judged
# from its sender's side, where the order is TCP's own (row, CAP_SIDE).
# A refused connection to a port from swns (so it crosses the veth)
# marks the start and the end in both.
CAP=''
CAP_BUFFER=64
cap_start() {
	CAP=$KEEP/$1.pcap
	NCAP=$KEEP/$1-ns.pcap
	rm -f "$CAP" "$NCAP"
	dumpcap_start '' any "tcp and net 10.9.2.0/24" "$CAP"
	dumpcap_start "$NS" swv "tcp and net 10.9.2.0/24" "$NCAP"
	# The first start reads dumpcap over cold 9p (LAB.md §2).
	wait_for 60 "dumpcap capturing" dumpcap_probe "$NS" "$SIWA" 9 || {
		cat "$T_TMP"/dumpcap-*.err
		return 1
	}
}

cap_stop() {
	local ok=0

	wait_for 30 "dumpcap wrote the traffic" dumpcap_probe "$NS" "$SIWA" 19 || ok=1
	dumpcap_stop || ok=1
	return $ok
}

# cap_stopped NAME: the test NAME stops the captures (lab_test runs it in
# a subshell, which cannot forget them here).
cap_stopped() {
	lab_test "$1" cap_stop
	CAP_PIDS=() CAP_FILES=()
}

capturing() {
	[ ${#CAP_PIDS[@]} -gt 0 ]
}

# --- peers ---------------------------------------------------------------
# peer SPEC: sets P_PRE (the command prefix), P_NS (the network namespace
# it runs in, "" for this one), P_DEV, P_ADDR.
#   siw               the kernel's siw (siw0, 10.9.2.1)
#   sw:ENGINE[:K=V]...  swiw in swns (swiw_swv, 10.9.2.2), SWIW_ENGINE and
#                     more SWIW_* settings
#   swr:ENGINE[:K=V]... swiw here (swiw_siwv, 10.9.2.1), for swiw <-> swiw
#   fwd               swiw-run here with siwv excluded from swiw's
#                     interfaces: its rdma_cm must hand 10.9.2.1 to the
#                     kernel's, so the program runs over siw0
peer() {
	local spec=$1 kind eng kv

	kind=${spec%%:*}
	P_NS=''
	case $kind in
	siw)
		P_PRE=()
		P_DEV=siw0
		P_ADDR=$SIWA
		return
		;;
	fwd)
		P_PRE=(env SWIW_INTERFACES='!siwv' "$SWIW_RUN")
		P_DEV=siw0
		P_ADDR=$SIWA
		return
		;;
	sw)
		P_PRE=(env)
		P_NS=$NS
		P_DEV=swiw_swv
		P_ADDR=$SWA
		;;
	swr)
		P_PRE=(env)
		P_DEV=swiw_siwv
		P_ADDR=$SIWA
		;;
	*) fail "bad peer '$spec'" ;;
	esac
	spec=${spec#*:}
	eng=${spec%%:*}
	P_PRE+=("SWIW_ENGINE=$eng")
	[ "$spec" = "$eng" ] || {
		IFS=: read -r -a kv <<<"${spec#*:}"
		P_PRE+=("${kv[@]}")
	}
	P_PRE+=("$SWIW_RUN")
}

# pair PORT SERVER... -- CLIENT...: the server in the background (in
# S_NS), the client (in C_NS) once it listens; both must exit 0.
pair() {
	local port=$1 srv=() cpre=() rc

	PAIR_CLI_RC=''
	shift
	split_args "$@"
	srv=("${BEFORE[@]}")
	set -- "${AFTER[@]}"
	if ! serve "$S_NS" "$port" "${srv[@]}"; then
		echo "server (exit $SRV_RC):"
		srv_log
		return 1
	fi
	[ -z "$C_NS" ] || cpre=(ip netns exec "$C_NS")
	bounded "${cpre[@]}" "$@" >"$T_TMP/cli.out" 2>&1
	rc=$?
	PAIR_CLI_RC=$rc
	# A failed client leaves the server waiting for a peer: it gets 5 s
	# to notice, not the whole T_LIMIT.
	if [ "$rc" -eq 0 ]; then
		served
	else
		served 5
	fi
	[ "$rc" -eq 0 ] && [ "$SRV_RC" -eq 0 ] && return 0
	echo "server (exit $SRV_RC): ${srv[*]}"
	srv_log
	echo "client (exit $rc): $*"
	cat "$T_TMP/cli.out"
	return 1
}

# srv_log: what the server of the last pair printed.
srv_log() {
	cat "$T_TMP/srv.out" "$T_TMP/srv.err"
}

# figure TOOL: from the client's result row (bytes, iterations, then the
# figures) the average bandwidth (MB/s) or the typical latency (usec).
figure() {
	local col=4

	case $1 in *_lat) col=5 ;; esac
	awk -v c="$col" '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5 { f = $c } END { print f }' \
		"$T_TMP/cli.out"
}

# --- rows ----------------------------------------------------------------
PORT=18000
R_PORTS=''
# record RESULT FIGURE UNIT NOTE: the current row's results line.
record() {
	local cap=$CAP

	[ "$CAP_SIDE" = ns ] && cap=$NCAP
	echo "$R_NAME|$R_GROUP|$R_TOOL|$R_SRV|$R_CLI|$R_MPA|$1|$2|$3|${cap##*/}|$R_PORTS|$R_CRC|$R_MADDRS|$4" \
		>>"$KEEP/results"
}

# rping_teardown_race: after a run that failed, true if only the stock
# rping's own teardown failed: both sides verified every ping and the
# client exited 0, but the server's CM thread read its event channel as
# it was destroyed ("rdma_get_cm_event: Bad file descriptor", seen with
# either peer under TCG; the capture is still judged). Noted in the row.
rping_teardown_race() {
	[ -z "$R_XFAIL" ] && [ -n "$PAIR_CLI_RC" ] && [ "$PAIR_CLI_RC" -eq 0 ] &&
		[ "$(srv_log | grep -c '^server ping data: rdma-ping-')" -eq "$PING_N" ] &&
		[ "$(grep -c '^ping data: rdma-ping-' "$T_TMP/cli.out")" -eq "$PING_N" ] &&
		srv_log | grep -q '^rdma_get_cm_event: Bad file descriptor' || return 1
	R_NOTE="the stock rping server failed its own teardown (rdma_get_cm_event: EBADF) after 100 pings"
	note "$R_NOTE"
}

# pair_why: the last pair's exit statuses and the last line each side
# printed, for a results line (no '|') and the FAIL line a CI keeps.
pair_why() {
	local s c

	s=$(srv_log | grep -v '^[[:space:]]*$' | tail -1 | tr '|' '/' | cut -c1-120)
	c=$(grep -v '^[[:space:]]*$' "$T_TMP/cli.out" | tail -1 | tr '|' '/' | cut -c1-120)
	echo "server exit ${SRV_RC:-?}${s:+ ($s)}, client exit ${PAIR_CLI_RC:-?}${c:+ ($c)}"
}

# t_rping: 100 verified ping-pongs; the figure is the client's wall time.
t_rping() {
	local start ms n port=$R_PORT retried='' why

	R_PORTS=''
	R_NOTE=''
	for _ in 1 2; do
		R_PORTS+="${R_PORTS:+,}$port"
		start=$(date +%s%N)
		# Line-buffered: a side killed by its bound still shows how
		# many pings it verified.
		pair "$port" "${S_PRE[@]}" stdbuf -oL rping -s -a "$S_ADDR" -p "$port" \
			-C "$PING_N" -v -- \
			"${C_PRE[@]}" stdbuf -oL rping -c -a "$S_ADDR" -p "$port" -C "$PING_N" -v &&
			break
		rping_teardown_race && break
		if [ -n "$R_XFAIL" ] && { srv_log; cat "$T_TMP/cli.out"; } | grep -q "$R_XFAIL"; then
			record PASS - - "expected failure: '$R_XFAIL'${R_NOTE:+; $R_NOTE}"
			note "failed as expected: '$R_XFAIL'"
			return 0
		fi
		why=$(pair_why)
		if [ "$R_GROUP" = siw-siw ] || [ "$R_GROUP" = forward ] &&
			[ -z "$retried" ]; then
			# No swiw in the data path: siw against itself, the
			# baseline or behind swiw's forwarding rdma_cm, failed
			# on its own, not the way its row expects (README).
			# Once more, noted.
			retried=1
			note "siw against itself failed: $why; again"
			R_NOTE="retried: siw against itself failed once ($why)"
			port=$((port + 1))
			continue
		fi
		record FAIL - - "rping failed: $why"
		fail "rping: $why"
	done
	[ -z "$R_XFAIL" ] || {
		record FAIL - - "rping passed; '$R_XFAIL' was expected"
		fail "rping passed, a failure ('$R_XFAIL') was expected: README"
	}
	ms=$((($(date +%s%N) - start) / 1000000))
	# -v prints each verified ping's data on both sides.
	n=$(grep -c '^ping data: rdma-ping-' "$T_TMP/cli.out")
	[ "$n" -eq "$PING_N" ] || {
		record FAIL - - "client printed $n pings"
		fail "rping client printed $n pings, $PING_N expected"
	}
	record PASS "$ms" ms "$R_NOTE"
	note "rping: $n pings in $ms ms"
}

# t_perf ARGS...: R_TOOL -R server and client. Under TCG perftest's cycle
# clock can be so far off that a good run reports 0.00, inf or nan, or
# fails its fit ("Can't produce a report"): only those run again, on the
# next port. A row whose runs all completed but whose clock never gave a
# figure passes with no figure, noted: what it tests, the interop, is the
# runs' exit status and their capture, which the host still judges.
t_perf() {
	local fig='' unit=MB/s port=$R_PORT ran=0 base_retried=''

	R_NOTE=''

	case $R_TOOL in *_lat) unit=usec ;; esac
	R_PORTS=''
	for _ in 1 2 3; do
		R_PORTS+="${R_PORTS:+,}$port"
		if pair "$port" "${S_PRE[@]}" "$R_TOOL" -R -d "$S_DEV" -F -p "$port" "$@" -- \
			"${C_PRE[@]}" "$R_TOOL" -R -d "$C_DEV" -F -p "$port" "$@" "$S_ADDR"; then
			fig=$(figure "$R_TOOL")
			ran=$((ran + 1))
			note "row: $(grep -E '^ *[0-9]+ +[0-9]+ ' "$T_TMP/cli.out" | tail -1)"
			[[ $fig =~ ^0*\.?0*$ || $fig =~ inf|nan ]] || break
			note "a figure of '$fig' (perftest's clock under TCG), again"
		elif perftest_clock_unfit "$(srv_log; cat "$T_TMP/cli.out")"; then
			note "perftest's clock fit failed under TCG, again"
		elif perftest_cm_raced "$(cat "$T_TMP/cli.out")"; then
			# Noted in the row.
			note "perftest's second connection came before its server listened, again"
			R_NOTE+="${R_NOTE:+; }retried: perftest's second connect raced its listen"
		elif [ "$R_GROUP" = siw-siw ] && [ -z "$base_retried" ]; then
			# No swiw in the run: siw against itself, the baseline,
			# failed on its own (README). Once more, noted.
			base_retried=1
			note "siw against itself failed: $(grep -m1 -iE 'bad wc|error|fail' "$T_TMP/cli.out"), again"
			R_NOTE+="${R_NOTE:+; }retried: siw against itself failed once"
		else
			record FAIL - - "$R_TOOL failed"
			fail "$R_TOOL"
		fi
		port=$((port + 1))
	done
	if [ "$ran" -eq 3 ] &&
		{ ! [[ $fig =~ ^[0-9]+(\.[0-9]+)?$ ]] || [[ $fig =~ ^0*\.?0*$ ]]; }; then
		R_NOTE+="${R_NOTE:+; }no figure: perftest's clock under TCG gave '$fig' in 3 complete runs"
		record PASS - - "$R_NOTE"
		note "$R_TOOL: 3 complete runs, no figure from perftest's clock"
		return 0
	fi
	[[ $fig =~ ^[0-9]+(\.[0-9]+)?$ ]] && [[ ! $fig =~ ^0*\.?0*$ ]] || {
		record FAIL - - "no figure in 3 tries"
		cat "$T_TMP/cli.out"
		fail "$R_TOOL printed no usable result row"
	}
	record PASS "$fig" "$unit" "$R_NOTE"
	note "$R_TOOL: $fig $unit"
}

t_row() {
	case $R_TOOL in
	rping) t_rping ;;
	ib_send_bw | ib_write_bw) t_perf -n "$BW_N" ;;
	ib_read_bw) t_perf -n "$READ_N" ;;
	ib_send_lat | ib_write_lat) t_perf -n "$LAT_N" ;;
	*) fail "no tool $R_TOOL" ;;
	esac
}

# row NAME GROUP TOOL MPA CRC MADDRS SERVER CLIENT [XFAIL]: one run, its
# own ports. MPA describes the settings for the matrix; CRC (yes|no) and
# MADDRS (addresses that ask for markers, comma-separated, or -) are what
# the host's capture_check.sh expects. XFAIL (rping only): the run must
# fail, the server or client printing XFAIL (a grep pattern): a known
# fault of siw (README), shown as such and still judged by its capture.
row() {
	R_NAME=$1 R_GROUP=$2 R_TOOL=$3 R_MPA=$4 R_CRC=$5 R_MADDRS=$6 R_SRV=$7 R_CLI=$8
	R_XFAIL=${9:-}
	R_PORT=$PORT
	PORT=$((PORT + 5))
	[[ $R_NAME =~ $ROWS ]] || return 0
	if [ "$PLAN" = 1 ]; then
		echo "$R_NAME" >>"$KEEP/plan"
		return 0
	fi
	CAP_SIDE=root
	if ! capturing; then
		R_PORTS=$R_PORT
		record FAIL - - "no capture running"
		lab_test "$R_NAME" fail "no capture running, not run"
		return
	fi
	peer "$R_SRV"
	S_PRE=("${P_PRE[@]}") S_DEV=$P_DEV S_ADDR=$P_ADDR S_NS=$P_NS
	peer "$R_CLI"
	C_PRE=("${P_PRE[@]}") C_DEV=$P_DEV C_NS=$P_NS
	# The bulk sender's side: ib_read_bw's server, the other _bw
	# clients; ping-pongs are judged from here.
	CAP_SIDE=root
	case $R_TOOL in
	ib_read_bw) [ -n "$S_NS" ] && CAP_SIDE=ns ;;
	*_bw) [ -n "$C_NS" ] && CAP_SIDE=ns ;;
	esac
	lab_test "$R_NAME" t_row
}

# phase MODULE: loads MODULE and starts its capture; unphase MODULE ends
# both. Rows of a phase that failed to start fail (row: no capture).
phase() {
	[ "$PLAN" = 0 ] || return 0
	lab_test "load-$1" t_load "$1" || return
	cap_start "cap-$1" || {
		T_FAILED=$((T_FAILED + 1))
		echo "LAB-TEST capture-$1 FAIL"
		dumpcap_stop 2>/dev/null
	}
}

unphase() {
	[ "$PLAN" = 0 ] || return 0
	capturing && cap_stopped "capture-$1"
	lab_test "unload-$1" t_unload "$1"
}

# The rows: name group tool mpa crc marker-addresses server client.
rows() {
	# Engines: inprocess (in) and the kernel helper (kernel).
	K=kernel
	I=inprocess
	phase siw
	# siw against itself: the baseline the others sit beside.
	for t in rping ib_send_bw ib_write_bw ib_read_bw ib_send_lat; do
		row "base-$t" siw-siw "$t" rev2 no - siw siw
	done
	# swiw (in-process) both ways, swiw's and siw's defaults: as initiator
	# swiw asks for peer-to-peer and offers Write and Read RTRs (siw picks
	# Write); siw's initiator asks for neither.
	for t in rping ib_send_bw ib_write_bw ib_read_bw ib_send_lat; do
		row "in-siws-$t" swiw-siw "$t" rev2 no - siw "sw:$I"
		row "in-sws-$t" swiw-siw "$t" rev2 no - "sw:$I" siw
	done
	# The kernel helper, both ways: a subset.
	for t in rping ib_write_bw ib_send_lat; do
		row "k-siws-$t" swiw-siw "$t" rev2 no - siw "sw:$K"
		row "k-sws-$t" swiw-siw "$t" rev2 no - "sw:$K" siw
	done
	# Peer-to-peer as siw answers it: swiw offers Read only (siw picks Read)
	# or no peer-to-peer at all; rev 1 (siw answers in the Request's rev).
	row p2p-read-siws p2p-rtr rping rev2,p2p,read-rtr no - siw "sw:$I:SWIW_MPA_RTR=read"
	row p2p-read-siws-k p2p-rtr rping rev2,p2p,read-rtr no - siw "sw:$K:SWIW_MPA_RTR=read"
	row p2p-off-siws p2p-rtr rping rev2,no-p2p no - siw "sw:$I:SWIW_MPA_P2P=no"
	# siw as rev 1 responder reports IRD/ORD 0 to rdma_cm, so rping's
	# rdma_accept(id, NULL) leaves its QP without ORD and its first RDMA
	# Read fails to post (README): expected, and siw against itself alike.
	row rev1-siws rev1 rping rev1 no - siw "sw:$I:SWIW_MPA_REV=1" 'post send error'
	row rev1-siws-read rev1 ib_read_bw rev1 no - siw "sw:$I:SWIW_MPA_REV=1"
	row rev1-siws-k rev1 ib_write_bw rev1 no - siw "sw:$K:SWIW_MPA_REV=1"
	# swiw against swiw with markers, in-process and kernel-helper mixed.
	# tshark reads FPDUs with markers only when both directions carry
	# them, and then only when each segment is one FPDU and none ends
	# where Wireshark 4.0 miscounts its markers (README, "Wireshark"): a
	# bulk stream (ib_write_bw) cannot be judged FPDU by FPDU, so its
	# rows ask for markers one way and are judged on the MPA flags; the
	# ping-pongs (rping, ib_write_lat) carry markers both ways and are
	# judged in full.
	row mk-in-k-rping swiw-swiw rping rev2,markers no "$SIWA" \
		"swr:$I:SWIW_MPA_MARKERS=1" "sw:$K"
	row mk-k-in-rping swiw-swiw rping rev2,markers-both no "$SIWA,$SWA" \
		"swr:$K:SWIW_MPA_MARKERS=1" "sw:$I:SWIW_MPA_MARKERS=1"
	row mk-k-in-write swiw-swiw ib_write_bw rev2,markers no "$SIWA" \
		"swr:$K:SWIW_MPA_MARKERS=1" "sw:$I"
	row mk-in-k-write swiw-swiw ib_write_bw rev2,markers,crc yes "$SWA" \
		"swr:$I:SWIW_MPA_CRC=1" "sw:$K:SWIW_MPA_MARKERS=1"
	row mk-k-in-wlat swiw-swiw ib_write_lat rev2,markers-both,crc yes "$SIWA,$SWA" \
		"swr:$K:SWIW_MPA_MARKERS=1:SWIW_MPA_CRC=1" "sw:$I:SWIW_MPA_MARKERS=1"
	# swiw's rdma_cm hands an address of no swiw device to the kernel's.
	row fwd-rping forward rping rev2 no - siw fwd
	unphase siw

	phase siw_crc
	row base-crc-rping siw-siw rping rev2,crc yes - siw siw
	row base-crc-ib_write_bw siw-siw ib_write_bw rev2,crc yes - siw siw
	for t in rping ib_write_bw; do
		row "crc-siws-$t" crc "$t" rev2,crc yes - siw "sw:$I:SWIW_MPA_CRC=1"
		row "crc-sws-$t" crc "$t" rev2,crc yes - "sw:$I:SWIW_MPA_CRC=1" siw
	done
	# swiw with CRC off meets siw_crc's C flag: CRC on both ways. Only
	# siw_crc's Request carries C: as responder it answers a Request
	# without C with C clear (siw_cm.c sets C in the Reply only when the
	# Request had it), so the other way round CRC stays off.
	row crcC-sws-rping crc rping rev2,C-from-siw yes - "sw:$I" siw
	row crcC-sws-k-rping crc rping rev2,C-from-siw yes - "sw:$K" siw
	row crcC-siws-rping crc rping rev2,C-asked-by-none no - siw "sw:$I"
	unphase siw_crc

	phase siw_p2p
	# siw's peer-to-peer initiator offers Write and Read: swiw picks each.
	row p2p-sws-write p2p-rtr rping rev2,p2p,write-rtr no - "sw:$I:SWIW_MPA_RTR=write" siw
	row p2p-sws-read p2p-rtr rping rev2,p2p,read-rtr no - "sw:$I:SWIW_MPA_RTR=read" siw
	row p2p-sws-read-k p2p-rtr ib_write_bw rev2,p2p,read-rtr no - "sw:$K:SWIW_MPA_RTR=read" siw
	unphase siw_p2p

	phase siw_v1
	# siw answers a rev 1 Request: against itself too (README).
	row base-v1-rping siw-siw rping rev1 no - siw siw 'post send error'
	row rev1-sws rev1 rping rev1 no - "sw:$I" siw
	row rev1-sws-k rev1 ib_write_bw rev1 no - "sw:$K" siw
	# Last of all, because it breaks the kernel: swiw offers only a Send
	# RTR, which siw cannot do; siw's Reply names a Write RTR nobody
	# offered (siw_cm.c), swiw refuses it with the TERMINATE "No Matching
	# RTR" (RFC 6581), and 6.1's iw_cm then hits BUG at iwcm.c:969 in its
	# work handler, which leaves every later iWARP connection and siw's
	# unload hanging (README). siw_v1 answers as stock siw does (a
	# responder speaks the Request's revision). The kernel log is judged
	# before it; t_term_bug reports what the row did to the kernel.
	[ "$PLAN" = 1 ] || lab_test dmesg t_dmesg
	row p2p-send-siws p2p-rtr rping rev2,p2p,send-rtr-only no - siw "sw:$I:SWIW_MPA_RTR=send" \
		'RDMA_CM_EVENT_\(CONNECT_ERROR\|REJECTED\|UNREACHABLE\)'
	if [ "$PLAN" = 0 ]; then
		! capturing || cap_stopped capture-siw_v1
		lab_test siw-term-bug t_term_bug
	fi

}

# t_dmesg: lab_dmesg_clean, except that a user program's fault ("traps:",
# perftest's on its error paths) is a note: its row already failed on
# the exit status.
t_dmesg() {
	local bad

	dmesg | grep 'traps: ' | sed 's/^/# /'
	bad=$(dmesg | grep -v 'traps: ' |
		grep -E '\<BUG\>|WARNING:|Oops|general protection fault|Call Trace')
	[ -z "$bad" ] || fail "kernel log: $bad"
}

# After p2p-send-siws: siw's TERMINATE handling as a finding, not a
# failure of swiw (the row itself judged swiw's side and its capture).
t_term_bug() {
	if dmesg | grep -q 'kernel BUG at drivers/infiniband/core/iwcm.c'; then
		echo "# siw finding: after swiw's TERMINATE (No Matching RTR) the" \
			"kernel's iw_cm hit: $(dmesg | grep -m1 'kernel BUG at')"
	else
		echo "# siw finding: no iw_cm BUG after swiw's TERMINATE this time"
	fi
}

lab_test setup t_setup || {
	lab_summary
	exit 1
}

# The plan first: every row's name in keep/plan, so that the host finds
# rows that never ran (a guest that hung or died) and fails them.
PLAN=1
rows
PLAN=0
PORT=18000
rows
lab_test swiw-unload lab_swiw_unload
dmesg >"$KEEP/dmesg"
lab_summary
