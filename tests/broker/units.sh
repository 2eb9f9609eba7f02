#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# broker.units: the systemd units the packages ship for the host's broker
# (swiw-broker.socket, swiw-broker.service as configured for this build)
# are valid to systemd-analyze, start the installed broker, and listen on
# the broker's own name and default port.
. "$(dirname "$0")/../lib/swiw_test.sh"
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${SWIW_BUILD:?}
socket=$src/providers/swiw/broker/systemd/swiw-broker.socket
service=$build/providers/swiw/broker/swiw-broker.service

command -v systemd-analyze >/dev/null ||
	fail "systemd-analyze is missing (package systemd; .ci/deps installs it)"
[ -r "$socket" ] && [ -r "$service" ] || fail "no units in $src or $build"

exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$service")
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:[A-Z]*=//p' "$build/CMakeCache.txt")
case $exe in
"$prefix"/*/swiw/swiw-broker) ;;
*) fail "ExecStart runs '$exe', not the broker installed under $prefix" ;;
esac
pass "the service starts the installed broker ($exe)"

grep -qx 'ListenSequentialPacket=@swiw-broker' "$socket" ||
	fail "the socket unit does not hold @swiw-broker (swiw_broker_proto.h)"
grep -qx 'ListenStream=7949' "$socket" ||
	fail "the socket unit does not hold port 7949 (broker_port's default)"
pass "the socket unit holds the broker's name and default port"

# Verified as installed, with the broker of this build in place of the
# installed one (which need not exist here).
dir=$T_TMP/units
mkdir -p "$dir"
cp "$socket" "$dir/"
sed "s|^ExecStart=[^ ]*|ExecStart=$build/bin/swiw-broker|" "$service" \
	>"$dir/swiw-broker.service"
run systemd-analyze verify --man=no "$dir/swiw-broker.socket" \
	"$dir/swiw-broker.service"
assert_ok "systemd-analyze verify"
[ -z "$ERR$OUT" ] || fail "systemd-analyze had something to say: $ERR$OUT"
pass "systemd-analyze verify: both units are clean"
