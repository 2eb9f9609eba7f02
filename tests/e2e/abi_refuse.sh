# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The shim reads the release from the loaded libibverbs's real file name and
# refuses releases it was not verified with: one warning, no swiw device, and
# the program otherwise behaves as the stock libibverbs alone would.
. "$(dirname "$0")/../lib/swiw_test.sh"
need_swiw

need_cmd ibv_devices ldd
REFUSE='is not a libibverbs release swiw was verified with'

# The libibverbs the stock tools load, by its real file name.
REAL=$(ldd "$(command -v ibv_devices)" | awk '$1 == "libibverbs.so.1" { print $3 }')
if [ -z "$REAL" ] || [ ! -r "$REAL" ]; then
	fail "cannot find ibv_devices' libibverbs.so.1"
fi
REAL=$(realpath "$REAL")
case $(basename "$REAL") in
libibverbs.so.1.*.*.*) ;;
*) fail "$REAL is not named libibverbs.so.1.<minor>.<release>.<patch>" ;;
esac
MINOR=$(basename "$REAL" | cut -d. -f4)
HOST_REL=$(basename "$REAL" | cut -d. -f5)
note "stock libibverbs: $REAL (release $HOST_REL)"

# fake_lib RELEASE: a directory whose libibverbs.so.1 is a copy of the real
# library named as release RELEASE; its path goes to $LIBDIR.
fake_lib() {
	LIBDIR=$T_TMP/rel$1
	LIBFILE=$LIBDIR/libibverbs.so.1.$MINOR.$1.0
	mkdir -p "$LIBDIR"
	cp "$REAL" "$LIBFILE"
	ln -sf "$(basename "$LIBFILE")" "$LIBDIR/libibverbs.so.1"
	# The dynamic loader must really take the copy.
	run env LD_LIBRARY_PATH="$LIBDIR" ldd "$(command -v ibv_devices)"
	out_has "libibverbs\.so\.1 => $(re_quote "$LIBDIR")/libibverbs\.so\.1 " \
		"ldd with LD_LIBRARY_PATH=$LIBDIR"
}

# --- release 99: refused ------------------------------------------------------
fake_lib 99
# What the stock libibverbs alone does here (kernel devices only).
run env LD_LIBRARY_PATH="$LIBDIR" ibv_devices
STOCK_RC=$RC STOCK_OUT=$OUT
assert_lacks "$OUT$ERR" "swiw" "ibv_devices without swiw-run"

swiw_run env LD_LIBRARY_PATH="$LIBDIR" ibv_devices
assert_count "$ERR" "$REFUSE" 1 "refusal warnings"
err_has "^swiw: $(re_quote "$LIBFILE") $REFUSE \(rdma-core [0-9]+ to [0-9]+\); swiw devices are disabled$" \
	"the refusal names the real file"
assert_count "$ERR" "^swiw:" 1 "swiw messages when refused"
out_lacks "swiw_" "ibv_devices with a refused libibverbs"
# Kernel devices only: exactly what the stock library printed, with its
# status (0 and an empty list with a kernel RDMA stack, else its error).
assert_rc "$STOCK_RC" "ibv_devices with a refused libibverbs (as without swiw)"
assert_eq "$OUT" "$STOCK_OUT" "ibv_devices output with a refused libibverbs"
pass "release 99 refused with one warning; no swiw device; exit $RC as stock"

# The warning comes once per process, however often devices are listed.
run env LD_LIBRARY_PATH="$LIBDIR" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	"${SWIW[@]}" "$PY" -c '
import pyverbs.device as d
for i in range(3):
    try:
        print("devices", [x.name.decode() for x in d.get_device_list()])
    except Exception as e:
        print("error", e)
'
assert_ok "pyverbs listing devices 3 times with a refused libibverbs"
assert_count "$ERR" "$REFUSE" 1 "refusal warnings over 3 listings"
out_lacks "swiw_"
pass "the refusal is reported once per process"

# --- the boundaries of the verified range -------------------------------------
for rel in 37 57; do
	fake_lib $rel
	swiw_run env LD_LIBRARY_PATH="$LIBDIR" ibv_devices
	assert_count "$ERR" "$REFUSE" 1 "refusal of release $rel"
	out_lacks "swiw_"
done
for rel in 38 56; do
	fake_lib $rel
	swiw_run env LD_LIBRARY_PATH="$LIBDIR" ibv_devices
	assert_ok "release $rel"
	err_lacks "^swiw:" "release $rel"
	out_has "^[[:space:]]+swiw_lo[[:space:]]" "release $rel lists swiw_lo"
done
pass "releases 37 and 57 refused, 38 and 56 accepted"

# --- control: a copy under the host's own name works ------------------------
fake_lib "$HOST_REL"
swiw_run env LD_LIBRARY_PATH="$LIBDIR" ibv_devices
assert_ok
err_lacks "^swiw:" "copy named as release $HOST_REL"
out_has "^[[:space:]]+swiw_lo[[:space:]]+[0-9a-f]{16}$" "copy named as release $HOST_REL"
pass "a copy named libibverbs.so.1.$MINOR.$HOST_REL.0 lists swiw_lo"
