#!/bin/sh
# SPDX-License-Identifier: MIT
# exceptions: caught in ring 0 and ring 3, on every CPU.
. "$(dirname "$0")/../lib.sh"

run exceptions 120 "$PV" run --kernel "$G/exceptions.elf" --cpus 2 --timeout 100
expect_status 0; expect_out '^PASS'; expect_out '^SUMMARY:'; expect_clean
[ "$(grep -c '^PASS' "$T/exceptions.out")" -ge 7 ] || bad "fewer than 7 PASS lines"
done_test
