# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The distribution's own verbs tools and pyverbs see swiw_lo through
# swiw-run, and do not see it without.
. "$(dirname "$0")/../lib/swiw_test.sh"
need_swiw

need_cmd ibv_devices ibv_devinfo
[ -x "$PY" ] || fail "$PY is missing"
run "$PY" -c 'import pyverbs.device'
assert_ok "pyverbs is not importable by $PY"

# The loopback interface is the one device every host has.
run ip -o link show dev lo
assert_has "$OUT" "<[^>]*UP[^>]*>" "lo must be up for this test"
run ip -o -4 addr show dev lo
assert_has "$OUT" "inet 127\.0\.0\.1/" "lo must have 127.0.0.1 for this test"

GID_LO='0000:0000:0000:0000:0000:ffff:7f00:0001'

# --- ibv_devices --------------------------------------------------------
swiw_run ibv_devices
assert_ok
out_has "^[[:space:]]+swiw_lo[[:space:]]+[0-9a-f]{16}$" "ibv_devices lists swiw_lo"
err_lacks "^swiw:" "ibv_devices under swiw-run prints no swiw message"
pass "swiw-run ibv_devices lists swiw_lo"

# Negative control: the same stock binary without swiw-run.
run ibv_devices
assert_lacks "$OUT$ERR" "swiw_" "plain ibv_devices"
pass "plain ibv_devices (exit $RC) lists no swiw device"

# --- ibv_devinfo -v -------------------------------------------------------
swiw_run ibv_devinfo -v
assert_ok
BLK=$(block_of "$OUT" swiw_lo)
[ -n "$BLK" ] || fail_last "ibv_devinfo -v has no 'hca_id: swiw_lo' block"
W='[[:space:]]+'
assert_has "$BLK" "^${W}transport:${W}iWARP \(1\)$" "swiw_lo transport"
assert_has "$BLK" "^${W}state:${W}PORT_ACTIVE \(4\)$" "swiw_lo port state"
assert_has "$BLK" "^${W}link_layer:${W}Ethernet$" "swiw_lo link layer"
assert_has "$BLK" "^${W}phys_port_cnt:${W}1$" "swiw_lo port count"
assert_has "$BLK" "^${W}GID\[ *0\]:${W}$GID_LO(,|$)" "swiw_lo GID 0"
assert_has "$BLK" "^${W}node_guid:${W}([0-9a-f]{4}:){3}[0-9a-f]{4}$" "swiw_lo node_guid"
err_lacks "^swiw:" "ibv_devinfo -v prints no swiw message"
pass "ibv_devinfo -v: swiw_lo is iWARP, PORT_ACTIVE, Ethernet, GID[0] ::ffff:127.0.0.1"

# The GUID ibv_devices prints is the one ibv_devinfo prints.
GUID_DEVINFO=$(printf '%s\n' "$BLK" | awk '$1 == "node_guid:" { gsub(":", "", $2); print $2 }')
swiw_run ibv_devices
GUID_DEVICES=$(printf '%s\n' "$OUT" | awk '$1 == "swiw_lo" { print $2 }')
assert_eq "$GUID_DEVICES" "$GUID_DEVINFO" "swiw_lo GUID, ibv_devices vs ibv_devinfo"
# lo has no MAC: its GUID is locally administered and not multicast.
[ $((0x${GUID_DEVICES:0:2} & 0x03)) -eq 2 ] ||
	fail "swiw_lo node GUID $GUID_DEVICES is not locally administered unicast"
pass "swiw_lo node GUID $GUID_DEVICES is the same in both tools, locally administered"

# --- ibv_devinfo -d -------------------------------------------------------
swiw_run ibv_devinfo -d swiw_lo
assert_ok
assert_has "$OUT" "^hca_id:[[:space:]]+swiw_lo$" "ibv_devinfo -d swiw_lo"
assert_count "$OUT" "^hca_id:" 1 "ibv_devinfo -d swiw_lo shows one device"
pass "swiw-run ibv_devinfo -d swiw_lo exits 0"

swiw_run ibv_devinfo -d nosuchdev
assert_nonzero
assert_has "$OUT$ERR" "nosuchdev" "ibv_devinfo -d nosuchdev names the device"
out_lacks "^hca_id:"
pass "swiw-run ibv_devinfo -d nosuchdev fails (exit $RC)"

# --- pyverbs --------------------------------------------------------------
# The acceptance command, verbatim.
swiw_py -c 'import pyverbs.device as d; d.Context(name="swiw_lo")'
assert_ok "pyverbs Context(name=\"swiw_lo\")"
pass "pyverbs opens swiw_lo"

swiw_py -c '
import pyverbs.device as d
c = d.Context(name="swiw_lo")
print("state", c.query_port(1).state)
print("gid0", str(c.query_gid(1, 0)))
c.close()
'
assert_ok "pyverbs queries on swiw_lo"
out_has "^state 4$" "pyverbs query_port(1).state"
out_has "^gid0 .*ffff:7f00:0001$" "pyverbs query_gid(1, 0)"
pass "pyverbs: port 1 state is 4 (ACTIVE), GID 0 ends with ffff:7f00:0001"

# Negative control: without swiw-run pyverbs cannot open swiw_lo.
run "$PY" -c 'import pyverbs.device as d; d.Context(name="swiw_lo")'
assert_nonzero "plain pyverbs Context(name=\"swiw_lo\")"
pass "plain pyverbs cannot open swiw_lo (exit $RC)"

# --- swiw-run itself ------------------------------------------------------
run "$SWIW_RUN" --help
assert_ok
out_has "^Usage: swiw-run" "swiw-run --help"
run "$SWIW_RUN"
assert_rc 2 "swiw-run without arguments"
err_has "^Usage: swiw-run" "swiw-run without arguments"
run "$SWIW_RUN" /nonexistent
assert_nonzero "swiw-run /nonexistent"
run "$SWIW_RUN" --no-such-option
assert_rc 2 "swiw-run --no-such-option"
swiw_run -- ibv_devices
assert_ok "swiw-run -- ibv_devices"
out_has "^[[:space:]]+swiw_lo[[:space:]]" "swiw-run -- ibv_devices"
pass "swiw-run: --help 0, no arguments 2, /nonexistent fails, -- works"

# --preload libraries come first in the program's LD_PRELOAD, in the order
# given, before the caller's and swiw's (empty files: ld.so skips them). A
# sanitizer build's runtime is needed, and first, for swiw's library.
: >"$T_TMP/a.so"
: >"$T_TMP/b.so"
first=${SWIW_TEST_PRELOAD:-$T_TMP/a.so}
run env LD_PRELOAD="$T_TMP/c.so" "$SWIW_RUN" --preload "$first" \
	--preload "$T_TMP/b.so" printenv LD_PRELOAD
assert_ok "swiw-run --preload A --preload B printenv"
out_has "^$(re_quote "$first:$T_TMP/b.so:$T_TMP/c.so:$SWIW_BUILD/lib/libswiw-preload.so")\$"
run "$SWIW_RUN" --preload
assert_rc 2 "swiw-run --preload without a library"
run "$SWIW_RUN" --preload "$T_TMP/nonexistent.so" true
assert_rc 127 "swiw-run --preload of a missing library"
pass "swiw-run --preload: first in order, no library 2, a missing one 127"
