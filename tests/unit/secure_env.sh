#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# unit.secure_env: a program that runs with more privilege than its caller
# (setuid root, run by nobody: AT_SECURE) takes nothing from the caller's
# environment: not the configuration file (SWIW_CONFIG), not a setting
# (SWIW_BROKER_PORT, SWIW_MPA_REV). Run as is, it takes both. The setuid
# copy lives on a tmpfs in a mount namespace of its own, so a nosuid
# build directory does not matter. Needs root, unshare and setpriv.
set -u
PROG=$1
fail() {
	echo "FAIL: $*"
	echo "0 passed, 1 failed"
	exit 1
}
[ "$(id -u)" = 0 ] || fail "needs root (a setuid-root copy run by nobody)"
for t in unshare setpriv; do
	command -v $t >/dev/null || fail "needs $t (util-linux)"
done
TMP=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$TMP"' EXIT
printf 'broker_port = 4444\n' >"$TMP/evil.conf"
mkdir "$TMP/suid"
chmod 755 "$TMP" "$TMP/suid"
chmod 644 "$TMP/evil.conf"

base=$("$PROG") || fail "$PROG did not run"
plain=$(SWIW_CONFIG=$TMP/evil.conf SWIW_MPA_REV=1 "$PROG")
echo "default:        $base"
echo "caller's env:   $plain"
case "$plain" in
"at_secure=0 broker_port=4444 mpa_rev=1") ;;
*) fail "the environment was not taken by an ordinary program" ;;
esac

# shellcheck disable=SC2016 # expanded by the inner shell
priv=$(unshare -m sh -c '
	set -e
	mount -t tmpfs -o mode=755 swiw-suid "$1"
	cp "$2" "$1/prog"
	chown root:root "$1/prog"
	chmod 4755 "$1/prog"
	cp "$3" "$1/evil.conf"
	chmod 644 "$1/evil.conf"
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		env SWIW_CONFIG="$1/evil.conf" SWIW_BROKER_PORT=4445 \
		SWIW_MPA_REV=1 "$1/prog"
' sh "$TMP/suid" "$PROG" "$TMP/evil.conf") || fail "the setuid run failed: $priv"
echo "setuid, nobody: $priv"
[ "${priv%% *}" = at_secure=1 ] || fail "no AT_SECURE in the setuid run"
[ "${priv#* }" = "${base#* }" ] ||
	fail "a privileged program took its caller's environment"
echo "1 passed, 0 failed"
