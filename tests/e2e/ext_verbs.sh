# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The extended verbs from stock programs: pyverbs' CQEX and QPEx post and
# poll over swiw_lo through ibv_create_cq_ex, ibv_create_qp_ex and the
# ibv_wr_* builders; and what perftest 4.5 does with its new post-send
# option on swiw.
. "$(dirname "$0")/../lib/swiw_test.sh"
need_swiw

need_cmd ib_write_bw ib_send_lat

# --- pyverbs --------------------------------------------------------------
cat >"$T_TMP/qpex.py" <<'PY'
import errno, time
import pyverbs.enums as e
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.cq import CQEX, CqInitAttrEx, PollCqAttr
from pyverbs.qp import QPCap, QPInitAttrEx, QPEx, QPAttr
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.mr import MR
from pyverbs.wr import RecvWR, SGE
from pyverbs.pyverbs_error import PyverbsRDMAError

ctx = Context(name='swiw_lo')
pd = PD(ctx)
acc = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
ops = e.IBV_QP_EX_WITH_SEND | e.IBV_QP_EX_WITH_RDMA_WRITE

def side():
    cq = CQEX(ctx, CqInitAttrEx(cqe=16, wc_flags=e.IBV_WC_STANDARD_FLAGS))
    cap = QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=1, max_recv_sge=1)
    a = QPInitAttrEx(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap, pd=pd,
                     comp_mask=e.IBV_QP_INIT_ATTR_PD |
                     e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, send_ops_flags=ops)
    return cq, QPEx(ctx, a), MR(pd, 4096, acc)

def connect(qp, peer):
    a = QPAttr(qp_state=e.IBV_QPS_INIT, port_num=1)
    a.qp_access_flags = acc
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT |
              e.IBV_QP_ACCESS_FLAGS)
    a = QPAttr(qp_state=e.IBV_QPS_RTR)
    a.dest_qp_num = peer
    a.ah_attr = AHAttr(gr=GlobalRoute(dgid=ctx.query_gid(1, 0), sgid_index=0),
                       is_global=1, port_num=1)
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_DEST_QPN)
    qp.modify(QPAttr(qp_state=e.IBV_QPS_RTS), e.IBV_QP_STATE)

def poll(cq, n):
    got, t0 = [], time.time()
    while len(got) < n and time.time() - t0 < 10:
        if cq.start_poll(PollCqAttr()) == errno.ENOENT:
            continue
        while True:
            got.append((cq.wr_id, cq.status, cq.read_opcode(),
                        cq.read_byte_len(), cq.read_qp_num(), cq.read_src_qp()))
            if len(got) == n or cq.poll_next() == errno.ENOENT:
                break
        cq.end_poll()
    return got

acq, aqp, amr = side()
bcq, bqp, bmr = side()
connect(aqp, bqp.qp_num)
connect(bqp, aqp.qp_num)
bqp.post_recv(RecvWR(wr_id=7, num_sge=1, sg=[SGE(bmr.buf, 64, bmr.lkey)]))
amr.write(b'pyverbs-qpex-send', 17)
amr.write(b'pyverbs-qpex-write', 18, 100)
# The WRITE first: the SEND's receive completion then says its data is
# placed too (RFC 5040 ordering); the WRITE's own completion does not.
aqp.wr_start()
aqp.wr_flags = e.IBV_SEND_SIGNALED
aqp.wr_id = 1
aqp.wr_rdma_write(bmr.rkey, bmr.buf + 200)
aqp.wr_set_sge(SGE(amr.buf + 100, 18, amr.lkey))
aqp.wr_id = 2
aqp.wr_send()
aqp.wr_set_sge(SGE(amr.buf, 17, amr.lkey))
aqp.wr_complete()
print('send', poll(acq, 2))
print('recv', poll(bcq, 1))
print('data', bmr.read(17, 0), bmr.read(18, 200))
print('qp_nums', aqp.qp_num, bqp.qp_num)
for what, make in (
        ('cq timestamp', lambda: CQEX(ctx, CqInitAttrEx(
            cqe=4, wc_flags=e.IBV_WC_EX_WITH_COMPLETION_TIMESTAMP))),
        ('qp bind_mw', lambda: QPEx(ctx, QPInitAttrEx(
            qp_type=e.IBV_QPT_RC, scq=acq, rcq=acq, pd=pd,
            cap=QPCap(max_send_wr=1, max_recv_wr=1),
            comp_mask=e.IBV_QP_INIT_ATTR_PD |
            e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
            send_ops_flags=e.IBV_QP_EX_WITH_BIND_MW)))):
    try:
        make()
        print('refused', what, 'no')
    except PyverbsRDMAError as err:
        print('refused', what, 'EOPNOTSUPP'
              if err.error_code == errno.EOPNOTSUPP else err.error_code)
PY
swiw_py "$T_TMP/qpex.py"
[ "$RC" -eq 0 ] || { show_last >&2; fail "pyverbs CQEX/QPEx script exit $RC"; }
qpns=$(sed -n 's/^qp_nums //p' <<<"$OUT")
a=${qpns% *} b=${qpns#* }
out_has "^send \[\(1, 0, 1, 18, $a, 0\), \(2, 0, 0, 17, $a, 0\)\]$" \
	"QPEx RDMA WRITE then SEND, read back through CQEX"
out_has "^recv \[\(7, 0, 128, 17, $b, $a\)\]$" "CQEX RECV with qp_num and src_qp"
out_has "^data b'pyverbs-qpex-send' b'pyverbs-qpex-write'$" "the data arrived"
out_has "^refused cq timestamp EOPNOTSUPP$" "CQEX with timestamps refused"
out_has "^refused qp bind_mw EOPNOTSUPP$" "QPEx with bind_mw refused"
pass "pyverbs CQEX + QPEx: send and write posted with ibv_wr_*, polled with start_poll/next_poll"

# --- perftest -------------------------------------------------------------
. "$(dirname "$0")/perftest_lib.sh"

# perftest 4.5 turns --use_old_post_send on by itself for every device but
# the mlx5 family, EFA and HNS (verify_params_with_device_context() checks
# the vendor part ID), so on swiw the ibv_wr_* path stays OFF either way.
# Both forms must run; the banner says which path was taken.
wr_api() {
	out_has "^ ibv_wr\* API[[:space:]]+: $1" "perftest's ibv_wr* API banner"
}
pair ib_write_bw "$BW" -x 0 -n 200
wr_api OFF
pair ib_write_bw "$BW" -x 0 -n 200 --use_old_post_send
wr_api OFF
pair ib_send_lat "$LAT" -x 0 -n 200
wr_api OFF
pair ib_send_lat "$LAT" -x 0 -n 200 --use_old_post_send
wr_api OFF
