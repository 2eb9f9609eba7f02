# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Where swiw's progress thread runs (swiw_engine.c, thread_place). While a
# program busy-polls, the thread keeps off the CPU the program polls from,
# so that the peer's send wakes it on the CPU that send runs on; it gets
# every CPU back when the program waits on a completion channel instead,
# and it never asks for a CPU outside the set it was started with.
# Checked on the stock ib_write_lat (both ends poll) and ib_send_lat -e
# (both ends block on a channel), by reading each swiw-engine thread's
# Cpus_allowed_list while they run.
# Each program may take longer than the default 20 s beside other tests.
SWIW_TEST_TIMEOUT=${SWIW_TEST_TIMEOUT:-60}
. "$(dirname "$0")/../lib/swiw_test.sh"
need_swiw

need_cmd ib_write_lat ib_send_lat taskset ss
NCPU=$(nproc)
[ "$NCPU" -ge 2 ] ||
	skip "one CPU here: the thread has no other CPU to move to"
. "$(dirname "$0")/perftest_lib.sh"
# Iterations: the runs need only outlast the sampling. A sanitizer build
# (SWIW_TEST_PRELOAD) beside the VM lab ran 30000 of ib_write_lat's in
# more than 60 s. A tenth of them was too few once TSan's run of 64 B
# went from 1.3 ms an iteration to 0.14 ms: the program finished, and
# with it stopped polling, within the 1.5 s watched. A third outlasts it.
DIV=1
[ -z "${SWIW_TEST_PRELOAD:-}" ] || DIV=3

# engine_status PROG: the status files of every swiw-engine thread of
# every running PROG, one per line.
engine_status() {
	local p t

	for p in $(pgrep -x "$1"); do
		for t in /proc/"$p"/task/*; do
			[ "$(cat "$t/comm" 2>/dev/null)" = swiw-engine ] &&
				echo "$t/status"
		done
	done
}

# sample_lists PROG MS: once both ends have their thread (within 10 s),
# samples their Cpus_allowed_list every 20 ms for MS milliseconds, into
# $T_TMP/lists (one sample a line: the two lists). One awk a sample: the
# sampler shares the CPUs with two busy-polling programs.
sample_lists() {
	local end files=()

	: >"$T_TMP/lists"
	end=$((SECONDS + 10))
	while [ "$SECONDS" -lt "$end" ]; do
		mapfile -t files < <(engine_status "$1")
		[ "${#files[@]}" -lt 2 ] || break
		sleep 0.05
	done
	[ "${#files[@]}" -ge 2 ] || return 0
	end=$(($(date +%s%3N) + $2))
	while [ "$(date +%s%3N)" -lt "$end" ]; do
		awk '/^Cpus_allowed_list:/ { printf "%s ", $2 } END { print "" }' \
			"${files[@]}" >>"$T_TMP/lists" 2>/dev/null || break
		sleep 0.02
	done
}

# run_watched PRE PROG ARGS...: the pair PROG ARGS... over swiw_lo, each
# end started under PRE (a taskset, or nothing), watched while it runs.
run_watched() {
	local pre=$1 prog=$2 port

	shift 2
	port=$((10000 + RANDOM % 20000))
	# shellcheck disable=SC2086 # PRE is words
	serve "" "$port" $pre "${SWIW[@]}" "$prog" -d swiw_lo -p "$port" "$@" ||
		fail_served "$prog: the server did not listen on port $port"
	sample_lists "$prog" 1500 &
	local watcher=$!
	# shellcheck disable=SC2086
	run $pre "${SWIW[@]}" "$prog" -d swiw_lo -p "$port" "$@" 127.0.0.1
	wait "$watcher"
	served 5
	[ "$RC" -eq 0 ] && [ "$SRV_RC" -eq 0 ] ||
		fail_served "$prog $*: client exit $RC, server exit $SRV_RC"
	out_has "$LAT" "$prog's figures"
}

# Samples with both ends' threads seen, and of those, how many show each
# thread with NCPU - 1 CPUs (kept off the program's) or NCPU (all).
judge() {
	awk -v all="$NCPU" '
		function count(l,  n, i, r, a, b) {
			n = 0
			split(l, r, ",")
			for (i in r) {
				if (split(r[i], a, "-") == 2)
					n += a[2] - a[1] + 1
				else
					n++
			}
			return n
		}
		NF == 2 { seen++; k = 0; f = 0
			for (i = 1; i <= 2; i++) {
				c = count($i)
				if (c == all - 1) k++
				if (c == all) f++
			}
			if (k == 2) kept++
			if (f == 2) full++
		}
		END { printf "%d %d %d\n", seen, kept, full }' "$T_TMP/lists"
}

# Busy polling: both threads spend most of the run off their program's
# CPU. ib_write_lat 64 B, enough iterations to outlast the watch.
run_watched "" ib_write_lat -x 0 -F -s 64 -n $((15000 / DIV))
read -r seen kept full <<<"$(judge)"
[ "$seen" -ge 5 ] || fail "ib_write_lat: only $seen samples saw both engine threads"
[ $((kept * 2)) -ge "$seen" ] ||
	fail "ib_write_lat: the threads were kept off one CPU in $kept of $seen samples (lists: $(sort "$T_TMP/lists" | uniq -c | sort -rn | head -3 | tr '\n' ';'))"
pass "ib_write_lat: both engine threads off their program's CPU in $kept of $seen samples"

# A program that blocks on its channel: the thread moves its data and
# keeps every CPU.
run_watched "" ib_send_lat -x 0 -F -s 64 -n $((30000 / DIV)) -e
read -r seen kept full <<<"$(judge)"
[ "$seen" -ge 5 ] || fail "ib_send_lat -e: only $seen samples saw both engine threads"
# Allowed: a sample or two as the programs start, before their first arm.
[ $((full * 10)) -ge $((seen * 9)) ] ||
	fail "ib_send_lat -e: the threads had every CPU in only $full of $seen samples"
pass "ib_send_lat -e: both engine threads kept all $NCPU CPUs in $seen samples"

# Started on one CPU, the thread stays there: it never asks for another.
# Both ends on one CPU spin against each other: few iterations.
run_watched "taskset -c 0" ib_write_lat -x 0 -F -s 64 -n 300
bad=$(awk 'NF && $0 !~ /^(0 )*$/' "$T_TMP/lists" | wc -l)
[ "$bad" -eq 0 ] ||
	fail "ib_write_lat under taskset -c 0: a thread left CPU 0 in $bad samples ($(awk 'NF && $0 !~ /^(0 )*$/' "$T_TMP/lists" | head -1))"
pass "ib_write_lat under taskset -c 0: the engine threads stayed on CPU 0"
