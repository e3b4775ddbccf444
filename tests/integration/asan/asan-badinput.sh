#!/bin/sh
# SPDX-License-Identifier: MIT
# The same paths under ASan + UBSan (leaks included): a kernel in no format perfvisor boots.
. "$(dirname "$0")/../lib.sh"

need_asan
run asan-badinput 60 "$ASAN" run --kernel tests/integration/tests.sh
expect_status 125; expect_clean; done_test
