#!/bin/sh
# SPDX-License-Identifier: MIT
# 1e6+ reads (and at least 3 s of them) of a vCPU exiting as fast as it can: none busy.
. "$(dirname "$0")/../lib.sh"

cur=stats-read-busy; ok=1
start_vm $cur 120 run --kernel "$G/behave.elf" --cmdline "mode=ports count=1000000000" --timeout 100
sleep 1
"$B/tests/statsread" $vmpid 1000000 3 >"$T/statsread.out" 2>&1 || bad "$(cat "$T/statsread.out")"
echo "  ($(cat "$T/statsread.out"))"
stop_vm TERM; st=0
done_test
