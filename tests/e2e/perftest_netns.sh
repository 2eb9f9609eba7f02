# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The distribution's unmodified perftest across two network namespaces
# joined by a veth pair: server in one, client in the other, each
# namespace with the broker its first program starts, QPs connected by
# ibv_modify_qp with the peer's GID (::ffff:10.22.0.x). Every program,
# plus bidirectional, events and four QPs.
. "$(dirname "$0")/../lib/swiw_test.sh"
need_swiw

need_cmd ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_send_lat \
	ib_send_bw ib_atomic_bw ib_atomic_lat ip ss
need_root

. "$(dirname "$0")/perftest_lib.sh"

pair_netns pt 22

pair ib_write_bw "$BW" -x 0 -n 500
pair ib_write_bw "$BW" -x 0 -n 100 -s 1048576
pair ib_read_bw "$BW" -x 0 -n 500
PD_LEAK=1 pair ib_send_bw "$BW" -x 0 -n 500
pair ib_write_lat "$LAT" -x 0 -n 500
pair ib_read_lat "$LAT" -x 0 -n 500
pair ib_send_lat "$LAT" -x 0 -n 500 -s 4096
pair ib_atomic_lat "$LAT" -x 0 -n 500
pair ib_atomic_bw "$BW" -x 0 -n 500 -A CMP_AND_SWAP
pair ib_send_lat "$LAT" -x 0 -n 500 -e
pair ib_write_bw "$BW" -x 0 -n 500 -b
pair ib_read_bw "$BW" -x 0 -n 500 -q 4
