#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# sparse.sh WIREDIR: sparse, with its endianness checks, prints nothing
# for the wire core, in the user-space and the freestanding environment.
. "$(dirname "$0")/../lib/swiw_test.sh"
wire=$1
stub=$(dirname "$0")/freestanding
top=$wire/../../..
inc=(-I"$top/kernel-headers")
need_cmd sparse
flags=(-Wbitwise -Wcast-to-as -Wdefault-bitfield-sign -Wparen-string
	-Wptr-subtraction-blows -Wreturn-void -Wshadow -Wtypesign -Wundef
	-Wsparse-error)
out=$(sparse "${flags[@]}" -D_GNU_SOURCE -I"$wire" "${inc[@]}" "$wire"/*.c 2>&1)
out+=$(sparse "${flags[@]}" -DSWIW_FREESTANDING -nostdinc -I"$stub" -I"$wire" \
	"${inc[@]}" "$wire"/*.c 2>&1)
if [ -n "$out" ]; then
	printf '%s\n' "$out"
	fail "sparse reports on the wire core"
fi
pass "sparse is clean on $(ls "$wire"/*.c | wc -l) wire-core files"
