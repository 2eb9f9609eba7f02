#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# sparse.sh WIREDIR: sparse, with its endianness checks, prints nothing
# for the wire core, in the user-space and the freestanding environment.
set -u
wire=$1
stub=$(dirname "$0")/freestanding
top=$wire/../../..
inc=(-I"$top/kernel-headers" -I"$top/providers/swiw")
command -v sparse >/dev/null || { echo "FAIL: sparse is not installed"; exit 1; }
flags=(-Wbitwise -Wcast-to-as -Wdefault-bitfield-sign -Wparen-string
	-Wptr-subtraction-blows -Wreturn-void -Wshadow -Wtypesign -Wundef
	-Wsparse-error)
out=$(sparse "${flags[@]}" -D_GNU_SOURCE -I"$wire" "${inc[@]}" "$wire"/*.c 2>&1)
out+=$(sparse "${flags[@]}" -DSWIW_FREESTANDING -nostdinc -I"$stub" -I"$wire" \
	"${inc[@]}" "$wire"/*.c 2>&1)
if [ -n "$out" ]; then
	printf '%s\n' "$out"
	echo "FAIL: sparse reports on the wire core"
	exit 1
fi
echo "ok: sparse is clean on $(ls "$wire"/*.c | wc -l) wire-core files"
