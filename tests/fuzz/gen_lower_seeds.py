#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Seeds for tests/fuzz/fuzz_lower.c: gen_lower_seeds.py STREAMDIR OUTDIR
# Each seed of fuzz_stream's corpus (flags, piece seed, stream) becomes
# one with four RQEs into the target's first region and, for some, txds
# the target's lower half sends (a Write, an INVALIDATE, a bad lkey).
import os
import struct
import sys

src, out = sys.argv[1], sys.argv[2]
STAG1 = 1 << 8 | 0x5A  # fuzz_lower.c's first region, at 0x1000
STAG2 = 2 << 8 | 0x5A


def rqe(i):
    sges = struct.pack("<QII", 0x1000 + 4096 * i, 2048, STAG1)
    sges += struct.pack("<QII", 0x1000 + 4096 * i + 2048, 2048, STAG1)
    body = struct.pack("<QHBBI", 100 + i, 1, 2, 0, 0) + sges
    return body.ljust(80, b"\0")


def txd(tid, flags, hdr, sges):
    payload = sum(s[1] for s in sges)
    t = struct.pack("<QHBBI", tid, flags | 1, len(sges), len(hdr), payload)
    t += hdr.ljust(72, b"\0")
    for laddr, length, lkey in sges:
        t += struct.pack("<QII", laddr, length, lkey)
    return t.ljust(152, b"\0")


# A tagged Write header (L set) to the peer's STag 0x1234 at TO 0.
write_hdr = bytes([0xC1, 0x40]) + struct.pack(">IQ", 0x1234, 0)
txds = [
    txd(1, 0x100, write_hdr, [(0x1000, 300, STAG1), (0x2000, 5, STAG1)]),
    txd(2, 0x200, struct.pack("<I", STAG2), []),
    txd(3, 0x100, write_hdr, [(0x1000, 10, 0xBAD)]),
]

os.makedirs(out, exist_ok=True)
for k, name in enumerate(sorted(os.listdir(src))):
    with open(os.path.join(src, name), "rb") as f:
        data = f.read()
    if len(data) < 2:
        continue
    flags, seed, stream = data[0] & 3, data[1], data[2:]
    rings = 4
    extra = b"".join(rqe(i) for i in range(4))
    if k % 2 == 0:
        rings |= len(txds) << 3
        extra += b"".join(txds)
    with open(os.path.join(out, "lower-" + name), "wb") as f:
        f.write(bytes([flags, seed, rings]) + extra + stream)
