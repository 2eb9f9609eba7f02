#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Seed corpus for tests/fuzz/fuzz_fpdu.c: valid and invalid MPA streams,
# and round-trip scripts. Input layout: flags, split seed, min ULPDU,
# stream offset / 4, then the body (see fuzz_fpdu.c).
import os, random, struct, sys

out = sys.argv[1]
rng = random.Random(5044)

def crc32c(b):
    c = 0xffffffff
    for x in b:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ (0x82f63b78 if c & 1 else 0)
    return c ^ 0xffffffff

def fpdu(ulpdu, pos, markers, crc):
    lead = markers and pos % 512 == 0
    content = struct.pack(">H", len(ulpdu)) + ulpdu
    content += b"\0" * ((-len(content)) % 4)
    o = bytearray()
    for i in range(len(content) + 1):
        if markers and (pos + len(o)) % 512 == 0:
            ptr = 0 if not o else len(o) - (4 if lead else 0)
            o += struct.pack(">HH", 0, ptr)
        if i < len(content):
            o.append(content[i])
    c = crc32c(o) if crc else 0
    return bytes(o) + struct.pack("<I", c)

def stream(lens, pos, markers, crc):
    w = b""
    for n in lens:
        w += fpdu(bytes(rng.randrange(256) for _ in range(n)), pos + len(w),
                  markers, crc)
    return w

def put(name, flags, seed, minu, pos4, body):
    with open(os.path.join(out, name), "wb") as f:
        f.write(bytes([flags, seed, minu, pos4]) + body)

k = 0
for markers in (0, 1):
    for crc in (0, 2):
        for pos4 in (0, 127):
            pos = (pos4 * 4 + 0xfffffc00) & 0xffffffff
            lens = [rng.choice([14, 18, 28, 46, 47, 100, 600, 1200])
                    for _ in range(rng.randrange(1, 6))]
            w = stream(lens, pos, markers, crc)
            put("valid_%02d" % k, markers | crc | 8 * (k & 1), k * 37 % 256,
                14, pos4, w)
            k += 1
            # invalid variants of the same stream
            b = bytearray(w)
            b[len(b) // 2] ^= 0x40
            put("badcrc_%02d" % k, markers | crc, k, 14, pos4, bytes(b))
            b = bytearray(w)
            b[-1] ^= 1
            put("badtail_%02d" % k, markers | crc, 255, 14, pos4, bytes(b))
            put("trunc_%02d" % k, markers | crc, 3, 14, pos4,
                w[: rng.randrange(1, len(w))])
# markers: reserved bits, FPDUPTR, lengths
w = stream([600, 300, 700], 0xfffffc00, 1, 2)
for name, off, val in (("mrsvd", 0, 0x80), ("mptr_lead", 3, 4),
                       ("mptr", 1024 + 3, 104), ("mptr_low", 1024 + 3, 101),
                       ("mptr_alt", 512 + 3, 0)):
    b = bytearray(w)
    b[off] = val
    if name == "mptr_alt":
        b[512 + 2:512 + 4] = struct.pack(">H", 512)
    put(name, 1 | 2, 1, 14, 0, bytes(b))
    put(name + "_nocrc", 1, 2, 14, 0, bytes(b))
b = bytearray(w)
b[4:6] = struct.pack(">H", 13)
put("short_len", 3, 0, 14, 0, bytes(b))
put("max_len", 3 | (3 << 5), 0, 14, 0, w)  # max 100
put("zero_len", 0, 0, 0, 0, stream([0, 0, 1, 2, 3], 0, 0, 0))
put("garbage", 3, 9, 14, 0, bytes(rng.randrange(256) for _ in range(300)))
put("ones", 3, 2, 0, 0, b"\xff" * 64)
put("zeros_m", 1, 1, 0, 0, b"\0" * 1100)
# round trips: scripts of 16-bit lengths
for i in range(8):
    n = rng.randrange(1, 20)
    body = b"".join(struct.pack(">H", rng.choice(
        [0, 14, 46, 500, 508, 1000, 0x8000 | rng.randrange(0x7fff)]))
        for _ in range(n))
    put("rt_%02d" % i, 4 | (i & 3) | (8 if i & 4 else 0), i * 29 % 256, 14 * (i & 1),
        rng.randrange(256), body)
