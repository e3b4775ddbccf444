#!/bin/sh
# SPDX-License-Identifier: MIT
# Profiling a Linux guest (POSIX sh: it also runs in the busybox test VM). Debian's kernel
# (BUILD/debian-kernel/vmlinuz) with the Linux tests' initramfs runs pvinit.work=profile: spinsys
# makes 1-byte read and write system calls for 3 s, then spinA and spinB spin in user mode for 6 s;
# each prints how many loops it made. Three ways, in rounds whose order rotates: without --profile;
# with --profile task-clock:1ms as it was before a Linux guest's processes and ORC stacks
# (PERFVISOR_PROFILE_NO_LINUX=1: kallsyms names, frame-pointer walks); and with them (the
# default: each sample reads the current task and walks the kernel stack by ORC). Per way: the
# loops against the round's run without --profile (the guest's overhead at 1 kHz), and the vCPU
# thread's time per sample (profile.json's sample_ns / samples: the host's cost). Env: BUILD,
# BENCH_LXPROF_RUNS (2 rounds), BENCH_HOST. Run by bench/run.sh.
set -eu
. "$(dirname "$0")/lib.sh"

build=${BUILD:-build}
rounds=${BENCH_LXPROF_RUNS:-2}
host=$(bench_host "$build/perfvisor")
pv=$build/perfvisor
kernel=$build/debian-kernel/vmlinuz
initrd=$build/linux-initramfs/initramfs.cpio
bench_positive BENCH_LXPROF_RUNS "$rounds"
bench_need "$pv" "$kernel" "$initrd"
bench_tmpdir

# run_guest off|fp|linux LABEL: one boot; "LABEL sys=N user=N samples=N sample_ns=N" goes to $tmp/bench.
run_guest() {
	out="$tmp/out.$2"
	prof=""
	[ "$1" != off ] && prof="--profile task-clock:1ms --profile-output $tmp/prof.$2"
	before=""
	[ "$1" = fp ] && before="PERFVISOR_PROFILE_NO_LINUX=1"
	st=0
	# shellcheck disable=SC2086 # $before is one assignment or none, $prof two options or none
	env $before "$pv" run --kernel "$kernel" --initrd "$initrd" --cpus 2 --memory 256M --timeout 280 \
		--cmdline "console=ttyS0 panic=-1 pvinit=poweroff pvinit.work=profile" $prof >"$out" 2>&1 || st=$?
	sys=$(sed -n 's/^spin spinsys: \([0-9]*\) loops.*/\1/p' "$out" | head -n 1)
	user=$(sed -n 's/^spin spinA: \([0-9]*\) loops.*/\1/p' "$out" | head -n 1)
	if [ "$st" -ne 0 ] || [ -z "$sys" ] || [ -z "$user" ]; then
		echo "bench: Linux guest run $2 ($1) failed (exit $st); its output:" >&2
		tail -n 20 "$out" >&2
		exit 1
	fi
	samples=0; sns=0
	if [ "$1" != off ]; then
		# profile.json is indented one key a line: the first "samples" is the total, every
		# "sample_ns" a vCPU's.
		samples=$(sed -n 's/^ *"samples": \([0-9]*\),*$/\1/p' "$tmp/prof.$2/profile.json" | head -n 1)
		sns=$(sed -n 's/^ *"sample_ns": \([0-9]*\),*$/\1/p' "$tmp/prof.$2/profile.json" | awk '{ s += $1 } END { print s + 0 }')
	fi
	echo "$2 sys=$sys user=$user samples=${samples:-0} sample_ns=${sns:-0}" >>"$tmp/bench"
	echo "bench: linuxprof: $2 done (spinsys $sys loops, spinA $user loops)"
}

echo "bench: linuxprof: $rounds rounds of Debian's kernel running spinsys, spinA and spinB, without --profile, with it as before (frame pointers, no processes) and with processes and ORC stacks ..."
: >"$tmp/bench"
bench_rotate "$rounds" run_guest off fp linux

echo
awk -v host="$host" -v rounds="$rounds" "$bench_awk_med"'
{
	for (f = 2; f <= NF; f++) { k = $f; sub(/=.*/, "", k); v = $f; sub(/^[^=]*=/, "", v); x[$1, k] = v + 0 }
}
function of(m, i,    s) {
	s = x[m i, "samples"]
	rs[m, i] = x["off" i, "sys"] > 0 ? x[m i, "sys"] / x["off" i, "sys"] : 0
	ru[m, i] = x["off" i, "user"] > 0 ? x[m i, "user"] / x["off" i, "user"] : 0
	cost[m, i] = s > 0 ? x[m i, "sample_ns"] / s : 0
	smp[m, i] = s
}
function mm(a, m,    i, b) { for (i = 1; i <= rounds; i++) b[i] = a[m, i]; return med(b, rounds) }
END {
	for (i = 1; i <= rounds; i++) { of("fp", i); of("linux", i); so[i] = x["off" i, "sys"]; uo[i] = x["off" i, "user"] }
	printf "perfvisor bench — profiling a Linux guest (%s)\n", host
	printf "%-48s %6s %13s %7s %13s %7s %9s %11s\n", "case", "rounds", "spinsys loops", "ratio", "spinA loops", "ratio", "samples", "us/sample"
	printf "%-48s %6d %13.0f %7s %13.0f %7s %9s %11s\n", "no --profile", rounds, med(so, rounds), "1.00", med(uo, rounds), "1.00", "-", "-"
	printf "%-48s %6d %13s %7.3f %13s %7.3f %9.0f %11.2f\n", "--profile task-clock:1ms, before (fp, no pids)", rounds, "", mm(rs, "fp"), "", mm(ru, "fp"), mm(smp, "fp"), mm(cost, "fp") / 1000
	printf "%-48s %6d %13s %7.3f %13s %7.3f %9.0f %11.2f\n", "--profile task-clock:1ms, processes + ORC", rounds, "", mm(rs, "linux"), "", mm(ru, "linux"), mm(smp, "linux"), mm(cost, "linux") / 1000
	printf "ratio: the loops the guest made against the same round without --profile (medians of rounds; 1.00: no overhead).\n"
	printf "us/sample: the vCPU thread'"'"'s time per sample (registers, the task, the stack walk, the ring), the host'"'"'s cost.\n"
}' "$tmp/bench"
