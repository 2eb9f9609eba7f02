#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# ddp_sequence.py FIELDS [OPCODES]: checks the DDP sequences of a capture,
# from `tshark -T fields` output (see tshark_check.sh for the fields and
# their order), independently of whoever sent them: per TCP stream,
# direction and queue the MSN starts at 1 and rises by one per message,
# MO runs on from 0 inside a message, L marks exactly the last segment,
# tagged TOs run on within a message. OPCODES (space separated): the
# RDMAP opcodes the sender claims; then exactly those must be decoded.
# Without it, at least one segment must be.
#
# A twelfth column, tcp.seq, orders the rows of each direction; EXTRA
# (environment DDP_EXTRA, a file of rows in the same layout) adds the
# segments the caller read itself, which Wireshark cannot (see
# capture_check.sh), to be checked in their place.
import os
import sys

rows = []
lines = list(open(sys.argv[1]))
extra = os.environ.get("DDP_EXTRA")
if extra:
    lines += list(open(extra))
for line in lines:
    f = line.rstrip("\n").split(";")
    stream, port = f[0], f[1]
    cols = [c.split(",") if c else [] for c in f[2:11]]
    ulen, tagged, last, op, qn, msn, mo, stag, to = cols
    seq = int(f[11]) if len(f) > 11 and f[11] else 0
    # One frame may carry several FPDUs: zip them, untagged fields only
    # appear for untagged segments and tagged ones for tagged segments.
    iu = it = 0
    for k in range(len(op)):
        t = tagged[k] in ("1", "True")
        r = dict(stream=stream, port=port, ulen=int(ulen[k]), seq=seq,
                 tagged=t, last=last[k] in ("1", "True"), op=int(op[k], 0))
        if t:
            r.update(stag=int(stag[it], 0), to=int(to[it], 0))
            it += 1
        else:
            r.update(qn=int(qn[iu]), msn=int(msn[iu]), mo=int(mo[iu]))
            iu += 1
        rows.append(r)
if extra:
    rows.sort(key=lambda r: (r["stream"], r["port"], r["seq"]))

errors = []
msn_next = {}
msg = {}
tag = {}
for r in rows:
    side = (r["stream"], r["port"])
    if r["tagged"]:
        pay = r["ulen"] - 14
        key = side + ("t",)
        if key in tag and tag[key][0] == r["stag"] and r["to"] != tag[key][1]:
            errors.append("TO jumps: %s" % r)
        tag[key] = (r["stag"], r["to"] + pay) if not r["last"] else (None, 0)
        continue
    pay = r["ulen"] - 18
    if r["op"] == 1:
        pay -= 28  # Read Request body
    key = side + (r["qn"],)
    cur = msg.get(key)
    if cur is None:
        want = msn_next.get(key, 1)
        if r["msn"] != want:
            errors.append("MSN %d, expected %d: %s" % (r["msn"], want, r))
        if r["mo"] != 0:
            errors.append("message starts at MO %d: %s" % (r["mo"], r))
        cur = [r["msn"], 0]
    elif r["msn"] != cur[0]:
        errors.append("MSN changes inside a message: %s" % r)
    if r["mo"] != cur[1]:
        errors.append("MO %d, expected %d: %s" % (r["mo"], cur[1], r))
    cur[1] += pay
    if r["last"]:
        msn_next[key] = r["msn"] + 1
        msg.pop(key, None)
    else:
        msg[key] = cur
for key, cur in msg.items():
    errors.append("message never ended (no L): %s %s" % (key, cur))
seen = sorted({r["op"] for r in rows})
if len(sys.argv) > 2:
    claimed = sorted(int(x, 0) for x in sys.argv[2].split())
    if seen != claimed:
        errors.append("opcodes decoded %s, sent %s" % (seen, claimed))
elif not rows:
    errors.append("no DDP segment decoded")
print("fields: %d DDP segments, opcodes %s, %d queues checked"
      % (len(rows), seen, len(msn_next)))
for e in errors[:20]:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
