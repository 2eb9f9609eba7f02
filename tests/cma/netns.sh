# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The librdmacm programs across two network namespaces joined by a veth
# pair (server in one, client in the other): swiw's rdma_cm finds the
# device that owns each address, listens on the TCP port, and the
# connection runs over the veth.
. "$(dirname "$0")/../lib/swiw_test.sh"
need_swiw

need_cmd rping ucmatose rdma_server rdma_client ib_send_bw ib_read_bw \
	ib_write_bw ip ss
need_root
. "$(dirname "$0")/../e2e/perftest_lib.sh"
. "$(dirname "$0")/cma_lib.sh"

pair_netns cm 23
rping_pair 10.23.0.1
# The client's namespace has no route to 10.23.0.1 but through swiw_cmb.
cm_perftest ib_send_bw "$BW" -n 200
cm_perftest ib_write_bw "$BW" -n 200
cm_perftest ib_read_bw "$BW" -n 200
cm_perftest ib_send_lat "$LAT" -n 200
ucmatose_pair 10.23.0.1
rdma_server_pair 10.23.0.1

# An address no swiw device owns (swiw_cma is not selected here) is the
# kernel rdma_cm's, which this host does not have: a clear error, no hang.
run ip netns exec "$NSA" env SWIW_INTERFACES=lo "${SWIW[@]}" \
	rping -s -a 10.23.0.1 -p 7174 -C 1
assert_nonzero "rping -s on a non-swiw address"
err_has 'rdma_cm: 10\.23\.0\.1 is not an address of a swiw device.*not available here'
err_has 'rdma_bind_addr: No such device'
run ip netns exec "$NSB" env SWIW_INTERFACES=lo "${SWIW[@]}" \
	rping -c -a 10.23.0.1 -p 7174 -C 1
assert_nonzero "rping -c from a non-swiw address"
err_has 'rdma_cm: 10\.23\.0\.2 is not an address of a swiw device'
err_has 'RDMA_CM_EVENT_ADDR_ERROR, error -19'
pass "a non-swiw address: ENODEV and ADDR_ERROR with the reason, no hang"
