#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# interop.matrix, the host side: builds the siw variants (build_siw.sh),
# boots the VM lab once with them and this build's swiw.ko, runs
# matrix_guest.sh there (swiw <-> siw both ways, on the in-process engine
# and the kernel helper, across MPA settings; swiw <-> swiw with markers;
# siw <-> siw as the baseline), then cuts the guest's captures into one
# file per run and judges each with tests/wire/capture_check.sh (tshark
# is slow under TCG, so it runs here). Prints the matrix
#   group, server -> client, tool, MPA settings -> pass/FAIL, figure,
#   siw <-> siw's figure for the same tool and CRC setting
# and last "N passed, M failed": one per row (the run in the guest and its
# capture), and one per step of the guest that is no row (setup, module
# loads and unloads, captures, swiw.ko's unload, the kernel log).
#
# Environment: SWIW_BUILD (required); MATRIX_KEEP=DIR copies the captures,
# results and the guest's dmesg there; MATRIX_ROWS=ERE runs only the rows
# whose name matches (a development aid: the rows left out are not
# counted); MATRIX_TIMEOUT (default 800) bounds the guest.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/swiw_test.sh"
: "${SWIW_BUILD:?SWIW_BUILD is not set (the swiw build directory)}"
CHECK=$HERE/../wire/capture_check.sh
KO=$SWIW_BUILD/tests/kernel/module/swiw/swiw.ko

bail() {
	check_fail "$*"
	checks_end
	exit 1
}
need_cmd tshark
[ -f "$KO" ] || bail "$KO is missing (ctest -R kernel.build builds it)"
mods=$(bash "$HERE/build_siw.sh" "$SWIW_BUILD") || bail "build_siw.sh"
mapfile -t mods <<<"$mods"
[ "${#mods[@]}" -eq 4 ] || bail "build_siw.sh named ${#mods[@]} modules, 4 expected"
keep=$T_TMP/keep
mkdir "$keep" || fail "cannot make $keep"

args=(--timeout "${MATRIX_TIMEOUT:-800}" --keep "$keep")
for m in "${mods[@]}" "$KO"; do
	args+=(--module "$m")
done
for v in MATRIX_ROWS MATRIX_BW_N MATRIX_READ_N MATRIX_LAT_N MATRIX_PING_N; do
	[ -z "${!v:-}" ] || args+=(--env "$v=${!v}")
done
start=$SECONDS
bash "$HERE/../vm/run.sh" "${args[@]}" -- bash "$HERE/matrix_guest.sh" | tee "$keep/guest.out"
rc=${PIPESTATUS[0]}
guest_s=$((SECONDS - start))
echo "guest: exit $rc after $guest_s s"

# The guest's steps that are no row: each one check.
while read -r _ name res _; do
	if [ "$res" = PASS ]; then
		T_PASSED=$((T_PASSED + 1))
	else
		check_fail "guest step $name"
	fi
done < <(grep -E '^LAB-TEST (setup|load-|capture-|unload-|swiw-unload|dmesg)' "$keep/guest.out")
grep -q '^LAB-TEST setup ' "$keep/guest.out" ||
	check_fail "the guest reported no setup (exit $rc)"

# Cut each phase's capture into one file per run that passed there.
declare -A split=() res=() line=()
mkdir -p "$keep/runs"
while IFS='|' read -r name _ _ _ _ _ r _ _ pcap ports _; do
	[ -n "$name" ] || continue
	line[$name]=1
	[ "$r" = PASS ] && split[$pcap]+=" $name=$ports"
done <"$keep/results"
for pcap in "${!split[@]}"; do
	# shellcheck disable=SC2086 # NAME=PORTS words
	python3 "$PCAP_PORTS" split "$keep/$pcap" "$keep/runs" ${split[$pcap]} >/dev/null ||
		echo "FAIL: cannot split $pcap"
done

cstart=$SECONDS
# Each capture's check keeps a core busy with tshark for a second or
# more: as many run at once as there are cores, each into checks/NAME.out
# and its exit status into checks/NAME.rc, read in order below.
mkdir -p "$keep/checks"
declare -A checking=()
nchecks=$(awk -F'|' '$1 != "" && $7 == "PASS" { print $1 }' "$keep/results" | sort -u | wc -l)
while IFS='|' read -r name _ _ _ _ _ r _ _ _ _ crc maddrs _; do
	[ -n "$name" ] && [ "$r" = PASS ] && [ -z "${checking[$name]:-}" ] || continue
	checking[$name]=1
	job_slot
	note "judging the capture of $name (${#checking[@]} of $nchecks)"
	# shellcheck disable=SC2086 # addresses are words
	{
		bash "$CHECK" "$keep/runs/$name.pcap" "$crc" ${maddrs//[,-]/ } \
			>"$keep/checks/$name.out" 2>&1
		echo $? >"$keep/checks/$name.rc"
	} &
done <"$keep/results"
wait
declare -A cell=() fig=()
notes=()
while IFS='|' read -r name group tool srv cli mpa r f unit pcap ports crc maddrs note; do
	[ -n "$name" ] || continue
	if [ "$r" = PASS ]; then
		out=$(cat "$keep/checks/$name.out" 2>&1)
		crc_rc=$(cat "$keep/checks/$name.rc" 2>/dev/null)
		[[ $crc_rc =~ ^[0-9]+$ ]] || crc_rc=1
		# A run that failed as expected may end before any FPDU: then
		# its handshake is all there is to judge.
		if [ "$crc_rc" -ne 0 ] && [[ $note == "expected failure"* ]] &&
			[ "$(grep '^FAIL' <<<"$out")" = "FAIL: no DDP segment decoded" ]; then
			crc_rc=0
			out+=$'\n'"(no FPDU: the connection ended after the handshake, as expected)"
		fi
		if [ "$crc_rc" -eq 0 ]; then
			echo "ok - $name: $(tail -1 <<<"$out")"
		else
			echo "$out" | sed "s/^/    $name: /"
			# The first reason on the FAIL line: a CI summary keeps
			# only those.
			why=$(grep -m1 '^FAIL' <<<"$out" | cut -c7-200)
			echo "FAIL: $name: the capture does not decode clean${why:+: $why}"
			r=FAIL note="capture"
		fi
	else
		echo "FAIL: $name: ${note:-failed in the guest}"
	fi
	if [ "$r" = PASS ]; then
		T_PASSED=$((T_PASSED + 1))
		cell[$name]="pass"
		fig[$name]="$f $unit"
		[ "$f" != - ] || fig[$name]="(no figure)"
		if [[ $note == "expected failure"* ]]; then
			cell[$name]=xfail
			fig[$name]="(siw, README)"
			notes+=("$name: $note")
		elif [ -n "$note" ]; then
			cell[$name]="pass*"
			notes+=("$name: $note")
		fi
	else
		T_FAILED=$((T_FAILED + 1))
		cell[$name]="FAIL"
		fig[$name]="(${note:-guest})"
	fi
	res[$name]="$group|$tool|$srv|$cli|$mpa|$crc"
done <"$keep/results"
for name in $(cat "$keep/plan" 2>/dev/null); do
	[ -n "${line[$name]:-}" ] && continue
	check_fail "$name: never ran (the guest stopped before it)"
	cell[$name]=FAIL
	fig[$name]="(never ran)"
	res[$name]="?|?|?|?|?|?"
done
[ -s "$keep/plan" ] || check_fail "the guest wrote no plan of rows"
check_s=$((SECONDS - cstart))

if [ -n "${MATRIX_KEEP:-}" ]; then
	mkdir -p "$MATRIX_KEEP" && cp -r "$keep/." "$MATRIX_KEEP/" &&
		echo "kept the captures in $MATRIX_KEEP"
fi

# who SPEC: a peer as the matrix shows it.
who() {
	case $1 in
	siw) echo siw ;;
	fwd) echo "swiw-run>siw0" ;;
	sw:inprocess* | swr:inprocess*) echo swiw/in ;;
	sw:kernel* | swr:kernel*) echo swiw/kern ;;
	*) echo "$1" ;;
	esac
}
echo
echo "swiw <-> siw interop matrix, VM lab (QEMU TCG, Linux 6.1 siw; figures are the client's)"
echo "swiw/in: in-process engine, swiw/kern: kernel helper; settings beyond the defaults in the MPA column"
printf '%-9s %-22s %-11s %-24s %-5s %-16s %s\n' group "server -> client" tool MPA result figure \
	"siw<->siw"
for name in $(cat "$keep/plan" 2>/dev/null); do
	IFS='|' read -r group tool srv cli mpa crc <<<"${res[$name]}"
	base=base-$tool
	[ "$crc" = yes ] && base=base-crc-$tool
	[[ $mpa == rev1* ]] && [ -n "${cell[base-v1-$tool]:-}" ] && base=base-v1-$tool
	b=${fig[$base]:--}
	[ -z "${cell[$base]:-}" ] || [[ ${cell[$base]} == pass* ]] || b="$b (${cell[$base]})"
	[ "$group" = siw-siw ] && b=''
	printf '%-9s %-22s %-11s %-24s %-5s %-16s %s\n' "$group" "$(who "$srv") -> $(who "$cli")" \
		"$tool" "$mpa" "${cell[$name]}" "${fig[$name]}" "$b"
done
[ "${#notes[@]}" -eq 0 ] || printf '* %s\n' "${notes[@]}"
echo "guest ${guest_s} s, capture checks ${check_s} s"
checks_end
