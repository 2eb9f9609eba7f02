# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The shell library of swiw's tests. Every test script sources it from
# bash, on the host and in the VM lab's guest:
#
#   . "$(dirname "$0")/../lib/swiw_test.sh"
#
# What it gives, and the conventions with it:
#   note, pass, fail, skip  "# ...", "ok - ...", "FAIL: NAME: ..." (exit 1),
#                           "SKIP (optional): ..." (exit 77, for ctest's
#                           SKIP_RETURN_CODE; a test never skips otherwise)
#   check_pass, check_fail, checks_end
#                           checks that let the test go on, counted, and
#                           "N passed, M failed" at the end
#   need_root, need_cmd, need_pkgs, need_kernel_headers
#   on_exit CMD             cleanup, run in reverse order however the
#                           script exits; T_TMP is a scratch directory
#                           removed last. Sanitizer reports of any process
#                           the script starts fail it (san_check).
#   bounded, run            a command with the time limit T_LIMIT; run
#                           keeps its output ($OUT, $ERR, $RC) for the
#                           assert_* family
#   poll, wait_for, wait_until, gone, listening
#   job_slot                at most nproc background jobs at once
#   serve, served           a server in the background for a client
#   split_args              a server's words and its client's, split at --
#   need_swiw, swiw_prefix  swiw-run ($SWIW_RUN) and the prefix that starts a
#                           program under swiw (${SWIW[@]}); swiw_run,
#                           swiw_py, ns_swiw_run, ns_swiw_py, wait_active,
#                           pd_leak_ok (perftest's one known failure)
#   netns.sh                network namespaces and veth pairs (netns_add,
#                           veth_pair, in_ns, ns_ip)
#   dumpcap_start, dumpcap_probe, dumpcap_stop
#                           captures, and proof that they hold the traffic
#   PCAP_PORTS              pcap_ports.py, the capture probe and cutter
#
# Environment:
#   SWIW_BUILD          build directory holding bin/swiw-run (need_swiw)
#   SWIW_TEST_PRELOAD   optional library put in front of LD_PRELOAD for every
#                       program started under swiw, e.g. the ASan runtime of
#                       a sanitizer build
#   SWIW_TEST_TIMEOUT   seconds any single command may take (default 20)

# Sourced twice (a suite's helper after a test), it is there already.
[ -z "${T_LIB:-}" ] || return 0
T_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PCAP_PORTS=$T_LIB/pcap_ports.py

set -u

T_NAME=$(basename "${0%.sh}")
T_LIMIT=${SWIW_TEST_TIMEOUT:-20}

note() {
	echo "# $*"
}

pass() {
	echo "ok - $*"
}

# fail MESSAGE: the test fails, with status T_FAIL_STATUS (default 1).
fail() {
	echo "FAIL: $T_NAME: $*" >&2
	exit "${T_FAIL_STATUS:-1}"
}

# skip REASON: the test cannot run here, and that is allowed (ctest's
# SKIP_RETURN_CODE 77; .ci/run lists it): never for a missing tool.
skip() {
	echo "SKIP (optional): $*"
	exit 77
}

# Checks that let the test go on: counted, and judged by checks_end.
T_PASSED=0
T_FAILED=0
check_pass() {
	T_PASSED=$((T_PASSED + 1))
	pass "$@"
}

check_fail() {
	T_FAILED=$((T_FAILED + 1))
	echo "FAIL: $*"
}

# checks_end: "N passed, M failed"; false if any check failed.
checks_end() {
	echo "$T_PASSED passed, $T_FAILED failed"
	[ "$T_FAILED" -eq 0 ]
}

need_root() {
	[ "$(id -u)" -eq 0 ] ||
		fail "must run as root (network namespaces, veth links, mounts); refusing to skip"
}

need_cmd() {
	local c

	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 ||
			fail "required command '$c' is not installed (bash .ci/deps installs it)"
	done
}

# need_pkgs PACKAGE...: the Debian packages missing among them are
# installed with apt-get (as root); false if that fails.
need_pkgs() {
	local p missing=()

	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -gt 0 ] || return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "run as root to install ${missing[*]} with apt-get" >&2
		return 1
	fi
	note "installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || {
		apt-get update -qq >&2
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	} || {
		echo "apt-get install ${missing[*]} failed" >&2
		return 1
	}
}

# need_kernel_headers: KDIR, the kernel headers modules are built against
# (default: the newest installed /usr/src/linux-headers-*-amd64).
need_kernel_headers() {
	KDIR=${KDIR:-$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -1)}
	[ -n "$KDIR" ] && [ -f "$KDIR/Makefile" ] ||
		fail "no kernel headers: install linux-headers-amd64 (.ci/deps does)"
}

# --- cleanup ------------------------------------------------------------
# Cleanup actions run in reverse order when the script exits, however it
# exits. Then sanitizer reports fail the test, and the scratch directory
# goes. A subshell runs none of them (bash gives it no EXIT trap).
T_CLEANUP=()
T_TMP=''
on_exit() {
	T_CLEANUP+=("$*")
}
run_cleanup() {
	local rc=$? i

	for ((i = ${#T_CLEANUP[@]} - 1; i >= 0; i--)); do
		eval "${T_CLEANUP[i]}" >/dev/null 2>&1 || true
	done
	[ -n "$T_TMP" ] || exit "$rc"
	san_check || rc=1
	# SWIW_TEST_KEEP=DIR: a failed test leaves its scratch directory
	# (captures, logs, the guest's keep) there for a post-mortem; with
	# SWIW_TEST_KEEP_ALL=1, a passed one too.
	if { [ "$rc" -ne 0 ] || [ -n "${SWIW_TEST_KEEP_ALL:-}" ]; } &&
		[ -n "${SWIW_TEST_KEEP:-}" ] &&
		mkdir -p "$SWIW_TEST_KEEP" && mv "$T_TMP" "$SWIW_TEST_KEEP/"; then
		echo "# kept: $SWIW_TEST_KEEP/${T_TMP##*/}" >&2
		exit "$rc"
	fi
	rm -rf "$T_TMP"
	exit "$rc"
}
trap run_cleanup EXIT
trap 'exit 130' INT TERM HUP

need_cmd timeout mktemp grep awk sed
T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/swiw-$T_NAME.XXXXXX") ||
	fail "cannot make a scratch directory"

# Sanitizer reports of every process a test starts (also background ones,
# and the broker, whose stderr is /dev/null) go to files here: any such file
# fails the test, whatever the exit status of the process was.
T_SAN=$T_TMP/sanitizer
mkdir "$T_SAN" || fail "cannot make $T_SAN"
for v in ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS; do
	export "$v=${!v:+${!v}:}log_path=$T_SAN/report"
done
unset v
san_check() {
	local f

	for f in "$T_SAN"/report*; do
		[ -e "$f" ] || return 0
		echo "FAIL: $T_NAME: sanitizer report in ${f##*/}:" >&2
		cat "$f" >&2
		return 1
	done
}

# --- commands -------------------------------------------------------------
# bounded CMD...: CMD with the time limit T_LIMIT; its exit status, 124 or
# 137 (said on stderr) when it ran out of time.
bounded() {
	local rc

	timeout -k 5 "$T_LIMIT" "$@"
	rc=$?
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "timed out after ${T_LIMIT}s: $*" >&2
	fi
	return "$rc"
}

# run CMD...: runs CMD with the time limit; its stdout goes to $OUT, stderr to
# $ERR and its exit status to $RC. A command that times out fails the test.
OUT='' ERR='' RC='' LAST=''
run() {
	LAST="$*"
	bounded "$@" >"$T_TMP/out" 2>"$T_TMP/err"
	RC=$?
	OUT=$(cat "$T_TMP/out")
	ERR=$(cat "$T_TMP/err")
	if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
		show_last >&2
		# The client of a server serve started: what the server said
		# is half of why.
		if [ -n "${SRV_PID:-}" ] && [ -z "${SRV_RC:-}" ] && [ -e "$T_TMP/srv.out" ]; then
			{
				echo "---- server (running) stdout, last 20 lines:"
				tail -20 "$T_TMP/srv.out"
				echo "---- server stderr:"
				cat "$T_TMP/srv.err"
				echo "----"
			} >&2
		fi
		fail "timed out after ${T_LIMIT}s: $LAST"
	fi
	return 0
}

show_last() {
	echo "---- command: $LAST (exit $RC)"
	echo "---- stdout:"
	printf '%s\n' "$OUT"
	echo "---- stderr:"
	printf '%s\n' "$ERR"
	echo "----"
}

# Fails with the last command's output shown.
fail_last() {
	show_last >&2
	fail "$*"
}

assert_rc() {
	[ "$RC" -eq "$1" ] || fail_last "${2:-$LAST}: exit status $RC, expected $1"
}

assert_ok() {
	assert_rc 0 "$@"
}

assert_nonzero() {
	[ "$RC" -ne 0 ] || fail_last "${1:-$LAST}: succeeded, expected a failure"
}

# assert_has TEXT ERE WHAT: some line of TEXT matches the extended regex.
assert_has() {
	printf '%s\n' "$1" | grep -Eq -- "$2" ||
		fail_last "${3:-output}: no line matches /$2/"
}

# assert_lacks TEXT ERE WHAT: no line of TEXT matches the extended regex.
assert_lacks() {
	printf '%s\n' "$1" | grep -Eq -- "$2" &&
		fail_last "${3:-output}: a line matches /$2/, none should"
	return 0
}

# assert_count TEXT ERE N WHAT: exactly N lines of TEXT match.
assert_count() {
	local n

	n=$(printf '%s\n' "$1" | grep -Ec -- "$2")
	[ "$n" -eq "$3" ] ||
		fail_last "${4:-output}: $n lines match /$2/, expected $3"
}

assert_eq() {
	[ "$1" = "$2" ] || fail_last "${3:-value}: got '$1', expected '$2'"
}

# Shorthands on the last command's output.
out_has() { assert_has "$OUT" "$1" "${2:-stdout of $LAST}"; }
out_lacks() { assert_lacks "$OUT" "$1" "${2:-stdout of $LAST}"; }
err_has() { assert_has "$ERR" "$1" "${2:-stderr of $LAST}"; }
err_lacks() { assert_lacks "$ERR" "$1" "${2:-stderr of $LAST}"; }

# Escapes a string for use inside an extended regex.
re_quote() {
	printf '%s' "$1" | sed 's/[][\.*^$?+(){}|/]/\\&/g'
}

# split_args WORD... -- WORD...: the words before "--" in BEFORE, the
# words after it in AFTER (a server's command and its client's, say).
split_args() {
	BEFORE=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		BEFORE+=("$1")
		shift
	done
	[ $# -eq 0 ] || shift
	AFTER=("$@")
}

# median [FORMAT]: the median of the numbers on stdin, printed with FORMAT
# (default %.2f).
median() {
	sort -g | awk -v f="${1:-%.2f}" '{ v[NR] = $1 }
		END { printf f "\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# --- waiting ----------------------------------------------------------------
# poll SECONDS CMD...: runs CMD every 0.1 s until it succeeds; 1 if it
# has not after SECONDS.
poll() {
	local end=$((SECONDS + $1))

	shift
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.1
	done
}

# wait_for SECONDS WHAT CMD...: polls CMD; after SECONDS says what it
# waited for and returns 1.
wait_for() {
	poll "$1" "${@:3}" && return 0
	echo "waited ${1}s: $2" >&2
	return 1
}

# wait_until SECONDS WHAT CMD...: the same, but the test fails after
# SECONDS (with the last command's output, if any).
wait_until() {
	poll "$1" "${@:3}" && return 0
	[ -n "$LAST" ] && show_last >&2
	fail "waited ${1}s: $2"
}

# job_slot: returns once fewer background jobs of this shell run than
# there are cores (nproc), for work started with & that keeps one core
# busy (a capture judged by tshark, say).
job_slot() {
	while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do
		wait -n
	done
}

# gone PID: the process has exited.
gone() {
	! kill -0 "$1" 2>/dev/null
}

# listening PORT [NETNS]: something listens on TCP PORT (in NETNS).
listening() {
	in_ns "${2:-}" ss -Hltn "sport = :$1" | grep -q .
}

# serve NETNS PORT CMD...: starts the server CMD in the background in
# NETNS ("" for this one), bounded by T_LIMIT, with its stdout in
# $T_TMP/srv.out and its stderr in $T_TMP/srv.err, its pid in SRV_PID
# (ended at exit). Returns once something listens on TCP PORT there; or
# 1, the server ended and its status in SRV_RC, if it exits first or
# nothing listens within 30 s.
serve() {
	local ns=$1 port=$2 pre=()

	shift 2
	SRV_RC='' LAST=''
	[ -z "$ns" ] || pre=(ip netns exec "$ns")
	timeout -k 5 "$T_LIMIT" "${pre[@]}" "$@" >"$T_TMP/srv.out" 2>"$T_TMP/srv.err" &
	SRV_PID=$!
	on_exit "kill $SRV_PID"
	poll 30 serving "$ns" "$port"
	listening "$port" "$ns" && return 0
	kill "$SRV_PID" 2>/dev/null
	wait "$SRV_PID"
	SRV_RC=$?
	return 1
}
serving() {
	listening "$2" "$1" || gone "$SRV_PID"
}

# served [GRACE]: waits for the server serve started; its exit status in
# SRV_RC. With GRACE (seconds), a server still running then is ended
# first: a client that failed can leave it waiting for ever.
served() {
	[ -z "${1:-}" ] || poll "$1" gone "$SRV_PID" || kill "$SRV_PID" 2>/dev/null
	wait "$SRV_PID"
	SRV_RC=$?
}

# fail_served MESSAGE: fails with the output of the server serve started
# and of the last command (its client).
fail_served() {
	{
		echo "---- server (exit ${SRV_RC:-running}) stdout:"
		cat "$T_TMP/srv.out"
		echo "---- server stderr:"
		cat "$T_TMP/srv.err"
		[ -z "$LAST" ] || show_last
	} >&2
	fail "$*"
}

# --- captures -----------------------------------------------------------------
# TSHARK_IWARP: tshark as the judge of iWARP captures. The RPC-over-RDMA
# and SMB Direct heuristics misread arbitrary Send payloads (PROTOCOL.md
# §4). MPA has no port of its own, only a heuristic, which TCP tries
# after its port table: a connection whose ephemeral port is one the
# table names (44818 enip, 57000 irc, ...) was handed to that dissector
# and not one of its MPA frames decoded. So heuristics go first.
TSHARK_IWARP=(tshark -n -o tcp.try_heuristic_first:TRUE
	--disable-heuristic rpcrdma_iwarp --disable-heuristic smb_direct_iwarp)

# dumpcap_start NETNS DEV FILTER FILE: dumpcap captures DEV in NETNS (""
# for this one) into FILE in the background, as classic pcap (for
# pcap_ports.py) and with a kernel buffer of CAP_BUFFER MiB (default
# 128): a dropped packet would make the capture meaningless.
CAP_PIDS=() CAP_FILES=()
dumpcap_start() {
	local err=$T_TMP/dumpcap-${#CAP_PIDS[@]}.err pre=()

	[ -z "$1" ] || pre=(ip netns exec "$1")
	: >"$err"
	"${pre[@]}" dumpcap -q -B "${CAP_BUFFER:-128}" -P -i "$2" -f "$3" -w "$4" 2>>"$err" &
	CAP_PIDS+=($!)
	CAP_FILES+=("$4")
	on_exit "kill $!"
}

# dumpcap_probe NETNS ADDR PORT: a refused TCP connection from NETNS to
# ADDR:PORT shows up in every capture. dumpcap says "Capturing" before it
# captures, and the kernel hands it packets a block at a time: a probe
# that shows up proves the capture was running before it, and that all
# sent earlier is written.
dumpcap_probe() {
	local f

	in_ns "$1" bash -c "echo >/dev/tcp/$2/$3" 2>/dev/null
	for f in "${CAP_FILES[@]}"; do
		python3 "$PCAP_PORTS" has "$f" "$3" || return 1
	done
}

# dumpcap_stop: ends the captures dumpcap_start started; false, saying
# why, if one dropped packets or saw none. (Called in a subshell, which
# cannot wait for them, it waits for their last words.)
dumpcap_stop() {
	local i err ok=0

	kill -INT "${CAP_PIDS[@]}" 2>/dev/null
	for i in "${!CAP_PIDS[@]}"; do
		err=$T_TMP/dumpcap-$i.err
		wait "${CAP_PIDS[i]}" 2>/dev/null
		poll 10 grep -q 'dropped on interface' "$err"
		grep -Eq 'dropped on interface .*: [1-9][0-9]*/0 ' "$err" || {
			echo "dumpcap (${CAP_FILES[i]##*/}) dropped packets or saw none: $(cat "$err")" >&2
			ok=1
		}
	done
	CAP_PIDS=() CAP_FILES=()
	return $ok
}

# --- swiw ----------------------------------------------------------------------
# need_swiw: $SWIW_BUILD/bin/swiw-run (swiw_prefix) for a test, which a
# host's /etc/swiw/swiw.conf or the caller's settings must not change:
# scripts set those per command where they test them.
need_swiw() {
	[ -n "${SWIW_BUILD:-}" ] || fail "SWIW_BUILD is not set (the build directory)"
	swiw_prefix "$SWIW_BUILD/bin/swiw-run"
	unset SWIW_INTERFACES SWIW_LOG_LEVEL SWIW_PROVIDER
	export SWIW_CONFIG=/dev/null
}

# swiw_prefix SWIW-RUN: the swiw-run programs start under in SWIW_RUN, and
# in SWIW the command prefix that starts a program under swiw. With
# SWIW_TEST_PRELOAD set, swiw-run --preload puts the sanitizer runtime
# first in LD_PRELOAD as it execs the program: only the program under test
# gets it, not timeout, ip or swiw-run's shell (the TSan runtime crashes a
# shell it is preloaded into alone).
swiw_prefix() {
	SWIW_RUN=$1
	[ -x "$SWIW_RUN" ] || fail "$SWIW_RUN is missing; build swiw first"
	SWIW=("$SWIW_RUN")
	if [ -n "${SWIW_TEST_PRELOAD:-}" ]; then
		[ -r "$SWIW_TEST_PRELOAD" ] ||
			fail "SWIW_TEST_PRELOAD=$SWIW_TEST_PRELOAD is not readable"
		SWIW=("$SWIW_RUN" --preload "$SWIW_TEST_PRELOAD")
		note "SWIW_TEST_PRELOAD=$SWIW_TEST_PRELOAD" >&2
		# The programs run must really have it, or a clean run proves nothing.
		timeout -k 5 "$T_LIMIT" "${SWIW[@]}" grep -qF "$SWIW_TEST_PRELOAD" \
			/proc/self/maps ||
			fail "swiw-run --preload $SWIW_TEST_PRELOAD: not mapped in the program"
	fi
}

# swiw_run PROGRAM ARGS...: run under swiw-run (see run).
swiw_run() {
	ns_swiw_run '' "$@"
}

# ns_swiw_run NETNS PROGRAM ARGS...: the same inside a network namespace
# ("" for this one).
ns_swiw_run() {
	local ns=$1 pre=()

	shift
	[ -z "$ns" ] || pre=(ip netns exec "$ns")
	run "${pre[@]}" "${SWIW[@]}" "$@"
}

# swiw_py ARGS...: /usr/bin/python3 (which has pyverbs) under swiw-run.
# CPython leaves memory allocated at exit, which LeakSanitizer would report
# in a sanitizer run: leak checking is off for python only.
PY=/usr/bin/python3
swiw_py() {
	ns_swiw_py '' "$@"
}

# ns_swiw_py NETNS ARGS...: the same inside a network namespace ("" for
# this one).
ns_swiw_py() {
	local ns=$1

	shift
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" ns_swiw_run "$ns" "$PY" "$@"
}

# port_active NETNS DEV: swiw's DEV in NETNS ("" for this one) has port 1
# PORT_ACTIVE.
port_active() {
	in_ns "$1" timeout -k 5 "$T_LIMIT" "${SWIW[@]}" ibv_devinfo -d "$2" 2>/dev/null |
		grep -Eq '^[[:space:]]+state:[[:space:]]+PORT_ACTIVE'
}

# wait_active NETNS DEV...: each DEV becomes PORT_ACTIVE within 10 s (a
# veth's carrier comes up after the link), or the test fails.
wait_active() {
	local ns=$1 dev

	shift
	for dev; do
		wait_until 10 "$dev${ns:+ in $ns} PORT_ACTIVE" port_active "$ns" "$dev"
	done
}

# perftest fits its cycle counter against gettimeofday; on a loaded host
# or under QEMU TCG the fit can fail after a good run. It says
# "Correlation coefficient r^2: X < 0.9", then reports 0, inf or nothing,
# and a bandwidth test adds "Can't produce a report" and exits 1
# (perftest 4.5's print_report_bw, unless -F).
# perftest_clock_unfit OUTPUT: true if OUTPUT says the fit failed.
PERFTEST_FIT_RE="^Correlation coefficient r\\^2: .* < 0\\.9\$"
PERFTEST_CLOCK_RE="$PERFTEST_FIT_RE|^Can't produce a report\$"
perftest_clock_unfit() {
	grep -Eq "$PERFTEST_CLOCK_RE" <<<"$1"
}

# perftest 4.5+0.17 deregisters the MR of its iWARP Send credits only
# with -R, so without it ibv_dealloc_pd fails with EBUSY at exit, as the
# kernel's does for any iWARP device, and the program exits 1 after its
# report. pd_leak_ok RC STDERR: true if that is the only thing that failed
# (a failed clock fit went on to its report only with -F, the lab's).
pd_leak_ok() {
	[ "$1" -eq 1 ] || return 1
	[ "$(grep -Ev "$PERFTEST_FIT_RE" <<<"$2" |
		grep -cv -e '^Failed to deallocate PD' \
			-e '^Couldn.t destroy all SEND resources' \
			-e '^[[:space:]]*$' -e '^swiw: ')" -eq 0 ] || return 1
	grep -q '^Failed to deallocate PD' <<<"$2"
}

# perftest -R connects twice, and its client dials the second time
# without waiting for its server to listen again: iWARP answers that
# early SYN with a RST (siw against itself too). perftest then prints the
# refusal, sometimes as REJECTED -111 (ECONNREFUSED) beside a stale errno,
# and may crash on its way out. perftest_cm_raced OUTPUT: true if the
# client's OUTPUT shows that race, which is worth another try.
perftest_cm_raced() {
	grep -Eq 'ERRNO: Connection refused|REJECTED; error: -111' <<<"$1" &&
		grep -q 'Failed to connect RDMA CM events' <<<"$1"
}

# The swiw device names ibv_devices printed, sorted, one per line.
swiw_devices_of() {
	printf '%s\n' "$1" | awk '$1 ~ /^swiw_/ { print $1 }' | sort
}

# block_of TEXT HCA: the lines of one "hca_id:" block of ibv_devinfo output.
block_of() {
	printf '%s\n' "$1" |
		awk -v dev="$2" '/^hca_id:/ { on = ($2 == dev) } on'
}

. "$T_LIB/netns.sh"
