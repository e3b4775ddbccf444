#!/bin/sh
# SPDX-License-Identifier: MIT
# Host-side profiling benchmark (POSIX sh: it also runs in the busybox test
# VM). The ring-3 workload of the ring3-compute guest (a 64-bit LCG, timed
# by the guest with the TSC) with `--profile task-clock:1ms` (1 kHz per
# vCPU) in each mode (stack, the default; leaf) next to the same workload
# without it, in rounds of one session whose order rotates (off, stack,
# leaf; stack, leaf, off; ...); each ratio is taken within a round, then the
# median. Also the cost of one sample: the vCPU thread's time per sample
# (profile.json's sample_ns / samples: 0 in mode=leaf, where the kernel
# takes it) and the guest time lost per sample ((on - off) / samples). Env: BUILD (build), BENCH_PROF_RUNS (5 pairs),
# BENCH_PROF_ITERS (400000000 LCG steps, ~0.6 s natively), BENCH_HOST.
# Run by bench/run.sh.
set -eu
. "$(dirname "$0")/lib.sh"

build=${BUILD:-build}
pairs=${BENCH_PROF_RUNS:-5}
iters=${BENCH_PROF_ITERS:-400000000}
host=$(bench_host "$build/perfvisor")
pv=$build/perfvisor
guest=$build/guests/ring3-compute.elf
bench_positive BENCH_PROF_RUNS "$pairs"
bench_positive BENCH_PROF_ITERS "$iters"
bench_need "$pv" "$guest"

bench_tmpdir

# run_guest off|stack|leaf LABEL: one run; "LABEL us=U samples=S sample_ns=N" goes to $tmp/bench.
run_guest() {
	out="$tmp/out.$2"
	prof=""
	[ "$1" = stack ] && prof="--profile task-clock:1ms --profile-output $tmp/prof.$2"
	[ "$1" = leaf ] && prof="--profile task-clock:1ms,mode=leaf --profile-output $tmp/prof.$2"
	st=0
	# shellcheck disable=SC2086 # $prof is two options or none
	"$pv" run --kernel "$guest" --cpus 1 --memory 64M --timeout 600 --cmdline "iters=$iters" $prof \
		>"$out" 2>&1 || st=$?
	us=$(sed -n 's/^ring3-compute: [0-9]* iterations in [0-9]* TSC cycles = \([0-9]*\) us.*/\1/p' "$out")
	if [ "$st" -ne 0 ] || [ -z "$us" ]; then
		echo "bench: ring3-compute run $2 (profile $1) failed (exit $st); its output:" >&2
		tail -n 20 "$out" >&2
		exit 1
	fi
	samples=0; sns=0
	if [ "$1" != off ]; then
		# profile.json is indented one key a line: no JSON tool needed.
		samples=$(sed -n 's/^ *"samples": \([0-9]*\),*$/\1/p' "$tmp/prof.$2/profile.json" | tail -n 1)
		sns=$(sed -n 's/^ *"sample_ns": \([0-9]*\),*$/\1/p' "$tmp/prof.$2/profile.json" | tail -n 1)
	fi
	echo "$2 us=$us samples=${samples:-0} sample_ns=${sns:-0}" >>"$tmp/bench"
}

echo "bench: profiling: $pairs rounds of ring3-compute runs ($iters steps) without --profile and with task-clock:1ms in mode=stack and mode=leaf ..."
: >"$tmp/bench"
bench_rotate "$pairs" run_guest off stack leaf

echo
awk -v host="$host" -v pairs="$pairs" "$bench_awk_med"'
{
	for (f = 2; f <= NF; f++) { k = $f; sub(/=.*/, "", k); v = $f; sub(/^[^=]*=/, "", v); x[$1, k] = v + 0 }
}
# mode M of round i: its ratio to the round'"'"'s run without profiling, samples, costs
function of(m, i,    s, on) {
	on = x[m i, "us"]; s = x[m i, "samples"]
	us[m, i] = on
	ratio[m, i] = off[i] > 0 ? on / off[i] : 0
	vmm[m, i] = s > 0 ? x[m i, "sample_ns"] / s : 0
	lost[m, i] = s > 0 ? (on - off[i]) * 1000 / s : 0
	smp[m, i] = s; rate[m, i] = on > 0 ? s * 1000000 / on : 0
}
# the median over the rounds of column c of mode m
function mm(a, m,    i, b) { for (i = 1; i <= pairs; i++) b[i] = a[m, i]; return med(b, pairs) }
function row(m, label, why,    r) {
	r = mm(ratio, m)
	printf "%-56s %5d %9.0f us   %.4fx (median of rounds; target <= 1.02x: %s)\n", "ring-3 workload, --profile " label, pairs, mm(us, m), r, r <= 1.02 ? "met" : "MISSED"
	printf "%-56s %5d %9.0f      %.0f samples/s of workload time\n", "  samples per run", pairs, mm(smp, m), mm(rate, m)
	printf "%-56s %5d %9.2f us   -\n", "  one sample, vCPU thread time (" why ")", pairs, mm(vmm, m) / 1000
	printf "%-56s %5d %9.2f us   -\n", "  one sample, guest time lost ((on - off) / samples)", pairs, mm(lost, m) / 1000
}
END {
	for (i = 1; i <= pairs; i++) { off[i] = x["off" i, "us"]; of("stack", i); of("leaf", i) }
	printf "perfvisor bench — host-side profiling (%s)\n", host
	printf "%-56s %5s %12s   %s\n", "case", "runs", "median", "ratio"
	printf "%-56s %5d %9.0f us   1.00 (baseline)\n", "ring-3 workload, no --profile", pairs, med(off, pairs)
	row("stack", "task-clock:1ms", "registers, walk, ring")
	row("leaf", "task-clock:1ms,mode=leaf", "none: the kernel")
	printf "each round runs the three in an order that rotates, in this session; each ratio is of one round. The guest time\n"
	printf "lost per sample is a difference of two noisy runs: read it as an estimate (it can even come out negative).\n"
}' "$tmp/bench"
