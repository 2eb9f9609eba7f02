# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""An MPA responder that answers with terms the initiator did not offer.

Usage: mpa_responder.py PORT COUNT

Listens on 127.0.0.1:PORT and takes COUNT connections, one at a time.
To each MPA v2 Request (peer-to-peer, RFC 6581) it answers a Reply that
accepts but names a Write RTR, as the kernel's siw does whatever was
offered. An initiator that offered no Write RTR must refuse it with the
TERMINATE "No Matching RTR" (layer LLP, code 0x07) as its first FPDU,
and then close. Each connection prints one line, "ok N" or "bad N:
why"; the exit status is the number of bad ones. Plain TCP, no
library: what arrives is checked byte for byte.
"""
import socket
import struct
import sys

KEY_REQ = b"MPA ID Req Frame"
KEY_REP = b"MPA ID Rep Frame"
F_MARKERS, F_CRC, F_REJECT, F_ENHANCED = 0x80, 0x40, 0x20, 0x10
P2P, WRITE_RTR = 0x8000, 0x8000


def read_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise EOFError("closed after %d of %d octets" % (len(data), n))
        data += chunk
    return data


def read_to_eof(conn):
    data = b""
    while True:
        chunk = conn.recv(4096)
        if not chunk:
            return data
        data += chunk


def one(conn):
    hdr = read_exact(conn, 20)
    key, flags, rev, pd_len = struct.unpack("!16sBBH", hdr)
    if key != KEY_REQ or rev != 2 or not flags & F_ENHANCED or pd_len < 4:
        return "not an MPA v2 Request: %s" % hdr.hex()
    pd = read_exact(conn, pd_len)
    ird, ord_ = struct.unpack("!HH", pd[:4])
    if not ird & P2P:
        return "the Request asks for no peer-to-peer (IRD %#x)" % ird
    if ord_ & WRITE_RTR:
        return "the Request offers a Write RTR: nothing to refuse"
    crc = bool(flags & F_CRC)
    conn.sendall(struct.pack("!16sBBHHH", KEY_REP,
                             F_ENHANCED | (F_CRC if crc else 0), 2, 4,
                             P2P | 1, WRITE_RTR | 1))
    rest = read_to_eof(conn)
    # One FPDU: MPA length, DDP/RDMAP header, TERMINATE control, padding
    # to 4 octets, the CRC field (there, zero or not); nothing else.
    if len(rest) < 2:
        return "closed with no TERMINATE (%d octets)" % len(rest)
    ulpdu = struct.unpack("!H", rest[:2])[0]
    total = 2 + ulpdu + (-(2 + ulpdu) % 4) + 4
    if len(rest) != total:
        return "%d octets after the Reply, one FPDU of %d expected: %s" % (
            len(rest), total, rest.hex())
    ddp, rdmap = rest[2], rest[3]
    if ddp & 0x80 or not ddp & 0x40 or rdmap & 0x0F != 0x07:
        return "not an untagged last TERMINATE: %s" % rest[:8].hex()
    # The TERMINATE control field follows the 18-octet untagged header.
    layer_etype, code = rest[2 + 18] >> 4, rest[2 + 18 + 1]
    etype = rest[2 + 18] & 0x0F
    if (layer_etype, etype, code) != (2, 0, 0x07):
        return "TERMINATE layer %d type %d code %#x, LLP/0/0x07 expected" % (
            layer_etype, etype, code)
    return None


def main():
    port, count = int(sys.argv[1]), int(sys.argv[2])
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", port))
    lsock.listen(4)
    print("listening", flush=True)
    bad = 0
    for i in range(count):
        lsock.settimeout(60)
        conn, _ = lsock.accept()
        conn.settimeout(30)
        try:
            why = one(conn)
        except (EOFError, OSError) as e:
            why = str(e)
        conn.close()
        if why:
            bad += 1
            print("bad %d: %s" % (i, why), flush=True)
        else:
            print("ok %d" % i, flush=True)
    sys.exit(bad)


if __name__ == "__main__":
    main()
