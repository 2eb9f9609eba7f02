#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# tshark_check.sh CAPTURE-PROGRAM: writes swiw's synthetic iWARP
# conversation to a pcap and has Wireshark's own dissectors judge it:
# - every FPDU's CRC is "Good CRC32", none "Bad CRC32";
# - no frame is malformed (the RPC-over-RDMA and SMB Direct heuristics,
#   which misread arbitrary Send payloads, are off: PROTOCOL.md §4);
# - the DDP sequences are right, checked here from `tshark -T fields`,
#   independently of the program: per stream, direction and queue the MSN
#   starts at 1 and rises by one per message, MO runs on from 0 inside a
#   message, L marks exactly the last segment, tagged TOs run on;
# - every RDMAP opcode the program claims to have sent was decoded.
set -u
prog=$1
command -v tshark >/dev/null || { echo "FAIL: tshark is not installed"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/swiw-tshark.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cap=$tmp/iwarp.pcap

"$prog" "$cap" >"$tmp/summary" || { echo "FAIL: $prog failed"; exit 1; }
fpdus=$(awk '$1 == "fpdus" { print $2 }' "$tmp/summary")
opcodes=$(awk '$1 == "opcodes" { $1 = ""; print }' "$tmp/summary")
rr=$(awk '$1 == "mpa_frames" { print $2 }' "$tmp/summary")
cat "$tmp/summary"

ts=(tshark -n -r "$cap" --disable-heuristic rpcrdma_iwarp
	--disable-heuristic smb_direct_iwarp)
"${ts[@]}" -V >"$tmp/decode" 2>"$tmp/err" || { cat "$tmp/err"; echo "FAIL: tshark"; exit 1; }
fail=0
bad=$(grep -c 'Bad CRC32' "$tmp/decode")
good=$(grep -c 'Good CRC32' "$tmp/decode")
mal=$(grep -ci 'malformed' "$tmp/decode")
rrs=$("${ts[@]}" -Y 'iwarp_mpa.req || iwarp_mpa.rep' | wc -l)
echo "tshark: $good Good CRC32, $bad Bad CRC32, $mal malformed, $rrs MPA Request/Reply frames"
[ "$bad" -eq 0 ] || { echo "FAIL: tshark found bad CRCs"; fail=1; }
[ "$mal" -eq 0 ] || { grep -i -B20 malformed "$tmp/decode" | head -60; echo "FAIL: malformed frames"; fail=1; }
[ "$good" -eq "$fpdus" ] || { echo "FAIL: $good good CRCs, the program framed $fpdus FPDUs"; fail=1; }
[ "$rrs" -eq "$rr" ] || { echo "FAIL: $rrs Request/Reply frames decoded, $rr sent"; fail=1; }

"${ts[@]}" -Y iwarp_ddp -T fields -E separator=";" -E occurrence=a -E aggregator=, \
	-e tcp.stream -e tcp.srcport -e iwarp_mpa.ulpdulength -e iwarp_ddp.tagged_flag \
	-e iwarp_ddp.last_flag -e iwarp_rdma.opcode -e iwarp_ddp.qn -e iwarp_ddp.msn \
	-e iwarp_ddp.mo -e iwarp_ddp.stag -e iwarp_ddp.tagged_offset >"$tmp/fields"
python3 - "$tmp/fields" "$opcodes" <<'PY' || fail=1
import sys

rows = []
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split(";")
    stream, port = f[0], f[1]
    cols = [c.split(",") if c else [] for c in f[2:]]
    ulen, tagged, last, op, qn, msn, mo, stag, to = cols
    # One frame may carry several FPDUs: zip them, untagged fields only
    # appear for untagged segments and tagged ones for tagged segments.
    iu = it = 0
    for k in range(len(op)):
        t = tagged[k] in ("1", "True")
        r = dict(stream=stream, port=port, ulen=int(ulen[k]),
                 tagged=t, last=last[k] in ("1", "True"), op=int(op[k], 0))
        if t:
            r.update(stag=int(stag[it], 0), to=int(to[it], 0))
            it += 1
        else:
            r.update(qn=int(qn[iu]), msn=int(msn[iu]), mo=int(mo[iu]))
            iu += 1
        rows.append(r)

errors = []
msn_next = {}
msg = {}
tag = {}
for r in rows:
    side = (r["stream"], r["port"])
    if r["tagged"]:
        pay = r["ulen"] - 14
        key = side + ("t",)
        if key in tag and tag[key][0] == r["stag"]:
            if r["to"] != tag[key][1]:
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
claimed = sorted(int(x, 0) for x in sys.argv[2].split())
if seen != claimed:
    errors.append("opcodes decoded %s, sent %s" % (seen, claimed))
print("fields: %d DDP segments, opcodes %s, %d queues checked" %
      (len(rows), seen, len(msn_next)))
for e in errors[:20]:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
PY
[ $fail -eq 0 ] && echo "ok: tshark decodes the conversation clean"
exit $fail
