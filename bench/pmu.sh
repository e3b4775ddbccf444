#!/bin/sh
# SPDX-License-Identifier: MIT
# PV PMU benchmark driver (POSIX sh: it also runs in the busybox test VM).
# Runs the pmu-bench guest (guest-images/tests/pmu-bench.c) with --pmu on
# and, as the workload's baseline, with --pmu off, alternating, then prints
# a table: MSR read of a counter vs the no-op MSR exit, the counter page vs
# the MSR read, PMI latency, and a ring-3 workload with 4 counters vs PMU
# off. Every ratio is against a baseline measured in the same run(s).
# Env: BUILD (build), BENCH_PMU_RUNS (5 runs of each kind, after one
# calibration run), BENCH_HOST (what KVM this is, for the header). Run by
# bench/run.sh after bench/boot.sh.
set -eu
. "$(dirname "$0")/lib.sh"

build=${BUILD:-build}
runs=${BENCH_PMU_RUNS:-5}
host=$(bench_host "$build/perfvisor")
pv=$build/perfvisor
guest=$build/guests/pmu-bench.elf
bench_positive BENCH_PMU_RUNS "$runs"

bench_need "$pv" "$guest"

bench_tmpdir

# run_guest on|off LABEL CMDLINE: one run; its BENCH lines go to $tmp/bench
# as "LABEL key=value ...". A run whose guest reports a failed check still
# counts (its FAIL lines are shown, the script exits 1 at the end); a run
# that reports no measurement stops the benchmark with its output.
failed=0
run_guest() {
	out="$tmp/out.$2"
	st=0
	"$pv" run --kernel "$guest" --cpus 1 --memory 64M --console stdio --timeout 600 \
		--pmu "$1" --cmdline "$3" >"$out" 2>&1 || st=$?
	if ! grep -q 'BENCH .*workload_us=' "$out"; then
		echo "bench: pmu-bench run $2 (--pmu $1) failed (exit $st); its output:" >&2
		tail -n 30 "$out" >&2
		exit 1
	fi
	if [ "$st" -ne 0 ]; then
		echo "bench: pmu-bench run $2 (--pmu $1) exited $st:" >&2
		grep -e '^FAIL' -e 'EXCEPTION' -e 'PV PMU' "$out" >&2 || true
		failed=1
	fi
	sed -n "s/^.*BENCH /$2 /p" "$out" >>"$tmp/bench"
}

echo "bench: PV PMU: 1 calibration run, then $runs runs with --pmu off and $runs with --pmu on, alternating ..."
: >"$tmp/bench"
run_guest off cal ""
iters=$(sed -n 's/^cal .*calibrated_iters=\([0-9]*\).*/\1/p' "$tmp/bench" | head -n 1)
[ -n "$iters" ] || { echo "bench: the calibration run printed no calibrated_iters" >&2; exit 1; }
i=1
while [ "$i" -le "$runs" ]; do
	if [ $((i % 2)) -eq 1 ]; then
		run_guest off "off$i" "iters=$iters"
		run_guest on "on$i" "iters=$iters"
	else
		run_guest on "on$i" "iters=$iters"
		run_guest off "off$i" "iters=$iters"
	fi
	i=$((i + 1))
done

echo
awk -v host="$host" -v runs="$runs" "$bench_awk_med"'
function put(kind, key, v) { val[kind, key, ++cnt[kind, key]] = v }
function col(kind, key,    i, a) {
	for (i = 1; i <= cnt[kind, key]; i++) a[i] = val[kind, key, i]
	return med(a, cnt[kind, key])
}
function verdict(ok) { return ok ? "met" : "MISSED" }
{
	kind = $1 ~ /^on/ ? "on" : $1 ~ /^off/ ? "off" : "cal"
	for (f = 2; f <= NF; f++) {
		k = $f; sub(/=.*/, "", k); v = $f; sub(/^[^=]*=/, "", v)
		if (v ~ /^0x/) continue
		put(kind, k, v + 0)
		if (kind == "on") {
			# Per-run ratios against the same run s baseline.
			if (k == "nop_exit_ns") nop[$1] = v + 0
			if (k == "msr_read_ns") msr[$1] = v + 0
			if (k == "page_read_ns") page[$1] = v + 0
			if (k == "workload_idle_us") widle[$1] = v + 0
			if (k == "workload_us") wctr[$1] = v + 0
			if (k == "workload_page_us") wpage[$1] = v + 0
			if (k == "pmi_missed") missed += v
			if (k == "pmi_throttled") throttled += v
			if (k == "pmis") pmis += v
		}
	}
}
END {
	for (r in msr) {
		if (nop[r] > 0) put("on", "ratio_msr_nop", msr[r] / nop[r])
		if (page[r] > 0) put("on", "ratio_msr_page", msr[r] / page[r])
	}
	for (r in widle)
		if (widle[r] > 0) { put("on", "ratio_ctr_idle", wctr[r] / widle[r]); put("on", "ratio_page_idle", wpage[r] / widle[r]) }
	printf "perfvisor bench — PV PMU (%s)\n", host
	printf "%-50s %5s %12s   %s\n", "case", "runs", "median", "ratio"
	n_on = cnt["on", "msr_read_ns"] + 0
	if (n_on == 0) { print "no --pmu on run reported its measurements"; exit 1 }
	nopm = col("on", "nop_exit_ns"); msrm = col("on", "msr_read_ns"); pagem = col("on", "page_read_ns")
	r1 = col("on", "ratio_msr_nop"); r2 = col("on", "ratio_msr_page")
	printf "%-50s %5d %9.1f ns   1.00 (baseline)\n", "rdmsr PV_PMU_MSR_NOP (bare userspace MSR exit)", cnt["on", "nop_exit_ns"], nopm
	printf "%-50s %5d %9.1f ns   %.3fx the no-op exit (target <= 1.10x: %s)\n", "rdmsr CTR(0), counter 0 counting exits", n_on, msrm, r1, verdict(r1 <= 1.10)
	printf "%-50s %5d %9.2f ns   %.0fx cheaper than the MSR read (target >= 100x: %s)\n", "counter page read, ring 3 (seqlock)", cnt["on", "page_read_ns"], pagem, r2, verdict(r2 >= 100)
	if (cnt["on", "pmi_latency_median_us"]) {
		printf "%-50s %5d %9.2f us   - (%d PMIs, %d missed, %d throttled)\n", "PMI latency outb -> NMI handler, median", cnt["on", "pmi_latency_median_us"], col("on", "pmi_latency_median_us"), pmis, missed, throttled
		printf "%-50s %5d %9.2f us   -\n", "PMI latency outb -> NMI handler, p99", cnt["on", "pmi_latency_p99_us"], col("on", "pmi_latency_p99_us")
	} else
		printf "PMI latency: not measured (exits.io cannot sample here)\n"
	offw = col("off", "workload_us"); idlew = col("on", "workload_idle_us"); onw = col("on", "workload_us")
	pagew = col("on", "workload_page_us"); nc = col("on", "workload_counters")
	printf "%-50s %5d %9.0f us   1.00 (baseline)\n", "ring-3 workload, --pmu off", cnt["off", "workload_us"], offw
	if (offw > 0) {
		printf "%-50s %5d %9.0f us   %.4fx\n", "ring-3 workload, --pmu on, no counter", cnt["on", "workload_idle_us"], idlew, idlew / offw
		printf "%-50s %5d %9.0f us   %.4fx --pmu off; %.4fx the no-counter loop of the same run (target <= 1.01x: %s)\n", sprintf("ring-3 workload, --pmu on, %d counters", nc), cnt["on", "workload_us"], onw, onw / offw, col("on", "ratio_ctr_idle"), verdict(col("on", "ratio_ctr_idle") <= 1.01)
		printf "%-50s %5d %9.0f us   %.4fx --pmu off; %.4fx the no-counter loop of the same run (target <= 1.01x: %s)\n", sprintf("ring-3 workload, --pmu on, %d counters + page", nc), cnt["on", "workload_page_us"], pagew, pagew / offw, col("on", "ratio_page_idle"), verdict(col("on", "ratio_page_idle") <= 1.01)
		printf "while counting (median per loop): %d exits without the page, %d with it; %d page updates (refresh every 10 ms while host counters run)\n", col("on", "counted_exits"), col("on", "counted_exits_page"), col("on", "page_updates")
	}
	printf "each row: median over the runs of the per-run medians (MSR reads: %d interleaved samples of each kind per run;\n", col("on", "msr_reads")
	printf "page: %d reads per run, averaged; PMI: %d per run, paced below the rate cap; workload: %d iterations, ~0.5 s;\n" "--pmu on runs it 6 times in the order none, counters, counters + page, and back, each result the mean of two).\n", col("on", "page_reads"), col("on", "pmis"), col("off", "workload_iters")
	printf "MSR ratios are per run (same-run baseline), then the median. The workload target is judged on the same-run\nratio against the loop with no counter (separate --pmu off runs differ by more than 1%% on a noisy host).\n"
}' "$tmp/bench"
[ "$failed" -eq 0 ] || { echo "bench: some pmu-bench runs reported failed checks (above)" >&2; exit 1; }
