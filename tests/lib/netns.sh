# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Network namespaces for the tests, sourced by swiw_test.sh (its fail and
# on_exit): on the host for tests of their own, in the VM lab's guest
# alike. A namespace argument "" is the one the script runs in.

# in_ns NETNS CMD...: CMD in NETNS.
in_ns() {
	local ns=$1

	shift
	if [ -n "$ns" ]; then
		ip netns exec "$ns" "$@"
	else
		"$@"
	fi
}

# ns_ip NETNS ARGS...: ip ARGS in NETNS; the test fails if it fails.
ns_ip() {
	local ns=$1

	shift
	if [ -n "$ns" ]; then
		ip -n "$ns" "$@"
	else
		ip "$@"
	fi || fail "ip ${ns:+-n $ns }$*: failed"
}

# netns_add NETNS...: new network namespaces with lo up. At exit what
# runs in them (a broker a program started, say) is ended and they go.
netns_add() {
	local ns

	need_root
	need_cmd ip
	for ns; do
		ip netns add "$ns" || fail "cannot create network namespace $ns"
		on_exit "ip netns del '$ns'"
		on_exit "ip netns pids '$ns' | xargs -r kill"
		ns_ip "$ns" link set lo up
	done
}

# veth_pair NSA DEVA ADDRA NSB DEVB ADDRB: DEVA in NSA joined to DEVB in
# NSB by a veth pair, both up, each with its IPv4 address ("" for none;
# /24 unless the address has a prefix) and nothing else: no automatic
# IPv6, so a swiw device's GID 0 is ::ffff:ADDR. NSB, and NSA unless it
# is "", are made with netns_add if they do not exist yet.
veth_pair() {
	local ns

	for ns in "$1" "$4"; do
		[ -z "$ns" ] || [ -e "/run/netns/$ns" ] || netns_add "$ns"
	done
	ns_ip "$1" link add "$2" type veth peer name "$5" netns "$4"
	veth_end "$1" "$2" "$3"
	veth_end "$4" "$5" "$6"
}
veth_end() {
	ns_ip "$1" link set "$2" addrgenmode none
	if [ -n "$3" ]; then
		case $3 in
		*/*) ns_ip "$1" addr add "$3" dev "$2" ;;
		*) ns_ip "$1" addr add "$3/24" dev "$2" ;;
		esac
	fi
	ns_ip "$1" link set "$2" up
}

# no_offloads NETNS DEV...: no segmentation offloads on the links, so
# that a capture holds the segments TCP cut at the MSS, which Wireshark's
# MPA dissector needs to find markers.
no_offloads() {
	local ns=$1 dev

	shift
	for dev; do
		in_ns "$ns" ethtool -K "$dev" tso off gso off gro off >/dev/null 2>&1 ||
			fail "ethtool -K $dev: offloads stay on"
	done
}
