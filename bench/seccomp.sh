#!/bin/sh
# SPDX-License-Identifier: MIT
# Seccomp benchmark (POSIX sh: it also runs in the busybox test VM): the
# cost of the exit loop with the per-thread filters on (the default) and
# off. The pmu-bench guest times 2000 reads of PV_PMU_MSR_NOP, each a full
# userspace MSR exit (KVM_RUN returns, perfvisor handles it, KVM_RUN again:
# one filtered ioctl per exit); runs alternate on/off and the table compares
# the medians. Env: BUILD (build), BENCH_SECCOMP_RUNS (10 of each kind),
# BENCH_HOST. Run by bench/run.sh.
set -eu
. "$(dirname "$0")/lib.sh"

build=${BUILD:-build}
runs=${BENCH_SECCOMP_RUNS:-10}
pv=$build/perfvisor
guest=$build/guests/pmu-bench.elf
host=$(bench_host "$pv")
bench_positive BENCH_SECCOMP_RUNS "$runs"
bench_need "$pv" "$guest"
bench_tmpdir

# one MODE: a run with --seccomp MODE; its nop_exit_ns goes to $tmp/MODE.
one() {
	out=$tmp/out
	"$pv" run --kernel "$guest" --cpus 1 --timeout 120 --seccomp "$1" --verbose \
		--cmdline "reads=2000 pmis=1 page_reads=1 iters=1000000" >"$out" 2>&1 || {
		echo "bench: pmu-bench with --seccomp $1 failed; its output:" >&2
		tail -n 20 "$out" >&2
		exit 1
	}
	v=$(sed -n 's/^.*BENCH .*nop_exit_ns=\([0-9.]*\).*/\1/p' "$out")
	[ -n "$v" ] || { echo "bench: pmu-bench printed no nop_exit_ns" >&2; exit 1; }
	echo "$v" >>"$tmp/$1"
	[ "$1" = on ] && sed -n 's/^perfvisor: seccomp on: //p' "$out" >"$tmp/lists"
	return 0
}
echo "bench: seccomp: $runs runs with --seccomp off and $runs with it on, alternating, 2000 MSR exits each ..."
: >"$tmp/on"
: >"$tmp/off"
i=1
while [ "$i" -le "$runs" ]; do
	if [ $((i % 2)) -eq 1 ]; then one off; one on; else one on; one off; fi
	i=$((i + 1))
done
off=$(bench_median "$tmp/off")
on=$(bench_median "$tmp/on")
off_min=$(sort -n "$tmp/off" | head -n 1)
on_min=$(sort -n "$tmp/on" | head -n 1)
echo
echo "perfvisor seccomp benchmark ($host)"
echo "filters in force: $(cat "$tmp/lists")"
# The median is the figure; the fastest run is shown too, since a busy
# machine only ever adds time (the two should agree on a quiet one).
awk -v on="$on" -v off="$off" -v onm="$on_min" -v offm="$off_min" -v runs="$runs" 'BEGIN {
	r = on / off
	printf "%-40s %5s %12s %12s   %s\n", "measurement", "runs", "median", "fastest", "ratio (median; fastest)"
	printf "%-40s %5d %9.1f ns %9.1f ns   1.00 (baseline)\n", "MSR exit round trip, --seccomp off", runs, off, offm
	printf "%-40s %5d %9.1f ns %9.1f ns   %.3fx; %.3fx (target <= 1.02x: %s)\n", "MSR exit round trip, --seccomp on",
		runs, on, onm, r, onm / offm, r <= 1.02 ? "met" : "MISSED"
}'
