#!/bin/sh
# SPDX-License-Identifier: MIT
# Boot benchmark driver (POSIX sh: it also runs in the busybox test VM).
# Times exec-to-exit of the same minimal guest under QEMU microvm (the
# baseline) and perfvisor, of perfvisor's hello guest, and of one multiboot
# v1 file under QEMU's -kernel and perfvisor, interleaved, then
# measures perfvisor's RSS beyond the guest memory it touched. Prints a table
# of ratios against the baseline. Then the statistics benchmark
# (bench/stats_bench.c) prints its own table. Env: BUILD (build), BENCH_RUNS (20),
# BENCH_HOST (what KVM this is, for the table's header). Run by bench/run.sh.
set -eu
. "$(dirname "$0")/lib.sh"

build=${BUILD:-build}
runs=${BENCH_RUNS:-20}
host=$(bench_host "$build/perfvisor")
spawn=$build/bench/spawn
pv=$build/perfvisor
hello=$build/guests/hello.elf
msg='perfvisor bench: min guest up' # bench/minguest.h MIN_MESSAGE
min_status=33                       # (MIN_EXIT_VALUE << 1) | 1
mem=64M

bench_need "$spawn" "$pv" "$build/bench/min64.elf" "$build/bench/minbios.bin" "$build/bench/minmb.elf" "$build/bench/stats_bench"
command -v qemu-system-x86_64 >/dev/null ||
	{ echo "bench: qemu-system-x86_64 not found (bash scripts/deps.sh bench)" >&2; exit 1; }

bench_tmpdir

# Timed runs. Both VMMs: 1 vCPU, $mem of RAM, serial to stdout (spawn checks
# that every run printed the line), debug-exit at 0xf4; QEMU gets its leanest
# microvm, perfvisor runs without --verbose, doing no more than QEMU does.
# QEMU's leanest microvm with a serial port and debug-exit; then -bios or -kernel FILE.
# The CPU is the host's without IA32_ARCH_CAPABILITIES: some kvm_pvm hosts refuse
# the value QEMU writes there (`failed to set MSR 0x10a to 0x69`, then an abort),
# and no guest here reads it.
qemu_microvm="qemu-system-x86_64 -enable-kvm -cpu host,-arch-capabilities -smp 1 -m $mem
	-M microvm,x-option-roms=off,pit=off,pic=off,rtc=off,acpi=off,isa-serial=on
	-nodefaults -no-user-config -display none -monitor none -serial stdio
	-device isa-debug-exit,iobase=0xf4,iosize=4"
# shellcheck disable=SC2086 # $qemu_microvm is a word list
set -- -n "$runs" -w 1 -d "$tmp" \
	-l "qemu microvm, min guest" -x "$min_status" -m "$msg" -- $qemu_microvm -bios "$build/bench/minbios.bin"
set -- "$@" :: -l "perfvisor, min guest" -x "$min_status" -m "$msg" -- \
	"$pv" run --kernel "$build/bench/min64.elf" --cpus 1 --memory "$mem" --console stdio
if [ -e "$hello" ]; then
	set -- "$@" :: -l "perfvisor, hello guest" -x 0 -m "Hello from perfvisor guest (serial)" -- \
		"$pv" run --kernel "$hello" --cpus 1 --memory "$mem" --console stdio
fi
# The same multiboot v1 file (bench/minmb.S, ELF32) through QEMU's -kernel
# (microvm, its default firmware) and through perfvisor's multiboot loader.
# shellcheck disable=SC2086
set -- "$@" :: -l "qemu -kernel, multiboot" -x "$min_status" -m "$msg" -- $qemu_microvm -kernel "$build/bench/minmb.elf"
set -- "$@" :: -l "perfvisor, multiboot" -x "$min_status" -m "$msg" -- \
	"$pv" run --kernel "$build/bench/minmb.elf" --cpus 1 --memory "$mem" --console stdio
echo "bench: $runs interleaved runs of each case (+1 warm-up) ..."
"$spawn" "$@" >"$tmp/time.tsv"

# RSS runs: --verbose adds the guest's resident memory (mincore at exit).
key='guest memory resident: '
set -- -n 5 -w 0 -d "$tmp" -l "min guest" -x "$min_status" -m "$msg" -k "$key" -- \
	"$pv" run --kernel "$build/bench/min64.elf" --cpus 1 --memory "$mem" --console stdio --verbose
if [ -e "$hello" ]; then
	set -- "$@" :: -l "hello guest" -x 0 -m "Hello from perfvisor guest (serial)" -k "$key" -- \
		"$pv" run --kernel "$hello" --cpus 1 --memory "$mem" --console stdio --verbose
fi
"$spawn" "$@" >"$tmp/rss.tsv"

echo
awk -F '\t' -v host="$host" -v hello="$hello" '
FILENAME ~ /time.tsv$/ { n++; lab[n] = $1; runs[n] = $2; mn[n] = $3; med[n] = $4; p90[n] = $5; rss[n] = $6 }
FILENAME ~ /rss.tsv$/ { m++; rlab[m] = $1; rpeak[m] = $6; rres[m] = $8 }
END {
	printf "perfvisor bench — boot (%s)\n", host
	printf "%-26s %5s %10s %10s %10s %13s   %s\n", "case", "runs", "min ms", "median ms", "p90 ms", "peak RSS KiB", "ratio (median)"
	for (i = 1; i <= n; i++) if (lab[i] ~ /^qemu -kernel/) mb = i
	for (i = 1; i <= n; i++) {
		r = med[i] / med[1]
		if (i == 1 || i == mb) note = "1.00 (baseline)"
		else if (lab[i] ~ /min guest/) note = sprintf("%.2f (target <= 0.50: %s)", r, r <= 0.5 ? "met" : "MISSED")
		else if (lab[i] ~ /multiboot/) note = sprintf("%.2f of qemu -kernel, same file", med[i] / med[mb])
		else note = "- (no QEMU twin)"
		printf "%-26s %5d %10.1f %10.1f %10.1f %13d   %s\n", lab[i], runs[i], mn[i] / 1000, med[i] / 1000, p90[i] / 1000, rss[i], note
	}
	if (n < 3) printf "perfvisor, hello guest: not measured: %s not built (make guests)\n", hello
	for (i = 1; i <= m; i++) {
		o = rpeak[i] - rres[i]
		printf "VMM overhead RSS (peak RSS - guest resident), %s: %d KiB (%d - %d; target <= 3072 KiB: %s)\n", rlab[i], o, rpeak[i], rres[i], o <= 3072 ? "met" : "MISSED"
	}
}' "$tmp/time.tsv" "$tmp/rss.tsv"

# The statistics benchmark: reader snapshots and per-exit writer cost.
echo
echo "bench: statistics benchmark ..."
"$build/bench/stats_bench" -H "$host"
