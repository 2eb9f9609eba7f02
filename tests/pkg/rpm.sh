#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# pkg.rpm: redhat/swiw.spec builds swiw, swiw-dkms and swiw-devel with
# `rpmbuild -bb` from a `git archive`-style tarball of the checkout. On
# Debian, rpm has no database of the build dependencies (--nodeps: the
# Debian packages .ci/deps installs stand in for them) and no debuginfo
# tooling a Fedora build would use (debug_package off). Everything else
# is the spec's own %prep, %build, %check and %install. Each .rpm ships
# exactly the files its list here names, the main one requires
# libibverbs 44 only, and the dkms one runs dkms in its scriptlets.
#
#   rpm.sh SRC OUT
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/pkg_lib.sh"

pkg_args "$@"
need_cmd rpmbuild
pkg_same_version "$(sed -nE 's/^Version:[[:space:]]+//p' "$SRC/redhat/swiw.spec")" \
	redhat/swiw.spec

rm -rf "$OUT" && mkdir -p "$OUT/SOURCES" || fail "cannot make $OUT"
pkg_export_tree "$SRC" "$OUT/swiw-$VERSION" || fail "cannot export $SRC"
tar -C "$OUT" -czf "$OUT/SOURCES/swiw-$VERSION.tar.gz" "swiw-$VERSION" ||
	fail "cannot make the source tarball"
rm -rf "${OUT:?}/swiw-$VERSION"

note "rpmbuild -bb --nodeps redhat/swiw.spec (log: $OUT/build.log)"
start=$(date +%s)
if ! rpmbuild -bb --nodeps --define "_topdir $OUT" --define "debug_package %{nil}" \
	--define "_smp_mflags -j$(nproc)" "$SRC/redhat/swiw.spec" >"$OUT/build.log" 2>&1; then
	tail -40 "$OUT/build.log"
	fail "rpmbuild failed"
fi
note "built in $(($(date +%s) - start)) s:"
(cd "$OUT/RPMS" && find . -name '*.rpm' | sort) | sed 's|^\./|    |'
grep -E '^[0-9]+% tests passed' "$OUT/build.log" | sed 's/^/    %check: /'
grep -i '^warning' "$OUT/build.log" | sed 's/^/    rpmbuild: /'

for pkg in swiw swiw-dkms swiw-devel; do
	rpm=$(find "$OUT/RPMS" -name "$pkg-$VERSION-*.rpm" | head -1)
	[ -n "$rpm" ] || {
		check_fail "no .rpm for $pkg"
		continue
	}
	pkg_expand "$HERE/$pkg.rpm.files" "$SRC" "$VERSION" >"$OUT/$pkg.expected"
	# Files only: directories have mode 04xxxx in rpm's FILEMODES.
	rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$rpm" 2>/dev/null |
		awk '$1 !~ /^d/ { print $2 }' | grep -v '^/usr/lib/\.build-id/' |
		sort >"$OUT/$pkg.shipped"
	pkg_compare "$pkg" "$OUT/$pkg.expected" "$OUT/$pkg.shipped"
done

rpm=$(find "$OUT/RPMS" -name "swiw-$VERSION-*.$(uname -m).rpm" | head -1)
req=$(rpm -qp --requires "$rpm" 2>/dev/null)
note "swiw requires libibverbs: $(grep '^libibverbs' <<<"$req" | tr '\n' ' ')"
grep -Eq '^libibverbs(\(x86-64\))? >= 44$' <<<"$req" &&
	grep -Eq '^libibverbs(\(x86-64\))? < 45$' <<<"$req" ||
	check_fail "swiw does not pin libibverbs 44"
rpm -qp --configfiles "$rpm" 2>/dev/null | grep -qx /etc/swiw/swiw.conf ||
	check_fail "/etc/swiw/swiw.conf is not a %config file"
rpm=$(find "$OUT/RPMS" -name "swiw-dkms-$VERSION-*.rpm" | head -1)
rpm -qp --requires "$rpm" 2>/dev/null | grep -qx dkms || check_fail "swiw-dkms does not require dkms"
rpm -qp --scripts "$rpm" 2>/dev/null | grep -q "dkms add -m swiw -v $VERSION" ||
	check_fail "swiw-dkms does not add the module to DKMS"

pkg_end
