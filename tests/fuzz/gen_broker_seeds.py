#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Seed corpora for the broker's fuzz targets:
#   gen_broker_seeds.py conn OUTDIR     tests/fuzz/fuzz_broker_conn.c
#   gen_broker_seeds.py session OUTDIR  tests/fuzz/fuzz_broker_session.c
# conn: MPA Requests as swiw's initiator sends them to a broker, for each
# state of the QP they name, cut short, in pieces of every size, and one
# per way the broker refuses a Request. session: sequences of the local
# protocol's messages as swiw's client library sends them, with event
# sockets, from one or two clients, each limit and each refused message.
# Both use the harness's QP numbers (broker_env.h, ENV_QPN0 on), its
# peer (PEER_QPN) and PSNs; swiw blocks come in both lengths, 36 octets
# and the first revision's 28 (without the PSN words).
import os
import struct
import sys

ENV_QPN0 = 0x5A0102
PEER_QPN = 0x00C0DE
PEER_SQ_PSN, PEER_RQ_PSN = 0x10, 0x20  # the harnesses' QP is given these
VERSION = 2  # SWIW_BP_VERSION; records with the fix bit set it anyway
KNOWN = 0x80000000
PSNS = (KNOWN | PEER_SQ_PSN, KNOWN | PEER_RQ_PSN)


def block(src=PEER_QPN, dst=ENV_QPN0, nonce=0x1122334455667788, typ=1,
          reason=0, psns=PSNS, magic=0x73776977, version=1, length=None):
    # psns None: the first revision's block, 28 octets, without them.
    n = 28 if psns is None else 36
    b = struct.pack(">IBBHIIIIHH", magic, version, typ,
                    n if length is None else length, src, dst, nonce >> 32,
                    nonce & 0xFFFFFFFF, reason, 0)
    if psns is not None:
        b += struct.pack(">II", *psns)
    return b


def request(pd, flags=0x10, rev=2, word=struct.pack(">HH", 0x8008, 0xC008),
            key=b"MPA ID Req Frame", pd_len=None):
    # swiw's initiator: rev 2, the RFC 6581 word with P2P and the WRITE
    # and READ RTR offered, IRD and ORD 8.
    body = (word if flags & 0x10 and rev == 2 else b"") + pd
    n = len(body) if pd_len is None else pd_len
    return key + bytes([flags, rev]) + struct.pack(">H", n) + body


def conn_seeds(out):
    good = request(block())
    # c0: QP 0 none 1 registered 2 responder 3 initiator, 4 wrong address,
    # 8 wrong QPN, 16 event socket full, 32 late EXPECT, 64 timers,
    # 128 half close. c1: piece sizes. c2: 1 free 2 close 3 unexpect,
    # 4 two peers, 8 one pending connection per address, 16 SQ_PSN given,
    # 32 EXPECT's receive PSN differs, 64 one pending connection in all.
    states = {
        "unknown_qpn": (0, 0), "held": (1, 0), "held_expire": (65, 0),
        "held_late": (34, 0), "responder": (2, 0), "initiator": (3, 0),
        "wrong_addr": (6, 0), "wrong_qpn": (10, 0), "queued": (18, 0),
        "queued_expire": (82, 0), "queued_free": (18, 1),
        "queued_close": (18, 2), "held_free": (1, 1), "held_close": (1, 2),
        "unexpect": (2, 3), "two_peers": (2, 4), "two_held": (34, 4),
        "one_pending": (2, 12), "one_pending_all": (2, 68),
        "half_close": (129, 0),
        "late_initiator": (35, 0), "sq_psn": (2, 16),
        "wrong_psn": (2, 32), "wrong_psn_expire": (66, 32),
        "late_sq_psn": (34, 16), "stranger_expire": (70, 0),
    }
    seeds = {}
    for name, (c0, c2) in states.items():
        seeds[name] = (c0, 7, c2, good)
    for sz in range(8):
        seeds["pieces_%d" % sz] = (2, ((sz * 5) & 31) << 3 | sz, 0, good)
    # Which PSNs the Request knows: checked against RTR's, RTS's, or none.
    for name, psns in (("sq", (KNOWN | PEER_SQ_PSN, 0)),
                       ("rq", (0, KNOWN | PEER_RQ_PSN)), ("none", (0, 0))):
        for c2 in (0, 16):
            seeds["psn_%s_%d" % (name, c2)] = (
                66, 7, c2, request(block(psns=psns)))
    # The pending limit while a Request is held; a peer that gives up.
    seeds["held_one_pending"] = (1, 7, 12, good)
    seeds["held_one_pending_all"] = (1, 7, 68, good)
    seeds["reading_one_pending"] = (2, 7, 12, good[:30])
    seeds["reading_one_pending_all"] = (2, 7, 68, good[:30])
    seeds["queued_one_pending"] = (18, 7, 12, good)
    seeds["queued_one_pending_all"] = (18, 7, 68, good)
    seeds["held_two_free"] = (1, 7, 5, good)
    seeds["gives_up"] = (130, 7, 0, good[:30])
    seeds["gives_up_held"] = (129, 7, 0, good)
    # Cut short: the broker waits (and times out).
    for cut in (1, 19, 20, 24, 40, len(good) - 1):
        seeds["cut_%d" % cut] = (66, 2, 0, good[:cut])
    refused = {
        "first_revision": request(block(psns=None)),
        "first_revision_held": request(block(psns=None, dst=1234)),
        "key_rep": request(block(), key=b"MPA ID Rep Frame"),
        "key_http": request(block(), key=b"GET / HTTP/1.1\r\n"),
        "rev0": request(block(), flags=0, rev=0),
        "rev1": request(block(), flags=0, rev=1),
        "rev3": request(block(), rev=3),
        "reject_flag": request(block(), flags=0x30),
        "markers": request(block(), flags=0x90),
        "crc": request(block(), flags=0x50),
        "pd_257": request(block() + bytes(217)),
        "pd_len_ffff": request(block(), pd_len=0xFFFF)[:20],
        "no_pd": request(b""),
        "no_word_pd": request(b"", word=b""),
        "pd_short": request(block()[:12]),
        "magic": request(block(magic=0x73776978)),
        "version2": request(block(version=2)),
        "type_accept": request(block(typ=2)),
        "type_reject": request(block(typ=3, reason=1)),
        "type_0": request(block(typ=0)),
        "length_27": request(block(length=27)),
        "length_long": request(block(length=40)),
        "qpn_25bit": request(block(src=0x1000000)),
        "reason": request(block(reason=4)),
        "psn_bits": request(block(psns=(0x40000001, 0))),
        "tail": request(block() + b"tail of the swiw block"),
        "early_data": good + b"\x00\x0c\xc1\x40early FPDU",
        "two_requests": good + good,
        "no_p2p": request(block(), word=struct.pack(">HH", 8, 8)),
        "p2p_send_rtr": request(block(), word=struct.pack(">HH", 0xC008, 8)),
        "ird_none": request(block(), word=struct.pack(">HH", 0x3FFF, 0x3FFF)),
    }
    for name, stream in refused.items():
        seeds["no_" + name] = (2, 7, 0, stream)
    # Bytes after a Request stay in the socket the owner gets.
    seeds["trailing_bytes"] = (2, 6, 0, good + bytes(range(100)))
    seeds["trailing_queued"] = (18, 3, 0, good + b"first FPDU")
    os.makedirs(out, exist_ok=True)
    for name, (c0, c1, c2, stream) in sorted(seeds.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(bytes([c0, c1, c2]) + stream)
    return len(seeds)


def hdr(typ, length, seq, status=0):
    return struct.pack("=HHIiI", typ, length, seq, status, 0)


def hello(seq=1, version=VERSION):
    return hdr(1, 32, seq) + struct.pack("=IIHHI", version, 4242, 0, 0, 0)


def alloc(seq):
    return hdr(2, 16, seq)


def qp_msg(typ, seq, qpn):
    return hdr(typ, 24, seq) + struct.pack("=II", qpn, 0)


def expect(seq, qpn, peer=PEER_QPN, gid=bytes(16), role=2,
           rq_psn=PEER_SQ_PSN):
    return (hdr(4, 48, seq) + struct.pack("=II", qpn, peer) + gid +
            bytes([role, 0, 0, 0]) + struct.pack("=I", rq_psn))


def sq_psn(seq, qpn, psn=PEER_RQ_PSN):
    return hdr(6, 24, seq) + struct.pack("=II", qpn, psn)


# A record: its octet (bit 0 fix, 1-3 descriptors, 4 second client,
# 5 run, 6 +256, 7 a peer's Request first), its length, the message.
FIX, EVT, STREAM, DGRAM, UNCONN, CTL, EVT5, PIPE = 1, 2, 4, 6, 8, 10, 12, 14
B, RUN, LONG, PEER = 16, 32, 64, 128


def rec(msg, c=FIX | RUN, length=None):
    n = len(msg) if length is None else length
    if n > 255:
        c |= LONG
    return bytes([c, n & 0xFF]) + msg


def session_seeds(out):
    q0, q1, q2 = ENV_QPN0, ENV_QPN0 + 1, ENV_QPN0 + 2
    h = rec(hello(), FIX | EVT | RUN)
    hb = rec(hello(), FIX | EVT | RUN | B)
    seeds = {
        "connect": (0x02, 0, h + rec(alloc(2)) + rec(expect(3, q0)) +
                    rec(b"", PEER, 0)),
        "held_then_expect": (0x02, 0, h + rec(alloc(2)) +
                             rec(expect(3, q0), FIX | RUN | PEER)),
        "initiator": (0x02, 0, h + rec(alloc(2)) +
                      rec(expect(3, q0, role=1), FIX | RUN | PEER)),
        "queued": (0x82, 0, h + rec(alloc(2)) + rec(expect(3, q0)) +
                   rec(b"", PEER, 0) + rec(b"", PEER, 0)),
        "queued_free": (0x82, 0, h + rec(alloc(2)) + rec(expect(3, q0)) +
                        rec(b"", PEER, 0) + rec(qp_msg(3, 4, q0))),
        "held_expire": (0x42, 0, h + rec(alloc(2)) + rec(b"", PEER, 0)),
        "lifecycle": (0x03, 0, h + rec(alloc(2)) + rec(alloc(3)) +
                      rec(alloc(4)) + rec(alloc(5)) + rec(qp_msg(3, 6, q1)) +
                      rec(qp_msg(5, 7, q0)) + rec(qp_msg(3, 8, q1)) +
                      rec(expect(9, q0, role=1)) + rec(qp_msg(5, 10, q0)) +
                      rec(expect(11, q0)) + rec(qp_msg(3, 12, q0))),
        "batch": (0x03, 0, rec(hello(), FIX | EVT) +
                  b"".join(rec(alloc(i), FIX) for i in range(2, 12)) +
                  b"".join(rec(qp_msg(3, i, q0 + i - 12), FIX)
                           for i in range(12, 20)) + rec(alloc(20))),
        "limits_qps": (0x24, 0, h + hb + rec(alloc(2)) + rec(alloc(3)) +
                       rec(alloc(2), FIX | RUN | B) +
                       rec(alloc(3), FIX | RUN | B)),
        "no_entropy": (0x0A, 0, h + rec(alloc(2)) + rec(alloc(3))),
        "draw_again": (0x12, 0, h + rec(alloc(2)) + rec(alloc(3)) +
                       rec(qp_msg(3, 4, q0)) + rec(alloc(5))),
        "two_clients": (0x23, 0, h + hb + rec(alloc(2)) +
                        rec(qp_msg(3, 3, q0), FIX | RUN | B) +
                        rec(expect(4, q0), FIX | RUN | B) +
                        rec(qp_msg(5, 5, q0), FIX | RUN | B) +
                        rec(alloc(6), FIX | RUN | B) +
                        rec(qp_msg(3, 7, q1)) + rec(qp_msg(3, 8, q2))),
        "one_session": (0x23, 4, h + hb + rec(alloc(2), FIX | RUN | B)),
        "close_evt": (0x02, 1, h + rec(alloc(2)) + rec(expect(3, q0))),
        "close_ctl": (0x02, 2, h + rec(alloc(2)) + rec(expect(3, q0)) +
                      rec(b"", PEER, 0)),
        "no_hello_expire": (0x42, 0, rec(b"", RUN, 0)),
        "expect_bad_role": (0x02, 0, h + rec(alloc(2)) +
                            rec(expect(3, q0, role=0))),
        "expect_bad_peer": (0x02, 0, h + rec(alloc(2)) +
                            rec(expect(3, q0, peer=0x1000000))),
        "expect_gid_v4": (0x02, 0, h + rec(alloc(2)) + rec(
            expect(3, q0, gid=bytes(10) + b"\xff\xff\x0a\x00\x00\x01")) +
            rec(b"", PEER, 0)),
        "two_qps_queued": (0x82, 0, h + rec(alloc(2)) + rec(alloc(3)) +
                           rec(expect(4, q0)) + rec(expect(5, q1)) +
                           rec(b"", PEER, 0) + rec(b"", PEER, 0) +
                           rec(b"", PEER, 0) + rec(b"", PEER, 0)),
        "two_qps_queued_close": (0x82, 2, h + rec(alloc(2)) +
                                 rec(alloc(3)) + rec(expect(4, q0)) +
                                 rec(expect(5, q1)) + rec(b"", PEER, 0) +
                                 rec(b"", PEER, 0) + rec(b"", PEER, 0)),
        "older_closes": (0x23, 0, h + hb + rec(alloc(2)) +
                         rec(alloc(3), FIX | RUN | B) +
                         rec(hdr(99, 16, 4))),
        "reply_flood": (0x00, 0, h + b"".join(rec(alloc(i), FIX)
                                              for i in range(2, 600))),
        "unconnected_evt": (0x02, 0, rec(hello(), FIX | UNCONN) +
                            rec(alloc(2), FIX) + rec(expect(3, q0)) +
                            rec(b"", PEER, 0)),
        "sq_psn": (0x02, 0, h + rec(alloc(2)) + rec(expect(3, q0)) +
                   rec(sq_psn(4, q0)) + rec(b"", PEER, 0)),
        "sq_psn_registered": (0x02, 0, h + rec(alloc(2)) +
                              rec(sq_psn(3, q0)) + rec(sq_psn(4, q1))),
        "sq_psn_bad": (0x02, 0, h + rec(alloc(2)) + rec(expect(3, q0)) +
                       rec(sq_psn(4, q0, 0x1000000))),
        "wrong_psn": (0x42, 0, h + rec(alloc(2)) +
                      rec(expect(3, q0, rq_psn=PEER_SQ_PSN + 1)) +
                      rec(b"", PEER, 0)),
        "wrong_psn_rts": (0x42, 0, h + rec(alloc(2)) + rec(expect(3, q0)) +
                          rec(sq_psn(4, q0, PEER_RQ_PSN + 1)) +
                          rec(b"", PEER, 0)),
        "expect_bad_psn": (0x02, 0, h + rec(alloc(2)) +
                           rec(expect(3, q0, rq_psn=0x1000000))),
        # Users: root (no limits), two users, and their shares.
        "root": (0x24, 0x08, h + hb + b"".join(
            rec(alloc(i), FIX | RUN | (B if i & 1 else 0))
            for i in range(2, 14))),
        "two_users": (0x23, 0x30, h + hb + b"".join(
            rec(alloc(i), FIX | RUN | (B if i & 1 else 0))
            for i in range(2, 10))),
        "one_user_shares": (0x23, 0x20, h + hb + b"".join(
            rec(alloc(i), FIX | RUN | (B if i & 1 else 0))
            for i in range(2, 10))),
        "user_sessions": (0x23, 0x40, h + hb + rec(alloc(2))),
        "user_sessions_two": (0x23, 0x50, h + hb + rec(alloc(2), FIX |
                                                        RUN | B)),
    }
    refused = {
        "before_hello": rec(alloc(1)),
        "hello_no_fd": rec(hello(), FIX | RUN),
        "hello_stream": rec(hello(), FIX | STREAM | RUN),
        "hello_dgram": rec(hello(), FIX | DGRAM | RUN),
        "hello_pipe": rec(hello(), FIX | PIPE | RUN),
        "hello_unconnected": rec(hello(), FIX | UNCONN | RUN) + rec(alloc(2)),
        "hello_ctl": rec(hello(), FIX | CTL | RUN) + rec(alloc(2)) +
        rec(expect(3, ENV_QPN0)) + rec(b"", PEER, 0),
        "hello_five": rec(hello(), FIX | EVT5 | RUN),
        "hello_version": rec(hello(version=99), EVT | RUN),
        "hello_short": rec(hello()[:24], FIX | EVT | RUN),
        "hello_twice": h + rec(hello(2), FIX | EVT | RUN),
        "fd_with_request": h + rec(alloc(2), FIX | EVT | RUN),
        "unknown_type": h + rec(hdr(64, 16, 2)),
        "type_0": h + rec(hdr(0, 16, 2)),
        "short_hdr": h + rec(alloc(2)[:10], RUN),
        "len_mismatch": h + rec(hdr(2, 20, 2), RUN),
        "free_short": h + rec(alloc(2)) + rec(hdr(3, 16, 3)),
        "expect_short": h + rec(alloc(2)) + rec(expect(3, ENV_QPN0)[:40]),
        "truncated": h + rec(qp_msg(3, 2, ENV_QPN0) + bytes(376)),
        "free_unknown": h + rec(qp_msg(3, 2, 12345)),
        "unexpect_unknown": h + rec(qp_msg(5, 2, 0)),
    }
    for name, body in refused.items():
        seeds["no_" + name] = (0x02, 0, body)
    os.makedirs(out, exist_ok=True)
    for name, (c0, c1, body) in sorted(seeds.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(bytes([c0, c1]) + body)
    return len(seeds)


which, out = sys.argv[1], sys.argv[2]
n = conn_seeds(out) if which == "conn" else session_seeds(out)
print("%d seeds in %s" % (n, out))
