# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Interface selection and logging from SWIW_INTERFACES, SWIW_LOG_LEVEL and
# the SWIW_CONFIG file, as the stock ibv_devices sees them.
. "$(dirname "$0")/../lib/swiw_test.sh"
need_swiw

need_cmd ibv_devices

# devs [VAR=VALUE...]: runs swiw-run ibv_devices with the given environment
# and leaves the swiw device names, sorted and space separated, in $DEVS.
devs() {
	run env "$@" "${SWIW[@]}" ibv_devices
	DEVS=$(swiw_devices_of "$OUT" | tr '\n' ' ' | sed 's/ $//')
}

# --- defaults ---------------------------------------------------------------
devs
assert_ok
assert_has "$DEVS" "(^| )swiw_lo( |$)" "default selection"
err_lacks "^swiw:" "default selection"
ALL=$DEVS
pass "default selection lists: $ALL"

# --- SWIW_INTERFACES --------------------------------------------------------
devs SWIW_INTERFACES=lo
assert_ok
assert_eq "$DEVS" "swiw_lo" "swiw devices with SWIW_INTERFACES=lo"
err_lacks "^swiw:"
pass "SWIW_INTERFACES=lo lists swiw_lo only"

devs 'SWIW_INTERFACES=!lo'
assert_ok
assert_lacks "$DEVS" "(^| )swiw_lo( |$)" "SWIW_INTERFACES='!lo'"
assert_eq "$DEVS" "$(tr ' ' '\n' <<<"$ALL" | grep -vx swiw_lo | tr '\n' ' ' | sed 's/ $//')" \
	"SWIW_INTERFACES='!lo' keeps every other device"
pass "SWIW_INTERFACES='!lo' hides swiw_lo and keeps the rest"

devs 'SWIW_INTERFACES=lo,!lo'
assert_lacks "$DEVS" "swiw_lo" "SWIW_INTERFACES='lo,!lo' (exclusion wins)"
devs 'SWIW_INTERFACES=nomatch*   l?'
assert_eq "$DEVS" "swiw_lo" "SWIW_INTERFACES='nomatch*   l?' (whitespace list, fnmatch)"
devs 'SWIW_INTERFACES=nomatch*'
assert_eq "$DEVS" "" "SWIW_INTERFACES='nomatch*'"
out_lacks "swiw_"
pass "patterns: exclusion wins, lists and wildcards work, no match lists none"

# Unset and empty differ: unset means the default, an empty value is not a
# valid pattern list, is reported and leaves the previous value in force.
devs SWIW_INTERFACES=
assert_ok
err_has '^swiw: SWIW_INTERFACES="" is not valid, ignored$' "empty SWIW_INTERFACES"
assert_count "$ERR" "^swiw:" 1 "messages for empty SWIW_INTERFACES"
assert_eq "$DEVS" "$ALL" "empty SWIW_INTERFACES keeps the default"
pass "empty SWIW_INTERFACES is reported and ignored"

LONG=$(printf 'x%.0s' $(seq 600))
devs "SWIW_INTERFACES=$LONG"
err_has "^swiw: SWIW_INTERFACES=\"x+\" is not valid, ignored$" "600-character SWIW_INTERFACES"
assert_eq "$DEVS" "$ALL" "overlong SWIW_INTERFACES keeps the default"
pass "overlong SWIW_INTERFACES is reported and ignored"

# --- SWIW_LOG_LEVEL ---------------------------------------------------------
devs SWIW_INTERFACES=lo SWIW_LOG_LEVEL=debug
err_has "^swiw: device swiw_lo added$" "SWIW_LOG_LEVEL=debug"
devs SWIW_INTERFACES=lo SWIW_LOG_LEVEL=4
err_has "^swiw: device swiw_lo added$" "SWIW_LOG_LEVEL=4"
devs SWIW_INTERFACES=lo SWIW_LOG_LEVEL=info
err_lacks "^swiw:" "SWIW_LOG_LEVEL=info"
devs SWIW_LOG_LEVEL=loud
err_has '^swiw: SWIW_LOG_LEVEL="loud" is not valid, ignored$' "SWIW_LOG_LEVEL=loud"
assert_eq "$DEVS" "$ALL" "a bad SWIW_LOG_LEVEL changes no selection"
pass "SWIW_LOG_LEVEL: debug and 4 log, info does not, 'loud' is reported"

# --- the configuration file -------------------------------------------------
CONF=$T_TMP/swiw.conf
printf '# test\ninterfaces = nomatch*\n' >"$CONF"
devs SWIW_CONFIG="$CONF"
assert_ok
assert_eq "$DEVS" "" "SWIW_CONFIG with interfaces = nomatch*"
err_lacks "^swiw:" "a good configuration file"
pass "config file 'interfaces = nomatch*' hides swiw_lo"

devs SWIW_CONFIG="$CONF" SWIW_INTERFACES=lo
assert_eq "$DEVS" "swiw_lo" "SWIW_INTERFACES=lo over the file's nomatch*"
pass "SWIW_INTERFACES=lo overrides the file"

devs SWIW_CONFIG="$CONF" SWIW_INTERFACES=
err_has '^swiw: SWIW_INTERFACES="" is not valid, ignored$'
assert_eq "$DEVS" "" "empty SWIW_INTERFACES leaves the file's value"
pass "empty SWIW_INTERFACES leaves the file's nomatch* in force"

# Bad lines are reported with file and line and skipped; good lines apply.
BAD=$T_TMP/bad.conf
cat >"$BAD" <<'EOF'
# a comment, then a blank line

log_level = debug
colour = blue
interfaces = lo   # trailing comment
this line has no equals sign
log_level = 9
interfaces =
EOF
devs SWIW_CONFIG="$BAD"
assert_ok
Q=$(re_quote "$BAD")
err_has "^swiw: $Q:4: unknown key or bad value, ignored$" "unknown key on line 4"
err_has "^swiw: $Q:6: expected key = value, ignored$" "line 6 without '='"
err_has "^swiw: $Q:7: unknown key or bad value, ignored$" "log_level = 9 on line 7"
err_has "^swiw: $Q:8: unknown key or bad value, ignored$" "empty interfaces on line 8"
assert_count "$ERR" "ignored$" 4 "warnings for $BAD"
assert_lacks "$ERR" ":[1235]: " "warnings for good lines of $BAD"
assert_eq "$DEVS" "swiw_lo" "interfaces = lo from a file with bad lines"
err_has "^swiw: device swiw_lo added$" "log_level = debug from a file with bad lines"
pass "bad config lines are reported as file:line and skipped; good lines apply"

# The environment beats the file for the log level too.
devs SWIW_CONFIG="$BAD" SWIW_LOG_LEVEL=none
err_lacks "device swiw_lo added" "SWIW_LOG_LEVEL=none over the file's debug"
err_has "^swiw: $Q:4: " "configuration errors show at any log level"
pass "SWIW_LOG_LEVEL=none overrides the file; file errors still show"

MISSING=$T_TMP/missing.conf
devs SWIW_CONFIG="$MISSING"
assert_ok
err_has "^swiw: cannot read $(re_quote "$MISSING"): No such file or directory$" \
	"SWIW_CONFIG naming a missing file"
assert_eq "$DEVS" "$ALL" "a missing SWIW_CONFIG file keeps the defaults"
pass "a missing SWIW_CONFIG file is reported (cannot read) and the defaults apply"

devs SWIW_CONFIG="$T_TMP"
assert_ok
err_has "^swiw: cannot read $(re_quote "$T_TMP"): Is a directory$" \
	"SWIW_CONFIG naming a directory"
assert_eq "$DEVS" "$ALL" "an unreadable SWIW_CONFIG keeps the defaults"
pass "SWIW_CONFIG naming a directory is reported (cannot read) and the defaults apply"

# --- SWIW_ENGINE -------------------------------------------------------------
# No /dev/swiw here: auto and inprocess run the in-process engine, and say
# which in fw_ver; kernel refuses to open a device, with the reason.
[ -e /dev/swiw ] && fail "this host has /dev/swiw; the engine checks expect none"
swiw_run ibv_devinfo -v -d swiw_lo
assert_ok
out_has 'fw_ver:[[:space:]]+swiw [0-9.]+ in-process$' "fw_ver names the engine"
run env SWIW_LOG_LEVEL=info "${SWIW[@]}" ibv_devinfo -d swiw_lo
assert_ok
err_has '^swiw: in-process engine: /dev/swiw: No such file or directory$' \
	"the reason for the in-process engine at log level info"
run env SWIW_ENGINE=inprocess SWIW_LOG_LEVEL=info "${SWIW[@]}" \
	ibv_devinfo -d swiw_lo
assert_ok
err_lacks '/dev/swiw' "engine = inprocess does not look for the helper"
run env SWIW_ENGINE=kernel "${SWIW[@]}" ibv_devinfo -d swiw_lo
assert_nonzero
err_has '^swiw: engine = kernel, but the kernel helper cannot be used: /dev/swiw: No such file or directory$' \
	"engine = kernel without the helper"
run env SWIW_ENGINE=ring SWIW_LOG_LEVEL=info "${SWIW[@]}" ibv_devinfo -v -d swiw_lo
assert_ok
out_has 'fw_ver:[[:space:]]+swiw [0-9.]+ ring$' "fw_ver names the ring engine"
err_has '^swiw: ring engine: engine = ring in the configuration$' \
	"the reason for the ring engine at log level info"
run env SWIW_ENGINE=turbo "${SWIW[@]}" ibv_devinfo -d swiw_lo
assert_ok
err_has '^swiw: SWIW_ENGINE="turbo" is not valid, ignored$' "SWIW_ENGINE=turbo"
pass "SWIW_ENGINE: in-process and ring shown in fw_ver, kernel refused without /dev/swiw, bad values reported"
