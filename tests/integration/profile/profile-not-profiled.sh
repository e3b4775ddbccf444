#!/bin/sh
# SPDX-License-Identifier: MIT
# Host-side profiling: the profile request to a VM that is not profiled is refused.
. "$(dirname "$0")/../lib.sh"

cur=profile-not-profiled; ok=1
start_vm $cur 60 run --kernel "$G/behave.elf" --cmdline "mode=hang" --api-socket "$T/prof-no.sock" --timeout 50
wait_sock "$T/prof-no.sock" 20
"$PV" api "$T/prof-no.sock" '{"cmd":"profile"}' >"$T/$cur.api" 2>&1
grep -q 'this VM is not profiled' "$T/$cur.api" || bad "reply: $(cat "$T/$cur.api")"
stop_vm TERM; st=0
done_test
