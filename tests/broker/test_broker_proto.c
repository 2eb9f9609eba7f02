// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The broker's formats: swiw's private-data block (golden bytes, round
 * trips, every malformation), reasons, the role rule, GID addresses, and
 * the local protocol's layout.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "swiw_broker.h"
#include "swiw_broker_proto.h"

static const uint8_t golden_req[SWIW_BROKER_PD_LEN] = {
	's',  'w',  'i',  'w',	1,    1,    0,	  36, /* magic ver type len */
	0x00, 0x12, 0x34, 0x56, /* src_qpn 0x123456 */
	0x00, 0xab, 0xcd, 0xef, /* dst_qpn 0xabcdef */
	0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /* nonce */
	0,    0,    0,	  0, /* reason, reserved */
	0x80, 0x0a, 0x0b, 0x0c, /* sq_psn: known, 0x0a0b0c */
	0x80, 0x0d, 0x0e, 0x0f, /* rq_psn: known, 0x0d0e0f */
};

static void test_pd_golden(void **state)
{
	struct swiw_broker_pd pd = { .type = SWIW_BROKER_PD_REQUEST,
				     .src_qpn = 0x123456,
				     .dst_qpn = 0xabcdef,
				     .nonce = 0x0102030405060708ull,
				     .sq_psn = SWIW_BROKER_PSN_KNOWN | 0x0a0b0c,
				     .rq_psn = SWIW_BROKER_PSN_KNOWN |
					       0x0d0e0f };
	uint8_t buf[64];
	size_t len = 0;

	(void)state;
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(swiw_broker_pd_encode(&pd, buf, sizeof(buf), &len), 0);
	assert_int_equal(len, SWIW_BROKER_PD_LEN);
	assert_memory_equal(buf, golden_req, sizeof(golden_req));
	assert_int_equal(buf[len], 0xee); /* not a byte further */

	memset(&pd, 0x55, sizeof(pd));
	assert_int_equal(
		swiw_broker_pd_decode(golden_req, sizeof(golden_req), &pd), 0);
	assert_int_equal(pd.version, 1);
	assert_int_equal(pd.type, SWIW_BROKER_PD_REQUEST);
	assert_int_equal(pd.src_qpn, 0x123456);
	assert_int_equal(pd.dst_qpn, 0xabcdef);
	assert_true(pd.nonce == 0x0102030405060708ull);
	assert_int_equal(pd.reason, 0);
	assert_true(pd.psns);
	assert_int_equal(pd.sq_psn, SWIW_BROKER_PSN_KNOWN | 0x0a0b0c);
	assert_int_equal(pd.rq_psn, SWIW_BROKER_PSN_KNOWN | 0x0d0e0f);
}

static void test_pd_round_trip(void **state)
{
	static const struct swiw_broker_pd cases[] = {
		{ .type = SWIW_BROKER_PD_REQUEST, .src_qpn = 2, .dst_qpn = 3 },
		{ .type = SWIW_BROKER_PD_ACCEPT,
		  .src_qpn = 0xffffff,
		  .dst_qpn = 0xfffffe,
		  .nonce = ~0ull,
		  .sq_psn = SWIW_BROKER_PSN_KNOWN | 0xffffff,
		  .rq_psn = SWIW_BROKER_PSN_KNOWN },
		{ .type = SWIW_BROKER_PD_REJECT,
		  .src_qpn = 7,
		  .dst_qpn = 9,
		  .nonce = 42,
		  .reason = SWIW_BROKER_R_NOT_READY },
		{ .type = SWIW_BROKER_PD_REJECT, .reason = SWIW_BROKER_R_MAX },
	};
	struct swiw_broker_pd out;
	uint8_t buf[SWIW_BROKER_PD_LEN];
	size_t i, len;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(swiw_broker_pd_encode(&cases[i], buf,
						       sizeof(buf), &len),
				 0);
		assert_int_equal(swiw_broker_pd_decode(buf, len, &out), 0);
		assert_int_equal(out.version, SWIW_PD_VERSION);
		assert_int_equal(out.type, cases[i].type);
		assert_int_equal(out.src_qpn, cases[i].src_qpn);
		assert_int_equal(out.dst_qpn, cases[i].dst_qpn);
		assert_true(out.nonce == cases[i].nonce);
		assert_int_equal(out.reason, cases[i].reason);
		assert_true(out.psns);
		assert_int_equal(out.sq_psn, cases[i].sq_psn);
		assert_int_equal(out.rq_psn, cases[i].rq_psn);
	}
}

static void test_pd_encode_invalid(void **state)
{
	struct swiw_broker_pd pd = { .type = SWIW_BROKER_PD_REQUEST };
	uint8_t buf[SWIW_BROKER_PD_LEN];
	size_t len;

	(void)state;
	assert_int_equal(swiw_broker_pd_encode(&pd, buf, sizeof(buf) - 1, &len),
			 EINVAL);
	pd.type = 0;
	assert_int_equal(swiw_broker_pd_encode(&pd, buf, sizeof(buf), &len),
			 EINVAL);
	pd.type = 4;
	assert_int_equal(swiw_broker_pd_encode(&pd, buf, sizeof(buf), &len),
			 EINVAL);
	pd.type = SWIW_BROKER_PD_REQUEST;
	pd.src_qpn = 0x1000000;
	assert_int_equal(swiw_broker_pd_encode(&pd, buf, sizeof(buf), &len),
			 EINVAL);
	pd.src_qpn = 1;
	pd.dst_qpn = 0x1000000;
	assert_int_equal(swiw_broker_pd_encode(&pd, buf, sizeof(buf), &len),
			 EINVAL);
	pd.dst_qpn = 1;
	pd.reason = SWIW_BROKER_R_UNKNOWN_QPN; /* only a Reject has one */
	assert_int_equal(swiw_broker_pd_encode(&pd, buf, sizeof(buf), &len),
			 EINVAL);
	pd.type = SWIW_BROKER_PD_REJECT;
	pd.reason = SWIW_BROKER_R_MAX + 1;
	assert_int_equal(swiw_broker_pd_encode(&pd, buf, sizeof(buf), &len),
			 EINVAL);
	/* PSN words hold KNOWN and 24 bits, nothing else. */
	pd.reason = SWIW_BROKER_R_NONE;
	pd.sq_psn = SWIW_BROKER_PSN_KNOWN | 0x1000000;
	assert_int_equal(swiw_broker_pd_encode(&pd, buf, sizeof(buf), &len),
			 EINVAL);
	pd.sq_psn = 0;
	pd.rq_psn = 0x40000000;
	assert_int_equal(swiw_broker_pd_encode(&pd, buf, sizeof(buf), &len),
			 EINVAL);
	assert_int_equal(swiw_broker_pd_encode(NULL, buf, sizeof(buf), &len),
			 EINVAL);
}

static void test_pd_decode_malformed(void **state)
{
	struct swiw_broker_pd pd;
	uint8_t b[64];
	size_t i;

	(void)state;
	/* Every truncation is refused (the length field says 36); below 5
	 * octets it is not ours. */
	for (i = 0; i < SWIW_BROKER_PD_LEN; i++)
		assert_int_equal(swiw_broker_pd_decode(golden_req, i, &pd),
				 EBADMSG);
	assert_int_equal(swiw_broker_pd_decode(NULL, 0, &pd), EBADMSG);

	/* Not a swiw block: rping's empty data, siw's, anything else. */
	memcpy(b, golden_req, sizeof(golden_req));
	b[0] = 'S';
	assert_int_equal(swiw_broker_pd_decode(b, sizeof(golden_req), &pd),
			 EBADMSG);

	/* Another version: refused as such, version reported. */
	memcpy(b, golden_req, sizeof(golden_req));
	b[4] = 2;
	assert_int_equal(swiw_broker_pd_decode(b, sizeof(golden_req), &pd),
			 EPROTONOSUPPORT);
	assert_int_equal(pd.version, 2);
	b[4] = 0;
	assert_int_equal(swiw_broker_pd_decode(b, 5, &pd), EPROTONOSUPPORT);

	/* Unknown types. */
	memcpy(b, golden_req, sizeof(golden_req));
	b[5] = 0;
	assert_int_equal(swiw_broker_pd_decode(b, sizeof(golden_req), &pd),
			 EBADMSG);
	b[5] = 4;
	assert_int_equal(swiw_broker_pd_decode(b, sizeof(golden_req), &pd),
			 EBADMSG);

	/* A length field below the block or beyond the data. */
	memcpy(b, golden_req, sizeof(golden_req));
	b[7] = 27;
	assert_int_equal(swiw_broker_pd_decode(b, sizeof(golden_req), &pd),
			 EBADMSG);
	b[7] = 37;
	assert_int_equal(swiw_broker_pd_decode(b, sizeof(golden_req), &pd),
			 EBADMSG);

	/* PSN words with bits beside KNOWN and the 24 of the PSN. */
	memcpy(b, golden_req, sizeof(golden_req));
	b[28] = 0x81;
	assert_int_equal(swiw_broker_pd_decode(b, sizeof(golden_req), &pd),
			 EBADMSG);
	memcpy(b, golden_req, sizeof(golden_req));
	b[32] = 0x40;
	assert_int_equal(swiw_broker_pd_decode(b, sizeof(golden_req), &pd),
			 EBADMSG);

	/* QPNs beyond 24 bits. */
	memcpy(b, golden_req, sizeof(golden_req));
	b[8] = 1;
	assert_int_equal(swiw_broker_pd_decode(b, sizeof(golden_req), &pd),
			 EBADMSG);
	memcpy(b, golden_req, sizeof(golden_req));
	b[12] = 0x80;
	assert_int_equal(swiw_broker_pd_decode(b, sizeof(golden_req), &pd),
			 EBADMSG);

	/* A reason in a Request. */
	memcpy(b, golden_req, sizeof(golden_req));
	b[25] = 1;
	assert_int_equal(swiw_broker_pd_decode(b, sizeof(golden_req), &pd),
			 EBADMSG);
}

static void test_pd_decode_extension(void **state)
{
	struct swiw_broker_pd pd;
	uint8_t b[44];

	(void)state;
	/* A later minor version appends fields: read, tail ignored. */
	memset(b, 0x77, sizeof(b));
	memcpy(b, golden_req, sizeof(golden_req));
	b[7] = 40;
	assert_int_equal(swiw_broker_pd_decode(b, sizeof(b), &pd), 0);
	assert_int_equal(pd.src_qpn, 0x123456);
	assert_true(pd.psns);
	/* ULP data after the block (length 36) is ignored too. */
	b[7] = 36;
	assert_int_equal(swiw_broker_pd_decode(b, sizeof(b), &pd), 0);
	/* The first revision (28, no PSNs) decodes, and says so: the
	 * broker refuses it. */
	b[7] = 28;
	assert_int_equal(swiw_broker_pd_decode(b, 28, &pd), 0);
	assert_false(pd.psns);
	assert_int_equal(pd.sq_psn, 0);
	assert_int_equal(pd.rq_psn, 0);
	b[7] = 36;
	/* An unknown reason in a Reject is reported as it is. */
	b[5] = SWIW_BROKER_PD_REJECT;
	b[24] = 0x12;
	b[25] = 0x34;
	assert_int_equal(swiw_broker_pd_decode(b, sizeof(b), &pd), 0);
	assert_int_equal(pd.reason, 0x1234);
	assert_string_equal(swiw_broker_reason_str(pd.reason),
			    "unknown reason");
}

/* The PSN rule both the broker and the responder's engine apply. */
static void test_psn_check(void **state)
{
	const uint32_t K = SWIW_BROKER_PSN_KNOWN;
	struct swiw_broker_pd r = { .type = SWIW_BROKER_PD_REQUEST,
				    .psns = true,
				    .sq_psn = K | 0x111111,
				    .rq_psn = K | 0x222222 };

	(void)state;
	/* Responder in RTR (receive PSN only): the Request's send PSN. */
	assert_int_equal(swiw_broker_psn_check(&r, K | 0x111111, 0), 0);
	assert_int_equal(swiw_broker_psn_check(&r, K | 0x111112, 0), EACCES);
	/* In RTS: both pairs, each must match. */
	assert_int_equal(swiw_broker_psn_check(&r, K | 0x111111, K | 0x222222),
			 0);
	assert_int_equal(swiw_broker_psn_check(&r, K | 0x111111, K | 0x222223),
			 EACCES);
	assert_int_equal(swiw_broker_psn_check(&r, K | 0x111110, K | 0x222222),
			 EACCES);
	/* A PSN of 0 is a PSN: known 0 is not unknown. */
	assert_int_equal(swiw_broker_psn_check(&r, K, 0), EACCES);
	/* An initiator not yet in RTS: only its receive PSN, checked
	 * against the responder's send PSN once there is one. */
	r.sq_psn = 0;
	assert_int_equal(swiw_broker_psn_check(&r, K | 0x111111, 0), EAGAIN);
	assert_int_equal(swiw_broker_psn_check(&r, K | 0x111111, K | 0x222222),
			 0);
	assert_int_equal(swiw_broker_psn_check(&r, K | 0x111111, K | 0x222221),
			 EACCES);
	/* Nothing known on the Request's side: never a match. */
	r.rq_psn = 0;
	assert_int_equal(swiw_broker_psn_check(&r, K | 0x111111, K | 0x222222),
			 EAGAIN);
	/* The first revision's block: no PSNs, refused. */
	r.psns = false;
	r.sq_psn = K | 0x111111;
	assert_int_equal(swiw_broker_psn_check(&r, K | 0x111111, 0), EACCES);
}

static void test_reasons(void **state)
{
	unsigned int r;

	(void)state;
	for (r = 0; r <= SWIW_BROKER_R_MAX; r++) {
		assert_non_null(swiw_broker_reason_str(r));
		assert_string_not_equal(swiw_broker_reason_str(r),
					"unknown reason");
		assert_int_equal(swiw_broker_reason_retryable(r),
				 r == SWIW_BROKER_R_NOT_READY);
	}
	assert_string_equal(swiw_broker_reason_str(SWIW_BROKER_R_MAX + 1),
			    "unknown reason");
	/* The numbers are on the wire: they never change. */
	assert_int_equal(SWIW_BROKER_R_UNKNOWN_QPN, 1);
	assert_int_equal(SWIW_BROKER_R_WRONG_PEER_ADDR, 2);
	assert_int_equal(SWIW_BROKER_R_WRONG_PEER_QPN, 3);
	assert_int_equal(SWIW_BROKER_R_NOT_READY, 4);
	assert_int_equal(SWIW_BROKER_R_ROLE, 5);
	assert_int_equal(SWIW_BROKER_R_CONNECTED, 6);
	assert_int_equal(SWIW_BROKER_R_BAD_PD, 7);
	assert_int_equal(SWIW_BROKER_R_VERSION, 8);
	assert_int_equal(SWIW_BROKER_R_REFUSED, 9);
}

static void gid4(uint8_t g[16], const char *a)
{
	memset(g, 0, 16);
	g[10] = g[11] = 0xff;
	assert_int_equal(inet_pton(AF_INET, a, g + 12), 1);
}

static void test_role(void **state)
{
	uint8_t a[16], b[16];

	(void)state;
	gid4(a, "10.0.0.1");
	gid4(b, "10.0.0.2");
	/* The smaller GID initiates, whatever the QPNs. */
	assert_int_equal(swiw_broker_role(a, 900, b, 5), SWIW_BROKER_INITIATOR);
	assert_int_equal(swiw_broker_role(b, 5, a, 900), SWIW_BROKER_RESPONDER);
	/* Same GID (one host, one process): the smaller QPN. */
	assert_int_equal(swiw_broker_role(a, 5, a, 6), SWIW_BROKER_INITIATOR);
	assert_int_equal(swiw_broker_role(a, 6, a, 5), SWIW_BROKER_RESPONDER);
	assert_int_equal(swiw_broker_role(a, 5, a, 5), SWIW_BROKER_ROLE_NONE);
	/* Octets compare in network order, not as host integers. */
	gid4(a, "10.0.1.0");
	gid4(b, "10.0.0.255");
	assert_int_equal(swiw_broker_role(b, 1, a, 1), SWIW_BROKER_INITIATOR);
	/* IPv4-mapped sorts after ::1 and before fd00::. */
	memset(a, 0, 16);
	a[15] = 1;
	gid4(b, "127.0.0.1");
	assert_int_equal(swiw_broker_role(a, 9, b, 2), SWIW_BROKER_INITIATOR);
	memset(a, 0, 16);
	a[0] = 0xfd;
	assert_int_equal(swiw_broker_role(b, 9, a, 2), SWIW_BROKER_INITIATOR);
}

static void test_gid_sockaddr(void **state)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	uint8_t g[16];
	socklen_t len;
	char s[64];

	(void)state;
	gid4(g, "192.168.7.9");
	assert_true(swiw_broker_gid_is_v4(g));
	assert_int_equal(swiw_broker_gid_sockaddr(g, 7949, 3, &ss, &len), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(len, sizeof(struct sockaddr_in));
	assert_int_equal(ntohs(sin->sin_port), 7949);
	inet_ntop(AF_INET, &sin->sin_addr, s, sizeof(s));
	assert_string_equal(s, "192.168.7.9");

	assert_int_equal(inet_pton(AF_INET6, "fd00:77::2", g), 1);
	assert_false(swiw_broker_gid_is_v4(g));
	assert_int_equal(swiw_broker_gid_sockaddr(g, 1, 3, &ss, &len), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(len, sizeof(struct sockaddr_in6));
	assert_int_equal(sin6->sin6_scope_id, 0); /* global: no scope */
	assert_int_equal(inet_pton(AF_INET6, "fe80::1", g), 1);
	assert_int_equal(swiw_broker_gid_sockaddr(g, 1, 3, &ss, &len), 0);
	assert_int_equal(sin6->sin6_scope_id, 3);

	/* Nothing to connect to. */
	memset(g, 0, 16);
	assert_int_equal(swiw_broker_gid_sockaddr(g, 1, 0, &ss, &len), EINVAL);
	gid4(g, "0.0.0.0");
	assert_int_equal(swiw_broker_gid_sockaddr(g, 1, 0, &ss, &len), EINVAL);
	assert_int_equal(inet_pton(AF_INET6, "ff02::1", g), 1);
	assert_int_equal(swiw_broker_gid_sockaddr(g, 1, 0, &ss, &len), EINVAL);
}

static void test_local_protocol_layout(void **state)
{
	(void)state;
	/* The same on 32- and 64-bit: a process may differ from its broker. */
	assert_int_equal(sizeof(struct swiw_bp_hdr), 16);
	assert_int_equal(sizeof(struct swiw_bp_hello), 32);
	assert_int_equal(sizeof(struct swiw_bp_qp), 24);
	assert_int_equal(sizeof(struct swiw_bp_expect), 48);
	assert_int_equal(offsetof(struct swiw_bp_expect, rq_psn), 44);
	assert_int_equal(sizeof(struct swiw_bp_psn), 24);
	assert_int_equal(sizeof(struct swiw_bp_conn), 368);
	assert_int_equal(offsetof(struct swiw_bp_conn, req_len), 80);
	assert_int_equal(offsetof(struct swiw_bp_conn, req), 88);
	assert_int_equal(SWIW_BP_REQ_MAX, 20 + 256);
	assert_int_equal(SWIW_BP_VERSION, 2);
	assert_true(SWIW_BP_MSG_MAX >= sizeof(struct swiw_bp_expect));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pd_golden),
		cmocka_unit_test(test_psn_check),
		cmocka_unit_test(test_pd_round_trip),
		cmocka_unit_test(test_pd_encode_invalid),
		cmocka_unit_test(test_pd_decode_malformed),
		cmocka_unit_test(test_pd_decode_extension),
		cmocka_unit_test(test_reasons),
		cmocka_unit_test(test_role),
		cmocka_unit_test(test_gid_sockaddr),
		cmocka_unit_test(test_local_protocol_layout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
