#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# mpa_resegment.py IN.pcap OUT.pcap: rewrites a capture of live MPA
# connections so that every FPDU is one TCP segment, for Wireshark's MPA
# dissector to judge every FPDU that went on the wire.
#
# A sender SHOULD put whole FPDUs in each segment (RFC 5044 §4.4), but TCP
# cuts where it must: a window or congestion limit leaves a short segment,
# data queued behind it goes out packed across FPDU boundaries, and a
# retransmission may cover other bytes than the segment it repeats. The
# dissector follows FPDUs across segments only while nothing of that kind
# happens, and after it reads headers out of the middle of an FPDU.
#
# So each direction's bytes are rebuilt from all its segments, first
# transmissions and retransmissions alike, and walked FPDU by FPDU from
# the end of the MPA Request or Reply, skipping markers every 512 octets
# from the first FPDU where the other side's Request or Reply asked for
# them (M). Each FPDU goes out as one segment with its own sequence
# number, where the segment that first carried its last octet was, with
# that segment's headers; the direction's bare ACKs get the sequence
# number its data has reached there. Everything else (other connections,
# handshakes, FIN and RST) is copied. The walk checks what Wireshark
# cannot see: it fails ("FAIL: ..." and exit 1) when a direction's bytes
# have a hole (a segment captured ahead of one still missing waits for
# it: a receiver's capture may hold them out of order), when a retransmission carries other bytes than the first
# transmission did, when the FPDUs do not end exactly where the data does
# (unless a reset cut the last one), or when a marker does not point back
# at its FPDU.
#
# An FPDU that ends exactly on a marker point with a marker inside is
# mis-sized by Wireshark 4.0 (its number_of_markers() counts the marker
# at the end too) and is left out of the rewrite: its CRC is checked here,
# when CRC is on, and its DDP header is printed for ddp_sequence.py.
#
# Prints "resegmented: ...", then per MPA direction "direction SRC SPORT
# DST DPORT FPDUS LEFT-OUT", per FPDU left out "row SRC SPORT DST DPORT
# SEQ FIELDS" (ddp_sequence.py's fields, SEQ relative), and any failures.
import struct
import sys

KEYS = (b"MPA ID Req Frame", b"MPA ID Rep Frame")
MARKER_SPACING = 512
MAX_SEG = 65000  # an FPDU larger than one IPv4 packet is cut, in order
LINK_HDR = {1: 14, 113: 16, 276: 20, 101: 0, 228: 0}
errors = []


def fail(msg):
    errors.append(msg)


def sum16(b, s=0):
    if len(b) % 2:
        b += b"\0"
    s += sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def read_pcap(path):
    b = open(path, "rb").read()
    magics = {b"\xd4\xc3\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">",
              b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\x3c\x4d": ">"}
    if b[:4] not in magics:
        sys.exit("FAIL: %s is not a pcap file" % path)
    e = magics[b[:4]]
    link = struct.unpack(e + "I", b[20:24])[0] & 0xFFFF
    if link not in LINK_HDR:
        sys.exit("FAIL: %s: link type %d not known here" % (path, link))
    recs, off = [], 24
    while off + 16 <= len(b):
        sec, frac, incl, orig = struct.unpack(e + "IIII", b[off:off + 16])
        if incl != orig:
            fail("frame %d was cut to %d of %d octets" % (len(recs) + 1, incl, orig))
        recs.append([sec, frac, b[off + 16:off + 16 + incl]])
        off += 16 + incl
    return e, b[:24], link, recs


class Seg:
    """One packet's IPv4 and TCP view; None fields where it is not TCP."""

    def __init__(self, link, data):
        self.tcp = False
        h = LINK_HDR[link]
        if link == 1 and data[12:14] != b"\x08\x00":
            return
        if link == 113 and data[14:16] != b"\x08\x00":
            return
        if link == 276 and data[0:2] != b"\x08\x00":
            return
        ip = data[h:]
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
            return
        ihl = (ip[0] & 15) * 4
        tot = struct.unpack("!H", ip[2:4])[0]
        tcp = ip[ihl:tot]
        doff = (tcp[12] >> 4) * 4
        self.tcp = True
        self.h, self.ihl, self.doff = h, ihl, doff
        self.key = (ip[12:16], tcp[0:2], ip[16:20], tcp[2:4])
        self.seq = struct.unpack("!I", tcp[4:8])[0]
        self.flags = tcp[13]
        self.payload = tcp[doff:]
        self.data = data

    def rebuild(self, seq, payload):
        """This packet's headers around another seq and payload."""
        d = self.data
        hdr = bytearray(d[:self.h + self.ihl + self.doff])
        ip = self.h
        struct.pack_into("!H", hdr, ip + 2, self.ihl + self.doff + len(payload))
        struct.pack_into("!H", hdr, ip + 10, 0)
        struct.pack_into("!H", hdr, ip + 10, ~sum16(bytes(hdr[ip:ip + self.ihl])) & 0xFFFF)
        t = ip + self.ihl
        struct.pack_into("!I", hdr, t + 4, seq & 0xFFFFFFFF)
        struct.pack_into("!H", hdr, t + 16, 0)
        pseudo = bytes(hdr[ip + 12:ip + 20]) + struct.pack("!HH", 6, self.doff + len(payload))
        s = sum16(pseudo + bytes(hdr[t:]) + payload)
        struct.pack_into("!H", hdr, t + 16, ~s & 0xFFFF)
        return bytes(hdr) + payload


def main():
    e, ghdr, link, recs = read_pcap(sys.argv[1])
    segs = [Seg(link, r[2]) for r in recs]
    isn, reset = {}, set()
    for s in segs:
        if s.tcp and s.flags & 0x02:
            isn[s.key] = s.seq + 1
        if s.tcp and s.flags & 0x04:
            reset.add(s.key)
            reset.add((s.key[2], s.key[3], s.key[0], s.key[1]))

    # Each direction's bytes, and for each octet offset the index of the
    # record by which the capture held it and all before it. A capture
    # of received packets may hold a segment before the one ahead of it
    # (the CPUs handed them over out of order): it waits in "ahead" until
    # the gap fills. A gap still open at the end is a hole.
    streams = {}
    ahead = {}  # direction -> [(offset, payload)] captured past a gap

    def place(key, off, payload, i):
        data, first = streams[key]
        end = off + len(payload)
        over = min(end, len(data)) - off
        if over > 0 and data[off:off + over] != payload[:over]:
            fail("%s: a retransmission of octets %d to %d differs from the "
                 "first transmission" % (name(key), off, off + over - 1))
        if end > len(data):
            data[len(data):] = payload[len(data) - off:]
            first.extend([i] * (end - len(first)))

    for i, s in enumerate(segs):
        if not s.tcp or not s.payload or s.key not in isn:
            continue
        data, _ = streams.setdefault(s.key, (bytearray(), []))
        off = (s.seq - isn[s.key]) & 0xFFFFFFFF
        if off > len(data):
            ahead.setdefault(s.key, []).append((off, s.payload))
            continue
        place(s.key, off, s.payload, i)
        wait = ahead.get(s.key)
        while wait:
            wait.sort(key=lambda w: w[0])
            if wait[0][0] > len(data):
                break
            place(s.key, *wait.pop(0), i)
    for key, wait in ahead.items():
        if wait:
            fail("%s: octets %d to %d are missing from the capture"
                 % (name(key), len(streams[key][0]),
                    min(w[0] for w in wait) - 1))
            isn.pop(key)

    out = {}  # record index -> [new packets]
    skipped = {}  # direction -> FPDUs left out
    fpdus = {}  # direction -> FPDUs walked
    rows = []  # the DDP headers of those left out
    mpa = set()
    nfpdu = 0
    for key, (data, first) in streams.items():
        back = (key[2], key[3], key[0], key[1])
        if key not in isn or bytes(data[:16]) not in KEYS or back not in streams:
            continue
        peer = streams[back][0]
        if bytes(peer[:16]) not in KEYS or len(data) < 20 or len(peer) < 20:
            continue
        mpa.add(key)
        fpdus[key] = 0
        markers = bool(peer[16] & 0x80)
        crc = bool((data[16] | peer[16]) & 0x40)
        origin = 20 + struct.unpack("!H", data[18:20])[0]
        cuts = [(0, min(origin, len(data)))]
        p = origin
        while p < len(data):
            start = p
            lead = markers and (p - origin) % MARKER_SPACING == 0
            if lead:
                fpdu_marker(key, data, p, start, lead)
                p += 4
            if p + 2 > len(data):
                p = len(data) + 1
                break
            ulen = struct.unpack("!H", data[p:p + 2])[0]
            need = 2 + ulen + (-(2 + ulen) % 4) + 4
            while markers:
                m = p + (-(p - origin) % MARKER_SPACING)
                if m >= p + need:
                    break
                fpdu_marker(key, data, m, start, lead)
                need -= m - p
                p = m + 4
            p += need
            if p > len(data):
                break
            nfpdu += 1
            fpdus[key] = fpdus.get(key, 0) + 1
            if markers and ws_miscounts(start - origin, p - start):
                # Left out: checked here, its DDP header read here.
                skipped[key] = skipped.get(key, 0) + 1
                if crc:
                    check_crc(key, data, start, p)
                rows.append((key, start + 1, ddp_row(data, start, p, origin)))
                continue
            cuts.append((start, p))
        if p != len(data) and key not in reset:
            fail("%s: the FPDUs run to octet %d, the data ends at %d"
                 % (name(key), p, len(data)))
        base = isn[key]
        for a, b in cuts:
            for c in range(a, b, MAX_SEG):
                d = min(b, c + MAX_SEG)
                i = first[d - 1]
                out.setdefault(i, []).append(
                    (key, d, segs[i].rebuild(base + c, bytes(data[c:d]))))

    with open(sys.argv[2], "wb") as f:
        f.write(ghdr)
        n = 0
        sent = {}  # direction -> octets written so far
        for i, (rec, s) in enumerate(zip(recs, segs)):
            pkts = []
            for key, d, p in out.get(i, []):
                pkts.append(p)
                sent[key] = d
            if not (s.tcp and s.key in mpa):
                pkts.append(rec[2])
            elif s.flags & 0x07:  # SYN, FIN or RST: the flag where it was
                pkts.append(s.rebuild(s.seq + len(s.payload), b""))
            elif not s.payload:
                # A bare ACK: its sequence number where this direction's
                # data now stands, or it would run ahead of an FPDU still
                # to come and make that look retransmitted.
                pkts.append(s.rebuild(isn[s.key] + sent.get(s.key, 0), b""))
            for p in pkts:
                f.write(struct.pack(e + "IIII", rec[0], rec[1], len(p), len(p)))
                f.write(p)
                n += 1
    print("resegmented: %d MPA directions, %d FPDUs, %d frames in, %d out"
          % (len(mpa), nfpdu, len(recs), n))
    for key in sorted(mpa):
        print("direction %s %d %d" % (ends(key), fpdus[key], skipped.get(key, 0)))
    for key, seq, row in rows:
        print("row %s %d %s" % (ends(key), seq, row))
    for m in errors[:20]:
        print("FAIL:", m)
    return 1 if errors else 0


def fpdu_marker(key, data, m, start, lead):
    """The marker at stream offset m must point back to its FPDU: 0 when
    it leads the FPDU, else the octets from the FPDU's ULPDU_LENGTH to it
    (RFC 5044 §4.3, swiw_fpdu.h); from the FPDU's leading marker is the
    other reading, which swiw's deframer accepts, and so is it here."""
    if m + 4 > len(data):
        return
    rsvd, ptr = struct.unpack("!HH", data[m:m + 4])
    ok = {0} if m == start else {m - start}
    if m != start and lead:
        ok = {m - start - 4, m - start}
    if rsvd != 0 or ptr not in ok:
        fail("%s: the marker at octet %d reads %04x %04x, its FPDU starts %d "
             "octets before" % (name(key), m, rsvd, ptr, m - start))


def ws_miscounts(off, size):
    """Wireshark 4.0 takes a marker at the very end of a segment as inside."""
    first = -off % MARKER_SPACING
    return first < size and (size - first) % MARKER_SPACING == 0


def ddp_row(data, start, end, origin):
    """The DDP header of the FPDU at [start, end), its markers taken out,
    as ddp_sequence.py's fields: ulen;T;L;opcode;qn;msn;mo;stag;to."""
    b = bytes(data[q] for q in range(start, end)
              if (q - origin) % MARKER_SPACING >= 4)
    ulen, ctl, rctl = struct.unpack("!HBB", b[:4])
    t, last, op = ctl >> 7, (ctl >> 6) & 1, rctl & 15
    if t:
        stag, to = struct.unpack("!IQ", b[4:16])
        return "%d;%d;%d;%d;;;;%d;%d" % (ulen, t, last, op, stag, to)
    qn, msn, mo = struct.unpack("!III", b[8:20])
    return "%d;%d;%d;%d;%d;%d;%d;;" % (ulen, t, last, op, qn, msn, mo)


CRC_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    CRC_TABLE.append(_c)


def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = CRC_TABLE[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def check_crc(key, data, start, end):
    """An FPDU Wireshark does not see: its CRC, checked here."""
    want = struct.unpack("<I", data[end - 4:end])[0]  # LSB first
    if crc32c(data[start:end - 4]) != want:
        fail("%s: the FPDU at octet %d has a bad CRC" % (name(key), start))


def ends(key):
    """Source address and port, destination address and port."""
    return "%s %d %s %d" % (".".join(map(str, key[0])), struct.unpack("!H", key[1])[0],
                            ".".join(map(str, key[2])), struct.unpack("!H", key[3])[0])


def name(key):
    return "%s:%d > %s:%d" % (".".join(map(str, key[0])), struct.unpack("!H", key[1])[0],
                              ".".join(map(str, key[2])), struct.unpack("!H", key[3])[0])


if __name__ == "__main__":
    sys.exit(main())
