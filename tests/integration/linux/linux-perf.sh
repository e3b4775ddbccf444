#!/bin/sh
# SPDX-License-Identifier: MIT
# `perf` inside Debian's stock kernel, backed by the PV PMU (docs/guest-perf.md): the guest loads
# the project's driver (guest-drivers/linux/perfvisor_pmu.ko, built by `make` for that kernel),
# and Debian's own perf lists, counts and samples the perfvisor PMU's events. The initramfs is
# tests/integration/linux-perfinit.sh's; its /pvtest.sh prints what is checked here:
# - perf list shows the events the host backs (no class-0 event on a host without a PMU);
# - N port writes under `perf stat -e perfvisor/exits.io/` count exactly N, and vCPU 1's
#   exit.io in the statistics region grows by N too (plus at most 1%: the vCPU's own other I/O);
# - perfvisor/task-clock/ of a CPU-bound program is within 25% of the CPU time it measured;
# - `perf stat -a` counts on every vCPU; 11 events on 8 counters are multiplexed and scaled;
# - `perf record -g` of a 3:1 split gives heavy 75% of heavy+light within 10 points, with
#   call chains up to main;
# - misuse (a config no event has, an event the host cannot back, sampling a class-3 event,
#   a period of 1, rmmod with an event open) fails in the guest, never in the host.
# Skipped on kvm_pvm by knowledge, as every Linux test (DESIGN §11).
# cases: linux-perf linux-perf-snapshot linux-perf-restored
. "$(dirname "$0")/../lib.sh"

DK=$LXK
IR=$B/linux-perf/initramfs.cpio
N=20000

linux_ready "linux-perf linux-perf-snapshot linux-perf-restored" "$IR" || exit 0
SOCK=$T/perf.sock
cur=linux-perf ok=1
start_vm "$cur" 600 run --kernel "$DK/vmlinuz" --initrd "$IR" --memory 512M --cpus 2 \
	--api-socket "$SOCK" --cmdline "console=ttyS0 panic=-1 pvinit=script pvtest.n=$N" --timeout 560
vcpu1_io() { "$PV" stat "$SOCK" --json --fields exit.io 2>/dev/null | "$JC" vcpus/1/exit.io 2>/dev/null; }
io0= io1=
if wait_out 'perftest: io-mark-before' || wait_out 'perftest: io-mark-before'; then io0=$(vcpu1_io); fi
if wait_out 'perftest: io-mark-after' || wait_out 'perftest: io-mark-after'; then io1=$(vcpu1_io); fi
stop_vm
o=$T/$cur.out
expect_status 0
expect_out 'perftest: insmod: ok'
expect_out 'perftest: dmesg: .*perfvisor_pmu: PV PMU version 1: 8 counters of 48 bits per vCPU.*acknowledged in one write (PMI_ACK)'
expect_out "perftest: list: perfvisor/exits.io/"
expect_out "perftest: list: perfvisor/task-clock/"
expect_out "perftest: list: perfvisor/time.kvm_run/"
# No hardware PMU on the host: no class-0 event is listed (never a fake count).
if [ ! -d /sys/bus/event_source/devices/cpu ]; then
	! grep -q 'perftest: list: perfvisor/cycles/' "$o" || bad "perf list shows perfvisor/cycles/ on a host without a hardware PMU"
fi

# Exactly N, per task; the host's statistics agree.
io=$(sed -n 's/.*perftest: io: n [0-9]*, \([0-9]*\),,perfvisor\/exits.io\/.*/\1/p' "$o")
[ "$io" = "$N" ] || bad "perf stat counted ${io:-nothing} exits.io for $N port writes: $(grep 'perftest: io:' "$o")"
if [ -n "$io0" ] && [ -n "$io1" ]; then
	d=$((io1 - io0))
	[ "$d" -ge "$N" ] && [ "$d" -le $((N + N / 100)) ] || bad "vCPU 1's exit.io grew by $d in the statistics region, not $N (+1%)"
else
	bad "could not read vCPU 1's exit.io at both marks (${io0:-none}, ${io1:-none})"
fi

# task-clock within 25% of the CPU time the program measured itself.
tc=$(sed -n 's/.*perftest: task-clock: \([0-9.]*\),[^,]*,perfvisor\/task-clock\/.*/\1/p' "$o" | cut -d. -f1)
cpu=$(sed -n 's/.*perftest: task-clock: .*cpu_ns \([0-9]*\).*/\1/p' "$o")
if [ -z "$tc" ] || [ -z "$cpu" ] || [ "$cpu" -eq 0 ]; then
	bad "no task-clock or program CPU time: $(grep 'perftest: task-clock' "$o")"
elif [ $((tc * 100)) -lt $((cpu * 75)) ] || [ $((tc * 100)) -gt $((cpu * 125)) ]; then
	bad "perfvisor/task-clock/ $tc ns against the program's $cpu ns: not within 25%"
fi

# Per CPU, and multiplexed with scaling.
all=$(sed -n 's/.*perftest: all-cpus: \([0-9]*\),.*/\1/p' "$o")
[ "${all:-0}" -ge "$N" ] && [ "$all" -le $((N + N / 10)) ] ||
	bad "perf stat -a counted ${all:-no} exits.io on all vCPUs while $N port writes ran: $(grep 'perftest: all-cpus' "$o")"
mux=$(sed -n 's/.*perftest: mux: \([0-9]*\),,perfvisor\/exits.io\/,[0-9]*,\([0-9.]*\).*/\1 \2/p' "$o")
set -- $mux
if [ $# -ne 2 ]; then
	bad "no multiplexed exits.io: $(grep 'perftest: mux' "$o")"
else
	pct=${2%%.*}
	[ "$pct" -lt 100 ] || bad "11 events on 8 counters ran 100% of the time: not multiplexed"
	[ $(($1 * 100)) -ge $((N * 50)) ] && [ $(($1 * 100)) -le $((N * 150)) ] ||
		bad "multiplexed exits.io scaled to $1, not $N within 50%"
fi

# Sampling: heavy 75% of heavy + light, within 10 points; chains reach main.
h=$(sed -n 's/.*perftest: report: \([0-9.]*\)%.*heavy.*/\1/p' "$o" | cut -d. -f1)
l=$(sed -n 's/.*perftest: report: \([0-9.]*\)%.*light.*/\1/p' "$o" | cut -d. -f1)
echo "  ($cur: heavy ${h:-?}%, light ${l:-?}%; $(grep -o 'samples: [0-9]*' "$o"))"
if [ -z "$h" ] || [ -z "$l" ] || [ $((h + l)) -eq 0 ]; then
	bad "perf report names no heavy or light: $(grep 'perftest: report' "$o" | head -n 4 | tr '\n' ';')"
elif [ $((h * 100)) -lt $(((h + l) * 65)) ] || [ $((h * 100)) -gt $(((h + l) * 85)) ]; then
	bad "heavy has $h% against light's $l%: not 75:25 within 10 points"
fi
s=$(sed -n 's/.*perftest: samples: \([0-9]*\).*/\1/p' "$o")
[ "${s:-0}" -ge 300 ] || bad "perf record took ${s:-no} samples in 3 s at 1 ms (want >= 300)"
c=$(sed -n 's/.*perftest: chains: \([0-9]*\) samples.*/\1/p' "$o")
[ $((${c:-0} * 100)) -ge $((${s:-0} * (h + l) * 9 / 10)) ] ||
	bad "only ${c:-no} of ${s:-?} samples are in heavy or light with main in their call chain (want 90% of their $((h + l))%)"

# Misuse fails in the guest with perf's words; the VM lives on (status 0 above).
expect_out 'perftest: bad-config: .'
expect_out 'perftest: unavailable: .*not supported'
expect_out 'perftest: sample-class3: .'
expect_out 'perftest: period-1: status 0, [1-9][0-9]* samples'
# busybox's rmmod asks without waiting (EWOULDBLOCK), kmod's says "in use".
expect_out 'perftest: rmmod-busy: .*\(in use\|temporarily unavailable\).* 1 loaded'
expect_out 'perftest: rmmod: ok, 0 loaded'
expect_out 'perftest: insmod again: ok'
expect_out 'perftest: done'
# (The test host's CPUID makes every boot warn about XSAVE before: only what follows the insmod counts.)
w=$(sed -n '/perftest: insmod: ok/,$p' "$o" | grep -m1 'BUG:\|Oops\|WARNING: CPU\|NMI received for unknown reason' || true)
[ -z "$w" ] || bad "the guest kernel complained after the insmod: $w"
grep 'perftest: \(io\|task-clock\|all-cpus\|mux:\|chain\|report\|bad-config\|unavailable\|sample-class3\|period-1\|rmmod\)' "$o" | sed 's/^/  /' | head -n 30
echo "  ($cur: vCPU 1 exit.io $io0 -> $io1)"
done_test

# Snapshot and restore in the middle of a count: the restored VM's perf counts every port write
# (through /dev/port: perfwork.c says why not ioperm here),
# those before the snapshot and those after, exactly (the PV PMU's counters and page, and the
# guest's perf state in its memory, are all in the snapshot).
# This VM's PV PMU is one without PMI_ACK (--cpuid-hide pmu-ack, as an older perfvisor's): the
# driver samples the version-1 way, and the restore keeps that PMU.
cur=linux-perf-snapshot ok=1
start_vm "$cur" 400 run --kernel "$DK/vmlinuz" --initrd "$IR" --memory 512M --cpus 2 --cpuid-hide pmu-ack \
	--api-socket "$T/snap.sock" --cmdline "console=ttyS0 panic=-1 pvinit=script pvtest.mode=snap" --timeout 360
if wait_out 'perftest: snap-mark' || wait_out 'perftest: snap-mark'; then
	sleep 4
	snapshot "$T/snap.sock" "$T/snap" stop
else
	bad "the guest never started counting"
	kill $vmpid
fi
stop_vm
expect_status 0
expect_no_out 'perftest: snap:'
expect_out 'perfvisor_pmu: PV PMU version 1: .*acknowledged in three writes'
s=$(sed -n 's/.*perftest: snap-samples: \([0-9]*\).*/\1/p' "$T/$cur.out")
[ "${s:-0}" -ge 100 ] || bad "perf record took ${s:-no} samples in 1 s at 1 ms without PMI_ACK (want >= 100)"
done_test

run linux-perf-restored 300 "$PV" run --restore "$T/snap" --timeout 240
expect_status 0
n=$(sed -n 's/.*perftest: snap: \([0-9]*\) port writes, \([0-9]*\),,perfvisor\/exits.io\/.*/\1 \2/p' "$T/$cur.out")
set -- $n
if [ $# -ne 2 ]; then
	bad "the restored guest printed no counts: $(grep 'perftest: snap' "$T/$cur.out")"
elif [ "$1" != "$2" ]; then
	bad "perf counted $2 exits.io across the snapshot for $1 port writes"
fi
grep 'perftest: snap:' "$T/$cur.out" | sed 's/^/  /'
done_test
