#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The tests' pcap tool (python3 only: tshark starts slowly, which under
# QEMU TCG takes many seconds a call).
#
# pcap_ports.py has FILE PORT
#     exits 0 when the pcap FILE (being written: a cut-short last record
#     is fine) holds an IPv4 TCP packet from or to PORT among its newest
#     (its last HAS_TAIL bytes, if it is larger). The captures of
#     e2e.capture and the interop matrix's guest poll with it for the
#     probe they just sent.
# pcap_ports.py split FILE DIR NAME=PORT[,PORT...]...
#     writes DIR/NAME.pcap for each NAME: the packets of FILE from or to
#     one of its ports (each run of the matrix has its own), in one pass.
#     Prints "NAME PACKETS" per file.
#
# FILE is classic pcap (dumpcap -P), Ethernet or Linux cooked ("-i any").
# As a module, records() reads one (tests/fuzz/gen_stream_seeds.py).
import struct
import sys

LINK_ETH, LINK_SLL = 1, 113


class _Walk:
    """The record headers of a classic pcap, read in place (captures of a
    hundred megabytes are polled under TCG: no copies)."""

    def __init__(self, head):
        magic = struct.unpack_from("<I", head, 0)[0]
        end = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
        self.usec_max = 10**9 if magic in (0xA1B23C4D, 0x4D3CB2A1) else 10**6
        self.snap = struct.unpack_from(end + "I", head, 16)[0]
        link = struct.unpack_from(end + "I", head, 20)[0]
        if link not in (LINK_ETH, LINK_SLL):
            raise ValueError("link type %d" % link)
        self.l2 = 14 if link == LINK_ETH else 16
        self.hdr = struct.Struct(end + "IIII").unpack_from
        self.ports = struct.Struct(">HH").unpack_from

    def plausible(self, data, off):
        _, usec, incl, orig = self.hdr(data, off)
        return (usec < self.usec_max and self.l2 + 20 <= incl <= orig and
                incl <= self.snap)

    def synced(self, data, off, need):
        """True if @need plausible records start at @off, or fewer whose
        chain ends where data does (the last one may be cut short)."""
        n = 0
        while n < need:
            if off + 16 > len(data):
                return n > 0
            if not self.plausible(data, off):
                return False
            off += 16 + self.hdr(data, off)[2]
            n += 1
        return True

    def tcp(self, data, pkt, incl):
        """The IPv4 TCP segment of the packet of @incl octets at @pkt, as
        (source port, destination port, offset of its TCP header), or
        None."""
        l2 = self.l2
        if incl < l2 + 24 or data[pkt + l2 - 2:pkt + l2] != b"\x08\x00":
            return None
        ip = pkt + l2
        ihl = (data[ip] & 0x0F) * 4
        if data[ip + 9] != 6 or incl < l2 + ihl + 4:
            return None
        return self.ports(data, ip + ihl) + (ip + ihl,)

    def records(self, data, off):
        """(offset, length) of each whole packet from the record at @off."""
        while off + 16 <= len(data):
            incl = self.hdr(data, off)[2]
            if off + 16 + incl > len(data):
                return  # being written
            yield off + 16, incl
            off += 16 + incl

    def has(self, data, off, port):
        for pkt, incl in self.records(data, off):
            seg = self.tcp(data, pkt, incl)
            if seg and port in seg[:2]:
                return True
        return False


def records(data):
    """Yields (record bytes, TCP segment or None) for each whole record,
    a TCP segment of IPv4 as (source port, destination port, payload);
    raises ValueError if data is no pcap of a known link type."""
    if len(data) < 24:
        raise ValueError("no pcap header")
    walk = _Walk(data[:24])
    for pkt, incl in walk.records(data, 24):
        seg = walk.tcp(data, pkt, incl)
        tcp = None
        if seg:
            end, th = pkt + incl, seg[2]
            doff = (data[th + 12] >> 4) * 4 if th + 13 <= end else end - th
            tcp = (seg[0], seg[1], data[min(th + doff, end):end])
        yield data[pkt - 16:pkt + incl], tcp


# The probes are the last packets written: has() reads this much of a
# capture's end, and finds its first whole record there.
HAS_TAIL = 1 << 20


def has(path, port):
    try:
        with open(path, "rb") as f:
            head = f.read(24)
            walk = _Walk(head)
            size = f.seek(0, 2)
            if size > 24 + HAS_TAIL:
                f.seek(size - HAS_TAIL)
                tail = memoryview(f.read())
                for off in range(len(tail) - 16):
                    if walk.synced(tail, off, 8):
                        return walk.has(tail, off, port)
            f.seek(24)
            return walk.has(memoryview(head + f.read()), 24, port)
    except (OSError, ValueError, struct.error):
        return False


def split(path, outdir, specs):
    with open(path, "rb") as f:
        data = f.read()
    want = {}
    for arg in specs:
        name, _, plist = arg.partition("=")
        want[name] = {int(p) for p in plist.split(",") if p}
    out = {name: [data[:24]] for name in want}
    for rec, tcp in records(data):
        if not tcp:
            continue
        for name, pset in want.items():
            if tcp[0] in pset or tcp[1] in pset:
                out[name].append(rec)
    for name in want:
        with open("%s/%s.pcap" % (outdir, name), "wb") as f:
            f.write(b"".join(out[name]))
        print(name, len(out[name]) - 1)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "has":
        return 0 if has(sys.argv[2], int(sys.argv[3])) else 1
    if len(sys.argv) >= 4 and sys.argv[1] == "split":
        split(sys.argv[2], sys.argv[3], sys.argv[4:])
        return 0
    sys.stderr.write("usage: pcap_ports.py has FILE PORT | split FILE DIR NAME=PORTS...\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
