#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# freestanding.sh CC WIREDIR: compiles every wire-core file with
# -ffreestanding -nostdinc against tests/wire/freestanding/ only.
set -u
cc=$1 wire=$2
stub=$(dirname "$0")/freestanding
# The lower half also sees swiw-abi.h and swiw_limits.h, as in the kernel.
top=$wire/../../..
fail=0 n=0
for f in "$wire"/*.c; do
	n=$((n + 1))
	if ! "$cc" -std=gnu11 -ffreestanding -nostdinc -DSWIW_FREESTANDING \
		-Wall -Wextra -Werror -O2 -I"$stub" -I"$wire" \
		-I"$top/kernel-headers" -I"$top/providers/swiw" -c "$f" -o /dev/null; then
		echo "FAIL: $f does not build freestanding"
		fail=1
	fi
done
[ $n -gt 0 ] || { echo "FAIL: no wire-core sources in $wire"; exit 1; }
[ $fail -eq 0 ] && echo "ok: $n wire-core files build freestanding with $cc"
exit $fail
