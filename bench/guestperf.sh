#!/bin/sh
# SPDX-License-Identifier: MIT
# `perf` inside a Linux guest on the PV PMU (docs/guest-perf.md; POSIX sh: it also runs in the
# busybox test VM). Debian's kernel boots the guest-perf test's initramfs
# (tests/integration/linux-perfinit.sh) with pvtest.mode=bench: the guest loads perfvisor_pmu and
# runs the same CPU-bound work (perfwork rounds, on CPU 1) without perf, under `perf stat -e
# perfvisor/exits.io/` and `perf stat -I 10` of it (a counting read every 10 ms; perf on CPU 0),
# and under `perf record -F 1000` and `-c 1000000` (1 ms) of perfvisor/task-clock/, in an order
# that rotates from round to round; an outer `perf stat -a` counts every vCPU's MSR exits
# meanwhile. Printed: each case's wall time against the same round's run without perf (the
# guest's overhead: its own clock, a ratio, so host-independent), the samples, and the MSR exits
# per sample beyond the unprofiled run's and per counting read beyond perf stat's without -I
# (what the PV PMU costs the host).
# The kernel is quiet: a console message in the middle of a result line would spoil it.
# Env: BUILD, BENCH_GPERF_RUNS (3 rounds), BENCH_GPERF_WORK (12000 perfwork rounds: about 2 s in the test VM), BENCH_HOST.
# Run by bench/run.sh.
set -eu
. "$(dirname "$0")/lib.sh"

build=${BUILD:-build}
rounds=${BENCH_GPERF_RUNS:-3}
work=${BENCH_GPERF_WORK:-12000}
host=$(bench_host "$build/perfvisor")
pv=$build/perfvisor
kernel=$build/debian-kernel/vmlinuz
initrd=$build/linux-perf/initramfs.cpio
bench_positive BENCH_GPERF_RUNS "$rounds"
bench_positive BENCH_GPERF_WORK "$work"
bench_need "$pv" "$kernel" "$initrd"
bench_tmpdir

echo "bench: guestperf: $rounds rounds of $work rounds of perfwork in Debian's kernel, without perf and under perf stat, perf record -F 1000, -c 1ms and perf stat -I 10 ..."
st=0
"$pv" run --kernel "$kernel" --initrd "$initrd" --cpus 2 --memory 512M --timeout 3000 \
	--cmdline "console=ttyS0 quiet panic=-1 pvinit=script pvtest.mode=bench pvtest.rounds=$rounds pvtest.work=$work" \
	>"$tmp/out" 2>&1 || st=$?
if [ "$st" -ne 0 ] || ! grep -q 'perftest: bench: done' "$tmp/out"; then
	echo "bench: guestperf: the guest run failed (exit $st); its output:" >&2
	tail -n 20 "$tmp/out" >&2
	exit 1
fi
sed -n 's/.*perftest: bench: \([a-z]*[0-9]* .*\)/\1/p' "$tmp/out" | tr -d '\r' >"$tmp/bench"

echo
awk -v host="$host" -v rounds="$rounds" "$bench_awk_med"'
{
	for (f = 2; f <= NF; f++) { k = $f; sub(/=.*/, "", k); v = $f; sub(/^[^=]*=/, "", v); x[$1, k] = v + 0 }
}
function mm(a, m,    i, b) { for (i = 1; i <= rounds; i++) b[i] = a[m, i]; return med(b, rounds) }
END {
	split("stat freq period interval", ms, " ")
	for (i = 1; i <= rounds; i++) {
		base = x["off" i, "wall_ns"]
		for (k = 1; k <= 4; k++) {
			m = ms[k]
			ratio[m, i] = base > 0 ? x[m i, "wall_ns"] / base : 0
			extra = x[m i, "msr"] - x["off" i, "msr"]
			smp[m, i] = x[m i, "samples"]
			rd[m, i] = x[m i, "reads"]
			ps[m, i] = smp[m, i] > 0 ? extra / smp[m, i] : 0
			pr[m, i] = rd[m, i] > 0 ? (x[m i, "msr"] - x["stat" i, "msr"]) / rd[m, i] : 0
		}
		wo[i] = base; mo[i] = x["off" i, "msr"]
	}
	printf "perfvisor bench — perf inside a Linux guest on the PV PMU (%s)\n", host
	printf "%-44s %6s %9s %7s %8s %11s %11s\n", "case", "rounds", "wall ms", "ratio", "samples", "exits/smpl", "exits/read"
	printf "%-44s %6d %9.0f %7s %8s %11s %11s\n", "no perf (" mm2(mo) " MSR exits)", rounds, med(wo, rounds) / 1e6, "1.00", "-", "-", "-"
	row("perf stat -e perfvisor/exits.io/", "stat", 0, 0)
	row("perf record -F 1000 -e perfvisor/task-clock/", "freq", 1, 0)
	row("perf record -c 1ms -e perfvisor/task-clock/", "period", 1, 0)
	row("perf stat -I 10 -e perfvisor/exits.io/", "interval", 0, 1)
	printf "ratio: the guest'"'"'s wall time for the same work against the same round without perf (medians; 1.00: no overhead).\n"
	printf "exits/smpl: the MSR exits of all vCPUs beyond the unprofiled run'"'"'s, per sample; exits/read: beyond perf stat'"'"'s without -I, per read.\n"
}
function mm2(a,    i, b) { for (i = 1; i <= rounds; i++) b[i] = a[i]; return sprintf("%.0f", med(b, rounds)) }
function row(label, m, s, r) {
	printf "%-44s %6d %9s %7.3f %8s %11s %11s\n", label, rounds, "", mm(ratio, m), s ? sprintf("%.0f", mm(smp, m)) : (r ? sprintf("%.0f r", mm(rd, m)) : "-"), s ? sprintf("%.2f", mm(ps, m)) : "-", r ? sprintf("%.2f", mm(pr, m)) : "-"
}' "$tmp/bench"
