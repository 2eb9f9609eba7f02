# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Shared helpers for swiw's end-to-end tests; every test script sources this.
#
# The tests run the distribution's unmodified binaries (ibv_devices,
# ibv_devinfo, ibv_asyncwatch, python3 + pyverbs) through swiw-run and check
# what they print. Nothing is ever skipped: a missing prerequisite fails.
#
# Environment:
#   SWIW_BUILD          build directory holding bin/swiw-run (required)
#   SWIW_TEST_PRELOAD   optional library put in front of LD_PRELOAD for every
#                       swiw-run, e.g. the ASan runtime for a sanitizer build
#   SWIW_TEST_TIMEOUT   seconds any single command may take (default 20)

set -u

T_NAME=$(basename "${0%.sh}")

fail() {
	echo "FAIL: $T_NAME: $*" >&2
	exit 1
}

pass() {
	echo "ok - $*"
}

note() {
	echo "# $*"
}

need_root() {
	[ "$(id -u)" -eq 0 ] ||
		fail "must run as root (network namespaces, veth links); refusing to skip"
}

need_cmd() {
	local c

	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 ||
			fail "required command '$c' is not installed"
	done
}

[ -n "${SWIW_BUILD:-}" ] || fail "SWIW_BUILD is not set (the build directory)"
SWIW_RUN=$SWIW_BUILD/bin/swiw-run
[ -x "$SWIW_RUN" ] || fail "$SWIW_RUN is missing; build swiw first"
T_LIMIT=${SWIW_TEST_TIMEOUT:-20}
need_cmd timeout mktemp grep awk

# Cleanup actions run in reverse order when the script exits, however it
# exits. Then sanitizer reports fail the test, and the scratch directory
# goes.
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
	rm -rf "$T_TMP"
	exit "$rc"
}
trap run_cleanup EXIT
trap 'exit 130' INT TERM HUP

T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/swiw-e2e-$T_NAME.XXXXXX") ||
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

# The command prefix that starts a program under swiw. With
# SWIW_TEST_PRELOAD set, swiw-run --preload puts the sanitizer runtime
# first in LD_PRELOAD as it execs the program: only the program under test
# gets it, not timeout, ip or swiw-run's shell (the TSan runtime crashes
# a shell it is preloaded into alone).
SWIW=("$SWIW_RUN")
if [ -n "${SWIW_TEST_PRELOAD:-}" ]; then
	[ -r "$SWIW_TEST_PRELOAD" ] ||
		fail "SWIW_TEST_PRELOAD=$SWIW_TEST_PRELOAD is not readable"
	SWIW=("$SWIW_RUN" --preload "$SWIW_TEST_PRELOAD")
	note "SWIW_TEST_PRELOAD=$SWIW_TEST_PRELOAD"
	# The programs run must really have it, or a clean run proves nothing.
	timeout -k 5 "$T_LIMIT" "${SWIW[@]}" grep -qF "$SWIW_TEST_PRELOAD" \
		/proc/self/maps ||
		fail "swiw-run --preload $SWIW_TEST_PRELOAD: not mapped in the program"
fi

# A host's /etc/swiw/swiw.conf or the caller's settings must not change what
# the tests see; scripts set these per command where they test them.
unset SWIW_INTERFACES SWIW_LOG_LEVEL SWIW_PROVIDER
export SWIW_CONFIG=/dev/null

# run CMD...: runs CMD with a time limit; its stdout goes to $OUT, stderr to
# $ERR and its exit status to $RC. A command that times out fails the test.
OUT='' ERR='' RC='' LAST=''
run() {
	LAST="$*"
	timeout -k 5 "$T_LIMIT" "$@" >"$T_TMP/out" 2>"$T_TMP/err"
	RC=$?
	OUT=$(cat "$T_TMP/out")
	ERR=$(cat "$T_TMP/err")
	if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
		show_last >&2
		fail "timed out after ${T_LIMIT}s: $LAST"
	fi
	return 0
}

# swiw_run PROGRAM ARGS...: run under swiw-run (see run).
swiw_run() {
	run "${SWIW[@]}" "$@"
}

# swiw_py ARGS...: /usr/bin/python3 (which has pyverbs) under swiw-run.
# CPython leaves memory allocated at exit, which LeakSanitizer would report
# in a sanitizer run: leak checking is off for python only.
PY=/usr/bin/python3
swiw_py() {
	run env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		"${SWIW[@]}" "$PY" "$@"
}

# ns_swiw_py NETNS ARGS...: the same inside a network namespace.
ns_swiw_py() {
	local ns=$1

	shift
	run ip netns exec "$ns" \
		env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		"${SWIW[@]}" "$PY" "$@"
}

# ns_swiw_run NETNS PROGRAM ARGS...: the same inside a network namespace.
ns_swiw_run() {
	local ns=$1

	shift
	run ip netns exec "$ns" "${SWIW[@]}" "$@"
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

# The swiw device names ibv_devices printed, sorted, one per line.
swiw_devices_of() {
	printf '%s\n' "$1" | awk '$1 ~ /^swiw_/ { print $1 }' | sort
}

# block_of TEXT HCA: the lines of one "hca_id:" block of ibv_devinfo output.
block_of() {
	printf '%s\n' "$1" |
		awk -v dev="$2" '/^hca_id:/ { on = ($2 == dev) } on'
}

# wait_until SECONDS WHAT CMD...: polls CMD every 0.1 s until it succeeds.
wait_until() {
	local limit=$1 what=$2 end

	shift 2
	end=$((SECONDS + limit))
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || {
			[ -n "$LAST" ] && show_last >&2
			fail "waited ${limit}s: $what"
		}
		sleep 0.1
	done
}

# Escapes a string for use inside an extended regex.
re_quote() {
	printf '%s' "$1" | sed 's/[][\.*^$?+(){}|/]/\\&/g'
}

# veth_pair NSA DEVA ADDRA NSB DEVB ADDRB: two new network namespaces
# joined by a veth pair with IPv4 addresses (/24, so GID 0 is
# ::ffff:ADDR), lo up in each; removed, with what runs in them, at exit.
veth_pair() {
	local ns dev a n

	[ "$(id -u)" -eq 0 ] ||
		fail "network namespaces need root; refusing to skip"
	for ns in "$1" "$4"; do
		ip netns add "$ns" || fail "cannot create network namespace $ns"
		on_exit "ip netns del '$ns'"
		on_exit "ip netns pids '$ns' | xargs -r kill"
	done
	ip -n "$1" link add "$2" type veth peer name "$5" netns "$4" ||
		fail "cannot create the veth pair"
	for n in "$1:$2:$3" "$4:$5:$6"; do
		IFS=: read -r ns dev a <<<"$n"
		# IPv4 only: GID 0 is ::ffff:$a.
		ip -n "$ns" link set "$dev" addrgenmode none ||
			fail "addrgenmode $dev"
		ip -n "$ns" addr add "$a/24" dev "$dev" || fail "address on $dev"
		ip -n "$ns" link set "$dev" up || fail "$dev up"
		ip -n "$ns" link set lo up || fail "lo up in $ns"
	done
}
