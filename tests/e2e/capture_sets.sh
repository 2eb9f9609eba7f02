# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The MPA settings e2e.capture runs, each a word of four y/n: the server's
# CRC and markers, then the client's (capture.sh's one(), in order).
# Sourced by tests/e2e/capture.sh and tests/vm/capture.sh, which counts
# the captures the guest must keep.
#
# all: every setting. framing: the four that frame differently (CRC off
# and on, markers none, both ways and each one way), for the runs whose
# interest is the framing rather than the negotiation: the kernel helper
# (vm.capture.mixed) and the sanitizer builds.
capture_settings() {
	case $1 in
	all) echo nnnn,ynnn,nnyn,yyyy,nyny,yynn,nnyy ;;
	framing) echo nnnn,nyny,yynn,nnyy ;;
	*) echo "$1" ;;
	esac
}
