#!/bin/sh
# SPDX-License-Identifier: MIT
# What the fields mean (docs/stats-abi.md "Compatibility": a field's meaning never changes). The
# checker built from today's documents (perfvisor stats-check) and the one built from ABI v1's
# frozen header and documents (stats-check-v1, tests/abi/v1/meanings.c) check every documented
# relation between fields (the VM totals are the sums of the vCPUs' published fields, exits by
# reason, vcpus_online, uptime) on live VMs whose vCPUs exit all the time, never exit, halt and
# spin, and were restored from a snapshot; and on the last sample of a VM that stopped.
# cases: meanings-exiting meanings-hang meanings-spinhalt meanings-restored meanings-stopped
. "$(dirname "$0")/../lib.sh"

# checkers NAME TARGET: today's checker and v1's, twice each, on a live VM; their lines in NAME's .out.
checkers() {
	for i in 1 2; do
		for c in "$PV stats-check" "$B/stats-check-v1"; do
			timeout 60 $c "$2" >"$T/$1.chk" 2>&1 ||
				bad "$c ($i): $(grep -m 1 FAIL "$T/$1.chk" || tail -n 1 "$T/$1.chk")"
			cat "$T/$1.chk" >>"$T/$1.out"
		done
	done
	grep -q '^ok   v1: ' "$T/$1.out" || bad "the v1 checker checked no meaning"
	grep -q '^ok   current: ' "$T/$1.out" || bad "today's checker checked no meaning"
	echo "  ($1, v1: time.kvm_run_ns_total $(grep -m 1 '^ok   v1: time.kvm_run_ns_total' "$T/$1.out" | sed 's/.*: //'); current: live total $(grep -m 1 '^ok   current: time.kvm_run_live_ns_total is the sum' "$T/$1.out" | sed 's/.*: //'))"
}
# vmfield NAME: the VM record's field from a fresh stat --json of $vmpid.
vmfield() { "$PV" stat $vmpid --once --json 2>/dev/null | "$JC" "vm/$1" 2>/dev/null; }

# live_vm CASE CPUS CMDLINE SECONDS: the behave guest running, both checkers on it after SECONDS;
# the VM is left running ($vmpid) for the caller's own checks, then stop_vm.
live_vm() {
	cur=$1; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
	start_vm "$1-vm" 120 run --kernel "$G/behave.elf" --cpus "$2" --cmdline "$3" --timeout 100
	sleep "$4"
	checkers "$cur" $vmpid
}

# vCPU 0 writes a port as fast as it can: an exit every few microseconds, racing the readers.
live_vm meanings-exiting 2 "mode=ports count=4000000000" 2
stop_vm TERM; st=0
done_test

# Four vCPUs that never leave KVM_RUN (vCPU 0 halted with interrupts off, 1-3 waiting for a SIPI):
# the published sum stays what the vCPU records say (v1), the live total moves with the clock.
live_vm meanings-hang 4 "mode=hang" 3
up=$(vmfield uptime_ns); pub=$(vmfield time.kvm_run_ns_total); live=$(vmfield time.kvm_run_live_ns_total)
echo "  (meanings-hang: uptime_ns $up, time.kvm_run_ns_total $pub, time.kvm_run_live_ns_total $live)"
[ -n "$up" ] && [ -n "$pub" ] && [ -n "$live" ] || bad "stat --json lacks a VM field: '$up' '$pub' '$live'"
[ "${pub:-1}" -le "${up:-0}" ] 2>/dev/null || bad "the published total $pub exceeds the uptime $up: live time in it"
[ "${live:-0}" -ge $((2 * ${up:-1})) ] 2>/dev/null || bad "the live total $live is not ~4 x the uptime $up"
stop_vm TERM; st=0
done_test

# vCPU 0 spins in ring 3, vCPU 1 halts: neither exits.
live_vm meanings-spinhalt 2 "mode=spinhalt" 2
stop_vm TERM; st=0
done_test

# A restored VM: its cumulative fields continue from the snapshot's values; the meanings hold.
cur=meanings-restored; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
start_vm meanings-orig 120 run --kernel "$G/behave.elf" --cpus 2 --cmdline "mode=tick period_ms=2" --api-socket "$T/m.sock" --timeout 100
wait_sock "$T/m.sock" 20 || bad "no control socket"
sleep 1
snapshot "$T/m.sock" "$T/m.snap" stop
stop_vm
start_vm meanings-restored-vm 120 run --restore "$T/m.snap" --api-socket "$T/r.sock" --timeout 100
wait_sock "$T/r.sock" 20 || bad "the restored VM has no control socket"
sleep 1
checkers $cur "$T/r.sock"
"$PV" snapshot-info "$T/m.snap" >"$T/m.info" 2>&1
e0=$(info_exits "$T/m.info" 0); now=$(vmfield exits_total)
echo "  (meanings-restored: vCPU 0 had $e0 exits in the snapshot; the restored VM's exits_total is $now)"
[ -n "$e0" ] && [ "${now:-0}" -ge "$e0" ] 2>/dev/null || bad "exits_total $now restarted below the snapshot's $e0"
stop_vm TERM; st=0
done_test

# A VM that ended: in its last sample (VM record STOPPED) the totals equal the sums.
cur=meanings-stopped; ok=1
start_vm meanings-stopped-vm 60 run --kernel "$G/behave.elf" --cpus 2 --cmdline "mode=tick period_ms=2" --timeout 3
sleep 1
timeout 30 "$PV" stat $vmpid --json --interval 0.5 >"$T/$cur.out" 2>"$T/$cur.err"
st=$?
expect_status 0
last=$(tail -n 1 "$T/$cur.out")
echo "$last" | "$JC" vm/state=stopped 2>>"$T/$cur.err" || bad "the last sample is not of a stopped VM"
v() { echo "$last" | "$JC" "$1" 2>/dev/null; }
et=$(v vm/exits_total); e=$(($(v vcpus/0/exits) + $(v vcpus/1/exits)))
rt=$(v vm/time.kvm_run_ns_total); lt=$(v vm/time.kvm_run_live_ns_total)
r=$(($(v vcpus/0/time.kvm_run_ns) + $(v vcpus/1/time.kvm_run_ns)))
echo "  (meanings-stopped: exits_total $et = sum $e; time.kvm_run_ns_total $rt = sum $r = live total $lt)"
[ "$et" = "$e" ] && [ "$rt" = "$r" ] && [ "$lt" = "$rt" ] || bad "a STOPPED VM's totals are not the sums"
stop_vm
[ "$st" -eq 124 ] || bad "the VM ended with $st, not its --timeout's 124"
st=0
done_test
