#!/bin/sh
# SPDX-License-Identifier: MIT
# At the VMM's end the VM record becomes STOPPED: a JSON stream shows it last and ends by itself.
# `exits` counts exits handled, the sum of the exit reasons (vCPU 0 ticks: a port write every
# 10 ms). An interrupted KVM_RUN is exit.intr, never part of `exits`: vCPU 1 (never started, it
# waits for a SIPI inside KVM_RUN) has no exit, and the stop's kick adds one exit.intr. (vCPU 0 is
# not asked for one: it may be between two KVM_RUNs when the stop comes, and leave without.)
. "$(dirname "$0")/../lib.sh"

cur=stats-vm-stopped; ok=1
start_vm stats-vm-stopped-vm 60 run --kernel "$G/behave.elf" --cmdline "mode=tick" --cpus 2 --timeout 3
sleep 1
timeout 30 "$PV" stat $vmpid --json --interval 0.5 --fields 'exits,exit.*' >"$T/$cur.out" 2>"$T/$cur.err"
st=$?
expect_status 0
tail -n 1 "$T/$cur.out" | "$JC" vm/state=stopped vcpus/0/state=stopped vcpus/1/state=stopped 2>>"$T/$cur.err" ||
	bad "the last sample is not of a stopped VM"
# "Before the stop": the last sample in which vCPU 1 still ran (one may catch the vCPUs stopped
# before the VM record is).
online=$(grep -n '"index":1,"state":"online"' "$T/$cur.out" | tail -n 1 | cut -d: -f1)
[ -n "$online" ] || bad "no sample shows vCPU 1 running"
{ sample_exits 1 0; sample_exits $(($(wc -l <"$T/$cur.out") - ${online:-1} + 1)) 1; sample_exits 1 1; } >"$T/exits.txt"
awk 'NR % 9 == 1 { e[int(NR / 9)] = $1 } NR % 9 > 1 && NR % 9 < 9 { s[int(NR / 9)] += $1 } NR % 9 == 0 { n[NR / 9 - 1] = $1 }
	END {
		printf "  (vCPU 0: exits %d = sum of exit reasons %d)\n", e[0], s[0]
		printf "  (vCPU 1: exits %d = sum %d, exit.intr %d before the stop; exits %d = sum %d, exit.intr %d after)\n",
			e[1], s[1], n[1], e[2], s[2], n[2]
		exit !(e[0] == s[0] && e[0] > 0 && e[1] == s[1] && e[2] == s[2] && e[2] == e[1] && n[2] == n[1] + 1) }' \
	"$T/exits.txt" || bad "exits is not the sum of the exit reasons, or the stop's kick is not one exit.intr"
stop_vm
[ "$st" -eq 124 ] || bad "the VM ended with $st, not its --timeout's 124"
st=0
done_test
