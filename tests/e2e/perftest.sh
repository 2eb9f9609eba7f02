# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The distribution's unmodified perftest and ibv_srq_pingpong over swiw_lo,
# server and client in two processes under swiw-run, connected by
# ibv_modify_qp through the broker (perftest without -R exchanges QP
# numbers over its own socket). Each must exit 0 and report its figures.
. "$(dirname "$0")/lib.sh"

need_cmd ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_send_lat ib_send_bw \
	ibv_srq_pingpong ss

. "$(dirname "$0")/perftest_lib.sh"

pair ib_write_bw "$BW" -x 0 -n 500
pair ib_write_bw "$BW" -x 0 -n 200 -s 1048576
pair ib_read_bw "$BW" -x 0 -n 500
pair ib_write_lat "$LAT" -x 0 -n 500
pair ib_read_lat "$LAT" -x 0 -n 500
pair ib_send_lat "$LAT" -x 0 -n 500
PD_LEAK=1 pair ib_send_bw "$BW" -x 0 -n 500
pair ib_send_lat "$LAT" -x 0 -n 500 -s 65536
pair ibv_srq_pingpong '^[0-9]+ iters in [0-9.]+ seconds' -g 0
