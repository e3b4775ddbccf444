#!/bin/sh
# SPDX-License-Identifier: MIT
# A signal stops every vCPU, including APs still waiting for a SIPI.
# cases: sigTERM sigINT
. "$(dirname "$0")/../lib.sh"

for sig in TERM INT; do
	cur=sig$sig; ok=1
	start_vm $cur 60 run --kernel "$G/behave.elf" --cmdline "mode=hang" --cpus 4
	sleep 3; stop_vm $sig
	[ $sig = TERM ] && expect_status 143 || expect_status 130
	expect_err 'stopped by signal'; done_test
done
