#!/bin/sh
# SPDX-License-Identifier: MIT
# --console FILE: the guest's output goes to the file, not stdout.
. "$(dirname "$0")/../lib.sh"

run console-file 120 "$PV" run --kernel "$G/hello.elf" --console "$T/console.txt" --timeout 100
expect_status 0; expect_no_out 'Hello from perfvisor guest'
grep -q 'Hello from perfvisor guest' "$T/console.txt" || bad "console file lacks the greeting"
done_test
