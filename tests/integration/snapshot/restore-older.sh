#!/bin/sh
# SPDX-License-Identifier: MIT
# An older snapshot keeps working (docs/snapshot.md "Compatibility between versions"): a snapshot
# of the snap guest with everything added within format 1 since its first version removed
# (/machine cpuid-hide, profile and profile-symbols, the /devices/fw_cfg@510 node, statistics
# fields appended since: the VM's time.kvm_run_live_ns_total, vCPU 0's time.cpu_ns and profile.*),
# as a perfvisor of that time wrote it, restores (the VM runs with --cpuid-hide tsc-deadline,pmu-ack: the
# CPUID a perfvisor of that time gave, without the TSC-deadline bit it now adds, and no
# /machine cpuid-add is written; on a KVM whose own list has the bit, kvm_pvm's, that perfvisor
# gave it, so only pmu-ack is hidden and the cpuid-add written is removed; the restore, reading none, must give the guest that CPUID again;
# its PV PMU without PMI_ACK, which the restore must see from the snapshot's PMU features alone,
# /machine cpuid-hide being gone), and the guest finishes its own checks that
# nothing reset and nothing was counted twice. (tests/unit/data/snapshot-format1.fdt, a state file
# an older writer made, is read and written back byte for byte by test_vmm_snapschema.)
# cases: restore-older restore-older-end
. "$(dirname "$0")/../lib.sh"

cur=restore-older; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
# An older perfvisor passed KVM's own list through: without the TSC-deadline bit where KVM's list
# lacks it (kvm_amd, kvm_intel), with it where the list has it (kvm_pvm). The bit perfvisor now
# adds is hidden only in the first case, so the CPUID is what that perfvisor gave on this host;
# in the second, the /machine cpuid-add it then writes is removed with the rest.
hide=pmu-ack; add_node=
"$B/tests/kvmcpuid" 1 ecx 24; kc=$?
case $kc in
1) hide=tsc-deadline,pmu-ack ;;
0) add_node=cpuid-add; echo "  (this KVM offers the TSC-deadline bit itself: the guest keeps it)" ;;
*) bad "kvmcpuid failed" ;;
esac
start_vm restore-older-vm 300 run --kernel "$SNAP" --cmdline "phases=8 work_ms=250" --api-socket "$T/o.sock" --timeout 280 \
	--cpuid-hide "$hide"
wait_sock "$T/o.sock" 20 || bad "no control socket"
wait_for "$T/restore-older-vm.out" 'phase 2/' || bad "the guest never reached phase 2"
snapshot "$T/o.sock" "$T/o.snap" stop
stop_vm
[ "$st" -eq 0 ] || bad "snapshot --stop: the VM exited $st"
size0=$(wc -c <"$T/o.snap/state.fdt")
for del in "/machine cpuid-hide" ${add_node:+"/machine $add_node"} "/machine profile" "/machine profile-symbols" "/devices/fw_cfg@510" \
	"/stats time.kvm_run_live_ns_total" "/vcpu@0/stats time.cpu_ns" "/vcpu@0/stats profile.samples" \
	"/vcpu@0/stats profile.dropped" "/vcpu@0/stats profile.throttled" "/vcpu@0/stats profile.sample_ns"; do
	# shellcheck disable=SC2086 # NODE [PROPERTY]
	"$B/tests/fdtset" "$T/o.snap/state.fdt" --delete $del 2>>"$T/$cur.err" || bad "could not remove $del"
done
echo "  (state.fdt: $size0 bytes as written, $(wc -c <"$T/o.snap/state.fdt") as an older perfvisor wrote it)"
"$PV" snapshot-info "$T/o.snap" --verify >"$T/o.info" 2>&1 || bad "snapshot-info --verify: $(tail -n 1 "$T/o.info")"
grep -q 'fw_cfg' "$T/o.info" && bad "snapshot-info still shows fw_cfg"
done_test
run restore-older-end 300 "$PV" run --restore "$T/o.snap" --timeout 280 --verbose
expect_status 0; expect_out 'snap: cpu 0 phase 8/8'; expect_out 'snap: done'; expect_out '^SUMMARY:'; expect_clean
expect_no_out 'phase 1/'
done_test
