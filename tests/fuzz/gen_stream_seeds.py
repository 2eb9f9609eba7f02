#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Seeds for tests/fuzz/fuzz_stream.c from the wire core's own traffic:
#   gen_stream_seeds.py CAPTURE.pcap OUTDIR
# where CAPTURE.pcap is written by wire_capture (tests/wire/capture). Each
# direction of each TCP connection, from its first FPDU on (after the MPA
# Request or Reply), becomes one seed, prefixed with the fuzzer's flag
# octet (markers as negotiated, CRC on, ordered, RFC 7306) and a piece
# seed; truncated copies are added.
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from pcap_ports import records  # noqa: E402

cap, out = sys.argv[1], sys.argv[2]
MARKER_PORTS = {40003}  # wire_capture's conversation with markers

streams = {}
with open(cap, "rb") as f:
    for _, tcp in records(f.read()):
        if tcp and tcp[2]:
            streams.setdefault(tcp[:2], bytearray()).extend(tcp[2])

os.makedirs(out, exist_ok=True)
n = 0
for (sport, dport), data in sorted(streams.items()):
    # Skip the MPA Request/Reply: 20 octets and its private data.
    pd_len = struct.unpack(">H", data[18:20])[0]
    body = bytes(data[20 + pd_len:])
    conv = sport if sport != 4791 else dport
    flags = (1 if conv in MARKER_PORTS else 0) | 2 | 4 | 8
    for i, cut in enumerate((len(body), 4096, 600, 97)):
        with open(os.path.join(out, "cap-%d-%d-%d" % (sport, dport, i)), "wb") as s:
            s.write(bytes([flags, 17 * (i + 1)]) + body[:cut])
        n += 1
print("%d seeds in %s" % (n, out))
