#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The binaries keep their contracts with libibverbs:
# - the provider uses no ibv_cmd_* (there is no uverbs device behind it),
#   binds exactly the private version IBVERBS_PRIVATE_34, and exports only
#   the table the preload library looks up;
# - the preload library exports exactly the libibverbs functions it
#   interposes and librdmacm's API (its rdma_cm for swiw devices), under
#   the versions programs bind them with, and links neither library.
. "$(dirname "$0")/../lib/swiw_test.sh"
lib=${SWIW_BUILD:?}/lib
prov=$lib/libswiw-rdmav34.so
shim=$lib/libswiw-preload.so
need_cmd objdump

imports=$(objdump -T "$prov" | awk '$4 == "*UND*" { print $NF }')
if grep -q '^ibv_cmd_' <<<"$imports"; then
	check_fail "the provider imports ibv_cmd_*: $(grep '^ibv_cmd_' <<<"$imports" | tr '\n' ' ')"
fi
private=$(objdump -T "$prov" | grep -o 'IBVERBS_PRIVATE_[0-9]*' | sort -u)
[ "$private" = "IBVERBS_PRIVATE_34" ] || check_fail "provider binds '$private', want IBVERBS_PRIVATE_34"
for s in _verbs_init_and_alloc_context verbs_set_ops verbs_uninit_context verbs_register_driver_34; do
	objdump -T "$prov" | grep -Eq "\(IBVERBS_PRIVATE_34\) +$s\$" || check_fail "provider does not import $s@IBVERBS_PRIVATE_34"
done
exports=$(objdump -T "$prov" | awk '$4 != "*UND*" && $2 == "g" && $3 == "DF" { print $NF }' | sort -u | tr '\n' ' ')
[ "$exports" = "swiw_shim_iface " ] || check_fail "provider exports '$exports', want only swiw_shim_iface"

want="IBVERBS_1.0 ibv_create_comp_channel
IBVERBS_1.0 ibv_destroy_comp_channel
IBVERBS_1.1 ibv_get_cq_event
IBVERBS_1.1 ibv_get_device_guid
IBVERBS_1.1 ibv_get_device_list
IBVERBS_1.1 ibv_query_gid
IBVERBS_1.1 ibv_query_pkey
IBVERBS_1.10 ibv_import_device
IBVERBS_1.11 _ibv_query_gid_ex
IBVERBS_1.11 _ibv_query_gid_table
IBVERBS_PRIVATE_34 ibv_query_gid_type"
want_cm="RDMACM_1.0 rdma_accept
RDMACM_1.0 rdma_ack_cm_event
RDMACM_1.0 rdma_bind_addr
RDMACM_1.0 rdma_connect
RDMACM_1.0 rdma_create_ep
RDMACM_1.0 rdma_create_event_channel
RDMACM_1.0 rdma_create_id
RDMACM_1.0 rdma_create_qp
RDMACM_1.0 rdma_create_qp_ex
RDMACM_1.0 rdma_create_srq
RDMACM_1.0 rdma_create_srq_ex
RDMACM_1.0 rdma_destroy_ep
RDMACM_1.0 rdma_destroy_event_channel
RDMACM_1.0 rdma_destroy_id
RDMACM_1.0 rdma_destroy_qp
RDMACM_1.0 rdma_destroy_srq
RDMACM_1.0 rdma_disconnect
RDMACM_1.0 rdma_event_str
RDMACM_1.0 rdma_free_devices
RDMACM_1.0 rdma_freeaddrinfo
RDMACM_1.0 rdma_get_cm_event
RDMACM_1.0 rdma_get_devices
RDMACM_1.0 rdma_get_dst_port
RDMACM_1.0 rdma_get_request
RDMACM_1.0 rdma_get_src_port
RDMACM_1.0 rdma_getaddrinfo
RDMACM_1.0 rdma_join_multicast
RDMACM_1.0 rdma_leave_multicast
RDMACM_1.0 rdma_listen
RDMACM_1.0 rdma_migrate_id
RDMACM_1.0 rdma_notify
RDMACM_1.0 rdma_reject
RDMACM_1.0 rdma_resolve_addr
RDMACM_1.0 rdma_resolve_route
RDMACM_1.0 rdma_set_option
RDMACM_1.1 rdma_join_multicast_ex
RDMACM_1.2 rdma_establish
RDMACM_1.2 rdma_init_qp_attr
RDMACM_1.3 rdma_get_remote_ece
RDMACM_1.3 rdma_reject_ece
RDMACM_1.3 rdma_set_local_ece"
want=$(printf '%s\n%s\n' "$want" "$want_cm" | sort)
got=$(objdump -T "$shim" | awk '$4 != "*UND*" && $2 == "g" && $3 == "DF" { print $(NF-1), $NF }' | sort)
if [ "$got" != "$want" ]; then
	check_fail "preload library exports differ:"
	diff <(echo "$want") <(echo "$got")
fi
# Every interposed symbol exists in the installed libibverbs under that version.
while read -r ver sym; do
	objdump -T /usr/lib/x86_64-linux-gnu/libibverbs.so.1 | grep -Eq " $ver +$sym\$" ||
		check_fail "libibverbs has no $sym@@$ver to interpose"
done <<<"$(grep IBVERBS <<<"$want")"
while read -r ver sym; do
	objdump -T /usr/lib/x86_64-linux-gnu/librdmacm.so.1 | grep -Eq " $ver +$sym\$" ||
		check_fail "librdmacm has no $sym@@$ver to interpose"
done <<<"$want_cm"
if objdump -p "$shim" | grep NEEDED | grep -Eq 'libibverbs|librdmacm'; then
	check_fail "the preload library links libibverbs or librdmacm"
fi

[ "$T_FAILED" -eq 0 ] || exit 1
pass "symbols"
