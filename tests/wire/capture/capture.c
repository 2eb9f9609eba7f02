// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Transitional: the conversation is added once framing, MPA and DDP land. */
#include <stdio.h>

#include "pcap_tcp.h"

int main(int argc, char **argv)
{
	struct pcap_out out;
	struct tcp_conv c;

	if (argc != 2 || pcap_out_open(&out, argv[1]))
		return 1;
	tcp_conv_open(&c, &out, 0x0a000001, 40000, 0x0a000002, 50000, 1460);
	tcp_conv_close(&c);
	printf("fpdus 0\nmpa_frames 0\nopcodes\n");
	return pcap_out_close(&out);
}
