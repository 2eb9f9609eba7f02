#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# pkg.deb: `dpkg-buildpackage -b -us -uc` in a clean export of the
# checkout builds swiw, swiw-dkms and swiw-dev; lintian (pedantic and
# experimental tags shown) reports no error and no warning that is not
# overridden with a reason, for the binaries and the source; each .deb ships exactly the files its list
# here names; the provider pins the libibverbs release it was built for;
# the only maintainer scripts are dh_dkms's.
#
#   deb.sh SRC OUT    (the .debs are left in OUT for pkg.install)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/pkg_lib.sh"

pkg_args "$@"
need_cmd dpkg-buildpackage dh dh_dkms lintian
pkg_same_version "$(dpkg-parsechangelog -l "$SRC/debian/changelog" -SVersion)" debian/changelog

rm -rf "$OUT" && mkdir -p "$OUT" || fail "cannot make $OUT"
pkg_export_tree "$SRC" "$OUT/swiw-$VERSION" || fail "cannot export $SRC"

# The source package too, from the clean tree, for lintian's source checks.
(cd "$OUT" && dpkg-source -b "swiw-$VERSION") >"$OUT/source.log" 2>&1 || {
	cat "$OUT/source.log"
	fail "dpkg-source -b failed"
}
dsc=$OUT/swiw_$VERSION.dsc

note "dpkg-buildpackage -b -us -uc (log: $OUT/build.log)"
start=$(date +%s)
if ! (cd "$OUT/swiw-$VERSION" &&
	DEB_BUILD_OPTIONS="parallel=$(nproc)" dpkg-buildpackage -b -us -uc) \
	>"$OUT/build.log" 2>&1; then
	tail -40 "$OUT/build.log"
	fail "dpkg-buildpackage failed"
fi
note "built in $(($(date +%s) - start)) s:"
(cd "$OUT" && ls -1 ./*.deb) | sed 's|^\./|    |'
grep -E '^[0-9]+% tests passed' "$OUT/build.log" | sed 's/^/    build-time tests: /'

arch=$(dpkg --print-architecture)
changes=$OUT/swiw_${VERSION}_$arch.changes
[ -r "$changes" ] || fail "no $changes"

note "lintian -I -E --pedantic --show-overrides:"
lintian -I -E --pedantic --show-overrides "$changes" "$dsc" >"$OUT/lintian.txt" 2>&1
grep -v '^running with root privileges' "$OUT/lintian.txt" |
	grep -Ev '^(N|O): ' | sed 's/^/    /'
# Overrides by tag, with how often each applied (the reasons are in debian/).
sed -nE 's/^O: ([^ ]+ [^ ]+) ([^ ]+) .*/\1 \2/p' "$OUT/lintian.txt" | sort | uniq -c |
	sed 's/^ */    overridden: /'
if grep -Eq '^[EW]: ' "$OUT/lintian.txt"; then
	check_fail "lintian reports errors or warnings that are not overridden"
else
	check_pass "lintian: no error, no warning ($(grep -c '^O: ' "$OUT/lintian.txt") overridden, each with a reason in debian/)"
fi

for pkg in swiw swiw-dkms swiw-dev; do
	deb=$(ls "$OUT/${pkg}_${VERSION}"_*.deb 2>/dev/null | head -1)
	[ -n "$deb" ] || {
		check_fail "no .deb for $pkg"
		continue
	}
	pkg_expand "$HERE/$pkg.deb.files" "$SRC" "$VERSION" >"$OUT/$pkg.expected"
	dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\./|/|' |
		sort >"$OUT/$pkg.shipped"
	pkg_compare "$pkg" "$OUT/$pkg.expected" "$OUT/$pkg.shipped"
	scripts=$(dpkg-deb --ctrl-tarfile "$deb" | tar -t | sed 's|^\./||' |
		grep -Ev '^(|control|md5sums|conffiles)$' | sort | tr '\n' ' ')
	# dh_dkms's for the module; dh_installsystemd's for the broker's
	# socket unit.
	want=''
	[ "$pkg" != swiw-dkms ] || want='postinst prerm '
	[ "$pkg" != swiw ] || want='postinst postrm prerm '
	[ "$scripts" = "$want" ] ||
		check_fail "$pkg has maintainer files '$scripts', expected '$want'"
done

deb=$OUT/swiw_${VERSION}_$arch.deb
dep=$(dpkg-deb -f "$deb" Depends)
note "swiw Depends: $dep"
grep -q 'libibverbs1 (>= 44)' <<<"$dep" && grep -q 'libibverbs1 (<< 45~)' <<<"$dep" ||
	check_fail "swiw does not pin libibverbs1 44"
# The pin matches the libibverbs the provider was built against.
built=$(dpkg-query -W -f='${Version}' libibverbs-dev)
[[ $built == 44.* ]] || check_fail "built against libibverbs-dev $built, but the pin says 44"
dpkg-deb --ctrl-tarfile "$deb" | tar -xOf - ./conffiles 2>/dev/null |
	grep -qx /etc/swiw/swiw.conf || check_fail "/etc/swiw/swiw.conf is not a conffile"
dep=$(dpkg-deb -f "$OUT/swiw-dkms_${VERSION}_all.deb" Depends)
note "swiw-dkms Depends: $dep"
grep -q '^dkms' <<<"$dep" || check_fail "swiw-dkms does not depend on dkms"

pkg_end
