#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Seed corpus for tests/fuzz/fuzz_cm.c: gen_cm_seeds.py OUTDIR
# Each seed is the knobs octet (see fuzz_cm.c) and what a peer sends an
# rdma_cm listener: whole MPA Requests as swiw, siw, cxgb4 and irdma send
# them, each cut short, and one seed per way a Request is refused.
import os
import struct
import sys

out = sys.argv[1]
KEY_REQ = b"MPA ID Req Frame"
KEY_REP = b"MPA ID Rep Frame"
M, C, R, E = 0x80, 0x40, 0x20, 0x10  # flags: markers, CRC, reject, enhanced
A, B = 0x8000, 0x4000  # the RFC 6581 word: in IRD, P2P and SEND RTR
W, D = 0x8000, 0x4000  # in ORD, WRITE and READ RTR


def word(ird, ord_, flags_ird=A, flags_ord=W | D):
    return struct.pack(">HH", flags_ird | ird, flags_ord | ord_)


def request(pd=b"", flags=E, rev=2, v2=None, key=KEY_REQ, pd_len=None):
    if flags & E and rev == 2 and v2 is None:
        v2 = word(16, 16)
    body = (v2 or b"") + pd
    n = len(body) if pd_len is None else pd_len
    return key + bytes([flags, rev]) + struct.pack(">H", n) + body


def block(src, dst, nonce, psns=None):
    # swiw's private-data block; with psns, the longer one (PSN words).
    n = 28 if psns is None else 36
    b = struct.pack(">IBBHIIIIHH", 0x73776977, 1, 1, n, src, dst,
                    nonce >> 32, nonce & 0xFFFFFFFF, 0, 0)
    if psns is not None:
        b += struct.pack(">II", *psns)
    return b


KNOWN = 0x80000000
cm_pd = bytes(range(56))  # what an rdma_cm application may send
valid = {
    "swiw": request(block(0x1234, 0x5678, 0x0102030405060708)),
    "swiw_psn": request(block(0x1234, 0x5678, 7, (KNOWN | 5, KNOWN | 9))),
    "cm_pd": request(cm_pd),
    "empty_pd": request(),
    "max_pd": request(bytes(252)),
    "rev1": request(cm_pd, flags=0, rev=1),
    "rev1_crc": request(cm_pd, flags=C, rev=1),
    "rev2_plain": request(cm_pd, flags=0, rev=2),
    "crc": request(cm_pd, flags=E | C),
    "markers": request(cm_pd, flags=E | M),
    "no_p2p": request(cm_pd, v2=word(8, 8, 0, 0)),
    "send_rtr": request(cm_pd, v2=word(8, 8, A | B, 0)),
    "read_rtr": request(cm_pd, v2=word(8, 8, A, D)),
    "ird_ord_none": request(cm_pd, v2=word(0x3FFF, 0x3FFF, 0, 0)),
    "ird_big": request(cm_pd, v2=word(0x3000, 0x3000)),
    "reserved_flags": request(cm_pd, flags=E | 0x0F),
}
refused = {
    "key_rep": request(cm_pd, key=KEY_REP),
    "key_bad": request(cm_pd, key=b"GET / HTTP/1.1\r\n"),
    "rev0": request(cm_pd, flags=0, rev=0),
    "rev3": request(cm_pd, rev=3),
    "reject_flag": request(cm_pd, flags=E | R),
    "pd_257": request(bytes(253)),
    "pd_512": request(bytes(508)),
    "pd_len_ffff": request(cm_pd, pd_len=0xFFFF)[:20],
    "short_word": request(b"", v2=b"\x80\x10", pd_len=2),
    "p2p_no_rtr": request(cm_pd, v2=word(8, 8, A, 0)),
    "trailing": request(cm_pd) + b"\x00\x2a early FPDU",
    "two_requests": request(cm_pd) * 2,
}

os.makedirs(out, exist_ok=True)
seen = set()


def put(name, data):
    if data not in seen:
        seen.add(data)
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


# Knobs: 0 the defaults (rev 2, P2P on), 1 rev 1, 2 CRC, 4 markers,
# 0x08 P2P off, 0x10 P2P required, 0x20 / 0x40 RTR lists.
knobs = [0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x60]
for i, (name, req) in enumerate(sorted(valid.items())):
    put(name, bytes([knobs[i % len(knobs)]]) + req)
    # Partial: what the shim has after its first read, and less.
    for suffix, cut in (("_hdr", 20), ("_19", 19), ("_1", 1),
                        ("_half", 20 + (len(req) - 20) // 2),
                        ("_less1", len(req) - 1)):
        put(name + suffix, b"\0" + req[:cut])
for i, (name, req) in enumerate(sorted(refused.items())):
    put("no_" + name, bytes([knobs[i % len(knobs)]]) + req)
for k in knobs[1:]:
    put("knobs_%02x" % k, bytes([k]) + valid["cm_pd"])
print("%d seeds in %s" % (len(seen), out))
