#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# freestanding.sh CC WIREDIR: compiles every wire-core file with
# -ffreestanding -nostdinc against tests/wire/freestanding/ only.
. "$(dirname "$0")/../lib/swiw_test.sh"
cc=$1 wire=$2
stub=$(dirname "$0")/freestanding
# The lower half also sees swiw-abi.h, as in the kernel.
top=$wire/../../..
n=0
for f in "$wire"/*.c; do
	n=$((n + 1))
	"$cc" -std=gnu11 -ffreestanding -nostdinc -DSWIW_FREESTANDING \
		-Wall -Wextra -Werror -O2 -I"$stub" -I"$wire" \
		-I"$top/kernel-headers" -c "$f" -o /dev/null ||
		check_fail "$f does not build freestanding"
done
[ $n -gt 0 ] || fail "no wire-core sources in $wire"
[ "$T_FAILED" -eq 0 ] || exit 1
pass "$n wire-core files build freestanding with $cc"
