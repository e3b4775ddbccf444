#!/bin/sh
# SPDX-License-Identifier: MIT
# Live time: vCPU 0 spins in ring 3, vCPU 1 halts, neither exits. time.kvm_run_ns (live, from
# time.kvm_run_since_ns) shows both inside KVM_RUN; time.cpu_ns shows the spinning one busy and the
# halted one idle; the main thread refreshes the kvm.* mirror while they stay inside.
. "$(dirname "$0")/../lib.sh"

cur=stats-live-time; ok=1
start_vm $cur 120 run --kernel "$G/behave.elf" --cmdline "mode=spinhalt" --cpus 2 --timeout 100
sleep 2
"$PV" stat $vmpid --interval 1 --count 3 --fields 'exits,time.kvm_run_ns,kvm.refreshes,time.cpu_ns' \
	>"$T/live.out" 2>>"$T/$cur.err" || bad "stat failed"
# Rows with rates (the 2nd and 3rd table): VCPU STATE exits (rate) run (share) refreshes (rate) cpu (share).
awk '$1 ~ /^[01]$/ && $2 == "online" && NF == 10 {
		if (!(($1) in first_exits)) { first_exits[$1] = $3; first_ref[$1] = $7 }
		last_exits[$1] = $3; last_ref[$1] = $7; run[$1] = $6; cpu[$1] = $10 }
	END {
		for (i = 0; i <= 1; i++) {
			r = run[i]; c = cpu[i]; gsub(/[()%]/, "", r); gsub(/[()%]/, "", c)
			printf "  (vCPU %d: time.kvm_run_ns %s%%, time.cpu_ns %s%%, exits %s -> %s, kvm.refreshes %s -> %s)\n",
				i, r, c, first_exits[i], last_exits[i], first_ref[i], last_ref[i]
			if (r + 0 < 90) { print "vCPU " i " in KVM_RUN only " r "%: not live"; bad = 1 }
			if (first_exits[i] != last_exits[i]) { print "vCPU " i " exited"; bad = 1 }
			if (last_ref[i] - first_ref[i] < 5) { print "vCPU " i ": kvm.* not refreshed inside KVM_RUN"; bad = 1 }
		}
		c0 = cpu[0]; c1 = cpu[1]; gsub(/[()%]/, "", c0); gsub(/[()%]/, "", c1)
		if (c0 + 0 < 30) { print "the spinning vCPU used only " c0 "% CPU"; bad = 1 }
		if (c1 + 0 > 5) { print "the halted vCPU used " c1 "% CPU"; bad = 1 }
		exit bad }' "$T/live.out" >"$T/live.verdict" || bad "$(grep -v '^  (' "$T/live.verdict" | tr '\n' ';')"
grep '^  (' "$T/live.verdict"
stop_vm TERM; st=0
done_test
