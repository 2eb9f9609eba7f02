# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Discovery, port state, GIDs, node GUIDs and async events with several
# interfaces, in network namespaces of the test's own, seen by the stock
# ibv_devices, ibv_devinfo and ibv_asyncwatch.
#
#   $NS:  lo; $S0 (two IPv4, one global IPv6, link-local); $S1 (down at
#         first); $S2 (up, no address); veth0 (IPv4 only)
#   $NS2: vpeer, veth0's peer, down at first
. "$(dirname "$0")/../lib/swiw_test.sh"
need_swiw

need_root
need_cmd ip ibv_devices ibv_devinfo ibv_asyncwatch stdbuf sed

NS=swiw-e2e-$$-$RANDOM
NS2=$NS-peer
netns_add "$NS" "$NS2"
note "namespaces $NS and $NS2"

ns() { ns_ip "$NS" "$@"; }
ns2() { ns_ip "$NS2" "$@"; }

# Stub interfaces that are always running once up: dummy, or ifb where the
# kernel has no dummy driver (the same semantics: no carrier to lose).
if ip -n "$NS" link add dummy0 type dummy 2>/dev/null; then
	KIND=dummy
else
	KIND=ifb
	note "this kernel has no dummy links; using ifb links instead"
	ns link add ifb0 type ifb
fi
S0=${KIND}0 S1=${KIND}1 S2=${KIND}2
ns link add "$S1" type $KIND
ns link add "$S2" type $KIND

ns addr add 10.11.0.1/24 dev "$S0"
ns addr add 10.11.0.2/24 dev "$S0"
ns addr add fd00:11::1/64 dev "$S0" nodad
ns link set "$S0" up
ns addr add 10.12.0.1/24 dev "$S1"
ns link set "$S2" addrgenmode none
ns link set "$S2" up
# No automatic IPv6 on veth0: its only GID change is the one the test makes.
veth_pair "$NS" veth0 10.13.0.1 "$NS2" vpeer 10.13.0.2
ns2 link set vpeer down

# devices: the swiw devices ibv_devices lists in $NS, sorted, in $DEVS.
devices() {
	ns_swiw_run "$NS" ibv_devices
	assert_ok
	DEVS=$(swiw_devices_of "$OUT" | tr '\n' ' ' | sed 's/ $//')
}
has_dev() {
	devices
	[[ " $DEVS " == *" $1 "* ]]
}
lacks_dev() {
	! has_dev "$1"
}
# port_state DEV: ibv_devinfo's port 1 state of DEV, e.g. PORT_ACTIVE.
port_state() {
	ns_swiw_run "$NS" ibv_devinfo -d "$1"
	assert_ok
	STATE=$(printf '%s\n' "$OUT" | awk '$1 == "state:" { print $2; exit }')
}
state_is() {
	port_state "$1"
	[ "$STATE" = "$2" ]
}
# py_port DEV: "state phys_state active_mtu" of port 1 as pyverbs reads it.
py_port() {
	ns_swiw_py "$NS" -c '
import sys, pyverbs.device as d
p = d.Context(name=sys.argv[1]).query_port(1)
print("port", p.state, p.phys_state, p.active_mtu)
' "$1"
	assert_ok "pyverbs query_port on $1"
	PORT=$(printf '%s\n' "$OUT" | sed -n 's/^port //p')
}
# eui64 MAC: the modified EUI-64 of a MAC, as 16 hex digits.
eui64() {
	local IFS=:

	# shellcheck disable=SC2086 # split at the colons
	set -- $1
	printf '%02x%s%sfffe%s%s%s' $((0x$1 ^ 0x02)) "$2" "$3" "$4" "$5" "$6"
}
mac_of() {
	ip -n "$NS" -o link show dev "$1" |
		sed -n 's/.* link\/ether \([0-9a-f:]\{17\}\) .*/\1/p'
}
# colons: 16 hex digits as four groups, as ibv_devinfo prints GUIDs.
colons() {
	printf '%s' "$1" | sed 's/\(....\)/\1:/g; s/:$//'
}

# --- discovery with several interfaces ----------------------------------------
devices
assert_eq "$DEVS" "$(printf '%s\n' swiw_lo "swiw_$S0" swiw_veth0 | sort | tr '\n' ' ' | sed 's/ $//')" \
	"swiw devices in $NS"
err_lacks "^swiw:"
pass "several interfaces, several devices: $DEVS"
pass "$S1 (down) and $S2 (up, no address) have no device"

ns_swiw_run "$NS" ibv_devinfo -d "swiw_$S1"
assert_nonzero "ibv_devinfo -d swiw_$S1 while $S1 is down"

ns link set "$S1" up
wait_until 10 "swiw_$S1 to appear after 'ip link set $S1 up'" has_dev "swiw_$S1"
pass "bringing $S1 up makes swiw_$S1 appear"
port_state "swiw_$S1"
assert_eq "$STATE" PORT_ACTIVE "swiw_$S1 ($KIND) port state"
ns link set "$S1" down
wait_until 10 "swiw_$S1 to go after 'ip link set $S1 down'" lacks_dev "swiw_$S1"
pass "taking $S1 down again removes swiw_$S1"

# --- port state follows the veth peer ---------------------------------------
port_state swiw_veth0
assert_eq "$STATE" PORT_DOWN "swiw_veth0 port state while vpeer is down"
py_port swiw_veth0
assert_eq "$PORT" "1 2 3" "pyverbs state, phys_state (POLLING), active_mtu (1024 for MTU 1500) of swiw_veth0"
pass "veth0 with its peer down is listed with PORT_DOWN, phys_state POLLING"
ns2 link set vpeer up
wait_until 10 "swiw_veth0 to become PORT_ACTIVE after 'ip link set vpeer up'" \
	state_is swiw_veth0 PORT_ACTIVE
py_port swiw_veth0
assert_eq "$PORT" "4 5 3" "pyverbs state, phys_state (LINK_UP), active_mtu of swiw_veth0"
pass "swiw_veth0 becomes PORT_ACTIVE (phys_state LINK_UP) when vpeer comes up"

# active_mtu: the largest IB MTU that fits the interface MTU, read live.
ns link set "$S0" mtu 2100
ns_swiw_run "$NS" ibv_devinfo -d "swiw_$S0"
assert_has "$OUT" "^[[:space:]]+active_mtu:[[:space:]]+2048 \(4\)$" "active_mtu of swiw_$S0 with MTU 2100"
ns link set "$S0" mtu 1500
ns_swiw_run "$NS" ibv_devinfo -d "swiw_$S0"
assert_has "$OUT" "^[[:space:]]+active_mtu:[[:space:]]+1024 \(3\)$" "active_mtu of swiw_$S0 with MTU 1500"
pass "active_mtu follows the interface MTU (2100 -> 2048, 1500 -> 1024)"

# --- GIDs -------------------------------------------------------------------------
MAC0=$(mac_of "$S0")
[ -n "$MAC0" ] || fail "no MAC address for $S0 in 'ip link'"
GUID0=$(eui64 "$MAC0")
LL0="fe80:0000:0000:0000:$(colons "$GUID0")"
gids_of_s0() {
	ns_swiw_run "$NS" ibv_devinfo -v -d "swiw_$S0"
	assert_ok
	GIDS=$(printf '%s\n' "$OUT" | grep -E '^[[:space:]]+GID\[')
}
ll_listed() {
	gids_of_s0
	printf '%s\n' "$GIDS" | grep -q "$LL0"
}
wait_until 10 "the link-local address $LL0 of $S0 as a GID" ll_listed
G='[[:space:]]+GID\[ *'
W='\]:[[:space:]]+'
assert_has "$GIDS" "^${G}0${W}0000:0000:0000:0000:0000:ffff:0a0b:0001(,|$)" "GID 0 of swiw_$S0"
assert_has "$GIDS" "^${G}1${W}0000:0000:0000:0000:0000:ffff:0a0b:0002(,|$)" "GID 1 of swiw_$S0"
assert_has "$GIDS" "^${G}2${W}fd00:0011:0000:0000:0000:0000:0000:0001(,|$)" "GID 2 of swiw_$S0"
assert_has "$GIDS" "^${G}3${W}$LL0(,|$)" "GID 3 of swiw_$S0"
assert_count "$GIDS" "GID\[" 4 "GIDs of swiw_$S0"
pass "swiw_$S0 GIDs: 10.11.0.1, then 10.11.0.2 at index 1, fd00:11::1, link-local last"

ns_swiw_run "$NS" ibv_devinfo -v -d swiw_veth0
assert_count "$OUT" "^[[:space:]]+GID\[" 1 "GIDs of swiw_veth0"
assert_has "$OUT" "^${G}0${W}0000:0000:0000:0000:0000:ffff:0a0d:0001(,|$)" "GID 0 of swiw_veth0"

# --- node GUIDs -------------------------------------------------------------------
devices
assert_eq "$(printf '%s\n' "$OUT" | awk -v d="swiw_$S0" '$1 == d { print $2 }')" \
	"$GUID0" "ibv_devices node GUID of swiw_$S0 (MAC $MAC0)"
ns_swiw_run "$NS" ibv_devinfo -d "swiw_$S0"
assert_has "$OUT" "^[[:space:]]+node_guid:[[:space:]]+$(colons "$GUID0")$" \
	"ibv_devinfo node_guid of swiw_$S0 (MAC $MAC0)"
MACV=$(mac_of veth0)
[ -n "$MACV" ] || fail "no MAC address for veth0 in 'ip link'"
ns_swiw_run "$NS" ibv_devinfo -d swiw_veth0
assert_has "$OUT" "^[[:space:]]+node_guid:[[:space:]]+$(colons "$(eui64 "$MACV")")$" \
	"ibv_devinfo node_guid of swiw_veth0 (MAC $MACV)"
pass "node GUIDs are the EUI-64 of the MACs ($MAC0 -> $GUID0)"

# --- async events through the stock ibv_asyncwatch ----------------------------
AW=$T_TMP/asyncwatch.out
timeout -k 5 45 ip netns exec "$NS" "${SWIW[@]}" \
	stdbuf -oL ibv_asyncwatch -d swiw_veth0 >"$AW" 2>&1 &
AW_PID=$!
on_exit "kill $AW_PID; wait $AW_PID"

# aw_refresh: the watcher's output so far into $OUT, so that a failing wait
# shows it; fails if the watcher has died.
aw_refresh() {
	LAST="ibv_asyncwatch -d swiw_veth0 (its output so far)"
	OUT=$(cat "$AW") ERR='' RC=running
	kill -0 "$AW_PID" 2>/dev/null || {
		wait "$AW_PID"
		RC=$?
		fail_last "ibv_asyncwatch exited early"
	}
}
aw_has() {
	aw_refresh
	printf '%s\n' "$OUT" | grep -Eq -- "$1"
}
# events: the event names reported so far, space separated.
events() {
	sed -n 's/^[[:space:]]*event_type IBV_EVENT_\([A-Z_]*\) (.*/\1/p' "$AW" |
		tr '\n' ' ' | sed 's/ $//'
}
ev_count() {
	aw_refresh
	[ "$(events | tr ' ' '\n' | grep -cx "$1")" -ge "$2" ]
}

wait_until 10 "ibv_asyncwatch to open swiw_veth0" aw_has "^swiw_veth0: async event FD [0-9]+"
assert_eq "$(events)" "" "events before any change"

ns2 link set vpeer down
wait_until 10 "PORT_ERR after 'ip link set vpeer down'" ev_count PORT_ERR 1
aw_has "event_type IBV_EVENT_PORT_ERR \(10\), port 1$" ||
	fail_last "PORT_ERR is not reported for port 1"
port_state swiw_veth0
assert_eq "$STATE" PORT_DOWN "swiw_veth0 port state after PORT_ERR"
pass "ibv_asyncwatch reports PORT_ERR when vpeer goes down; ibv_devinfo agrees"

ns2 link set vpeer up
wait_until 10 "PORT_ACTIVE after 'ip link set vpeer up'" ev_count PORT_ACTIVE 1
aw_has "event_type IBV_EVENT_PORT_ACTIVE \(9\), port 1$" ||
	fail_last "PORT_ACTIVE is not reported for port 1"
pass "ibv_asyncwatch reports PORT_ACTIVE when vpeer comes back"

ns addr add 10.13.0.9/24 dev veth0
wait_until 10 "GID_CHANGE after adding 10.13.0.9 to veth0" ev_count GID_CHANGE 1
aw_has "event_type IBV_EVENT_GID_CHANGE \(18\), port 1$" ||
	fail_last "GID_CHANGE is not reported for port 1"
assert_eq "$(events)" "PORT_ERR PORT_ACTIVE GID_CHANGE" "events so far"
ns_swiw_run "$NS" ibv_devinfo -v -d swiw_veth0
assert_has "$OUT" "^${G}1${W}0000:0000:0000:0000:0000:ffff:0a0d:0009(,|$)" \
	"GID 1 of swiw_veth0 after the change"
pass "ibv_asyncwatch reports GID_CHANGE when an address is added; the GID is there"

# Changes of other interfaces are not veth0's events. Notifications arrive
# in order, so once the GID_CHANGE of a later veth0 change is in, any stray
# event would be too.
ns addr add 10.11.0.3/24 dev "$S0"
ns link set "$S1" up
ns link set "$S1" down
ns addr add 10.13.0.10/24 dev veth0
wait_until 10 "GID_CHANGE after adding 10.13.0.10 to veth0" ev_count GID_CHANGE 2
assert_eq "$(events)" "PORT_ERR PORT_ACTIVE GID_CHANGE GID_CHANGE" \
	"events after changing $S0 and $S1, then veth0"
pass "changes of $S0 and $S1 raise no event on swiw_veth0"

ns link del veth0
wait_until 10 "DEVICE_FATAL after 'ip link del veth0'" ev_count DEVICE_FATAL 1
EV=$(events)
note "events: $EV"
REST=${EV#PORT_ERR PORT_ACTIVE GID_CHANGE GID_CHANGE }
# Deleting the link takes it down, drops its three addresses, then the link.
assert_has "$REST" "^PORT_ERR( GID_CHANGE)+ DEVICE_FATAL$" \
	"events on deleting veth0 (all events: $EV)"
pass "ibv_asyncwatch reports PORT_ERR and DEVICE_FATAL, last, when veth0 is deleted"
devices
assert_lacks "$DEVS" "swiw_veth0" "devices after deleting veth0"
pass "swiw_veth0 is gone from the device list"
