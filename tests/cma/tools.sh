# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The distribution's librdmacm programs over swiw_lo through swiw's
# rdma_cm: rping (also -q and IPv6), perftest -R (send, write, read bandwidth, send
# latency), ucmatose, rdma_server/rdma_client; rping refusing an MPA Reply
# (mpa_responder.py) with its TERMINATE.
. "$(dirname "$0")/../lib/swiw_test.sh"
need_swiw

need_cmd rping ucmatose rdma_server rdma_client ib_send_bw ib_write_bw \
	ib_read_bw ib_send_lat ss
. "$(dirname "$0")/../e2e/perftest_lib.sh"
. "$(dirname "$0")/cma_lib.sh"

rping_pair 127.0.0.1
# Its own QP, walked through INIT/RTR/RTS with rdma_init_qp_attr.
rping_pair 127.0.0.1 -q
rping_pair ::1
cm_perftest ib_send_bw "$BW" -n 200
cm_perftest ib_write_bw "$BW" -n 200
cm_perftest ib_read_bw "$BW" -n 200
cm_perftest ib_send_lat "$LAT" -n 200
ucmatose_pair 127.0.0.1
rdma_server_pair 127.0.0.1
rping_no_rtr 10
