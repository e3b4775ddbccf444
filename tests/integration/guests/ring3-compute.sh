#!/bin/sh
# SPDX-License-Identifier: MIT
# ring3-compute: a long ring-3 loop, checked against its jump-ahead formula.
. "$(dirname "$0")/../lib.sh"

run ring3-compute 180 "$PV" run --kernel "$G/ring3-compute.elf" --timeout 150
expect_status 0; expect_out 'cycles'; expect_out '^SUMMARY:'; expect_clean
done_test
