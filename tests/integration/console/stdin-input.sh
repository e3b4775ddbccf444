#!/bin/sh
# SPDX-License-Identifier: MIT
# --stdin: a line typed into perfvisor's stdin reaches the guest's UART.
. "$(dirname "$0")/../lib.sh"

cur=stdin-input; ok=1
printf 'typed-into-stdin\n' | timeout -s KILL 120 "$PV" run --kernel "$G/behave.elf" --cmdline "mode=serial-echo" \
	--stdin --timeout 100 >"$T/$cur.out" 2>"$T/$cur.err"
st=$?
expect_status 0; expect_out 'serial-echo: \[typed-into-stdin\]'; done_test
