#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# san_logs.sh COMMAND [ARGS...]: runs a test of a sanitizer build with the
# reports of every process it starts written to files in a scratch
# directory, and fails if there is any (tests/lib/swiw_test.sh does both,
# for every test that sources it and for the programs run here). A broker
# the test starts on demand has its stderr on /dev/null and its exit
# status seen by nobody: without this, its reports would be lost.
. "$(dirname "$0")/lib/swiw_test.sh"
T_NAME=$*
"$@"
