# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The distribution's unmodified ibv_rc_pingpong, server and client in two
# processes under swiw-run: its QPs are connected by ibv_modify_qp(RTR)
# through the connection broker (started on demand), first over swiw_lo,
# then across two network namespaces joined by a veth pair (one broker in
# each namespace).
. "$(dirname "$0")/../lib/swiw_test.sh"
need_swiw

need_cmd ibv_rc_pingpong ss ip

# A busy-polling pingpong of 1000 iterations takes seconds on a small
# machine, more under a sanitizer.
T_LIMIT=${SWIW_TEST_TIMEOUT:-60}

# pingpong WHAT SRV_NS SRV_DEV CLI_NS CLI_DEV SERVER_ADDR OPTS...: one
# server/client run (namespace "" is ours); both must exit 0 and the client
# must print its bandwidth line.
pingpong() {
	local what=$1 sns=$2 sdev=$3 cns=$4 dev=$5 addr=$6 port

	shift 6
	port=$((10000 + RANDOM % 20000)) # below the ephemeral range
	serve "$sns" "$port" "${SWIW[@]}" ibv_rc_pingpong -g 0 -d "$sdev" -p "$port" "$@" ||
		fail_served "ibv_rc_pingpong server ($what) did not listen on $port"
	ns_swiw_run "$cns" ibv_rc_pingpong -g 0 -d "$dev" -p "$port" "$@" "$addr"
	served
	if [ "$RC" -ne 0 ] || [ "$SRV_RC" -ne 0 ]; then
		[ "$SRV_RC" -eq 124 ] && fail_served "server timed out: $what"
		fail_served "ibv_rc_pingpong $what: client exit $RC, server exit $SRV_RC"
	fi
	out_has "^[0-9]+ bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$" \
		"client bandwidth line ($what)"
	out_has "^[0-9]+ iters in [0-9.]+ seconds = [0-9.]+ usec/iter$" \
		"client latency line ($what)"
	grep -Eq "^[0-9]+ bytes in .* Mbit/sec$" "$T_TMP/srv.out" ||
		fail "server printed no bandwidth line ($what)"
	pass "ibv_rc_pingpong $what: $(printf '%s\n' "$OUT" | grep 'Mbit/sec')"
}

# --- one host, swiw_lo ---------------------------------------------------
LO=("" swiw_lo "" swiw_lo 127.0.0.1)
pingpong "swiw_lo" "${LO[@]}"
pingpong "swiw_lo -s 1" "${LO[@]}" -s 1
pingpong "swiw_lo -s 4096" "${LO[@]}" -s 4096
pingpong "swiw_lo -s 65536" "${LO[@]}" -s 65536
pingpong "swiw_lo -e" "${LO[@]}" -e
# Run as e2e.ring.rc_pingpong (SWIW_ENGINE=ring): the lower half really ran
# the streams, not the in-process engine.
if [ "${SWIW_ENGINE:-}" = ring ]; then
	SWIW_LOG_LEVEL=debug pingpong "swiw_lo, ring engine" "${LO[@]}" -n 10
	err_has '^swiw: QP [0-9]+: stream attached to the ring engine$' \
		"the client's stream ran on the ring engine"
fi

# --- two namespaces joined by veth ---------------------------------------
NSA=swiw-pp-$$-$RANDOM
NSB=$NSA-b
veth_pair "$NSA" ppa 10.21.0.1 "$NSB" ppb 10.21.0.2

VETH=("$NSA" swiw_ppa "$NSB" swiw_ppb 10.21.0.1)
pingpong "veth" "${VETH[@]}"
pingpong "veth -s 65536 -e" "${VETH[@]}" -s 65536 -e
