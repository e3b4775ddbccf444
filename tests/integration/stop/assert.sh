#!/bin/sh
# SPDX-License-Identifier: MIT
# A guest assertion: exit status 3 and the expression.
. "$(dirname "$0")/../lib.sh"

run assert 60 "$PV" run --kernel "$G/behave.elf" --cmdline "mode=assert" --timeout 50
expect_status 3; expect_err 'guest assertion failed'; expect_err '1 == 2'; done_test
