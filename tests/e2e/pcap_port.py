#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# pcap_port.py FILE PORT: exits 0 when the pcap FILE (Ethernet, being
# written: a cut-short last record is fine) holds an IPv4 TCP packet from
# or to PORT. capture.sh polls with it: tshark would do, but it starts
# slowly, which under QEMU TCG takes many seconds a call.
import struct
import sys

try:
    data = open(sys.argv[1], "rb").read()
except OSError:
    sys.exit(1)
port = int(sys.argv[2])
if len(data) < 24:
    sys.exit(1)
magic = struct.unpack("<I", data[:4])[0]
end = "<" if magic in (0xa1b2c3d4, 0xa1b23c4d) else ">"
if struct.unpack(end + "I", data[20:24])[0] != 1:  # LINKTYPE_ETHERNET
    sys.exit(2)
off = 24
while off + 16 <= len(data):
    incl = struct.unpack(end + "I", data[off + 8:off + 12])[0]
    pkt = data[off + 16:off + 16 + incl]
    off += 16 + incl
    if len(pkt) < 14 + 20 + 4 or pkt[12:14] != b"\x08\x00":
        continue
    ihl = (pkt[14] & 0x0F) * 4
    if pkt[14 + 9] != 6 or len(pkt) < 14 + ihl + 4:
        continue
    sport, dport = struct.unpack(">HH", pkt[14 + ihl:14 + ihl + 4])
    if port in (sport, dport):
        sys.exit(0)
sys.exit(1)
