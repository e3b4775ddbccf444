#!/bin/sh
# SPDX-License-Identifier: MIT
# --console none: no guest output.
. "$(dirname "$0")/../lib.sh"

run console-none 120 "$PV" run --kernel "$G/hello.elf" --console none --timeout 100
expect_status 0; expect_no_out 'Hello'; done_test
