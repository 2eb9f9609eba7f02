#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# pcap_ports.py has FILE PORT
#     exits 0 when the pcap FILE (being written: a cut-short last record
#     is fine) holds an IPv4 TCP packet from or to PORT. The matrix's guest
#     polls with it (tshark starts slowly under QEMU TCG).
# pcap_ports.py split FILE DIR NAME=PORT[,PORT...]...
#     writes DIR/NAME.pcap for each NAME: the packets of FILE from or to
#     one of its ports (each run of the matrix has its own), in one pass.
#     Prints "NAME PACKETS" per file.
# FILE is classic pcap (dumpcap -P), Ethernet or Linux cooked ("-i any").
import struct
import sys

LINK_ETH, LINK_SLL = 1, 113


def records(data):
    """Yields (record bytes, ports or None); raises ValueError."""
    if len(data) < 24:
        raise ValueError("no pcap header")
    magic = struct.unpack("<I", data[:4])[0]
    end = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    link = struct.unpack(end + "I", data[20:24])[0]
    if link == LINK_ETH:
        l2, proto = 14, slice(12, 14)
    elif link == LINK_SLL:
        l2, proto = 16, slice(14, 16)
    else:
        raise ValueError("link type %d" % link)
    off = 24
    while off + 16 <= len(data):
        incl = struct.unpack(end + "I", data[off + 8:off + 12])[0]
        rec = data[off:off + 16 + incl]
        pkt = rec[16:]
        off += 16 + incl
        if len(pkt) < incl:
            break  # being written
        ports = None
        if len(pkt) >= l2 + 24 and pkt[proto] == b"\x08\x00":
            ihl = (pkt[l2] & 0x0F) * 4
            if pkt[l2 + 9] == 6 and len(pkt) >= l2 + ihl + 4:
                ports = struct.unpack(">HH", pkt[l2 + ihl:l2 + ihl + 4])
        yield rec, ports


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "has":
        try:
            data = open(sys.argv[2], "rb").read()
            port = int(sys.argv[3])
            for _, ports in records(data):
                if ports and port in ports:
                    return 0
        except (OSError, ValueError):
            return 1
        return 1
    if len(sys.argv) >= 4 and sys.argv[1] == "split":
        data = open(sys.argv[2], "rb").read()
        want = {}
        for arg in sys.argv[4:]:
            name, _, plist = arg.partition("=")
            want[name] = {int(p) for p in plist.split(",") if p}
        out = {name: [data[:24]] for name in want}
        count = dict.fromkeys(want, 0)
        for rec, ports in records(data):
            if not ports:
                continue
            for name, pset in want.items():
                if ports[0] in pset or ports[1] in pset:
                    out[name].append(rec)
                    count[name] += 1
        for name in want:
            with open("%s/%s.pcap" % (sys.argv[3], name), "wb") as f:
                f.write(b"".join(out[name]))
            print(name, count[name])
        return 0
    sys.stderr.write("usage: pcap_ports.py has FILE PORT | split FILE DIR NAME=PORTS...\n")
    return 2


sys.exit(main())
