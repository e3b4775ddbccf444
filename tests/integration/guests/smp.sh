#!/bin/sh
# SPDX-License-Identifier: MIT
# smp on 1, 2 and 8 vCPUs: every CPU online, its ids and topology as the boot information says.
# cases: smp-1 smp-2 smp-8
. "$(dirname "$0")/../lib.sh"

for n in 1 2 8; do
	run smp-$n 240 "$PV" run --kernel "$G/smp.elf" --cpus $n --memory 64M --timeout 200
	expect_status 0; expect_out "smp: $n CPUs online"; expect_out '^SUMMARY:'; expect_clean
	done_test
done
